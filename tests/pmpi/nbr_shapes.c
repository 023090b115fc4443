/* Plain MPI (no sparsecomm anywhere): MPI's neighborhood collectives on every shape the
 * PMPI layer must serve or pass on, each received value checked against what MPI defines.
 * Run with and without LD_PRELOAD=libsparsecomm_mpi.so (issue 32's tests).
 *
 * Communicators: distributed graphs (a ring of radius 2 listed in reverse order, random
 * directed edges, duplicate and self edges, empty neighborhoods on rank 0, one self edge
 * beside a one-way ring), Cartesian 2-D
 * periodic and non-periodic and 1-D periodic grids, a graph (MPI_Graph_create), and a
 * distributed graph created with the hint sparsecomm_fixed_counts = true.
 * Calls on each: MPI_Neighbor_allgather with counts that change between calls (3, 5, 0
 * ints, then 3 again), with derived contiguous types (send 2 x contiguous(2 doubles),
 * receive 4 doubles), MPI_Neighbor_alltoall, MPI_Ineighbor_allgather completed together
 * with the program's own requests by MPI_Waitall, MPI_Testany and MPI_Waitsome, the
 * persistent neighbor allgather (nbr_init.h) started by MPI_Startall with the program's own
 * persistent requests and completed by MPI_Waitall and MPI_Testall,
 * MPI_Neighbor_allgatherv (slots in reverse order with gaps, twice) and
 * MPI_Neighbor_alltoallv (0-2 ints per edge, spaced out), and the cases the layer passes
 * on: a strided (vector) type, block sizes that differ between ranks; the same alltoall,
 * allgatherv and alltoallv as persistent requests (nbr_init.h) started with the
 * program's own, and, on the hinted communicator, as MPI_Ineighbor_* completed together
 * with the program's own receive.
 * Prints "nbr_shapes: <checks> values checked on <P> ranks, <wrong> wrong"; exit 1 on any.
 *
 * nbr_shapes -break-promise: on a communicator created with sparsecomm_fixed_counts =
 * true and MPI_ERRORS_RETURN, every rank calls MPI_Neighbor_allgather with 4 ints, then
 * with 4 again (a layer that passed the first call on passes it at once), then with 5,
 * and prints what the calls returned (MPI itself: success; the layer: an error at the
 * third, since the hint promised fixed counts).
 *
 * nbr_shapes -settled-reuse N (run with SPARSECOMM_MPI_BACKEND=p2p and
 * SPARSECOMM_MPI_FIXED_COUNTS=1): N times, a ring communicator whose MPI_Info names the
 * backend mpi (every call MPI's own: the layer remembers the arguments and then passes
 * at once), two allgathers and alltoalls on it, freed; then a ring without info (the
 * environment's p2p: a plan, agreed at its first call), one of each call on it, values
 * checked, freed. The second communicator gets the first one's handle (Open MPI hands out
 * the freed one): if the layer kept passing that handle at once, the p2p calls would not
 * be the layer's (the verbose counts show it) and the first call's agreement would be
 * skipped. Prints how often the handle came back. */
#include <mpi.h>
#include "../../examples/mpi_neighbor/nbr_init.h"
#include "mpi_bugs.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long checks = 0, wrong = 0;
static int g_testall_bug = 0; /* mpi_bugs.h's probe, made first thing in main */
static int me, P;

#define CHECK(cond, ...)                        \
  do {                                          \
    ++checks;                                   \
    if (!(cond)) {                              \
      if (++wrong <= 10) {                      \
        fprintf(stderr, "rank %d: ", me);       \
        fprintf(stderr, __VA_ARGS__);           \
        fprintf(stderr, "\n");                  \
      }                                         \
    }                                           \
  } while (0)

static int val(int src, int k, int round) { return src * 1000 + k * 3 + round * 7 + 1; }
static int mod(int a) { return ((a % P) + P) % P; }

static unsigned hash(unsigned a, unsigned b) {
  unsigned x = a * 2654435761u ^ (b + 0x9e3779b9u) * 40503u;
  x ^= x >> 15, x *= 2246822519u, x ^= x >> 13;
  return x;
}

/* Neighbor lists of rank r as MPI reports them for communicator kind `kind`. */
typedef struct {
  int ns, nd, src[64], dst[64];
} Lists;

