/*
 * mpi_advance_compat.h — MPI Advance's (locality_aware, include/locality_aware.h) public
 * names and signatures for the sparse dynamic data exchange and the persistent
 * neighborhood alltoallv, implemented on sparsecomm. A C code written against MPI Advance's
 * MPIL_ API switches by including this header instead of locality_aware.h and linking
 * sparsecomm_c; nothing else changes:
 *
 *   MPIL_Comm* xcomm;  MPIL_Info* xinfo;  MPIL_Request* req;
 *   MPIL_Info_init(&xinfo);
 *   MPIL_Dist_graph_create_adjacent(MPI_COMM_WORLD, nrecv, recv_procs, MPI_UNWEIGHTED,
 *                                   nsend, send_procs, MPI_UNWEIGHTED, xinfo, 0, &xcomm);
 *   MPIL_Comm_update_locality(xcomm, 4);
 *   MPIL_Set_alltoallv_neighbor_init_algorithm(NEIGHBOR_ALLTOALLV_INIT_LOCALITY);
 *   MPIL_Neighbor_alltoallv_init(sendvals, sendcounts, sdispls, MPI_DOUBLE, recvvals,
 *                                recvcounts, rdispls, MPI_DOUBLE, xcomm, xinfo, &req);
 *   MPIL_Start(req);  MPIL_Wait(req, &status);
 *   MPIL_Request_free(&req);  MPIL_Info_free(&xinfo);  MPIL_Comm_free(&xcomm);
 *
 * Covered: MPIL_Alltoall_crs, MPIL_Alltoallv_crs, MPIL_Neighbor_alltoallv(_topo),
 * MPIL_Neighbor_alltoallv_init(_ext)(_topo), MPIL_Start, MPIL_Wait, MPIL_Request_free,
 * MPIL_Comm_init/free, MPIL_Comm_update_locality, MPIL_Comm_topo_init/free,
 * MPIL_Dist_graph_create_adjacent, MPIL_Topo_init/free/from_neighbor_comm,
 * MPIL_Info_init/free, MPIL_Alloc/MPIL_Free, MPIL_Init/MPIL_Finalize, MPIL_Request_reorder
 * (a documented no-op, below), and the algorithm setters of these operations with MPI
 * Advance's enumerations (same names, same order, hence the same values as a CPU build of
 * MPI Advance).
 *
 * Every other public MPIL_* function of MPI Advance's mpi_advance.h is NOT provided (a
 * program that calls one fails to link, rather than getting a guess):
 *   MPIL_Alltoall, MPIL_Alltoallv, MPIL_Allgather, MPIL_Allreduce, MPIL_Allreduce_init
 *     dense collectives: outside sparsecomm's scope (sparse, irregular exchanges); call
 *     MPI_Alltoall(v) / MPI_Allgather / MPI_Allreduce(_init) directly.
 *   MPIL_Set_alltoall_algorithm, MPIL_Set_alltoallv_algorithm, MPIL_Set_allreduce_algorithm,
 *   MPIL_Set_allgather_algorithm, MPIL_Set_collective_radix, and the globals
 *   mpil_alltoall_implementation, mpil_alltoallv_implementation,
 *   mpil_allreduce_implementation, mpil_allgather_implementation, mpil_collective_radix
 *     they select algorithms of those dense collectives only. The globals of the provided
 *     operations are not exported either: sparsecomm keeps no process-global state that a
 *     caller writes behind its back; use the setters.
 *   MPIL_Comm_leader_init, MPIL_Comm_leader_free
 *     leader communicators of MPI Advance's hierarchical / multi-leader dense alltoall;
 *     sparsecomm's aggregation backends build their own per plan.
 *   MPIL_Comm_win_init, MPIL_Comm_win_free
 *     the window of MPI Advance's RMA CRS exchange; sparsecomm's "rma" SDDE owns its window.
 *   MPIL_Comm_req_resize, MPIL_Comm_tag
 *     internals of MPI Advance's MPIL_Comm (its request array and tag counter); sparsecomm's
 *     plans own their requests and run on duplicated communicators, so no tag is shared.
 *   MPIL_Comm_device_init, MPIL_Comm_device_free, MPIL_GPU_Alloc, MPIL_GPU_Free
 *     GPU builds only (CUDA/HIP); sparsecomm has no device path.
 *
 * Algorithms map onto sparsecomm's strategies and backends:
 *   ALLTOALL_CRS_RMA                 -> SDDE "rma"
 *   ALLTOALL(V)_CRS_NONBLOCKING      -> "nbx"
 *   ALLTOALL(V)_CRS_NONBLOCKING_LOC  -> "locality_nbx"
 *   ALLTOALL(V)_CRS_PERSONALIZED     -> "personalized" (default, as in MPI Advance)
 *   ALLTOALL(V)_CRS_PERSONALIZED_LOC -> "locality_personalized"
 *   NEIGHBOR_ALLTOALLV(_INIT)_STANDARD -> backend "p2p" (default, as in MPI Advance)
 *   NEIGHBOR_ALLTOALLV(_INIT)_LOCALITY -> "aggregated_dedup" (3-step locality-aware
 *                                         aggregation with duplicate removal)
 *   NEIGHBOR_ALLTOALLV(_INIT)_COLL_A2A -> "neighbor" (MPI's own neighborhood collective)
 *   NEIGHBOR_ALLTOALLV_INIT_RMA, _PSCW -> "p2p" (sparsecomm has no one-sided backend)
 * The regions of the locality-aware variants are those of MPIL_Comm_update_locality
 * (ppn consecutive ranks) or, by default, the shared-memory nodes.
 *
 * Algorithm selection is MPI Advance's: the process-global variables
 * mpil_neighbor_alltoallv_implementation, mpil_neighbor_alltoallv_init_implementation,
 * mpil_alltoall_crs_implementation and mpil_alltoallv_crs_implementation (assigned directly
 * or through the setters) choose the algorithm of every later call.
 *
 * Where this implementation differs from (is stricter than) MPI Advance:
 *  - Per-communicator defaults (stored in the MPIL_Comm) and per-call options take
 *    precedence: SPC_MPIL_Comm_set_info() and SPC_MPIL_Info_set() accept the
 *    sparsecomm_* keys of sparsecomm.h (e.g. sparsecomm_backend = "combined", which has
 *    no MPI Advance enumerator). Precedence: MPIL_Info > MPIL_Comm > setter > default.
 *    An out-of-range enumerator selects the default, as in MPI Advance.
 *  - No MPIL_COMM_WORLD: create MPIL_Comms with MPIL_Comm_init. MPIL_Init and
 *    MPIL_Finalize exist and do nothing.
 *  - User traffic is never intercepted: every message of the library travels on
 *    communicators duplicated from the user's (MPI Advance uses tags on the user's
 *    communicator).
 *  - MPIL_Alltoall_crs / MPIL_Alltoallv_crs: zero-length messages are delivered (a
 *    destination listed with count 0 appears in the receiver's src with count 0);
 *    self-messages are delivered; received messages are sorted by source rank, so the
 *    output never depends on message timing. Every rank must pass the same
 *    sendcount * size(sendtype) to MPIL_Alltoall_crs and recvcount * size(recvtype) must
 *    equal it (checked); every MPIL_Alltoallv_crs message must lie inside
 *    [0, send_size) of sendvals (checked). Outputs are allocated with malloc (NULL when
 *    empty, as MPIL_Alloc does for 0 bytes) and freed with MPIL_Free.
 *  - Persistent neighborhood alltoallv: the counts each pair of ranks passes must agree
 *    (checked once at setup: an error instead of a truncation); with the _ext forms the
 *    ids a sender sends must be, in order, the ids the receiver expects (checked by a
 *    hash per pair), and values that a rank sends with the same id must be equal
 *    (MPI Advance's convention: ids are global column indices). Without _ext, duplicate
 *    removal applies to values a sender lists at the same sendbuf position for several
 *    destinations. Repeated edges and self-loops of the graph are supported (MPI
 *    semantics). Datatypes must be contiguous and sendtype and recvtype of the same size
 *    (MPI_ERR_TYPE otherwise).
 *  - Errors are returned, never aborted on: invalid arguments give an error code on every
 *    rank (the same code everywhere for collective calls; see sparsecomm.h, and
 *    SPC_Error_string for the message); nobody is left waiting in a collective.
 *    MPIL_Start and MPIL_Wait on a NULL request return SPC_ERR_REQUEST (MPI Advance
 *    returns 0); MPIL_Start on an active request is an error.
 *  - MPIL_Request_free on an active request completes it first (the received values are
 *    written) instead of freeing its MPI requests behind the user's back. It frees
 *    duplicated communicators, so call it on every rank (as MPI_Comm_free).
 *  - MPIL_Comm_update_locality(xcomm, ppn) makes regions of ppn consecutive ranks (the
 *    last one may be smaller: ppn need not divide the number of ranks) and may be called
 *    on any MPIL_Comm. Region communicators are built lazily (MPIL_Comm_topo_init builds
 *    them at once).
 *  - Global indices are `long` as in MPI Advance and are converted to 64-bit ids.
 *  - MPIL_Wait sets an empty status (MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_SUCCESS).
 */
