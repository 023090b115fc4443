// MPI Advance's MPIL_ names (include/mpi_advance_compat.h) on the sparsecomm C layer.
//
// The MPIL_ objects are ours: an MPIL_Comm holds the user's communicator, the graph
// communicator of MPIL_Dist_graph_create_adjacent, the regions of
// MPIL_Comm_update_locality, per-communicator option defaults and cached region
// communicators (a Sdde and Localities, rebuilt when the regions change). Every call turns
// MPI Advance's algorithm enumerator into sparsecomm options and runs the same code as the
// SPC_ functions.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "capi_internal.hpp"
#include "mpi_advance_compat.h"

struct spc_mpil_comm {
  MPI_Comm global = MPI_COMM_NULL;    // the user's communicator (not owned)
  MPI_Comm neighbor = MPI_COMM_NULL;  // graph communicator (owned) from MPIL_Dist_graph_create_adjacent
  std::string regions = "node";
  std::vector<std::pair<std::string, std::string>> defaults;  // sparsecomm_* keys
  // Caches, valid for `*_regions`.
  std::unique_ptr<sparsecomm::Sdde> sdde;
  std::string sdde_regions;
  std::unique_ptr<sparsecomm::Locality> global_loc, neighbor_loc;
  std::string global_loc_regions, neighbor_loc_regions;

  void drop_caches() {
    sdde.reset();
    global_loc.reset();
    neighbor_loc.reset();
  }
};

struct spc_mpil_info {
  MPI_Info info = MPI_INFO_NULL;
};

struct spc_mpil_topo {
  std::vector<int> sources, destinations;
};

