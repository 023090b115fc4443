/* A Hypre program that knows nothing of sparsecomm: PCG + BoomerAMG on the rotated
 * anisotropic diffusion problem or on a SuiteSparse SPD matrix (Matrix Market), assembled
 * through Hypre's IJ interface with rows in contiguous blocks. With
 *
 *   mpirun -x LD_PRELOAD=$PREFIX/lib/libsparsecomm_hypre_hook.so -np 8 ./amg_solve -n 512
 *
 * every matvec, restriction and interpolation of every V-cycle exchanges through sparsecomm.
 *
 *   amg_solve [-n N] [-angle DEG] [-eps E] [-matrix FILE.mtx] [-solves K] [-tol T]
 *             [-threads single|multiple]
 *
 * -threads multiple initializes MPI with MPI_Init_thread(MPI_THREAD_MULTIPLE), as a
 * threaded application would (the solve itself stays on one thread).
 *
 * Prints per solve: iterations, final relative residual, setup and solve seconds (max over
 * ranks). Exit 1 if PCG did not converge. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "HYPRE.h"
#include "HYPRE_IJ_mv.h"
#include "HYPRE_parcsr_ls.h"

typedef struct {
  HYPRE_BigInt row, col;
  double v;
} Entry;

static int cmp_entry(const void *a, const void *b) {
  const Entry *x = a, *y = b;
  if (x->row != y->row) return x->row < y->row ? -1 : 1;
  return x->col < y->col ? -1 : x->col > y->col;
}

/* The rows [lo, hi) of a symmetric Matrix Market file (both triangles), sorted by row;
   the global size in *n. Every rank reads the file. */
