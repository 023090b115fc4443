/* Helpers shared by the C API tests (plain C99). Each test counts checks on every rank;
 * capi_finish() sums them over the ranks, prints "N passed, N failed" on rank 0 and returns
 * the exit code (non-zero on every rank if any check failed anywhere). */
#ifndef SPARSECOMM_CAPI_TEST_H
#define SPARSECOMM_CAPI_TEST_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sparsecomm.h"

static long capi_passed = 0, capi_failed = 0;
static int capi_rank = 0, capi_size = 1;

#define CHECK(cond, ...)                                                               \
  do {                                                                                 \
    if (cond) {                                                                        \
      ++capi_passed;                                                                   \
    } else {                                                                           \
      ++capi_failed;                                                                   \
      fprintf(stderr, "[rank %d] FAILED %s:%d: ", capi_rank, __FILE__, __LINE__);      \
      fprintf(stderr, __VA_ARGS__);                                                    \
      fprintf(stderr, "\n");                                                           \
    }                                                                                  \
  } while (0)

/* Checks a return code, printing the library's message when it is not the expected one. */
#define CHECK_RC(rc, expected, what)                                                               \
  do {                                                                                             \
    int capi_rc_ = (rc);                                                                           \
    if (capi_rc_ == (expected)) {                                                                  \
      ++capi_passed;                                                                               \
    } else {                                                                                       \
      char capi_msg_[SPC_MAX_ERROR_STRING];                                                        \
      int capi_len_ = 0;                                                                           \
      SPC_Error_string(capi_rc_, capi_msg_, &capi_len_);                                           \
      ++capi_failed;                                                                               \
      fprintf(stderr, "[rank %d] FAILED %s:%d: %s: code %d, expected %d: %s\n", capi_rank, __FILE__, \
              __LINE__, (what), capi_rc_, (int)(expected), capi_msg_);                             \
    }                                                                                              \
  } while (0)

/* Checks that request req runs on backend want (SPC_Request_backend); what: the case. A macro
 * for the caller's file and line in the failure. */
#define CHECK_BACKEND(req, want, what)                                                               \
  do {                                                                                               \
    char capi_name_[64];                                                                             \
    int capi_len_ = 0;                                                                               \
    SPC_Request_backend((req), capi_name_, &capi_len_);                                              \
    CHECK(strcmp(capi_name_, (want)) == 0, "%s: request runs on '%s', not '%s'", (what), capi_name_, \
          (want));                                                                                   \
  } while (0)

static inline void capi_init(int* argc, char*** argv) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &capi_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &capi_size);
}

