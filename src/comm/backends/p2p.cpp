// p2p: persistent point-to-point requests, what Hypre's comm package and PETSc's basic
// star forest do by hand: MPI_Send_init/MPI_Recv_init once per neighbor at setup, then
// MPI_Startall + MPI_Waitall per execution.
#include "comm/plan.hpp"

namespace sparsecomm {
namespace {

class P2pPlan final : public Plan {
 public:
  P2pPlan(const Pattern& p, const Locality& loc, MPI_Comm comm, const PlanOptions& opt)
      : Plan("p2p", p, loc, comm, opt) {
    const auto& s = p.send();
    const auto& r = p.recv();
    const int64_t eb = elem_bytes();
    reqs_.assign(static_cast<size_t>(s.num_neighbors() + r.num_neighbors()), MPI_REQUEST_NULL);
    try {
      // Receives first in the array so that MPI_Startall posts them before the sends.
      for (int i = 0; i < r.num_neighbors(); ++i) {
        SPC_MPI(MPI_Recv_init(recv_buf() + r.offsets[i] * eb, static_cast<int>(r.count(i) * eb), MPI_BYTE, r.ranks[i],
                              kTag, this->comm(), &reqs_[i]));
        count_recv("direct", r.ranks[i], r.count(i) * eb);
      }
      for (int i = 0; i < s.num_neighbors(); ++i) {
        SPC_MPI(MPI_Send_init(send_buf() + s.offsets[i] * eb, static_cast<int>(s.count(i) * eb), MPI_BYTE, s.ranks[i],
                              kTag, this->comm(), &reqs_[r.num_neighbors() + i]));
        count_send("direct", s.ranks[i], s.count(i) * eb);
      }
    } catch (...) {
      free_requests();
      throw;
    }
  }
  ~P2pPlan() override {
    finish_if_active();
    free_requests();
  }

 protected:
  void do_start() override {
    start_requests(static_cast<int>(reqs_.size()), reqs_.data());
  }
  void do_wait() override {
    if (!reqs_.empty()) SPC_MPI(MPI_Waitall(static_cast<int>(reqs_.size()), reqs_.data(), MPI_STATUSES_IGNORE));
  }

 private:
  void free_requests() noexcept {
    for (auto& q : reqs_)
      if (q != MPI_REQUEST_NULL) MPI_Request_free(&q);
  }
  static constexpr int kTag = 11;
  std::vector<MPI_Request> reqs_;
};

}  // namespace

namespace detail {
void register_p2p() {
  register_backend("p2p", "persistent point-to-point (MPI_Send_init/Recv_init, Startall/Waitall)",
                   [](const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o) {
                     return std::unique_ptr<Plan>(new P2pPlan(p, l, c, o));
                   });
}
}  // namespace detail

}  // namespace sparsecomm
