/* Probes of known bugs in the MPI under test, for the plain MPI test programs of tests/pmpi: a
 * check that MPI's own implementation cannot pass is skipped only where the probe finds the
 * bug, and the program says which bug and what it skips (on rank 0), never silently. Each
 * probe runs MPI's own (PMPI_) on MPI_COMM_SELF, so it tells the same under the PMPI layer.
 *
 *   mpi_bug_repeated_edges(fn): MPI_Neighbor_alltoall (fn 1) or _alltoallv (fn 3) pairs the
 *     repeated edges of a neighborhood otherwise than the standard says (the k-th slot naming
 *     j among the sources takes j's k-th block for this rank; MPI-4 section 8.6). MPICH 4.0.2
 *     pairs them the other way round in MPI_Neighbor_alltoall.
 *   mpi_bug_testall_persistent(): MPI_Testall on a completed persistent neighborhood
 *     collective returns an error (MPICH 4.0.2: MPI_ERR_IN_STATUS with every status's error
 *     MPI_SUCCESS; the values are right), or does not complete it within 5 s. Call it
 *     before any other request exists: MPICH 4.0's MPI_Start does nothing to a persistent
 *     collective made where a freed persistent request to MPI_PROC_NULL had been
 *     (src/interop/pmpi/requests.cpp), and the probe must not depend on what came before. */
#ifndef SPC_TEST_MPI_BUGS_H
#define SPC_TEST_MPI_BUGS_H
#include <mpi.h>
#include <stdio.h>

#include "../../examples/mpi_neighbor/nbr_init.h"

/* A graph on MPI_COMM_SELF whose only neighbor, itself, appears twice in both lists. */
static MPI_Comm mpi_bugs_self_twice(void) {
  int me[2] = {0, 0};
  MPI_Comm g = MPI_COMM_NULL;
  PMPI_Dist_graph_create_adjacent(MPI_COMM_SELF, 2, me, MPI_UNWEIGHTED, 2, me, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g);
  return g;
}

static int mpi_bug_repeated_edges(int fn) {
  MPI_Comm g = mpi_bugs_self_twice();
  int sb[2] = {10, 11}, rb[2] = {-1, -1}, one[2] = {1, 1}, at[2] = {0, 1};
  if (fn == 1) PMPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, g);
  else PMPI_Neighbor_alltoallv(sb, one, at, MPI_INT, rb, one, at, MPI_INT, g);
  PMPI_Comm_free(&g);
  return !(rb[0] == 10 && rb[1] == 11);
}

static int mpi_bug_testall_persistent(void) {
#if HAVE_NBR_INIT
  MPI_Comm g = mpi_bugs_self_twice();
  PMPI_Comm_set_errhandler(g, MPI_ERRORS_RETURN);
  MPI_Errhandler world;
  PMPI_Comm_get_errhandler(MPI_COMM_WORLD, &world);
  PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int sb[1] = {1}, rb[2] = {0, 0}, flag = 0, rc = MPI_SUCCESS;
  MPI_Request r = MPI_REQUEST_NULL;
  /* (PMPI_ spelling of the persistent form: the probe asks MPI's own) */
  PNBR_ALLGATHER_INIT(sb, 1, MPI_INT, rb, 1, MPI_INT, g, MPI_INFO_NULL, &r);
  PMPI_Start(&r);
  /* (5 s of polling at most, far beyond a self exchange even on a loaded machine: then
   * completed by MPI_Wait, and counted as the bug too) */
  const double t0 = PMPI_Wtime();
  while (!flag && rc == MPI_SUCCESS && PMPI_Wtime() - t0 < 5.0) rc = PMPI_Testall(1, &r, &flag, MPI_STATUSES_IGNORE);
  if (rc != MPI_SUCCESS || !flag) {
    PMPI_Wait(&r, MPI_STATUS_IGNORE);
    rc = rc == MPI_SUCCESS ? MPI_ERR_OTHER : rc;
  }
  PMPI_Request_free(&r);
  PMPI_Comm_set_errhandler(MPI_COMM_WORLD, world);
  PMPI_Errhandler_free(&world);
  PMPI_Comm_free(&g);
  return rc != MPI_SUCCESS;
#else
  return 0;
#endif
}

/* Rank 0 says which bug a program skips checks for. */
static void mpi_bug_say(const char* program, const char* bug, const char* skipped) {
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (me == 0) fprintf(stderr, "%s: MPI bug: %s: %s\n", program, bug, skipped);
}
#endif
