/* A program written the way MPI Advance's own tests use its API (the halo exchange of a
 * row-distributed sparse matrix), using only the names of mpi_advance_compat.h (plus MPI
 * for the reference answers): MPIL_Alltoall_crs / MPIL_Alltoallv_crs for every CRS
 * algorithm, MPIL_Neighbor_alltoallv and MPIL_Neighbor_alltoallv_init(_ext)(_topo) for
 * every neighborhood algorithm, compared with MPI_Neighbor_alltoallv; then the sparsecomm
 * extensions (per-communicator and per-call sparsecomm_* options). */
#include <mpi.h>

#include "capi_test.h"
#include "mpi_advance_compat.h"

enum { NLOCAL = 10 };

/* Rank r needs column NLOCAL*s + i of rank s. */
static int needs(int r, int s, int i) {
  return r != s && capi_hash(r, s, 0, 21) % 100 < 60 && capi_hash(r, s, i, 22) % 3 == 0;
}

typedef struct {
  int n_msgs, size_msgs;
  int *procs, *counts, *ptr, *idx; /* idx: local indices (send) */
  long* cols;                      /* global columns (recv: off_proc_columns) */
} CommPkg;

/* Rank me's package in one direction: recv (from each rank q, the global columns of q that me
 * needs) or send (to each rank q, the local indices of me that q needs). */
static CommPkg make_pkg(int me, int p, int recv) {
  CommPkg c;
  memset(&c, 0, sizeof c);
  c.procs = capi_xmalloc(sizeof(int) * (size_t)p), c.counts = capi_xmalloc(sizeof(int) * (size_t)p);
  c.ptr = capi_xmalloc(sizeof(int) * (size_t)(p + 1));
  if (recv) c.cols = capi_xmalloc(sizeof(long) * (size_t)(p * NLOCAL));
  else c.idx = capi_xmalloc(sizeof(int) * (size_t)(p * NLOCAL));
  c.ptr[0] = 0;
  for (int q = 0; q < p; ++q) {
    int n = 0;
    for (int i = 0; i < NLOCAL; ++i) {
      if (!(recv ? needs(me, q, i) : needs(q, me, i))) continue;
      if (recv) c.cols[c.size_msgs + n++] = (long)NLOCAL * q + i;
      else c.idx[c.size_msgs + n++] = i;
    }
    if (!n) continue;
    c.procs[c.n_msgs] = q, c.counts[c.n_msgs] = n;
    c.size_msgs += n;
    c.ptr[++c.n_msgs] = c.size_msgs;
  }
  return c;
}
static CommPkg recv_pkg(int me, int p) { return make_pkg(me, p, 1); }
static CommPkg send_pkg(int me, int p) { return make_pkg(me, p, 0); }

static void free_pkg(CommPkg* c) { free(c->procs), free(c->counts), free(c->ptr), free(c->idx), free(c->cols); }