#ifndef SPARSECOMM_MPI_ADVANCE_COMPAT_H
#define SPARSECOMM_MPI_ADVANCE_COMPAT_H

#include <mpi.h>

#include "sparsecomm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque objects (sparsecomm's own; only pointers to them are used). */
typedef struct spc_mpil_comm MPIL_Comm;
typedef struct spc_mpil_info MPIL_Info;
typedef struct spc_mpil_topo MPIL_Topo;
typedef struct SPC_Request_s MPIL_Request; /* an MPIL_Request* is an SPC_Request */

/* ---- algorithm enumerations (MPI Advance's names and order, CPU build) ---------------- */

enum NeighborAlltoallvMethod
{
    NEIGHBOR_ALLTOALLV_STANDARD,
    NEIGHBOR_ALLTOALLV_LOCALITY,
    NEIGHBOR_ALLTOALLV_COLL_A2A
};

enum NeighborAlltoallvInitMethod
{
    NEIGHBOR_ALLTOALLV_INIT_STANDARD,
    NEIGHBOR_ALLTOALLV_INIT_LOCALITY,
    NEIGHBOR_ALLTOALLV_INIT_COLL_A2A,
    NEIGHBOR_ALLTOALLV_INIT_RMA,
    NEIGHBOR_ALLTOALLV_INIT_PSCW
};

