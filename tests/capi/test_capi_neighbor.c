/* SPC_Neighbor_alltoallv_init (and _ext, _lists) against MPI_Neighbor_alltoallv on the
 * same distributed graph communicator, for every backend, several region layouts and
 * combining options, over graphs with repeated edges, self-loops, empty neighborhoods,
 * unsorted neighbor lists, overlapping send blocks, scattered receive blocks, zero
 * counts, and datatypes of 8, 6, 4 and 3 bytes. Several executions per request, with the
 * send buffer changing between them; recvbuf positions outside the blocks must keep
 * their sentinel (compared byte for byte with MPI's result). */
#include "capi_test.h"

typedef struct {
  const char* backend;
  const char* k;
  const char* theta;
  const char* aware;
} Config;

#ifdef SPC_TEST_BROKEN_BACKEND
/* tests/oracles: the same checks on the deliberately broken backend only; they must fail. */
void spc_test_register_broken_backends(void);
static const Config configs[] = {{"broken_nan", NULL, NULL, NULL}};
#elif defined(SPC_TEST_OPEN_BACKEND)
/* tests/open_backend: a backend defined outside src/, selected by the info key. */
void spc_test_register_open_backend(void);
static const Config configs[] = {{"p2p_sends_first", NULL, NULL, NULL}, {"p2p", NULL, NULL, NULL}};
#else
static const Config configs[] = {
    {"p2p", NULL, NULL, NULL},          {"neighbor", NULL, NULL, NULL},       {"aggregated", NULL, NULL, NULL},
    {"aggregated_dedup", NULL, NULL, NULL}, {"aggregated_2step", NULL, NULL, NULL}, {"combined", "2", "1", "false"},
    {"combined", "3", "1", "true"},
};
#endif
enum { NCONFIGS = sizeof(configs) / sizeof(configs[0]) };
static const char* regions[] = {"ppn:2", "cyclic:2"};

/* Multiplicity of the edge s -> d in graph g (2 = a repeated edge). */
static int mult(int s, int d, int g) {
  const int p = capi_size;
  switch (g) {
    case 0: { /* random multigraph with self-loops */
      const int h = (int)(capi_hash(s, d, g, 1) % 100);
      return h < 45 ? 1 + (h < 12) : 0;
    }
    case 1: /* simple, sorted lists, no self-loops */
      return s != d && (d == (s + 1) % p || d == (s + 2) % p);
    default: /* the lower half sends to the upper half only: empty neighborhoods */
      return s < p / 2 && d >= p / 2;
  }
}

/* Graph g; the lists of every graph but 1 shuffled. */
static Graph make_graph(int g) { return capi_graph(g, mult, g != 1, 100 + (uint64_t)g, 200 + (uint64_t)g, 3); }

/* Occurrence index of list[i] among list[0..i]. */
static int occurrence(const int* list, int i) {
  int k = 0;
  for (int j = 0; j < i; ++j) k += list[j] == list[i];
  return k;
}

/* Count of the k-th edge s -> d: 0..3. */
static int ecount(int s, int d, int k, int g) { return (int)(capi_hash(s, d, k, 50 + g) % 4); }

typedef struct {
  int *scounts, *sdispls, *rcounts, *rdispls;
  int nsend, nrecv; /* elements in sendbuf / recvbuf */
} Layout;

/* Overlapping send blocks at hashed positions; receive blocks back to front with gaps. */
static Layout make_layout(const Graph* G) {
  Layout L;
  const int me = capi_rank;
  L.scounts = capi_xmalloc(sizeof(int) * (size_t)(G->outdeg + 1));
  L.sdispls = capi_xmalloc(sizeof(int) * (size_t)(G->outdeg + 1));
  L.rcounts = capi_xmalloc(sizeof(int) * (size_t)(G->indeg + 1));
  L.rdispls = capi_xmalloc(sizeof(int) * (size_t)(G->indeg + 1));
  L.nsend = 2 * G->outdeg + 4;
  for (int i = 0; i < G->outdeg; ++i) {
    L.scounts[i] = ecount(me, G->dsts[i], occurrence(G->dsts, i), G->g);
    L.sdispls[i] = (int)(capi_hash(me, i, G->g, 5) % (uint64_t)(L.nsend - L.scounts[i] + 1));
  }
  int pos = 1;
  for (int j = G->indeg - 1; j >= 0; --j) {
    L.rcounts[j] = ecount(G->srcs[j], me, occurrence(G->srcs, j), G->g);
    L.rdispls[j] = pos;
    pos += L.rcounts[j] + 1;
  }
  L.nrecv = pos + 1;
  return L;
}

