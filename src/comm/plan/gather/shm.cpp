// shm (allgather shape): this rank's block written once into its MPI-3 shared-memory
// window, and read from there by every destination on the node (one copy in, one copy out
// per reader, however many readers); destinations and sources off the node point-to-point.
// The protocol and its memory-model argument: comm/plan/shm_channel.hpp.
#ifndef SPARSECOMM_SMPI  // SimGrid's SMPI has no shared-memory windows
#include <algorithm>
#include <cstring>

#include "comm/plan/shm_channel.hpp"
#include "sparsecomm/comm/messages.hpp"
#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/virt/plan_stats.hpp"

namespace sparsecomm {
namespace {

class ShmGather final : public GatherPlan {
 public:
  ShmGather(const Topology& t, const Locality& l, MPI_Comm c, int64_t n, const GatherOptions& o)
      : GatherPlan("shm", t, l, c, n, o), ch_(comm()) {
    const int64_t vb = value_bytes();
    std::vector<int> readers, writers;
    for (size_t i = 0; i < t.sources.size(); ++i) {
      const int64_t bytes = recv_counts()[i] * vb;
      count_recv("direct", t.sources[i], bytes);  // one transfer per edge, as p2p
      if (ch_.node_rank(t.sources[i]) < 0) {
        p2p_.add(false, recv_buf() + recv_offsets()[i] * vb, bytes, t.sources[i], kTag);
        continue;
      }
      writers.push_back(t.sources[i]);
      reads_.push_back({recv_offsets()[i] * vb, bytes});
    }
    for (int d : t.destinations) {
      count_send("direct", d, my_count() * vb);
      if (ch_.node_rank(d) < 0) p2p_.add(true, block_buf(), my_count() * vb, d, kTag);
      else readers.push_back(d);
    }
    p2p_.init(comm(), o.persistent_requests);
    ch_.connect(readers, std::vector<int64_t>(readers.size(), 0), my_count() * vb, writers);
    done_.assign(reads_.size(), 0);
  }
  ~ShmGather() override { finish_if_active(); }

 protected:
  void do_start() override {
    const uint64_t e = ++epoch_;
    p2p_.start();
    if (ch_.has_readers()) {
      char* buf = ch_.begin_write(e, [&] { p2p_.test(); });
      std::memcpy(buf, block_buf(), static_cast<size_t>(my_count() * value_bytes()));
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
  static constexpr int kTag = 42;
  struct Read {
    int64_t to, bytes;
  };
  detail::ShmChannel ch_;
  Messages p2p_;
  std::vector<Read> reads_;
  std::vector<char> done_;
  uint64_t epoch_ = 0;
};

}  // namespace

namespace detail {
void register_gather_shm() {
  register_gather_backend("shm",
                          "this rank's block written once into an MPI-3 shared-memory window and read there by every "
                          "destination on the node; the others point-to-point",
                          [](const Topology& t, const Locality& l, MPI_Comm c, int64_t n, const GatherOptions& o) {
                            return std::unique_ptr<GatherPlan>(new ShmGather(t, l, c, n, o));
                          },
                          GatherBackendHooks{virt::direct_gather_counts, {}});
}
}  // namespace detail

}  // namespace sparsecomm
#endif  // SPARSECOMM_SMPI
