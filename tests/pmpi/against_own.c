/* A plain MPI program (no sparsecomm include) that checks every blocking neighborhood
 * collective it makes against MPI's own result for the same arguments: each call is made
 * twice, through MPI_Neighbor_* (which a PMPI library may take over) and through
 * PMPI_Neighbor_* (MPI's own, which no library intercepts), on receive buffers filled
 * alike, and the two must agree byte for byte, including what neither may touch. Sizes,
 * datatypes and functions change from call to call, the way a program that promises
 * nothing calls them: 0 to 160 KB per block, a strided vector type, a contiguous derived
 * type, per-edge alltoallv counts with zeros; on distributed graphs with duplicate edges,
 * self edges, empty neighborhoods and two components using different sizes in the same call,
 * and on a non-periodic Cartesian grid (MPI_PROC_NULL slots). Then non-blocking calls, three
 * in flight at a time, started on either side of the program's own messages and completed
 * together with them in one MPI_Waitall, each compared with MPI's own blocking call.
 *
 *   against_own [calls per communicator, default 48] [-mismatch]
 *
 * -mismatch (run under a library only): rank 0 then makes calls whose receive counts differ
 * from what its source sends, with MPI_ERRORS_RETURN: each must give it an error code, the
 * others none, and no rank may hang (MPI calls such a program erroneous; Open MPI's own
 * accepts some silently).
 * Prints "against_own: N calls per rank on P ranks, C compared, W differ" (exit 1 if W > 0;
 * C < N only where mpi_bugs.h finds a bug of MPI's own, which rank 0 names). */
#include <mpi.h>
#include <stdio.h>

#include "mpi_bugs.h"
#include <stdlib.h>
#include <string.h>

static int P, me;
static long compared = 0, differ = 0;
/* Functions (1 alltoall, 3 alltoallv) in which MPI's own pairs repeated edges otherwise than
 * the standard (mpi_bugs.h): on a communicator with repeated edges, not compared (the layer
 * pairs them as the standard says). g_repeats: the current communicator has some. */
static int g_bad_pairing[4], g_repeats;
static long skipped = 0;

static unsigned mix(unsigned a, unsigned b, unsigned c) {
  unsigned h = a * 2654435761u ^ (b * 40503u + 0x9e3779b9u) ^ (c * 2246822519u);
  h ^= h >> 13, h *= 0x5bd1e995u, h ^= h >> 15;
  return h;
}

/* Block sizes in ints, by call: small, zero, medium, above the 16 KiB alltoall limit (a
 * message) and above the 128 KiB shared area (an allgather as messages). */
static const int kSizes[] = {3, 0, 17, 1, 5000, 0, 40000, 64, 2};
enum { kInt, kStrided, kPair }; /* the datatypes used */

static MPI_Datatype g_strided, g_pair;

/* Units of `type` carrying n ints of data (a strided unit spans two ints of memory). */
static int units(int type, int n) { return type == kPair ? n / 2 : n; }
static MPI_Datatype dtype(int type) { return type == kInt ? MPI_INT : type == kStrided ? g_strided : g_pair; }

/* A call's arguments. */
typedef struct {
  int fn, call, type, u, mine;
  int sc[64], sd[64], rc[64], rd[64];
} Args;

static void make_args(Args* a, int fn, int call, int type, int n, int nd, int ns, const int* dst, const int* src) {
  a->fn = fn, a->call = call, a->type = type, a->u = units(type, n);
  const int u = a->u;
  /* alltoallv / allgatherv counts: from (sender, receiver, call) only, so both ends agree
   * whichever duplicate edge MPI pairs with which. */
  int at = 0;
  for (int j = 0; j < nd; j++) {
    const unsigned h = mix(me, dst[j], call);
    a->sc[j] = dst[j] == MPI_PROC_NULL ? 0 : (int)(h % 4) * (u / 2 + 1) * (int)(h % 3 != 0);
    a->sd[j] = at, at += a->sc[j] + 1;
  }
  at = 0;
  for (int i = 0; i < ns; i++) {
    const unsigned h = mix(src[i], me, call);
    if (fn == 2) a->rc[i] = src[i] == MPI_PROC_NULL ? 0 : u + (int)(mix(src[i], 7, call) % 2);
    else a->rc[i] = src[i] == MPI_PROC_NULL ? 0 : (int)(h % 4) * (u / 2 + 1) * (int)(h % 3 != 0);
    a->rd[i] = at, at += a->rc[i] + 2;
  }
  a->mine = fn == 2 ? u + (int)(mix(me, 7, call) % 2) : u;
}

