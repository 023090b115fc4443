#pragma once
// The fuzz targets' input as a stream of small arguments (zeros once it is used up), shared
// by the targets that read arguments rather than text (fuzz_capi, fuzz_pmpi, fuzz_hypre_pkg),
// and their MPI start.
#include <mpi.h>

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

/// LLVMFuzzerInitialize of the targets that feed MPI calls arguments on one rank: MPI started,
/// and errors on MPI_COMM_SELF and MPI_COMM_WORLD returned as codes (a bad argument is an
/// error code to check, not an abort of the fuzzer).
inline int init_mpi_returning_errors(int* argc, char*** argv) {
  MPI_Init(argc, argv);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return 0;
}

}  // namespace sparsecomm::fuzz
