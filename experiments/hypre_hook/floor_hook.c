/* Measurement tool for issue 31's goal, not part of the library: the solve as if the halo
 * exchanges cost nothing. Preloaded into the unmodified amg_solve (run.sh, variant
 * "floor"), it skips every double exchange along a matvec package (jobs 1 and 2, host
 * memory) made inside HYPRE_ParCSRPCGSolve and zeroes its receive buffer instead: the solve
 * runs on the block-diagonal part of the hierarchy (each rank's own rows, still symmetric
 * positive definite, so PCG keeps going), the results are WRONG and only the time means
 * anything. Everything else (the set-up's exchanges, other jobs) goes to Hypre. FLOOR_MAXIT
 * sets the PCG iterations (HYPRE_PCGSetMaxIter, with a tolerance it cannot reach) to
 * Hypre's own count for the case, so both runs do the same number of V-cycles (the table
 * compares time per iteration, the same then). What remains is the solve's
 * computation, its reductions (dot products) and its waits for the other ranks: the time
 * no halo-exchange backend can remove, i.e. the floor of solve / Hypre's solve.
 *
 * FLOOR_MODE=reference (run.sh, variant "reference") keeps one message per exchange and
 * rank instead: each rank receives 8 bytes from one rank it would receive from (the first
 * on another node, else the first) and sends 8 bytes to every rank that chose it, posted
 * in Create and completed in Destroy, as a real exchange overlaps; the receive buffer is
 * still zeroed. A rank with remote ghosts still waits for a neighbor, so the solve keeps
 * the synchronization between neighbors that any exchange imposes, at the cost of the
 * smallest message: a yardstick for a backend that leaves each rank at least one message
 * of its own, not a bound (an aggregation that leaves some ranks none can go below it; the
 * PETSc benchmark's "one message per rank" reference, the same idea). The partners of both
 * jobs are found when Hypre creates the package
 * (hypre_MatvecCommPkgCreate, collective: one MPI_Alltoall per job on its communicator, in
 * the set-up, not the solve); a package created otherwise is skipped as by the floor. */
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
typedef HYPRE_Int (*destroy_fn)(hypre_ParCSRCommHandle *);
typedef HYPRE_Int (*solve_fn)(HYPRE_Solver, HYPRE_ParCSRMatrix, HYPRE_ParVector, HYPRE_ParVector);
typedef HYPRE_Int (*maxit_fn)(HYPRE_Solver, HYPRE_Int);
typedef HYPRE_Int (*tol_fn)(HYPRE_Solver, HYPRE_Real);
typedef HYPRE_Int (*pkg_create_fn)(hypre_ParCSRMatrix *);

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

/* The reference: per (package, job) its partners; per exchange in flight its requests. */
enum { MAXREF = 512, MAXFLIGHT = 64 };
static struct {
  const hypre_ParCSRCommPkg *pkg;
  int job, from, nto, *to;
} refs[MAXREF];
static int nrefs;
static struct {
  hypre_ParCSRCommHandle h; /* first: the handle Hypre holds */
  int used, n;
  MPI_Request *req;
  double in, out;
} flight[MAXFLIGHT];

/* FLOOR_MODE=reference, read once (every exchange asks). */
static int reference_mode(void) {
  static int mode = -1;
  if (mode < 0) {
    const char *m = getenv("FLOOR_MODE");
    mode = m && strcmp(m, "reference") == 0;
  }
  return mode;
}

/* The entry of (pkg, job), or -1. */
static int partners(const hypre_ParCSRCommPkg *pkg, int job) {
  for (int i = nrefs - 1; i >= 0; --i)
    if (refs[i].pkg == pkg && refs[i].job == job) return i;
  return -1;
}

