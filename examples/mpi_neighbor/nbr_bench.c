/* A plain MPI program (no sparsecomm anywhere): MPI's neighborhood collectives on a
 * distributed-graph communicator, every received byte checked, then timed. The program a
 * PMPI layer must serve unchanged (issue 32); it is also the benchmark of that layer, run
 * with and without LD_PRELOAD.
 *
 *   nbr_bench [-topo moore:DIMS,RADIUS | er:DENSITY[,SEED]] [-sizes 4,64,4096] [-reps N]
 *             [-fixed-counts 1] [-info KEY=VALUE]...
 *
 * moore: ranks on a periodic MPI_Dims_create grid, every rank within RADIUS in each
 * dimension (Chebyshev) is a neighbor (both ways); er: edge i -> j when a hash of (i, j,
 * SEED) falls below DENSITY (directed; sources found by testing the reverse edges). For
 * each size (bytes per rank and call): MPI_Neighbor_allgather, MPI_Ineighbor_allgather +
 * MPI_Wait, the persistent neighbor allgather (MPI-4's, or Open MPI 4.1's MPIX_ extension: nbr_init.h; MPI_Start +
 * MPI_Wait per call, the request made once per size), MPI_Neighbor_alltoall; first checked
 * (every block must hold what its source wrote), then timed (max over ranks of the mean
 * over REPS, after a warm-up). -fixed-counts 1 creates the communicator with the MPI_Info
 * hint "sparsecomm_fixed_counts" = "true" (an MPI ignores keys it does not know); -info
 * adds any other key to that MPI_Info.
 * Prints "nbr_bench: <topology> <call> size <B> B: <us> us/call, verified" per line; exit 1
 * on a wrong byte.
 *
 * -paired R: then also R rounds, each timing twice REPS calls through the MPI_ name and
 * twice REPS through the PMPI_ name (MPI's own implementation, reached past any profiling
 * layer), in the order A B B A (A and B swapped every other round), and prints per call
 * the medians over rounds and the median of the per-round ratio MPI_ / PMPI_ with its
 * quartiles ("paired" lines). Run without a
 * profiling library, both names are the same function: the ratio shows the method's own
 * spread. Run under one (LD_PRELOAD), it is that layer's cost against the MPI it replaces,
 * measured in one process a few milliseconds apart. */
#include <mpi.h>
#include "nbr_init.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paired.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overread" /* MPI_UNWEIGHTED is a zero-length array to GCC */
#endif

