/* A halo exchange from a ghost list in C, built with pkg-config against the installed
 * sparsecomm:
 *   cc halo.c $(pkg-config --cflags --libs sparsecomm_c) -o halo && mpirun -np 4 ./halo
 * Each rank owns 1000 values of a 1D periodic grid and needs the 3 values on each side of
 * its block (a stencil of radius 3), listed in any order. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include <sparsecomm.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int nlocal = 1000, radius = 3;
  const int64_t n = (int64_t)nlocal * size, first = (int64_t)nlocal * rank;
  double owned[1000], ghosts[6];
  int64_t gids[6];
  int nghost = 0;
  if (size > 1)
    for (int k = 1; k <= radius; ++k) {
      gids[nghost++] = (first + nlocal - 1 + k) % n;  /* right of my block */
      gids[nghost++] = (first - k + n) % n;           /* left of my block */
    }
  for (int i = 0; i < nlocal; ++i) owned[i] = 0.5 * (double)(first + i);

  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "sparsecomm_backend", argc > 1 ? argv[1] : "p2p");
  SPC_Halo halo;
  int rc = SPC_Halo_create(MPI_COMM_WORLD, nlocal, nghost, gids, MPI_DOUBLE, info, &halo);
  MPI_Info_free(&info);
  if (rc != SPC_SUCCESS) {
    char msg[SPC_MAX_ERROR_STRING];
    int len;
    SPC_Error_string(rc, msg, &len);
    if (rank == 0) fprintf(stderr, "c_halo: %s\n", msg);
    MPI_Finalize();
    return 2;
  }
  int wrong = 0;
  for (int it = 0; it < 5; ++it) {
    SPC_Halo_start(halo, owned);
    SPC_Halo_wait(halo, ghosts);
    for (int k = 0; k < nghost; ++k) wrong += ghosts[k] != 0.5 * (double)gids[k];
  }
  char name[64];
  int len;
  SPC_Halo_backend(halo, name, &len);
  SPC_Halo_free(&halo);
  int all = 0;
  MPI_Allreduce(&wrong, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("c_halo: %d ranks, backend %s: %s\n", size, name, all == 0 ? "verified" : "WRONG");
  MPI_Finalize();
  return all == 0 ? 0 : 3;
}
