/* Invalid input gives error codes, never a hang or an abort: the same code on every rank
 * for collective calls (also when only one rank is wrong), readable messages through
 * SPC_Error_string, untouched outputs, and a working library afterwards. */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include "capi_test.h"

static int last_rank(void) { return capi_size - 1; }

/* Checks that a collective call returned `expected` on every rank. */
#define CHECK_ALL(rc, expected, what)                                                          \
  do {                                                                                         \
    int capi_all_ = (rc);                                                                      \
    CHECK_RC(capi_all_, expected, what);                                                       \
    CHECK(capi_same_everywhere(capi_all_), "%s: the same code on every rank", what);           \
  } while (0)

/* Ring graph: receive from the left neighbor, send to the right one (a self-loop on 1 rank). */
static MPI_Comm ring(void) {
  const int me = capi_rank, p = capi_size;
  int src = (me - 1 + p) % p, dst = (me + 1) % p;
  MPI_Comm g;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &src, MPI_UNWEIGHTED, 1, &dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                                 &g);
  return g;
}

/* What a persistent alltoallv init reports on this rank: its own code, or -- where the
 * init returned a request (the direct p2p path settles its agreement at the first start,
 * docs/architecture.md "Deferred agreement") -- the code of the first SPC_Start (then of
 * the wait). The request is freed. */
static int outcome(int rc, SPC_Request* req) {
  if (rc != SPC_SUCCESS || !req || *req == SPC_REQUEST_NULL) return rc;
  int s = SPC_Start(req);
  if (s == SPC_SUCCESS) s = SPC_Wait(req, MPI_STATUS_IGNORE);
  const int f = SPC_Request_free(req);
  return s != SPC_SUCCESS ? s : f;
}

/* Neighbor alltoallv on the ring with `info`, 3 doubles each way unless told otherwise. */
static int ring_init(MPI_Comm g, MPI_Info info, int scount, int rcount, MPI_Datatype st, MPI_Datatype rt,
                     double* s, double* r, SPC_Request* req) {
  int sd = 0, rd = 0;
  return SPC_Neighbor_alltoallv_init(s, &scount, &sd, st, r, &rcount, &rd, rt, g, info, req);
}

