/* SPC_Alltoall_crs / SPC_Alltoallv_crs against the direct answer: the send pattern is a
 * deterministic function of (sender, receiver), so every rank computes what it must
 * receive. Every SDDE strategy, several region layouts and densities, zero-length and
 * self messages, destinations in any order, gaps in the send buffer, a derived receive
 * type, and a dense MPI_Alltoallv cross-check. */
#include "capi_test.h"

static const char* strategies[] = {"personalized", "nbx", "rma", "locality_personalized", "locality_nbx"};
static const char* regions[] = {"node", "ppn:2", "cyclic:3"};

/* Does s send to d (in pattern `v`)? Self and zero-length messages included. */
static int sends(int s, int d, int v, int density) {
  return (int)(capi_hash(s, d, v, 1) % 100) < density;
}
/* Variable count of the message s -> d: 0..4 (0 is a zero-length message). */
static int vcount(int s, int d, int v) { return (int)(capi_hash(s, d, v, 2) % 5); }
static int ival(int s, int d, int k) { return s * 100000 + d * 100 + k; }
static double dval(int s, int d, int k, int v) { return s * 1000.0 + d + 0.5 * k + 0.001 * v; }

/* Destinations of `me` in a scrambled order. */
static int destinations(int me, int p, int v, int density, int* dest) {
  int n = 0;
  for (int d = 0; d < p; ++d)
    if (sends(me, d, v, density)) dest[n++] = d;
  for (int i = n - 1; i > 0; --i) { /* Fisher-Yates with the test's own hash */
    int j = (int)(capi_hash(me, i, v, 3) % (uint64_t)(i + 1));
    int t = dest[i];
    dest[i] = dest[j];
    dest[j] = t;
  }
  return n;
}

static void test_fixed(const char* strategy, const char* region, int v, int density) {
  const int me = capi_rank, p = capi_size, count = 3;
  int* dest = capi_xmalloc(sizeof(int) * p);
  int n = destinations(me, p, v, density, dest);
  int* vals = capi_xmalloc(sizeof(int) * (size_t)(n * count));
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < count; ++k) vals[i * count + k] = ival(me, dest[i], k);
  MPI_Info info = capi_info("sparsecomm_sdde", strategy, "sparsecomm_regions", region, NULL, NULL);
  /* Receive as one element of a derived contiguous type of 3 ints (same bytes). */
  MPI_Datatype three;
  MPI_Type_contiguous(count, MPI_INT, &three);
  MPI_Type_commit(&three);
  int recv_nnz = -1, *src = NULL;
  int* got = NULL;
  int rc = SPC_Alltoall_crs(n, dest, count, MPI_INT, vals, &recv_nnz, &src, 1, three, (void**)&got, info,
                            MPI_COMM_WORLD);
  char what[160];
  snprintf(what, sizeof what, "Alltoall_crs %s %s pattern %d density %d", strategy, region, v, density);
  CHECK_RC(rc, SPC_SUCCESS, what);
  if (rc == SPC_SUCCESS) {
    int ok = 1, k = 0;
    for (int s = 0; s < p && ok; ++s) {
      if (!sends(s, me, v, density)) continue;
      if (k >= recv_nnz || src[k] != s) {
        ok = 0;
        fprintf(stderr, "[rank %d] %s: message %d should come from %d\n", me, what, k, s);
        break;
      }
      for (int j = 0; j < count; ++j)
        if (got[k * count + j] != ival(s, me, j)) {
          ok = 0;
          fprintf(stderr, "[rank %d] %s: value %d from %d is %d\n", me, what, j, s, got[k * count + j]);
        }
      ++k;
    }
    CHECK(ok && k == recv_nnz, "%s: %d messages expected, %d received", what, k, recv_nnz);
    CHECK((recv_nnz == 0) == (src == NULL) && (recv_nnz == 0) == (got == NULL),
          "%s: outputs are NULL exactly when empty", what);
  }
  SPC_Free(src);
  SPC_Free(got);
  MPI_Type_free(&three);
  MPI_Info_free(&info);
  free(vals);
  free(dest);
}

