// KSP (CG) on a 2D Laplacian assembled with PETSc's own calls, solved twice: with PETSc's
// MatMult, then with MatMult through sparsecomm (one call: sparsecomm::petsc::attach).
// Both solves must take the same iterations and agree to rounding.
//   mpirun -np 4 ./petsc_ksp [-sparsecomm_backend aggregated_dedup]
#include <petscksp.h>

#include <cmath>

#include <sparsecomm/interop/petsc/petsc_interop.hpp>

static PetscErrorCode solve(Mat A, Vec b, Vec x, PetscInt* its) {
  KSP ksp;
  PetscFunctionBeginUser;
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPCG));
  PetscCall(KSPSetTolerances(ksp, 1e-10, PETSC_DEFAULT, PETSC_DEFAULT, 2000));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(VecSet(x, 0.0));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(KSPGetIterationNumber(ksp, its));
  PetscCall(KSPDestroy(&ksp));
  PetscFunctionReturn(0);
}

int main(int argc, char** argv) {
  PetscCall(PetscInitialize(&argc, &argv, nullptr, "KSP with MatMult through sparsecomm\n"));
  const PetscInt nx = 40, ny = 40, n = nx * ny;
  Mat A;
  PetscCall(MatCreateAIJ(PETSC_COMM_WORLD, PETSC_DECIDE, PETSC_DECIDE, n, n, 5, nullptr, 4, nullptr, &A));
  PetscInt lo, hi;
  PetscCall(MatGetOwnershipRange(A, &lo, &hi));
  for (PetscInt g = lo; g < hi; ++g) {
    const PetscInt i = g % nx, j = g / nx;
    PetscCall(MatSetValue(A, g, g, 4.0, INSERT_VALUES));
    if (i > 0) PetscCall(MatSetValue(A, g, g - 1, -1.0, INSERT_VALUES));
    if (i + 1 < nx) PetscCall(MatSetValue(A, g, g + 1, -1.0, INSERT_VALUES));
    if (j > 0) PetscCall(MatSetValue(A, g, g - nx, -1.0, INSERT_VALUES));
    if (j + 1 < ny) PetscCall(MatSetValue(A, g, g + nx, -1.0, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  Vec x, b, x_petsc;
  PetscCall(MatCreateVecs(A, &x, &b));
  PetscCall(VecDuplicate(x, &x_petsc));
  PetscCall(VecSet(b, 1.0));
  PetscInt its_petsc = 0, its_sc = 0;
  PetscCall(solve(A, b, x_petsc, &its_petsc));
  PetscCall(sparsecomm::petsc::attach(A));  // the one line
  PetscCall(solve(A, b, x, &its_sc));
  PetscBool on;
  const char* backend;
  PetscCall(sparsecomm::petsc::attached(A, &on, &backend));
  PetscReal diff = 0, norm = 0;
  PetscCall(VecAXPY(x_petsc, -1.0, x));
  PetscCall(VecNorm(x_petsc, NORM_INFINITY, &diff));
  PetscCall(VecNorm(x, NORM_INFINITY, &norm));
  // attach steps aside on one rank (MATSEQAIJ: nothing to communicate). NaN never passes.
  PetscMPIInt size;
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  const bool ok = (on || size == 1) && its_sc == its_petsc && diff <= 1e-8 * norm;
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "petsc_ksp: CG %d iterations with PETSc's MatMult, %d with sparsecomm/%s; max diff %.2e: %s\n",
                        (int)its_petsc, (int)its_sc, on ? backend : "(PETSc: one rank)", (double)diff,
                        ok ? "verified" : "WRONG"));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&x_petsc));
  PetscCall(MatDestroy(&A));
  PetscCall(PetscFinalize());
  return ok ? 0 : 3;
}
