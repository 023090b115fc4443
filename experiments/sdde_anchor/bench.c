/*
 * One benchmark source, two libraries: compiled once against MPI Advance
 * (locality_aware.h, -llocality_aware) and once against sparsecomm's compatibility layer
 * (mpi_advance_compat.h, -lsparsecomm_c), it times the same calls on the same input.
 *
 * Input: a Matrix Market matrix, rows and columns block-distributed over the ranks. The
 * payload is an SpMV halo's discovery: each rank sends every owner of a column its rows
 * touch outside its own block the global ids of those columns (MPIL_Alltoallv_crs, the
 * sparse dynamic data exchange), and every owner checks that what it received is its own.
 * Then the same messages once more with the pattern known (plain MPI: the floor of the
 * direct algorithms), and the persistent neighborhood exchange of the halo values is set up
 * (MPIL_Neighbor_alltoallv_init, the standard algorithm: the set-up cost alone).
 *
 * Timing: a barrier before each call, the call's time the maximum over ranks, REPS
 * repetitions after WARMUP, the median printed (microseconds), one line per algorithm:
 *   <library> <matrix> <ranks> <algorithm> <median_us> <min_us> <max_us> verified|WRONG
 *
 *   mpirun -np 8 ./bench_sparsecomm matrix.mtx [ppn] [reps]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef USE_SPARSECOMM
#include "mpi_advance_compat.h"
#define LIB "sparsecomm"
#else
#include "locality_aware.h"
#define LIB "mpi_advance"
#endif

/* The ghost columns of this rank's rows [r0, r1) of an n x n Matrix Market file: sorted,
 * unique, outside [r0, r1). Every rank reads the file (no MPI I/O: a benchmark input).
 * Returns the count, or -1 on a malformed file. */
static long read_ghosts(const char* path, long r0, long r1, long* n_out, long** ghosts_out) {
  FILE* f = fopen(path, "r");
  if (!f) return -1;
  char line[1024];
  int symmetric = 0;
  if (!fgets(line, sizeof line, f)) return fclose(f), -1;
  if (strstr(line, "symmetric") || strstr(line, "hermitian") || strstr(line, "skew")) symmetric = 1;
  do {
    if (!fgets(line, sizeof line, f)) return fclose(f), -1;
  } while (line[0] == '%');
  long nr, nc, nnz;
  if (sscanf(line, "%ld %ld %ld", &nr, &nc, &nnz) != 3 || nr != nc) return fclose(f), -1;
  char* mark = calloc((size_t)nc, 1);
  for (long k = 0; k < nnz; ++k) {
    long i, j;
    if (!fgets(line, sizeof line, f) || sscanf(line, "%ld %ld", &i, &j) != 2) return free(mark), fclose(f), -1;
    --i, --j;
    if (i >= r0 && i < r1 && (j < r0 || j >= r1)) mark[j] = 1;
    if (symmetric && j >= r0 && j < r1 && (i < r0 || i >= r1)) mark[i] = 1;
  }
  fclose(f);
  long count = 0;
  for (long j = 0; j < nc; ++j) count += mark[j];
  long* g = malloc((size_t)(count > 0 ? count : 1) * sizeof(long));
  count = 0;
  for (long j = 0; j < nc; ++j)
    if (mark[j]) g[count++] = j;
  free(mark);
  *n_out = nr;
  *ghosts_out = g;
  return count;
}

