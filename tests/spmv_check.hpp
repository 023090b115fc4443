#pragma once
// Checks of distributed products against the serial reference (Eigen), shared by the plan
// tests on one machine (test_plan.cpp) and across the emulated cluster (cluster/).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/reference.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/kernels/dist_spmv.hpp"
#include "test_util.hpp"

namespace sparsecomm::test {

/// Entry `gid` of input vector `k` in execution `round`: distinct per entry, vector and round,
/// so a value delivered to the wrong place, column or execution changes the product.
inline double xval(int64_t gid, int k, int round) {
  return std::sin(0.37 * static_cast<double>(gid) + 1.3 * k + 0.11 * round) + 0.01 * k;
}

inline void expect_close(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_TRUE(close_values(got, want, 1e-11)) << what;
}

/// y = A^T x through `reverse_plan` (a width-1 plan on the reverse of A's pattern) equals the
/// reference product with `reft` (the gathered A, transposed), on this rank's columns.
inline void expect_transpose_product(const DistCsr<double>& a, const reference::SpMat& reft, Plan& reverse_plan,
                                     const std::string& what) {
  std::vector<double> x(static_cast<size_t>(a.local_rows())), y(static_cast<size_t>(a.local_cols()));
  for (int32_t i = 0; i < a.local_rows(); ++i) x[i] = xval(a.row_begin() + i, 0, 7);
  spmv_transpose(a, reverse_plan, x.data(), y.data());
  std::vector<double> xg(static_cast<size_t>(a.global_rows()));
  for (int64_t g = 0; g < a.global_rows(); ++g) xg[g] = xval(g, 0, 7);
  const auto yg = reference::spmv(reft, xg);
  expect_close(y, std::vector<double>(yg.begin() + a.col_begin(), yg.begin() + a.col_begin() + a.local_cols()),
               what + " transpose");
}

}  // namespace sparsecomm::test
