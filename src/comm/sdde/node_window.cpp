#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "comm/sdde/common.hpp"

namespace sparsecomm {

#ifndef SPARSECOMM_SMPI
using detail::RegionWindow;
#endif

#ifndef SPARSECOMM_SMPI
namespace {
// The pieces of node_window_exchange() below, on the node's two windows (`out`: step 1's,
// `in`: step 3's).

// Step 1: my records, per member of my node and per other node, into my segment of `out`:
// [need][member offsets][member lengths][node offsets][node lengths] records (nothing when
// `failed`). A round of the node's window: true if some member of my node failed.
bool publish_records(RegionWindow& out, const Locality& loc, int me, const detail::Outbox& send, bool failed) {
  const int members = loc.local_size(), nodes = loc.num_regions(), my_node = loc.region();
  std::vector<std::vector<char>> to_member(static_cast<size_t>(members)), to_node(static_cast<size_t>(nodes));
  for (size_t i = 0; !failed && i < send.size(); ++i) {
    const int d = send.ranks[i], r = loc.region_of(d);
    auto& b = r == my_node ? to_member[static_cast<size_t>(loc.local_index_of(d))] : to_node[static_cast<size_t>(r)];
    detail::append_record(b, me, d, send.ptr[i], send.len[i]);
  }
  const int64_t slots = 1 + 2 * static_cast<int64_t>(members + nodes), head = 8 * slots;
  int64_t need = head;
  for (const auto& v : to_member) need += static_cast<int64_t>(v.size());
  for (const auto& v : to_node) need += static_cast<int64_t>(v.size());
  auto write_out = [&](char* b) {  // [need][member offsets][member lengths][node offsets][node lengths] records
    auto* h = reinterpret_cast<int64_t*>(b);
    h[0] = need;
    int64_t at = head;
    auto put = [&](const std::vector<char>& v, int64_t* off, int64_t* len) {
      *off = at, *len = static_cast<int64_t>(v.size());
      if (!v.empty()) std::memcpy(b + at, v.data(), v.size());
      at += static_cast<int64_t>(v.size());
    };
    for (int w = 0; w < members; ++w) put(to_member[static_cast<size_t>(w)], &h[1 + w], &h[1 + members + w]);
    for (int r = 0; r < nodes; ++r)
      put(to_node[static_cast<size_t>(r)], &h[1 + 2 * members + r], &h[1 + 2 * members + nodes + r]);
  };
  return out.publish(need, failed, write_out);
}

// Field k of the header member w wrote in step 1.
int64_t field(const RegionWindow& out, int w, int64_t k) { return reinterpret_cast<const int64_t*>(out.segment(w))[k]; }

// Step 1, read: the records every member of my node wrote for me (member `mi` of `members`).
void take_member_records(const RegionWindow& out, int members, int mi, detail::Inbox& got) {
  for (int w = 0; w < members; ++w)
    if (const int64_t len = field(out, w, 1 + members + mi); len > 0)
      detail::for_each_record(out.segment(w) + field(out, w, 1 + mi), len,
                              [&](const detail::RecordHeader& hd, const char* p) { detail::keep_record(got, hd, p); });
}

// Step 2's bundle for node r: every member's records for it, appended to b.
void node_bundle(const RegionWindow& out, int members, int nodes, int r, std::vector<char>& b) {
  for (int w = 0; w < members; ++w) {
    const int64_t len = field(out, w, 1 + 2 * members + nodes + r);
    const char* at = out.segment(w) + field(out, w, 1 + 2 * members + r);
    if (len > 0) b.insert(b.end(), at, at + len);
  }
}

// Step 2 by leaders, on the leader (local index 0) of my node: one leader per node sends one
// bundle per pair of nodes, [8-byte flag][records], by the personalized exchange on the
// leaders' communicator (many nodes: its reduction costs fewer messages than every
// pair's). The bundles received; *any_failed: whether some node failed.
detail::ByteMessages by_leaders(const RegionWindow& out, const Locality& loc, MPI_Comm leaders, int tag, Stats* stats,
                                bool node_failed, bool* any_failed) {
  const int members = loc.local_size(), nodes = loc.num_regions(), my_node = loc.region();
  std::vector<std::vector<char>> bundle(static_cast<size_t>(nodes));
  detail::Outbox o;
  for (int r = 0; !node_failed && r < nodes; ++r) {
    if (r == my_node) continue;
    auto& b = bundle[static_cast<size_t>(r)];
    b.assign(8, 0);
    node_bundle(out, members, nodes, r, b);
    if (b.size() > 8) o.add(r, b.data(), static_cast<int64_t>(b.size()));
  }
  detail::Channel ch{leaders, tag, stats, "inter", [](int) { return false; }};
  detail::IntoBytes rec;
  bool leaders_failed = false;
  detail::personalized(ch, o, node_failed ? "failed" : "", rec.d, &leaders_failed);
  *any_failed = leaders_failed;
  return rec.take();
}

// Step 3: what this rank received for its node (`inbound`: bundles of [8-byte flag][records])
// into my segment of `in`, the bundles' records after their flags, [length][records] (nothing
// when `any_failed`). A round of the node's window: true if some rank anywhere failed.
bool publish_inbound(RegionWindow& in, const std::vector<std::pair<const char*, int64_t>>& inbound, bool any_failed) {
  int64_t inbound_bytes = 0;
  for (const auto& [at, len] : inbound) inbound_bytes += std::max<int64_t>(len - 8, 0);
  auto write_in = [&](char* b) {
    reinterpret_cast<int64_t*>(b)[0] = any_failed ? 0 : inbound_bytes;
    int64_t to = 8;
    for (size_t k = 0; !any_failed && k < inbound.size(); ++k) {
      const auto& [at, len] = inbound[k];
      if (len > 8) std::memcpy(b + to, at + 8, static_cast<size_t>(len - 8));
      to += std::max<int64_t>(len - 8, 0);
    }
  };
  return in.publish(any_failed ? 8 : 8 + inbound_bytes, any_failed, write_in);
}

// Step 3, read: the records addressed to me (rank `me`) in every member's segment of `in`.
void take_addressed(const RegionWindow& in, int members, int me, detail::Inbox& got) {
  for (int w = 0; w < members; ++w) {
    const int64_t total = reinterpret_cast<const int64_t*>(in.segment(w))[0];
    detail::for_each_record(in.segment(w) + 8, total, [&](const detail::RecordHeader& hd, const char* payload) {
      if (hd.dest == me) detail::keep_record(got, hd, payload);
    });
  }
}
}  // namespace
#endif

// node_window (this Sdde's regions are the real nodes, over_nodes()). On one node: the
// window exchange of locality_exchange(). Across nodes, each pair of nodes exchanges one
// message (Geyko et al.'s bundling taken one step further: per node pair, not per (rank,
// node) pair; their paper's "gather inside the node first"):
//  1. every rank writes its records into its segment of the node's first window, by
//     destination member (its own node) and by destination node, then publishes
//     [bytes needed, failed] and waits for every member's (publish(): flags in the window,
//     no MPI call); then every rank takes the records for it from the members' segments;
//  2. per other node, one rank concatenates every member's bundle for it and sends it.
//     Agents (few nodes): the pair (a, b)'s message goes from member (a + b) mod |a| of a to
//     member (a + b) mod |b| of b — both sides compute the pair's two ranks, every pair
//     sends its message even when empty, so no reduction tells anyone what to expect, and
//     the pairs' work is spread over the members (multi-lane: Traff and Hunold, "Decomposing
//     MPI collectives for exploiting multi-lane communication", CLUSTER 2020). Leaders (many
//     nodes, where every pair's message would cost more than a reduction): local index 0
//     sends every bundle, by the personalized exchange on the leaders' communicator;
//  3. every rank writes what it received into its segment of the node's second window and
//     publishes it; every rank takes the records addressed to it.
// Two rounds of each node's window flags (and with leaders, one reduction over the
// leaders); no rank sends a message inside a node. A failed check travels in step 1's
// round to the node, in step 2's messages (a flag in front of every bundle; with leaders,
// their reduction) to every node and in step 3's round to every rank, which then all raise
// it (agree). Each window is reused by its own rounds (RegionWindow: double-buffered).
void Sdde::node_window_exchange(const detail::Outbox& send, const std::string& err, int tag, Stats* stats,
                                detail::Delivery& into) {
#ifndef SPARSECOMM_SMPI
  const bool windows = node_windows();  // (collective at the first use, one node too: its setting checked)
  if (loc_.num_regions() > 1) {
    if (windows) {
      RegionWindow& out = *RegionWindow::of(local_comm_.get(), 0, opt_.window);
      RegionWindow& in = *RegionWindow::of(local_comm_.get(), 1, opt_.window);
      const int me = comm_.rank(), members = loc_.local_size(), nodes = loc_.num_regions();
      const bool leader = loc_.local_rank() == 0;
      // Step 1: my records, per member of my node and per other node.
      const bool node_failed = publish_records(out, loc_, me, send, !err.empty());
      detail::Inbox got;
      if (!node_failed) take_member_records(out, members, loc_.local_rank(), got);
      // Step 2: one bundle per pair of nodes; `inbound`: the bundles this rank received for
      // its node (each [8-byte flag][records]), where they arrived.
      bool any_failed = node_failed;
      std::vector<std::vector<char>> received;  // agents: one buffer per bundle
      detail::ByteMessages from_leaders;        // leaders: the personalized exchange's result
      std::vector<std::pair<const char*, int64_t>> inbound;
      if (agents_) {
        // Every pair of nodes exchanges one bundle between its two agents (swap_by_agents:
        // no reduction to learn who sends; the pairs' copying and sending spread over the
        // node's members instead of one leader), after its node's failure flag.
        received = swap_by_agents(tag, stats, node_failed, [&](int r, std::vector<char>& b) {
          if (!node_failed) node_bundle(out, members, nodes, r, b);
        }, &any_failed);
        for (const auto& m : received) inbound.emplace_back(m.data(), static_cast<int64_t>(m.size()));
      } else if (leader) {
        from_leaders = by_leaders(out, loc_, leaders_comm_.get(), tag, stats, node_failed, &any_failed);
        for (size_t i = 0; i < from_leaders.ranks.size(); ++i)
          inbound.emplace_back(from_leaders.bytes.data() + from_leaders.offsets[i],
                               from_leaders.offsets[i + 1] - from_leaders.offsets[i]);
      }
      // Step 3: what each agent (or the leader) received, to every member: each writes the
      // bundles' records after their flags into its segment, [length][records].
      const bool failed_anywhere = publish_inbound(in, inbound, any_failed);
      if (failed_anywhere) agree(comm_.get(), err);  // every rank: the failing rank's message
      take_addressed(in, members, me, got);
      got.deliver(into);
      return;
    }
  }
#endif
  locality_exchange(send, false, tag, stats, err, into);
}

}  // namespace sparsecomm
