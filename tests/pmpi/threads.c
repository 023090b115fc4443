/* A plain MPI program (no sparsecomm include) at MPI_THREAD_MULTIPLE: two threads call
 * neighborhood collectives at the same time, each on a distributed-graph communicator of
 * its own (each rank: the next two and the previous rank of a ring, and itself), blocking,
 * non-blocking and alltoallv forms; every received value of every call is checked against
 * MPI's definition. Under the PMPI layer every one of these calls must go to MPI's own (the
 * layer's state has no locks: docs/interposition.md).
 *
 *   threads [calls per thread and form, default 100]
 *
 * Prints "threads: T threads x C calls, V values checked on P ranks, W wrong"; exits 77
 * (skipped) where MPI does not provide MPI_THREAD_MULTIPLE. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 2
#define DEG 4

static int P, me, calls;

struct Work {
  MPI_Comm comm;
  int id;
  long checked, wrong;
};

static int value(int r, int t, int c, int j, int u) { return r * 100000 + t * 30000 + (c % 97) * 200 + j * 20 + u; }

static void* run(void* arg) {
  struct Work* w = (struct Work*)arg;
  const int n = 3 + w->id; /* ints per block: the two threads differ */
  int src[DEG], dst[DEG];
  int sw[DEG], dw[DEG]; /* (unfilled: the graph is unweighted) */
  MPI_Dist_graph_neighbors(w->comm, DEG, src, sw, DEG, dst, dw);
  int* sb = malloc(sizeof(int) * DEG * (size_t)n);
  int* rb = malloc(sizeof(int) * DEG * (size_t)n);
  int cnt[DEG], dsp[DEG];
  for (int i = 0; i < DEG; ++i) cnt[i] = n, dsp[i] = i * n;
  for (int c = 0; c < calls; ++c) {
    for (int form = 0; form < 3; ++form) {
      /* allgather: one block for all; alltoallv: block j for destination j */
      for (int j = 0; j < DEG; ++j)
        for (int u = 0; u < n; ++u) sb[j * n + u] = value(me, w->id, c, form == 2 ? j : 0, u);
      if (form == 0) {
        MPI_Neighbor_allgather(sb, n, MPI_INT, rb, n, MPI_INT, w->comm);
      } else if (form == 1) {
        MPI_Request r;
        MPI_Ineighbor_allgather(sb, n, MPI_INT, rb, n, MPI_INT, w->comm, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
      } else {
        MPI_Neighbor_alltoallv(sb, cnt, dsp, MPI_INT, rb, cnt, dsp, MPI_INT, w->comm);
      }
      for (int i = 0; i < DEG; ++i) {
        /* the block from source i: for alltoallv, the one it made for the destination
         * slot that names this rank (the ring is symmetric: source i's j-th destination) */
        int j = 0;
        if (form == 2) {
          int sdst[DEG];
          /* source src[i] sends to (s+1, s+2, s-1, s); find this rank among them */
          const int s = src[i];
          sdst[0] = (s + 1) % P, sdst[1] = (s + 2) % P, sdst[2] = (s - 1 + P) % P, sdst[3] = s;
          /* duplicate ranks on small rings: MPI pairs the k-th message from s to this rank
           * with the k-th receive slot naming s */
          int seen = 0;
          for (int k = 0; k < i; ++k) seen += src[k] == s;
          for (j = 0; j < DEG; ++j)
            if (sdst[j] == me && seen-- == 0) break;
        }
        for (int u = 0; u < n; ++u, ++w->checked) w->wrong += rb[i * n + u] != value(src[i], w->id, c, j, u);
      }
    }
  }
  free(sb);
  free(rb);
  return NULL;
}

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (me == 0) printf("threads: MPI_THREAD_MULTIPLE not provided (level %d): skipped\n", provided);
    MPI_Finalize();
    return 77;
  }
  calls = argc > 1 ? atoi(argv[1]) : 100;
  int dst[DEG] = {(me + 1) % P, (me + 2) % P, (me - 1 + P) % P, me};
  int src[DEG] = {(me - 1 + P) % P, (me - 2 + 2 * P) % P, (me + 1) % P, me};
  struct Work w[THREADS];
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; ++t) {
    w[t].id = t, w[t].checked = w[t].wrong = 0;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, DEG, src, MPI_UNWEIGHTED, DEG, dst, MPI_UNWEIGHTED, MPI_INFO_NULL,
                                   0, &w[t].comm);
  }
  for (int t = 0; t < THREADS; ++t) pthread_create(&th[t], NULL, run, &w[t]);
  long mine[2] = {0, 0}, all[2];
  for (int t = 0; t < THREADS; ++t) {
    pthread_join(th[t], NULL);
    mine[0] += w[t].checked, mine[1] += w[t].wrong;
    MPI_Comm_free(&w[t].comm);
  }
  MPI_Reduce(mine, all, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (me == 0)
    printf("threads: %d threads x %d calls, %ld values checked on %d ranks, %ld %s\n", THREADS, 3 * calls, all[0], P,
           all[1], all[1] ? "WRONG" : "wrong");
  MPI_Finalize();
  return me != 0 || all[1] == 0 ? 0 : 1;
}
