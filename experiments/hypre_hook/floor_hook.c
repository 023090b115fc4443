/* Measurement tool for issue 31's goal, not part of the library: the solve as if the halo
 * exchanges cost nothing. Preloaded into the unmodified amg_solve (run.sh, variant
 * "floor"), it skips every double exchange along a matvec package (jobs 1 and 2, host
 * memory) made inside HYPRE_ParCSRPCGSolve and zeroes its receive buffer instead: the solve
 * runs on the block-diagonal part of the hierarchy (each rank's own rows, still symmetric
 * positive definite, so PCG keeps going), the results are WRONG and only the time means
 * anything. Everything else (the set-up's exchanges, other jobs) goes to Hypre. FLOOR_MAXIT caps the PCG iterations
 * (HYPRE_PCGSetMaxIter) at Hypre's own count for the case, so both runs do the same
 * number of V-cycles; the table compares time per iteration. What remains is the solve's
 * computation, its reductions (dot products) and its waits for the other ranks: the time
 * no halo-exchange backend can remove, i.e. the floor of solve / Hypre's solve. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <_hypre_parcsr_mv.h>
#include <HYPRE_parcsr_ls.h>

typedef hypre_ParCSRCommHandle *(*create_v2_fn)(HYPRE_Int, hypre_ParCSRCommPkg *, HYPRE_MemoryLocation, void *,
                                                  HYPRE_MemoryLocation, void *);
typedef HYPRE_Int (*destroy_fn)(hypre_ParCSRCommHandle *);
typedef HYPRE_Int (*solve_fn)(HYPRE_Solver, HYPRE_ParCSRMatrix, HYPRE_ParVector, HYPRE_ParVector);
typedef HYPRE_Int (*maxit_fn)(HYPRE_Solver, HYPRE_Int);

static int in_solve;
static long skipped;
static hypre_ParCSRCommHandle skip_marker; /* every skipped exchange's handle */

static void *next(const char *name) {
  void *p = dlsym(RTLD_NEXT, name);
  if (!p) {
    fprintf(stderr, "floor_hook: %s not found\n", name);
    exit(2);
  }
  return p;
}

hypre_ParCSRCommHandle *hypre_ParCSRCommHandleCreate_v2(HYPRE_Int job, hypre_ParCSRCommPkg *pkg,
                                                        HYPRE_MemoryLocation sm, void *send, HYPRE_MemoryLocation rm,
                                                        void *recv) {
  static create_v2_fn real;
  if (in_solve && (job == 1 || job == 2) && sm == HYPRE_MEMORY_HOST && rm == HYPRE_MEMORY_HOST) {
    /* job 1 receives the ghosts (recv_vec_starts), job 2 (the transpose) the send side's */
    const HYPRE_Int n = job == 1 ? (pkg->num_recvs ? pkg->recv_vec_starts[pkg->num_recvs] : 0)
                                 : (pkg->num_sends ? pkg->send_map_starts[pkg->num_sends] : 0);
    memset(recv, 0, sizeof(double) * (size_t)n);
    ++skipped;
    return &skip_marker;
  }
  if (!real) real = (create_v2_fn)next("hypre_ParCSRCommHandleCreate_v2");
  return real(job, pkg, sm, send, rm, recv);
}

hypre_ParCSRCommHandle *hypre_ParCSRCommHandleCreate(HYPRE_Int job, hypre_ParCSRCommPkg *pkg, void *send, void *recv) {
  return hypre_ParCSRCommHandleCreate_v2(job, pkg, HYPRE_MEMORY_HOST, send, HYPRE_MEMORY_HOST, recv);
}

HYPRE_Int hypre_ParCSRCommHandleDestroy(hypre_ParCSRCommHandle *h) {
  static destroy_fn real;
  if (h == &skip_marker) return 0;
  if (!real) real = (destroy_fn)next("hypre_ParCSRCommHandleDestroy");
  return real(h);
}

HYPRE_Int HYPRE_ParCSRPCGSolve(HYPRE_Solver s, HYPRE_ParCSRMatrix A, HYPRE_ParVector b, HYPRE_ParVector x) {
  static solve_fn real;
  if (!real) real = (solve_fn)next("HYPRE_ParCSRPCGSolve");
  in_solve = 1;
  HYPRE_Int rc = real(s, A, b, x);
  in_solve = 0;
  return rc;
}

HYPRE_Int HYPRE_PCGSetMaxIter(HYPRE_Solver s, HYPRE_Int n) {
  static maxit_fn real;
  const char *cap = getenv("FLOOR_MAXIT");
  if (!real) real = (maxit_fn)next("HYPRE_PCGSetMaxIter");
  if (cap && atoi(cap) > 0 && atoi(cap) < n) n = atoi(cap);
  return real(s, n);
}

__attribute__((destructor)) static void report(void) {
  if (getenv("FLOOR_VERBOSE")) fprintf(stderr, "floor_hook: %ld exchanges skipped\n", skipped);
}