namespace {

using sparsecomm::capi::fail;
using sparsecomm::capi::guarded;
using sparsecomm::capi::Options;
using sparsecomm::capi::OptionSource;

// MPI Advance selects algorithms with process-global variables that programs assign directly
// (its own tests do) or through setters; either choice applies to every later call. The
// variables are defined below (extern "C", MPI Advance's names) and read at each call.

const char* crs_strategy(int m) {
  switch (m) {
    case ALLTOALL_CRS_RMA: return "rma";
    case ALLTOALL_CRS_NONBLOCKING: return "nbx";
    case ALLTOALL_CRS_NONBLOCKING_LOC: return "locality_nbx";
    case ALLTOALL_CRS_PERSONALIZED_LOC: return "locality_personalized";
    default: return "personalized";
  }
}

// A method a program stored in one of MPI Advance's globals, read as an int: the globals
// are enums that C code may set to any value (unknown ones mean the default), and reading an
// out-of-range value through the enum type is undefined in C++ (UBSan: "load of value 42,
// which is not a valid value for type 'AlltoallvCRSMethod'").
template <class E>
int method_of(const E& global) {
  static_assert(sizeof(E) == sizeof(int), "C enums are ints");
  int v = 0;
  std::memcpy(&v, &global, sizeof v);
  return v;
}

const char* crsv_strategy(int m) {
  switch (m) {
    case ALLTOALLV_CRS_NONBLOCKING: return "nbx";
    case ALLTOALLV_CRS_NONBLOCKING_LOC: return "locality_nbx";
    case ALLTOALLV_CRS_PERSONALIZED_LOC: return "locality_personalized";
    case ALLTOALLV_CRS_NODE_WINDOW_SPARSECOMM: return "node_window";
    default: return "personalized";
  }
}

const char* neighbor_backend(int m) {
  switch (m) {
    case NEIGHBOR_ALLTOALLV_LOCALITY: return "aggregated_dedup";
    case NEIGHBOR_ALLTOALLV_COLL_A2A: return "neighbor";
    default: return "p2p";
  }
}

const char* neighbor_init_backend(int m) {
  switch (m) {
    case NEIGHBOR_ALLTOALLV_INIT_LOCALITY: return "aggregated_dedup";
    case NEIGHBOR_ALLTOALLV_INIT_COLL_A2A: return "neighbor";
    default: return "p2p";  // STANDARD, and RMA / PSCW (no one-sided backend)
  }
}

void check_comm(const MPIL_Comm* c) {
  if (!c) fail(MPI_ERR_COMM, "the MPIL_Comm is NULL");
}

// Options of one call: the selected algorithm, the communicator's regions and defaults,
// then the MPIL_Info's sparsecomm_* keys.
OptionSource options(const MPIL_Comm* c, const MPIL_Info* info, const char* backend, const char* sdde) {
  OptionSource os;
  if (backend) os.base.backend = backend;
  if (sdde) os.base.sdde = sdde;
  os.base.regions = c->regions;
  os.pairs = c->defaults;
  os.info = info ? info->info : MPI_INFO_NULL;
  return os;
}

// Collective over c->global: the cached Sdde for the communicator's regions.
sparsecomm::Sdde* cached_sdde(MPIL_Comm* c) {
  if (!c->sdde || c->sdde_regions != c->regions) {
    sparsecomm::apply_environment();  // (the Sdde's options: SddeOptions::defaults())
    c->sdde.reset();
    c->sdde = std::make_unique<sparsecomm::Sdde>(c->global, sparsecomm::capi::make_locality(c->global, c->regions));
    c->sdde_regions = c->regions;
  }
  return c->sdde.get();
}

// Collective over `comm`: the cached Locality of `comm` (global or neighbor).
const sparsecomm::Locality* cached_locality(MPIL_Comm* c, bool neighbor) {
  auto& loc = neighbor ? c->neighbor_loc : c->global_loc;
  auto& reg = neighbor ? c->neighbor_loc_regions : c->global_loc_regions;
  if (!loc || reg != c->regions) {
    loc.reset();
    loc = std::make_unique<sparsecomm::Locality>(
        sparsecomm::capi::make_locality(neighbor ? c->neighbor : c->global, c->regions));
    reg = c->regions;
  }
  return loc.get();
}

std::vector<int64_t> to_ids(const long* v, const int* counts, const int* displs, int n) {
  int64_t len = 0;
  for (int i = 0; i < n; ++i)
    if (counts[i] > 0) len = std::max<int64_t>(len, static_cast<int64_t>(displs[i]) + counts[i]);
  std::vector<int64_t> ids(static_cast<size_t>(len));
  if (v)
    for (int64_t i = 0; i < len; ++i) ids[static_cast<size_t>(i)] = v[i];
  return ids;
}

// The neighborhood alltoallv on an MPIL_Comm: on its graph communicator, or on its global
// communicator with the lists of `topo`.
void neighbor_init(const void* sendbuf, const int sendcounts[], const int sdispls[], const long* gs,
                   MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[], const long* gr,
                   MPI_Datatype recvtype, MPIL_Topo* topo, MPIL_Comm* comm, MPIL_Info* info, const char* backend,
                   bool ext, MPIL_Request** request_ptr) {
  check_comm(comm);
  sparsecomm::capi::AlltoallvArgs a;
  MPI_Comm on = comm->neighbor;
  if (topo) {
    on = comm->global;
    a.use_lists(static_cast<int>(topo->sources.size()), topo->sources.data(),
                static_cast<int>(topo->destinations.size()), topo->destinations.data());
  } else if (on == MPI_COMM_NULL) {
    fail(MPI_ERR_TOPOLOGY, "the MPIL_Comm has no graph communicator (create it with MPIL_Dist_graph_create_adjacent)");
  }
  a.sendbuf = sendbuf, a.sendcounts = sendcounts, a.sdispls = sdispls, a.sendtype = sendtype;
  a.recvbuf = recvbuf, a.recvcounts = recvcounts, a.rdispls = rdispls, a.recvtype = recvtype;
  std::vector<int64_t> sids, rids;
  if (ext) {
    // MPI Advance's ids are `long`; ours 64-bit. Sizes of the id arrays follow from the
    // blocks (as many as the buffers' used parts).
    int outdeg = 0, indeg = 0;
    if (topo) {
      outdeg = a.outdegree, indeg = a.indegree;
    } else {
      int weighted = 0;
      int status = MPI_UNDEFINED;
      SPC_MPI(MPI_Topo_test(on, &status));
      if (status == MPI_DIST_GRAPH) SPC_MPI(MPI_Dist_graph_neighbors_count(on, &indeg, &outdeg, &weighted));
    }
    if (sendcounts && sdispls) sids = to_ids(gs, sendcounts, sdispls, outdeg);
    if (recvcounts && rdispls) rids = to_ids(gr, recvcounts, rdispls, indeg);
    a.ext = true;
    a.gsend = gs ? sids.data() : nullptr;
    a.grecv = gr ? rids.data() : nullptr;
  }
  OptionSource os = options(comm, info, backend, nullptr);
  const sparsecomm::Locality* loc = cached_locality(comm, !topo);
  sparsecomm::capi::alltoallv_init(a, os, on, loc, comm->regions, request_ptr);
}

}  // namespace

