/* Plain MPI (no sparsecomm): 1,000 distributed-graph communicators created, used by one
 * MPI_Neighbor_allgather (checked) and freed. Under libsparsecomm_mpi.so every one gets a
 * plan that must die with its communicator: the resident memory after 1,000 must stay
 * within LIMIT_KB of the memory after the first 100 (default 4096 KB).
 *   comm_churn [ITERATIONS] [LIMIT_KB]      prints "churn: ... grew N KB"; exit 1 if more */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static long rss_kb(void) {
  long pages = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    fclose(f);
  }
  return resident * 4; /* 4 KiB pages */
}

int main(int argc, char **argv) {
  int rank, p, n = argc > 1 ? atoi(argv[1]) : 1000, bad = 0;
  long limit = argc > 2 ? atol(argv[2]) : 4096, at100 = 0, grew, maxgrew = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  for (int it = 0; it < n; it++) {
    /* A ring both ways (distinct neighbors when p > 2), shifted by the iteration. */
    int nb[2], deg = 0;
    if (p > 1) nb[deg++] = (rank + 1 + it % (p - 1)) % p;
    if (p > 2 && (rank + p - 1 - it % (p - 1)) % p != nb[0]) nb[deg++] = (rank + p - 1 - it % (p - 1)) % p;
    int src[2], sdeg = 0;
    /* Sources: the ranks that chose me. */
    for (int r = 0; r < p; r++) {
      if (r == rank) continue;
      int a = (r + 1 + it % (p - 1)) % p, b = (r + p - 1 - it % (p - 1)) % p;
      if (a == rank || (p > 2 && b != a && b == rank)) src[sdeg++] = r;
    }
    MPI_Comm g;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, sdeg, src, MPI_UNWEIGHTED, deg, nb, MPI_UNWEIGHTED, MPI_INFO_NULL,
                                   0, &g);
    int mine = rank * 1000 + it, got[2] = {-1, -1};
    MPI_Neighbor_allgather(&mine, 1, MPI_INT, got, 1, MPI_INT, g);
    for (int s = 0; s < sdeg; s++) bad += got[s] != src[s] * 1000 + it;
    MPI_Comm_free(&g);
    if (it == 99 || (n < 100 && it == 0)) at100 = rss_kb();
  }
  grew = rss_kb() - at100;
  MPI_Allreduce(&grew, &maxgrew, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
  int allbad = 0;
  MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("churn: %d communicators created, used and freed on %d ranks; %d wrong values; resident memory grew %ld KB "
           "after the first 100 (limit %ld): %s\n", n, p, allbad, maxgrew, limit,
           allbad || maxgrew > limit ? "FAILED" : "OK");
  MPI_Finalize();
  return allbad || maxgrew > limit;
}
