// The comparison every oracle uses (core/compare.hpp) and the broken backend that proves
// the oracles reject a wrong result: unit tests of the NaN/inf rules, then the broken
// backend through a DistSpmv and a GatherPlan, against the same checks the suites use.
// (The programs and the other suites are run with it by oracles/CMakeLists.txt.)
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "sparsecomm/kernels/halo_pattern.hpp"
#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "core/compare.hpp"
#include "sparsecomm/kernels/dist_spmv.hpp"
#include "sparsecomm/matrix/generators.hpp"
#include "kernels/reference.hpp"
#include "oracles/broken_backend.hpp"
#include "test_util.hpp"

using namespace sparsecomm;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Comparison one(double got, double want) {
  Comparison c;
  c.add(got, want, 0);
  return c;
}

TEST(Compare, FiniteValuesWithinTolerance) {
  EXPECT_TRUE(one(1.0, 1.0).ok(0.0));
  EXPECT_TRUE(one(1.0 + 1e-15, 1.0).ok(1e-12));
  EXPECT_FALSE(one(1.1, 1.0).ok(1e-12));
  EXPECT_TRUE(one(0.0, 0.0).ok(0.0));  // an all-zero reference: exact zeros pass
  EXPECT_FALSE(one(1e-300, 0.0).ok(1e-12));
}

TEST(Compare, NonFiniteNeverPassesAgainstANumber) {
  for (double bad : {kNaN, kInf, -kInf}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(one(bad, 1.0).ok(1e300)) << "whatever the tolerance";
    EXPECT_FALSE(one(1.0, bad).ok(1e300));
    EXPECT_EQ(one(bad, 1.0).rel_err(), kInf);
    EXPECT_FALSE(std::isnan(one(bad, 1.0).rel_err()));
  }
  EXPECT_FALSE(one(kInf, -kInf).ok(1.0));
  EXPECT_FALSE(one(kNaN, kInf).ok(1.0));
}

TEST(Compare, SameNonFiniteValuesMatch) {
  EXPECT_TRUE(one(kNaN, kNaN).ok(0.0));
  EXPECT_TRUE(one(kInf, kInf).ok(0.0));
  EXPECT_TRUE(one(-kInf, -kInf).ok(0.0));
}

TEST(Compare, OverflowingDifferenceFails) {
  EXPECT_FALSE(one(1e308, -1e308).ok(1.0));  // |a - b| = inf: an error, not a NaN
}

TEST(Compare, AllreduceCountsEveryRank) {
  // Rank size-1 holds the only mismatch: every rank sees it, with its index.
  Comparison c;
  c.add(2.0, 2.0, 0);
  if (test::rank() == test::size() - 1) c.add(kNaN, 3.0, 41);
  const Comparison all = c.allreduce(MPI_COMM_WORLD);
  EXPECT_EQ(all.compared, test::size() + 1);
  EXPECT_EQ(all.nonfinite_mismatches, 1);
  EXPECT_EQ(all.first_mismatch, 41);
  EXPECT_FALSE(all.ok(1e300));
  EXPECT_NE(all.describe().find("1 non-finite mismatch"), std::string::npos) << all.describe();
}

// y = A x through a plan, checked as the suites and `sparsecomm spmv` check it.
Comparison spmv_check(const std::string& backend, std::vector<double>* y_out = nullptr) {
  auto a = gen::from_spec(MPI_COMM_WORLD, "rotate:12,10");
  const auto ref = reference::gather_eigen(a);
  std::vector<double> xg(static_cast<size_t>(a.global_cols()));
  for (size_t i = 0; i < xg.size(); ++i) xg[i] = std::sin(0.3 * static_cast<double>(i)) + 2.0;
  const auto yg = reference::spmv(ref, xg);
  Locality loc = Locality::parse(MPI_COMM_WORLD, "ppn:2");
  Sdde sdde(MPI_COMM_WORLD, loc);
  DistSpmv spmv(a, make_plan(backend, pattern_from_matrix(a, sdde, "nbx"), loc, MPI_COMM_WORLD));
  std::vector<double> x(xg.begin() + a.col_begin(), xg.begin() + a.col_begin() + a.local_cols()), y(a.local_rows());
  spmv.apply(x.data(), y.data());
  std::vector<double> want(yg.begin() + a.row_begin(), yg.begin() + a.row_begin() + a.local_rows());
  if (y_out) *y_out = y;
  Comparison c = compare(y.data(), want.data(), a.local_rows());
  // The suites' helper (test_util's close_values) must say the same on this rank.
  EXPECT_EQ(static_cast<bool>(test::close_values(y, want, 1e-11)),
            c.nonfinite_mismatches == 0 && c.max_err <= 1e-11 * std::max(1.0, c.scale));
  return c.allreduce(MPI_COMM_WORLD);
}

TEST(BrokenBackend, SpmvOracleRejectsIt) {
  test::register_broken_backends();
  if (test::size() == 1) GTEST_SKIP() << "one rank has no ghosts to break";
  const Comparison good = spmv_check("p2p");
  EXPECT_TRUE(good.ok(1e-12)) << good.describe();  // the control: a correct backend passes
  const Comparison bad = spmv_check(test::kBrokenBackend);
  EXPECT_FALSE(bad.ok(1e-12));
  EXPECT_GE(bad.nonfinite_mismatches, 1) << bad.describe();  // every row that reads the poisoned ghost
}

TEST(BrokenBackend, GatherOracleRejectsIt) {
  test::register_broken_backends();
  if (test::size() == 1) GTEST_SKIP() << "one rank has no neighbors";
  Topology t = Topology::moore(MPI_COMM_WORLD, 1, 1);
  Locality loc = Locality::parse(MPI_COMM_WORLD, "ppn:2");
  auto run = [&](const std::string& backend) {
    const int64_t count = 3;
    auto plan = make_gather_plan(backend, t, loc, MPI_COMM_WORLD, count);
    std::vector<double> mine(count), got(static_cast<size_t>(plan->recv_total())), want(got.size());
    for (int64_t j = 0; j < count; ++j) mine[j] = 100.0 * test::rank() + static_cast<double>(j);
    for (size_t s = 0; s < t.sources.size(); ++s)
      for (int64_t j = 0; j < plan->recv_counts()[s]; ++j)
        want[static_cast<size_t>(plan->recv_offsets()[s] + j)] = 100.0 * t.sources[s] + static_cast<double>(j);
    plan->exchange(mine.data(), got.data());
    return compare(got.data(), want.data(), static_cast<int64_t>(got.size())).allreduce(MPI_COMM_WORLD);
  };
  EXPECT_TRUE(run("p2p").ok(0.0));
  const Comparison bad = run(test::kBrokenBackend);
  EXPECT_FALSE(bad.ok(0.0));
  EXPECT_EQ(bad.nonfinite_mismatches, 1) << bad.describe();
}

}  // namespace