static void test_crs(MPIL_Comm* xcomm, MPIL_Info* xinfo, const CommPkg* R, const CommPkg* S, int first_col) {
  /* Variable size: every rank tells the owners which columns it needs. */
  const int vmethods[] = {ALLTOALLV_CRS_NONBLOCKING, ALLTOALLV_CRS_NONBLOCKING_LOC, ALLTOALLV_CRS_PERSONALIZED,
                          ALLTOALLV_CRS_PERSONALIZED_LOC, 42 /* invalid: the default */};
  for (int m = 0; m < 5; ++m) {
    MPIL_Set_alltoallv_crs((enum AlltoallvCRSMethod)vmethods[m]);
    int n_recvs = -1, s_recvs = -1, *src = NULL, *recvcounts = NULL, *rdispls = NULL;
    long* recvvals = NULL;
    int rc = MPIL_Alltoallv_crs(R->n_msgs, R->size_msgs, R->procs, R->counts, R->ptr, MPI_LONG, R->cols, &n_recvs,
                                &s_recvs, &src, &recvcounts, &rdispls, MPI_LONG, (void**)&recvvals, xinfo, xcomm);
    CHECK_RC(rc, MPI_SUCCESS, "MPIL_Alltoallv_crs");
    if (rc == MPI_SUCCESS) {
      int ok = n_recvs == S->n_msgs && s_recvs == S->size_msgs;
      for (int i = 0; ok && i < n_recvs; ++i) {
        ok = src[i] == S->procs[i] && recvcounts[i] == S->counts[i];
        for (int j = 0; ok && j < recvcounts[i]; ++j) ok = recvvals[rdispls[i] + j] - first_col == S->idx[S->ptr[i] + j];
      }
      CHECK(ok, "MPIL_Alltoallv_crs method %d: the owners learn who needs which columns", vmethods[m]);
    }
    MPIL_Free(src), MPIL_Free(recvcounts), MPIL_Free(rdispls), MPIL_Free(recvvals);
  }
  /* Fixed size: one int per message, the number of columns needed. */
  const int methods[] = {ALLTOALL_CRS_RMA, ALLTOALL_CRS_NONBLOCKING, ALLTOALL_CRS_NONBLOCKING_LOC,
                         ALLTOALL_CRS_PERSONALIZED, ALLTOALL_CRS_PERSONALIZED_LOC};
  for (int m = 0; m < 5; ++m) {
    MPIL_Set_alltoall_crs((enum AlltoallCRSMethod)methods[m]);
    int n_recvs = -1, *src = NULL, *recvvals = NULL;
    int rc = MPIL_Alltoall_crs(R->n_msgs, R->procs, 1, MPI_INT, R->counts, &n_recvs, &src, 1, MPI_INT,
                               (void**)&recvvals, xinfo, xcomm);
    CHECK_RC(rc, MPI_SUCCESS, "MPIL_Alltoall_crs");
    if (rc == MPI_SUCCESS) {
      int ok = n_recvs == S->n_msgs;
      for (int i = 0; ok && i < n_recvs; ++i) ok = src[i] == S->procs[i] && recvvals[i] == S->counts[i];
      CHECK(ok, "MPIL_Alltoall_crs method %d", methods[m]);
    }
    MPIL_Free(src), MPIL_Free(recvvals);
  }
}

typedef struct {
  const CommPkg *R, *S;
  int* send_vals;     /* owned values */
  int* a2av_send;     /* packed per destination */
  long* send_indices; /* global column of each packed value */
  int *pmpi_recv, *mpil_recv;
  MPI_Comm std_comm;
} Halo;

static void pack(Halo* h, int it, int first_col) {
  for (int i = 0; i < NLOCAL; ++i) h->send_vals[i] = first_col + i + 1000 * it;
  for (int k = 0; k < h->S->size_msgs; ++k) {
    h->a2av_send[k] = h->send_vals[h->S->idx[k]];
    h->send_indices[k] = first_col + h->S->idx[k];
  }
  for (int k = 0; k < h->R->size_msgs; ++k) h->pmpi_recv[k] = -1, h->mpil_recv[k] = -1;
  MPI_Neighbor_alltoallv(h->a2av_send, h->S->counts, h->S->ptr, MPI_INT, h->pmpi_recv, h->R->counts, h->R->ptr,
                         MPI_INT, h->std_comm);
}

static int same(const Halo* h) {
  return h->R->size_msgs == 0 || memcmp(h->pmpi_recv, h->mpil_recv, sizeof(int) * (size_t)h->R->size_msgs) == 0;
}

/* Starts, waits (twice, with new values in between) and frees a persistent request. */
static void run_request(Halo* h, MPIL_Request* req, int first_col, const char* what) {
  /* As MPI Advance's own tests do: ask for reordering during the first exchange. A no-op
   * here (values land in displacement order from the start), so both executions equal MPI. */
  CHECK_RC(MPIL_Request_reorder(req, 1), MPI_SUCCESS, what);
  for (int it = 1; it <= 2; ++it) {
    pack(h, it, first_col);
    MPI_Status status;
    CHECK_RC(MPIL_Start(req), MPI_SUCCESS, what);
    CHECK_RC(MPIL_Wait(req, &status), MPI_SUCCESS, what);
    CHECK(same(h), "%s: execution %d equals MPI_Neighbor_alltoallv", what, it);
  }
  CHECK_RC(MPIL_Request_free(&req), MPI_SUCCESS, what);
}

