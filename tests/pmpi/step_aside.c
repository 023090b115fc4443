/* A plain MPI program (no sparsecomm include) whose blocking neighborhood collectives go
 * through phases in which the PMPI layer's auto has nothing to add, and phases in which it
 * runs a plan: 0-byte blocks, blocks of a non-contiguous type (passed on), then contiguous
 * blocks again, with block sizes changing between phases, for MPI_Neighbor_allgather,
 * _alltoall, _allgatherv and _alltoallv on a distributed graph (each rank: the next two and
 * the previous rank of a ring, and itself). Every received value of every call is checked
 * against MPI's definition: whichever path a call takes (MPI's own while the layer steps
 * aside, or a plan after an agreement), the results are the same.
 *
 *   step_aside [calls per phase, default 40] [phases, default all 8]
 *
 * (`step_aside 40 2`: only the two phases of 0-byte blocks, where the layer's agreements
 * under auto fall on calls that follow from its rule alone: 1, 2, 10, 26 and 58.)
 *
 * Prints "step_aside: N calls checked on P ranks, W wrong". */
#include <mpi.h>
#include <stdio.h>

#include "mpi_bugs.h"
#include <stdlib.h>
#include <string.h>

static int P, me;

/* The value rank r puts in unit u of the block it sends to its j-th destination in call c
 * (for allgather the block is the same for every destination: j = 0). */
static int value(int r, int c, int j, int u) { return r * 100000 + (c % 97) * 1000 + j * 50 + u; }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const int per_phase = argc > 1 ? atoi(argv[1]) : 40;
  /* destinations: me+1, me+2, me-1 (mod P), and me itself; sources the mirror image. */
  int dst[4] = {(me + 1) % P, (me + 2) % P, (me - 1 + P) % P, me};
  int src[4] = {(me - 1 + P) % P, (me - 2 + 2 * P) % P, (me + 1) % P, me};
  const int deg = 4;
  /* Below 4 ranks the ring names a rank twice: where MPI's own alltoall pairs repeated edges
   * otherwise than the standard (mpi_bugs.h), its values are not checked (a call the layer
   * passes on is MPI's). */
  const int skip_alltoall = P < 4 && mpi_bug_repeated_edges(1);
  if (skip_alltoall)
    mpi_bug_say("step_aside", "MPI_Neighbor_alltoall pairs repeated edges in reverse",
                "the alltoall values on this ring of repeated edges are not checked");
  MPI_Comm g;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, deg, src, MPI_UNWEIGHTED, deg, dst, MPI_UNWEIGHTED, MPI_INFO_NULL,
                                 0, &g);
  /* A non-contiguous unit: every other int of 2n (a vector type), received the same way. */
  long checked = 0, wrong = 0;
  int call = 0;
  /* Phases: units per block (0: nothing to move), and whether the type is strided. */
  const int units[] = {0, 0, 3, 3, 5, 0, 2, 7};
  const int strided[] = {0, 0, 1, 0, 0, 0, 1, 0};
  const int all_phases = (int)(sizeof units / sizeof units[0]);
  const int phases = argc > 2 && atoi(argv[2]) > 0 && atoi(argv[2]) < all_phases ? atoi(argv[2]) : all_phases;
  for (int ph = 0; ph < phases; ++ph) {
    const int n = units[ph];
    MPI_Datatype t = MPI_INT;
    int stride = 1;
    if (strided[ph]) {
      MPI_Type_vector(n, 1, 2, MPI_INT, &t);
      MPI_Type_commit(&t);
      stride = 2;
    }
    const int count = strided[ph] ? 1 : n;           /* elements of `t` per block */
    const int span = strided[ph] ? 2 * n - 1 : n;     /* ints a block spans (count x extent) */
    int* sb = malloc(sizeof(int) * (size_t)(deg * span + 1));
    int* rb = malloc(sizeof(int) * (size_t)(deg * span + 1));
    int sc[4], sd[4], rc[4], rd[4];
    /* displacements in extents of `t`: block i at i x span ints, as the non-v forms place it */
    for (int i = 0; i < deg; ++i) sc[i] = rc[i] = count, sd[i] = rd[i] = i * count;
    for (int rep = 0; rep < per_phase; ++rep, ++call) {
      for (int f = 0; f < 4; ++f) { /* allgather, alltoall, allgatherv, alltoallv */
        const int per_dest = f == 1 || f == 3;
        for (int i = 0; i < deg * span + 1; ++i) sb[i] = -7, rb[i] = -9;
        for (int j = 0; j < (per_dest ? deg : 1); ++j)
          for (int u = 0; u < n; ++u) sb[j * span + u * stride] = value(me, call, per_dest ? j : 0, u);
        int rc_ = MPI_SUCCESS;
        if (f == 0) rc_ = MPI_Neighbor_allgather(sb, count, t, rb, count, t, g);
        if (f == 1) rc_ = MPI_Neighbor_alltoall(sb, count, t, rb, count, t, g);
        if (f == 2) rc_ = MPI_Neighbor_allgatherv(sb, count, t, rb, rc, rd, t, g);
        if (f == 3) rc_ = MPI_Neighbor_alltoallv(sb, sc, sd, t, rb, rc, rd, t, g);
        if (rc_ != MPI_SUCCESS) ++wrong;
        /* Source i sent its block for me: for alltoall, the block of its destination i
         * (the lists mirror each other, duplicates at small P paired in order as MPI does). */
        for (int i = 0; i < deg && !(f == 1 && skip_alltoall); ++i) {
          for (int u = 0; u < n; ++u) {
            const int want = value(src[i], call, per_dest ? i : 0, u);
            ++checked;
            if (rb[i * span + u * stride] != want) {
              if (wrong < 5)
                fprintf(stderr, "step_aside [rank %d]: WRONG call %d f %d source %d unit %d: %d, expected %d\n", me,
                        call, f, i, u, rb[i * span + u * stride], want);
              ++wrong;
            }
          }
          /* the holes of a strided block stay untouched */
          for (int u = 1; u < span; u += 2)
            if (stride == 2 && rb[i * span + u] != -9) ++wrong;
        }
        if (rb[deg * span] != -9) ++wrong; /* nothing past the last block */
      }
    }
    free(sb);
    free(rb);
    if (strided[ph]) MPI_Type_free(&t);
  }
  long all_checked = 0, all_wrong = 0;
  MPI_Reduce(&checked, &all_checked, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (me == 0)
    printf("step_aside: %d calls of each function, %ld values checked on %d ranks, %ld wrong\n", call, all_checked,
           P, all_wrong);
  MPI_Comm_free(&g);
  MPI_Finalize();
  return all_wrong == 0 ? 0 : 1;
}
