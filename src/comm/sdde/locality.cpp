#include <string>
#include <vector>

#include "comm/sdde/common.hpp"

namespace sparsecomm {

using detail::ByteMessages;
#ifndef SPARSECOMM_SMPI
using detail::RegionWindow;
#endif

// Locality-aware SDDE (Geyko et al. 2023). Three steps:
//  1. bundle my messages by destination region (messages for my own region go straight
//     to step 3);
//  2. send each bundle to the rank with my local index (modulo the region's size) in that
//     region: one inter-region message per (rank, destination region) pair;
//  3. redistribute every received record inside the region to its final destination.
// Only step 2 follows the strategy's name (personalized or NBX); step 3 is the personalized
// exchange: inside a region its reduction spans few ranks and costs less than NBX's
// synchronous sends and barrier (MPI Advance's locality-aware exchanges do the same) —
// and where the region lies within one node, the records pass through a shared-memory
// window instead, the reduction replaced by the window's flags (RegionWindow: no message,
// probe, collective or second copy inside a node).
// Steps 2 and 3 are themselves sparse exchanges (personalized or NBX). When every region
// has the same size, step 2 runs on the communicator of the ranks with my local index (one
// per region; its rank is the region's number), so its collective — the reduction or the
// barrier — spans P / region size ranks instead of P (as MPI Advance's locality-aware
// exchanges do); otherwise on the global communicator. From an Sdde's second call, where
// the real nodes have their windows and talk by agents, step 2 runs on the global
// communicator with the table or barrier across the nodes' windows instead (node_table,
// node_barrier: one step across the network for the whole reduction or barrier). Step 3 on
// the region communicator.
// A failed check on some rank (`err`) travels in step 2's collective: that rank bundles
// nothing. On the global communicator every rank raises the error there; on the group
// communicator only the group learns it, and carries the flag into step 3's collective
// (every region holds a member of every group), after which all ranks agree on it.
void Sdde::locality_exchange(const detail::Outbox& send, bool use_nbx, int tag, Stats* stats, const std::string& err,
                             detail::Delivery& into) {
#ifndef SPARSECOMM_SMPI
  // One region within one node: the messages themselves through the window, one copy in
  // and one out (no bundles, no records).
  if (loc_.num_regions() == 1)
    if (RegionWindow* w = RegionWindow::of(local_comm_.get(), 0, opt_.window)) {
      std::vector<int> rank_of(static_cast<size_t>(loc_.local_size()));
      for (int i = 0; i < loc_.local_size(); ++i) rank_of[static_cast<size_t>(i)] = loc_.member(0, i);
      if (w->exchange_messages(send, !err.empty(), rank_of, [this](int r) { return loc_.local_index_of(r); }, into))
        agree(comm_.get(), err);
      return;
    }
#endif
  const int me = comm_.rank();
  const int my_region = loc_.region();
  const int my_local = loc_.local_rank();
  // Bundles per destination region, sized first (one allocation each); sent in region order.
  std::vector<std::vector<char>> to_region(static_cast<size_t>(loc_.num_regions()));
  {
    std::vector<size_t> bytes(to_region.size(), 0);
    for (size_t i = 0; err.empty() && i < send.size(); ++i)
      bytes[static_cast<size_t>(loc_.region_of(send.ranks[i]))] += detail::record_size(send.len[i]);
    for (size_t r = 0; r < bytes.size(); ++r) to_region[r].reserve(bytes[r]);
  }
  for (size_t i = 0; err.empty() && i < send.size(); ++i) {
    const int d = send.ranks[i];
    detail::append_record(to_region[static_cast<size_t>(loc_.region_of(d))], me, d, send.ptr[i], send.len[i]);
  }
  // Steps 2 and 3 send the bundles from where they are (an Outbox over them).
  auto run = [&](const detail::Channel& ch, const detail::Outbox& o, const std::string& e, bool* failed, bool nbx) {
    detail::IntoBytes got;
    if (nbx) detail::nbx(ch, o, e, got.d, failed);
    else detail::personalized(ch, o, e, got.d, failed);
    return got.take();
  };
  // One region: no inter-region step; a failed check travels in the redistribution's
  // collective, and every rank raises it.
  if (loc_.num_regions() == 1) return redistribute(to_region, {}, !err.empty(), err, true, tag, stats, into);

  // Step 2: inter-region bundles. From an Sdde's second call on, where the nodes have their
  // windows and talk by agents, on the whole communicator with the direct strategies'
  // table or barrier across nodes (node_table, node_barrier: one step across the network,
  // where the group's reduction or barrier takes log2(regions)); every rank learns a
  // failure there.
  prepare(use_nbx ? "locality_nbx" : "locality_personalized");
  Sdde* const nodes = ++locality_calls_ >= 2 ? by_agents() : nullptr;
  const bool grouped = static_cast<bool>(group_comm_) && !nodes;
  detail::Outbox inter_send;
  for (size_t r = 0; r < to_region.size(); ++r) {
    const int rd = static_cast<int>(r);
    if (rd == my_region || to_region[r].empty()) continue;
    inter_send.add(grouped ? rd : loc_.member(rd, my_local % loc_.region_size(rd)), to_region[r].data(),
                   static_cast<int64_t>(to_region[r].size()));
  }
  detail::Channel inter = grouped ? detail::Channel{group_comm_.get(), tag, stats, "inter", [](int) { return false; }}
                                  : detail::Channel{comm_.get(), tag, stats, "inter",
                                                    [this](int r) { return loc_.same_region(r); }};
  bool failed_in_group = false;  // grouped: someone in my group failed (ungrouped: raised here)
#ifndef SPARSECOMM_SMPI
  if (nodes) {
    detail::IntoBytes got;
    if (use_nbx) detail::nbx(inter, inter_send, err, got.d, nullptr, nodes->node_barrier(tag).get());
    else detail::personalized_by_table(inter, inter_send, err, got.d,
                               [&](auto* from) { return nodes->node_table(inter_send, !err.empty(), tag, from); });
    return redistribute(to_region, got.take(), false, err, false, tag, stats, into);
  }
#endif
  const ByteMessages inter_recv = run(inter, inter_send, err, grouped ? &failed_in_group : nullptr, use_nbx);

  redistribute(to_region, inter_recv, failed_in_group, err, grouped, tag, stats, into);
}

// Step 3 of locality_exchange(): every record for my region — my own bundle for it and the
// bundles received from other regions — goes to its final destination inside the region
// (a local index), through the region's window where the region lies within one node, else
// through the personalized exchange on the region's communicator. `failed_here`: a failure
// this rank knows of (its own check, or its group's in step 2) to carry in this step's
// collective when `carry` (else none can be pending); then every rank raises `err` (agree:
// the failing rank's message).
void Sdde::redistribute(const std::vector<std::vector<char>>& to_region, const detail::ByteMessages& inter_recv,
                        bool failed_here, const std::string& err, bool carry, int tag, Stats* stats,
                        detail::Delivery& into) {
  const int me = comm_.rank();
  std::vector<std::vector<char>> to_local(static_cast<size_t>(loc_.local_size()));
  detail::Inbox got;
  auto keep = [&](const detail::RecordHeader& h, const char* payload) { detail::keep_record(got, h, payload); };
  auto route = [&](const detail::RecordHeader& h, const char* payload) {
    if (h.dest == me) keep(h, payload);
    else detail::append_record(to_local[static_cast<size_t>(loc_.local_index_of(h.dest))], h.src, h.dest, payload,
                               h.nbytes);
  };
  auto msg_ptr = [](const ByteMessages& m, size_t i) { return m.bytes.data() + m.offsets[i]; };
  const std::vector<char>& mine_local = to_region[static_cast<size_t>(loc_.region())];
  detail::for_each_record(mine_local.data(), static_cast<int64_t>(mine_local.size()), route);
  for (size_t i = 0; i < inter_recv.ranks.size(); ++i)
    detail::for_each_record(msg_ptr(inter_recv, i), inter_recv.offsets[i + 1] - inter_recv.offsets[i], route);
  bool failed_anywhere = false;
#ifndef SPARSECOMM_SMPI
  if (RegionWindow* w = RegionWindow::of(local_comm_.get(), 0, opt_.window)) {  // the region within one node
    failed_anywhere = w->exchange(to_local, failed_here, keep);
    if (failed_anywhere) agree(comm_.get(), err);
    got.deliver(into);
    return;
  }
#endif
  detail::Outbox intra_send;
  for (size_t li = 0; li < to_local.size(); ++li)
    if (!to_local[li].empty())
      intra_send.add(static_cast<int>(li), to_local[li].data(), static_cast<int64_t>(to_local[li].size()));
  detail::Channel intra{local_comm_.get(), tag, stats, "intra", [](int) { return true; }};
  detail::IntoBytes received;
  detail::personalized(intra, intra_send, failed_here ? "failed" : "", received.d, carry ? &failed_anywhere : nullptr);
  if (failed_anywhere) agree(comm_.get(), err);  // every rank knows: the failing rank's message everywhere
  const ByteMessages intra_recv = received.take();
  for (size_t i = 0; i < intra_recv.ranks.size(); ++i)
    detail::for_each_record(msg_ptr(intra_recv, i), intra_recv.offsets[i + 1] - intra_recv.offsets[i], keep);
  got.deliver(into);
}

}  // namespace sparsecomm
