/* SPC_Neighbor_allgather_init / SPC_Neighbor_allgatherv_init (and _lists) against
 * MPI_Neighbor_allgather(v) on the same distributed graph communicator, for every gather
 * backend (p2p persistent or not, neighbor, combined with several group options) and two
 * region layouts, over graphs with repeated edges, self-loops, unsorted lists and empty
 * neighborhoods, with blocks of different sizes (including 0) and scattered receive
 * blocks. */
#include "capi_test.h"

typedef struct {
  const char* backend;
  const char* k;
  const char* theta;
  const char* aware;
  const char* persistent;
} Config;

static const Config configs[] = {
    {"p2p", NULL, NULL, NULL, "true"},        {"p2p", NULL, NULL, NULL, "false"},
    {"neighbor", NULL, NULL, NULL, NULL},      {"combined", "2", "1", "false", NULL},
    {"combined", "4", "1", "true", NULL},      {"combined", "3", "2", "false", NULL},
};
enum { NCONFIGS = sizeof(configs) / sizeof(configs[0]) };
static const char* regions[] = {"ppn:2", "ppn:3"};

static int mult(int s, int d, int g) {
  const int p = capi_size;
  switch (g) {
    case 0: {
      const int h = (int)(capi_hash(s, d, g, 11) % 100);
      return h < 50 ? 1 + (h < 10) : 0;
    }
    case 1: /* symmetric ring of radius 2, sorted, no self-loops (the staging-free path) */
      return s != d && (d == (s + 1) % p || d == (s + 2) % p || s == (d + 1) % p || s == (d + 2) % p);
    default: /* everyone sends to rank 0 only */
      return d == 0 && s != 0;
  }
}

/* Graph g; graph 0's lists shuffled. */
static Graph make_graph(int g) { return capi_graph(g, mult, g == 0, 1, 2, 13); }

static MPI_Info config_info(const Config* c, const char* region) {
  MPI_Info info = capi_backend_info(c->backend, region, c->k, c->theta, c->aware);
  if (c->persistent) MPI_Info_set(info, "sparsecomm_persistent", c->persistent);
  return info;
}

static int block_count(int r, int varying) { return varying ? (r * 5 + 1) % 4 : 3; } /* 0..3 */

static void run_case(const Graph* G, const Config* c, const char* region, int varying, int lists) {
  const int me = capi_rank;
  const int scount = block_count(me, varying);
  int *rcounts = capi_xmalloc(sizeof(int) * (size_t)(G->indeg + 1)),
      *displs = capi_xmalloc(sizeof(int) * (size_t)(G->indeg + 1));
  int total = 0;
  if (varying) { /* back to front with gaps */
    int pos = 1;
    for (int j = G->indeg - 1; j >= 0; --j) rcounts[j] = block_count(G->srcs[j], 1), displs[j] = pos, pos += rcounts[j] + 1;
    total = pos + 1;
  } else {
    for (int j = 0; j < G->indeg; ++j) rcounts[j] = scount, displs[j] = j * scount;
    total = G->indeg * scount;
  }
  double *sendbuf = capi_xmalloc(sizeof(double) * 4), *recvbuf = capi_xmalloc(sizeof(double) * (size_t)(total + 1)),
         *ref = capi_xmalloc(sizeof(double) * (size_t)(total + 1));
  for (int q = 0; q < total; ++q) recvbuf[q] = -1.0;
  MPI_Info info = config_info(c, region);
  SPC_Request req = SPC_REQUEST_NULL;
  int rc;
  if (lists)
    rc = SPC_Neighbor_allgatherv_init_lists(G->indeg, G->srcs, G->outdeg, G->dsts, sendbuf, scount, MPI_DOUBLE,
                                            recvbuf, rcounts, displs, MPI_DOUBLE, MPI_COMM_WORLD, info, &req);
  else if (varying)
    rc = SPC_Neighbor_allgatherv_init(sendbuf, scount, MPI_DOUBLE, recvbuf, rcounts, displs, MPI_DOUBLE, G->comm, info,
                                      &req);
  else
    rc = SPC_Neighbor_allgather_init(sendbuf, scount, MPI_DOUBLE, recvbuf, scount, MPI_DOUBLE, G->comm, info, &req);
  char what[200];
  snprintf(what, sizeof what, "graph %d %s k=%s theta=%s %s persistent=%s %s%s", G->g, c->backend, c->k ? c->k : "-",
           c->theta ? c->theta : "-", region, c->persistent ? c->persistent : "-",
           varying ? "allgatherv" : "allgather", lists ? " lists" : "");
  CHECK_RC(rc, SPC_SUCCESS, what);
  if (rc == SPC_SUCCESS) {
    CHECK_BACKEND(req, c->backend, what);
    for (int it = 0; it < 3; ++it) {
      for (int i = 0; i < scount; ++i) sendbuf[i] = me * 100.0 + i + 0.125 * it;
      for (int q = 0; q < total; ++q) ref[q] = -1.0;
      if (varying || lists)
        MPI_Neighbor_allgatherv(sendbuf, scount, MPI_DOUBLE, ref, rcounts, displs, MPI_DOUBLE, G->comm);
      else
        MPI_Neighbor_allgather(sendbuf, scount, MPI_DOUBLE, ref, scount, MPI_DOUBLE, G->comm);
      int r1 = SPC_Start(&req), r2 = SPC_Wait(&req, MPI_STATUS_IGNORE);
      CHECK(r1 == SPC_SUCCESS && r2 == SPC_SUCCESS, "%s: start/wait", what);
      CHECK(memcmp(recvbuf, ref, sizeof(double) * (size_t)total) == 0, "%s: execution %d differs from MPI", what, it);
    }
    CHECK_RC(SPC_Request_free(&req), SPC_SUCCESS, what);
  }
  MPI_Info_free(&info);
  free(rcounts), free(displs), free(sendbuf), free(recvbuf), free(ref);
}

int main(int argc, char** argv) {
  capi_init(&argc, &argv);
  for (int g = 0; g < 3; ++g) {
    Graph G = make_graph(g);
    for (int ci = 0; ci < NCONFIGS; ++ci)
      for (int ri = 0; ri < 2; ++ri)
        for (int varying = 0; varying < 2; ++varying) run_case(&G, &configs[ci], regions[ri], varying, 0);
    for (int ci = 0; ci < NCONFIGS; ++ci) run_case(&G, &configs[ci], "ppn:2", 1, 1);
    capi_free_graph(&G);
  }
  return capi_finish();
}