extern "C" {

enum NeighborAlltoallvMethod mpil_neighbor_alltoallv_implementation = NEIGHBOR_ALLTOALLV_STANDARD;
enum NeighborAlltoallvInitMethod mpil_neighbor_alltoallv_init_implementation = NEIGHBOR_ALLTOALLV_INIT_STANDARD;
enum AlltoallCRSMethod mpil_alltoall_crs_implementation = ALLTOALL_CRS_PERSONALIZED;
enum AlltoallvCRSMethod mpil_alltoallv_crs_implementation = ALLTOALLV_CRS_PERSONALIZED;

int MPIL_Set_alltoallv_neighbor_algorithm(enum NeighborAlltoallvMethod algorithm) {
  mpil_neighbor_alltoallv_implementation = algorithm;
  return MPI_SUCCESS;
}
int MPIL_Set_alltoallv_neighbor_init_algorithm(enum NeighborAlltoallvInitMethod algorithm) {
  mpil_neighbor_alltoallv_init_implementation = algorithm;
  return MPI_SUCCESS;
}
int MPIL_Set_alltoallv_neighbor_alogorithm(enum NeighborAlltoallvMethod algorithm) {
  return MPIL_Set_alltoallv_neighbor_algorithm(algorithm);
}
int MPIL_Set_alltoallv_neighbor_init_alogorithm(enum NeighborAlltoallvInitMethod algorithm) {
  return MPIL_Set_alltoallv_neighbor_init_algorithm(algorithm);
}
int MPIL_Set_alltoall_crs(enum AlltoallCRSMethod algorithm) {
  mpil_alltoall_crs_implementation = algorithm;
  return MPI_SUCCESS;
}
int MPIL_Set_alltoallv_crs(enum AlltoallvCRSMethod algorithm) {
  mpil_alltoallv_crs_implementation = algorithm;
  return MPI_SUCCESS;
}

int MPIL_Init(MPI_Comm) { return MPI_SUCCESS; }
int MPIL_Finalize(void) { return MPI_SUCCESS; }

int MPIL_Comm_init(MPIL_Comm** xcomm_ptr, MPI_Comm global_comm) {
  return guarded([&] {
    if (!xcomm_ptr) fail(SPC_ERR_ARG, "MPIL_Comm_init: xcomm_ptr is NULL");
    *xcomm_ptr = nullptr;
    if (global_comm == MPI_COMM_NULL) fail(MPI_ERR_COMM, "MPIL_Comm_init: the communicator is MPI_COMM_NULL");
    auto c = std::make_unique<MPIL_Comm>();
    c->global = global_comm;
    *xcomm_ptr = c.release();
  });
}

int MPIL_Comm_free(MPIL_Comm** xcomm_ptr) {
  return guarded([&] {
    if (!xcomm_ptr || !*xcomm_ptr) fail(SPC_ERR_ARG, "MPIL_Comm_free: the MPIL_Comm is NULL");
    std::unique_ptr<MPIL_Comm> c(*xcomm_ptr);
    *xcomm_ptr = nullptr;
    c->drop_caches();
    if (c->neighbor != MPI_COMM_NULL) SPC_MPI(MPI_Comm_free(&c->neighbor));
  });
}

int MPIL_Comm_update_locality(MPIL_Comm* xcomm, int ppn) {
  return guarded([&] {
    check_comm(xcomm);
    if (ppn < 1) fail(MPI_ERR_ARG, "MPIL_Comm_update_locality: ppn must be >= 1, got " + std::to_string(ppn));
    xcomm->regions = "ppn:" + std::to_string(ppn);
    xcomm->drop_caches();
  });
}

int MPIL_Comm_topo_init(MPIL_Comm* xcomm) {
  return guarded([&] {
    check_comm(xcomm);
    cached_sdde(xcomm);
  });
}

int MPIL_Comm_topo_free(MPIL_Comm* xcomm) {
  return guarded([&] {
    check_comm(xcomm);
    xcomm->drop_caches();
  });
}

int MPIL_Info_init(MPIL_Info** info) {
  return guarded([&] {
    if (!info) fail(SPC_ERR_ARG, "MPIL_Info_init: info is NULL");
    *info = nullptr;
    auto i = std::make_unique<MPIL_Info>();
    SPC_MPI(MPI_Info_create(&i->info));
    *info = i.release();
  });
}

int MPIL_Info_free(MPIL_Info** info) {
  return guarded([&] {
    if (!info || !*info) fail(SPC_ERR_ARG, "MPIL_Info_free: the MPIL_Info is NULL");
    std::unique_ptr<MPIL_Info> i(*info);
    *info = nullptr;
    if (i->info != MPI_INFO_NULL) SPC_MPI(MPI_Info_free(&i->info));
  });
}

int MPIL_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[], const int sourceweights[],
                                    int outdegree, const int destinations[], const int destweights[], MPIL_Info*,
                                    int reorder, MPIL_Comm** comm_dist_graph_ptr) {
  return guarded([&] {
    if (!comm_dist_graph_ptr) fail(SPC_ERR_ARG, "MPIL_Dist_graph_create_adjacent: comm_dist_graph_ptr is NULL");
    *comm_dist_graph_ptr = nullptr;
    if (comm_old == MPI_COMM_NULL) fail(MPI_ERR_COMM, "MPIL_Dist_graph_create_adjacent: comm_old is MPI_COMM_NULL");
#ifdef SPARSECOMM_SMPI
    // SimGrid SMPI 3.32 aborts on MPI_Dist_graph_create_adjacent.
    (void)indegree, (void)sources, (void)sourceweights, (void)outdegree, (void)destinations, (void)destweights;
    (void)reorder;
    fail(SPC_ERR_NOT_IMPLEMENTED,
         "MPIL_Dist_graph_create_adjacent: not supported under SMPI (SimGrid has no distributed graph "
         "communicators); use MPIL_Topo_init and MPIL_Neighbor_alltoallv_init_topo");
#endif
    auto c = std::make_unique<MPIL_Comm>();
    c->global = comm_old;
    // MPI reads the lists only up to the degrees; it may reject null pointers even then.
    static const int none = 0;
    SPC_MPI(MPI_Dist_graph_create_adjacent(comm_old, indegree, sources ? sources : &none,
                                           sourceweights, outdegree, destinations ? destinations : &none,
                                           destweights, MPI_INFO_NULL, reorder, &c->neighbor));
    *comm_dist_graph_ptr = c.release();
  });
}

