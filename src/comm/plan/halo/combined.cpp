// combined (halo-exchange Plans): the message-combining pattern of comm/combining.cpp
// driving an alltoallv-shaped exchange, where each destination gets its own data.
// Stage 1: an origin sends to each group member the segments that member will deliver
// for it (its share of the group's common destinations); stage 2: every rank sends one
// message per destination with the segments of every origin it delivers there, in origin
// order; receivers place each origin's segment at its place in the pattern.
#include <cstring>
#include <map>

#include "sparsecomm/comm/virt/plan_stats.hpp"
#include "comm/plan/two_stage.hpp"
#include "sparsecomm/comm/messages.hpp"
#include "sparsecomm/comm/plan/plan.hpp"

namespace sparsecomm {
namespace {

constexpr int kTagCounts = 61, kTagStage1 = 62, kTagStage2 = 63;

struct Copy {
  char* dst;
  const char* src;
  int64_t bytes;
};

class CombinedPlan final : public Plan {
 public:
  CombinedPlan(const Pattern& p, const Locality& loc, MPI_Comm comm, const PlanOptions& opt)
      : Plan("combined", p, loc, comm, opt) {
    setup(p, loc, opt);
  }
  ~CombinedPlan() override { finish_if_active(); }

 protected:
  // Posted at start(): stage-1 sends, stage-1 receives, direct stage-2 sends, stage-2
  // receives, in that order; the combined stage-2 sends once stage 1 is in.
  void do_start() override {
    for (const auto& c : pack1_) std::memcpy(c.dst, c.src, static_cast<size_t>(c.bytes));
    send1_.start();
    recv1_.start();
    direct_.start();
    recv2_.start();
    phases_.reset();
  }
  void do_wait() override { advance(true); }
  bool do_test() override { return advance(false); }
  bool supports_test() const override { return true; }

  // The schedule as phases (detail::TwoStagePhases), so that test() can stop between them.
  bool advance(bool block) {
    return phases_.advance(
        block, recv1_,
        [&] {
          for (const auto& c : self1_) std::memcpy(c.dst, c.src, static_cast<size_t>(c.bytes));
          for (const auto& c : pack2_) std::memcpy(c.dst, c.src, static_cast<size_t>(c.bytes));
          send2_.start();
        },
        recv2_, [&] { for (const auto& c : scatter_) std::memcpy(c.dst, c.src, static_cast<size_t>(c.bytes)); },
        {&send1_, &direct_, &send2_});
  }


 private:
  void setup(const Pattern& p, const Locality& loc, const PlanOptions& opt) {
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
    std::map<std::pair<int, int>, std::pair<const char*, int64_t>> seg;
    for (int i = 0; i < snd.num_neighbors(); ++i) seg[{me, snd.ranks[i]}] = {send_buf() + snd.offsets[i] * eb, snd.count(i) * eb};
    // Stage 1 buffers.
    out1_.resize(s.stage1_send.size());
    for (size_t i = 0; i < s.stage1_send.size(); ++i) {
      int64_t bytes = 0;
      for (int64_t c : out_counts[i]) bytes += c * eb;
      out1_[i].assign(static_cast<size_t>(bytes), 0);
      int64_t pos = 0;
      for (int d : s.stage1_send_dests[i]) {
        const auto& sg = seg.at({me, d});
        pack1_.push_back({out1_[i].data() + pos, sg.first, sg.second});
        pos += sg.second;
      }
      send1_.add(true, out1_[i].data(), bytes, s.stage1_send[i], kTagStage1);
      count_send("stage1", s.stage1_send[i], bytes);
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
          self1_.push_back({recv_buf() + rcv.offsets[k] * eb, in1_[i].data() + pos, in_counts[i][j] * eb});
        }
        pos += in_counts[i][j] * eb;
      }
      recv1_.add(false, in1_[i].data(), bytes, s.stage1_recv[i], kTagStage1);
      count_recv("stage1", s.stage1_recv[i], bytes);
    }
    // Stage 2: one message per destination.
    out2_.resize(s.dest.size());
    for (size_t i = 0; i < s.dest.size(); ++i) {
      const int d = s.dest[i];
      const auto& org = s.dest_origins[i];
      if (org.size() == 1 && org[0] == me) {  // direct: straight from the send buffer
        const auto& sg = seg.at({me, d});
        direct_.add(true, sg.first, sg.second, d, kTagStage2);
        count_send("stage2", d, sg.second);
        continue;
      }
      int64_t bytes = 0;
      for (int o : org) bytes += seg.at({o, d}).second;
      out2_[i].assign(static_cast<size_t>(bytes), 0);
      int64_t pos = 0;
      for (int o : org) {
        const auto& sg = seg.at({o, d});
        pack2_.push_back({out2_[i].data() + pos, sg.first, sg.second});
        pos += sg.second;
      }
      send2_.add(true, out2_[i].data(), bytes, d, kTagStage2);
      count_send("stage2", d, bytes);
    }
    // Receive side.
    in2_.resize(s.from.size());
    for (size_t i = 0; i < s.from.size(); ++i) {
      const auto& org = s.from_origins[i];
      if (org.size() == 1) {
        const int k = recv_idx.at(org[0]);
        recv2_.add(false, recv_buf() + rcv.offsets[k] * eb, rcv.count(k) * eb, s.from[i], kTagStage2);
        count_recv("stage2", s.from[i], rcv.count(k) * eb);
      } else {
        int64_t bytes = 0;
        for (int o : org) bytes += rcv.count(recv_idx.at(o)) * eb;
        in2_[i].assign(static_cast<size_t>(bytes), 0);
        int64_t pos = 0;
        for (int o : org) {
          const int k = recv_idx.at(o);
          scatter_.push_back({recv_buf() + rcv.offsets[k] * eb, in2_[i].data() + pos, rcv.count(k) * eb});
          pos += rcv.count(k) * eb;
        }
        recv2_.add(false, in2_[i].data(), bytes, s.from[i], kTagStage2);
        count_recv("stage2", s.from[i], bytes);
      }
    }
    for (Messages* m : {&send1_, &recv1_, &direct_, &recv2_, &send2_}) m->init(comm(), opt.persistent_requests);
    set_stages(s.stage1_send.empty() && s.stage1_recv.empty() ? 1 : 2);
    st.add_time("setup.combining.phase2", MPI_Wtime() - t0);
  }

  // Stage-1 sends and receives, direct stage-2 sends, all stage-2 receives (started at
  // start()), combined stage-2 sends (started once stage 1 is in).
  Messages send1_, recv1_, direct_, recv2_, send2_;
  detail::TwoStagePhases phases_;
  std::vector<std::vector<char>> out1_, in1_, out2_, in2_;
  std::vector<Copy> pack1_, pack2_, scatter_, self1_;
};

}  // namespace

namespace detail {
void register_combined() {
  register_backend("combined", "message combining over common neighborhoods (pairs or k-groups)",
                   [](const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o) {
                     return std::unique_ptr<Plan>(new CombinedPlan(p, l, c, o));
                   },
                   BackendHooks{virt::combined_halo_counts, combining_option_specs(), 5});
}
}  // namespace detail

}  // namespace sparsecomm
