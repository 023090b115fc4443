#pragma once
// What both PETSc entry points (the Mat adapter, the PetscSF type) do at the boundary: a
// C++ exception becomes a PETSc error; none crosses into PETSc. The library agrees on
// errors across ranks, so every rank returns the same error.
#include <petscsys.h>

#include <exception>

namespace sparsecomm::petsc {

template <class F>
PetscErrorCode guard(MPI_Comm comm, const char* func, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    return PetscError(comm, __LINE__, func, __FILE__, PETSC_ERR_LIB, PETSC_ERROR_INITIAL, "sparsecomm: %s", e.what());
  }
}

}  // namespace sparsecomm::petsc
