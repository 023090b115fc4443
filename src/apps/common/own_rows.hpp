#pragma once
// The oracle that needs no exchange and no gathered copy: with x given as a closed form of
// the global column id, each rank computes its own rows of y = A x from its own entries
// (sparsecomm spmv --reference rows, sparsecomm compare; thousands of simulated ranks).
#include <vector>

#include "sparsecomm/matrix/dist_csr.hpp"

namespace sparsecomm::apps {

/// My rows of y = A x, x_g = x_of(g). Local.
template <class X>
std::vector<double> own_rows_product(const DistCsr<double>& a, X&& x_of) {
  std::vector<double> y(static_cast<size_t>(a.local_rows()), 0.0);
  for (const auto& e : a.local_triplets()) y[e.row - a.row_begin()] += e.val * x_of(e.col);
  return y;
}

}  // namespace sparsecomm::apps