static void test_variable(const char* strategy, const char* region, int v, int density, MPI_Info* shared) {
  const int me = capi_rank, p = capi_size;
  int* dest = capi_xmalloc(sizeof(int) * p);
  int n = destinations(me, p, v, density, dest);
  int *counts = capi_xmalloc(sizeof(int) * (size_t)(n + 1)), *displs = capi_xmalloc(sizeof(int) * (size_t)(n + 1));
  /* Messages placed back to front with a gap of 2 between them. */
  int size = 0;
  for (int i = 0; i < n; ++i) size += vcount(me, dest[i], v) + 2;
  double* vals = capi_xmalloc(sizeof(double) * (size_t)(size + 1));
  for (int i = 0; i < size; ++i) vals[i] = -7.0;
  int pos = size;
  for (int i = 0; i < n; ++i) {
    counts[i] = vcount(me, dest[i], v);
    pos -= counts[i] + 2;
    displs[i] = pos + 1;
    for (int k = 0; k < counts[i]; ++k) vals[displs[i] + k] = dval(me, dest[i], k, v);
  }
  MPI_Info info = shared ? *shared : capi_info("sparsecomm_sdde", strategy, "sparsecomm_regions", region, NULL, NULL);
  int recv_nnz = -1, recv_size = -1, *src = NULL, *rcounts = NULL, *rdispls = NULL;
  double* got = NULL;
  int rc = SPC_Alltoallv_crs(n, size, dest, counts, displs, MPI_DOUBLE, vals, &recv_nnz, &recv_size, &src, &rcounts,
                             &rdispls, MPI_DOUBLE, (void**)&got, info, MPI_COMM_WORLD);
  char what[160];
  snprintf(what, sizeof what, "Alltoallv_crs %s %s pattern %d density %d", shared ? "(default)" : strategy, region, v,
           density);
  CHECK_RC(rc, SPC_SUCCESS, what);
  if (rc == SPC_SUCCESS) {
    int ok = 1, k = 0, total = 0;
    for (int s = 0; s < p && ok; ++s) {
      if (!sends(s, me, v, density)) continue;
      const int c = vcount(s, me, v);
      if (k >= recv_nnz || src[k] != s || rcounts[k] != c || rdispls[k] != total) {
        ok = 0;
        fprintf(stderr, "[rank %d] %s: message %d should come from %d with %d values at %d\n", me, what, k, s, c,
                total);
        break;
      }
      for (int j = 0; j < c; ++j)
        if (got[total + j] != dval(s, me, j, v)) ok = 0;
      total += c;
      ++k;
    }
    CHECK(ok && k == recv_nnz && total == recv_size, "%s: %d messages / %d values expected, got %d / %d", what, k,
          total, recv_nnz, recv_size);
  }
  SPC_Free(src);
  SPC_Free(rcounts);
  SPC_Free(rdispls);
  SPC_Free(got);
  if (!shared) MPI_Info_free(&info);
  free(vals);
  free(counts);
  free(displs);
  free(dest);
}