static void free_layout(Layout* L) {
  free(L->scounts), free(L->sdispls), free(L->rcounts), free(L->rdispls);
}

static MPI_Info config_info(const Config* c, const char* region) {
  MPI_Info info = capi_backend_info(c->backend, region, c->k, c->theta, c->aware);
#ifdef SPC_TEST_OPEN_BACKEND
  /* The open backend's own option, passed through by the C API (and ignored by p2p, which
   * does not declare it, as every call ignores keys it does not use). */
  MPI_Info_set(info, "sparsecomm_tag", "99");
#endif
  return info;
}

static void fill_bytes(unsigned char* buf, size_t n, int it) {
  for (size_t b = 0; b < n; ++b) buf[b] = (unsigned char)capi_hash(capi_rank, b, it, 7);
}

/* One backend configuration on one graph and datatype; `lists`: the explicit-lists form
 * on MPI_COMM_WORLD instead of the graph communicator. */
static void run_case(const Graph* G, const Layout* L, MPI_Datatype type, const char* tname, const Config* c,
                     const char* region, int lists) {
  int esz = 0;
  MPI_Type_size(type, &esz);
  const size_t sbytes = (size_t)L->nsend * (size_t)esz, rbytes = (size_t)L->nrecv * (size_t)esz;
  unsigned char *sendbuf = capi_xmalloc(sbytes), *recvbuf = capi_xmalloc(rbytes), *ref = capi_xmalloc(rbytes);
  memset(recvbuf, 0xAB, rbytes);
  MPI_Info info = config_info(c, region);
  SPC_Request req = SPC_REQUEST_NULL;
  int rc;
  if (lists)
    rc = SPC_Neighbor_alltoallv_init_lists(G->indeg, G->srcs, G->outdeg, G->dsts, sendbuf, L->scounts, L->sdispls,
                                           NULL, type, recvbuf, L->rcounts, L->rdispls, NULL, type, MPI_COMM_WORLD,
                                           info, &req);
  else
    rc = SPC_Neighbor_alltoallv_init(sendbuf, L->scounts, L->sdispls, type, recvbuf, L->rcounts, L->rdispls, type,
                                     G->comm, info, &req);
  char what[200];
  snprintf(what, sizeof what, "graph %d %s %s k=%s %s%s", G->g, tname, c->backend, c->k ? c->k : "-", region,
           lists ? " lists" : "");
  CHECK_RC(rc, SPC_SUCCESS, what);
  if (rc == SPC_SUCCESS) {
    CHECK_BACKEND(req, c->backend, what);
    for (int it = 0; it < 3; ++it) {
      fill_bytes(sendbuf, sbytes, it);
      memset(ref, 0xAB, rbytes);
      MPI_Neighbor_alltoallv(sendbuf, L->scounts, L->sdispls, type, ref, L->rcounts, L->rdispls, type, G->comm);
      int r1 = SPC_Start(&req);
      int r2 = SPC_Wait(&req, MPI_STATUS_IGNORE);
      CHECK(r1 == SPC_SUCCESS && r2 == SPC_SUCCESS, "%s: start/wait", what);
      CHECK(memcmp(recvbuf, ref, rbytes) == 0, "%s: execution %d differs from MPI_Neighbor_alltoallv", what, it);
    }
    CHECK_RC(SPC_Request_free(&req), SPC_SUCCESS, what);
    CHECK(req == SPC_REQUEST_NULL, "%s: freed request is null", what);
  }
  MPI_Info_free(&info);
  free(sendbuf), free(recvbuf), free(ref);
}

/* _ext: values with global ids (rank r owns ids r*1000 + i, value id*10 + iteration). Each
 * edge carries a subset of the sender's ids (sometimes one twice), packed per edge as MPI
 * Advance's users do; the same id sent to several ranks of one region crosses once with
 * aggregated_dedup. */