int MPIL_Topo_init(int indegree, const int sources[], const int*, int outdegree, const int destinations[],
                   const int*, MPIL_Info*, MPIL_Topo** mpil_topo_ptr) {
  return guarded([&] {
    if (!mpil_topo_ptr) fail(SPC_ERR_ARG, "MPIL_Topo_init: mpil_topo_ptr is NULL");
    *mpil_topo_ptr = nullptr;
    if (indegree < 0 || outdegree < 0) fail(SPC_ERR_ARG, "MPIL_Topo_init: negative degree");
    if ((indegree > 0 && !sources) || (outdegree > 0 && !destinations))
      fail(SPC_ERR_ARG, "MPIL_Topo_init: sources or destinations is NULL");
    auto t = std::make_unique<MPIL_Topo>();
    t->sources.assign(sources, sources + indegree);
    t->destinations.assign(destinations, destinations + outdegree);
    *mpil_topo_ptr = t.release();
  });
}

int MPIL_Topo_from_neighbor_comm(MPIL_Comm* comm, MPIL_Topo** mpil_topo_ptr) {
  return guarded([&] {
    check_comm(comm);
    if (!mpil_topo_ptr) fail(SPC_ERR_ARG, "MPIL_Topo_from_neighbor_comm: mpil_topo_ptr is NULL");
    *mpil_topo_ptr = nullptr;
    if (comm->neighbor == MPI_COMM_NULL)
      fail(MPI_ERR_TOPOLOGY, "MPIL_Topo_from_neighbor_comm: the MPIL_Comm has no graph communicator");
    auto t = std::make_unique<MPIL_Topo>();
    sparsecomm::capi::dist_graph_neighbors(comm->neighbor, t->sources, t->destinations);
    *mpil_topo_ptr = t.release();
  });
}

int MPIL_Topo_free(MPIL_Topo** topo) {
  return guarded([&] {
    if (!topo || !*topo) fail(SPC_ERR_ARG, "MPIL_Topo_free: the MPIL_Topo is NULL");
    delete *topo;
    *topo = nullptr;
  });
}

