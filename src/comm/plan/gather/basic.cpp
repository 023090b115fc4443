// Allgather-shaped backends without combining:
//   p2p      : one message per edge (comm/messages.hpp: Irecv/Isend per start, or persistent)
//   neighbor : MPI_Dist_graph_create_adjacent once, MPI_Ineighbor_allgatherv per start
#include "sparsecomm/comm/virt/plan_stats.hpp"
#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/messages.hpp"
#include "comm/plan/single_request.hpp"

namespace sparsecomm {
namespace {

class P2pGather final : public GatherPlan {
 public:
  P2pGather(const Topology& t, const Locality& l, MPI_Comm c, int64_t n, const GatherOptions& o)
      : GatherPlan("p2p", t, l, c, n, o) {
    const int64_t vb = value_bytes();
    for (size_t i = 0; i < t.sources.size(); ++i) {
      msgs_.add(false, recv_buf() + recv_offsets()[i] * vb, recv_counts()[i] * vb, t.sources[i], kTag);
      count_recv("direct", t.sources[i], recv_counts()[i] * vb);
    }
    for (int d : t.destinations) {
      msgs_.add(true, block_buf(), my_count() * vb, d, kTag);
      count_send("direct", d, my_count() * vb);
    }
    msgs_.init(comm(), o.persistent_requests);
  }
  ~P2pGather() override { finish_if_active(); }

 protected:
  void do_start() override { msgs_.start(); }
  void do_wait() override { msgs_.wait(); }
  bool do_test() override { return msgs_.test(); }

 private:
  static constexpr int kTag = 41;
  Messages msgs_;
};

class NeighborGather final : public detail::SingleRequest<GatherPlan> {
 public:
  NeighborGather(const Topology& t, const Locality& l, MPI_Comm c, int64_t n, const GatherOptions& o)
      : SingleRequest("neighbor", t, l, c, n, o) {
    const int64_t vb = value_bytes();
    for (size_t i = 0; i < t.sources.size(); ++i) {
      rcounts_.push_back(static_cast<int>(recv_counts()[i] * vb));
      rdispls_.push_back(static_cast<int>(recv_offsets()[i] * vb));
      count_recv("direct", t.sources[i], recv_counts()[i] * vb);
    }
    for (int d : t.destinations) count_send("direct", d, my_count() * vb);
    if (rcounts_.empty()) rcounts_.push_back(0), rdispls_.push_back(0);
    MPI_Comm g = MPI_COMM_NULL;
    SPC_MPI(MPI_Dist_graph_create_adjacent(comm(), static_cast<int>(t.sources.size()), t.sources.data(), MPI_UNWEIGHTED,
                                           static_cast<int>(t.destinations.size()), t.destinations.data(),
                                           MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g));
    graph_ = Comm::adopt(g);
  }
  ~NeighborGather() override { finish_if_active(); }

 protected:
  void do_start() override {
    SPC_MPI(MPI_Ineighbor_allgatherv(block_buf(), static_cast<int>(my_count() * value_bytes()), MPI_BYTE, recv_buf(),
                                     rcounts_.data(), rdispls_.data(), MPI_BYTE, graph_.get(), &req_));
  }

 private:
  Comm graph_;
  std::vector<int> rcounts_, rdispls_;
};

}  // namespace

// Plan statistics (virt::gather_counts): one transfer per edge in step "direct", as both plans
// above count them (and shm, whose counts these are too).
namespace virt {
std::vector<RankCounts> direct_gather_counts(const Graph& g, const std::vector<int>& region, const GatherOptions& opt,
                                             int64_t count) {
  const int64_t bytes = count * opt.value_bytes;
  std::vector<RankCounts> out(static_cast<size_t>(g.p));
  auto intra = [&](int a, int b) { return region[a] == region[b]; };
  for (int a = 0; a < g.p; ++a) {
    for (int x : g.src[a]) out[a].counts.record_recv("direct", intra(a, x), bytes);
    for (int d : g.dest[a]) out[a].counts.record_send("direct", intra(a, d), bytes);
  }
  return out;
}
}  // namespace virt

namespace detail {
void register_gather_basic() {
  register_gather_backend("p2p", "one message per edge (point-to-point)",
                          plan_factory<P2pGather>(),
                          GatherBackendHooks{virt::direct_gather_counts, {}});
#ifndef SPARSECOMM_SMPI  // SMPI 3.32 aborts on MPI's neighborhood collectives
  register_gather_backend("neighbor", "MPI's Ineighbor_allgatherv on a distributed graph communicator",
                          plan_factory<NeighborGather>(),
                          GatherBackendHooks{virt::direct_gather_counts, {}});
#endif
}
}  // namespace detail

}  // namespace sparsecomm
