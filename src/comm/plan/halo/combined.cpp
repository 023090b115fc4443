// combined (halo-exchange Plans): the message-combining pattern of comm/combining.cpp
// driving an alltoallv-shaped exchange, where each destination gets its own data.
// Stage 1: an origin sends to each group member the segments that member will deliver
// for it (its share of the group's common destinations); stage 2: every rank sends one
// message per destination with the segments of every origin it delivers there, in origin
// order; receivers place each origin's segment at its place in the pattern.
// Both stages are detail::Steps (comm/plan/step.hpp): a transfer between ranks of one node
// goes through the plan's shared-memory window by default (window=false: messages).
#include <map>

#include "comm/virt/counting.hpp"
#include "comm/plan/step.hpp"
#include "sparsecomm/comm/messages.hpp"
#include "sparsecomm/comm/plan/plan.hpp"

namespace sparsecomm {
namespace {

constexpr int kTagCounts = 61, kTagStage1 = 62, kTagStage2 = 63, kTagDirect = 64;

class CombinedPlan final : public detail::Combined<detail::ScheduledPlan> {
 public:
  CombinedPlan(const Pattern& p, const Locality& loc, MPI_Comm comm, const PlanOptions& opt)
      : Combined({kTagStage1, kTagDirect, kTagStage2}, "combined", p, loc, comm, opt) {
    setup(p, loc, comm, opt);
  }
  ~CombinedPlan() override { finish_if_active(); }

 private:
  void setup(const Pattern& p, const Locality& loc, MPI_Comm parent, const PlanOptions& opt) {
    Stats& st = setup_stats_mut();
    const CombiningSchedule s =
        CombiningSchedule::build(comm(), Topology::from_pattern(p), loc, combining_from(opt.backend, opt.sdde), &st);
    const double t0 = MPI_Wtime();
    const int me = loc.rank();
    const int64_t eb = elem_bytes();
    const auto& snd = p.send();
    const auto& rcv = p.recv();
    std::map<int, int> send_idx, recv_idx;  // neighbor rank -> segment index
    for (int i = 0; i < snd.num_neighbors(); ++i) send_idx[snd.ranks[i]] = i;
    for (int i = 0; i < rcv.num_neighbors(); ++i) recv_idx[rcv.ranks[i]] = i;

    // Stage-1 segment sizes: I tell each forwarder the counts of my segments for its
    // destinations; I learn those of the members I forward for.
    std::vector<std::vector<int64_t>> out_counts(s.stage1_send.size()), in_counts(s.stage1_recv.size());
    {
      std::vector<MPI_Request> r;
      for (size_t i = 0; i < s.stage1_recv.size(); ++i) {
        in_counts[i].resize(s.stage1_recv_dests[i].size());
        r.emplace_back();
        SPC_MPI(MPI_Irecv(in_counts[i].data(), static_cast<int>(in_counts[i].size()), MPI_INT64_T, s.stage1_recv[i],
                          kTagCounts, comm(), &r.back()));
      }
      for (size_t i = 0; i < s.stage1_send.size(); ++i) {
        for (int d : s.stage1_send_dests[i]) out_counts[i].push_back(snd.count(send_idx.at(d)));
        r.emplace_back();
        SPC_MPI(MPI_Isend(out_counts[i].data(), static_cast<int>(out_counts[i].size()), MPI_INT64_T, s.stage1_send[i],
                          kTagCounts, comm(), &r.back()));
      }
      wait_all(r);
    }
    // Where each (origin, destination) segment sits before stage 2.
    std::map<std::pair<int, int>, detail::Step::Pieces::value_type> seg;
    for (int i = 0; i < snd.num_neighbors(); ++i) seg[{me, snd.ranks[i]}] = {send_buf() + snd.offsets[i] * eb, snd.count(i) * eb};
    // Stage 1: my segments for the destinations each member delivers for me.
    for (size_t i = 0; i < s.stage1_send.size(); ++i) {
      detail::Step::Pieces src;
      for (int d : s.stage1_send_dests[i]) src.push_back(seg.at({me, d}));
      x_.stage1.add_send_pieces(s.stage1_send[i], src);
    }
    in1_.resize(s.stage1_recv.size());
    for (size_t i = 0; i < s.stage1_recv.size(); ++i) {
      int64_t bytes = 0;
      for (int64_t c : in_counts[i]) bytes += c * eb;
      in1_[i].assign(static_cast<size_t>(bytes), 0);
      int64_t pos = 0;
      for (size_t j = 0; j < s.stage1_recv_dests[i].size(); ++j) {
        const int d = s.stage1_recv_dests[i][j];
        seg[{s.stage1_recv[i], d}] = {in1_[i].data() + pos, in_counts[i][j] * eb};
        if (d == me) {  // this member's segment for me rides in stage 1: place it directly
          const int k = recv_idx.at(s.stage1_recv[i]);
          x_.copy_after_stage1(recv_buf() + rcv.offsets[k] * eb, in1_[i].data() + pos, in_counts[i][j] * eb);
        }
        pos += in_counts[i][j] * eb;
      }
      x_.stage1.add_recv_pieces(s.stage1_recv[i], {{in1_[i].data(), bytes}});
    }
    // Stage 2: one transfer per destination, straight from the send buffer where I deliver
    // only my own segment (x_.direct), else gathered from the segments of its origins.
    for (size_t i = 0; i < s.dest.size(); ++i) {
      const int d = s.dest[i];
      const auto& org = s.dest_origins[i];
      detail::Step::Pieces src;
      for (int o : org) src.push_back(seg.at({o, d}));
      x_.add_stage2_send(me, d, org, src);
    }
    // Receive side: each origin's segment to its place in the receive buffer.
    for (size_t i = 0; i < s.from.size(); ++i) {
      const auto& org = s.from_origins[i];
      detail::Step::Pieces dst;
      for (int o : org) {
        const int k = recv_idx.at(o);
        dst.push_back({recv_buf() + rcv.offsets[k] * eb, rcv.count(k) * eb});
      }
      x_.add_stage2_recv(s.from[i], org, dst);
    }
    x_.connect(comm(), parent, opt.backend, opt.persistent_requests, counter());
    set_stages(s.stages());
    st.add_time("setup.combining.phase2", MPI_Wtime() - t0);
  }