int MPIL_Alltoall_crs(const int send_nnz, const int* dest, const int sendcount, MPI_Datatype sendtype,
                      const void* sendvals, int* recv_nnz, int** src_ptr, int recvcount, MPI_Datatype recvtype,
                      void** recvvals_ptr, MPIL_Info* xinfo, MPIL_Comm* xcomm) {
  return guarded([&] {
    check_comm(xcomm);
    sparsecomm::capi::CrsArgs a;
    a.fixed = true;
    a.send_nnz = send_nnz, a.dest = dest, a.sendcount = sendcount, a.sendtype = sendtype, a.sendvals = sendvals;
    a.recv_nnz = recv_nnz, a.src = src_ptr, a.recvcount = recvcount, a.recvtype = recvtype, a.recvvals = recvvals_ptr;
    sparsecomm::Sdde* sdde = cached_sdde(xcomm);
    sparsecomm::capi::crs_exchange(a, options(xcomm, xinfo, nullptr, crs_strategy(method_of(mpil_alltoall_crs_implementation))), xcomm->global, sdde,
                                   xcomm->sdde_regions);
  });
}

int MPIL_Alltoallv_crs(const int send_nnz, const int send_size, const int* dest, const int* sendcounts,
                       const int* sdispls, MPI_Datatype sendtype, const void* sendvals, int* recv_nnz, int* recv_size,
                       int** src_ptr, int** recvcounts_ptr, int** rdispls_ptr, MPI_Datatype recvtype,
                       void** recvvals_ptr, MPIL_Info* xinfo, MPIL_Comm* xcomm) {
  return guarded([&] {
    check_comm(xcomm);
    sparsecomm::capi::CrsArgs a;
    a.send_nnz = send_nnz, a.send_size = send_size, a.dest = dest, a.sendcounts = sendcounts, a.sdispls = sdispls;
    a.sendtype = sendtype, a.sendvals = sendvals;
    a.recv_nnz = recv_nnz, a.recv_size = recv_size, a.src = src_ptr, a.recvcounts = recvcounts_ptr;
    a.rdispls = rdispls_ptr, a.recvtype = recvtype, a.recvvals = recvvals_ptr;
    sparsecomm::Sdde* sdde = cached_sdde(xcomm);
    sparsecomm::capi::crs_exchange(a, options(xcomm, xinfo, nullptr, crsv_strategy(method_of(mpil_alltoallv_crs_implementation))), xcomm->global,
                                   sdde, xcomm->sdde_regions);
  });
}

int MPIL_Neighbor_alltoallv_init(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                 MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
                                 MPI_Datatype recvtype, MPIL_Comm* comm, MPIL_Info* info,
                                 MPIL_Request** request_ptr) {
  return guarded([&] {
    neighbor_init(sendbuf, sendcounts, sdispls, nullptr, sendtype, recvbuf, recvcounts, rdispls, nullptr, recvtype,
                  nullptr, comm, info, neighbor_init_backend(method_of(mpil_neighbor_alltoallv_init_implementation)), false, request_ptr);
  });
}

int MPIL_Neighbor_alltoallv_init_ext(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                     const long global_sindices[], MPI_Datatype sendtype, void* recvbuf,
                                     const int recvcounts[], const int rdispls[], const long global_rindices[],
                                     MPI_Datatype recvtype, MPIL_Comm* comm, MPIL_Info* info,
                                     MPIL_Request** request_ptr) {
  return guarded([&] {
    neighbor_init(sendbuf, sendcounts, sdispls, global_sindices, sendtype, recvbuf, recvcounts, rdispls,
                  global_rindices, recvtype, nullptr, comm, info, neighbor_init_backend(method_of(mpil_neighbor_alltoallv_init_implementation)), true,
                  request_ptr);
  });
}

int MPIL_Neighbor_alltoallv_init_topo(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                      MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                                      const int rdispls[], MPI_Datatype recvtype, MPIL_Topo* topo, MPIL_Comm* comm,
                                      MPIL_Info* info, MPIL_Request** request_ptr) {
  return guarded([&] {
    if (!topo) fail(MPI_ERR_TOPOLOGY, "the MPIL_Topo is NULL");
    neighbor_init(sendbuf, sendcounts, sdispls, nullptr, sendtype, recvbuf, recvcounts, rdispls, nullptr, recvtype,
                  topo, comm, info, neighbor_init_backend(method_of(mpil_neighbor_alltoallv_init_implementation)), false, request_ptr);
  });
}

