/* SPC_Halo: a halo exchange from a ghost list. Rank r owns 3 + r consecutive values (rank
 * 0 first); value g is 1.5 * g + 7 (and component c of a block of 3 adds 0.25 * c). Each
 * rank asks for a pseudo-random set of other ranks' ids in scrambled order; every backend,
 * two region layouts, doubles and blocks of 3 doubles, several exchanges per halo. Then the
 * bad inputs: a repeated id, an own id, an id beyond the global size, a non-contiguous type,
 * an unknown backend (on one rank only: the same code everywhere), a second start. And auto
 * with tune=measure, through a halo and a persistent neighbor alltoallv request: the right
 * values while it rotates, one winner on every rank. */
#include "capi_test.h"

/* Every halo backend of the registry, comma-separated (SPARSECOMM_HALO_BACKENDS of the
 * top-level CMakeLists.txt): a new backend is tested here with no edit. */
static const char backends[] = SPC_TEST_HALO_BACKENDS;

static int64_t owned_begin(int r) { return (int64_t)r * 3 + (int64_t)r * (r - 1) / 2; }
static int nlocal_of(int r) { return 3 + r; }
static double value(int64_t g, int c) { return 1.5 * (double)g + 7.0 + 0.25 * c; }

/* The ghosts of this rank: about a third of every other rank's ids, scrambled. */
static int make_ghosts(int64_t* gids) {
  int n = 0;
  for (int r = 0; r < capi_size; ++r) {
    if (r == capi_rank) continue;
    for (int i = 0; i < nlocal_of(r); ++i)
      if (capi_hash(capi_rank, r, i, 3) % 3 == 0) gids[n++] = owned_begin(r) + i;
  }
  for (int i = n - 1; i > 0; --i) {
    int j = (int)(capi_hash(capi_rank, i, 5, 7) % (uint64_t)(i + 1));
    int64_t t = gids[i];
    gids[i] = gids[j];
    gids[j] = t;
  }
  return n;
}

static void run(const char* backend, const char* regions, int block) {
  const int nl = nlocal_of(capi_rank);
  int64_t* gids = capi_xmalloc(sizeof(int64_t) * (size_t)(owned_begin(capi_size) + 1));
  const int ng = make_ghosts(gids);
  MPI_Datatype type = MPI_DOUBLE;
  if (block > 1) {
    MPI_Type_contiguous(block, MPI_DOUBLE, &type);
    MPI_Type_commit(&type);
  }
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "sparsecomm_backend", backend);
  MPI_Info_set(info, "sparsecomm_regions", regions);
  SPC_Halo h = SPC_HALO_NULL;
  CHECK_RC(SPC_Halo_create(MPI_COMM_WORLD, nl, ng, gids, type, info, &h), SPC_SUCCESS, backend);
  double* owned = capi_xmalloc(sizeof(double) * (size_t)(nl * block + 1));
  double* ghosts = capi_xmalloc(sizeof(double) * (size_t)(ng * block + 1));
  for (int it = 0; it < 3; ++it) {
    for (int i = 0; i < nl; ++i)
      for (int c = 0; c < block; ++c) owned[i * block + c] = value(owned_begin(capi_rank) + i, c) + it;
    for (int i = 0; i < ng * block; ++i) ghosts[i] = -1.0;
    CHECK_RC(SPC_Halo_start(h, owned), SPC_SUCCESS, "start");
    CHECK_RC(SPC_Halo_wait(h, ghosts), SPC_SUCCESS, "wait");
    int bad = 0;
    for (int i = 0; i < ng; ++i)
      for (int c = 0; c < block; ++c) bad += ghosts[i * block + c] != value(gids[i], c) + it;
    CHECK(bad == 0, "%s, regions %s, block %d, exchange %d: %d wrong ghost values", backend, regions, block, it, bad);
  }
  CHECK_RC(SPC_Halo_free(&h), SPC_SUCCESS, "free");
  CHECK(h == SPC_HALO_NULL, "free sets the halo to null");
  MPI_Info_free(&info);
  if (block > 1) MPI_Type_free(&type);
  free(owned);
  free(ghosts);
  free(gids);
}

