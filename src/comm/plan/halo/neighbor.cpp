// neighbor: the MPI library's own neighborhood collective. A distributed graph
// communicator (MPI_Dist_graph_create_adjacent, no reordering) is built once; each
// execution is one MPI_Ineighbor_alltoallv. Where the library implements MPI-4, the
// persistent form (MPI_Neighbor_alltoallv_init) is registered too as neighbor_persistent;
// Open MPI 4.1 is MPI-3.1, so there it is simply not registered.
#include "sparsecomm/comm/virt/plan_stats.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "comm/plan/single_request.hpp"

namespace sparsecomm {
namespace {

class NeighborPlan final : public detail::SingleRequest<Plan> {
 public:
  NeighborPlan(const Pattern& p, const Locality& loc, MPI_Comm comm, const PlanOptions& opt, bool persistent)
      : SingleRequest(persistent ? "neighbor_persistent" : "neighbor", p, loc, comm, opt), persistent_(persistent) {
    const auto& s = p.send();
    const auto& r = p.recv();
    const int64_t eb = elem_bytes();
    for (int i = 0; i < s.num_neighbors(); ++i) {
      scounts_.push_back(static_cast<int>(s.count(i) * eb));
      sdispls_.push_back(static_cast<int>(s.offsets[i] * eb));
      count_send("direct", s.ranks[i], s.count(i) * eb);
    }
    for (int i = 0; i < r.num_neighbors(); ++i) {
      rcounts_.push_back(static_cast<int>(r.count(i) * eb));
      rdispls_.push_back(static_cast<int>(r.offsets[i] * eb));
      count_recv("direct", r.ranks[i], r.count(i) * eb);
    }
    MPI_Comm g = MPI_COMM_NULL;
    SPC_MPI(MPI_Dist_graph_create_adjacent(this->comm(), r.num_neighbors(), r.ranks.data(), MPI_UNWEIGHTED,
                                           s.num_neighbors(), s.ranks.data(), MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g));
    graph_ = Comm::adopt(g);
    // MPI forbids null buffer arguments in some implementations' checks: use a dummy.
    if (scounts_.empty()) scounts_.push_back(0), sdispls_.push_back(0);
    if (rcounts_.empty()) rcounts_.push_back(0), rdispls_.push_back(0);
#if MPI_VERSION >= 4
    if (persistent_)
      SPC_MPI(MPI_Neighbor_alltoallv_init(send_buf(), scounts_.data(), sdispls_.data(), MPI_BYTE, recv_buf(),
                                          rcounts_.data(), rdispls_.data(), MPI_BYTE, graph_.get(), MPI_INFO_NULL,
                                          &req_));
#endif
  }
  ~NeighborPlan() override {
    finish_if_active();
    if (persistent_ && req_ != MPI_REQUEST_NULL && !mpi_finalized()) MPI_Request_free(&req_);
  }

 protected:
  void do_start() override {
    if (persistent_) {
      SPC_MPI(MPI_Start(&req_));
      return;
    }
    SPC_MPI(MPI_Ineighbor_alltoallv(send_buf(), scounts_.data(), sdispls_.data(), MPI_BYTE, recv_buf(),
                                    rcounts_.data(), rdispls_.data(), MPI_BYTE, graph_.get(), &req_));
  }
  bool supports_test() const override { return true; }
  bool do_start_direct(const char* send, char* recv) override {
    if (persistent_) return false;  // bound to the plan's buffers at setup
    SPC_MPI(MPI_Ineighbor_alltoallv(send ? send : send_buf(), scounts_.data(), sdispls_.data(), MPI_BYTE,
                                    recv ? recv : recv_buf(), rcounts_.data(), rdispls_.data(), MPI_BYTE,
                                    graph_.get(), &req_));
    return true;
  }

 private:
  bool persistent_;
  Comm graph_;
  std::vector<int> scounts_, sdispls_, rcounts_, rdispls_;
};

}  // namespace

namespace detail {
void register_neighbor() {
#ifdef SPARSECOMM_SMPI
  // SimGrid SMPI 3.32 aborts on MPI's topology and neighborhood calls: not registered.
  return;
#endif
  register_backend("neighbor", "MPI's neighborhood collective (Dist_graph_create_adjacent + Ineighbor_alltoallv)",
                   plan_factory<NeighborPlan>(false),
                   [] {
                     BackendHooks h{virt::direct_halo_counts, {}, 1};
                     h.counts_by_region = true;
                     return h;
                   }());
#if MPI_VERSION >= 4
  register_backend("neighbor_persistent", "MPI-4 persistent neighborhood collective (Neighbor_alltoallv_init)",
                   plan_factory<NeighborPlan>(true),
                   [] {
                     BackendHooks h{virt::direct_halo_counts, {}, 6};
                     h.counts_by_region = true;
                     return h;
                   }());
#endif
}
}  // namespace detail

}  // namespace sparsecomm