static int chosen(int s, int d, int k, int g, int64_t* ids) {
  int n = 0;
  for (int j = 0; j < 6; ++j)
    if (capi_hash(s, d, k * 7 + j, 300 + g) % 3 == 0) ids[n++] = (int64_t)s * 1000 + j;
  if (n > 0 && capi_hash(s, d, k, 400 + g) % 4 == 0) ids[n++] = ids[0]; /* a repeated id */
  return n;
}

static void run_ext(const Graph* G, const Config* c, const char* region, int lists) {
  const int me = capi_rank;
  int64_t ids[8];
  int *scounts = capi_xmalloc(sizeof(int) * (size_t)(G->outdeg + 1)),
      *sdispls = capi_xmalloc(sizeof(int) * (size_t)(G->outdeg + 1)),
      *rcounts = capi_xmalloc(sizeof(int) * (size_t)(G->indeg + 1)),
      *rdispls = capi_xmalloc(sizeof(int) * (size_t)(G->indeg + 1));
  int nsend = 0;
  for (int i = 0; i < G->outdeg; ++i) {
    scounts[i] = chosen(me, G->dsts[i], occurrence(G->dsts, i), G->g, ids);
    sdispls[i] = nsend;
    nsend += scounts[i];
  }
  int pos = 2;
  for (int j = G->indeg - 1; j >= 0; --j) {
    rcounts[j] = chosen(G->srcs[j], me, occurrence(G->srcs, j), G->g, ids);
    rdispls[j] = pos;
    pos += rcounts[j] + 2;
  }
  const int nrecv = pos;
  int64_t *gs = capi_xmalloc(sizeof(int64_t) * (size_t)(nsend + 1)), *gr = capi_xmalloc(sizeof(int64_t) * (size_t)nrecv);
  for (int i = 0; i < G->outdeg; ++i) {
    chosen(me, G->dsts[i], occurrence(G->dsts, i), G->g, ids);
    for (int e = 0; e < scounts[i]; ++e) gs[sdispls[i] + e] = ids[e];
  }
  for (int q = 0; q < nrecv; ++q) gr[q] = -1;
  for (int j = 0; j < G->indeg; ++j) {
    chosen(G->srcs[j], me, occurrence(G->srcs, j), G->g, ids);
    for (int e = 0; e < rcounts[j]; ++e) gr[rdispls[j] + e] = ids[e];
  }
  double *sendbuf = capi_xmalloc(sizeof(double) * (size_t)(nsend + 1)),
         *recvbuf = capi_xmalloc(sizeof(double) * (size_t)nrecv), *ref = capi_xmalloc(sizeof(double) * (size_t)nrecv);
  for (int q = 0; q < nrecv; ++q) recvbuf[q] = -1.0;
  MPI_Info info = config_info(c, region);
  SPC_Request req = SPC_REQUEST_NULL;
  int rc;
  if (lists)
    rc = SPC_Neighbor_alltoallv_init_lists(G->indeg, G->srcs, G->outdeg, G->dsts, sendbuf, scounts, sdispls, gs,
                                           MPI_DOUBLE, recvbuf, rcounts, rdispls, gr, MPI_DOUBLE, MPI_COMM_WORLD, info,
                                           &req);
  else
    rc = SPC_Neighbor_alltoallv_init_ext(sendbuf, scounts, sdispls, gs, MPI_DOUBLE, recvbuf, rcounts, rdispls, gr,
                                         MPI_DOUBLE, G->comm, info, &req);
  char what[200];
  snprintf(what, sizeof what, "ext graph %d %s k=%s %s%s", G->g, c->backend, c->k ? c->k : "-", region,
           lists ? " lists" : "");
  CHECK_RC(rc, SPC_SUCCESS, what);
  if (rc == SPC_SUCCESS) {
    for (int it = 0; it < 3; ++it) {
      for (int pos2 = 0; pos2 < nsend; ++pos2) sendbuf[pos2] = (double)gs[pos2] * 10 + it;
      for (int q = 0; q < nrecv; ++q) ref[q] = -1.0;
      MPI_Neighbor_alltoallv(sendbuf, scounts, sdispls, MPI_DOUBLE, ref, rcounts, rdispls, MPI_DOUBLE, G->comm);
      int r1 = SPC_Start(&req);
      int r2 = SPC_Wait(&req, MPI_STATUS_IGNORE);
      CHECK(r1 == SPC_SUCCESS && r2 == SPC_SUCCESS, "%s: start/wait", what);
      CHECK(memcmp(recvbuf, ref, sizeof(double) * (size_t)nrecv) == 0, "%s: execution %d differs from MPI", what, it);
    }
    CHECK_RC(SPC_Request_free(&req), SPC_SUCCESS, what);
  }
  MPI_Info_free(&info);
  free(scounts), free(sdispls), free(rcounts), free(rdispls), free(gs), free(gr), free(sendbuf), free(recvbuf),
      free(ref);
}

