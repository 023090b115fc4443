/* Measurement tool for issue 31, not part of the library: where a solve's halo exchanges
 * spend their time, per comm package. Preloaded in front of whatever does the exchanges
 * (LD_PRELOAD=time_hook.so for Hypre's own; LD_PRELOAD=time_hook.so:libsparsecomm_hypre_hook.so
 * for the hook's: this library's definitions come first and pass every call on with
 * dlsym(RTLD_NEXT)), it times the calls of hypre_ParCSRCommHandleCreate(_v2) (the exchange
 * started: messages posted, or our plan's start) and hypre_ParCSRCommHandleDestroy (its
 * completion, after the caller's overlapped work: the wait) made inside
 * HYPRE_ParCSRPCGSolve, per package (numbered in creation order, the same on every rank:
 * hypre_MatvecCommPkgCreate is collective) and job (1: matvec, 2: its transpose). After each
 * solve rank 0 prints, per package with exchanges, the calls and the milliseconds in start
 * and in wait, the largest per-rank total and the mean over ranks; then the solve's time
 * and the share of it in exchanges. It changes nothing: every call is passed on unchanged. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <_hypre_parcsr_mv.h>
#include <HYPRE_parcsr_ls.h>

typedef hypre_ParCSRCommHandle *(*create_v2_fn)(HYPRE_Int, hypre_ParCSRCommPkg *, HYPRE_MemoryLocation, void *,
                                                  HYPRE_MemoryLocation, void *);
typedef hypre_ParCSRCommHandle *(*create_fn)(HYPRE_Int, hypre_ParCSRCommPkg *, void *, void *);
typedef HYPRE_Int (*destroy_fn)(hypre_ParCSRCommHandle *);
typedef HYPRE_Int (*pkg_create_fn)(hypre_ParCSRMatrix *);
typedef HYPRE_Int (*solve_fn)(HYPRE_Solver, HYPRE_ParCSRMatrix, HYPRE_ParVector, HYPRE_ParVector);

enum { MAXPKG = 256, MAXH = 64 };
/* per package: [job 1 calls, job 1 start s, job 1 wait s, job 2 calls, job 2 start s, job 2 wait s] */
static double acc[MAXPKG][6];
static long long rows[MAXPKG], cols[MAXPKG];
static const hypre_ParCSRCommPkg *pkg_of[MAXPKG];
static int npkg, in_solve;
static struct {
  const hypre_ParCSRCommHandle *h;
  int pkg, job;
} open_h[MAXH];

static void *next(const char *name) {
  void *p = dlsym(RTLD_NEXT, name);
  if (!p) {
    fprintf(stderr, "time_hook: %s not found\n", name);
    exit(2);
  }
  return p;
}

static int package(const hypre_ParCSRCommPkg *pkg) {
  for (int i = npkg - 1; i >= 0; --i)
    if (pkg_of[i] == pkg) return i; /* the newest with this address */
  return -1;
}

HYPRE_Int hypre_MatvecCommPkgCreate(hypre_ParCSRMatrix *A) {
  static pkg_create_fn real;
  if (!real) real = (pkg_create_fn)next("hypre_MatvecCommPkgCreate");
  const HYPRE_Int rc = real(A);
  if (npkg < MAXPKG) {
    pkg_of[npkg] = hypre_ParCSRMatrixCommPkg(A);
    rows[npkg] = (long long)hypre_ParCSRMatrixGlobalNumRows(A);
    cols[npkg] = (long long)hypre_ParCSRMatrixGlobalNumCols(A);
    ++npkg;
  }
  return rc;
}

static hypre_ParCSRCommHandle *timed(HYPRE_Int job, hypre_ParCSRCommPkg *pkg, HYPRE_MemoryLocation sm, void *send,
                                     HYPRE_MemoryLocation rm, void *recv, int v2) {
  static create_v2_fn real_v2;
  static create_fn real;
  if (!real_v2) real_v2 = (create_v2_fn)next("hypre_ParCSRCommHandleCreate_v2");
  if (!real) real = (create_fn)next("hypre_ParCSRCommHandleCreate");
  /* Hypre's hypre_ParCSRCommHandleCreate calls its _v2 through the PLT, i.e. through this
   * library again: only the outermost call is timed. */
  static int depth;
  const int p = in_solve && depth == 0 && (job == 1 || job == 2) ? package(pkg) : -1;
  const double t0 = MPI_Wtime();
  ++depth;
  hypre_ParCSRCommHandle *h = v2 ? real_v2(job, pkg, sm, send, rm, recv) : real(job, pkg, send, recv);
  --depth;
  if (p >= 0) {
    const int j = job == 1 ? 0 : 3;
    acc[p][j] += 1, acc[p][j + 1] += MPI_Wtime() - t0;
    for (int i = 0; i < MAXH; ++i)
      if (!open_h[i].h) {
        open_h[i].h = h, open_h[i].pkg = p, open_h[i].job = j;
        break;
      }
  }
  return h;
}

