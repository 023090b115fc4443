#include "oracles/broken_backend.hpp"

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>

#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "sparsecomm/comm/plan/plan.hpp"

namespace sparsecomm::test {
namespace {

// Writes a NaN bit pattern of `bytes` bytes at p.
void poison(char* p, int64_t bytes) {
  if (bytes == 8) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::memcpy(p, &nan, 8);
  } else if (bytes == 4) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(p, &nan, 4);
  } else {
    std::memset(p, 0xff, static_cast<size_t>(bytes));
  }
}

// Collective: true on the lowest rank of `comm` with has_recv, false elsewhere.
bool am_victim(MPI_Comm comm, bool has_recv) {
  const int me = comm_rank(comm);
  int mine = has_recv ? me : std::numeric_limits<int>::max(), lowest = 0;
  SPC_MPI(MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, comm));
  return lowest == me;
}

class BrokenPlan final : public Plan {
 public:
  BrokenPlan(const Pattern& pat, const Locality& loc, MPI_Comm comm, const PlanOptions& opt)
      : Plan(kBrokenBackend, pat, loc, comm, opt) {
    // The inner p2p plan moves bytes: one value of `width * value_bytes` chars per index.
    PlanOptions bytes = opt;
    bytes.width = opt.width * opt.value_bytes;
    bytes.value_bytes = 1;
    inner_ = make_plan("p2p", pat, loc, comm, bytes);
    victim_ = am_victim(comm, pat.recv().size() > 0);
  }
  ~BrokenPlan() override { finish_if_active(); }

 protected:
  void do_start() override {
    const int64_t n = pattern().send().size() * elem_bytes();
    if (n > 0) std::memcpy(inner_->send_area(), send_buf(), static_cast<size_t>(n));
    inner_->start();
  }
  void do_wait() override {
    const auto* got = static_cast<const char*>(inner_->wait());
    const int64_t n = pattern().recv().size() * elem_bytes();
    if (n > 0) std::memcpy(recv_buf(), got, static_cast<size_t>(n));
    if (victim_) poison(recv_buf(), options().value_bytes);
  }

 private:
  std::unique_ptr<Plan> inner_;
  bool victim_ = false;
};

class BrokenGather final : public GatherPlan {
 public:
  BrokenGather(const Topology& topo, const Locality& loc, MPI_Comm comm, int64_t count, const GatherOptions& opt)
      : GatherPlan(kBrokenBackend, topo, loc, comm, count, opt) {
    GatherOptions bytes = opt;
    bytes.value_bytes = 1;
    inner_ = make_gather_plan("p2p", topo, loc, comm, count * opt.value_bytes, bytes);
    victim_ = am_victim(comm, recv_total() > 0);
  }
  ~BrokenGather() override { finish_if_active(); }

 protected:
  void do_start() override { inner_->start<char>(block_buf()); }
  void do_wait() override {
    inner_->wait<char>(recv_buf());
    if (victim_) poison(recv_buf(), value_bytes());
  }

 private:
  std::unique_ptr<GatherPlan> inner_;
  bool victim_ = false;
};

}  // namespace

void register_broken_backends() {
  register_backend(kBrokenBackend, "TEST ONLY: p2p that writes NaN into one received value",
                   [](const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o) -> std::unique_ptr<Plan> {
                     return std::make_unique<BrokenPlan>(p, l, c, o);
                   });
  register_gather_backend(kBrokenBackend, "TEST ONLY: p2p that writes NaN into one received value",
                          [](const Topology& t, const Locality& l, MPI_Comm c, int64_t n,
                             const GatherOptions& o) -> std::unique_ptr<GatherPlan> {
                            return std::make_unique<BrokenGather>(t, l, c, n, o);
                          });
}

}  // namespace sparsecomm::test

extern "C" void spc_test_register_broken_backends(void) { sparsecomm::test::register_broken_backends(); }