/* The same exchange through a dense MPI_Alltoallv (the direct answer computed by MPI). */
static void test_against_alltoallv(void) {
  const int me = capi_rank, p = capi_size, v = 9, density = 60;
  int* dest = capi_xmalloc(sizeof(int) * p);
  int n = destinations(me, p, v, density, dest);
  int *counts = capi_xmalloc(sizeof(int) * (size_t)(n + 1)), *displs = capi_xmalloc(sizeof(int) * (size_t)(n + 1));
  int size = 0;
  for (int i = 0; i < n; ++i) displs[i] = size, counts[i] = vcount(me, dest[i], v), size += counts[i];
  int64_t* vals = capi_xmalloc(sizeof(int64_t) * (size_t)(size + 1));
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < counts[i]; ++k) vals[displs[i] + k] = (int64_t)ival(me, dest[i], k) * 1000003;
  /* Dense reference. */
  int *sc = calloc((size_t)p, sizeof(int)), *sd = calloc((size_t)p, sizeof(int)), *rc_ = calloc((size_t)p, sizeof(int)),
      *rd = calloc((size_t)p, sizeof(int));
  int64_t* dense_send = capi_xmalloc(sizeof(int64_t) * (size_t)(size + 1));
  int off = 0;
  for (int d = 0; d < p; ++d) {
    sd[d] = off;
    for (int i = 0; i < n; ++i)
      if (dest[i] == d) {
        sc[d] = counts[i];
        memcpy(dense_send + off, vals + displs[i], sizeof(int64_t) * (size_t)counts[i]);
        off += counts[i];
      }
  }
  MPI_Alltoall(sc, 1, MPI_INT, rc_, 1, MPI_INT, MPI_COMM_WORLD);
  int rtotal = 0;
  for (int s = 0; s < p; ++s) rd[s] = rtotal, rtotal += rc_[s];
  int64_t* dense_recv = capi_xmalloc(sizeof(int64_t) * (size_t)(rtotal + 1));
  MPI_Alltoallv(dense_send, sc, sd, MPI_INT64_T, dense_recv, rc_, rd, MPI_INT64_T, MPI_COMM_WORLD);

  for (int si = 0; si < 5; ++si) {
    if (si == 2) continue; /* rma: fixed-size only */
    MPI_Info info = capi_info("sparsecomm_sdde", strategies[si], "sparsecomm_regions", "ppn:2", NULL, NULL);
    int recv_nnz, recv_size, *src = NULL, *rcounts = NULL, *rdispls = NULL;
    int64_t* got = NULL;
    int rc = SPC_Alltoallv_crs(n, size, dest, counts, displs, MPI_INT64_T, vals, &recv_nnz, &recv_size, &src,
                               &rcounts, &rdispls, MPI_INT64_T, (void**)&got, info, MPI_COMM_WORLD);
    CHECK_RC(rc, SPC_SUCCESS, strategies[si]);
    if (rc == SPC_SUCCESS) {
      /* Every source that sent (even zero values) appears; values equal MPI's. */
      int ok = recv_size == rtotal, k = 0;
      for (int s = 0; s < p && ok; ++s) {
        if (!sends(s, me, v, density)) continue;
        if (k >= recv_nnz || src[k] != s || rcounts[k] != rc_[s] ||
            (rc_[s] > 0 && memcmp(got + rdispls[k], dense_recv + rd[s], sizeof(int64_t) * (size_t)rc_[s]) != 0))
          ok = 0;
        ++k;
      }
      CHECK(ok && k == recv_nnz, "Alltoallv_crs %s equals MPI_Alltoallv", strategies[si]);
    }
    SPC_Free(src);
    SPC_Free(rcounts);
    SPC_Free(rdispls);
    SPC_Free(got);
    MPI_Info_free(&info);
  }
  free(sc), free(sd), free(rc_), free(rd), free(dense_send), free(dense_recv), free(vals), free(counts), free(displs),
      free(dest);
}

/* Received bytes reinterpreted in another unit: pairs of ints received as MPI_2INT. */
static void test_reinterpret(void) {
  const int me = capi_rank, p = capi_size;
  int dest = (me + 1) % p;
  int counts = 4, displs = 0, vals[4] = {me, me + 1, me + 2, me + 3};
  int recv_nnz, recv_size, *src = NULL, *rcounts = NULL, *rdispls = NULL, *got = NULL;
  int rc = SPC_Alltoallv_crs(1, 4, &dest, &counts, &displs, MPI_INT, vals, &recv_nnz, &recv_size, &src, &rcounts,
                             &rdispls, MPI_2INT, (void**)&got, MPI_INFO_NULL, MPI_COMM_WORLD);
  CHECK_RC(rc, SPC_SUCCESS, "Alltoallv_crs MPI_INT -> MPI_2INT");
  if (rc == SPC_SUCCESS) {
    const int from = (me - 1 + p) % p;
    CHECK(recv_nnz == 1 && src[0] == from && rcounts[0] == 2 && recv_size == 2 && got[0] == from && got[3] == from + 3,
          "4 ints arrive as 2 MPI_2INT");
  }
  SPC_Free(src), SPC_Free(rcounts), SPC_Free(rdispls), SPC_Free(got);
}

int main(int argc, char** argv) {
  capi_init(&argc, &argv);
  const int densities[] = {30, 100};
  for (int ri = 0; ri < 3; ++ri)
    for (int si = 0; si < 5; ++si)
      for (int di = 0; di < 2; ++di) {
        const int v = ri * 10 + si * 2 + di;
        test_fixed(strategies[si], regions[ri], v, densities[di]);
        if (si != 2) test_variable(strategies[si], regions[ri], v, densities[di], NULL);
      }
  /* Nobody sends anything. */
  test_fixed("nbx", "node", 99, 0);
  test_variable("locality_nbx", "ppn:2", 99, 0, NULL);
  /* Defaults (MPI_INFO_NULL: personalized, node regions). */
  MPI_Info none = MPI_INFO_NULL;
  test_variable("", "node", 77, 50, &none);
  test_against_alltoallv();
  test_reinterpret();
  return capi_finish();
}
