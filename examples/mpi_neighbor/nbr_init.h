/* The persistent neighborhood collectives under whichever name this MPI has: MPI-4's
 * MPI_Neighbor_*_init (MPICH 4, Open MPI 5), else Open MPI 4.1's MPIX_ ones, which its
 * pcollreq extension announces in <mpi-ext.h> with OMPI_HAVE_MPI_EXT_PCOLLREQ. Features are
 * tested, never guessed from the implementation's name: by CMake where the project builds the
 * program (SPARSECOMM_HAVE_MPI4_NEIGHBOR_INIT / _MPIX_, cmake/SparsecommMpi.cmake), else by
 * the standard's version, the header and the extension's own macro. HAVE_NBR_INIT is 1 where
 * one exists. */
#ifndef NBR_INIT_H
#define NBR_INIT_H
#include <mpi.h>
#if defined(SPARSECOMM_HAVE_MPI4_NEIGHBOR_INIT) || \
    (!defined(SPARSECOMM_HAVE_MPIX_NEIGHBOR_INIT) && MPI_VERSION >= 4)
#define HAVE_NBR_INIT 1
#define NBR_ALLGATHER_INIT_LABEL "MPI_Neighbor_allgather_init"
#define NBR_ALLGATHER_INIT MPI_Neighbor_allgather_init
#define NBR_ALLGATHERV_INIT MPI_Neighbor_allgatherv_init
#define NBR_ALLTOALL_INIT MPI_Neighbor_alltoall_init
#define NBR_ALLTOALLV_INIT MPI_Neighbor_alltoallv_init
#define PNBR_ALLGATHER_INIT PMPI_Neighbor_allgather_init
#else
#if defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif
#if defined(SPARSECOMM_HAVE_MPIX_NEIGHBOR_INIT) || (defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define HAVE_NBR_INIT 1
#define NBR_ALLGATHER_INIT_LABEL "MPIX_Neighbor_allgather_init"
#define NBR_ALLGATHER_INIT MPIX_Neighbor_allgather_init
#define NBR_ALLGATHERV_INIT MPIX_Neighbor_allgatherv_init
#define NBR_ALLTOALL_INIT MPIX_Neighbor_alltoall_init
#define NBR_ALLTOALLV_INIT MPIX_Neighbor_alltoallv_init
#define PNBR_ALLGATHER_INIT PMPIX_Neighbor_allgather_init
#else
#define HAVE_NBR_INIT 0
#define NBR_ALLGATHER_INIT_LABEL "persistent neighbor allgather (none in this MPI)"
#endif
#endif
#endif