/* The call of `a`: MPI's own (PMPI_, blocking) when own, else through MPI_ (non-blocking
 * where req is given). */
static int issue(const Args* a, int own, MPI_Request* req, const int* sb, int* rb, MPI_Comm c) {
  MPI_Datatype t = dtype(a->type);
  const int u = a->u;
  switch (a->fn) {
    case 0:
      return own ? PMPI_Neighbor_allgather(sb, u, t, rb, u, t, c)
             : req ? MPI_Ineighbor_allgather(sb, u, t, rb, u, t, c, req)
                   : MPI_Neighbor_allgather(sb, u, t, rb, u, t, c);
    case 1:
      return own ? PMPI_Neighbor_alltoall(sb, u, t, rb, u, t, c)
             : req ? MPI_Ineighbor_alltoall(sb, u, t, rb, u, t, c, req)
                   : MPI_Neighbor_alltoall(sb, u, t, rb, u, t, c);
    case 2:
      return own ? PMPI_Neighbor_allgatherv(sb, a->mine, t, rb, a->rc, a->rd, t, c)
             : req ? MPI_Ineighbor_allgatherv(sb, a->mine, t, rb, a->rc, a->rd, t, c, req)
                   : MPI_Neighbor_allgatherv(sb, a->mine, t, rb, a->rc, a->rd, t, c);
    default:
      return own ? PMPI_Neighbor_alltoallv(sb, a->sc, a->sd, t, rb, a->rc, a->rd, t, c)
             : req ? MPI_Ineighbor_alltoallv(sb, a->sc, a->sd, t, rb, a->rc, a->rd, t, c, req)
                   : MPI_Neighbor_alltoallv(sb, a->sc, a->sd, t, rb, a->rc, a->rd, t, c);
  }
}

static void compare(const Args* a, int e1, int e2, const int* rb1, const int* rb2, size_t rb_ints, const char* how) {
  if (g_repeats && g_bad_pairing[a->fn]) {
    skipped++;
    return;
  }
  compared++;
  if (e1 != e2 || memcmp(rb1, rb2, rb_ints * sizeof(int)) != 0) {
    size_t k = 0;
    while (k < rb_ints && rb1[k] == rb2[k]) k++;
    if (differ++ < 10)
      fprintf(stderr,
              "against_own [rank %d]: %s call %d (function %d, type %d, %d units): codes %d/%d, "
              "first difference at int %zu: %d, MPI's own %d\n",
              me, how, a->call, a->fn, a->type, a->u, e1, e2, k, k < rb_ints ? rb1[k] : 0, k < rb_ints ? rb2[k] : 0);
  }
}

/* One blocking call through the library and through MPI's own; compares. */
static void both(MPI_Comm c, int fn, int call, int type, int n, int nd, int ns, const int* dst, const int* src,
                 int* sb, int* rb1, int* rb2, size_t rb_ints) {
  Args a;
  make_args(&a, fn, call, type, n, nd, ns, dst, src);
  for (size_t k = 0; k < rb_ints; k++) rb1[k] = rb2[k] = -7;
  const int e1 = issue(&a, 0, NULL, sb, rb1, c);
  const int e2 = issue(&a, 1, NULL, sb, rb2, c);
  compare(&a, e1, e2, rb1, rb2, rb_ints, "blocking");
}

/* Non-blocking calls in flight together: three per round, rank r starting r % 4 of them
 * before an exchange of the program's own messages around a ring and the rest after it,
 * completed in reverse order in one MPI_Waitall with a request of the program's own; each
 * then compared with MPI's own blocking call. */