static uint64_t mix(uint64_t x) {
  x ^= x >> 33, x *= 0xff51afd7ed558ccdULL, x ^= x >> 33, x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

static int er_edge(int i, int j, uint64_t seed, double density) {
  if (i == j) return 0;
  return (double)(mix(((uint64_t)i << 32) ^ (uint64_t)j ^ (seed * 0x9e3779b97f4a7c15ULL)) >> 11) / 9007199254740992.0 <
         density;
}

/* Neighbors of `rank`: out (destinations) and in (sources), sorted, no duplicates. */
static void neighbors(const char *topo, int rank, int p, int **dst, int *nd, int **src, int *ns) {
  *dst = malloc(sizeof(int) * (size_t)p);
  *src = malloc(sizeof(int) * (size_t)p);
  *nd = *ns = 0;
  if (!strncmp(topo, "er:", 3)) {
    double density = 0;
    unsigned long long seed = 1;
    if (sscanf(topo + 3, "%lf,%llu", &density, &seed) < 1) {
      fprintf(stderr, "nbr_bench: bad topology %s\n", topo);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int j = 0; j < p; j++) {
      if (er_edge(rank, j, seed, density)) (*dst)[(*nd)++] = j;
      if (er_edge(j, rank, seed, density)) (*src)[(*ns)++] = j;
    }
    return;
  }
  int dims_n = 0, radius = 0;
  if (sscanf(topo, "moore:%d,%d", &dims_n, &radius) != 2 || dims_n < 1 || dims_n > 6 || radius < 1) {
    fprintf(stderr, "nbr_bench: bad topology %s (moore:DIMS,RADIUS or er:DENSITY[,SEED])\n", topo);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int dims[6] = {0}, c[6], off[6];
  MPI_Dims_create(p, dims_n, dims);
  char *is = calloc((size_t)p, 1);
  for (int d = 0, r = rank; d < dims_n; d++) c[d] = r % dims[d], r /= dims[d];
  for (int d = 0; d < dims_n; d++) off[d] = -radius;
  for (;;) {
    int r = 0, stride = 1, d = 0;
    for (int e = 0; e < dims_n; e++) {
      int x = ((c[e] + off[e]) % dims[e] + dims[e]) % dims[e];
      r += x * stride, stride *= dims[e];
    }
    if (r != rank) is[r] = 1;
    while (d < dims_n && off[d] == radius) off[d++] = -radius;
    if (d == dims_n) break;
    off[d]++;
  }
  for (int j = 0; j < p; j++)
    if (is[j]) (*dst)[(*nd)++] = j, (*src)[(*ns)++] = j;
  free(is);
}

static unsigned char byte_of(int from, int to, size_t k) { return (unsigned char)(from * 131 + to * 7 + k * 13 + 1); }

/* One call of kind `call` (0 allgather, 1 ineighbor_allgather, 2 persistent, 3 alltoall),
 * through the MPI_ names (pmpi = 0) or the PMPI_ ones; `preq`: the persistent request made
 * through the same names. */
static void one_call(int call, int pmpi, const unsigned char *sb, unsigned char *rb, int B, MPI_Comm g,
                     MPI_Request *preq) {
  MPI_Request req;
  if (call == 0) {
    if (pmpi) PMPI_Neighbor_allgather(sb, B, MPI_BYTE, rb, B, MPI_BYTE, g);
    else MPI_Neighbor_allgather(sb, B, MPI_BYTE, rb, B, MPI_BYTE, g);
  } else if (call == 1) {
    if (pmpi) {
      PMPI_Ineighbor_allgather(sb, B, MPI_BYTE, rb, B, MPI_BYTE, g, &req);
      PMPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
      MPI_Ineighbor_allgather(sb, B, MPI_BYTE, rb, B, MPI_BYTE, g, &req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
  } else if (call == 2) {
    if (pmpi) {
      PMPI_Start(preq);
      PMPI_Wait(preq, MPI_STATUS_IGNORE);
    } else {
      MPI_Start(preq);
      MPI_Wait(preq, MPI_STATUS_IGNORE);
    }
  } else {
    if (pmpi) PMPI_Neighbor_alltoall(sb, B, MPI_BYTE, rb, B, MPI_BYTE, g);
    else MPI_Neighbor_alltoall(sb, B, MPI_BYTE, rb, B, MPI_BYTE, g);
  }
}

/* one_call for paired_measure: the persistent request made through the names it runs. */
typedef struct {
  int call;
  const unsigned char *sb;
  unsigned char *rb;
  int B;
  MPI_Comm g;
  MPI_Request *preq, *pp;
} CallCtx;

static void run_call(void *ctx, int pmpi) {
  const CallCtx *c = ctx;
  one_call(c->call, pmpi, c->sb, c->rb, c->B, c->g, pmpi ? c->pp : c->preq);
}

int main(int argc, char **argv) {
  const char *topo = "moore:2,1", *sizes_arg = "4,64,4096";
  int reps = 100, rank, p, *dst, *src, nd, ns, bad = 0, fixed = 0, paired = 0;
  MPI_Info info = MPI_INFO_NULL;
  MPI_Comm g;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-topo")) topo = argv[i + 1];
    else if (!strcmp(argv[i], "-sizes")) sizes_arg = argv[i + 1];
    else if (!strcmp(argv[i], "-reps")) reps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-fixed-counts")) fixed = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-paired")) paired = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-info")) {
      char *kv = strdup(argv[i + 1]), *eq = strchr(kv, '=');
      if (eq) {
        *eq = 0;
        if (info == MPI_INFO_NULL) MPI_Info_create(&info);
        MPI_Info_set(info, kv, eq + 1);
      }
      free(kv);
    }
  }
  neighbors(topo, rank, p, &dst, &nd, &src, &ns);
  if (fixed) {
    if (info == MPI_INFO_NULL) MPI_Info_create(&info);
    MPI_Info_set(info, "sparsecomm_fixed_counts", "true");
  }
  char *sizes = strdup(sizes_arg);
  for (char *tok = strtok(sizes, ","); tok; tok = strtok(NULL, ",")) {
    const size_t B = (size_t)atol(tok);
    /* a communicator per size: with the hint, its counts are fixed */
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, ns, src, MPI_UNWEIGHTED, nd, dst, MPI_UNWEIGHTED, info, 0, &g);
    unsigned char *sb = malloc(B * (size_t)(nd > 0 ? nd : 1) + 1), *rb = malloc(B * (size_t)(ns > 0 ? ns : 1) + 1);
    for (int call = 0; call < 4; call++) {
      const char *names[4] = {"MPI_Neighbor_allgather", "MPI_Ineighbor_allgather", NBR_ALLGATHER_INIT_LABEL,
                              "MPI_Neighbor_alltoall"};
      const char *name = names[call];
      MPI_Request preq = MPI_REQUEST_NULL;
#if HAVE_NBR_INIT
      if (call == 2) NBR_ALLGATHER_INIT(sb, (int)B, MPI_BYTE, rb, (int)B, MPI_BYTE, g, MPI_INFO_NULL, &preq);
#else
      if (call == 2) continue;
#endif
      /* allgather: one block for every destination; alltoall: a block per destination. */
      for (int d = 0; d < (call == 3 ? nd : 1); d++)
        for (size_t k = 0; k < B; k++) sb[d * B + k] = byte_of(rank, call == 3 ? dst[d] : -1, k);
      double t = 0, tmax = 0;
      for (int rep = -1; rep < reps; rep++) { /* rep -1: checked, then timed */
        MPI_Request req;
        memset(rb, 0xee, B * (size_t)ns);
        const double t0 = MPI_Wtime();
        if (call == 0) MPI_Neighbor_allgather(sb, (int)B, MPI_BYTE, rb, (int)B, MPI_BYTE, g);
        else if (call == 1) {
          MPI_Ineighbor_allgather(sb, (int)B, MPI_BYTE, rb, (int)B, MPI_BYTE, g, &req);
          MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else if (call == 2) {
          MPI_Start(&preq);
          MPI_Wait(&preq, MPI_STATUS_IGNORE);
        } else MPI_Neighbor_alltoall(sb, (int)B, MPI_BYTE, rb, (int)B, MPI_BYTE, g);
        if (rep >= 0) t += MPI_Wtime() - t0;
        if (rep == -1)
          for (int s = 0; s < ns; s++)
            for (size_t k = 0; k < B; k++) bad += rb[s * B + k] != byte_of(src[s], call == 3 ? rank : -1, k);
      }
      t = reps > 0 ? t / reps : 0;
      MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      int allbad = 0;
      MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      if (rank == 0)
        printf("nbr_bench: %s on %d ranks, %s size %zu B: %.2f us/call, %s\n", topo, p, name, B, tmax * 1e6,
               allbad ? "WRONG BYTES" : "verified");
      if (paired > 0 && reps > 0) {
        MPI_Request pp = MPI_REQUEST_NULL; /* the persistent request made through PMPI_ */
#if HAVE_NBR_INIT
        if (call == 2) PNBR_ALLGATHER_INIT(sb, (int)B, MPI_BYTE, rb, (int)B, MPI_BYTE, g, MPI_INFO_NULL, &pp);
#endif
        CallCtx cc = {call, sb, rb, (int)B, g, &preq, &pp};
        const PairedResult r = paired_measure(paired, reps, run_call, &cc);
        if (pp != MPI_REQUEST_NULL) PMPI_Request_free(&pp);
        if (rank == 0)
          printf("nbr_bench: paired %s on %d ranks, %s size %zu B: MPI_ %.2f us/call, PMPI_ %.2f us/call, "
                 "MPI_/PMPI_ %.3f [%.3f-%.3f] over %d rounds\n",
                 topo, p, name, B, r.mpi_s * 1e6, r.pmpi_s * 1e6, r.ratio, r.q1, r.q3, paired);
      }
      if (preq != MPI_REQUEST_NULL) MPI_Request_free(&preq);
    }
    free(sb), free(rb);
    MPI_Comm_free(&g);
  }
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  int allbad = 0;
  MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  free(sizes), free(dst), free(src);
  MPI_Finalize();
  return allbad ? 1 : 0;
}