static void test_names_and_info(MPI_Comm g) {
  double s[8] = {0}, r[8] = {0};
  SPC_Request req = SPC_REQUEST_NULL;
  MPI_Info info;

  info = capi_info("sparsecomm_backend", "nope", NULL, NULL, NULL, NULL);
  int rc = ring_init(g, info, 3, 3, MPI_DOUBLE, MPI_DOUBLE, s, r, &req);
  CHECK_ALL(rc = outcome(rc, &req), SPC_ERR_NOT_FOUND, "unknown backend");
  CHECK(message_has(rc, "nope") && message_has(rc, "aggregated_dedup") && message_has(rc, "p2p"),
        "the message names the bad backend and lists the valid ones");
  CHECK(req == SPC_REQUEST_NULL, "no request on error");
  MPI_Info_free(&info);

  info = capi_info("sparsecomm_bogus", "1", NULL, NULL, NULL, NULL);
  rc = ring_init(g, info, 3, 3, MPI_DOUBLE, MPI_DOUBLE, s, r, &req);
  CHECK_ALL(rc = outcome(rc, &req), SPC_ERR_INFO_KEY, "unknown sparsecomm_ key");
  CHECK(message_has(rc, "sparsecomm_bogus"), "the message names the key");
  MPI_Info_free(&info);

  info = capi_info("foo_unrelated", "whatever", "sparsecomm_backend", " aggregated ", NULL, NULL);
  rc = ring_init(g, info, 3, 3, MPI_DOUBLE, MPI_DOUBLE, s, r, &req);
  CHECK_ALL(outcome(rc, &req), SPC_SUCCESS, "foreign keys are ignored, values trimmed");
  MPI_Info_free(&info);

  const char* bad[][2] = {{"sparsecomm_k", "abc"}, {"sparsecomm_k", "1"},          {"sparsecomm_theta", "0"},
                          {"sparsecomm_aware", "maybe"}, {"sparsecomm_rounds", "-1"}, {"sparsecomm_regions", "ppn:x"},
                          {"sparsecomm_regions", "bogus"}, {"sparsecomm_regions", "ppn:0"}, {"sparsecomm_persistent", "2"},
                          {"sparsecomm_backend", "   "}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    info = capi_info("sparsecomm_backend", "combined", bad[i][0], bad[i][1], NULL, NULL);
    if (strcmp(bad[i][0], "sparsecomm_backend") == 0) MPI_Info_set(info, bad[i][0], bad[i][1]);
    rc = ring_init(g, info, 3, 3, MPI_DOUBLE, MPI_DOUBLE, s, r, &req);
    char what[100];
    snprintf(what, sizeof what, "bad value %s=%s", bad[i][0], bad[i][1]);
    CHECK_ALL(rc = outcome(rc, &req), SPC_ERR_INFO_VALUE, what);
    MPI_Info_free(&info);
  }

  /* The same bad layouts under p2p, whose direct path builds no locality: a bad value is an
   * error whichever backend is asked for. */
  const char* layouts[] = {"ppn:x", "bogus", "ppn:0"};
  for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; ++i) {
    info = capi_info("sparsecomm_backend", "p2p", "sparsecomm_regions", layouts[i], NULL, NULL);
    rc = ring_init(g, info, 3, 3, MPI_DOUBLE, MPI_DOUBLE, s, r, &req);
    char what[100];
    snprintf(what, sizeof what, "bad value sparsecomm_regions=%s under p2p", layouts[i]);
    CHECK_ALL(rc = outcome(rc, &req), SPC_ERR_INFO_VALUE, what);
    MPI_Info_free(&info);
  }

  info = capi_info("sparsecomm_sdde", "rma", NULL, NULL, NULL, NULL);
  rc = ring_init(g, info, 3, 3, MPI_DOUBLE, MPI_DOUBLE, s, r, &req);
  CHECK_ALL(rc = outcome(rc, &req), SPC_ERR_INFO_VALUE, "rma as the setup SDDE of a neighborhood call");
  MPI_Info_free(&info);

  /* auto's in-place tuning: a bad sample count is a bad value on every rank (tune=measure
   * itself works through the C API: test_capi_halo.c). */
  info = capi_info("sparsecomm_backend", "auto", "sparsecomm_tune", "measure", "sparsecomm_samples", "0");
  rc = ring_init(g, info, 3, 3, MPI_DOUBLE, MPI_DOUBLE, s, r, &req);
  CHECK_ALL(rc = outcome(rc, &req), SPC_ERR_INFO_VALUE, "sparsecomm_samples=0 with tune=measure");
  CHECK(same_message_everywhere(rc), "the same message on every rank");
  MPI_Info_free(&info);

  /* A bad key on the last rank only: every rank fails with the same code and message. */
  info = capi_rank == last_rank() ? capi_info("sparsecomm_typo", "1", NULL, NULL, NULL, NULL)
                                  : capi_info("sparsecomm_backend", "p2p", NULL, NULL, NULL, NULL);
  rc = ring_init(g, info, 3, 3, MPI_DOUBLE, MPI_DOUBLE, s, r, &req);
  CHECK_ALL(rc = outcome(rc, &req), SPC_ERR_INFO_KEY, "bad key on one rank");
  CHECK(same_message_everywhere(rc), "the same message on every rank");
  MPI_Info_free(&info);

  /* Ranks asking for different backends. */
  if (capi_size > 1) {
    info = capi_info("sparsecomm_backend", capi_rank == 0 ? "p2p" : "neighbor", NULL, NULL, NULL, NULL);
    rc = ring_init(g, info, 3, 3, MPI_DOUBLE, MPI_DOUBLE, s, r, &req);
    CHECK_ALL(rc = outcome(rc, &req), SPC_ERR_MISMATCH, "different backends on different ranks");
    MPI_Info_free(&info);
  }
}

