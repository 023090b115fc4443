/*
 * sparsecomm.h — the C API of sparsecomm, in MPI's own shape.
 *
 * Two families of calls, for C codes (Hypre, PETSc users, anything that speaks MPI):
 *
 *   1. The sparse dynamic data exchange (SDDE) in the CRS shape of MPI Advance's
 *      Alltoall_crs / Alltoallv_crs: every rank knows what it sends to whom; the library
 *      finds out who sends to whom and returns what arrived, in arrays it allocates
 *      (free them with SPC_Free).
 *
 *        int *src, *counts, *displs; double* vals; int n, size;
 *        SPC_Alltoallv_crs(nsend, total, dest, sendcounts, sdispls, MPI_DOUBLE, sendvals,
 *                          &n, &size, &src, &counts, &displs, MPI_DOUBLE, (void**)&vals,
 *                          MPI_INFO_NULL, MPI_COMM_WORLD);
 *        ... src[i] sent counts[i] values, at vals + displs[i] ...
 *        SPC_Free(src); SPC_Free(counts); SPC_Free(displs); SPC_Free(vals);
 *
 *   2. Persistent neighborhood collectives in the MPI-4 shape (MPI_Neighbor_alltoallv_init,
 *      MPI_Neighbor_allgather(v)_init): set up once on a communicator made by
 *      MPI_Dist_graph_create_adjacent (or on explicit neighbor lists), then SPC_Start /
 *      SPC_Wait as often as needed, SPC_Request_free at the end. The exchange runs on a
 *      sparsecomm backend chosen by an MPI_Info key.
 *
 *        SPC_Request req;
 *        MPI_Info_create(&info); MPI_Info_set(info, "sparsecomm_backend", "aggregated_dedup");
 *        SPC_Neighbor_alltoallv_init(x_send, scounts, sdispls, MPI_DOUBLE,
 *                                    x_ghost, rcounts, rdispls, MPI_DOUBLE, graph_comm, info, &req);
 *        for (it = 0; it < n; ++it) { pack x_send; SPC_Start(&req); local work; SPC_Wait(&req, MPI_STATUS_IGNORE); }
 *        SPC_Request_free(&req);
 *
 * Options are MPI_Info keys given per call; nothing is selected by process-global state.
 *
 *   key                  values                                  used by
 *   sparsecomm_backend   alltoallv: p2p (default), neighbor,       neighbor alltoallv
 *                        aggregated, aggregated_dedup,
 *                        aggregated_2step, combined
 *                        (and any backend registered in C++);
 *                        allgather: p2p (default), neighbor,       neighbor allgather(v)
 *                        combined
 *   sparsecomm_sdde      personalized, nbx, rma (fixed-size        CRS calls (default
 *                        only), locality_personalized,             personalized, as MPI Advance);
 *                        locality_nbx, node_window (the            setup steps of the
 *                        locality-aware exchange over the real     neighborhood calls (default nbx)
 *                        nodes, a shared window inside each)
 *   sparsecomm_regions   node (default), ppn:<k>, cyclic:<n>,      locality-aware strategies and
 *                        list:<r0>,<r1>,..., flat, single          backends
 *   sparsecomm_persistent true/false: persistent point-to-point    neighbor allgather(v)
 *   sparsecomm_<option>  an option a registered backend declares   the backends that
 *                        (`sparsecomm backends` lists them), e.g.   declare it
 *                        for "combined": sparsecomm_k (group size
 *                        >= 2), sparsecomm_theta (>= 1),
 *                        sparsecomm_aware (true/false),
 *                        sparsecomm_rounds (>= 0); for "auto":
 *                        sparsecomm_tune (model, the default, or
 *                        measure: the first exchanges rotate among
 *                        its top sparsecomm_candidates and p2p,
 *                        sparsecomm_samples timed rounds, and every
 *                        rank keeps the fastest; SPC_Start stays
 *                        local, SPC_Wait may wait for the other
 *                        ranks, so while it measures every rank
 *                        waits its tuned requests in the same
 *                        order: docs/interposition.md),
 *                        sparsecomm_iterations (expected exchanges)
 *
 * Every key is accepted by every call (a key a call does not use, or a backend option the
 * chosen backend does not declare, is ignored), so one MPI_Info can serve all calls. A key
 * that starts with "sparsecomm_" but is neither in this table nor declared by any
 * registered backend is SPC_ERR_INFO_KEY; a malformed value is SPC_ERR_INFO_VALUE; an unknown backend
 * or strategy name is SPC_ERR_NOT_FOUND (the message lists the valid names). Keys that do
 * not start with "sparsecomm_" are ignored, as MPI implementations ignore unknown keys.
 * Every rank must pass the same sparsecomm_* options (checked: SPC_ERR_MISMATCH; for the
 * CRS exchanges only with SPARSECOMM_CHECK_COLLECTIVE_ARGS=1, see below).
 *
 * Errors. Every call returns SPC_SUCCESS (== MPI_SUCCESS) or an error code: either an MPI
 * error class where one fits (MPI_ERR_TYPE, MPI_ERR_TOPOLOGY, MPI_ERR_COMM, MPI_ERR_BUFFER,
 * MPI_ERR_NO_MEM, or the code an MPI call returned) or one of the SPC_ERR_* codes below.
 * SPC_Error_string() gives a readable message. The collective calls (everything except
 * SPC_Start, SPC_Wait, SPC_Request_free, SPC_Free, SPC_Error_string) check their arguments
 * on every rank and agree before anyone proceeds: bad input on one rank returns the same
 * code, with the message of the lowest failing rank, on every rank, and nobody hangs. The
 * agreement rides the call's own collectives where it has some (the CRS exchanges carry
 * the error flag in their exchange; the inits in one reduction with the option checks).
 * One exception, for set-up as cheap as creating point-to-point requests: the
 * SPC_Neighbor_alltoallv_init family with backend p2p (the default) posts its agreement
 * without waiting for it. A rank whose own arguments fail returns the error at init; the
 * other ranks return a request and get the same code and message from its first SPC_Start
 * (again from every later start, and from SPC_Request_free if it was never started);
 * mismatched counts or lists are reported by every rank there. Nobody hangs: the check
 * completes before any message is posted. SPARSECOMM_CHECK_COLLECTIVE_ARGS=1 agrees at
 * init instead (and names a mismatched edge).
 * The CRS exchanges' collective arguments (options, sendcount/recvcount sizes) must be the
 * same on every rank, as an MPI collective's count: unchecked by default (a receiver of a
 * message of the wrong fixed size returns SPC_ERR_MISMATCH on its own); with the
 * environment variable SPARSECOMM_CHECK_COLLECTIVE_ARGS=1 every rank checks them, at one
 * more collective per call.
 * SPC_Start/SPC_Wait errors are local. No C++ exception ever leaves this API. The library
 * never calls MPI_Abort and never changes the user's error handlers; its own traffic runs
 * on duplicated communicators with MPI_ERRORS_RETURN.
 *
 * Datatypes: contiguous datatypes only (a basic type, or a derived type whose true extent
 * and extent equal its size and whose lower bound is 0, e.g. MPI_Type_contiguous of a basic
 * type); anything else is MPI_ERR_TYPE. A call's send and receive types must have the same
 * size (MPI only requires matching type signatures), except for the CRS calls, where the
 * received bytes are reinterpreted in units of recvtype.
 *
 * Thread safety: the calls keep no global state. The message behind the last error code
 * is kept per thread (thread-local storage) for SPC_Error_string. Calls on different
 * communicators/requests may run in different threads if MPI was initialized with
 * MPI_THREAD_MULTIPLE. Collective calls on one communicator from two threads at once are
 * not supported (MPI cannot order them alike on every rank): the second one returns
 * SPC_ERR_ARG saying so, before it communicates.
 *
 * Link with the CMake target sparsecomm_c (a C++ library; CMake links C programs against
 * it with the C++ linker).
 */
