#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/sdde/common.hpp"

namespace sparsecomm {

#ifndef SPARSECOMM_SMPI
using detail::RegionWindow;
#endif

Sdde* Sdde::by_agents() {
#ifdef SPARSECOMM_SMPI
  return nullptr;  // (no shared windows)
#else
  Sdde& nodes = over_nodes();
  return nodes.node_windows() && nodes.agents_ ? &nodes : nullptr;
#endif
}

#ifndef SPARSECOMM_SMPI
// The windows of the nodes and how pairs of nodes talk, for node_window across nodes and
// for the direct strategies' tables and barriers (node_table, node_barrier).
bool Sdde::node_windows() {
  if (leader_windows_ < 0) {  // first use, collective: windows on every node, the leaders' communicator
    // Agents or leaders (SddeOptions::node_exchange = agents | leaders; "" or
    // "auto": agents while every member is the agent of at most two other nodes, i.e.
    // nodes - 1 <= 2 x the smallest node; beyond, each pair's message would cost more than
    // the leaders' one reduction). Agreed here, on one node too (where the value is not
    // used, a bad one is still the user's mistake): a rank that asks otherwise, or a value
    // that differs between ranks, is an error on every rank.
    const bool across = loc_.num_regions() > 1;  // (alike on every rank)
    const std::string how = opt_.node_exchange.empty() ? "auto" : opt_.node_exchange;
    int smallest = loc_.region_size(0);
    for (int r = 1; r < loc_.num_regions(); ++r) smallest = std::min(smallest, loc_.region_size(r));
    const int want = how == "auto" ? (loc_.num_regions() - 1 <= 2 * smallest ? 1 : 2)
                     : how == "agents" ? 1 : how == "leaders" ? 2 : 0;
    const bool windows =
        across && RegionWindow::of(local_comm_.get(), 0, opt_.window) && RegionWindow::of(local_comm_.get(), 1, opt_.window);
    int mine[3] = {windows ? 1 : 0, want, -want},
        all[3];
    SPC_MPI(MPI_Allreduce(mine, all, 3, MPI_INT, MPI_MIN, comm_.get()));
    // (a rank with a good value says nothing where another's is bad: every rank raises the
    // bad one's words, agree())
    std::string bad;
    const bool window_off = RegionWindow::window_switch(opt_.window) == 0;  // (a malformed one: RegionWindow::of says so)
    if (want == 0) bad = "SPARSECOMM_SDDE_NODE_EXCHANGE='" + how + "': valid values: agents, leaders, auto (alike on every rank)";
    else if (window_off && how != "auto")
      bad = "SPARSECOMM_SDDE_NODE_EXCHANGE=" + how + " has no effect with SPARSECOMM_SDDE_WINDOW=" + opt_.window +
            " (the nodes' exchange runs through the windows): unset one of them";
    else if (all[1] != 0 && all[1] != -all[2])
      bad = "SPARSECOMM_SDDE_NODE_EXCHANGE differs between ranks ('" + how + "' here): set it alike on every rank";
    agree(comm_.get(), bad);
    if (!across) {  // one node: nothing across nodes
      leader_windows_ = 0;
      return false;
    }
    agents_ = all[1] == 1;
    if (!agents_) {
      MPI_Comm c = MPI_COMM_NULL;
      SPC_MPI(MPI_Comm_split(comm_.get(), loc_.local_rank() == 0 ? 0 : MPI_UNDEFINED, loc_.region(), &c));
      if (c != MPI_COMM_NULL) leaders_comm_ = Comm::adopt(c);
    }
    leader_windows_ = all[0];
  }
  return leader_windows_ == 1;
}

// The agents' step across nodes (node_window, node_table; Traff and Hunold, "Decomposing
// MPI collectives for exploiting multi-lane communication", CLUSTER 2020): every pair of
// nodes (a, b) has one agent on each side, agent(a, b) and agent(b, a) — both sides compute
// both, so sender and receiver know each other and no reduction says who sends. For every
// pair whose agent on my side I am, one message [8-byte header: my node's failure flag in
// its first byte][what fill(b, buffer) appends] goes to the other agent and one comes back
// (each received as soon as it is announced, into a buffer of its own; every pair sends,
// also when empty or failed). Returns the received messages, header included, in node
// order; *flagged is set if one came with its flag set (or without a header).
std::vector<std::vector<char>> Sdde::swap_by_agents(int tag, Stats* stats, bool failed,
                                                    const std::function<void(int, std::vector<char>&)>& fill,
                                                    bool* flagged) {
  const int me = comm_.rank(), my_node = loc_.region(), nodes = loc_.num_regions();
  const detail::Channel ch{comm_.get(), tag, stats, "inter", [](int) { return false; }};
  std::vector<std::vector<char>> mine(static_cast<size_t>(nodes));  // (kept until sent)
  detail::Outbox o;
  for (int r = 0; r < nodes; ++r) {
    if (r == my_node || agent(my_node, r) != me) continue;
    auto& b = mine[static_cast<size_t>(r)];
    b.assign(8, 0);
    b[0] = failed ? 1 : 0;
    fill(r, b);
    o.add(agent(r, my_node), b.data(), static_cast<int64_t>(b.size()));
  }
  std::vector<MPI_Request> sreqs;
  detail::post_sends(ch, o, sreqs);
  std::vector<std::vector<char>> got(o.size());
  std::vector<MPI_Request> rreqs(o.size(), MPI_REQUEST_NULL);
  for (size_t k = 0; k < o.size(); ++k) {
    MPI_Message msg;
    MPI_Status st;
    int n = 0;
    SPC_MPI(MPI_Mprobe(o.ranks[k], tag, ch.comm, &msg, &st));
    SPC_MPI(MPI_Get_count(&st, MPI_BYTE, &n));
    got[k].resize(static_cast<size_t>(n));
    SPC_MPI(MPI_Imrecv(got[k].data(), n, MPI_BYTE, &msg, &rreqs[k]));
    if (stats) stats->record_recv(ch.step, false, n);
  }
  wait_all(rreqs);
  wait_all(sreqs);
  for (const auto& m : got) *flagged = *flagged || m.size() < 8 || m[0] != 0;
  return got;
}

// The personalized exchange's table across nodes (agents; Sdde::exchange_into, from the
// second call): who sends how many bytes to me, learned in two rounds of each node's
// windows and one message per pair of nodes, instead of MPI_Reduce_scatter_block over every
// rank — a reduction of P counters whose log2(P) dependent steps cross the network, where
// here one step does (the hierarchical reduction of Traff and Hunold's multi-lane
// decomposition, CLUSTER 2020, with node_window's agents):
//  1. every rank writes its row (per destination rank: the message's bytes, or -1) into its
//     segment of the node's first window and publishes it; a rank whose input failed
//     writes an empty row (its messages were not sent);
//  2. the agent of the pair (my node, b) (node_window's formula) collects from every
//     member's row the entries for b's ranks — (source, destination's index in b, bytes) —
//     and sends them, after an 8-byte failure flag, to b's agent of the pair, receiving
//     its list for my node; every pair sends, also when empty or failed;
//  3. every rank writes what it received into its segment of the second window and
//     publishes it: each then reads its column of its node's rows and its entries of the
//     lists.
// Every rank learns every message sent to it also when some rank failed (the sends went
// out before the table: the caller drains them), and whether any did.
bool Sdde::node_table(const detail::Outbox& send, bool failed, int tag, std::vector<std::pair<int, int64_t>>* from) {
  RegionWindow& out = *RegionWindow::of(local_comm_.get(), 0, opt_.window);
  RegionWindow& in = *RegionWindow::of(local_comm_.get(), 1, opt_.window);
  const int p = comm_.size(), me = comm_.rank(), members = loc_.local_size();
  const int my_node = loc_.region(), mi = loc_.local_rank();
  const bool node_failed = out.publish_row(send, failed, p);
  struct Entry {
    int32_t src, dest;  // source rank; destination's local index in its node
    int64_t bytes;
  };
  static_assert(sizeof(Entry) == 16, "entries are packed as 16 bytes");
  bool any_failed = node_failed;
  const std::vector<std::vector<char>> got = swap_by_agents(tag, nullptr, node_failed, [&](int r, std::vector<char>& l) {
    for (int w = 0; w < members; ++w)
      for (int j = 0; j < loc_.region_size(r); ++j)
        if (const int64_t n = out.row(w)[loc_.member(r, j)]; n >= 0) {
          const Entry e{loc_.member(my_node, w), j, n};
          l.resize(l.size() + sizeof(e));
          std::memcpy(l.data() + l.size() - sizeof(e), &e, sizeof(e));
        }
  }, &any_failed);
  int64_t entries = 0;  // received, in every list
  for (const auto& g : got) entries += static_cast<int64_t>(g.size() >= 8 ? (g.size() - 8) / sizeof(Entry) : 0);
  auto write_in = [&](char* b) {  // [entries][entry...]
    std::memcpy(b, &entries, 8);
    char* at = b + 8;
    for (const auto& g : got)
      if (g.size() > 8) {
        std::memcpy(at, g.data() + 8, g.size() - 8);
        at += g.size() - 8;
      }
  };
  const bool failed_anywhere = in.publish(8 + entries * static_cast<int64_t>(sizeof(Entry)), any_failed, write_in);
  from->clear();
  for (int w = 0; w < members; ++w)
    if (const int64_t n = out.row(w)[me]; n >= 0) from->emplace_back(loc_.member(my_node, w), n);
  for (int w = 0; w < members; ++w) {
    int64_t n = 0;
    std::memcpy(&n, in.segment(w), 8);
    for (int64_t k = 0; k < n; ++k) {
      Entry e;
      std::memcpy(&e, in.segment(w) + 8 + k * static_cast<int64_t>(sizeof(Entry)), sizeof(e));
      if (e.dest == mi) from->emplace_back(e.src, e.bytes);
    }
  }
  std::sort(from->begin(), from->end());
  return failed_anywhere;
}

// NBX's barrier across nodes (agents; Sdde::exchange_into, from the second call): the
// dissemination of MPI_Ibarrier over every rank replaced by the hierarchy of node_table —
// a round of the node's first window (every member arrived), then one message per pair of
// nodes (my node arrived, and its failure flag) between the pair's agents, then a round of
// the second window (each member arrives once its pairs' messages came): when it completes,
// every member of every node has arrived. Non-blocking throughout: test() advances it.
std::unique_ptr<detail::NbxBarrier> Sdde::node_barrier(int tag) {
  class Barrier : public detail::NbxBarrier {
   public:
    Barrier(Sdde& s, int tag)
        : out_(*RegionWindow::of(s.local_comm_.get(), 0, s.opt_.window)), in_(*RegionWindow::of(s.local_comm_.get(), 1, s.opt_.window)), loc_(s.loc_) {
      const int my_node = s.loc_.region(), me = s.comm_.rank();
      for (int r = 0; r < s.loc_.num_regions(); ++r)
        if (r != my_node && s.agent(my_node, r) == me) partners_.push_back(s.agent(r, my_node));
      comm_ = s.comm_.get(), tag_ = tag;
      flags_.assign(partners_.size(), 0);
      reqs_.assign(2 * partners_.size(), MPI_REQUEST_NULL);
    }
    // Messages within my node: receipts counted in its window (as on one node).
    bool receipts(int rank) const override { return loc_.same_region(rank); }
    void expect(size_t n) override { out_.expect(n); }
    void received(int src) override { out_.received(loc_.local_index_of(src)); }
    bool all_received() const override { return out_.all_received(); }
    void arrive(bool failed) override {
      for (size_t k = 0; k < partners_.size(); ++k)
        SPC_MPI(MPI_Irecv(&flags_[k], 1, MPI_INT64_T, partners_[k], tag_, comm_, &reqs_[partners_.size() + k]));
      out_.arrive(failed);
      stage_ = 1;
    }
    bool test(bool* any_failed) override {
      if (stage_ == 1) {  // my node arrived: tell the other nodes of my pairs
        if (!out_.arrived(&node_failed_)) return false;
        mine_ = node_failed_ ? 1 : 0;
        for (size_t k = 0; k < partners_.size(); ++k)
          SPC_MPI(MPI_Isend(&mine_, 1, MPI_INT64_T, partners_[k], tag_, comm_, &reqs_[k]));
        stage_ = 2;
      }
      if (stage_ == 2) {  // the nodes of my pairs arrived: so do I, in the second round
        int done = 1;
        if (!reqs_.empty()) SPC_MPI(MPI_Testall(static_cast<int>(reqs_.size()), reqs_.data(), &done, MPI_STATUSES_IGNORE));
        if (!done) return false;
        bool f = node_failed_;
        for (int64_t x : flags_) f = f || x != 0;
        in_.arrive(f);
        stage_ = 3;
      }
      return in_.arrived(any_failed);
    }

   private:
    RegionWindow &out_, &in_;
    const Locality& loc_;  // the nodes
    MPI_Comm comm_ = MPI_COMM_NULL;
    int tag_ = 0, stage_ = 0;
    bool node_failed_ = false;
    int64_t mine_ = 0;
    std::vector<int> partners_;
    std::vector<int64_t> flags_;
    std::vector<MPI_Request> reqs_;  // [sends per partner][receives per partner]
  };
  return std::make_unique<Barrier>(*this, tag);
}
#endif

}  // namespace sparsecomm
