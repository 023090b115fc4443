#pragma once
// The fuzz targets' input as a stream of small arguments (zeros once it is used up), shared
// by the targets that read arguments rather than text (fuzz_capi, fuzz_pmpi, fuzz_hypre_pkg).
#include <cstddef>
#include <cstdint>

namespace sparsecomm::fuzz {

struct Bytes {
  const uint8_t* p;
  size_t n;
  uint8_t byte() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  int range(int lo, int hi) { return lo + byte() % (hi - lo + 1); }  // [lo, hi]
};

}  // namespace sparsecomm::fuzz