enum AlltoallCRSMethod
{
    ALLTOALL_CRS_RMA,
    ALLTOALL_CRS_NONBLOCKING,
    ALLTOALL_CRS_NONBLOCKING_LOC,
    ALLTOALL_CRS_PERSONALIZED,
    ALLTOALL_CRS_PERSONALIZED_LOC
};

enum AlltoallvCRSMethod
{
    ALLTOALLV_CRS_NONBLOCKING,
    ALLTOALLV_CRS_NONBLOCKING_LOC,
    ALLTOALLV_CRS_PERSONALIZED,
    ALLTOALLV_CRS_PERSONALIZED_LOC,
    /* sparsecomm's own, not in MPI Advance (SDDE strategy "node_window"): the locality-aware
       exchange over the real nodes, whatever the communicator's locality, its
       redistribution inside each node through a shared-memory window */
    ALLTOALLV_CRS_NODE_WINDOW_SPARSECOMM
};

/* ---- algorithm selection (process-global, as in MPI Advance; see above) ----------------- */

/* The algorithm of every later call (MPI Advance's globals; the setters below assign them). */
extern enum NeighborAlltoallvMethod mpil_neighbor_alltoallv_implementation;
extern enum NeighborAlltoallvInitMethod mpil_neighbor_alltoallv_init_implementation;
extern enum AlltoallCRSMethod mpil_alltoall_crs_implementation;
extern enum AlltoallvCRSMethod mpil_alltoallv_crs_implementation;
int MPIL_Set_alltoallv_neighbor_algorithm(enum NeighborAlltoallvMethod algorithm);
int MPIL_Set_alltoallv_neighbor_init_algorithm(enum NeighborAlltoallvInitMethod algorithm);
/* The spellings of earlier MPI Advance releases. */
int MPIL_Set_alltoallv_neighbor_alogorithm(enum NeighborAlltoallvMethod algorithm);
int MPIL_Set_alltoallv_neighbor_init_alogorithm(enum NeighborAlltoallvInitMethod algorithm);
int MPIL_Set_alltoall_crs(enum AlltoallCRSMethod algorithm);
int MPIL_Set_alltoallv_crs(enum AlltoallvCRSMethod algorithm);

