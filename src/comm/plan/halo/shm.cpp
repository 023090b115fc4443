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
#include "sparsecomm/comm/messages.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/comm/virt/plan_stats.hpp"

namespace sparsecomm {
namespace {

class ShmPlan final : public Plan {
 public:
  ShmPlan(const Pattern& p, const Locality& loc, MPI_Comm comm, const PlanOptions& opt)
      : Plan("shm", p, loc, comm, opt), ch_(this->comm()) {
    const auto& s = p.send();
    const auto& r = p.recv();
    const int64_t eb = elem_bytes();
    std::vector<int> readers, writers;
    std::vector<int64_t> offsets;
    int64_t at = 0;
    // One transfer per neighbor, as p2p (so the counts are virt::direct_halo_counts').
    for (int i = 0; i < s.num_neighbors(); ++i) {
      const int64_t bytes = s.count(i) * eb;
      count_send("direct", s.ranks[i], bytes);
      if (ch_.node_rank(s.ranks[i]) < 0) {
        p2p_.add(true, send_buf() + s.offsets[i] * eb, bytes, s.ranks[i], kTag);
        continue;
      }
      readers.push_back(s.ranks[i]);
      offsets.push_back(at);
      copies_.push_back({s.offsets[i] * eb, at, bytes});
      at += bytes;
    }
    for (int i = 0; i < r.num_neighbors(); ++i) {
      const int64_t bytes = r.count(i) * eb;
      count_recv("direct", r.ranks[i], bytes);
      if (ch_.node_rank(r.ranks[i]) < 0) {
        p2p_.add(false, recv_buf() + r.offsets[i] * eb, bytes, r.ranks[i], kTag);
        continue;
      }
      writers.push_back(r.ranks[i]);
      reads_.push_back({r.offsets[i] * eb, bytes});
    }
    p2p_.init(this->comm(), opt.persistent_requests);
    ch_.connect(readers, offsets, at, writers);
    done_.assign(reads_.size(), 0);
  }
  ~ShmPlan() override { finish_if_active(); }
  bool supports_test() const override { return true; }

 protected:
  void do_start() override {
    const uint64_t e = ++epoch_;
    p2p_.start();
    if (ch_.has_readers()) {
      char* buf = ch_.begin_write(e, [&] { p2p_.test(); });
      for (const Copy& c : copies_) std::memcpy(buf + c.at, send_buf() + c.from, static_cast<size_t>(c.bytes));
      ch_.publish(e);
    }
    std::fill(done_.begin(), done_.end(), 0);
  }
  void do_wait() override {
    for (size_t k = 0; k < reads_.size(); ++k)
      if (!done_[k]) {
        ch_.wait_ready(k, epoch_, [&] { p2p_.test(); });
        read(k);
      }
    p2p_.wait();
  }
  bool do_test() override {
    bool all = true;
    for (size_t k = 0; k < reads_.size(); ++k)
      if (!done_[k]) {
        if (ch_.ready(k, epoch_)) read(k);
        else all = false;
      }
    return p2p_.test() && all;
  }

 private:
  void read(size_t k) {
    std::memcpy(recv_buf() + reads_[k].to, ch_.data(k, epoch_), static_cast<size_t>(reads_[k].bytes));
    ch_.done(k, epoch_);
    done_[k] = 1;
  }
  static constexpr int kTag = 12;
  struct Copy {
    int64_t from, at, bytes;  // send_buf() offset, window offset, size
  };
  struct Read {
    int64_t to, bytes;  // recv_buf() offset, size
  };
  detail::ShmChannel ch_;
  Messages p2p_;
  std::vector<Copy> copies_;
  std::vector<Read> reads_;
  std::vector<char> done_;
  uint64_t epoch_ = 0;
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