static void test_neighbor(MPIL_Info* xinfo, const CommPkg* R, const CommPkg* S, int first_col) {
  Halo h;
  h.R = R, h.S = S;
  h.send_vals = capi_xmalloc(sizeof(int) * NLOCAL);
  h.a2av_send = capi_xmalloc(sizeof(int) * (size_t)(S->size_msgs + 1));
  h.send_indices = capi_xmalloc(sizeof(long) * (size_t)(S->size_msgs + 1));
  h.pmpi_recv = capi_xmalloc(sizeof(int) * (size_t)(R->size_msgs + 1));
  h.mpil_recv = capi_xmalloc(sizeof(int) * (size_t)(R->size_msgs + 1));
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, R->n_msgs, R->procs, MPI_UNWEIGHTED, S->n_msgs, S->procs,
                                 MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &h.std_comm);

  MPIL_Comm* xcomm;
  /* Empty lists as NULL pointers, as std::vector::data() gives them. */
  CHECK_RC(MPIL_Dist_graph_create_adjacent(MPI_COMM_WORLD, R->n_msgs, R->n_msgs ? R->procs : NULL, MPI_UNWEIGHTED,
                                           S->n_msgs, S->n_msgs ? S->procs : NULL, MPI_UNWEIGHTED, xinfo, 0, &xcomm),
           MPI_SUCCESS, "MPIL_Dist_graph_create_adjacent");
  CHECK_RC(MPIL_Comm_update_locality(xcomm, 2), MPI_SUCCESS, "MPIL_Comm_update_locality");

  /* Blocking, every algorithm (and the old spelling of the setter). */
  const int bmethods[] = {NEIGHBOR_ALLTOALLV_STANDARD, NEIGHBOR_ALLTOALLV_LOCALITY, NEIGHBOR_ALLTOALLV_COLL_A2A};
  for (int m = 0; m < 3; ++m) {
    if (m == 1) MPIL_Set_alltoallv_neighbor_alogorithm((enum NeighborAlltoallvMethod)bmethods[m]);
    else MPIL_Set_alltoallv_neighbor_algorithm((enum NeighborAlltoallvMethod)bmethods[m]);
    pack(&h, 0, first_col);
    int rc = MPIL_Neighbor_alltoallv(h.a2av_send, S->counts, S->ptr, MPI_INT, h.mpil_recv, R->counts, R->ptr, MPI_INT,
                                     xcomm);
    CHECK_RC(rc, MPI_SUCCESS, "MPIL_Neighbor_alltoallv");
    CHECK(same(&h), "MPIL_Neighbor_alltoallv method %d equals MPI", bmethods[m]);
  }

  /* Persistent, every algorithm, plain and _ext. */
  const int imethods[] = {NEIGHBOR_ALLTOALLV_INIT_STANDARD, NEIGHBOR_ALLTOALLV_INIT_LOCALITY,
                          NEIGHBOR_ALLTOALLV_INIT_COLL_A2A, NEIGHBOR_ALLTOALLV_INIT_RMA, NEIGHBOR_ALLTOALLV_INIT_PSCW};
  for (int m = 0; m < 5; ++m) {
    MPIL_Set_alltoallv_neighbor_init_algorithm((enum NeighborAlltoallvInitMethod)imethods[m]);
    MPIL_Request* req = NULL;
    int rc = MPIL_Neighbor_alltoallv_init(h.a2av_send, S->counts, S->ptr, MPI_INT, h.mpil_recv, R->counts, R->ptr,
                                          MPI_INT, xcomm, xinfo, &req);
    CHECK_RC(rc, MPI_SUCCESS, "MPIL_Neighbor_alltoallv_init");
    if (rc == MPI_SUCCESS) run_request(&h, req, first_col, "MPIL_Neighbor_alltoallv_init");
    pack(&h, 0, first_col); /* send_indices */
    rc = MPIL_Neighbor_alltoallv_init_ext(h.a2av_send, S->counts, S->ptr, h.send_indices, MPI_INT, h.mpil_recv,
                                          R->counts, R->ptr, R->cols, MPI_INT, xcomm, xinfo, &req);
    CHECK_RC(rc, MPI_SUCCESS, "MPIL_Neighbor_alltoallv_init_ext");
    if (rc == MPI_SUCCESS) run_request(&h, req, first_col, "MPIL_Neighbor_alltoallv_init_ext");
  }

  /* Topology objects (on the global communicator). */
  MPIL_Topo *topo = NULL, *topo2 = NULL;
  CHECK_RC(MPIL_Topo_from_neighbor_comm(xcomm, &topo), MPI_SUCCESS, "MPIL_Topo_from_neighbor_comm");
  CHECK_RC(MPIL_Topo_init(R->n_msgs, R->procs, MPI_UNWEIGHTED, S->n_msgs, S->procs, MPI_UNWEIGHTED, xinfo, &topo2),
           MPI_SUCCESS, "MPIL_Topo_init");
  MPIL_Set_alltoallv_neighbor_init_algorithm(NEIGHBOR_ALLTOALLV_INIT_LOCALITY);
  for (int t = 0; t < 2; ++t) {
    MPIL_Topo* tp = t ? topo2 : topo;
    MPIL_Request* req = NULL;
    int rc = MPIL_Neighbor_alltoallv_init_topo(h.a2av_send, S->counts, S->ptr, MPI_INT, h.mpil_recv, R->counts,
                                               R->ptr, MPI_INT, tp, xcomm, xinfo, &req);
    CHECK_RC(rc, MPI_SUCCESS, "MPIL_Neighbor_alltoallv_init_topo");
    if (rc == MPI_SUCCESS) run_request(&h, req, first_col, "MPIL_Neighbor_alltoallv_init_topo");
    pack(&h, 0, first_col);
    rc = MPIL_Neighbor_alltoallv_init_ext_topo(h.a2av_send, S->counts, S->ptr, h.send_indices, MPI_INT, h.mpil_recv,
                                               R->counts, R->ptr, R->cols, MPI_INT, tp, xcomm, xinfo, &req);
    CHECK_RC(rc, MPI_SUCCESS, "MPIL_Neighbor_alltoallv_init_ext_topo");
    if (rc == MPI_SUCCESS) run_request(&h, req, first_col, "MPIL_Neighbor_alltoallv_init_ext_topo");
    pack(&h, 0, first_col);
    rc = MPIL_Neighbor_alltoallv_topo(h.a2av_send, S->counts, S->ptr, MPI_INT, h.mpil_recv, R->counts, R->ptr, MPI_INT,
                                      tp, xcomm);
    CHECK_RC(rc, MPI_SUCCESS, "MPIL_Neighbor_alltoallv_topo");
    CHECK(same(&h), "MPIL_Neighbor_alltoallv_topo equals MPI");
  }
  CHECK_RC(MPIL_Topo_free(&topo), MPI_SUCCESS, "MPIL_Topo_free");
  CHECK_RC(MPIL_Topo_free(&topo2), MPI_SUCCESS, "MPIL_Topo_free");

  /* sparsecomm extensions: per-call and per-communicator sparsecomm_* options. */
  {
    MPIL_Info* info2;
    MPIL_Info_init(&info2);
    CHECK_RC(SPC_MPIL_Info_set(info2, "sparsecomm_backend", "combined"), MPI_SUCCESS, "SPC_MPIL_Info_set");
    SPC_MPIL_Info_set(info2, "sparsecomm_theta", "1");
    MPIL_Request* req = NULL;
    int rc = MPIL_Neighbor_alltoallv_init(h.a2av_send, S->counts, S->ptr, MPI_INT, h.mpil_recv, R->counts, R->ptr,
                                          MPI_INT, xcomm, info2, &req);
    CHECK_RC(rc, MPI_SUCCESS, "init with sparsecomm_backend=combined");
    if (rc == MPI_SUCCESS) {
      CHECK_BACKEND(req, "combined", "the MPIL_Info's backend wins over the setter");
      run_request(&h, req, first_col, "combined via MPIL_Info");
    }
    MPIL_Info_free(&info2);

    MPI_Info defaults;
    MPI_Info_create(&defaults);
    MPI_Info_set(defaults, "sparsecomm_backend", "aggregated");
    MPI_Info_set(defaults, "sparsecomm_regions", "cyclic:2");
    CHECK_RC(SPC_MPIL_Comm_set_info(xcomm, defaults), MPI_SUCCESS, "SPC_MPIL_Comm_set_info");
    rc = MPIL_Neighbor_alltoallv_init(h.a2av_send, S->counts, S->ptr, MPI_INT, h.mpil_recv, R->counts, R->ptr, MPI_INT,
                                      xcomm, xinfo, &req);
    CHECK_RC(rc, MPI_SUCCESS, "init with per-communicator defaults");
    if (rc == MPI_SUCCESS) {
      CHECK_BACKEND(req, "aggregated", "the communicator's default backend");
      run_request(&h, req, first_col, "aggregated via MPIL_Comm defaults");
    }
    MPI_Info_set(defaults, "sparsecomm_oops", "1");
    CHECK_RC(SPC_MPIL_Comm_set_info(xcomm, defaults), SPC_ERR_INFO_KEY, "bad per-communicator key");
    MPI_Info_free(&defaults);
  }

  /* Errors are returned, not aborted on. */
  {
    MPIL_Comm* plain;
    MPIL_Comm_init(&plain, MPI_COMM_WORLD);
    MPIL_Request* req = NULL;
    int rc = MPIL_Neighbor_alltoallv_init(h.a2av_send, S->counts, S->ptr, MPI_INT, h.mpil_recv, R->counts, R->ptr,
                                          MPI_INT, plain, xinfo, &req);
    CHECK_RC(rc, MPI_ERR_TOPOLOGY, "neighbor init on an MPIL_Comm without a graph");
    CHECK_RC(MPIL_Start(NULL), SPC_ERR_REQUEST, "MPIL_Start(NULL)");
    CHECK_RC(MPIL_Request_reorder(NULL, 1), SPC_ERR_REQUEST, "MPIL_Request_reorder(NULL)");
    CHECK_RC(MPIL_Comm_update_locality(plain, 0), MPI_ERR_ARG, "ppn 0");
    MPIL_Comm_free(&plain);
    CHECK(plain == NULL, "MPIL_Comm_free sets NULL");
  }

  CHECK_RC(MPIL_Comm_free(&xcomm), MPI_SUCCESS, "MPIL_Comm_free");
  MPI_Comm_free(&h.std_comm);
  free(h.send_vals), free(h.a2av_send), free(h.send_indices), free(h.pmpi_recv), free(h.mpil_recv);
}