int main(int argc, char** argv) {
  capi_init(&argc, &argv);
#ifdef SPC_TEST_BROKEN_BACKEND
  spc_test_register_broken_backends();
#elif defined(SPC_TEST_OPEN_BACKEND)
  spc_test_register_open_backend();
#endif
  MPI_Datatype short3, char3;
  MPI_Type_contiguous(3, MPI_SHORT, &short3);
  MPI_Type_contiguous(3, MPI_CHAR, &char3);
  MPI_Type_commit(&short3);
  MPI_Type_commit(&char3);
  MPI_Datatype types[] = {MPI_DOUBLE, short3, MPI_INT, char3};
  const char* tnames[] = {"double", "short3", "int", "char3"};
  for (int g = 0; g < 3; ++g) {
    Graph G = make_graph(g);
    Layout L = make_layout(&G);
    for (int ti = 0; ti < (g == 0 ? 4 : 1); ++ti)
      for (int ci = 0; ci < NCONFIGS; ++ci)
        for (int ri = 0; ri < 2; ++ri) run_case(&G, &L, types[ti], tnames[ti], &configs[ci], regions[ri], 0);
    /* Explicit lists on MPI_COMM_WORLD. */
    for (int ci = 0; ci < NCONFIGS; ++ci) run_case(&G, &L, MPI_DOUBLE, "double", &configs[ci], "ppn:2", 1);
    /* Global ids. */
    for (int ci = 0; ci < NCONFIGS; ++ci)
      for (int ri = 0; ri < 2; ++ri) run_ext(&G, &configs[ci], regions[ri], 0);
    run_ext(&G, &configs[NCONFIGS > 3 ? 3 : 0], "ppn:2", 1);
    free_layout(&L);
    capi_free_graph(&G);
  }
  /* Defaults: MPI_INFO_NULL runs on p2p. */
  {
    Graph G = make_graph(0);
    Layout L = make_layout(&G);
    double *s = capi_xmalloc(sizeof(double) * (size_t)L.nsend), *r = capi_xmalloc(sizeof(double) * (size_t)L.nrecv);
    memset(r, 0, sizeof(double) * (size_t)L.nrecv);
    SPC_Request req;
    int rc = SPC_Neighbor_alltoallv_init(s, L.scounts, L.sdispls, MPI_DOUBLE, r, L.rcounts, L.rdispls, MPI_DOUBLE,
                                         G.comm, MPI_INFO_NULL, &req);
    CHECK_RC(rc, SPC_SUCCESS, "MPI_INFO_NULL");
    if (rc == SPC_SUCCESS) {
      CHECK_BACKEND(req, "p2p", "default backend (MPI_INFO_NULL)");
      /* Freeing an active request completes it. */
      for (int i = 0; i < L.nsend; ++i) s[i] = i + 0.5;
      CHECK_RC(SPC_Start(&req), SPC_SUCCESS, "start");
      CHECK_RC(SPC_Request_free(&req), SPC_SUCCESS, "free while active");
      double* ref = capi_xmalloc(sizeof(double) * (size_t)L.nrecv);
      memcpy(ref, r, sizeof(double) * (size_t)L.nrecv);
      MPI_Neighbor_alltoallv(s, L.scounts, L.sdispls, MPI_DOUBLE, ref, L.rcounts, L.rdispls, MPI_DOUBLE, G.comm);
      CHECK(memcmp(ref, r, sizeof(double) * (size_t)L.nrecv) == 0, "free of an active request delivered the data");
      free(ref);
    }
    free(s), free(r);
    free_layout(&L);
    capi_free_graph(&G);
  }
  MPI_Type_free(&short3);
  MPI_Type_free(&char3);
  return capi_finish();
}
