// shm: neighbors on the same node through an MPI-3 shared-memory window, the others
// point-to-point (as p2p). The protocol (per-writer epoch, per-reader slots, double
// buffering) and its memory-model argument: comm/plan/shm_channel.hpp.
//
// start(): the plan has packed its send buffer; the on-node segments are copied into this
// rank's window buffer (one copy) and published; the off-node messages are posted.
// wait():  each on-node writer's segment for this rank is copied straight from its window
// into the receive buffer (one copy) as soon as it is published; then the off-node messages.
// Against Open MPI's shared-memory transport for the same on-node message: no copy into
// and out of its segment per message, no matching.
#ifndef SPARSECOMM_SMPI  // SimGrid's SMPI has no shared-memory windows
#include <cstring>

#include "comm/plan/shm_channel.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/comm/virt/plan_stats.hpp"

namespace sparsecomm {
namespace {

class ShmPlan final : public Plan {
 public:
  ShmPlan(const Pattern& p, const Locality& loc, MPI_Comm comm, const PlanOptions& opt)
      : Plan("shm", p, loc, comm, opt), x_(this->comm()) {
    const auto& s = p.send();
    const auto& r = p.recv();
    const int64_t eb = elem_bytes();
    std::vector<int> readers, writers;
    std::vector<int64_t> offsets;
    int64_t at = 0;
    // One transfer per neighbor, as p2p (so the counts are virt::direct_halo_counts').
    for (int i = 0; i < s.num_neighbors(); ++i) {
      const int64_t bytes = s.count(i) * eb;
      if (x_.channel.node_rank(s.ranks[i]) < 0) {
        count_send("direct", s.ranks[i], bytes);
        x_.p2p.add(true, send_buf() + s.offsets[i] * eb, bytes, s.ranks[i], kTag);
        continue;
      }
      count_window_send("direct", s.ranks[i], bytes);
      count_window_write(bytes);
      readers.push_back(s.ranks[i]);
      offsets.push_back(at);
      copies_.push_back({s.offsets[i] * eb, at, bytes});
      at += bytes;
    }
    for (int i = 0; i < r.num_neighbors(); ++i) {
      const int64_t bytes = r.count(i) * eb;
      if (x_.channel.node_rank(r.ranks[i]) < 0) {
        count_recv("direct", r.ranks[i], bytes);
        x_.p2p.add(false, recv_buf() + r.offsets[i] * eb, bytes, r.ranks[i], kTag);
        continue;
      }
      count_window_recv("direct", r.ranks[i], bytes);
      writers.push_back(r.ranks[i]);
      x_.add_read(r.offsets[i] * eb, bytes);
    }
    x_.p2p.init(this->comm(), opt.persistent_requests);
    x_.channel.connect(readers, offsets, at, writers);
  }
  ~ShmPlan() override { finish_if_active(); }
  bool supports_test() const override { return true; }

 protected:
  void do_start() override {
    x_.start([&](char* buf) {
      for (const Copy& c : copies_) std::memcpy(buf + c.at, send_buf() + c.from, static_cast<size_t>(c.bytes));
    });
  }
  void do_wait() override { x_.wait(recv_buf()); }
  bool do_test() override { return x_.test(recv_buf()); }

 private:
  static constexpr int kTag = 12;
  struct Copy {
    int64_t from, at, bytes;  // send_buf() offset, window offset, size
  };
  detail::ShmExchange x_;
  std::vector<Copy> copies_;
};

}  // namespace

namespace detail {
void register_shm() {
  register_backend("shm",
                   "on-node neighbors through an MPI-3 shared-memory window (one copy in, one out), the others "
                   "point-to-point",
                   [](const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o) {
                     return std::unique_ptr<Plan>(new ShmPlan(p, l, c, o));
                   },
                   BackendHooks{virt::direct_halo_counts, {}, 1});
}
}  // namespace detail

}  // namespace sparsecomm
#endif  // SPARSECOMM_SMPI
