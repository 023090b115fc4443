/* The contract of the persistent neighborhood alltoallv's deferred agreement (backend p2p,
 * docs/architecture.md "Deferred agreement"), on explicit neighbor lists (a ring on a
 * duplicate of MPI_COMM_WORLD), so that it also runs under SimGrid SMPI, which has no graph
 * communicators:
 *   - the init waits for no other rank (after the communicator's first init): it returns
 *     MPI_SUCCESS while a neighbor has not even called it yet;
 *   - arguments that pass every rank's local checks but disagree across ranks (a count
 *     that differs between the two ends of one edge) are reported by the first SPC_Start
 *     on EVERY rank, also on the ranks away from that edge, with the same message, before
 *     any data moves (the receive buffers stay untouched); again at free;
 *   - a rank whose own arguments fail reports at init, every other rank at its first start;
 *   - requests whose first starts come in different orders on different ranks all work.
 * A plain C program: prints "N passed, N failed" on rank 0, exits non-zero on every rank
 * when any check failed. Without the agreement the ranks away from the bad edge would
 * succeed, and the receiver of the short message would receive it. */
#include "capi_test.h"

/* The ring: receive from the left, send to the right, `scount` / `rcount` doubles. */
static int ring(MPI_Comm c, int scount, int rcount, const double* s, double* r, SPC_Request* req) {
  const int me = capi_rank, p = capi_size;
  int left = (me - 1 + p) % p, right = (me + 1) % p, zero = 0;
  return SPC_Neighbor_alltoallv_init_lists(1, &left, 1, &right, s, &scount, &zero, NULL, MPI_DOUBLE, r, &rcount,
                                           &zero, NULL, MPI_DOUBLE, c, MPI_INFO_NULL, req);
}

static int untouched(const double* r, int n) {
  int ok = 1;
  for (int i = 0; i < n; ++i) ok = ok && r[i] == -1.0;
  return ok;
}

/* Rank 0 inits and then waits for a synchronous message from rank 1, which rank 1 sends
 * before its own init: an init that waited for the other ranks would deadlock here (the
 * test's timeout fails it). */
