// p2p: one message per neighbor, what Hypre's comm package and PETSc's basic star forest do
// by hand: receives posted first, then the sends, then one wait for all. The messages are
// fixed at setup and posted again at every execution (comm/messages.hpp: MPI_Irecv/Isend,
// or persistent requests with PlanOptions::persistent_requests).
#include "comm/virt/counting.hpp"
#include "sparsecomm/comm/messages.hpp"
#include "sparsecomm/comm/plan/plan.hpp"

namespace sparsecomm {
namespace {

class P2pPlan final : public Plan {
 public:
  P2pPlan(const Pattern& p, const Locality& loc, MPI_Comm comm, const PlanOptions& opt)
      : Plan("p2p", p, loc, comm, opt) {
    const auto& s = p.send();
    const auto& r = p.recv();
    const int64_t eb = elem_bytes();
    // Receives first, so that they are posted before the sends.
    for (int i = 0; i < r.num_neighbors(); ++i) {
      msgs_.add(false, recv_buf() + r.offsets[i] * eb, r.count(i) * eb, r.ranks[i], kTag);
      count_recv("direct", r.ranks[i], r.count(i) * eb);
    }
    for (int i = 0; i < s.num_neighbors(); ++i) {
      msgs_.add(true, send_buf() + s.offsets[i] * eb, s.count(i) * eb, s.ranks[i], kTag);
      count_send("direct", s.ranks[i], s.count(i) * eb);
    }
    msgs_.init(this->comm(), opt.persistent_requests);
  }
  ~P2pPlan() override { finish_if_active(); }

 protected:
  void do_start() override { msgs_.start(); }
  void do_wait() override { msgs_.wait(); }
  bool do_test() override { return msgs_.test(); }
  bool supports_test() const override { return true; }
  bool do_start_direct(const char* send, char* recv) override {
    return msgs_.start_relocated({send_buf(), send_bytes(), send}, {recv_buf(), recv_bytes(), recv});
  }

 private:
  static constexpr int kTag = 11;
  Messages msgs_;
};

}  // namespace

// Plan statistics (virt::halo_counts): one message per segment, what every backend with a
// direct schedule reports (neighbor too; an outside backend may register these counts).
namespace virt {
std::vector<RankCounts> direct_halo_counts(const HaloPattern& pat, const std::vector<int>& region,
                                           const PlanOptions& opt) {
  return direct_counts(pat, region, opt, false);
}
}  // namespace virt

namespace detail {
void register_p2p() {
  register_backend("p2p", "point-to-point, one message per neighbor (Irecv/Isend, or persistent requests)",
                   [](const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o) {
                     return std::unique_ptr<Plan>(new P2pPlan(p, l, c, o));
                   },
                   BackendHooks{virt::direct_halo_counts, {}, 0});
}
}  // namespace detail

}  // namespace sparsecomm
