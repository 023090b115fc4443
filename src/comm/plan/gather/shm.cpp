// shm (allgather shape): this rank's block written once into its MPI-3 shared-memory
// window, and read from there by every destination on the node (one copy in, one copy out
// per reader, however many readers); destinations and sources off the node point-to-point.
// The protocol and its memory-model argument: comm/plan/shm_channel.hpp.
#ifndef SPARSECOMM_SMPI  // SimGrid's SMPI has no shared-memory windows
#include <cstring>

#include "comm/plan/shm_channel.hpp"
#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/virt/plan_stats.hpp"

namespace sparsecomm {
namespace {

class ShmGather final : public GatherPlan {
 public:
  ShmGather(const Topology& t, const Locality& l, MPI_Comm c, int64_t n, const GatherOptions& o)
      : GatherPlan("shm", t, l, c, n, o), x_(comm()) {
    const int64_t vb = value_bytes();
    std::vector<int> readers, writers;
    for (size_t i = 0; i < t.sources.size(); ++i) {
      const int64_t bytes = recv_counts()[i] * vb;  // one transfer per edge, as p2p
      if (x_.channel.node_rank(t.sources[i]) < 0) {
        count_recv("direct", t.sources[i], bytes);
        x_.p2p.add(false, recv_buf() + recv_offsets()[i] * vb, bytes, t.sources[i], kTag);
        continue;
      }
      count_window_recv("direct", t.sources[i], bytes);
      writers.push_back(t.sources[i]);
      x_.add_read(recv_offsets()[i] * vb, bytes);
    }
    for (int d : t.destinations) {
      if (x_.channel.node_rank(d) < 0) {
        count_send("direct", d, my_count() * vb);
        x_.p2p.add(true, block_buf(), my_count() * vb, d, kTag);
      } else {
        count_window_send("direct", d, my_count() * vb);
        readers.push_back(d);
      }
    }
    if (!readers.empty()) count_window_write(my_count() * vb);  // once, whatever the readers
    x_.p2p.init(comm(), o.persistent_requests);
    x_.channel.connect(readers, std::vector<int64_t>(readers.size(), 0), my_count() * vb, writers);
  }
  ~ShmGather() override { finish_if_active(); }

 protected:
  void do_start() override {
    x_.start([&](char* buf) { std::memcpy(buf, block_buf(), static_cast<size_t>(my_count() * value_bytes())); });
  }
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
                          [](const Topology& t, const Locality& l, MPI_Comm c, int64_t n, const GatherOptions& o) {
                            return std::unique_ptr<GatherPlan>(new ShmGather(t, l, c, n, o));
                          },
                          GatherBackendHooks{virt::direct_gather_counts, {}});
}
}  // namespace detail

}  // namespace sparsecomm
#endif  // SPARSECOMM_SMPI
