#pragma once
// main() of every benchmark program and of the `sparsecomm` CLI: MPI_Init, the environment
// read once (the library's variables as the defaults of every call), run, report a library
// error once (errors are agreed across ranks, so every rank gets here), finalize.
#include <mpi.h>

#include <exception>
#include <iostream>

#include "sparsecomm/interop/environment.hpp"

namespace sparsecomm::apps {

using AppFn = int (*)(int argc, char** argv);

inline int run_app(int argc, char** argv, AppFn fn, const char* name) {
  MPI_Init(&argc, &argv);
  apply_environment();
  int rc = 0, rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    rc = fn(argc, argv);
  } catch (const std::exception& e) {
    if (rank == 0) std::cerr << name << ": error: " << e.what() << "\n";
    rc = 2;
  }
  MPI_Finalize();
  return rc;
}

}  // namespace sparsecomm::apps