int main(int argc, char** argv) {
  capi_init(&argc, &argv);
  MPIL_Init(MPI_COMM_WORLD);
  const int me = capi_rank, p = capi_size, first_col = NLOCAL * me;
  CommPkg R = recv_pkg(me, p), S = send_pkg(me, p);

  MPIL_Comm* xcomm;
  MPIL_Info* xinfo;
  CHECK_RC(MPIL_Comm_init(&xcomm, MPI_COMM_WORLD), MPI_SUCCESS, "MPIL_Comm_init");
  CHECK_RC(MPIL_Comm_topo_init(xcomm), MPI_SUCCESS, "MPIL_Comm_topo_init");
  CHECK_RC(MPIL_Info_init(&xinfo), MPI_SUCCESS, "MPIL_Info_init");
  test_crs(xcomm, xinfo, &R, &S, first_col);
  CHECK_RC(MPIL_Comm_update_locality(xcomm, 2), MPI_SUCCESS, "MPIL_Comm_update_locality");
  test_crs(xcomm, xinfo, &R, &S, first_col);
  CHECK_RC(MPIL_Comm_topo_free(xcomm), MPI_SUCCESS, "MPIL_Comm_topo_free");

  test_neighbor(xinfo, &R, &S, first_col);

  void* mem = (void*)1;
  CHECK(MPIL_Alloc(&mem, 0) == MPI_SUCCESS && mem == NULL, "MPIL_Alloc of 0 bytes gives NULL");
  CHECK(MPIL_Alloc(&mem, 64) == MPI_SUCCESS && mem != NULL, "MPIL_Alloc");
  CHECK(MPIL_Free(mem) == MPI_SUCCESS, "MPIL_Free");

  CHECK_RC(MPIL_Info_free(&xinfo), MPI_SUCCESS, "MPIL_Info_free");
  CHECK_RC(MPIL_Comm_free(&xcomm), MPI_SUCCESS, "MPIL_Comm_free");
  free_pkg(&R), free_pkg(&S);
  MPIL_Finalize();
  return capi_finish();
}