static Entry *read_mtx(const char *path, HYPRE_BigInt lo_frac_rank, int rank, int nprocs, HYPRE_BigInt *n,
                       HYPRE_BigInt *lo, HYPRE_BigInt *hi, size_t *count) {
  FILE *f = fopen(path, "r");
  char line[1024];
  long long m, c, nnz;
  int symmetric;
  size_t cap = 0, k = 0;
  Entry *e = NULL;
  (void)lo_frac_rank;
  if (!f) {
    fprintf(stderr, "amg_solve: cannot open %s\n", path);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (!fgets(line, sizeof line, f) || strncmp(line, "%%MatrixMarket", 14) != 0) {
    fprintf(stderr, "amg_solve: %s is not a Matrix Market file\n", path);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  symmetric = strstr(line, "symmetric") != NULL;
  do {
    if (!fgets(line, sizeof line, f)) MPI_Abort(MPI_COMM_WORLD, 1);
  } while (line[0] == '%');
  if (sscanf(line, "%lld %lld %lld", &m, &c, &nnz) != 3 || m != c) {
    fprintf(stderr, "amg_solve: %s: not a square coordinate matrix\n", path);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  *n = m;
  *lo = m * rank / nprocs;
  *hi = m * (rank + 1) / nprocs;
  for (long long t = 0; t < nnz; t++) {
    long long i, j;
    double v = 1.0;
    if (!fgets(line, sizeof line, f) || sscanf(line, "%lld %lld %lf", &i, &j, &v) < 2) MPI_Abort(MPI_COMM_WORLD, 1);
    for (int s = 0; s < 1 + (symmetric && i != j); s++) {
      HYPRE_BigInt r = (s ? j : i) - 1, col = (s ? i : j) - 1;
      if (r < *lo || r >= *hi) continue;
      if (k == cap) {
        cap = cap ? 2 * cap : 1024;
        e = realloc(e, cap * sizeof *e);
      }
      e[k].row = r, e[k].col = col, e[k].v = v, k++;
    }
  }
  fclose(f);
  qsort(e, k, sizeof *e, cmp_entry);
  *count = k;
  return e;
}

/* The rotated anisotropic diffusion operator on an N x N grid (9-point stencil,
   Dirichlet boundary), rows [lo, hi). */
static Entry *rotated(HYPRE_BigInt N, double angle_deg, double eps, int rank, int nprocs, HYPRE_BigInt *n,
                      HYPRE_BigInt *lo, HYPRE_BigInt *hi, size_t *count) {
  const double t = angle_deg * M_PI / 180.0, cs = cos(t), sn = sin(t);
  const double a = cs * cs + eps * sn * sn, b = (1.0 - eps) * cs * sn, c = sn * sn + eps * cs * cs;
  size_t k = 0;
  Entry *e;
  *n = N * N;
  *lo = *n * rank / nprocs;
  *hi = *n * (rank + 1) / nprocs;
  e = malloc((size_t)(*hi - *lo) * 9 * sizeof *e + 1);
  for (HYPRE_BigInt r = *lo; r < *hi; r++) {
    const HYPRE_BigInt x = r % N, y = r / N;
    const double w[3][3] = {{-b / 2, -c, b / 2}, {-a, 2 * (a + c), -a}, {b / 2, -c, -b / 2}};
    for (int dy = -1; dy <= 1; dy++)
      for (int dx = -1; dx <= 1; dx++) {
        if (x + dx < 0 || x + dx >= N || y + dy < 0 || y + dy >= N) continue;
        if (w[dy + 1][dx + 1] == 0.0) continue;
        e[k].row = r, e[k].col = (y + dy) * N + x + dx, e[k].v = w[dy + 1][dx + 1], k++;
      }
  }
  *count = k;
  return e;
}

int main(int argc, char **argv) {
  int rank, nprocs, solves = 1;
  HYPRE_BigInt N = 128, n, lo, hi;
  double angle = 45, eps = 0.001, tol = 1e-8;
  const char *matrix = NULL;
  size_t count;
  Entry *e;
  int want = MPI_THREAD_SINGLE, provided;
  for (int i = 1; i + 1 < argc; i += 2)
    if (!strcmp(argv[i], "-threads")) want = strcmp(argv[i + 1], "multiple") ? MPI_THREAD_SINGLE : MPI_THREAD_MULTIPLE;
  MPI_Init_thread(&argc, &argv, want, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-n")) N = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "-angle")) angle = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "-eps")) eps = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "-matrix")) matrix = argv[i + 1];
    else if (!strcmp(argv[i], "-solves")) solves = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-tol")) tol = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "-threads") && (!strcmp(argv[i + 1], "single") || !strcmp(argv[i + 1], "multiple"))) {
      if (want == MPI_THREAD_MULTIPLE && provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) fprintf(stderr, "amg_solve: MPI_THREAD_MULTIPLE not provided (level %d)\n", provided);
        MPI_Finalize();
        return 77;
      }
    } else {
      if (rank == 0) fprintf(stderr, "amg_solve: unknown option %s\n", argv[i]);
      MPI_Finalize();
      return 2;
    }
  }
  HYPRE_Init();
  e = matrix ? read_mtx(matrix, 0, rank, nprocs, &n, &lo, &hi, &count)
             : rotated(N, angle, eps, rank, nprocs, &n, &lo, &hi, &count);

  HYPRE_IJMatrix Aij;
  HYPRE_IJVector bij, xij;
  HYPRE_ParCSRMatrix A;
  HYPRE_ParVector b, x;
  HYPRE_IJMatrixCreate(MPI_COMM_WORLD, lo, hi - 1, lo, hi - 1, &Aij);
  HYPRE_IJMatrixSetObjectType(Aij, HYPRE_PARCSR);
  HYPRE_IJMatrixInitialize(Aij);
  for (size_t s = 0; s < count;) {
    size_t t = s;
    HYPRE_BigInt cols[4096];
    double vals[4096];
    HYPRE_Int nc = 0;
    while (t < count && e[t].row == e[s].row && nc < 4096) cols[nc] = e[t].col, vals[nc] = e[t].v, nc++, t++;
    HYPRE_IJMatrixAddToValues(Aij, 1, &nc, &e[s].row, cols, vals); /* duplicates add up */
    s = t;
  }
  HYPRE_IJMatrixAssemble(Aij);
  HYPRE_IJMatrixGetObject(Aij, (void **)&A);
  HYPRE_IJVectorCreate(MPI_COMM_WORLD, lo, hi - 1, &bij);
  HYPRE_IJVectorSetObjectType(bij, HYPRE_PARCSR);
  HYPRE_IJVectorInitialize(bij);
  HYPRE_IJVectorCreate(MPI_COMM_WORLD, lo, hi - 1, &xij);
  HYPRE_IJVectorSetObjectType(xij, HYPRE_PARCSR);
  HYPRE_IJVectorInitialize(xij);
  for (HYPRE_BigInt r = lo; r < hi; r++) {
    double one = 1.0, zero = 0.0;
    HYPRE_IJVectorSetValues(bij, 1, &r, &one);
    HYPRE_IJVectorSetValues(xij, 1, &r, &zero);
  }
  HYPRE_IJVectorAssemble(bij);
  HYPRE_IJVectorAssemble(xij);
  HYPRE_IJVectorGetObject(bij, (void **)&b);
  HYPRE_IJVectorGetObject(xij, (void **)&x);

  int failed = 0;
  for (int s = 0; s < solves; s++) {
    HYPRE_Solver pcg, amg;
    HYPRE_Int its;
    double res, t0, t_setup, t_solve, tmax[2], tl[2];
    HYPRE_ParVectorSetConstantValues(x, 0.0);
    HYPRE_ParCSRPCGCreate(MPI_COMM_WORLD, &pcg);
    HYPRE_PCGSetTol(pcg, tol);
    HYPRE_PCGSetMaxIter(pcg, 500);
    HYPRE_PCGSetTwoNorm(pcg, 1);
    HYPRE_BoomerAMGCreate(&amg);
    HYPRE_BoomerAMGSetTol(amg, 0.0);
    HYPRE_BoomerAMGSetMaxIter(amg, 1);
    HYPRE_BoomerAMGSetPrintLevel(amg, 0);
    /* No dependency weakening by row sums: FEM matrices (wathen100) have rows whose sum is
       far from zero, and the default 0.9 would leave them with a single level. */
    HYPRE_BoomerAMGSetMaxRowSum(amg, 1.0);
    HYPRE_PCGSetPrecond(pcg, (HYPRE_PtrToSolverFcn)HYPRE_BoomerAMGSolve, (HYPRE_PtrToSolverFcn)HYPRE_BoomerAMGSetup, amg);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    HYPRE_ParCSRPCGSetup(pcg, A, b, x);
    t_setup = MPI_Wtime() - t0;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    HYPRE_ParCSRPCGSolve(pcg, A, b, x);
    t_solve = MPI_Wtime() - t0;
    HYPRE_PCGGetNumIterations(pcg, &its);
    HYPRE_PCGGetFinalRelativeResidualNorm(pcg, &res);
    tl[0] = t_setup, tl[1] = t_solve;
    MPI_Allreduce(tl, tmax, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
      printf("amg_solve: %s%s n=%lld ranks=%d solve %d: iterations %d final relative residual %.10e setup %.6f s solve %.6f s\n",
             matrix ? "matrix " : "rotated", matrix ? matrix : "", (long long)n, nprocs, s, (int)its, res, tmax[0],
             tmax[1]);
    failed |= !(res <= tol);
    HYPRE_BoomerAMGDestroy(amg);
    HYPRE_ParCSRPCGDestroy(pcg);
  }
  HYPRE_IJMatrixDestroy(Aij);
  HYPRE_IJVectorDestroy(bij);
  HYPRE_IJVectorDestroy(xij);
  free(e);
  HYPRE_Finalize();
  MPI_Finalize();
  return failed;
}