hypre_ParCSRCommHandle *hypre_ParCSRCommHandleCreate_v2(HYPRE_Int job, hypre_ParCSRCommPkg *pkg,
                                                        HYPRE_MemoryLocation sm, void *send, HYPRE_MemoryLocation rm,
                                                        void *recv) {
  return timed(job, pkg, sm, send, rm, recv, 1);
}

hypre_ParCSRCommHandle *hypre_ParCSRCommHandleCreate(HYPRE_Int job, hypre_ParCSRCommPkg *pkg, void *send, void *recv) {
  return timed(job, pkg, HYPRE_MEMORY_HOST, send, HYPRE_MEMORY_HOST, recv, 0);
}

HYPRE_Int hypre_ParCSRCommHandleDestroy(hypre_ParCSRCommHandle *h) {
  static destroy_fn real;
  if (!real) real = (destroy_fn)next("hypre_ParCSRCommHandleDestroy");
  int slot = -1;
  for (int i = 0; h && i < MAXH; ++i)
    if (open_h[i].h == h) slot = i;
  const double t0 = MPI_Wtime();
  const HYPRE_Int rc = real(h);
  if (slot >= 0) {
    acc[open_h[slot].pkg][open_h[slot].job + 2] += MPI_Wtime() - t0;
    open_h[slot].h = NULL;
  }
  return rc;
}

HYPRE_Int HYPRE_ParCSRPCGSolve(HYPRE_Solver solver, HYPRE_ParCSRMatrix A, HYPRE_ParVector b, HYPRE_ParVector x) {
  static solve_fn real;
  if (!real) real = (solve_fn)next("HYPRE_ParCSRPCGSolve");
  MPI_Comm comm = hypre_ParCSRMatrixComm((hypre_ParCSRMatrix *)A);
  memset(acc, 0, sizeof acc);
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  in_solve = 1;
  const HYPRE_Int rc = real(solver, A, b, x);
  in_solve = 0;
  const double solve = MPI_Wtime() - t0;
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  /* per package and job: max and sum over ranks of start + wait, and of wait */
  static double mine[MAXPKG][6], mx[MAXPKG][6], sum[MAXPKG][6];
  double tot = 0, tot_max = 0, tot_sum = 0;
  for (int p = 0; p < npkg; ++p)
    for (int j = 0; j < 2; ++j) {
      const double *a = &acc[p][3 * j];
      mine[p][3 * j] = a[0], mine[p][3 * j + 1] = a[1] + a[2], mine[p][3 * j + 2] = a[2];
      tot += a[1] + a[2];
    }
  MPI_Reduce(mine, mx, MAXPKG * 6, MPI_DOUBLE, MPI_MAX, 0, comm);
  MPI_Reduce(mine, sum, MAXPKG * 6, MPI_DOUBLE, MPI_SUM, 0, comm);
  MPI_Reduce(&tot, &tot_max, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
  MPI_Reduce(&tot, &tot_sum, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
  if (rank == 0) {
    fprintf(stderr, "time_hook: pkg  rows x cols        job  calls  exch ms (max rank)  mean  wait ms (max)  mean\n");
    for (int p = 0; p < npkg; ++p)
      for (int j = 0; j < 2; ++j)
        if (mx[p][3 * j] > 0)
          fprintf(stderr, "time_hook: %3d  %8lld x %-8lld  %d  %6.0f  %10.2f  %10.2f  %10.2f  %10.2f\n", p, rows[p], cols[p],
                  j + 1, mx[p][3 * j], mx[p][3 * j + 1] * 1e3, sum[p][3 * j + 1] / size * 1e3, mx[p][3 * j + 2] * 1e3,
                  sum[p][3 * j + 2] / size * 1e3);
    fprintf(stderr, "time_hook: solve %.2f ms; in exchanges: max rank %.2f ms, mean %.2f ms (%.0f%% of the solve)\n",
            solve * 1e3, tot_max * 1e3, tot_sum / size * 1e3, 100.0 * tot_sum / size / solve);
  }
  return rc;
}
