// combined: message combining over common neighborhoods for allgather-shaped exchanges
// (Mirsadeghi et al. 2017 and the k-group follow-up; the pattern is built in
// comm/combining.cpp). Phase 2 turns the pattern into a schedule on the actual buffers:
//   stage 1  send my block to the group members that forward it; receive theirs (a member
//            that is also one of my destinations keeps my block from this message);
//   stage 2  send one message per destination carrying every block I deliver there
//            (messages carrying only my own block leave at start(), without waiting);
//   receive  possibly-combined messages, copied to the final receive buffer.
#include <algorithm>
#include <cstring>

#include "sparsecomm/comm/virt/plan_stats.hpp"
#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "comm/plan/two_stage.hpp"
#include "sparsecomm/comm/messages.hpp"

namespace sparsecomm {
namespace {

constexpr int kTagStage1 = 51, kTagStage2 = 52, kTagCount = 53;

struct Copy {
  char* dst;
  const char* src;
  int64_t bytes;
};

class CombinedGather final : public GatherPlan {
 public:
  CombinedGather(const Topology& t, const Locality& l, MPI_Comm c, int64_t n, const GatherOptions& o)
      : GatherPlan("combined", t, l, c, n, o) {
    setup(t, l, o);
  }
  ~CombinedGather() override { finish_if_active(); }

 protected:
  void do_start() override {
    recv1_.start();
    final_recv_.start();
    send1_.start();
    direct_.start();
    phases_.reset();
  }
  void do_wait() override { advance(true); }
  bool do_test() override { return advance(false); }

 private:
  // The schedule as phases (detail::TwoStagePhases), so that test() can stop between them.
  bool advance(bool block) {
    return phases_.advance(
        block, recv1_,
        [&] {
          for (const auto& cp : self1_) std::memcpy(cp.dst, cp.src, static_cast<size_t>(cp.bytes));
          for (const auto& cp : pack_) std::memcpy(cp.dst, cp.src, static_cast<size_t>(cp.bytes));
          combined_.start();
          for (const auto& cp : self_) std::memcpy(cp.dst, cp.src, static_cast<size_t>(cp.bytes));
        },
        final_recv_, [&] { for (const auto& cp : scatter_) std::memcpy(cp.dst, cp.src, static_cast<size_t>(cp.bytes)); },
        {&send1_, &direct_, &combined_});
  }


  void setup(const Topology& t, const Locality& l, const GatherOptions& o) {
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
    // Stage 1.
    int64_t total = 0;
    for (int64_t cnt : member_count) total += cnt;
    staging1_.assign(static_cast<size_t>(total * vb), 0);
    std::map<int, std::pair<const char*, int64_t>> block_of;  // origin -> (where, bytes)
    block_of[me] = {block_buf(), my_count() * vb};
    int64_t off = 0;
    for (size_t i = 0; i < s.stage1_recv.size(); ++i) {
      char* at = staging1_.data() + off;
      recv1_.add(false, at, member_count[i] * vb, s.stage1_recv[i], kTagStage1);
      count_recv("stage1", s.stage1_recv[i], member_count[i] * vb);
      block_of[s.stage1_recv[i]] = {at, member_count[i] * vb};
      // The member's block is also meant for me: copy it from stage 1 (no second message).
      const auto& dl = s.stage1_recv_dests[i];
      if (std::find(dl.begin(), dl.end(), me) != dl.end())
        self1_.push_back({recv_buf() + recv_offsets()[source_index(s.stage1_recv[i])] * vb, at, member_count[i] * vb});
      off += member_count[i] * vb;
    }
    for (int m : s.stage1_send) {
      send1_.add(true, block_buf(), my_count() * vb, m, kTagStage1);
      count_send("stage1", m, my_count() * vb);
    }
    // Stage 2: one message per destination.
    out_bufs_.resize(s.dest.size());
    for (size_t i = 0; i < s.dest.size(); ++i) {
      const auto& org = s.dest_origins[i];
      const int d = s.dest[i];
      if (d == me) {  // self-loop: copy my block into my receive slot
        self_.push_back({recv_buf() + recv_offsets()[source_index(me)] * vb, block_buf(), my_count() * vb});
        continue;
      }
      if (org.size() == 1 && org[0] == me) {
        direct_.add(true, block_buf(), my_count() * vb, d, kTagStage2);
        count_send("stage2", d, my_count() * vb);
        continue;
      }
      int64_t bytes = 0;
      for (int x : org) bytes += block_of.at(x).second;
      out_bufs_[i].assign(static_cast<size_t>(bytes), 0);
      int64_t pos = 0;
      for (int x : org) {
        pack_.push_back({out_bufs_[i].data() + pos, block_of.at(x).first, block_of.at(x).second});
        pos += block_of.at(x).second;
      }
      combined_.add(true, out_bufs_[i].data(), bytes, d, kTagStage2);
      count_send("stage2", d, bytes);
    }
    // Receive side: possibly-combined messages.
    int64_t stage = 0;
    for (size_t i = 0; i < s.from.size(); ++i) {
      if (s.from[i] == me) continue;  // self-loop handled by a copy
      const auto& org = s.from_origins[i];
      if (org.size() == 1) {
        const size_t k = source_index(org[0]);
        final_recv_.add(false, recv_buf() + recv_offsets()[k] * vb, recv_counts()[k] * vb, s.from[i], kTagStage2);
        count_recv("stage2", s.from[i], recv_counts()[k] * vb);
        continue;
      }
      for (int x : org) stage += recv_counts()[source_index(x)] * vb;
    }
    staging2_.assign(static_cast<size_t>(stage), 0);
    int64_t pos = 0;
    for (size_t i = 0; i < s.from.size(); ++i) {
      const auto& org = s.from_origins[i];
      if (s.from[i] == me || org.size() == 1) continue;
      const int64_t begin = pos;
      for (int x : org) {
        const size_t k = source_index(x);
        scatter_.push_back({recv_buf() + recv_offsets()[k] * vb, staging2_.data() + pos, recv_counts()[k] * vb});
        pos += recv_counts()[k] * vb;
      }
      final_recv_.add(false, staging2_.data() + begin, pos - begin, s.from[i], kTagStage2);
      count_recv("stage2", s.from[i], pos - begin);
    }
    for (Messages* m : {&recv1_, &send1_, &direct_, &combined_, &final_recv_}) m->init(comm(), o.persistent_requests);
    set_stages(s.stage1_send.empty() && s.stage1_recv.empty() ? 1 : 2);
    st.add_time("setup.combining.phase2", MPI_Wtime() - t0);
  }

  Messages recv1_, send1_, direct_, combined_, final_recv_;
  std::vector<char> staging1_, staging2_;
  std::vector<std::vector<char>> out_bufs_;
  std::vector<Copy> pack_, scatter_, self_, self1_;
  detail::TwoStagePhases phases_;
};

}  // namespace

namespace detail {
void register_gather_combined() {
  register_gather_backend("combined", "message combining over common neighborhoods (pairs or k-groups)",
                          [](const Topology& t, const Locality& l, MPI_Comm c, int64_t n, const GatherOptions& o) {
                            return std::unique_ptr<GatherPlan>(new CombinedGather(t, l, c, n, o));
                          },
                          GatherBackendHooks{virt::combined_gather_counts, combining_option_specs()});
}
}  // namespace detail

}  // namespace sparsecomm