#ifndef SPARSECOMM_H
#define SPARSECOMM_H

#include <mpi.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- error codes ------------------------------------------------------------------ */

#define SPC_SUCCESS MPI_SUCCESS
/* SPC_ERR_* codes lie above every MPI error class; they are not MPI error codes (pass them
 * to SPC_Error_string, not to MPI_Error_string or MPI_Error_class). */
#define SPC_ERR_BASE 0x53504300 /* "SPC\0" */
#define SPC_ERR_ARG (SPC_ERR_BASE + 1)             /* invalid argument (null pointer, negative count, rank out of range, ...) */
#define SPC_ERR_NOT_FOUND (SPC_ERR_BASE + 2)       /* unknown backend or SDDE strategy name */
#define SPC_ERR_INFO_KEY (SPC_ERR_BASE + 3)        /* unknown sparsecomm_* info key */
#define SPC_ERR_INFO_VALUE (SPC_ERR_BASE + 4)      /* malformed value of a sparsecomm_* info key */
#define SPC_ERR_MISMATCH (SPC_ERR_BASE + 5)        /* ranks disagree: options, neighbor lists, counts, ids */
#define SPC_ERR_REQUEST (SPC_ERR_BASE + 6)         /* null request, or SPC_Start on an active request */
#define SPC_ERR_NOT_IMPLEMENTED (SPC_ERR_BASE + 7) /* a feature that is not implemented (says which) */
#define SPC_ERR_INTERNAL (SPC_ERR_BASE + 8)        /* a bug in sparsecomm: please report the message */
#define SPC_ERR_LASTCODE SPC_ERR_INTERNAL