/* 1 when every rank's `name` is the same (a hash; max and min over the ranks). */
static int same_name_everywhere(const char* name) {
  uint64_t h = 1469598103934665603ull;
  for (const char* c = name; *c; ++c) h = (h ^ (unsigned char)*c) * 1099511628211ull;
  uint64_t v[2] = {h, ~h}, mx[2];
  MPI_Allreduce(v, mx, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return mx[0] == h && mx[1] == ~h;
}

/* auto with tune=measure (2 candidates of the model and p2p, 2 samples: at most 9 measuring
 * exchanges): every exchange, rotating and settled, gives the values of a p2p halo and the
 * expected ones; the halo reports auto while it measures, then the backend it settled on,
 * the same on every rank. Expected exchanges too few to repay the measuring: not tuned. */
/* Whether a halo created with `info` is tuning (its backend "auto" until it settles). */
static int tuned_at_creation(int nl, int ng, const int64_t* gids, MPI_Info info) {
  SPC_Halo h = SPC_HALO_NULL;
  char name[64] = "";
  int len = 0;
  CHECK_RC(SPC_Halo_create(MPI_COMM_WORLD, nl, ng, gids, MPI_DOUBLE, info, &h), SPC_SUCCESS, "halo");
  CHECK_RC(SPC_Halo_backend(h, name, &len), SPC_SUCCESS, "backend");
  const int tuned = strcmp(name, "auto") == 0;
  CHECK_RC(SPC_Halo_free(&h), SPC_SUCCESS, "free");
  return tuned;
}

static void run_tuned(void) {
  const int nl = nlocal_of(capi_rank);
  int64_t* gids = capi_xmalloc(sizeof(int64_t) * (size_t)(owned_begin(capi_size) + 1));
  const int ng = make_ghosts(gids);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "sparsecomm_backend", "auto");
  MPI_Info_set(info, "sparsecomm_regions", "ppn:2");
  MPI_Info_set(info, "sparsecomm_tune", "measure");
  MPI_Info_set(info, "sparsecomm_candidates", "2");
  MPI_Info_set(info, "sparsecomm_samples", "2");
  SPC_Halo h = SPC_HALO_NULL, ref = SPC_HALO_NULL;
  CHECK_RC(SPC_Halo_create(MPI_COMM_WORLD, nl, ng, gids, MPI_DOUBLE, info, &h), SPC_SUCCESS, "tuned halo");
  CHECK_RC(SPC_Halo_create(MPI_COMM_WORLD, nl, ng, gids, MPI_DOUBLE, MPI_INFO_NULL, &ref), SPC_SUCCESS, "p2p halo");
  double* owned = capi_xmalloc(sizeof(double) * (size_t)(nl + 1));
  double* ghosts = capi_xmalloc(sizeof(double) * (size_t)(ng + 1));
  double* want = capi_xmalloc(sizeof(double) * (size_t)(ng + 1));
  char name[64];
  int len = 0, bad = 0, differ = 0;
  for (int it = 0; it < 14 && h && ref; ++it) {
    for (int i = 0; i < nl; ++i) owned[i] = value(owned_begin(capi_rank) + i, 0) + it;
    for (int i = 0; i < ng; ++i) ghosts[i] = want[i] = -1.0;
    CHECK_RC(SPC_Halo_start(ref, owned), SPC_SUCCESS, "p2p start");
    CHECK_RC(SPC_Halo_wait(ref, want), SPC_SUCCESS, "p2p wait");
    CHECK_RC(SPC_Halo_start(h, owned), SPC_SUCCESS, "tuned start");
    CHECK_RC(SPC_Halo_wait(h, ghosts), SPC_SUCCESS, "tuned wait");
    for (int i = 0; i < ng; ++i) bad += ghosts[i] != value(gids[i], 0) + it, differ += ghosts[i] != want[i];
    if (it == 0) {
      CHECK_RC(SPC_Halo_backend(h, name, &len), SPC_SUCCESS, "backend while tuning");
      CHECK(strcmp(name, "auto") == 0, "auto while it measures, got %s", name);
    }
  }
  CHECK(bad == 0 && differ == 0, "tune=measure: %d wrong ghost values, %d unlike p2p's", bad, differ);
  CHECK_RC(SPC_Halo_backend(h, name, &len), SPC_SUCCESS, "backend once settled");
  CHECK(strcmp(name, "auto") != 0 && len > 0, "a backend once settled, got %s", name);
  CHECK(same_name_everywhere(name), "the same winner on every rank (this rank: %s)", name);
  CHECK_RC(SPC_Halo_free(&h), SPC_SUCCESS, "free");
  /* 50 expected exchanges do not repay tuning (its (2 + 1) x (2 + 1) measuring exchanges
   * leave 41 to win back a tenth of an exchange each, against the flags' reductions): no
   * tuning, the model's choice from the start. A billion do wherever there is anything to
   * exchange (more than one rank); with sparsecomm_tune_gain = 0 nothing is expected back. */
  MPI_Info_set(info, "sparsecomm_iterations", "50");
  CHECK(!tuned_at_creation(nl, ng, gids, info), "50 expected exchanges: not tuned");
  MPI_Info_set(info, "sparsecomm_iterations", "1000000000");
  CHECK(tuned_at_creation(nl, ng, gids, info) == (capi_size > 1), "1e9 expected exchanges on %d ranks: tuned "
        "exactly where there is more than one rank", capi_size);
  MPI_Info_set(info, "sparsecomm_tune_gain", "0");
  CHECK(!tuned_at_creation(nl, ng, gids, info), "tune_gain = 0: not tuned");
  CHECK_RC(SPC_Halo_free(&ref), SPC_SUCCESS, "free");
  MPI_Info_free(&info);
  free(owned);
  free(ghosts);
  free(want);
  free(gids);
}

