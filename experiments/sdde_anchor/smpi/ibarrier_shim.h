/*
 * Harness only (never part of MPI Advance or of sparsecomm): a correct nonblocking barrier
 * for MPI Advance built for SimGrid SMPI 3.32, whose MPI_Ibarrier lets ranks leave while
 * another has not entered (../shared/simgrid/NOTES.md), which breaks NBX. Force-included
 * into every MPI Advance source (-include), it maps MPI_Ibarrier onto a dissemination
 * barrier on Isend/Irecv (Hensgen, Finkel and Manber, 1988: in round k each rank sends to
 * rank + 2^k and receives from rank - 2^k, ceil(log2 P) rounds) that makes progress when
 * its request is tested or waited on; MPI_Test and MPI_Wait pass every other request to
 * SMPI unchanged.
 */
#ifndef SDDE_ANCHOR_IBARRIER_SHIM_H
#define SDDE_ANCHOR_IBARRIER_SHIM_H
#include <mpi.h>
#ifdef __cplusplus
extern "C" {
#endif
int shim_ibarrier(MPI_Comm comm, MPI_Request* request);
int shim_test(MPI_Request* request, int* flag, MPI_Status* status);
int shim_wait(MPI_Request* request, MPI_Status* status);
#ifdef __cplusplus
}
#endif
#ifndef SDDE_ANCHOR_IBARRIER_SHIM_IMPL
#define MPI_Ibarrier shim_ibarrier
#define MPI_Test shim_test
#define MPI_Wait shim_wait
#endif
#endif