/* Size of a buffer that always holds an SPC_Error_string message (longer messages are
 * truncated to this size, terminating zero included). */
#define SPC_MAX_ERROR_STRING 1024

/* Writes the message of `code` into `string` (at least SPC_MAX_ERROR_STRING chars) and its
 * length into *resultlen. If `code` is the code the calling thread's last failing
 * sparsecomm call returned, the message is that call's detailed one ("unknown backend
 * 'foo'; valid backends: ..."); otherwise a generic description of the code (MPI's
 * error string for MPI codes). Local. */
int SPC_Error_string(int code, char* string, int* resultlen);

/* ---- memory ----------------------------------------------------------------------- */

/* Frees an array the library allocated (CRS outputs). NULL is allowed. Local. */
int SPC_Free(void* ptr);

/* ---- sparse dynamic data exchange (CRS shape) --------------------------------------- */

/* Collective over comm. Fixed-size SDDE, the shape of MPI Advance's MPIL_Alltoall_crs:
 * this rank sends send_nnz messages of `sendcount` elements each, message i to dest[i]
 * (at most one message per destination, destinations in any order, this rank allowed),
 * message i being sendvals[i*sendcount .. (i+1)*sendcount). Every rank must use the same
 * sendcount * size(sendtype) (checked).
 * Out: *recv_nnz messages arrived, from (*src)[0..recv_nnz) in increasing rank order;
 * message i is (*recvvals)[i*recvcount .. (i+1)*recvcount) in units of recvtype, where
 * recvcount * size(recvtype) must equal sendcount * size(sendtype).
 * *src and *recvvals are allocated by the library (NULL when empty); free them with
 * SPC_Free. A message with sendcount 0 is still delivered (the receiver learns "nothing
 * from you"). Strategy: sparsecomm_sdde (default personalized); sparsecomm_regions for the
 * locality_* strategies. On error the outputs are set to 0 / NULL. */
int SPC_Alltoall_crs(int send_nnz, const int* dest, int sendcount, MPI_Datatype sendtype, const void* sendvals,
                     int* recv_nnz, int** src, int recvcount, MPI_Datatype recvtype, void** recvvals, MPI_Info info,
                     MPI_Comm comm);

/* Collective over comm. Variable-size SDDE, the shape of MPI Advance's MPIL_Alltoallv_crs:
 * message i goes to dest[i] and is sendcounts[i] elements at sendvals + sdispls[i]
 * (elements of sendtype; every message must lie inside [0, send_size)).
 * Out: *recv_nnz messages, from (*src)[i] in increasing rank order, (*recvcounts)[i]
 * elements of recvtype each at (*recvvals) + (*rdispls)[i], packed in source order;
 * *recv_size = total elements received. A message's byte size must be a multiple of
 * size(recvtype) (checked). Arrays allocated by the library (NULL when empty); free them
 * with SPC_Free. Zero-length messages are delivered. Strategy: sparsecomm_sdde (default
 * personalized; "rma" is fixed-size only: SPC_ERR_INFO_VALUE). */
int SPC_Alltoallv_crs(int send_nnz, int send_size, const int* dest, const int* sendcounts, const int* sdispls,
                      MPI_Datatype sendtype, const void* sendvals, int* recv_nnz, int* recv_size, int** src,
                      int** recvcounts, int** rdispls, MPI_Datatype recvtype, void** recvvals, MPI_Info info,
                      MPI_Comm comm);

/* ---- persistent neighborhood collectives -------------------------------------------- */