/* The same through a persistent request (SPC_Neighbor_alltoallv_init on a ring, 3 doubles
 * each way): each exchange delivers the left neighbor's values, SPC_Request_backend says
 * auto while it measures, then one winner on every rank. */
static void run_tuned_request(void) {
  const int p = capi_size, src = (capi_rank - 1 + p) % p, dst = (capi_rank + 1) % p;
  MPI_Comm g;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &src, MPI_UNWEIGHTED, 1, &dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                                 &g);
  MPI_Info info = capi_info("sparsecomm_backend", "auto", "sparsecomm_tune", "measure", "sparsecomm_samples", "2");
  double s[3], r[3];
  int cnt = 3, displ = 0, len = 0, bad = 0;
  char name[64] = "";
  SPC_Request req = SPC_REQUEST_NULL;
  CHECK_RC(SPC_Neighbor_alltoallv_init(s, &cnt, &displ, MPI_DOUBLE, r, &cnt, &displ, MPI_DOUBLE, g, info, &req),
           SPC_SUCCESS, "tuned persistent alltoallv");
  for (int it = 0; it < 20 && req; ++it) {
    for (int i = 0; i < 3; ++i) s[i] = 100.0 * capi_rank + i + 0.5 * it, r[i] = -1.0;
    CHECK_RC(SPC_Start(&req), SPC_SUCCESS, "tuned start");
    CHECK_RC(SPC_Wait(&req, MPI_STATUS_IGNORE), SPC_SUCCESS, "tuned wait");
    for (int i = 0; i < 3; ++i) bad += r[i] != 100.0 * src + i + 0.5 * it;
    if (it == 0) {
      CHECK_RC(SPC_Request_backend(req, name, &len), SPC_SUCCESS, "request backend while tuning");
      CHECK(strcmp(name, "auto") == 0, "request: auto while it measures, got %s", name);
    }
  }
  CHECK(bad == 0, "tuned request: %d wrong values", bad);
  if (req) {
    CHECK_RC(SPC_Request_backend(req, name, &len), SPC_SUCCESS, "request backend once settled");
    CHECK(strcmp(name, "auto") != 0, "request: a backend once settled, got %s", name);
    CHECK(same_name_everywhere(name), "request: the same winner on every rank (this rank: %s)", name);
    CHECK_RC(SPC_Request_free(&req), SPC_SUCCESS, "free");
  }
  MPI_Info_free(&info);
  MPI_Comm_free(&g);
}