/* ---- set-up objects ------------------------------------------------------------------------ */

/* No-ops (there is no library-wide state to set up). */
int MPIL_Init(MPI_Comm global_comm);
int MPIL_Finalize(void);

/* Local. An MPIL_Comm over global_comm (not duplicated here; the library's traffic runs on
 * its own duplicates). Regions: the shared-memory nodes until MPIL_Comm_update_locality. */
int MPIL_Comm_init(MPIL_Comm** xcomm_ptr, MPI_Comm global_comm);
/* Frees the MPIL_Comm, its cached region communicators and the graph communicator made by
 * MPIL_Dist_graph_create_adjacent (collective in the sense of MPI_Comm_free). */
int MPIL_Comm_free(MPIL_Comm** xcomm_ptr);
/* Regions of ppn consecutive ranks (ppn >= 1). Call on every rank. */
int MPIL_Comm_update_locality(MPIL_Comm* xcomm, int ppn);
/* Collective: builds the region communicators now (otherwise built on first use). */
int MPIL_Comm_topo_init(MPIL_Comm* xcomm);
/* Drops the cached region communicators. */
int MPIL_Comm_topo_free(MPIL_Comm* xcomm);

int MPIL_Info_init(MPIL_Info** info);
int MPIL_Info_free(MPIL_Info** info);

/* Collective over comm_old: MPI_Dist_graph_create_adjacent, kept in a new MPIL_Comm whose
 * global communicator is comm_old. */
int MPIL_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[], const int sourceweights[],
                                    int outdegree, const int destinations[], const int destweights[], MPIL_Info* info,
                                    int reorder, MPIL_Comm** comm_dist_graph_ptr);

/* A topology not tied to a communicator (used with the _topo calls on comm's global
 * communicator). */
int MPIL_Topo_init(int indegree, const int sources[], const int sourceweights[], int outdegree,
                   const int destinations[], const int destweights[], MPIL_Info* info, MPIL_Topo** mpil_topo_ptr);
int MPIL_Topo_from_neighbor_comm(MPIL_Comm* comm, MPIL_Topo** mpil_topo_ptr);
int MPIL_Topo_free(MPIL_Topo** topo);

/* ---- sparse dynamic data exchange ------------------------------------------------------- */

int MPIL_Alltoall_crs(const int send_nnz, const int* dest, const int sendcount, MPI_Datatype sendtype,
                      const void* sendvals, int* recv_nnz, int** src_ptr, int recvcount, MPI_Datatype recvtype,
                      void** recvvals_ptr, MPIL_Info* xinfo, MPIL_Comm* xcomm);

int MPIL_Alltoallv_crs(const int send_nnz, const int send_size, const int* dest, const int* sendcounts,
                       const int* sdispls, MPI_Datatype sendtype, const void* sendvals, int* recv_nnz, int* recv_size,
                       int** src_ptr, int** recvcounts_ptr, int** rdispls_ptr, MPI_Datatype recvtype,
                       void** recvvals_ptr, MPIL_Info* xinfo, MPIL_Comm* comm);