static void dist_lists(int kind, int r, Lists *l) {
  l->ns = l->nd = 0;
  if (kind == 0) { /* ring of radius 2: other ranks once each, sources in reverse order */
    const int d[4] = {2, -2, 1, -1};
    for (int i = 0; i < 4; i++) {
      int x = mod(r + d[i]), dup = x == r;
      for (int j = 0; j < l->nd; j++) dup |= l->dst[j] == x;
      if (!dup) l->dst[l->nd++] = x;
    }
    l->ns = l->nd;
    for (int i = 0; i < l->nd; i++) l->src[i] = l->dst[l->nd - 1 - i];
  } else if (kind == 1) { /* random directed edges; sources in decreasing order */
    for (int j = 0; j < P; j++)
      if (j != r && hash((unsigned)r, (unsigned)j) % 100 < 45) l->dst[l->nd++] = j;
    for (int j = P - 1; j >= 0; j--)
      if (j != r && hash((unsigned)j, (unsigned)r) % 100 < 45) l->src[l->ns++] = j;
  } else if (kind == 2) { /* duplicate and self edges */
    const int d[4] = {0, 1, 1, 2};
    for (int i = 0; i < 4; i++) l->dst[l->nd++] = mod(r + d[i]), l->src[l->ns++] = mod(r - d[i]);
  } else if (kind == 4) { /* one self edge beside a ring: the alltoall's self copy */
    l->dst[l->nd++] = r, l->src[l->ns++] = r;
    if (P > 1) l->dst[l->nd++] = mod(r + 1), l->src[l->ns++] = mod(r - 1);
  } else { /* rank 0 alone, the others a ring */
    if (r == 0 || P < 3) return;
    int n = P - 1, k = r - 1;
    l->dst[l->nd++] = 1 + (k + 1) % n, l->src[l->ns++] = 1 + (k + n - 1) % n;
    if (n > 2) l->dst[l->nd++] = 1 + (k + n - 1) % n, l->src[l->ns++] = 1 + (k + 1) % n;
  }
}

/* Which of the sender's blocks lands in my slot i (alltoall): the k-th occurrence of the
 * sender in my sources matches the k-th occurrence of me in its destinations (message
 * order); -1 when the sender lists me more than once (the pairing is MPI's own). */
static int a2a_block(const Lists *mine, const Lists *theirs, int i) {
  int s = mine->src[i], hits = 0, at = -1;
  for (int j = 0; j < theirs->nd; j++)
    if (theirs->dst[j] == me) hits++, at = j;
  (void)s;
  return hits == 1 ? at : -1;
}

/* The lists of rank r on communicator c, whatever its topology. */
static void lists_of(MPI_Comm c, int kind, int r, Lists *l) {
  int topo;
  MPI_Topo_test(c, &topo);
  if (topo == MPI_DIST_GRAPH) {
    dist_lists(kind, r, l);
    return;
  }
  if (topo == MPI_GRAPH) {
    MPI_Graph_neighbors_count(c, r, &l->ns);
    MPI_Graph_neighbors(c, r, l->ns, l->src);
    l->nd = l->ns;
    memcpy(l->dst, l->src, sizeof(int) * (size_t)l->ns);
    return;
  }
  int nd, dims[8], periods[8], coords[8];
  MPI_Cartdim_get(c, &nd);
  MPI_Cart_get(c, nd, dims, periods, coords);
  MPI_Cart_coords(c, r, nd, coords);
  l->ns = 0;
  for (int d = 0; d < nd; d++)
    for (int s = -1; s <= 1; s += 2) {
      int cc[8];
      memcpy(cc, coords, sizeof(int) * (size_t)nd);
      cc[d] += s;
      int nr = MPI_PROC_NULL;
      if (periods[d] || (cc[d] >= 0 && cc[d] < dims[d])) {
        cc[d] = ((cc[d] % dims[d]) + dims[d]) % dims[d];
        MPI_Cart_rank(c, cc, &nr);
      }
      l->src[l->ns++] = nr;
    }
  l->nd = l->ns;
  memcpy(l->dst, l->src, sizeof(int) * (size_t)l->ns);
}

static void check_allgather(const char *what, const Lists *l, const int *rb, int count, int round) {
  for (int i = 0; i < l->ns; i++)
    for (int k = 0; k < count; k++) {
      const int got = rb[i * count + k];
      if (l->src[i] == MPI_PROC_NULL) CHECK(got == -5, "%s: slot %d (MPI_PROC_NULL) changed to %d", what, i, got);
      else CHECK(got == val(l->src[i], k, round), "%s round %d: slot %d from %d value %d: %d != %d", what, round, i,
                 l->src[i], k, got, val(l->src[i], k, round));
    }
}

static void fill(int *b, int n, int v) {
  for (int i = 0; i < n; i++) b[i] = v;
}


/* Whether a rank appears twice among c's neighbor pairs (alltoall(v) pairing is then MPI's
 * own business): the same on every rank. */
