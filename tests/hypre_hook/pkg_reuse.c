/* A Hypre program (no sparsecomm in it): y = A x and y = A^T x for a matrix A1; its comm
 * package is then freed the way some Hypre code paths do, by hand, without
 * hypre_MatvecCommPkgDestroy (so the hook's cache keeps an entry for that address), and the
 * products run for a matrix A2 of another structure whose package malloc places at the
 * same address. Under the hook A2's products must use plans built for A2's package: they
 * are checked against the formula, and the addresses are printed (the test requires them
 * equal, else it proves nothing). A1 then gets a new package and is checked again.
 *
 *   pkg_reuse            prints "reuse: ..." lines; exit 1 on a wrong product */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "HYPRE.h"
#include "HYPRE_IJ_mv.h"
#include "_hypre_parcsr_mv.h"

/* Row i of the banded matrix of bandwidth w: a_ij = 1 + (i + 2 j) % 5 for |i - j| <= w. */
static double a(HYPRE_BigInt i, HYPRE_BigInt j) { return 1.0 + (double)((i + 2 * j) % 5); }

typedef struct {
  HYPRE_BigInt n, lo, hi;
  int w;
  HYPRE_IJMatrix Aij;
  HYPRE_IJVector xij, yij;
  HYPRE_ParCSRMatrix A;
  HYPRE_ParVector x, y;
} Problem;

static void build(Problem *p, HYPRE_BigInt n, int w) {
  int rank, nprocs;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  p->n = n, p->w = w, p->lo = n * rank / nprocs, p->hi = n * (rank + 1) / nprocs;
  HYPRE_IJMatrixCreate(MPI_COMM_WORLD, p->lo, p->hi - 1, p->lo, p->hi - 1, &p->Aij);
  HYPRE_IJMatrixSetObjectType(p->Aij, HYPRE_PARCSR);
  HYPRE_IJMatrixInitialize(p->Aij);
  for (HYPRE_BigInt i = p->lo; i < p->hi; i++)
    for (HYPRE_BigInt j = i - w; j <= i + w; j++) {
      HYPRE_Int one = 1;
      HYPRE_BigInt jj = (j % n + n) % n; /* periodic: every rank has ghosts on both sides */
      double v = a(i, jj);
      HYPRE_IJMatrixAddToValues(p->Aij, 1, &one, &i, &jj, &v);
    }
  HYPRE_IJMatrixAssemble(p->Aij);
  HYPRE_IJMatrixGetObject(p->Aij, (void **)&p->A);
  HYPRE_IJVectorCreate(MPI_COMM_WORLD, p->lo, p->hi - 1, &p->xij);
  HYPRE_IJVectorSetObjectType(p->xij, HYPRE_PARCSR);
  HYPRE_IJVectorInitialize(p->xij);
  HYPRE_IJVectorCreate(MPI_COMM_WORLD, p->lo, p->hi - 1, &p->yij);
  HYPRE_IJVectorSetObjectType(p->yij, HYPRE_PARCSR);
  HYPRE_IJVectorInitialize(p->yij);
  for (HYPRE_BigInt i = p->lo; i < p->hi; i++) {
    double v = (double)(i + 1), z = 0;
    HYPRE_IJVectorSetValues(p->xij, 1, &i, &v);
    HYPRE_IJVectorSetValues(p->yij, 1, &i, &z);
  }
  HYPRE_IJVectorAssemble(p->xij);
  HYPRE_IJVectorAssemble(p->yij);
  HYPRE_IJVectorGetObject(p->xij, (void **)&p->x);
  HYPRE_IJVectorGetObject(p->yij, (void **)&p->y);
}

/* y = A x and y = A^T x against the formula: the number of wrong values over all ranks. */
static int check(Problem *p) {
  int bad = 0, allbad = 0;
  for (int t = 0; t < 2; t++) {
    if (t == 0) HYPRE_ParCSRMatrixMatvec(1.0, p->A, p->x, 0.0, p->y);
    else HYPRE_ParCSRMatrixMatvecT(1.0, p->A, p->x, 0.0, p->y);
    for (HYPRE_BigInt i = p->lo; i < p->hi; i++) {
      double got, want = 0;
      HYPRE_IJVectorGetValues(p->yij, 1, &i, &got);
      for (HYPRE_BigInt j = i - p->w; j <= i + p->w; j++) {
        HYPRE_BigInt jj = (j % p->n + p->n) % p->n;
        want += (t == 0 ? a(i, jj) : a(jj, i)) * (double)(jj + 1);
      }
      bad += got != want;
    }
  }
  MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return allbad;
}

int main(int argc, char **argv) {
  int rank, nprocs, bad1, bad2;
  void *p1, *p2;
  Problem A1, A2;
  MPI_Init(&argc, &argv);
  HYPRE_Init();
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  build(&A1, 40 * nprocs, 1);
  build(&A2, 30 * nprocs + 7, 3);
  hypre_ParCSRMatrixCreateAssumedPartition(A2.A); /* now, so that nothing is allocated between */
  hypre_ParCSRMatrixOwnsAssumedPartition(A2.A) = 1;
  bad1 = check(&A1); /* creates A1's package */
  p1 = hypre_ParCSRMatrixCommPkg(A1.A);
  /* Free it by hand (no destroy call the hook could see), then create A2's: malloc hands
     the same block back. */
  void *hold[64];
  {
    hypre_ParCSRCommPkg *pk = hypre_ParCSRMatrixCommPkg(A1.A);
    /* Empty malloc's caches of this block size first (the hook's own frees fill them), so
       that the next block of this size is the one freed last: pk. */
    for (int i = 0; i < 64; i++) hold[i] = malloc(sizeof(hypre_ParCSRCommPkg));
    hypre_TFree(hypre_ParCSRCommPkgSendProcs(pk), HYPRE_MEMORY_HOST);
    hypre_TFree(hypre_ParCSRCommPkgSendMapElmts(pk), HYPRE_MEMORY_HOST);
    hypre_TFree(hypre_ParCSRCommPkgSendMapStarts(pk), HYPRE_MEMORY_HOST);
    hypre_TFree(hypre_ParCSRCommPkgRecvProcs(pk), HYPRE_MEMORY_HOST);
    hypre_TFree(hypre_ParCSRCommPkgRecvVecStarts(pk), HYPRE_MEMORY_HOST);
    hypre_TFree(pk, HYPRE_MEMORY_HOST);
    hypre_ParCSRMatrixCommPkg(A1.A) = NULL;
  }
  bad2 = check(&A2); /* creates A2's package */
  p2 = hypre_ParCSRMatrixCommPkg(A2.A);
  for (int i = 0; i < 64; i++) free(hold[i]);
  if (rank == 0)
    printf("reuse: first matrix %d wrong values, second %d; packages at %p and %p (%s address)\n", bad1, bad2, p1,
           p2, p1 == p2 ? "same" : "different");
  bad1 += check(&A1); /* A1 again: a new package, products still right */
  HYPRE_IJMatrixDestroy(A1.Aij);
  HYPRE_IJMatrixDestroy(A2.Aij);
  HYPRE_IJVectorDestroy(A1.xij), HYPRE_IJVectorDestroy(A1.yij), HYPRE_IJVectorDestroy(A2.xij), HYPRE_IJVectorDestroy(A2.yij);
  HYPRE_Finalize();
  MPI_Finalize();
  return bad1 || bad2;
}