/* ---- neighborhood alltoallv --------------------------------------------------------------- */

/* Blocking (set up, run once, free). */
int MPIL_Neighbor_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                            void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                            MPIL_Comm* comm);
int MPIL_Neighbor_alltoallv_topo(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                 MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
                                 MPI_Datatype recvtype, MPIL_Topo* topo, MPIL_Comm* comm);

/* Persistent. comm must come from MPIL_Dist_graph_create_adjacent (MPI_ERR_TOPOLOGY
 * otherwise); the _topo forms take the neighbors from topo and run on comm's global
 * communicator. */
int MPIL_Neighbor_alltoallv_init(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                 MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
                                 MPI_Datatype recvtype, MPIL_Comm* comm, MPIL_Info* info,
                                 MPIL_Request** request_ptr);
int MPIL_Neighbor_alltoallv_init_ext(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                     const long global_sindices[], MPI_Datatype sendtype, void* recvbuf,
                                     const int recvcounts[], const int rdispls[], const long global_rindices[],
                                     MPI_Datatype recvtype, MPIL_Comm* comm, MPIL_Info* info,
                                     MPIL_Request** request_ptr);
int MPIL_Neighbor_alltoallv_init_topo(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                      MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                                      const int rdispls[], MPI_Datatype recvtype, MPIL_Topo* topo, MPIL_Comm* comm,
                                      MPIL_Info* info, MPIL_Request** request_ptr);
int MPIL_Neighbor_alltoallv_init_ext_topo(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                          const long global_sindices[], MPI_Datatype sendtype, void* recvbuf,
                                          const int recvcounts[], const int rdispls[], const long global_rindices[],
                                          MPI_Datatype recvtype, MPIL_Topo* topo, MPIL_Comm* comm, MPIL_Info* info,
                                          MPIL_Request** request_ptr);

int MPIL_Start(MPIL_Request* request);
int MPIL_Wait(MPIL_Request* request, MPI_Status* status);
int MPIL_Request_free(MPIL_Request** request);
/* MPI Advance uses `value` != 0 to let the first start/wait of a neighbor alltoallv request
 * learn the order in which received values belong (its locality-aware path may deliver
 * them permuted). sparsecomm's requests deliver every value at the position the receive
 * displacements (or global indices) name from the first execution on, so there is nothing
 * to learn: the value is recorded and has no effect. NULL request: SPC_ERR_REQUEST;
 * active or not, any value is accepted. */
int MPIL_Request_reorder(MPIL_Request* request, int value);

/* ---- memory ----------------------------------------------------------------------------- */

/* *pointer = malloc(bytes) (NULL for 0 bytes; MPI_ERR_ARG for bytes < 0). */
int MPIL_Alloc(void** pointer, const int bytes);
/* Frees library-allocated outputs (and MPIL_Alloc'd memory); NULL allowed. */
int MPIL_Free(void* pointer);

/* ---- sparsecomm extensions (not in MPI Advance) -------------------------------------------- */

/* Per-communicator defaults: the sparsecomm_* keys of info (see sparsecomm.h) are stored
 * in xcomm and used by every later call on it (an MPIL_Info key overrides them). A bad
 * key or value is an error (SPC_ERR_INFO_KEY / SPC_ERR_INFO_VALUE) and changes nothing.
 * Local; call it with the same info on every rank. */
int SPC_MPIL_Comm_set_info(MPIL_Comm* xcomm, MPI_Info info);
/* Sets a key of an MPIL_Info (MPI_Info_set on the MPI_Info inside). */
int SPC_MPIL_Info_set(MPIL_Info* info, const char* key, const char* value);

#ifdef __cplusplus
}
#endif

#endif /* SPARSECOMM_MPI_ADVANCE_COMPAT_H */
