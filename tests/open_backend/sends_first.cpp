#include "open_backend/sends_first.hpp"

#include <memory>
#include <vector>

#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/comm/virt/plan_stats.hpp"
#include "sparsecomm/core/error.hpp"

namespace sparsecomm::test {
namespace {

// One message per neighbor, like p2p, but every send is posted before any receive: correct
// for any MPI (nonblocking sends do not wait for their receives), and a different posting
// order than the built-in's. A backend only moves bytes: send_buf() in pattern send order to
// recv_buf() in pattern receive order (comm/plan.hpp).
class SendsFirstPlan final : public Plan {
 public:
  SendsFirstPlan(const Pattern& p, const Locality& loc, MPI_Comm comm, const PlanOptions& opt)
      : Plan(kSendsFirst, p, loc, comm, opt),
        tag_(static_cast<int>(opt.backend.get_int("tag", kDefaultTag))),
        reqs_(static_cast<size_t>(p.send().num_neighbors() + p.recv().num_neighbors()),
                                                  MPI_REQUEST_NULL) {
    // What one execution sends and receives, declared once: the same as p2p's, so the
    // counts hook below is p2p's too (test_open_backend checks that they agree).
    for (int i = 0; i < p.send().num_neighbors(); ++i) count_send("direct", p.send().ranks[i], p.send().count(i) * elem_bytes());
    for (int i = 0; i < p.recv().num_neighbors(); ++i) count_recv("direct", p.recv().ranks[i], p.recv().count(i) * elem_bytes());
  }
  ~SendsFirstPlan() override { finish_if_active(); }
  static constexpr int kDefaultTag = 4711;
  int tag() const { return tag_; }

 protected:
  void do_start() override {
    const auto& s = pattern().send();
    const auto& r = pattern().recv();
    const int64_t eb = elem_bytes();
    size_t k = 0;
    for (int i = 0; i < s.num_neighbors(); ++i, ++k)
      SPC_MPI(MPI_Isend(send_buf() + s.offsets[i] * eb, static_cast<int>(s.count(i) * eb), MPI_BYTE, s.ranks[i], tag_,
                        comm(), &reqs_[k]));
    for (int i = 0; i < r.num_neighbors(); ++i, ++k)
      SPC_MPI(MPI_Irecv(recv_buf() + r.offsets[i] * eb, static_cast<int>(r.count(i) * eb), MPI_BYTE, r.ranks[i], tag_,
                        comm(), &reqs_[k]));
  }
  void do_wait() override {
    SPC_MPI(MPI_Waitall(static_cast<int>(reqs_.size()), reqs_.data(), MPI_STATUSES_IGNORE));
  }

 private:
  int tag_;
  std::vector<MPI_Request> reqs_;
};

}  // namespace

void register_sends_first() {
  BackendHooks hooks;
  hooks.counts = virt::direct_halo_counts;  // one message per neighbor, as p2p
  hooks.setup_rank = 0;                     // as simple to set up as p2p (auto: ties go by name)
  hooks.options = {{"tag", OptionSpec::Kind::integer, std::to_string(SendsFirstPlan::kDefaultTag),
                    "message tag of the exchange", 0, 32767}};  // 32767: the smallest MPI_TAG_UB MPI allows
  register_backend(
      kSendsFirst, "TEST: p2p with the sends posted before the receives (defined in tests/open_backend)",
      plan_factory<SendsFirstPlan>(), std::move(hooks));
}

int sends_first_tag(const Plan& plan) {
  const auto* s = dynamic_cast<const SendsFirstPlan*>(&plan);
  return s ? s->tag() : -1;
}

}  // namespace sparsecomm::test

/// For the C API test (tests/capi/test_capi_neighbor.c built with SPC_TEST_OPEN_BACKEND).
extern "C" void spc_test_register_open_backend(void) { sparsecomm::test::register_sends_first(); }