int MPIL_Neighbor_alltoallv_init_ext_topo(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                          const long global_sindices[], MPI_Datatype sendtype, void* recvbuf,
                                          const int recvcounts[], const int rdispls[], const long global_rindices[],
                                          MPI_Datatype recvtype, MPIL_Topo* topo, MPIL_Comm* comm, MPIL_Info* info,
                                          MPIL_Request** request_ptr) {
  return guarded([&] {
    if (!topo) fail(MPI_ERR_TOPOLOGY, "the MPIL_Topo is NULL");
    neighbor_init(sendbuf, sendcounts, sdispls, global_sindices, sendtype, recvbuf, recvcounts, rdispls,
                  global_rindices, recvtype, topo, comm, info, neighbor_init_backend(method_of(mpil_neighbor_alltoallv_init_implementation)), true,
                  request_ptr);
  });
}

static int neighbor_blocking(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                             void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                             MPIL_Topo* topo, MPIL_Comm* comm) {
  MPIL_Request* req = nullptr;
  int rc = guarded([&] {
    neighbor_init(sendbuf, sendcounts, sdispls, nullptr, sendtype, recvbuf, recvcounts, rdispls, nullptr, recvtype,
                  topo, comm, nullptr, neighbor_backend(method_of(mpil_neighbor_alltoallv_implementation)), false, &req);
  });
  if (rc != MPI_SUCCESS) return rc;
  rc = SPC_Start(&req);
  if (rc == MPI_SUCCESS) rc = SPC_Wait(&req, MPI_STATUS_IGNORE);
  const int rc2 = SPC_Request_free(&req);
  return rc != MPI_SUCCESS ? rc : rc2;
}

int MPIL_Neighbor_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                            void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                            MPIL_Comm* comm) {
  return neighbor_blocking(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, nullptr,
                           comm);
}

int MPIL_Neighbor_alltoallv_topo(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                 MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
                                 MPI_Datatype recvtype, MPIL_Topo* topo, MPIL_Comm* comm) {
  if (!topo) return guarded([] { fail(MPI_ERR_TOPOLOGY, "the MPIL_Topo is NULL"); });
  return neighbor_blocking(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, topo, comm);
}

int MPIL_Start(MPIL_Request* request) { return SPC_Start(&request); }

int MPIL_Wait(MPIL_Request* request, MPI_Status* status) { return SPC_Wait(&request, status); }

int MPIL_Request_free(MPIL_Request** request) { return SPC_Request_free(request); }

int MPIL_Request_reorder(MPIL_Request* request, int value) {
  (void)value;  // no effect: see the header (values always land where the displacements say)
  return guarded([&] {
    if (!request) fail(SPC_ERR_REQUEST, "MPIL_Request_reorder: the request is NULL");
  });
}

int MPIL_Alloc(void** pointer, const int bytes) {
  return guarded([&] {
    if (!pointer) fail(MPI_ERR_ARG, "MPIL_Alloc: pointer is NULL");
    *pointer = nullptr;
    if (bytes < 0) fail(MPI_ERR_ARG, "MPIL_Alloc: negative size");
    if (bytes == 0) return;
    *pointer = std::malloc(static_cast<size_t>(bytes));
    if (!*pointer) throw std::bad_alloc();
  });
}

int MPIL_Free(void* pointer) {
  std::free(pointer);
  return MPI_SUCCESS;
}

int SPC_MPIL_Comm_set_info(MPIL_Comm* xcomm, MPI_Info info) {
  return guarded([&] {
    check_comm(xcomm);
    // Validate everything first (on a copy), then store: a bad key changes nothing.
    Options probe;
    probe.regions = xcomm->regions;
    for (const auto& [k, v] : xcomm->defaults) probe.set(k, v);
    probe.apply(info);
    std::vector<std::pair<std::string, std::string>> pairs = xcomm->defaults;
    std::string regions = xcomm->regions;
    for (const auto& [k, v] : sparsecomm::interop::sparsecomm_keys(info)) {  // (read without error by probe)
      if (k == "sparsecomm_regions") regions = probe.regions;  // the communicator's regions (its caches follow them)
      else pairs.emplace_back(k, v);
    }
    xcomm->defaults = std::move(pairs);
    if (regions != xcomm->regions) {
      xcomm->regions = regions;
      xcomm->drop_caches();
    }
  });
}

int SPC_MPIL_Info_set(MPIL_Info* info, const char* key, const char* value) {
  return guarded([&] {
    if (!info || info->info == MPI_INFO_NULL) fail(SPC_ERR_ARG, "SPC_MPIL_Info_set: the MPIL_Info is NULL");
    if (!key || !value) fail(SPC_ERR_ARG, "SPC_MPIL_Info_set: key or value is NULL");
    SPC_MPI(MPI_Info_set(info->info, key, value));
  });
}

}  // extern "C"