static int cmp_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static void report(const char* matrix, int p, const char* alg, double* t, int reps, int ok) {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  qsort(t, (size_t)reps, sizeof(double), cmp_double);
  if (rank == 0)
    printf("%s %s %d %s %.1f %.1f %.1f %s\n", LIB, matrix, p, alg, t[reps / 2] * 1e6, t[0] * 1e6, t[reps - 1] * 1e6,
           ok ? "verified" : "WRONG");
  fflush(stdout);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: bench matrix.mtx [ppn] [reps]\n");
    MPI_Finalize();
    return 2;
  }
  const int ppn = argc > 2 ? atoi(argv[2]) : 4, reps = argc > 3 ? atoi(argv[3]) : 50, warmup = 5;
  const char* base = strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1];

  /* Rows: the file's n split in blocks (n read by every rank; the first pass finds it). */
  long n = 0, *ghosts = NULL, r0 = 0, r1 = 0;
  {
    long* tmp = NULL;
    if (read_ghosts(argv[1], 0, 0, &n, &tmp) < 0) {
      if (rank == 0) fprintf(stderr, "bench: cannot read %s as a square Matrix Market file\n", argv[1]);
      MPI_Finalize();
      return 2;
    }
    free(tmp);
  }
  r0 = n * rank / p, r1 = n * (rank + 1) / p;
  const long nghost = read_ghosts(argv[1], r0, r1, &n, &ghosts);

  /* Messages: per owner, the ghost ids it owns (ghosts sorted, so owners ascend). */
  int *dest = malloc((size_t)p * sizeof(int)), *counts = malloc((size_t)p * sizeof(int)),
      *displs = malloc((size_t)(p + 1) * sizeof(int));
  int nmsg = 0;
  displs[0] = 0;
  for (long k = 0; k < nghost;) {
    int owner = (int)(ghosts[k] * p / n); /* block partition: the owner of column j, adjusted */
    while (ghosts[k] < n * owner / p) --owner;
    while (ghosts[k] >= n * (owner + 1) / p) ++owner;
    long e = k;
    while (e < nghost && ghosts[e] < n * (owner + 1) / p) ++e;
    dest[nmsg] = owner, counts[nmsg] = (int)(e - k), displs[nmsg + 1] = (int)e;
    ++nmsg, k = e;
  }

  MPIL_Comm* xcomm;
  MPIL_Info* xinfo;
  MPIL_Comm_init(&xcomm, MPI_COMM_WORLD);
  MPIL_Comm_update_locality(xcomm, ppn);
  MPIL_Info_init(&xinfo);

  const struct {
    const char* name;
    enum AlltoallvCRSMethod m;
  } algs[] = {{"personalized", ALLTOALLV_CRS_PERSONALIZED},
              {"nonblocking", ALLTOALLV_CRS_NONBLOCKING},
              {"personalized_loc", ALLTOALLV_CRS_PERSONALIZED_LOC},
              {"nonblocking_loc", ALLTOALLV_CRS_NONBLOCKING_LOC},
#ifdef USE_SPARSECOMM
              /* sparsecomm only: counted in "our best", never against an MPI Advance algorithm */
              {"node_window", ALLTOALLV_CRS_NODE_WINDOW_SPARSECOMM}
#endif
  };
  const int nalgs = (int)(sizeof algs / sizeof algs[0]);
  double* t = malloc((size_t)reps * sizeof(double));
  int* rcounts = malloc((size_t)p * sizeof(int));
  int* rdispls = malloc((size_t)(p + 1) * sizeof(int));
  int* rsrc = malloc((size_t)p * sizeof(int));
  int rn = 0;
  for (int a = 0; a < nalgs; ++a) {
    MPIL_Set_alltoallv_crs(algs[a].m);
    int ok = 1;
    for (int r = 0; r < warmup + reps; ++r) {
      int recv_nnz = 0, recv_size = 0, *src = NULL, *rc = NULL, *rd = NULL;
      long* vals = NULL;
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      MPIL_Alltoallv_crs(nmsg, (int)nghost, dest, counts, displs, MPI_LONG, ghosts, &recv_nnz, &recv_size, &src, &rc,
                         &rd, MPI_LONG, (void**)&vals, xinfo, xcomm);
      double dt = MPI_Wtime() - t0, mx;
      MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (r >= warmup) t[r - warmup] = mx;
      /* Verified: every id received is mine, and the sizes add up over all ranks. */
      for (int i = 0; i < recv_size; ++i) ok = ok && vals[i] >= r0 && vals[i] < r1;
      long sums[2] = {nghost, recv_size}, tot[2];
      MPI_Allreduce(sums, tot, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
      ok = ok && tot[0] == tot[1];
      if (r == warmup + reps - 1) { /* keep the last answer for the persistent set-up */
        rn = recv_nnz;
        rdispls[0] = 0;
        for (int i = 0; i < recv_nnz; ++i) rsrc[i] = src[i], rcounts[i] = rc[i], rdispls[i + 1] = rdispls[i] + rc[i];
      }
      MPIL_Free(src), MPIL_Free(rc), MPIL_Free(rd), MPIL_Free(vals);
    }
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    report(base, p, algs[a].name, t, reps, all_ok);
  }

  /* The same messages with the pattern known (plain MPI, identical in both builds): what any
   * direct SDDE must at least do — each rank receives from the sources the SDDE found, with
   * their sizes, into pre-posted receives, and sends its ids to their owners. No discovery,
   * no reduction, no probe: the floor of the personalized and nonblocking algorithms on this
   * transport (table.py sets each against 0.8x MPI Advance's). */
  {
    long* rbuf = malloc((size_t)(rdispls[rn] + 1) * sizeof(long));
    MPI_Request* rq = malloc((size_t)(rn + nmsg + 1) * sizeof(MPI_Request));
    int ok = 1;
    for (int r = 0; r < warmup + reps; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      for (int i = 0; i < rn; ++i)
        MPI_Irecv(rbuf + rdispls[i], rcounts[i], MPI_LONG, rsrc[i], 77, MPI_COMM_WORLD, &rq[i]);
      for (int i = 0; i < nmsg; ++i)
        MPI_Isend(ghosts + displs[i], counts[i], MPI_LONG, dest[i], 77, MPI_COMM_WORLD, &rq[rn + i]);
      MPI_Waitall(rn + nmsg, rq, MPI_STATUSES_IGNORE);
      double dt = MPI_Wtime() - t0, mx;
      MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (r >= warmup) t[r - warmup] = mx;
      for (int i = 0; i < rdispls[rn]; ++i) ok = ok && rbuf[i] >= r0 && rbuf[i] < r1;
    }
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    report(base, p, "known_pattern", t, reps, all_ok);
    free(rbuf), free(rq);
  }

  /* The persistent halo exchange: owners send the values asked for, askers receive their
   * ghosts. Set-up time (init + free of the request), the standard algorithm. */
  {
    MPIL_Comm* ncomm;
    MPIL_Dist_graph_create_adjacent(MPI_COMM_WORLD, nmsg, dest, MPI_UNWEIGHTED, rn, rsrc, MPI_UNWEIGHTED, xinfo, 0,
                                    &ncomm);
    MPIL_Comm_update_locality(ncomm, ppn);
    MPIL_Set_alltoallv_neighbor_init_alogorithm(NEIGHBOR_ALLTOALLV_INIT_STANDARD);
    double* sendv = malloc((size_t)(rdispls[rn] + 1) * sizeof(double));
    double* recvv = malloc((size_t)(nghost + 1) * sizeof(double));
    for (int i = 0; i < rdispls[rn]; ++i) sendv[i] = 1.0;
    int ok = 1;
    for (int r = 0; r < warmup + reps; ++r) {
      MPIL_Request* req;
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      MPIL_Neighbor_alltoallv_init(sendv, rcounts, rdispls, MPI_DOUBLE, recvv, counts, displs, MPI_DOUBLE, ncomm, xinfo,
                                   &req);
      double dt = MPI_Wtime() - t0, mx;
      MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (r >= warmup) t[r - warmup] = mx;
      if (r == warmup + reps - 1) { /* one exchange through it, checked */
        for (long i = 0; i < nghost; ++i) recvv[i] = 0.0;
        MPI_Status st;
        MPIL_Start(req);
        MPIL_Wait(req, &st);
        for (long i = 0; i < nghost; ++i) ok = ok && recvv[i] == 1.0;
      }
      MPIL_Request_free(&req);
    }
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    report(base, p, "neighbor_init_standard", t, reps, all_ok);
    free(sendv), free(recvv);
    MPIL_Comm_free(&ncomm);
  }
  MPIL_Info_free(&xinfo);
  MPIL_Comm_free(&xcomm);
  free(t), free(rcounts), free(rdispls), free(rsrc), free(dest), free(counts), free(displs), free(ghosts);
  MPI_Finalize();
  return 0;
}
