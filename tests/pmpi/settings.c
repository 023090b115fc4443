/* Settings that reach the PMPI layer from the environment and from MPI_Info keys, each
 * checked at its communicator's first call. A plain MPI program (no sparsecomm include):
 * communicator A (no MPI_Info) is used first, then communicator B, whose MPI_Info holds
 * the KEY=VALUE arguments; both on a ring with every received value checked. With a bad
 * value on B (or in the environment) every rank must report it at B's first call (or the
 * first call at all) and exit; with good values every call is right.
 *
 *   mpirun -np P [-x LD_PRELOAD=libsparsecomm_mpi.so] settings [KEY=VALUE]...
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static long exchange(MPI_Comm c, int me, int p, int round) {
  int out = 1000 * round + me, in[2] = {-1, -1};
  MPI_Neighbor_allgather(&out, 1, MPI_INT, in, 1, MPI_INT, c);
  const int left = (me + p - 1) % p, right = (me + 1) % p;
  return (in[0] != 1000 * round + right) + (in[1] != 1000 * round + left);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int p = 0, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const int nb[2] = {(me + 1) % p, (me + p - 1) % p};
  MPI_Comm a, b;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, nb, MPI_UNWEIGHTED, 2, nb, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &a);
  long wrong = 0;
  for (int r = 0; r < 3; ++r) wrong += exchange(a, me, p, r);
  printf("settings [rank %d]: communicator A: %ld wrong values\n", me, wrong);
  fflush(stdout);
  MPI_Info info;
  MPI_Info_create(&info);
  for (int i = 1; i < argc; ++i) {
    char kv[256];
    snprintf(kv, sizeof kv, "%s", argv[i]);
    char* eq = strchr(kv, '=');
    if (eq) {
      *eq = 0;
      MPI_Info_set(info, kv, eq + 1);
    }
  }
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, nb, MPI_UNWEIGHTED, 2, nb, MPI_UNWEIGHTED, info, 0, &b);
  MPI_Info_free(&info);
  for (int r = 0; r < 5; ++r) wrong += exchange(b, me, p, r);
  long all = 0;
  MPI_Allreduce(&wrong, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0) printf("settings: communicators A and B used on %d ranks: %ld wrong values%s\n", p, all, all ? " WRONG" : "");
  MPI_Comm_free(&a);
  MPI_Comm_free(&b);
  MPI_Finalize();
  return all != 0;
}