static void test_neighbor_args(MPI_Comm g) {
  double s[8] = {0}, r[8] = {0};
  SPC_Request req = SPC_REQUEST_NULL;
  const int me = capi_rank, p = capi_size;

  int rc = ring_init(MPI_COMM_WORLD, MPI_INFO_NULL, 3, 3, MPI_DOUBLE, MPI_DOUBLE, s, r, &req);
  CHECK_ALL(rc = outcome(rc, &req), MPI_ERR_TOPOLOGY, "not a graph communicator");
  rc = ring_init(MPI_COMM_NULL, MPI_INFO_NULL, 3, 3, MPI_DOUBLE, MPI_DOUBLE, s, r, &req);
  CHECK_RC(rc, MPI_ERR_COMM, "MPI_COMM_NULL");

  /* Counts that do not match between sender and receiver (rank 0 sends 2, 3 expected). */
  rc = ring_init(g, MPI_INFO_NULL, me == 0 ? 2 : 3, 3, MPI_DOUBLE, MPI_DOUBLE, s, r, &req);
  CHECK_ALL(rc = outcome(rc, &req), SPC_ERR_MISMATCH, "count mismatch between sender and receiver");

  rc = ring_init(g, MPI_INFO_NULL, me == last_rank() ? -1 : 3, 3, MPI_DOUBLE, MPI_DOUBLE, s, r, &req);
  CHECK_ALL(rc = outcome(rc, &req), MPI_ERR_COUNT, "negative count on one rank");

  rc = ring_init(g, MPI_INFO_NULL, 3, 3, MPI_INT, MPI_DOUBLE, s, r, &req);
  CHECK_ALL(rc = outcome(rc, &req), MPI_ERR_TYPE, "sendtype and recvtype of different sizes");

  MPI_Datatype vec, resized;
  MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
  MPI_Type_commit(&vec);
  MPI_Type_create_resized(MPI_DOUBLE, 0, 16, &resized);
  MPI_Type_commit(&resized);
  rc = ring_init(g, MPI_INFO_NULL, 1, 1, vec, vec, s, r, &req);
  CHECK_ALL(rc = outcome(rc, &req), MPI_ERR_TYPE, "non-contiguous datatype");
  CHECK(message_has(rc, "contiguous"), "the message says why");
  rc = ring_init(g, MPI_INFO_NULL, 1, 1, resized, resized, s, r, &req);
  CHECK_ALL(rc = outcome(rc, &req), MPI_ERR_TYPE, "datatype with extent > size");
  rc = ring_init(g, MPI_INFO_NULL, 1, 1, MPI_DATATYPE_NULL, MPI_DOUBLE, s, r, &req);
  CHECK_ALL(rc = outcome(rc, &req), MPI_ERR_TYPE, "MPI_DATATYPE_NULL");
  MPI_Type_free(&vec);
  MPI_Type_free(&resized);

  rc = ring_init(g, MPI_INFO_NULL, 3, 3, MPI_DOUBLE, MPI_DOUBLE, me == 0 ? NULL : s, r, &req);
  CHECK_ALL(rc = outcome(rc, &req), MPI_ERR_BUFFER, "NULL sendbuf with data to send");

  rc = ring_init(g, MPI_INFO_NULL, 3, 3, MPI_DOUBLE, MPI_DOUBLE, s, r, me == last_rank() ? NULL : &req);
  CHECK_ALL(rc = outcome(rc, &req), SPC_ERR_REQUEST, "NULL request pointer on one rank");

  /* Inconsistent explicit lists: rank 0 sends to rank 1 % p, nobody expects it. */
  {
    int dst = 1 % p, cnt = 1, dsp = 0;
    rc = SPC_Neighbor_alltoallv_init_lists(0, NULL, me == 0 ? 1 : 0, &dst, s, &cnt, &dsp, NULL, MPI_DOUBLE, r, NULL,
                                           NULL, NULL, MPI_DOUBLE, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    CHECK_ALL(rc = outcome(rc, &req), SPC_ERR_MISMATCH, "inconsistent neighbor lists");
    int bad = p + 3;
    rc = SPC_Neighbor_alltoallv_init_lists(0, NULL, me == 0 ? 1 : 0, &bad, s, &cnt, &dsp, NULL, MPI_DOUBLE, r, NULL,
                                           NULL, NULL, MPI_DOUBLE, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    CHECK_ALL(rc = outcome(rc, &req), MPI_ERR_RANK, "destination out of range");
    /* Rank 0 lists itself as a destination and never as a source (an allgatherv, where
     * no local self-loop check applies): the edge 0 -> 0 once hashed to 0 and went unseen
     * (found by tests/fuzz/fuzz_capi). */
    int self = 0, zero = 0;
    rc = SPC_Neighbor_allgatherv_init_lists(0, NULL, me == 0 ? 1 : 0, &self, s, 0, MPI_DOUBLE, r, &zero, &zero,
                                            MPI_DOUBLE, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    CHECK_ALL(rc = outcome(rc, &req), SPC_ERR_MISMATCH, "rank 0's self-loop listed on one side only");
  }
  /* _ext: the ids the receiver expects differ from the ids sent. */
  {
    int cnt = 2, dsp = 0;
    int64_t gs[2] = {me * 10, me * 10 + 1}, gr[2];
    const int left = (me - 1 + p) % p;
    gr[0] = left * 10 + (me == 0 ? 1 : 0);
    gr[1] = left * 10 + (me == 0 ? 0 : 1); /* rank 0 expects them swapped */
    rc = SPC_Neighbor_alltoallv_init_ext(s, &cnt, &dsp, gs, MPI_DOUBLE, r, &cnt, &dsp, gr, MPI_DOUBLE, g,
                                         MPI_INFO_NULL, &req);
    CHECK_ALL(rc = outcome(rc, &req), SPC_ERR_MISMATCH, "ext ids in a different order");
    rc = SPC_Neighbor_alltoallv_init_ext(s, &cnt, &dsp, NULL, MPI_DOUBLE, r, &cnt, &dsp, gr, MPI_DOUBLE, g,
                                         MPI_INFO_NULL, &req);
    CHECK_ALL(rc = outcome(rc, &req), SPC_ERR_ARG, "ext without global_sindices");
  }
  /* Allgather: wrong recvcounts, and a halo backend name. */
  {
    int rcount = me == 0 ? 4 : 3, displ = 0;
    rc = SPC_Neighbor_allgatherv_init(s, 3, MPI_DOUBLE, r, &rcount, &displ, MPI_DOUBLE, g, MPI_INFO_NULL, &req);
    CHECK_ALL(rc, SPC_ERR_MISMATCH, "allgatherv recvcounts differ from the sender's sendcount");
    MPI_Info info = capi_info("sparsecomm_backend", "aggregated", NULL, NULL, NULL, NULL);
    rc = SPC_Neighbor_allgather_init(s, 3, MPI_DOUBLE, r, 3, MPI_DOUBLE, g, info, &req);
    CHECK_ALL(rc, SPC_ERR_NOT_FOUND, "a halo backend for an allgather");
    CHECK(message_has(rc, "combined"), "lists the gather backends");
    MPI_Info_free(&info);
  }
}

/* The direct path's deferred agreement, step by step: a failure on one rank is that rank's
 * error at init and everyone else's at the first start (same code, same message), again at
 * every later start and at free; an init that is never started reports it at free; with
 * SPARSECOMM_CHECK_COLLECTIVE_ARGS=1 every rank reports a mismatch at init, naming the edge. */
static void test_deferred_agreement(MPI_Comm g) {
  double s[8] = {0}, r[8] = {0};
  SPC_Request req = SPC_REQUEST_NULL;
  const int me = capi_rank, p = capi_size;
  if (p < 2) return; /* one rank: the ring is a self-loop, checked locally at init */

  int rc = ring_init(g, MPI_INFO_NULL, me == last_rank() ? -1 : 3, 3, MPI_DOUBLE, MPI_DOUBLE, s, r, &req);
  if (me == last_rank()) {
    CHECK_RC(rc, MPI_ERR_COUNT, "the failing rank reports at init");
    CHECK(req == SPC_REQUEST_NULL, "and returns no request");
  } else {
    CHECK_RC(rc, SPC_SUCCESS, "the others' init returns a request");
    CHECK(req != SPC_REQUEST_NULL, "a request");
    rc = SPC_Start(&req);
    CHECK_RC(rc, MPI_ERR_COUNT, "their first start reports the failing rank's error");
  }
  CHECK(message_has(rc, "sendcounts[0] is negative"), "the failing rank's message, on every rank");
  CHECK(same_message_everywhere(rc), "the same message everywhere");
  if (me != last_rank()) {
    CHECK_RC(SPC_Start(&req), MPI_ERR_COUNT, "and again at the next start");
    CHECK_RC(SPC_Request_free(&req), MPI_ERR_COUNT, "and at free");
    CHECK(req == SPC_REQUEST_NULL, "which frees the request all the same");
  }

  /* Counts that differ on one edge, every request freed without a start: free reports it. */
  rc = ring_init(g, MPI_INFO_NULL, me == 0 ? 2 : 3, 3, MPI_DOUBLE, MPI_DOUBLE, s, r, &req);
  CHECK_ALL(rc, SPC_SUCCESS, "a count mismatch passes every rank's local checks");
  rc = SPC_Request_free(&req);
  CHECK_ALL(rc, SPC_ERR_MISMATCH, "free of a never-started request reports the mismatch");
  CHECK(message_has(rc, "inconsistent counts"), "says what");

  /* Two requests in flight on one communicator (each on its own tag), started in
   * opposite orders: each delivers its own values. */
  {
    double s2[3], r2[3] = {0, 0, 0};
    SPC_Request a = SPC_REQUEST_NULL, b = SPC_REQUEST_NULL;
    for (int i = 0; i < 3; ++i) s[i] = me * 10 + i, s2[i] = -(me * 10 + i);
    CHECK_ALL(ring_init(g, MPI_INFO_NULL, 3, 3, MPI_DOUBLE, MPI_DOUBLE, s, r, &a), SPC_SUCCESS, "request a");
    CHECK_ALL(ring_init(g, MPI_INFO_NULL, 3, 3, MPI_DOUBLE, MPI_DOUBLE, s2, r2, &b), SPC_SUCCESS, "request b");
    if (me % 2) {
      SPC_Start(&b), SPC_Start(&a);
    } else {
      SPC_Start(&a), SPC_Start(&b);
    }
    CHECK_RC(SPC_Wait(&b, MPI_STATUS_IGNORE), SPC_SUCCESS, "wait b");
    CHECK_RC(SPC_Wait(&a, MPI_STATUS_IGNORE), SPC_SUCCESS, "wait a");
    const int left = (me - 1 + p) % p;
    CHECK(r[0] == left * 10 && r[2] == left * 10 + 2 && r2[0] == -(left * 10) && r2[2] == -(left * 10 + 2),
          "each request got its own values");
    SPC_Request_free(&a), SPC_Request_free(&b);
  }

  /* The program frees its graph communicator; the request keeps working (as MPI's
   * persistent requests keep theirs). */
  {
    MPI_Comm g2;
    MPI_Comm_dup(g, &g2);
    for (int i = 0; i < 3; ++i) s[i] = me * 10 + i, r[i] = -1;
    CHECK_ALL(ring_init(g2, MPI_INFO_NULL, 3, 3, MPI_DOUBLE, MPI_DOUBLE, s, r, &req), SPC_SUCCESS, "init on g2");
    MPI_Comm_free(&g2);
    for (int k = 0; k < 2; ++k) {
      CHECK_RC(SPC_Start(&req), SPC_SUCCESS, "start after the communicator was freed");
      CHECK_RC(SPC_Wait(&req, MPI_STATUS_IGNORE), SPC_SUCCESS, "wait after the communicator was freed");
    }
    const int left = (me - 1 + p) % p;
    CHECK(r[0] == left * 10 && r[2] == left * 10 + 2, "the values arrived");
    CHECK_RC(SPC_Request_free(&req), SPC_SUCCESS, "free");
  }

  /* The optional checks: the mismatch at init on every rank, with the edge named. */
  setenv("SPARSECOMM_CHECK_COLLECTIVE_ARGS", "1", 1);
  rc = ring_init(g, MPI_INFO_NULL, me == 0 ? 2 : 3, 3, MPI_DOUBLE, MPI_DOUBLE, s, r, &req);
  unsetenv("SPARSECOMM_CHECK_COLLECTIVE_ARGS");
  CHECK_ALL(rc, SPC_ERR_MISMATCH, "SPARSECOMM_CHECK_COLLECTIVE_ARGS=1: the mismatch at init");
  if (me == 1) CHECK(message_has(rc, "edge 0 sends 2 values"), "the receiver names the edge");
  CHECK(req == SPC_REQUEST_NULL, "no request on error");

  /* The same setting on one rank only: that rank would take the checked path (set-up
   * messages, a plan) and the others the direct one, each waiting where the other never
   * comes; the agreement reports it on every rank instead. */
  if (me == 0) setenv("SPARSECOMM_CHECK_COLLECTIVE_ARGS", "1", 1);
  rc = ring_init(g, MPI_INFO_NULL, 3, 3, MPI_DOUBLE, MPI_DOUBLE, s, r, &req);
  if (me == 0) unsetenv("SPARSECOMM_CHECK_COLLECTIVE_ARGS");
  rc = outcome(rc, &req);
  CHECK_ALL(rc, SPC_ERR_MISMATCH, "SPARSECOMM_CHECK_COLLECTIVE_ARGS set on one rank only");
  CHECK(message_has(rc, "SPARSECOMM_CHECK_COLLECTIVE_ARGS"), "the message names the setting");
  CHECK(req == SPC_REQUEST_NULL, "no request left");
}

/* Many inits on one communicator: from its fifth, each agreement is a persistent reduction
 * reused round robin (four per communicator), so a request initialised while the one four
 * inits before it was never started hands that one its result. Twelve requests in flight,
 * started in reverse order, each with its own values; a failure and a count mismatch at
 * inits that use reused reductions, reported as on the first inits; requests that outlive
 * their communicator. Any number of ranks (one: a self-loop). */
static void test_agreement_slots(MPI_Comm g0) {
  enum { N = 12 };
  const int me = capi_rank, p = capi_size, left = (me - 1 + p) % p;
  MPI_Comm g;
  MPI_Comm_dup(g0, &g);
  double s[N][3], r[N][3];
  SPC_Request q[N];
  for (int k = 0; k < N; ++k) {
    for (int i = 0; i < 3; ++i) s[k][i] = 1000 * k + 10 * me + i, r[k][i] = -1;
    CHECK_ALL(ring_init(g, MPI_INFO_NULL, 3, 3, MPI_DOUBLE, MPI_DOUBLE, s[k], r[k], &q[k]), SPC_SUCCESS, "init in flight");
  }
  for (int round = 0; round < 2; ++round) {
    for (int k = N - 1; k >= 0; --k) CHECK_RC(SPC_Start(&q[k]), SPC_SUCCESS, "start (reverse order)");
    int ok = 1;
    for (int k = 0; k < N; ++k) {
      CHECK_RC(SPC_Wait(&q[k], MPI_STATUS_IGNORE), SPC_SUCCESS, "wait");
      for (int i = 0; i < 3; ++i) ok = ok && r[k][i] == 1000 * k + 10 * left + i;
    }
    CHECK(ok, "every request delivered its own values (round %d)", round);
  }
  for (int k = 0; k < N; ++k) CHECK_RC(SPC_Request_free(&q[k]), SPC_SUCCESS, "free");

  if (p >= 2) {
    /* A failure on the last rank at an init on a reused reduction, then four more inits
     * before anyone starts it: the failing rank's error at its init, everyone else's at
     * the first start, the same message; the inits after it are unaffected. */
    SPC_Request bad = SPC_REQUEST_NULL, more[4];
    int rc = ring_init(g, MPI_INFO_NULL, me == last_rank() ? -1 : 3, 3, MPI_DOUBLE, MPI_DOUBLE, s[0], r[0], &bad);
    for (int k = 0; k < 4; ++k)
      CHECK_ALL(ring_init(g, MPI_INFO_NULL, 3, 3, MPI_DOUBLE, MPI_DOUBLE, s[1 + k], r[1 + k], &more[k]), SPC_SUCCESS,
                "an init after the failing one");
    if (me == last_rank()) {
      CHECK_RC(rc, MPI_ERR_COUNT, "the failing rank reports at its init");
    } else {
      CHECK_RC(rc, SPC_SUCCESS, "the others' init returns a request");
      rc = SPC_Start(&bad);
      CHECK_RC(rc, MPI_ERR_COUNT, "their first start reports the failing rank's error");
      CHECK_RC(SPC_Request_free(&bad), MPI_ERR_COUNT, "and free again");
    }
    CHECK(message_has(rc, "sendcounts[0] is negative"), "the failing rank's message");
    CHECK(same_message_everywhere(rc), "the same message everywhere");
    for (int k = 0; k < 4; ++k) CHECK_ALL(outcome(SPC_SUCCESS, &more[k]), SPC_SUCCESS, "a request after it works");

    /* Counts that differ on one edge at a later init, never started: free reports it. */
    rc = ring_init(g, MPI_INFO_NULL, me == 0 ? 2 : 3, 3, MPI_DOUBLE, MPI_DOUBLE, s[0], r[0], &bad);
    CHECK_ALL(rc, SPC_SUCCESS, "a count mismatch passes the local checks");
    for (int k = 0; k < 4; ++k)  /* its reduction's slot reused before it is settled */
      CHECK_ALL(ring_init(g, MPI_INFO_NULL, 3, 3, MPI_DOUBLE, MPI_DOUBLE, s[1 + k], r[1 + k], &more[k]), SPC_SUCCESS,
                "an init after the mismatched one");
    CHECK_ALL(SPC_Request_free(&bad), SPC_ERR_MISMATCH, "free of the never-started request reports the mismatch");
    for (int k = 0; k < 4; ++k) CHECK_ALL(outcome(SPC_SUCCESS, &more[k]), SPC_SUCCESS, "a request after it works");
  }

  /* Requests in flight (reused reductions among them) when the program frees the
   * communicator: they keep working and free cleanly. */
  for (int k = 0; k < 6; ++k) {
    for (int i = 0; i < 3; ++i) r[k][i] = -1;
    CHECK_ALL(ring_init(g, MPI_INFO_NULL, 3, 3, MPI_DOUBLE, MPI_DOUBLE, s[k], r[k], &q[k]), SPC_SUCCESS, "init");
  }
  MPI_Comm_free(&g);
  int ok = 1;
  for (int k = 5; k >= 0; --k) {
    CHECK_RC(SPC_Start(&q[k]), SPC_SUCCESS, "start after the communicator was freed");
    CHECK_RC(SPC_Wait(&q[k], MPI_STATUS_IGNORE), SPC_SUCCESS, "wait");
    for (int i = 0; i < 3; ++i) ok = ok && r[k][i] == 1000 * k + 10 * left + i;
    CHECK_RC(SPC_Request_free(&q[k]), SPC_SUCCESS, "free");
  }
  CHECK(ok, "their values arrived");
}

static void test_crs_args(void) {
  const int me = capi_rank, p = capi_size;
  int dest[2] = {(me + 1) % p, (me + 1) % p};
  int vals[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  int recv_nnz = 123, *src = (int*)0x1, *got = (int*)0x1;
  MPI_Info info;

  info = capi_info("sparsecomm_sdde", "fast", NULL, NULL, NULL, NULL);
  int rc = SPC_Alltoall_crs(1, dest, 2, MPI_INT, vals, &recv_nnz, &src, 2, MPI_INT, (void**)&got, info, MPI_COMM_WORLD);
  CHECK_ALL(rc, SPC_ERR_NOT_FOUND, "unknown SDDE strategy");
  CHECK(message_has(rc, "'fast'; valid SDDE strategies: ") && message_has(rc, "locality_nbx"), "lists the strategies");
  CHECK(recv_nnz == 0 && src == NULL && got == NULL, "outputs cleared on error");
  MPI_Info_free(&info);

  rc = SPC_Alltoall_crs(2, dest, 2, MPI_INT, vals, &recv_nnz, &src, 2, MPI_INT, (void**)&got, MPI_INFO_NULL,
                        MPI_COMM_WORLD);
  CHECK_ALL(rc, SPC_ERR_ARG, "two messages to one destination");

  int bad_dest = me == last_rank() ? p : 0;
  rc = SPC_Alltoall_crs(1, &bad_dest, 2, MPI_INT, vals, &recv_nnz, &src, 2, MPI_INT, (void**)&got, MPI_INFO_NULL,
                        MPI_COMM_WORLD);
  CHECK_ALL(rc, MPI_ERR_RANK, "destination out of range on one rank");
  CHECK(same_message_everywhere(rc), "the same message on every rank");

  rc = SPC_Alltoall_crs(1, dest, 2, MPI_INT, vals, &recv_nnz, &src, 1, MPI_INT, (void**)&got, MPI_INFO_NULL,
                        MPI_COMM_WORLD);
  CHECK_ALL(rc, SPC_ERR_ARG, "recvcount inconsistent with sendcount");

  if (p > 1) {
    /* The message size is a collective argument (as MPI_Alltoall's count). Unchecked, the
     * ranks that receive a message of the wrong size report it (no rank waits): here rank
     * 0 sends 3 ints to rank `dest[0]`. With SPARSECOMM_CHECK_COLLECTIVE_ARGS every rank
     * reports it, at one allreduce per call. */
    rc = SPC_Alltoall_crs(1, dest, me == 0 ? 3 : 2, MPI_INT, vals, &recv_nnz, &src, me == 0 ? 3 : 2, MPI_INT,
                          (void**)&got, MPI_INFO_NULL, MPI_COMM_WORLD);
    if (me == 1) CHECK_RC(rc, SPC_ERR_MISMATCH, "the receiver of the odd size (rank 1) reports it");
    if (rc == SPC_SUCCESS) SPC_Free(src), SPC_Free(got);
    setenv("SPARSECOMM_CHECK_COLLECTIVE_ARGS", "1", 1);
    rc = SPC_Alltoall_crs(1, dest, me == 0 ? 3 : 2, MPI_INT, vals, &recv_nnz, &src, me == 0 ? 3 : 2, MPI_INT,
                          (void**)&got, MPI_INFO_NULL, MPI_COMM_WORLD);
    unsetenv("SPARSECOMM_CHECK_COLLECTIVE_ARGS");
    CHECK_ALL(rc, SPC_ERR_MISMATCH, "fixed message sizes differ between ranks (checked)");
  }

  rc = SPC_Alltoall_crs(1, dest, 2, MPI_INT, vals, NULL, &src, 2, MPI_INT, (void**)&got, MPI_INFO_NULL,
                        MPI_COMM_WORLD);
  CHECK_ALL(rc, SPC_ERR_ARG, "NULL output pointer");

  rc = SPC_Alltoall_crs(1, dest, 2, MPI_INT, me == 0 ? NULL : vals, &recv_nnz, &src, 2, MPI_INT, (void**)&got,
                        MPI_INFO_NULL, MPI_COMM_WORLD);
  CHECK_ALL(rc, MPI_ERR_BUFFER, "NULL sendvals");

  MPI_Datatype vec;
  MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
  MPI_Type_commit(&vec);
  rc = SPC_Alltoall_crs(1, dest, 1, vec, vals, &recv_nnz, &src, 1, vec, (void**)&got, MPI_INFO_NULL, MPI_COMM_WORLD);
  CHECK_ALL(rc, MPI_ERR_TYPE, "non-contiguous CRS datatype");
  MPI_Type_free(&vec);

  int recv_size, *rcounts, *rdispls;
  int counts = me == 0 ? -2 : 2, displs = 0;
  rc = SPC_Alltoallv_crs(1, 8, dest, &counts, &displs, MPI_INT, vals, &recv_nnz, &recv_size, &src, &rcounts, &rdispls,
                         MPI_INT, (void**)&got, MPI_INFO_NULL, MPI_COMM_WORLD);
  CHECK_ALL(rc, MPI_ERR_COUNT, "negative count on one rank");
  counts = 2, displs = 7;
  rc = SPC_Alltoallv_crs(1, 8, dest, &counts, &displs, MPI_INT, vals, &recv_nnz, &recv_size, &src, &rcounts, &rdispls,
                         MPI_INT, (void**)&got, MPI_INFO_NULL, MPI_COMM_WORLD);
  CHECK_ALL(rc, SPC_ERR_ARG, "message outside send_size");
  displs = 0;
  info = capi_info("sparsecomm_sdde", "rma", NULL, NULL, NULL, NULL);
  rc = SPC_Alltoallv_crs(1, 8, dest, &counts, &displs, MPI_INT, vals, &recv_nnz, &recv_size, &src, &rcounts, &rdispls,
                         MPI_INT, (void**)&got, info, MPI_COMM_WORLD);
  CHECK_ALL(rc, SPC_ERR_INFO_VALUE, "rma for variable-size messages");
  MPI_Info_free(&info);
  /* 3 ints received as MPI_2INT: not a whole number of elements. */
  counts = 3;
  rc = SPC_Alltoallv_crs(1, 8, dest, &counts, &displs, MPI_INT, vals, &recv_nnz, &recv_size, &src, &rcounts, &rdispls,
                         MPI_2INT, (void**)&got, MPI_INFO_NULL, MPI_COMM_WORLD);
  CHECK_ALL(rc, SPC_ERR_MISMATCH, "received bytes not a multiple of the receive type");
  CHECK(src == NULL && rcounts == NULL && rdispls == NULL && got == NULL, "nothing allocated on error");
}

static void test_requests(MPI_Comm g) {
  const int me = capi_rank, p = capi_size;
  double s[3], r[3] = {0, 0, 0};
  SPC_Request req = SPC_REQUEST_NULL;
  MPI_Info info = capi_info("sparsecomm_backend", "aggregated_dedup", "sparsecomm_regions", "ppn:2", NULL, NULL);
  int rc = ring_init(g, info, 3, 3, MPI_DOUBLE, MPI_DOUBLE, s, r, &req);
  CHECK_ALL(rc, SPC_SUCCESS, "a valid exchange after all the errors");
  MPI_Info_free(&info);
  if (rc != SPC_SUCCESS) return;
  MPI_Status st;
  st.MPI_SOURCE = 77;
  CHECK_RC(SPC_Wait(&req, &st), SPC_SUCCESS, "wait on an inactive request returns at once");
  CHECK(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG && st.MPI_ERROR == MPI_SUCCESS,
        "empty status");
  for (int i = 0; i < 3; ++i) s[i] = me * 10 + i;
  CHECK_RC(SPC_Start(&req), SPC_SUCCESS, "start");
  rc = SPC_Start(&req);
  CHECK_RC(rc, SPC_ERR_REQUEST, "start while active");
  CHECK(message_has(rc, "already active"), "says why");
  CHECK_RC(SPC_Wait(&req, MPI_STATUS_IGNORE), SPC_SUCCESS, "wait");
  const int left = (me - 1 + p) % p;
  CHECK(r[0] == left * 10 && r[2] == left * 10 + 2, "the exchange delivered the left neighbor's values");
  CHECK_RC(SPC_Request_free(&req), SPC_SUCCESS, "free");
  SPC_Request null = SPC_REQUEST_NULL;
  CHECK_RC(SPC_Start(&null), SPC_ERR_REQUEST, "start of a null request");
  CHECK_RC(SPC_Start(NULL), SPC_ERR_REQUEST, "start(NULL)");
  CHECK_RC(SPC_Wait(&null, MPI_STATUS_IGNORE), SPC_ERR_REQUEST, "wait of a null request");
  CHECK_RC(SPC_Request_free(&null), SPC_ERR_REQUEST, "free of a null request");
  CHECK_RC(SPC_Request_free(NULL), SPC_ERR_REQUEST, "free(NULL)");
}

static void test_error_strings(void) {
  const int codes[] = {SPC_SUCCESS,      SPC_ERR_ARG,     SPC_ERR_NOT_FOUND,       SPC_ERR_INFO_KEY,
                       SPC_ERR_INFO_VALUE, SPC_ERR_MISMATCH, SPC_ERR_REQUEST, SPC_ERR_NOT_IMPLEMENTED,
                       SPC_ERR_INTERNAL, MPI_ERR_TYPE,    MPI_ERR_TOPOLOGY,        12345678};
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; ++i) {
    char msg[SPC_MAX_ERROR_STRING];
    int len = -1;
    int rc = SPC_Error_string(codes[i], msg, &len);
    CHECK(rc == SPC_SUCCESS && len > 0 && (int)strlen(msg) == len, "error string of code %d: '%s'", codes[i], msg);
  }
  char msg[SPC_MAX_ERROR_STRING];
  int len;
  SPC_Error_string(SPC_SUCCESS, msg, &len);
  CHECK(strcmp(msg, "no error") == 0, "SPC_SUCCESS: '%s'", msg);
  CHECK(SPC_Error_string(SPC_ERR_ARG, NULL, &len) == SPC_ERR_ARG, "NULL string buffer");
  CHECK(SPC_Free(NULL) == SPC_SUCCESS, "SPC_Free(NULL)");
}

int main(int argc, char** argv) {
  capi_init(&argc, &argv);
  MPI_Comm g = ring();
  test_names_and_info(g);
  test_neighbor_args(g);
  test_deferred_agreement(g);
  test_agreement_slots(g);
  test_crs_args();
  test_requests(g);
  test_error_strings();
  MPI_Comm_free(&g);
  return capi_finish();
}