static int any_duplicate_pair(MPI_Comm c, int kind, const Lists *l) {
  int dupe = 0, any = 0;
  for (int i = 0; i < l->ns; i++)
    if (l->src[i] != MPI_PROC_NULL) {
      Lists t;
      lists_of(c, kind, l->src[i], &t);
      dupe |= a2a_block(l, &t, i) < 0;
    }
  for (int i = 0; i < l->ns; i++)
    for (int j = 0; j < i; j++) dupe |= l->src[i] != MPI_PROC_NULL && l->src[i] == l->src[j];
  MPI_Allreduce(&dupe, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any;
}

/* alltoall, allgatherv and alltoallv as `how` says: 0 blocking, 1 non-blocking (each
 * completed by one MPI_Waitall with the program's own receive), 2 persistent (made once,
 * started twice with MPI_Startall beside the program's own persistent receive and send). */
static void v_suite(MPI_Comm c, int kind, const char *name, int how) {
  Lists l;
  lists_of(c, kind, me, &l);
  const int ns = l.ns, nd = l.nd, dupe = any_duplicate_pair(c, kind, &l);
  static int sa[64 * 8], ra[64 * 8], sg[8], rg[64 * 8], sv[64 * 8], rv[64 * 8];
  int rc[64], rd[64], sc[64], sd[64], vrc[64], vrd[64];
  for (int i = 0; i < ns; i++) rc[i] = l.src[i] == MPI_PROC_NULL ? 0 : 3, rd[i] = 4 * i;
  for (int j = 0, at = 0; j < nd; j++) sc[j] = 1 + (me + j) % 2, sd[j] = at, at += sc[j] + 1;
  for (int i = 0, at = 0; i < ns; i++) {
    int j = -1;
    if (l.src[i] != MPI_PROC_NULL && !dupe) {
      Lists t;
      lists_of(c, kind, l.src[i], &t);
      j = a2a_block(&l, &t, i);
    }
    vrc[i] = j >= 0 ? 1 + (l.src[i] + j) % 2 : 0, vrd[i] = at, at += vrc[i] + 1;
  }
  MPI_Request rq[8];
  int n = 0, ring_in = -1, ring_out = me;
  const int rounds = how == 2 ? 2 : 1;
  if (how == 1 || how == 2) {
    if (how == 1) MPI_Irecv(&ring_in, 1, MPI_INT, mod(me - 1), 9, MPI_COMM_WORLD, &rq[n++]);
    else MPI_Recv_init(&ring_in, 1, MPI_INT, mod(me - 1), 9, MPI_COMM_WORLD, &rq[n++]);
  }
  const int first = n;
  for (int round = 0; round < rounds; round++) {
    const int tag = 70 + round;
    for (int j = 0; j < nd; j++) sa[2 * j] = val(me, j, tag), sa[2 * j + 1] = -val(me, j, tag);
    for (int k = 0; k < 3; k++) sg[k] = val(me, k, tag + 10);
    for (int j = 0; j < nd; j++)
      for (int e = 0; e < sc[j]; e++) sv[sd[j] + e] = val(me, j, tag + 20 + e);
    fill(ra, 64 * 8, -5), fill(rg, 64 * 8, -5), fill(rv, 64 * 8, -5);
    if (how == 0) {
      if (!dupe) MPI_Neighbor_alltoall(sa, 2, MPI_INT, ra, 2, MPI_INT, c);
      MPI_Neighbor_allgatherv(sg, 3, MPI_INT, rg, rc, rd, MPI_INT, c);
      if (!dupe) MPI_Neighbor_alltoallv(sv, sc, sd, MPI_INT, rv, vrc, vrd, MPI_INT, c);
    } else if (how == 1) {
      n = first;
      if (!dupe) MPI_Ineighbor_alltoall(sa, 2, MPI_INT, ra, 2, MPI_INT, c, &rq[n++]);
      MPI_Ineighbor_allgatherv(sg, 3, MPI_INT, rg, rc, rd, MPI_INT, c, &rq[n++]);
      if (!dupe) MPI_Ineighbor_alltoallv(sv, sc, sd, MPI_INT, rv, vrc, vrd, MPI_INT, c, &rq[n++]);
      MPI_Send(&ring_out, 1, MPI_INT, mod(me + 1), 9, MPI_COMM_WORLD);
      MPI_Waitall(n, rq, MPI_STATUSES_IGNORE);
    } else {
#if HAVE_NBR_INIT
      if (round == 0) {
        n = first;
        if (!dupe) NBR_ALLTOALL_INIT(sa, 2, MPI_INT, ra, 2, MPI_INT, c, MPI_INFO_NULL, &rq[n++]);
        NBR_ALLGATHERV_INIT(sg, 3, MPI_INT, rg, rc, rd, MPI_INT, c, MPI_INFO_NULL, &rq[n++]);
        if (!dupe) NBR_ALLTOALLV_INIT(sv, sc, sd, MPI_INT, rv, vrc, vrd, MPI_INT, c, MPI_INFO_NULL, &rq[n++]);
        MPI_Send_init(&ring_out, 1, MPI_INT, mod(me + 1), 9, MPI_COMM_WORLD, &rq[n++]);
      }
      MPI_Startall(n, rq);
      MPI_Waitall(n, rq, MPI_STATUSES_IGNORE);
#else
      return;
#endif
    }
    if (how) CHECK(ring_in == mod(me - 1), "%s v-suite %d: own message %d", name, how, ring_in);
    for (int i = 0; i < ns; i++) {
      if (l.src[i] == MPI_PROC_NULL) continue;
      for (int k = 0; k < 3; k++)
        CHECK(rg[rd[i] + k] == val(l.src[i], k, tag + 10), "%s allgatherv (%d) slot %d value %d: %d", name, how, i, k,
              rg[rd[i] + k]);
      if (dupe) continue;
      Lists t;
      lists_of(c, kind, l.src[i], &t);
      const int j = a2a_block(&l, &t, i);
      CHECK(ra[2 * i] == val(l.src[i], j, tag) && ra[2 * i + 1] == -val(l.src[i], j, tag),
            "%s alltoall (%d) slot %d: %d", name, how, i, ra[2 * i]);
      for (int e = 0; e < vrc[i]; e++)
        CHECK(rv[vrd[i] + e] == val(l.src[i], j, tag + 20 + e), "%s alltoallv (%d) slot %d value %d: %d", name, how, i,
              e, rv[vrd[i] + e]);
    }
  }
  if (how == 2)
    for (int i = 0; i < n; i++) MPI_Request_free(&rq[i]);
}

static void run(MPI_Comm c, int kind, const char *name) {
  Lists l;
  lists_of(c, kind, me, &l);
  const int ns = l.ns, nd = l.nd;
  int sb[64 * 8], rb[64 * 8];
  char what[128];
  /* allgather, counts changing between calls */
  const int counts[4] = {3, 5, 0, 3};
  for (int t = 0; t < 4; t++) {
    const int n = counts[t];
    for (int k = 0; k < n; k++) sb[k] = val(me, k, t);
    fill(rb, 64 * 8, -5);
    MPI_Neighbor_allgather(sb, n, MPI_INT, rb, n, MPI_INT, c);
    snprintf(what, sizeof what, "%s allgather %d ints", name, n);
    check_allgather(what, &l, rb, n, t);
  }
  /* derived contiguous types, different on the two sides */
  {
    MPI_Datatype two;
    MPI_Type_contiguous(2, MPI_DOUBLE, &two);
    MPI_Type_commit(&two);
    double s[4], r[64 * 4];
    for (int k = 0; k < 4; k++) s[k] = val(me, k, 9) + 0.5;
    for (int k = 0; k < 64 * 4; k++) r[k] = -5;
    MPI_Neighbor_allgather(s, 2, two, r, 4, MPI_DOUBLE, c);
    for (int i = 0; i < ns; i++)
      for (int k = 0; k < 4; k++)
        CHECK(r[i * 4 + k] == (l.src[i] == MPI_PROC_NULL ? -5 : val(l.src[i], k, 9) + 0.5),
              "%s allgather contiguous(2 doubles): slot %d value %d: %g", name, i, k, r[i * 4 + k]);
    MPI_Type_free(&two);
  }
  /* alltoall: block j (2 ints) to destination j */
  for (int j = 0; j < nd; j++) sb[2 * j] = val(me, j, 11), sb[2 * j + 1] = -val(me, j, 11);
  fill(rb, 64 * 8, -5);
  MPI_Neighbor_alltoall(sb, 2, MPI_INT, rb, 2, MPI_INT, c);
  for (int i = 0; i < ns; i++) {
    if (l.src[i] == MPI_PROC_NULL) {
      CHECK(rb[2 * i] == -5 && rb[2 * i + 1] == -5, "%s alltoall: MPI_PROC_NULL slot %d changed", name, i);
      continue;
    }
    Lists t;
    lists_of(c, kind, l.src[i], &t);
    const int j = a2a_block(&l, &t, i);
    if (j < 0) continue; /* a rank listed twice: MPI's own pairing, not checked here */
    CHECK(rb[2 * i] == val(l.src[i], j, 11) && rb[2 * i + 1] == -val(l.src[i], j, 11),
          "%s alltoall: slot %d from %d: %d (block %d expected %d)", name, i, l.src[i], rb[2 * i], j,
          val(l.src[i], j, 11));
  }
  /* non-blocking allgather mixed with the program's own requests */
  {
    int ring_in = -1, ring_out = me;
    MPI_Request rq[3];
    for (int k = 0; k < 4; k++) sb[k] = val(me, k, 21);
    fill(rb, 64 * 8, -5);
    MPI_Irecv(&ring_in, 1, MPI_INT, mod(me - 1), 5, MPI_COMM_WORLD, &rq[0]);
    MPI_Ineighbor_allgather(sb, 4, MPI_INT, rb, 4, MPI_INT, c, &rq[1]);
    MPI_Isend(&ring_out, 1, MPI_INT, mod(me + 1), 5, MPI_COMM_WORLD, &rq[2]);
    MPI_Status st[3];
    MPI_Waitall(3, rq, st);
    CHECK(rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL && rq[2] == MPI_REQUEST_NULL,
          "%s Waitall left a request", name);
    CHECK(ring_in == mod(me - 1) && st[0].MPI_SOURCE == mod(me - 1), "%s Waitall: own message wrong", name);
    snprintf(what, sizeof what, "%s Ineighbor_allgather+Waitall", name);
    check_allgather(what, &l, rb, 4, 21);
    /* Testany: complete both by polling */
    for (int k = 0; k < 4; k++) sb[k] = val(me, k, 22);
    fill(rb, 64 * 8, -5);
    MPI_Ineighbor_allgather(sb, 4, MPI_INT, rb, 4, MPI_INT, c, &rq[0]);
    MPI_Irecv(&ring_in, 1, MPI_INT, mod(me - 1), 6, MPI_COMM_WORLD, &rq[1]);
    MPI_Send(&ring_out, 1, MPI_INT, mod(me + 1), 6, MPI_COMM_WORLD);
    int done = 0, seen[2] = {0, 0};
    while (done < 2) {
      int idx, flag;
      MPI_Testany(2, rq, &idx, &flag, MPI_STATUS_IGNORE);
      if (flag) {
        CHECK(idx == 0 || idx == 1, "%s Testany: index %d", name, idx);
        if (idx == 0 || idx == 1) seen[idx]++, done++;
      }
    }
    CHECK(seen[0] == 1 && seen[1] == 1, "%s Testany: completions %d %d", name, seen[0], seen[1]);
    snprintf(what, sizeof what, "%s Ineighbor_allgather+Testany", name);
    check_allgather(what, &l, rb, 4, 22);
    /* Waitsome */
    for (int k = 0; k < 4; k++) sb[k] = val(me, k, 23);
    fill(rb, 64 * 8, -5);
    MPI_Irecv(&ring_in, 1, MPI_INT, mod(me - 1), 7, MPI_COMM_WORLD, &rq[0]);
    MPI_Ineighbor_allgather(sb, 4, MPI_INT, rb, 4, MPI_INT, c, &rq[1]);
    MPI_Send(&ring_out, 1, MPI_INT, mod(me + 1), 7, MPI_COMM_WORLD);
    for (int left = 2; left > 0;) {
      int out, idx[2];
      MPI_Waitsome(2, rq, &out, idx, MPI_STATUSES_IGNORE);
      CHECK(out != MPI_UNDEFINED && out > 0, "%s Waitsome: outcount %d", name, out);
      if (out == MPI_UNDEFINED || out <= 0) break;
      left -= out;
    }
    snprintf(what, sizeof what, "%s Ineighbor_allgather+Waitsome", name);
    check_allgather(what, &l, rb, 4, 23);
  }
#if HAVE_NBR_INIT
  /* persistent: started with the program's own persistent requests */
  {
    int ring_in = -1, ring_out = 0;
    MPI_Request rq[3];
    /* (MPI_Testall only where MPI's own completes a persistent neighborhood collective
     * there: g_testall_bug, probed in main) */
    const int testall_bug = g_testall_bug;
    NBR_ALLGATHER_INIT(sb, 3, MPI_INT, rb, 3, MPI_INT, c, MPI_INFO_NULL, &rq[1]);
    MPI_Recv_init(&ring_in, 1, MPI_INT, mod(me - 1), 8, MPI_COMM_WORLD, &rq[0]);
    MPI_Send_init(&ring_out, 1, MPI_INT, mod(me + 1), 8, MPI_COMM_WORLD, &rq[2]);
    for (int round = 30; round < 34; round++) {
      for (int k = 0; k < 3; k++) sb[k] = val(me, k, round);
      ring_out = me * 100 + round;
      fill(rb, 64 * 8, -5);
      MPI_Startall(3, rq);
      if (round % 2 == 0 || testall_bug) {
        MPI_Waitall(3, rq, MPI_STATUSES_IGNORE);
      } else {
        int flag = 0;
        while (!flag) MPI_Testall(3, rq, &flag, MPI_STATUSES_IGNORE);
      }
      CHECK(rq[1] != MPI_REQUEST_NULL, "%s persistent request freed by completion", name);
      CHECK(ring_in == mod(me - 1) * 100 + round, "%s persistent: own message %d", name, ring_in);
      snprintf(what, sizeof what, "%s persistent neighbor allgather", name);
      check_allgather(what, &l, rb, 3, round);
    }
    /* an inactive persistent request completes at once */
    MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
    for (int i = 0; i < 3; i++) MPI_Request_free(&rq[i]);
    CHECK(rq[1] == MPI_REQUEST_NULL, "%s Request_free", name);
  }
#endif
  v_suite(c, kind, name, 2); /* persistent alltoall, allgatherv, alltoallv */
  /* allgatherv, alltoallv, a strided type (passed on), sizes that differ between ranks */
  {
    int rc[64], rd[64];
    /* allgatherv: rank r sends 2 ints; slots in reverse order with gaps */
    for (int i = 0; i < ns; i++) rc[i] = l.src[i] == MPI_PROC_NULL ? 0 : 2, rd[i] = 3 * (ns - 1 - i);
    for (int round = 0; round < 2; round++) {
      for (int k = 0; k < 2; k++) sb[k] = val(me, k, 41 + round);
      fill(rb, 64 * 8, -5);
      MPI_Neighbor_allgatherv(sb, 2, MPI_INT, rb, rc, rd, MPI_INT, c);
      for (int i = 0; i < ns; i++) {
        for (int k = 0; k < rc[i]; k++)
          CHECK(rb[rd[i] + k] == val(l.src[i], k, 41 + round), "%s allgatherv slot %d value %d: %d", name, i, k,
                rb[rd[i] + k]);
        CHECK(rb[rd[i] + 2] == -5, "%s allgatherv wrote into the gap after slot %d", name, i);
      }
    }
    /* allgatherv, blocks whose size differs between ranks: rank r sends 1 + r % 3 chars
       (the aggregations cut every block into entries of one size: here 1 byte) */
    {
      char cs[4], cr[64 * 8];
      for (int k = 0; k < 4; k++) cs[k] = (char)(val(me, k, 44) % 127);
      for (int i = 0; i < ns; i++) rc[i] = l.src[i] == MPI_PROC_NULL ? 0 : 1 + l.src[i] % 3, rd[i] = 4 * i;
      memset(cr, -5, sizeof cr);
      MPI_Neighbor_allgatherv(cs, 1 + me % 3, MPI_CHAR, cr, rc, rd, MPI_CHAR, c);
      for (int i = 0; i < ns; i++) {
        for (int k = 0; k < rc[i]; k++)
          CHECK(cr[rd[i] + k] == (char)(val(l.src[i], k, 44) % 127), "%s allgatherv of chars slot %d value %d: %d",
                name, i, k, cr[rd[i] + k]);
        CHECK(cr[rd[i] + 3] == -5, "%s allgatherv of chars wrote past slot %d", name, i);
      }
    }
    /* alltoallv: edge j carries (sender + j) % 3 ints (zero for some), blocks spaced out */
    int sc[64], sd[64];
    for (int j = 0, at = 0; j < nd; j++) {
      sc[j] = (me + j) % 3, sd[j] = at;
      for (int e = 0; e < sc[j]; e++) sb[at + e] = val(me, j, 42 + e);
      at += sc[j] + 1;
    }
    for (int i = 0, at = 0; i < ns; i++) {
      Lists t;
      int j = -1;
      if (l.src[i] != MPI_PROC_NULL) lists_of(c, kind, l.src[i], &t), j = a2a_block(&l, &t, i);
      rc[i] = j >= 0 ? (l.src[i] + j) % 3 : 0, rd[i] = at; /* a rank listed twice gets nothing here */
      at += rc[i] + 2;
    }
    int dupe = 0; /* alltoallv counts for a rank listed twice are ambiguous: skip the call */
    for (int i = 0; i < ns; i++)
      if (l.src[i] != MPI_PROC_NULL) {
        Lists t;
        lists_of(c, kind, l.src[i], &t);
        dupe |= a2a_block(&l, &t, i) < 0;
      }
    int anydupe = 0;
    MPI_Allreduce(&dupe, &anydupe, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    fill(rb, 64 * 8, -5);
    if (!anydupe) MPI_Neighbor_alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, c);
    for (int i = 0; i < ns && !anydupe; i++) {
      if (l.src[i] == MPI_PROC_NULL) continue;
      Lists t;
      lists_of(c, kind, l.src[i], &t);
      const int j = a2a_block(&l, &t, i);
      for (int e = 0; e < rc[i]; e++)
        CHECK(rb[rd[i] + e] == val(l.src[i], j, 42 + e), "%s alltoallv slot %d value %d: %d", name, i, e, rb[rd[i] + e]);
      CHECK(rb[rd[i] + rc[i]] == -5, "%s alltoallv wrote past slot %d", name, i);
    }
    MPI_Datatype strided;
    MPI_Type_vector(3, 1, 2, MPI_INT, &strided);
    MPI_Type_commit(&strided);
    for (int k = 0; k < 6; k++) sb[k] = k % 2 ? -1 : val(me, k / 2, 43);
    fill(rb, 64 * 8, -5);
    MPI_Neighbor_allgather(sb, 1, strided, rb, 3, MPI_INT, c);
    snprintf(what, sizeof what, "%s allgather strided type", name);
    check_allgather(what, &l, rb, 3, 43);
    MPI_Type_free(&strided);
  }
}

/* Block sizes that differ between ranks: rank r sends 1 + r % 3 ints to its successor only. */
static void run_varying(void) {
  MPI_Comm g;
  int s = mod(me - 1), d = mod(me + 1);
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, P > 1, &s, MPI_UNWEIGHTED, P > 1, &d, MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                                 &g);
  int sb[4], rb[4] = {-5, -5, -5, -5};
  const int mine = 1 + me % 3, theirs = 1 + s % 3;
  for (int k = 0; k < mine; k++) sb[k] = val(me, k, 51);
  MPI_Neighbor_allgather(sb, mine, MPI_INT, rb, theirs, MPI_INT, g);
  if (P > 1)
    for (int k = 0; k < theirs; k++) CHECK(rb[k] == val(s, k, 51), "varying sizes: value %d: %d", k, rb[k]);
  MPI_Comm_free(&g);
}

