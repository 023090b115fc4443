#pragma once
// sparsecomm as PETSc's VecScatter replacement in MatMult. For a MATMPIAIJ matrix:
//
//   MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY);
//   PetscCall(sparsecomm::petsc::attach(A));   // options: -sparsecomm_backend aggregated_dedup
//   ... KSPSolve / MatMult / MatMultAdd / MatMultTranspose as before ...
//   PetscCall(sparsecomm::petsc::detach(A));   // optional: back to PETSc's own operations
//
// attach() takes PETSc's diagonal block, off-diagonal block and sorted ghost columns
// (MatMPIAIJGetSeqAIJ), builds the Pattern through an SDDE strategy and a Plan, and installs
// MatMult, MatMultAdd, MatMultTranspose and MatMultTransposeAdd with overlap (start, diagonal
// block, wait, off-diagonal block). Options (with the matrix's options prefix):
//   -sparsecomm_backend NAME   halo backend (p2p, neighbor, aggregated, aggregated_dedup, aggregated_2step, combined)
//   -sparsecomm_sdde NAME      SDDE strategy for the pattern (personalized, nbx, rma, locality_*)
//   -sparsecomm_regions SPEC   locality regions (node, ppn:k, ...)
//   -sparsecomm_view           print the choice and the per-rank message counts at attach
//   -sparsecomm_persistent B   persistent requests (MPI_Startall) instead of Isend/Irecv per
//                              product (PlanOptions::persistent_requests; default false)
//   -sparsecomm_KEY VALUE      an option the chosen backend declares (BackendHooks::options:
//                              -sparsecomm_k 4 for combined, -sparsecomm_model FILE for auto)
// A bad name is a PETSc error on every rank, listing the valid names.
//
// Assembly: when the nonzero structure changes (MatGetNonzeroState), the next product
// rebuilds the pattern and plan (collectively, inside that product); value-only changes
// need nothing. attach() on an attached matrix rebuilds; detach() restores PETSc's ops.
#include <petscmat.h>

#include "sparsecomm/matrix/dist_csr.hpp"

namespace sparsecomm::petsc {

/// Collective. A MATMPIAIJ copy of `a` on a's communicator with the same row and column
/// partitions (preallocated exactly), assembled.
PetscErrorCode create_mpiaij(const DistCsr<double>& a, Mat* A);

/// Collective on A. Errors: PETSc error codes (no exception crosses this boundary). A
/// matrix that is not MATMPIAIJ (e.g. MATSEQAIJ on one rank) keeps PETSc's own operations:
/// attach steps aside (a -info message says so) and attached() reports false.
PetscErrorCode attach(Mat A);
/// Collective on A. Restores PETSc's own MatMult & co. No-op when not attached.
PetscErrorCode detach(Mat A);
/// Whether attach() is in effect; the backend name in use ("" when not attached).
PetscErrorCode attached(Mat A, PetscBool* flag, const char** backend);

}  // namespace sparsecomm::petsc