/* Collective over the package's communicator (inside hypre_MatvecCommPkgCreate). */
static void find_partners(const hypre_ParCSRCommPkg *pkg, int job) {
  int i = partners(pkg, job); /* an address reused by a new package: its entry replaced */
  if (i < 0) {
    if (nrefs == MAXREF) {
      fprintf(stderr, "floor_hook: more than %d packages\n", MAXREF);
      exit(2);
    }
    i = nrefs++;
  } else {
    free(refs[i].to);
  }
  MPI_Comm comm = pkg->comm, node;
  int size, rank;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Group g, gn;
  MPI_Comm_group(comm, &g);
  MPI_Comm_group(node, &gn);
  int *all = malloc(sizeof(int) * (size_t)size), *in_node = malloc(sizeof(int) * (size_t)size);
  for (int r = 0; r < size; ++r) all[r] = r;
  MPI_Group_translate_ranks(g, size, all, gn, in_node); /* MPI_UNDEFINED: another node */
  /* job 1 receives from recv_procs, job 2 (the transpose) from send_procs */
  const int n = job == 1 ? pkg->num_recvs : pkg->num_sends;
  const int *from = job == 1 ? pkg->recv_procs : pkg->send_procs;
  int pick = n > 0 ? from[0] : -1;
  for (int k = 0; k < n; ++k)
    if (in_node[from[k]] == MPI_UNDEFINED) {
      pick = from[k];
      break;
    }
  int *chose = calloc((size_t)size, sizeof(int)), *chosen = calloc((size_t)size, sizeof(int));
  if (pick >= 0) chose[pick] = 1;
  MPI_Alltoall(chose, 1, MPI_INT, chosen, 1, MPI_INT, comm);
  refs[i].pkg = pkg, refs[i].job = job, refs[i].from = pick, refs[i].nto = 0;
  refs[i].to = malloc(sizeof(int) * (size_t)size);
  for (int r = 0; r < size; ++r)
    if (chosen[r]) refs[i].to[refs[i].nto++] = r;
  free(all), free(in_node), free(chose), free(chosen);
  MPI_Group_free(&g), MPI_Group_free(&gn), MPI_Comm_free(&node);
}

HYPRE_Int hypre_MatvecCommPkgCreate(hypre_ParCSRMatrix *A) {
  static pkg_create_fn real;
  if (!real) real = (pkg_create_fn)next("hypre_MatvecCommPkgCreate");
  const HYPRE_Int rc = real(A);
  if (reference_mode() && hypre_ParCSRMatrixCommPkg(A)) {
    find_partners(hypre_ParCSRMatrixCommPkg(A), 1);
    find_partners(hypre_ParCSRMatrixCommPkg(A), 2);
  }
  return rc;
}

static hypre_ParCSRCommHandle *reference_start(const hypre_ParCSRCommPkg *pkg, int job) {
  const int i = partners(pkg, job);
  if (i < 0) return &skip_marker; /* a package not created through Hypre's function: as the floor */
  int f = 0;
  while (f < MAXFLIGHT && flight[f].used) ++f;
  if (f == MAXFLIGHT) {
    fprintf(stderr, "floor_hook: more than %d exchanges in flight\n", MAXFLIGHT);
    exit(2);
  }
  flight[f].used = 1, flight[f].n = 0, flight[f].out = 1.0;
  flight[f].req = malloc(sizeof(MPI_Request) * (size_t)(refs[i].nto + 1));
  if (refs[i].from >= 0) MPI_Irecv(&flight[f].in, 1, MPI_DOUBLE, refs[i].from, 777, pkg->comm, &flight[f].req[flight[f].n++]);
  for (int k = 0; k < refs[i].nto; ++k)
    MPI_Isend(&flight[f].out, 1, MPI_DOUBLE, refs[i].to[k], 777, pkg->comm, &flight[f].req[flight[f].n++]);
  return &flight[f].h;
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
    if (reference_mode()) return reference_start(pkg, job);
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
  for (int f = 0; f < MAXFLIGHT; ++f)
    if (flight[f].used && h == &flight[f].h) {
      MPI_Waitall(flight[f].n, flight[f].req, MPI_STATUSES_IGNORE);
      free(flight[f].req);
      flight[f].used = 0;
      return 0;
    }
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

/* With FLOOR_MAXIT, the tolerance made unreachable: the capped solve runs exactly that
 * many iterations (the block-diagonal problem would converge in fewer, and a solve's fixed
 * costs spread over fewer iterations make a time per iteration too high). */
HYPRE_Int HYPRE_PCGSetTol(HYPRE_Solver s, HYPRE_Real tol) {
  static tol_fn real;
  const char *cap = getenv("FLOOR_MAXIT");
  if (!real) real = (tol_fn)next("HYPRE_PCGSetTol");
  if (cap && atoi(cap) > 0) tol = 1e-30;
  return real(s, tol);
}

__attribute__((destructor)) static void report(void) {
  if (getenv("FLOOR_VERBOSE")) fprintf(stderr, "floor_hook: %ld exchanges skipped\n", skipped);
}