/* The communicator of dist_lists(kind) created with the hint sparsecomm_fixed_counts = true. */
static MPI_Comm hinted(int kind, Lists *l) {
  dist_lists(kind, me, l);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "sparsecomm_fixed_counts", "true");
  MPI_Comm g;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, l->ns, l->src, MPI_UNWEIGHTED, l->nd, l->dst, MPI_UNWEIGHTED, info, 0,
                                 &g);
  MPI_Info_free(&info);
  return g;
}

static int break_promise(void) {
  Lists l;
  MPI_Comm g = hinted(0, &l);
  MPI_Comm_set_errhandler(g, MPI_ERRORS_RETURN);
  int sb[5] = {1, 2, 3, 4, 5}, rb[64 * 5];
  const int first = MPI_Neighbor_allgather(sb, 4, MPI_INT, rb, 4, MPI_INT, g);
  const int again = MPI_Neighbor_allgather(sb, 4, MPI_INT, rb, 4, MPI_INT, g);
  const int second = MPI_Neighbor_allgather(sb, 5, MPI_INT, rb, 5, MPI_INT, g);
  printf("nbr_shapes [rank %d]: first call %s, again %s, call with other counts %s\n", me,
         first == MPI_SUCCESS ? "succeeded" : "failed", again == MPI_SUCCESS ? "succeeded" : "failed",
         second == MPI_SUCCESS ? "succeeded" : "returned an error");
  MPI_Comm_free(&g);
  MPI_Finalize();
  return 0;
}

