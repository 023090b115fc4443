// One MPI-aware GoogleTest main for every test executable.
// - Rank 0 prints the usual report; other ranks print only their failures, prefixed.
// - After every test the ranks agree on its outcome, so a failure on rank 3 is named in
//   rank 0's report too.
// - The exit code is non-zero on every rank if any rank failed any test, and when the
//   filter selected no test at all: a registration whose filter names a suite that was
//   renamed would otherwise pass having checked nothing.
// - The library's environment variables are read once at the start, as the programs read
//   them (a test that changes one reads them again: test::set_env).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <string>

#include "sparsecomm/interop/environment.hpp"

namespace {

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?",
                   r.line_number(), r.summary());
  }

 private:
  int rank_;
};

class AgreeOnOutcome : public ::testing::EmptyTestEventListener {
 public:
  AgreeOnOutcome(int rank, int size) : rank_(rank), size_(size) {}
  void OnTestEnd(const ::testing::TestInfo& info) override {
    int failed = info.result()->Failed() ? 1 : 0, nfailed = 0;
    MPI_Allreduce(&failed, &nfailed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (nfailed > 0 && rank_ == 0)
      std::printf("[  RANKS   ] %s.%s failed on %d of %d ranks\n", info.test_suite_name(), info.name(), nfailed,
                  size_);
  }

 private:
  int rank_, size_;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  sparsecomm::apply_environment();
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ::testing::InitGoogleTest(&argc, argv);
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (rank != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  listeners.Append(new AgreeOnOutcome(rank, size));
  int local = RUN_ALL_TESTS();
  if (::testing::UnitTest::GetInstance()->test_to_run_count() == 0) {
    if (rank == 0) std::fprintf(stderr, "no test matches the filter '%s'\n", ::testing::GTEST_FLAG(filter).c_str());
    local = 1;
  }
  int global = 0;
  MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return global;
}