  std::vector<std::vector<char>> in1_;
};

}  // namespace

// Plan statistics (virt::halo_counts): this backend's counts, from the combining schedules
// of the pattern's graph, checked rank by rank against real plans by tests/test_plan_stats.cpp.
namespace virt {

std::vector<RankCounts> combined_halo_counts(const HaloPattern& pat, const std::vector<int>& region,
                                             const PlanOptions& opt) {
  const int64_t eb = static_cast<int64_t>(opt.width) * opt.value_bytes;
  const int p = pat.p;
  std::vector<RankCounts> out(static_cast<size_t>(p));
  const Recorder rec(out, region, pat, detail::window_wanted(opt.backend));
  // backends/combined.cpp: the combining schedule of the pattern's graph; stage 1 carries
  // an origin's segments for the destinations a member covers; stage 2 one message per
  // destination with the segments of its origins; one receive per forwarder.
  std::vector<std::vector<int>> dest(static_cast<size_t>(p));
  std::vector<std::map<int, int64_t>> count(static_cast<size_t>(p));  // count[o][d]
  for (int a = 0; a < p; ++a)
    for (const auto& seg : pat.send[a]) {
      dest[a].push_back(seg.dest);
      count[a][seg.dest] = seg.size;
    }
  const auto sched = combining_schedules(Graph::from_destinations(p, std::move(dest)), region, combining_from(opt.backend, opt.sdde));
  for (int a = 0; a < p; ++a) {
    const auto& s = sched[a];
    for (size_t i = 0; i < s.stage1_send.size(); ++i) {
      int64_t n = 0;
      for (int d : s.stage1_send_dests[i]) n += count[a].at(d);
      rec.side("stage1", a, true, s.stage1_send[i], n * eb);
    }
    for (size_t i = 0; i < s.stage1_recv.size(); ++i) {
      int64_t n = 0;
      for (int d : s.stage1_recv_dests[i]) n += count[s.stage1_recv[i]].at(d);
      rec.side("stage1", a, false, s.stage1_recv[i], n * eb);
    }
    for (size_t i = 0; i < s.dest.size(); ++i) {
      int64_t n = 0;
      for (int o : s.dest_origins[i]) n += count[o].at(s.dest[i]);
      rec.side("stage2", a, true, s.dest[i], n * eb);
    }
    for (size_t i = 0; i < s.from.size(); ++i) {
      int64_t n = 0;
      for (int o : s.from_origins[i]) n += count[o].at(a);
      rec.side("stage2", a, false, s.from[i], n * eb);
    }
    record_schedule(out[a], s);
  }
  return out;
}

}  // namespace virt

namespace detail {
void register_combined() {
  BackendHooks h{virt::combined_halo_counts, combined_options(), 5};
  h.node_window = true;
  register_backend("combined", kCombinedDescription, plan_factory<CombinedPlan>(), std::move(h));
}
}  // namespace detail

}  // namespace sparsecomm