/* A call that must fail with `code` on every rank, `wrong` deciding which ranks pass bad input. */
static void expect_error(int64_t bad_id, int wrong, MPI_Datatype type, const char* backend, int code, const char* what) {
  const int nl = nlocal_of(capi_rank);
  int64_t gids[2];
  int ng = 0;
  if (capi_size > 1) gids[ng++] = owned_begin((capi_rank + 1) % capi_size);
  if (wrong) gids[ng++] = bad_id;
  MPI_Info info;
  MPI_Info_create(&info);
  if (backend) MPI_Info_set(info, "sparsecomm_backend", wrong ? backend : "p2p");
  SPC_Halo h = SPC_HALO_NULL;
  const int rc = SPC_Halo_create(MPI_COMM_WORLD, nl, ng, gids, type, info, &h);
  CHECK_RC(rc, code, what);
  CHECK(capi_same_everywhere(rc), "%s: the same code on every rank", what);
  CHECK(h == SPC_HALO_NULL, "%s: no halo on failure", what);
  if (h) SPC_Halo_free(&h);
  MPI_Info_free(&info);
}

int main(int argc, char** argv) {
  capi_init(&argc, &argv);
  char names[sizeof backends];
  memcpy(names, backends, sizeof names);
  for (const char* b = strtok(names, ","); b; b = strtok(NULL, ",")) {
    run(b, "ppn:2", 1);
    run(b, "ppn:3", 3);
  }
  run_tuned();
  run_tuned_request();
  const int last = capi_rank == capi_size - 1;
  const int64_t total = owned_begin(capi_size);
  if (capi_size > 1) {
    /* the id of the next rank, listed twice (on the last rank only) */
    expect_error(owned_begin((capi_rank + 1) % capi_size), last, MPI_DOUBLE, NULL, SPC_ERR_ARG, "a repeated id");
  }
  expect_error(owned_begin(capi_rank), last, MPI_DOUBLE, NULL, SPC_ERR_ARG, "an own id");
  expect_error(total + 5, last, MPI_DOUBLE, NULL, SPC_ERR_ARG, "an id beyond the global size");
  expect_error(-1, last, MPI_DOUBLE, "no_such_backend", SPC_ERR_NOT_FOUND, "an unknown backend on one rank");
  {
    MPI_Datatype strided;
    MPI_Type_vector(2, 1, 2, MPI_DOUBLE, &strided);
    MPI_Type_commit(&strided);
    expect_error(-1, 0, strided, NULL, MPI_ERR_TYPE, "a non-contiguous datatype");
    MPI_Type_free(&strided);
  }
  {  /* a second start before the wait */
    const int nl = nlocal_of(capi_rank);
    double owned[64], ghosts[1];
    for (int i = 0; i < nl; ++i) owned[i] = value(owned_begin(capi_rank) + i, 0);
    SPC_Halo h;
    CHECK_RC(SPC_Halo_create(MPI_COMM_WORLD, nl, 0, NULL, MPI_DOUBLE, MPI_INFO_NULL, &h), SPC_SUCCESS, "no ghosts");
    CHECK_RC(SPC_Halo_start(h, owned), SPC_SUCCESS, "start");
    CHECK_RC(SPC_Halo_start(h, owned), SPC_ERR_REQUEST, "a second start");
    CHECK_RC(SPC_Halo_wait(h, ghosts), SPC_SUCCESS, "wait");
    CHECK_RC(SPC_Halo_wait(h, ghosts), SPC_SUCCESS, "wait without an exchange");
    char name[64];
    int len = 0;
    CHECK_RC(SPC_Halo_backend(h, name, &len), SPC_SUCCESS, "backend");
    CHECK(strcmp(name, "p2p") == 0, "the default backend is p2p, got %s", name);
    CHECK_RC(SPC_Halo_free(&h), SPC_SUCCESS, "free");
  }
  return capi_finish();
}