static void test_init_waits_for_nobody(MPI_Comm c) {
  const int me = capi_rank, left = (me - 1 + capi_size) % capi_size;
  double s[3], r[3] = {-1, -1, -1};
  for (int i = 0; i < 3; ++i) s[i] = 10 * me + i;
  SPC_Request req = SPC_REQUEST_NULL;
  int token = 7;
  if (me == 1) MPI_Ssend(&token, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
  CHECK_RC(ring(c, 3, 3, s, r, &req), SPC_SUCCESS, "init");
  if (me == 0) MPI_Recv(&token, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  CHECK(untouched(r, 3), "the init moves no data");
  CHECK_RC(SPC_Start(&req), SPC_SUCCESS, "start");
  CHECK_RC(SPC_Wait(&req, MPI_STATUS_IGNORE), SPC_SUCCESS, "wait");
  CHECK(r[0] == 10 * left && r[2] == 10 * left + 2, "the values arrived");
  CHECK_RC(SPC_Request_free(&req), SPC_SUCCESS, "free");
}

/* Edge 0 -> 1 disagrees: rank 0 sends 2 values, rank 1 expects 3. */
static void test_mismatch_everywhere(MPI_Comm c) {
  const int me = capi_rank;
  double s[3] = {1, 2, 3}, r[3] = {-1, -1, -1};
  SPC_Request req = SPC_REQUEST_NULL;
  int rc = ring(c, me == 0 ? 2 : 3, 3, s, r, &req);
  CHECK_RC(rc, SPC_SUCCESS, "the init returns success (every local check passes)");
  CHECK(capi_same_everywhere(rc), "on every rank");
  rc = SPC_Start(&req);
  CHECK_RC(rc, SPC_ERR_MISMATCH, "the first start reports the mismatch");
  CHECK(capi_same_everywhere(rc), "on every rank, also away from the edge");
  CHECK(message_has(rc, "inconsistent counts"), "says what");
  CHECK(same_message_everywhere(rc), "the same message everywhere");
  CHECK(untouched(r, 3), "before any data moved");
  CHECK_RC(SPC_Start(&req), SPC_ERR_MISMATCH, "again at the next start");
  CHECK_RC(SPC_Request_free(&req), SPC_ERR_MISMATCH, "and at free");
  CHECK(req == SPC_REQUEST_NULL, "which frees the request");
  CHECK(untouched(r, 3), "no data moved at all");
}

/* The last rank passes a negative count: its init fails, the others' first start. */
static void test_local_failure_everywhere(MPI_Comm c) {
  const int me = capi_rank, last = capi_size - 1;
  double s[3] = {1, 2, 3}, r[3] = {-1, -1, -1};
  SPC_Request req = SPC_REQUEST_NULL;
  int rc = ring(c, me == last ? -1 : 3, 3, s, r, &req);
  if (me == last) {
    CHECK_RC(rc, MPI_ERR_COUNT, "the failing rank reports at init");
    CHECK(req == SPC_REQUEST_NULL, "with no request");
  } else {
    CHECK_RC(rc, SPC_SUCCESS, "the others' init returns a request");
    rc = SPC_Start(&req);
    CHECK_RC(rc, MPI_ERR_COUNT, "their first start reports the failing rank's error");
    CHECK_RC(SPC_Request_free(&req), MPI_ERR_COUNT, "and free again");
  }
  CHECK(message_has(rc, "sendcounts[0] is negative"), "the failing rank's message");
  CHECK(same_message_everywhere(rc), "the same message everywhere");
  CHECK(untouched(r, 3), "no data moved");
}

/* Three requests, first started in different orders on odd and even ranks; the first is
 * freed without a start. */
static void test_orders(MPI_Comm c) {
  const int me = capi_rank, left = (me - 1 + capi_size) % capi_size;
  double s[3][3], r[3][3];
  SPC_Request q[3];
  for (int k = 0; k < 3; ++k) {
    for (int i = 0; i < 3; ++i) s[k][i] = 100 * k + 10 * me + i, r[k][i] = -1;
    CHECK_RC(ring(c, 3, 3, s[k], r[k], &q[k]), SPC_SUCCESS, "init");
  }
  CHECK_RC(SPC_Request_free(&q[0]), SPC_SUCCESS, "free of a never-started request");
  if (me % 2) CHECK_RC(SPC_Start(&q[2]), SPC_SUCCESS, "start 2 first");
  CHECK_RC(SPC_Start(&q[1]), SPC_SUCCESS, "start 1");
  if (me % 2 == 0) CHECK_RC(SPC_Start(&q[2]), SPC_SUCCESS, "start 2 second");
  for (int k = 1; k < 3; ++k) {
    CHECK_RC(SPC_Wait(&q[k], MPI_STATUS_IGNORE), SPC_SUCCESS, "wait");
    CHECK(r[k][0] == 100 * k + 10 * left && r[k][2] == 100 * k + 10 * left + 2, "request %d's own values", k);
    CHECK_RC(SPC_Request_free(&q[k]), SPC_SUCCESS, "free");
  }
}

int main(int argc, char** argv) {
  capi_init(&argc, &argv);
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  double s[3] = {0, 0, 0}, r[3];
  SPC_Request req = SPC_REQUEST_NULL;
  /* The communicator's first init duplicates it for the library (collective). */
  CHECK_RC(ring(c, 3, 3, s, r, &req), SPC_SUCCESS, "first init");
  CHECK_RC(SPC_Request_free(&req), SPC_SUCCESS, "free");
  if (capi_size >= 2) {
    test_init_waits_for_nobody(c);
    test_mismatch_everywhere(c);
    test_local_failure_everywhere(c);
  }
  test_orders(c);
  MPI_Comm_free(&c);
  return capi_finish();
}
