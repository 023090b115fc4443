// shm (allgather shape): start() copies the caller's block straight into this rank's MPI-3
// shared-memory window (one copy, however many readers), and every destination on the node
// reads it from there (one copy each); destinations and sources off the node
// point-to-point, the sends out of the same window buffer.
// The protocol and its memory-model argument: comm/shm_channel.hpp.
#ifndef SPARSECOMM_SMPI  // SimGrid's SMPI has no shared-memory windows
#include <cstring>

#include "comm/shm_channel.hpp"
#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/virt/plan_stats.hpp"

namespace sparsecomm {
namespace {

class ShmGather final : public GatherPlan {
 public:
  ShmGather(const Topology& t, const Locality& l, MPI_Comm c, int64_t n, const GatherOptions& o)
      : GatherPlan("shm", t, l, c, n, o), x_(comm(), c) {
    const int64_t vb = value_bytes();
    std::vector<int> readers, writers;
    for (size_t i = 0; i < t.sources.size(); ++i) {
      const int64_t bytes = recv_counts()[i] * vb;  // one transfer per edge, as p2p
      if (x_.window.node_rank(t.sources[i]) < 0) {
        count_recv("direct", t.sources[i], bytes);
        x_.add_recv(recv_buf() + recv_offsets()[i] * vb, bytes, t.sources[i], kTag);
        continue;
      }
      count_transfer("direct", false, t.sources[i], bytes, true);
      writers.push_back(t.sources[i]);
      x_.add_read(recv_offsets()[i] * vb, bytes);
    }
    for (int d : t.destinations) {
      if (x_.window.node_rank(d) < 0) {
        count_send("direct", d, my_count() * vb);
        x_.add_send(0, my_count() * vb, d, kTag);
      } else {
        count_transfer("direct", true, d, my_count() * vb, true);  // start() writes it: no copy of its own
        readers.push_back(d);
      }
    }
    x_.channel.declare(readers, std::vector<int64_t>(readers.size(), 0), my_count() * vb, writers);
    x_.window.connect("shm");
    x_.init(comm(), o.persistent_requests, block_buf());
  }
  ~ShmGather() override { finish_if_active(); }

 protected:
  char* do_block_target() override { return x_.begin(); }
  void do_start() override { x_.publish(); }
  void do_wait() override { x_.wait(recv_buf()); }
  bool do_test() override { return x_.test(recv_buf()); }

 private:
  static constexpr int kTag = 42;
  detail::ShmExchange x_;
};

}  // namespace

namespace detail {
void register_gather_shm() {
  register_gather_backend("shm",
                          "this rank's block written once into an MPI-3 shared-memory window and read there by every "
                          "destination on the node; the others point-to-point",
                          plan_factory<ShmGather>(),
                          GatherBackendHooks{virt::direct_gather_counts, {}});
}
}  // namespace detail

}  // namespace sparsecomm
#else   // SimGrid's SMPI has no shared-memory windows: no such backend there
namespace sparsecomm::detail {
void register_gather_shm() {}
}  // namespace sparsecomm::detail
#endif  // SPARSECOMM_SMPI