/* The hints of a ring: fixed counts and `backend`. */
static MPI_Info ring_info(const char *backend) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "sparsecomm_fixed_counts", "true");
  MPI_Info_set(info, "sparsecomm_backend", backend);
  return info;
}

/* A ring (neighbors me - 1 and me + 1, in and out) with the hints `info` (or none). */
static MPI_Comm ring_with(MPI_Info info) {
  const int nb[2] = {mod(me - 1), mod(me + 1)};
  MPI_Comm g;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, nb, MPI_UNWEIGHTED, 2, nb, MPI_UNWEIGHTED, info, 0, &g);
  return g;
}

/* One allgather and one alltoall of ints on ring_with(), values checked. */
static void ring_calls(MPI_Comm g, int round) {
  const int nb[2] = {mod(me - 1), mod(me + 1)};
  int sb[2], rb[2];
  sb[0] = val(me, 0, round), sb[1] = val(me, 1, round);
  fill(rb, 2, -5);
  MPI_Neighbor_allgather(sb, 1, MPI_INT, rb, 1, MPI_INT, g);
  for (int i = 0; i < 2; i++) CHECK(rb[i] == val(nb[i], 0, round), "ring allgather %d slot %d: %d", round, i, rb[i]);
  for (int j = 0; j < 2; j++) sb[j] = me * 1000 + nb[j] + round;  /* the block for destination j */
  fill(rb, 2, -5);
  MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, g);
  for (int i = 0; i < 2; i++)
    CHECK(rb[i] == nb[i] * 1000 + me + round, "ring alltoall %d slot %d: %d", round, i, rb[i]);
}

