#pragma once
// What both PETSc entry points (the Mat adapter, the PetscSF type) do at the boundary: a
// C++ exception becomes a PETSc error; none crosses into PETSc. The library agrees on
// errors across ranks, so every rank returns the same error, and each raises it on
// PETSC_COMM_SELF: PETSc's traceback handler prints an error raised on a larger
// communicator on that communicator's rank 0 only and makes the other ranks sleep and exit,
// so the caller of those ranks would never see the error code (and an error raised on one
// rank other than 0 would end it silently).
#include <petscsys.h>

#include <exception>

namespace sparsecomm::petsc {

template <class F>
PetscErrorCode guard(const char* func, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    return PetscError(PETSC_COMM_SELF, __LINE__, func, __FILE__, PETSC_ERR_LIB, PETSC_ERROR_INITIAL, "sparsecomm: %s", e.what());
  }
}

}  // namespace sparsecomm::petsc
