/* A PETSc program that knows nothing of sparsecomm (built with PETSc's flags only):
 * CG + Jacobi on a DMDA 2D Poisson problem. Switched to sparsecomm by options alone:
 *
 *   mpirun -np 4 ./poisson -dll_append $PREFIX/lib/libsparsecomm_petsc.so -sf_type sparsecomm
 *
 * Every scatter (the DM's ghost updates, MatMult's) then runs through sparsecomm; the
 * iteration count and the solution are PETSc's own up to rounding. */
#include <petscdmda.h>
#include <petscksp.h>
#include <petscsf.h>

int main(int argc, char **argv)
{
  DM          da;
  Mat         A;
  Vec         x, b;
  KSP         ksp;
  PetscInt    i, j, xs, ys, xm, ym, mx, my, its;
  PetscReal   norm;
  MatStencil  row, col[5];
  PetscScalar v[5];
  PetscSFType type = "basic";
  VecScatter  sct;

  PetscCall(PetscInitialize(&argc, &argv, NULL, "DMDA Poisson with CG\n"));
  PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, 64, 64, PETSC_DECIDE, PETSC_DECIDE, 1, 1, NULL, NULL, &da));
  PetscCall(DMSetFromOptions(da));
  PetscCall(DMSetUp(da));
  PetscCall(DMCreateMatrix(da, &A));
  PetscCall(DMDAGetInfo(da, NULL, &mx, &my, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
  PetscCall(DMDAGetCorners(da, &xs, &ys, NULL, &xm, &ym, NULL));
  for (j = ys; j < ys + ym; j++)
    for (i = xs; i < xs + xm; i++) {
      PetscInt n = 0;
      row.i = i, row.j = j;
      col[n] = row, v[n++] = 4.0;
      if (i > 0) col[n] = row, col[n].i = i - 1, v[n++] = -1.0;
      if (i < mx - 1) col[n] = row, col[n].i = i + 1, v[n++] = -1.0;
      if (j > 0) col[n] = row, col[n].j = j - 1, v[n++] = -1.0;
      if (j < my - 1) col[n] = row, col[n].j = j + 1, v[n++] = -1.0;
      PetscCall(MatSetValuesStencil(A, 1, &row, n, col, v, INSERT_VALUES));
    }
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscCall(DMCreateGlobalVector(da, &x));
  PetscCall(VecDuplicate(x, &b));
  PetscCall(VecSet(b, 1.0));
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPCG));
  PetscCall(KSPSetTolerances(ksp, 1e-10, PETSC_DEFAULT, PETSC_DEFAULT, 2000));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(KSPGetIterationNumber(ksp, &its));
  PetscCall(VecNorm(x, NORM_2, &norm));
  /* Which star forest carried the ghost updates (the global-to-local scatter of the DM). */
  PetscCall(DMDAGetScatter(da, &sct, NULL));
  if (sct) PetscCall(PetscSFGetType(sct, &type));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "poisson: %" PetscInt_FMT " CG iterations, |x| = %.10e, scatters of type %s\n", its, (double)norm, type));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  PetscCall(DMDestroy(&da));
  PetscCall(PetscFinalize());
  return 0;
}
