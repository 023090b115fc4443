#pragma once
// Serial reference kernels on a gathered matrix (Eigen). For tests and verification only.
#include <Eigen/Sparse>

#include <vector>

#include "sparsecomm/matrix/dist_csr.hpp"

namespace sparsecomm::reference {

using SpMat = Eigen::SparseMatrix<double, Eigen::RowMajor, int64_t>;

inline SpMat to_eigen(const std::vector<Triplet<double>>& entries, int64_t rows, int64_t cols) {
  std::vector<Eigen::Triplet<double, int64_t>> t;
  t.reserve(entries.size());
  for (const auto& e : entries) t.emplace_back(e.row, e.col, e.val);
  SpMat m(rows, cols);
  m.setFromTriplets(t.begin(), t.end());
  return m;
}

/// y = A x on the whole (gathered) matrix.
inline std::vector<double> spmv(const SpMat& a, const std::vector<double>& x) {
  Eigen::Map<const Eigen::VectorXd> xv(x.data(), static_cast<Eigen::Index>(x.size()));
  Eigen::VectorXd y = a * xv;
  return std::vector<double>(y.data(), y.data() + y.size());
}

/// Collective: gathers `a` on every rank as an Eigen matrix.
inline SpMat gather_eigen(const DistCsr<double>& a) {
  return to_eigen(a.gather_all(), a.global_rows(), a.global_cols());
}

}  // namespace sparsecomm::reference