static void overlapped(MPI_Comm c, int rounds, int nd, int ns, const int* dst, const int* src, const int* sb,
                       size_t rb_ints) {
  int *rb1[3], *rb2 = malloc(rb_ints * sizeof(int));
  for (int k = 0; k < 3; k++) rb1[k] = malloc(rb_ints * sizeof(int));
  for (int round = 0; round < rounds; round++) {
    Args a[3];
    MPI_Request req[4];
    for (int k = 0; k < 3; k++) {
      const int call = 1000 + 3 * round + k, fn = (round + k) % 4;
      int n = kSizes[(round + 2 * k) % (int)(sizeof kSizes / sizeof kSizes[0])];
      if (n > 5000) n = 5000;
      make_args(&a[k], fn, call, (round + k) % 3, n, nd, ns, dst, src);
      for (size_t i = 0; i < rb_ints; i++) rb1[k][i] = -7;
    }
    int own_in = -1, own_out = me, e[3] = {0, 0, 0};
    const int early = me % 4 < 3 ? me % 4 : 3;
    for (int k = 0; k < early; k++) e[k] = issue(&a[k], 0, &req[k], sb, rb1[k], c);
    MPI_Irecv(&own_in, 1, MPI_INT, (me - 1 + P) % P, 77, MPI_COMM_WORLD, &req[3]);
    MPI_Send(&own_out, 1, MPI_INT, (me + 1) % P, 77, MPI_COMM_WORLD);
    for (int k = early; k < 3; k++) e[k] = issue(&a[k], 0, &req[k], sb, rb1[k], c);
    MPI_Request order[4] = {req[2], req[3], req[1], req[0]};
    const int ew = MPI_Waitall(4, order, MPI_STATUSES_IGNORE);
    compared++;
    if (ew != MPI_SUCCESS || own_in != (me - 1 + P) % P) {
      if (differ++ < 10)
        fprintf(stderr, "against_own [rank %d]: round %d: own message %d, Waitall %d\n", me, round, own_in, ew);
    }
    for (int k = 0; k < 3; k++) {
      for (size_t i = 0; i < rb_ints; i++) rb2[i] = -7;
      const int e2 = issue(&a[k], 1, NULL, sb, rb2, c);
      compare(&a[k], e[k], e2, rb1[k], rb2, rb_ints, "non-blocking");
    }
  }
  for (int k = 0; k < 3; k++) free(rb1[k]);
  free(rb2);
}