static inline int capi_finish(void) {
  long mine[2] = {capi_passed, capi_failed}, sum[2] = {0, 0};
  MPI_Allreduce(mine, sum, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (capi_rank == 0) {
    printf("%ld passed, %ld failed\n", sum[0], sum[1]);
    fflush(stdout);
  }
  MPI_Finalize();
  return sum[1] == 0 ? 0 : 1;
}

/* Deterministic pseudo-random numbers: the same on every rank for the same arguments. */
static inline uint64_t capi_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
static inline uint64_t capi_hash(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  return capi_mix(capi_mix(capi_mix(capi_mix(a) ^ b) ^ c) ^ d);
}

/* The same code on every rank (for collective calls). */
static inline int capi_same_everywhere(int code) {
  int v[2] = {code, -code}, mx[2];
  MPI_Allreduce(v, mx, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return mx[0] == code && mx[1] == -code;
}

/* 1 when the message of `code` (the calling thread's last error) contains `needle`. */
static inline int message_has(int code, const char* needle) {
  char msg[SPC_MAX_ERROR_STRING];
  int len = 0;
  SPC_Error_string(code, msg, &len);
  return strstr(msg, needle) != NULL && len == (int)strlen(msg);
}

/* 1 when every rank's message for `code` is the same (a hash; max and min over the ranks). */
static inline int same_message_everywhere(int code) {
  char msg[SPC_MAX_ERROR_STRING];
  int len = 0;
  SPC_Error_string(code, msg, &len);
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < len; ++i) h = (h ^ (unsigned char)msg[i]) * 1099511628211ull;
  uint64_t v[2] = {h, ~h}, mx[2];
  MPI_Allreduce(v, mx, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return mx[0] == h && mx[1] == ~h;
}

static inline void* capi_xmalloc(size_t n) {
  void* p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return p;
}

/* A distributed graph communicator and its lists, from the multiplicity of each edge s -> d
 * (mult(s, d, g); 2 = a repeated edge) in graph g. */
typedef struct {
  int g, indeg, outdeg;
  int *srcs, *dsts;
  MPI_Comm comm;
} Graph;

/* Fisher-Yates shuffle of v, the same for the same (rank, seed, salt). */
static inline void capi_scramble(int* v, int n, uint64_t seed, uint64_t salt) {
  for (int i = n - 1; i > 0; --i) {
    int j = (int)(capi_hash((uint64_t)capi_rank, (uint64_t)i, seed, salt) % (uint64_t)(i + 1));
    int t = v[i];
    v[i] = v[j];
    v[j] = t;
  }
}

/* Graph g with sorted neighbor lists, or (scramble) lists shuffled with the seeds given. */
static inline Graph capi_graph(int g, int (*mult)(int, int, int), int scramble, uint64_t dst_seed, uint64_t src_seed,
                               uint64_t salt) {
  Graph G;
  const int me = capi_rank, p = capi_size;
  G.g = g;
  G.indeg = G.outdeg = 0;
  G.srcs = (int*)capi_xmalloc(sizeof(int) * (size_t)(2 * p + 1));
  G.dsts = (int*)capi_xmalloc(sizeof(int) * (size_t)(2 * p + 1));
  for (int r = 0; r < p; ++r) {
    for (int m = 0; m < mult(me, r, g); ++m) G.dsts[G.outdeg++] = r;
    for (int m = 0; m < mult(r, me, g); ++m) G.srcs[G.indeg++] = r;
  }
  if (scramble) {
    capi_scramble(G.dsts, G.outdeg, dst_seed, salt);
    capi_scramble(G.srcs, G.indeg, src_seed, salt);
  }
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, G.indeg, G.srcs, MPI_UNWEIGHTED, G.outdeg, G.dsts, MPI_UNWEIGHTED,
                                 MPI_INFO_NULL, 0, &G.comm);
  return G;
}

static inline void capi_free_graph(Graph* G) {
  MPI_Comm_free(&G->comm);
  free(G->srcs);
  free(G->dsts);
}

/* An MPI_Info with up to three key/value pairs (NULL key: unused). */
static inline MPI_Info capi_info(const char* k1, const char* v1, const char* k2, const char* v2, const char* k3,
                          const char* v3) {
  MPI_Info info;
  MPI_Info_create(&info);
  if (k1) MPI_Info_set(info, k1, v1);
  if (k2) MPI_Info_set(info, k2, v2);
  if (k3) MPI_Info_set(info, k3, v3);
  return info;
}

/* The info of one backend configuration: sparsecomm_backend and sparsecomm_regions, and where
 * k is given the combining options sparsecomm_k, sparsecomm_theta and sparsecomm_aware (the
 * neighbor and gather tests run the same configurations). */
static inline MPI_Info capi_backend_info(const char* backend, const char* region, const char* k, const char* theta,
                                         const char* aware) {
  MPI_Info info = capi_info("sparsecomm_backend", backend, "sparsecomm_regions", region, NULL, NULL);
  if (k) {
    MPI_Info_set(info, "sparsecomm_k", k);
    MPI_Info_set(info, "sparsecomm_theta", theta);
    MPI_Info_set(info, "sparsecomm_aware", aware);
  }
  return info;
}

#endif
