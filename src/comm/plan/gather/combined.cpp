// combined: message combining over common neighborhoods for allgather-shaped exchanges
// (Mirsadeghi et al. 2017 and the k-group follow-up; the pattern is built in
// comm/combining.cpp). Phase 2 turns the pattern into a schedule on the actual buffers:
//   stage 1  send my block to the group members that forward it; receive theirs (a member
//            that is also one of my destinations keeps my block from this message);
//   stage 2  send one message per destination carrying every block I deliver there
//            (messages carrying only my own block leave at start(), without waiting);
//   receive  possibly-combined messages, copied to the final receive buffer.
// Both stages are detail::Steps (comm/plan/step.hpp): a transfer between ranks of one node
// goes through the plan's shared-memory window by default (window=false: messages).
#include <algorithm>

#include "comm/virt/counting.hpp"
#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "comm/plan/step.hpp"

namespace sparsecomm {
namespace {

constexpr int kTagStage1 = 51, kTagStage2 = 52, kTagCount = 53, kTagDirect = 54;

class CombinedGather final : public detail::Combined<detail::Scheduled<GatherPlan>> {
 public:
  CombinedGather(const Topology& t, const Locality& l, MPI_Comm c, int64_t n, const GatherOptions& o)
      : Combined({kTagStage1, kTagDirect, kTagStage2}, "combined", t, l, c, n, o) {
    setup(t, l, c, o);
  }
  ~CombinedGather() override { finish_if_active(); }

 private:
  void setup(const Topology& t, const Locality& l, MPI_Comm parent, const GatherOptions& o) {
    Stats& st = setup_stats_mut();
    const CombiningSchedule s = CombiningSchedule::build(comm(), t, l, combining_from(o.backend, o.sdde), &st);
    const double t0 = MPI_Wtime();
    set_groups_led(s.groups_led);
    const int me = l.rank();
    const int64_t vb = value_bytes();
    // Block sizes of the members whose blocks I forward (all mine with same_count).
    std::vector<int64_t> member_count(s.stage1_recv.size(), o.same_count ? my_count() : 0);
    if (!o.same_count) {
      std::vector<MPI_Request> r(s.stage1_recv.size() + s.stage1_send.size(), MPI_REQUEST_NULL);
      int64_t mine = my_count();
      for (size_t i = 0; i < s.stage1_recv.size(); ++i)
        SPC_MPI(MPI_Irecv(&member_count[i], 1, MPI_INT64_T, s.stage1_recv[i], kTagCount, comm(), &r[i]));
      for (size_t i = 0; i < s.stage1_send.size(); ++i)
        SPC_MPI(MPI_Isend(&mine, 1, MPI_INT64_T, s.stage1_send[i], kTagCount, comm(), &r[s.stage1_recv.size() + i]));
      wait_all(r);
    }
    // Stage 1: my block to the members that forward it; theirs into staging1_.
    int64_t total = 0;
    for (int64_t cnt : member_count) total += cnt;
    staging1_.assign(static_cast<size_t>(total * vb), 0);
    std::map<int, std::pair<char*, int64_t>> block_of;  // origin -> (where, bytes)
    block_of[me] = {const_cast<char*>(block_buf()), my_count() * vb};  // only read
    int64_t off = 0;
    for (size_t i = 0; i < s.stage1_recv.size(); ++i) {
      char* at = staging1_.data() + off;
      x_.stage1.add_recv_pieces(s.stage1_recv[i], {{at, member_count[i] * vb}});
      block_of[s.stage1_recv[i]] = {at, member_count[i] * vb};
      // The member's block is also meant for me: copy it from stage 1 (no second transfer).
      const auto& dl = s.stage1_recv_dests[i];
      if (std::find(dl.begin(), dl.end(), me) != dl.end())
        x_.copy_after_stage1(recv_buf() + recv_offsets()[source_index(s.stage1_recv[i])] * vb, at, member_count[i] * vb);
      off += member_count[i] * vb;
    }
    for (int m : s.stage1_send) x_.stage1.add_send_pieces(m, {block_of.at(me)});
    // Stage 2: one transfer per destination, at start() where it carries only my block
    // (x_.direct), else once stage 1 is in.
    for (size_t i = 0; i < s.dest.size(); ++i) {
      const auto& org = s.dest_origins[i];
      const int d = s.dest[i];
      if (d == me) {  // self-loop: copy my block into my receive slot
        x_.copy_after_stage1(recv_buf() + recv_offsets()[source_index(me)] * vb, block_buf(), my_count() * vb);
        continue;
      }
      detail::Step::Pieces src;
      for (int x : org) src.push_back(block_of.at(x));
      x_.add_stage2_send(me, d, org, src);
    }
    // Receive side: each origin's block straight to its receive slot.
    for (size_t i = 0; i < s.from.size(); ++i) {
      if (s.from[i] == me) continue;  // self-loop handled by a copy
      const auto& org = s.from_origins[i];
      detail::Step::Pieces dst;
      for (int x : org) {
        const size_t k = source_index(x);
        dst.push_back({recv_buf() + recv_offsets()[k] * vb, recv_counts()[k] * vb});
      }
      x_.add_stage2_recv(s.from[i], org, dst);
    }
    x_.connect(comm(), parent, o.backend, o.persistent_requests, counter());
    set_stages(s.stages());
    st.add_time("setup.combining.phase2", MPI_Wtime() - t0);
  }

  std::vector<char> staging1_;
};

}  // namespace

// Plan statistics (virt::gather_counts): the stages of CombinedGather above, on the combining
// schedules of every rank (virt::combining_schedules, the same as CombiningSchedule::build).
namespace virt {
std::vector<RankCounts> combined_gather_counts(const Graph& g, const std::vector<int>& region,
                                               const GatherOptions& opt, int64_t count) {
  const int64_t bytes = count * opt.value_bytes;
  std::vector<RankCounts> out(static_cast<size_t>(g.p));
  auto intra = [&](int a, int b) { return region[a] == region[b]; };
  const auto sched = combining_schedules(g, region, combining_from(opt.backend, opt.sdde));
  for (int a = 0; a < g.p; ++a) {
    const auto& s = sched[a];
    auto& c = out[a].counts;
    // The order of the plan's own counts: stage-1 receives, stage-1 sends, stage-2 sends
    // (one per destination), stage-2 receives (one per forwarder).
    for (int m : s.stage1_recv) c.record_recv("stage1", intra(a, m), bytes);
    for (int m : s.stage1_send) c.record_send("stage1", intra(a, m), bytes);
    for (size_t i = 0; i < s.dest.size(); ++i)
      if (s.dest[i] != a) c.record_send("stage2", intra(a, s.dest[i]), bytes * static_cast<int64_t>(s.dest_origins[i].size()));
    for (size_t i = 0; i < s.from.size(); ++i)
      if (s.from[i] != a) c.record_recv("stage2", intra(a, s.from[i]), bytes * static_cast<int64_t>(s.from_origins[i].size()));
    record_schedule(out[a], s);
  }
  return out;
}
}  // namespace virt

namespace detail {
void register_gather_combined() {
  register_gather_backend("combined", kCombinedDescription, plan_factory<CombinedGather>(),
                          GatherBackendHooks{virt::combined_gather_counts, combined_options()});
}
}  // namespace detail

}  // namespace sparsecomm
