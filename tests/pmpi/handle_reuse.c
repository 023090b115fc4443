/* The layer's request handles are inactive persistent requests of MPI's own, made and freed
 * with every operation it serves; freeing one must leave nothing behind that changes what MPI
 * does with a persistent request it makes afterwards in the same pooled request object.
 * MPICH 4.0's MPI_Start skipped a persistent collective made where a freed persistent request
 * to MPI_PROC_NULL had been, and its MPI_Wait never returned (src/interop/pmpi/requests.cpp).
 * Rounds, each: the persistent neighbor allgather through the MPI_ name (the layer's, under
 * LD_PRELOAD) made, run and freed, then MPI's own (the PMPI_ name) made, run and freed; every
 * value checked. The verdict is agreed across ranks; exit 1 on a wrong value, 77 (skip) where
 * the MPI has no persistent neighborhood collective.
 *
 *   mpirun -np P [-x LD_PRELOAD=libsparsecomm_mpi.so] handle_reuse [ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>

#include "../../examples/mpi_neighbor/nbr_init.h"

#if HAVE_NBR_INIT
/* One persistent allgather on the ring `g` through MPI's own name (own != 0) or the MPI_ one:
 * made, started twice, freed; returns the wrong values. */
static long run(MPI_Comm g, int me, int p, int round, int own) {
  int out = 0, in[2] = {-1, -1};
  long wrong = 0;
  MPI_Request r = MPI_REQUEST_NULL;
  if (own) PNBR_ALLGATHER_INIT(&out, 1, MPI_INT, in, 1, MPI_INT, g, MPI_INFO_NULL, &r);
  else NBR_ALLGATHER_INIT(&out, 1, MPI_INT, in, 1, MPI_INT, g, MPI_INFO_NULL, &r);
  for (int start = 0; start < 2; start++) {
    out = 1000 * round + 10 * start + me;
    in[0] = in[1] = -1;
    if (own) {
      PMPI_Start(&r);
      PMPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
      MPI_Start(&r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    const int right = (me + 1) % p, left = (me + p - 1) % p;
    wrong += (in[0] != 1000 * round + 10 * start + right) + (in[1] != 1000 * round + 10 * start + left);
  }
  if (own) PMPI_Request_free(&r);
  else MPI_Request_free(&r);
  return wrong;
}
#endif

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int p = 0, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
#if HAVE_NBR_INIT
  const int rounds = argc > 1 ? atoi(argv[1]) : 20;
  const int nb[2] = {(me + 1) % p, (me + p - 1) % p};
  MPI_Comm g;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, nb, MPI_UNWEIGHTED, 2, nb, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g);
  long wrong = 0, all = 0;
  for (int round = 0; round < rounds; round++) wrong += run(g, me, p, round, 0) + run(g, me, p, round, 1);
  MPI_Allreduce(&wrong, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0)
    printf("handle_reuse: %d rounds of %s, the MPI_ and the PMPI_ name, on %d ranks: %ld wrong values%s\n", rounds,
           NBR_ALLGATHER_INIT_LABEL, p, all, all ? " WRONG" : "");
  MPI_Comm_free(&g);
  MPI_Finalize();
  return all != 0;
#else
  if (me == 0) printf("handle_reuse: skipped: %s\n", NBR_ALLGATHER_INIT_LABEL);
  MPI_Finalize();
  return 77;
#endif
}
