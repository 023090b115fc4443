#pragma once
// One matrix entry in coordinate form: the value type that the reader produces, DistCsr
// assembles from, and plan statistics count halos of. A plain value with no dependence on
// how a matrix is stored, so comm/ and matrix/ can both use it.
#include <cstdint>

namespace sparsecomm {

/// One nonzero with global row and column ids.
template <class V>
struct Triplet {
  int64_t row;
  int64_t col;
  V val;
};

}  // namespace sparsecomm