static void suite(MPI_Comm c, int calls, int component) {
  int ns = 0, nd = 0, topo = 0;
  int src[64], dst[64];
  MPI_Topo_test(c, &topo);
  if (topo == MPI_DIST_GRAPH) {
    int w = 0, sw[64], dw[64];
    MPI_Dist_graph_neighbors_count(c, &ns, &nd, &w);
    MPI_Dist_graph_neighbors(c, ns, src, sw, nd, dst, dw);
  } else {
    int dims = 0;
    MPI_Cartdim_get(c, &dims);
    for (int d = 0; d < dims; d++) MPI_Cart_shift(c, d, 1, &src[2 * d], &src[2 * d + 1]);
    ns = nd = 2 * dims;
    memcpy(dst, src, sizeof(int) * (size_t)ns);
  }
  int repeats = 0;  /* some rank named twice among the sources (anywhere: the calls are collective) */
  for (int i = 0; i < ns; i++)
    for (int j = 0; j < i; j++) repeats |= src[i] != MPI_PROC_NULL && src[i] == src[j];
  MPI_Allreduce(&repeats, &g_repeats, 1, MPI_INT, MPI_MAX, c);
  const size_t max_n = 40000 + 2, sb_ints = (size_t)(nd + 1) * (max_n * 2 + 8) + 64;
  const size_t rb_ints = (size_t)(ns + 1) * (max_n * 2 + 8) + 64;
  int *sb = malloc(sb_ints * sizeof(int)), *rb1 = malloc(rb_ints * sizeof(int)), *rb2 = malloc(rb_ints * sizeof(int));
  for (size_t k = 0; k < sb_ints; k++) sb[k] = me * 1000003 + (int)k;
  for (int call = 0; call < calls; call++) {
    const int fn = call % 4, type = (call / 4) % 3;
    /* the two components of a split graph use different sizes in the same call */
    int n = kSizes[(call / 2 + component) % (int)(sizeof kSizes / sizeof kSizes[0])];
    if (n > 5000 && (fn == 3 || type != kInt)) n = 5000; /* keep v-calls and strided within the buffers */
    both(c, fn, call, type, n, nd, ns, dst, src, sb, rb1, rb2, rb_ints);
  }
  overlapped(c, calls / 4, nd, ns, dst, src, sb, rb_ints);
  free(sb), free(rb1), free(rb2);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  for (int fn = 1; fn <= 3; fn += 2)
    if ((g_bad_pairing[fn] = mpi_bug_repeated_edges(fn)))
      mpi_bug_say("against_own", fn == 1 ? "MPI_Neighbor_alltoall pairs repeated edges in reverse"
                                         : "MPI_Neighbor_alltoallv pairs repeated edges in reverse",
                  "its calls on communicators with repeated edges are not compared with the layer's");
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  int calls = 48, mismatch = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-mismatch")) mismatch = 1;
    else calls = atoi(argv[i]);
  }
  MPI_Type_vector(1, 1, 2, MPI_INT, &g_strided); /* one int, extent two: every other int */
  MPI_Type_create_resized(g_strided, 0, 2 * sizeof(int), &g_strided);
  MPI_Type_commit(&g_strided);
  MPI_Type_contiguous(2, MPI_INT, &g_pair);
  MPI_Type_commit(&g_pair);

  /* 1. duplicate and self edges, degrees that differ, rank 1 (if any) with no neighbors */
  {
    int d[8], nd = 0;
    if (me != 1 || P < 3) {
      d[nd++] = (me + 1) % P, d[nd++] = (me + 1) % P, d[nd++] = me;
      if (me % 2 == 0) d[nd++] = (me + 3) % P;
    }
    int* cnt = calloc((size_t)P, sizeof(int));
    for (int r = 0; r < P; r++) { /* my sources: every rank listing me, as often as it does, in rank order */
      if (r == 1 && P >= 3) continue;
      int rd[4] = {(r + 1) % P, (r + 1) % P, r, (r + 3) % P};
      for (int k = 0; k < (r % 2 == 0 ? 4 : 3); k++) cnt[r] += rd[k] == me;
    }
    int s[16], ns = 0;
    for (int r = 0; r < P; r++)
      for (int k = 0; k < cnt[r]; k++) s[ns++] = r;
    free(cnt);
    MPI_Comm g;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, ns, s, MPI_UNWEIGHTED, nd, d, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g);
    suite(g, calls, 0);
    MPI_Comm_free(&g);
  }
  /* 2. two components (even ranks, odd ranks: rings), different sizes in the same call */
  {
    const int half = (P + 1 - me % 2) / 2, pos = me / 2; /* my ring's size and my place in it */
    int d[2], s[2], n = 0;
    if (half > 1) {
      d[0] = ((pos + 1) % half) * 2 + me % 2, s[0] = ((pos - 1 + half) % half) * 2 + me % 2;
      n = 1;
    }
    MPI_Comm g;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, n, s, MPI_UNWEIGHTED, n, d, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g);
    suite(g, calls, me % 2);
    MPI_Comm_free(&g);
  }
  /* 3. a non-periodic Cartesian grid */
  {
    int dims[2] = {0, 0}, periods[2] = {0, 0};
    MPI_Dims_create(P, 2, dims);
    MPI_Comm g;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &g);
    suite(g, calls, 0);
    MPI_Comm_free(&g);
  }
  long all[3] = {0, 0, 0}, mine[3] = {compared, differ, skipped};
  MPI_Allreduce(mine, all, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0)
    printf("against_own: %ld calls per rank on %d ranks, %ld compared, %ld differ\n", (all[0] + all[2]) / P, P,
           all[0] / P, all[1]);
  fflush(stdout);
  if (mismatch && P > 1) { /* rank 0 expects 2 ints more than every source sends */
    int d[1] = {(me + 1) % P}, s[1] = {(me - 1 + P) % P};
    MPI_Comm g;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, s, MPI_UNWEIGHTED, 1, d, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g);
    MPI_Comm_set_errhandler(g, MPI_ERRORS_RETURN);
    int *sb = calloc(5008, sizeof(int)), *rb = calloc(5008, sizeof(int));
    /* allgather: 4 ints, then rank 0 expecting 6; alltoall: 5000 ints (a message), rank 0
     * expecting 5001 (a message of another size), 5000 where 4 come (a message that does not
     * come), 4 where 5000 come (one it did not expect); then 4 ints again, right everywhere. */
    const int send[8] = {4, 4, 4, 5000, 5000, 4, 5000, 4}, zero[8] = {4, 4, 6, 5000, 5001, 5000, 4, 4};
    char line[64] = "";
    for (int k = 0; k < 8; k++) {
      const int rc = me == 0 ? zero[k] : send[k];
      const int code = k < 3 ? MPI_Neighbor_allgather(sb, send[k], MPI_INT, rb, rc, MPI_INT, g)
                             : MPI_Neighbor_alltoall(sb, send[k], MPI_INT, rb, rc, MPI_INT, g);
      strcat(line, code ? " error" : " ok");
    }
    printf("against_own [rank %d]: mismatch run: codes%s\n", me, line);
    free(sb), free(rb);
    MPI_Comm_free(&g);
  }
  MPI_Type_free(&g_strided);
  MPI_Type_free(&g_pair);
  MPI_Finalize();
  return all[1] ? 1 : 0;
}