/* A persistent exchange set up once and executed many times. */
typedef struct SPC_Request_s* SPC_Request;
#define SPC_REQUEST_NULL ((SPC_Request)0)

/* Collective over comm, which must be a distributed graph communicator
 * (MPI_Dist_graph_create_adjacent; else MPI_ERR_TOPOLOGY); neighbors are read with
 * MPI_Dist_graph_neighbors. MPI_Neighbor_alltoallv_init semantics (MPI-4): block i of
 * sendbuf (sendcounts[i] elements at sdispls[i]) goes to the i-th destination, block j
 * of recvbuf (recvcounts[j] at rdispls[j]) comes from the j-th source; repeated edges
 * are matched in list order, self-loops are copied locally (p2p: a message to itself).
 * sendbuf is read between SPC_Start and SPC_Wait; recvbuf is written by SPC_Wait.
 * Positions of recvbuf outside the blocks are never written. Counts must match those the
 * peer passes (checked: SPC_ERR_MISMATCH, at init, or with p2p at the first SPC_Start, see
 * "Errors"), which also makes every backend deliver the same result.
 * Backend: sparsecomm_backend (default p2p: one message per edge straight between sendbuf
 * and recvbuf, set up without communication). For aggregated / aggregated_dedup /
 * aggregated_2step the library identifies a value by (sender, its position in the
 * sender's sendbuf) and sends these ids to the receivers once at setup; duplicate removal
 * then removes values that a sender lists for several destinations in the same region
 * (overlapping sdispls). To remove duplicates that the sender packed at different
 * positions, use the _ext form. */
int SPC_Neighbor_alltoallv_init(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
                                MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, SPC_Request* request);

/* As SPC_Neighbor_alltoallv_init, with a global id for every sent and received value (the
 * shape of MPI Advance's MPIL_Neighbor_alltoallv_init_ext): global_sindices[p] is the id
 * of sendbuf element p, global_rindices[q] the id of recvbuf element q (both indexed by
 * buffer position, so they must be as long as the buffers' used parts). Values with the
 * same id sent by the same rank must be equal (then aggregated_dedup and aggregated_2step
 * send them across a region pair once). The ids a sender sends to a receiver must be, in
 * order, the ids the receiver expects (checked at setup with a hash per pair:
 * SPC_ERR_MISMATCH). */
int SPC_Neighbor_alltoallv_init_ext(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                    const int64_t global_sindices[], MPI_Datatype sendtype, void* recvbuf,
                                    const int recvcounts[], const int rdispls[], const int64_t global_rindices[],
                                    MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, SPC_Request* request);

/* The same on any communicator with explicit neighbor lists (the lists a
 * distributed graph communicator would hold). global_sindices / global_rindices may both
 * be NULL (ids derived as in SPC_Neighbor_alltoallv_init) or both given (as in _ext). The
 * lists must be consistent across ranks (checked: SPC_ERR_MISMATCH, no hang). */
int SPC_Neighbor_alltoallv_init_lists(int indegree, const int sources[], int outdegree, const int destinations[],
                                      const void* sendbuf, const int sendcounts[], const int sdispls[],
                                      const int64_t global_sindices[], MPI_Datatype sendtype, void* recvbuf,
                                      const int recvcounts[], const int rdispls[], const int64_t global_rindices[],
                                      MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, SPC_Request* request);

/* Collective over a distributed graph communicator. MPI_Neighbor_allgather_init
 * semantics: my sendcount elements go to every destination; block j of recvbuf
 * (recvcount elements at j*recvcount) comes from the j-th source. Backend:
 * sparsecomm_backend among p2p (default), neighbor, combined. */
int SPC_Neighbor_allgather_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                SPC_Request* request);

/* MPI_Neighbor_allgatherv_init semantics: block j (recvcounts[j] elements at displs[j])
 * comes from the j-th source; recvcounts[j] must equal that source's sendcount
 * (checked: SPC_ERR_MISMATCH). */
int SPC_Neighbor_allgatherv_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                                 MPI_Info info, SPC_Request* request);

/* The same on any communicator with explicit neighbor lists. */
int SPC_Neighbor_allgatherv_init_lists(int indegree, const int sources[], int outdegree, const int destinations[],
                                       const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                       const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                                       MPI_Comm comm, MPI_Info info, SPC_Request* request);

