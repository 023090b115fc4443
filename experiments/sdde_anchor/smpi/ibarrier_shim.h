/*
 * Harness only (never part of MPI Advance or of sparsecomm): a correct nonblocking barrier
 * for MPI Advance built for SimGrid SMPI 3.32, whose MPI_Ibarrier lets ranks leave while
 * another has not entered (../shared/simgrid/NOTES.md), which breaks NBX. Force-included
 * into every MPI Advance source (-include), it maps MPI_Ibarrier onto a dissemination
 * barrier on Isend/Irecv (Hensgen, Finkel and Manber, 1988: in round k each rank sends to
 * rank + 2^k and receives from rank - 2^k, ceil(log2 P) rounds) that makes progress when
 * its request is tested or waited on; MPI_Test and MPI_Wait pass every other request to
 * SMPI unchanged.
 *
 * It also charges MPI Advance's persistent starts the simulated CPU time per started
 * message that sparsecomm's SMPI build charges its own (0.4 us, SPARSECOMM_SMPI_MSG_COST,
 * include/sparsecomm/comm/messages.hpp): SMPI charges its send overhead (smpi/ois) to
 * MPI_Isend but not to MPI_Start(all), and its receive overhead not at all with
 * send-is-detached-thresh:0, so without it one library's messages would cost CPU time and
 * the other's none. MA_SMPI_MSG_COST (seconds) changes it; 0 turns it off.
 *
 * And it gives MPI Advance's MPI_Exscan (its locality-aware neighbour init) a scalable
 * algorithm: SMPI 3.32's exscan has every rank send its value to every higher rank (P(P-1)/2
 * messages, the first rank paying P-1 send overheads) and waits on them with waitany over
 * P-1 requests (host work growing as P^3). The shim runs the recursive-doubling exclusive
 * scan instead (the algorithm MPICH uses for MPI_Exscan; ceil(log2 P) exchanges per rank).
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
int shim_start(MPI_Request* request);
int shim_startall(int count, MPI_Request* requests);
int shim_exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);
#ifdef __cplusplus
}
#endif
#ifndef SDDE_ANCHOR_IBARRIER_SHIM_IMPL
#define MPI_Ibarrier shim_ibarrier
#define MPI_Test shim_test
#define MPI_Wait shim_wait
#define MPI_Start shim_start
#define MPI_Startall shim_startall
#define MPI_Exscan shim_exscan
#endif
#endif