static int settled_reuse(int n) {
  int reused = 0;
  MPI_Info own = ring_info("mpi");  /* (made once: nothing between a free and a create) */
  for (int round = 0; round < n; round++) {
    MPI_Comm a = ring_with(own);
    ring_calls(a, round);
    ring_calls(a, round + 1);
    const MPI_Comm old = a;
    MPI_Comm_free(&a);
    MPI_Comm b = ring_with(MPI_INFO_NULL);
    reused += b == old;
    ring_calls(b, round + 2);
    MPI_Comm_free(&b);
  }
  MPI_Info_free(&own);
  long all_wrong = 0;
  int all_reused = 0;
  MPI_Allreduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&reused, &all_reused, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0)
    printf("nbr_shapes: settled reuse: %d rounds on %d ranks, a handle came back %d times (over ranks), %ld wrong\n",
           n, P, all_reused, all_wrong);
  MPI_Finalize();
  return all_wrong ? 1 : 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  if (argc > 1 && !strcmp(argv[1], "-break-promise")) return break_promise();
  if (argc > 2 && !strcmp(argv[1], "-settled-reuse")) return settled_reuse(atoi(argv[2]));
  if ((g_testall_bug = mpi_bug_testall_persistent()))
    mpi_bug_say("nbr_shapes",
                "MPI_Testall does not complete a persistent neighborhood collective (MPI_ERR_IN_STATUS with every "
                "status MPI_SUCCESS, or never done)",
                "those rounds complete with MPI_Waitall");
  const char *names[5] = {"ring", "random", "dup+self", "empty rank 0", "self+ring"};
  for (int kind = 0; kind < 5; kind++) {
    Lists l;
    dist_lists(kind, me, &l);
    MPI_Comm g;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, l.ns, l.src, MPI_UNWEIGHTED, l.nd, l.dst, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &g);
    run(g, kind, names[kind]);
    MPI_Comm_free(&g);
  }
  { /* the hint: counts fixed (only the sizes of its first call on this communicator) */
    Lists l;
    MPI_Comm g = hinted(0, &l);
    int sb[4], rb[64 * 4];
    for (int round = 60; round < 64; round++) {
      MPI_Request rq;
      for (int k = 0; k < 4; k++) sb[k] = val(me, k, round);
      fill(rb, 64 * 4, -5);
      if (round % 2) {
        MPI_Ineighbor_allgather(sb, 4, MPI_INT, rb, 4, MPI_INT, g, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
      } else {
        MPI_Neighbor_allgather(sb, 4, MPI_INT, rb, 4, MPI_INT, g);
      }
      check_allgather("fixed counts", &l, rb, 4, round);
    }
    /* the first (blocking) calls agree; the non-blocking ones then run the agreed plans */
    v_suite(g, 0, "fixed counts", 0);
    v_suite(g, 0, "fixed counts", 1);
    v_suite(g, 0, "fixed counts", 1);
    MPI_Comm_free(&g);
    /* hinted, with duplicate and self edges: the alltoall is MPI's own at every call (no
     * broken promise), the allgather the layer's */
    g = hinted(2, &l);
    for (int round = 64; round < 66; round++) {
      int a2a[8], got[64 * 4];
      for (int k = 0; k < 8; k++) a2a[k] = k;
      MPI_Neighbor_alltoall(a2a, 1, MPI_INT, got, 1, MPI_INT, g);
      for (int k = 0; k < 4; k++) sb[k] = val(me, k, round);
      fill(rb, 64 * 4, -5);
      MPI_Neighbor_allgather(sb, 4, MPI_INT, rb, 4, MPI_INT, g);
      check_allgather("fixed counts dup+self", &l, rb, 4, round);
    }
    MPI_Comm_free(&g);
  }
  const int periodic[2][2] = {{1, 1}, {0, 0}};
  for (int v = 0; v < 3; v++) {
    int dims[2] = {0, 0}, nd = v == 2 ? 1 : 2;
    MPI_Dims_create(P, nd, dims);
    MPI_Comm c;
    MPI_Cart_create(MPI_COMM_WORLD, nd, dims, v == 2 ? periodic[0] : periodic[v], 0, &c);
    run(c, 0, v == 0 ? "cart 2-D periodic" : v == 1 ? "cart 2-D non-periodic" : "cart 1-D periodic");
    MPI_Comm_free(&c);
  }
  { /* MPI_Graph_create: a ring (both ways) */
    int *index = malloc(sizeof(int) * (size_t)P), *edges = malloc(sizeof(int) * 2 * (size_t)P), ne = 0;
    for (int r = 0; r < P; r++) {
      if (P > 1) edges[ne++] = (r + 1) % P;
      if (P > 2) edges[ne++] = (r + P - 1) % P;
      index[r] = ne;
    }
    MPI_Comm c;
    MPI_Graph_create(MPI_COMM_WORLD, P, index, edges, 0, &c);
    run(c, 0, "graph ring");
    MPI_Comm_free(&c);
    free(index), free(edges);
  }
  run_varying();
  { /* an allgatherv too large to cut into entries of one odd byte (2^21 + 1 chars per block
       to both ring neighbours): the aggregations' halo pattern would be too large, the
       layer takes the direct gather plan instead; every byte checked */
    Lists l;
    dist_lists(0, me, &l);
    MPI_Comm g;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, l.ns, l.src, MPI_UNWEIGHTED, l.nd, l.dst, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &g);
    const int n = (1 << 21) + 1;
    char *big = malloc((size_t)n), *got = malloc((size_t)n * (size_t)(l.ns + 1));
    int rc[64], rd[64];
    for (int k = 0; k < n; k++) big[k] = (char)((me * 7 + k) % 101);
    for (int i = 0; i < l.ns; i++) rc[i] = n, rd[i] = i * n;
    MPI_Neighbor_allgatherv(big, n, MPI_CHAR, got, rc, rd, MPI_CHAR, g);
    for (int i = 0; i < l.ns; i++) {
      int bad = 0;
      for (int k = 0; k < n; k++) bad += got[(size_t)i * n + k] != (char)((l.src[i] * 7 + k) % 101);
      CHECK(bad == 0, "large allgatherv: slot %d: %d wrong bytes", i, bad);
    }
    free(big), free(got);
    MPI_Comm_free(&g);
  }
  long tot[2] = {checks, wrong}, all[2];
  MPI_Allreduce(tot, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0) printf("nbr_shapes: %ld values checked on %d ranks, %ld wrong\n", all[0], P, all[1]);
  MPI_Finalize();
  return all[1] ? 1 : 0;
}