/* Starts one execution. Every rank of the communicator must start it (as for MPI's
 * persistent collectives). SPC_ERR_REQUEST if the request is null or already active.
 * Local error reporting, except that the first start of a p2p neighborhood alltoallv
 * request waits for its init's agreement and returns the init's error if any rank's
 * failed (see "Errors"). */
int SPC_Start(SPC_Request* request);

/* Completes the execution started by SPC_Start: recvbuf holds the received values
 * afterwards. On an inactive request it returns at once (MPI semantics). `status` may be
 * MPI_STATUS_IGNORE; otherwise it is set empty (source MPI_ANY_SOURCE, tag MPI_ANY_TAG,
 * error MPI_SUCCESS). Local error reporting. */
int SPC_Wait(SPC_Request* request, MPI_Status* status);

/* Frees the request and sets *request to SPC_REQUEST_NULL. An active request is completed
 * first (as SPC_Wait: recvbuf is written before this returns; MPI would complete it in the
 * background). Frees the library's duplicated communicators, so — as MPI_Comm_free — call
 * it on every rank. */
int SPC_Request_free(SPC_Request* request);

/* The backend name a request runs on (e.g. "aggregated_dedup"), into `name` (at least
 * 64 chars); *resultlen its length. Local. With sparsecomm_tune=measure: "auto" while it
 * measures, then the backend every rank settled on. */
int SPC_Request_backend(SPC_Request request, char* name, int* resultlen);

/* ---- halo exchange from a ghost list ------------------------------------------------ */

/* What PETSc users know as a VecScatter from a global vector to its ghosted local form, and
 * Hypre users as a comm package: the values are distributed in blocks in rank order (this
 * rank owns `nlocal` consecutive ones; rank r's global ids follow those of ranks 0..r-1)
 * and every rank names the global ids of the values it needs, its ghosts. The library finds
 * out who sends what to whom (an SDDE) once, and the exchange then runs many times.
 *
 *   SPC_Halo h;
 *   SPC_Halo_create(comm, nlocal, nghost, ghost_gids, MPI_DOUBLE, MPI_INFO_NULL, &h);
 *   for (it = 0; it < n; ++it) {
 *     SPC_Halo_start(h, x_owned);   ... work on owned values ...   SPC_Halo_wait(h, x_ghost);
 *   }
 *   SPC_Halo_free(&h);
 */
typedef struct SPC_Halo_s* SPC_Halo;
#define SPC_HALO_NULL ((SPC_Halo)0)

/* Collective over comm. ghost_gids: the nghost global ids this rank needs, in any order,
 * each at most once, none of them its own, all below the global size (bad ids are an error
 * on every rank, SPC_ERR_ARG). One value is one element of `type`, a contiguous datatype
 * (MPI_DOUBLE, MPIU_SCALAR, MPI_Type_contiguous(3, MPI_DOUBLE) for blocks of 3). Options:
 * the MPI_Info keys above (sparsecomm_backend among the alltoallv backends, default p2p;
 * sparsecomm_sdde, default nbx; sparsecomm_regions; backend options). */
int SPC_Halo_create(MPI_Comm comm, int nlocal, int nghost, const int64_t ghost_gids[], MPI_Datatype type,
                    MPI_Info info, SPC_Halo* halo);

/* Starts an exchange: `owned` (nlocal elements) is read between SPC_Halo_start and
 * SPC_Halo_wait. Every rank of the communicator must start it. One exchange at a time per
 * halo (SPC_ERR_REQUEST otherwise). Local error reporting. */
int SPC_Halo_start(SPC_Halo halo, const void* owned);

/* Completes the exchange: ghosts[i] (nghost elements) receives the value of ghost_gids[i]
 * as given to SPC_Halo_create. Returns at once when no exchange is active. Local. */
int SPC_Halo_wait(SPC_Halo halo, void* ghosts);

/* Frees the halo (completing an active exchange first) and sets *halo to SPC_HALO_NULL.
 * Collective (it frees duplicated communicators). */
int SPC_Halo_free(SPC_Halo* halo);

/* The backend a halo runs on, into `name` (at least 64 chars). Local. With
 * sparsecomm_tune=measure: "auto" while it measures, then the backend it settled on. */
int SPC_Halo_backend(SPC_Halo halo, char* name, int* resultlen);

#ifdef __cplusplus
}
#endif

#endif /* SPARSECOMM_H */
