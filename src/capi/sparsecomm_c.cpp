// The C entry points of include/sparsecomm.h that start an exchange or create a request:
// the SDDE calls (crs.cpp) and the persistent neighborhood collectives (alltoallv.cpp,
// allgatherv.cpp). Requests are started, waited for and freed in requests.cpp; errors are
// described in errors.cpp.
//
// Every entry point is a thin extern "C" shell around guarded(): no exception crosses the
// C boundary. Collective calls validate their arguments so that bad input on one rank is an
// error on every rank and nobody hangs (capi_internal.hpp, "Error protocol").
#include <cstdlib>

#include "capi_internal.hpp"

namespace {

sparsecomm::capi::OptionSource from_info(MPI_Info info) {
  sparsecomm::capi::OptionSource os;
  os.info = info;
  return os;
}

}  // namespace

using sparsecomm::capi::guarded;

extern "C" {

int SPC_Free(void* ptr) {
  std::free(ptr);
  return SPC_SUCCESS;
}

int SPC_Alltoall_crs(int send_nnz, const int* dest, int sendcount, MPI_Datatype sendtype, const void* sendvals,
                     int* recv_nnz, int** src, int recvcount, MPI_Datatype recvtype, void** recvvals, MPI_Info info,
                     MPI_Comm comm) {
  return guarded([&] {
    sparsecomm::capi::CrsArgs a;
    a.fixed = true;
    a.send_nnz = send_nnz, a.dest = dest, a.sendcount = sendcount, a.sendtype = sendtype, a.sendvals = sendvals;
    a.recv_nnz = recv_nnz, a.src = src, a.recvcount = recvcount, a.recvtype = recvtype, a.recvvals = recvvals;
    sparsecomm::capi::crs_exchange(a, from_info(info), comm, nullptr, "");
  });
}

int SPC_Alltoallv_crs(int send_nnz, int send_size, const int* dest, const int* sendcounts, const int* sdispls,
                      MPI_Datatype sendtype, const void* sendvals, int* recv_nnz, int* recv_size, int** src,
                      int** recvcounts, int** rdispls, MPI_Datatype recvtype, void** recvvals, MPI_Info info,
                      MPI_Comm comm) {
  return guarded([&] {
    sparsecomm::capi::CrsArgs a;
    a.send_nnz = send_nnz, a.send_size = send_size, a.dest = dest, a.sendcounts = sendcounts, a.sdispls = sdispls;
    a.sendtype = sendtype, a.sendvals = sendvals;
    a.recv_nnz = recv_nnz, a.recv_size = recv_size, a.src = src, a.recvcounts = recvcounts, a.rdispls = rdispls;
    a.recvtype = recvtype, a.recvvals = recvvals;
    sparsecomm::capi::crs_exchange(a, from_info(info), comm, nullptr, "");
  });
}

int SPC_Neighbor_alltoallv_init(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
                                MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, SPC_Request* request) {
  return guarded([&] {
    sparsecomm::capi::AlltoallvArgs a;
    a.sendbuf = sendbuf, a.sendcounts = sendcounts, a.sdispls = sdispls, a.sendtype = sendtype;
    a.recvbuf = recvbuf, a.recvcounts = recvcounts, a.rdispls = rdispls, a.recvtype = recvtype;
    sparsecomm::capi::alltoallv_init(a, from_info(info), comm, nullptr, "", request);
  });
}

int SPC_Neighbor_alltoallv_init_ext(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                    const int64_t global_sindices[], MPI_Datatype sendtype, void* recvbuf,
                                    const int recvcounts[], const int rdispls[], const int64_t global_rindices[],
                                    MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, SPC_Request* request) {
  return guarded([&] {
    sparsecomm::capi::AlltoallvArgs a;
    a.sendbuf = sendbuf, a.sendcounts = sendcounts, a.sdispls = sdispls, a.sendtype = sendtype;
    a.recvbuf = recvbuf, a.recvcounts = recvcounts, a.rdispls = rdispls, a.recvtype = recvtype;
    a.gsend = global_sindices, a.grecv = global_rindices, a.ext = true;
    sparsecomm::capi::alltoallv_init(a, from_info(info), comm, nullptr, "", request);
  });
}

int SPC_Neighbor_alltoallv_init_lists(int indegree, const int sources[], int outdegree, const int destinations[],
                                      const void* sendbuf, const int sendcounts[], const int sdispls[],
                                      const int64_t global_sindices[], MPI_Datatype sendtype, void* recvbuf,
                                      const int recvcounts[], const int rdispls[], const int64_t global_rindices[],
                                      MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, SPC_Request* request) {
  return guarded([&] {
    sparsecomm::capi::AlltoallvArgs a;
    a.use_lists(indegree, sources, outdegree, destinations);
    a.sendbuf = sendbuf, a.sendcounts = sendcounts, a.sdispls = sdispls, a.sendtype = sendtype;
    a.recvbuf = recvbuf, a.recvcounts = recvcounts, a.rdispls = rdispls, a.recvtype = recvtype;
    // Both id arrays or neither: decided from arguments every rank can see differently, so
    // a rank with only one of them still takes part in the agreement (as an ext call).
    a.ext = global_sindices || global_rindices;
    a.gsend = global_sindices, a.grecv = global_rindices;
    sparsecomm::capi::alltoallv_init(a, from_info(info), comm, nullptr, "", request);
  });
}

int SPC_Neighbor_allgather_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                SPC_Request* request) {
  return guarded([&] {
    sparsecomm::capi::AllgatherArgs a;
    a.sendbuf = sendbuf, a.sendcount = sendcount, a.sendtype = sendtype;
    a.recvbuf = recvbuf, a.uniform = true, a.recvcount = recvcount, a.recvtype = recvtype;
    sparsecomm::capi::allgatherv_init(a, from_info(info), comm, request);
  });
}

int SPC_Neighbor_allgatherv_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                                 MPI_Info info, SPC_Request* request) {
  return guarded([&] {
    sparsecomm::capi::AllgatherArgs a;
    a.sendbuf = sendbuf, a.sendcount = sendcount, a.sendtype = sendtype;
    a.recvbuf = recvbuf, a.recvcounts = recvcounts, a.displs = displs, a.recvtype = recvtype;
    sparsecomm::capi::allgatherv_init(a, from_info(info), comm, request);
  });
}

int SPC_Neighbor_allgatherv_init_lists(int indegree, const int sources[], int outdegree, const int destinations[],
                                       const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                       const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                                       MPI_Comm comm, MPI_Info info, SPC_Request* request) {
  return guarded([&] {
    sparsecomm::capi::AllgatherArgs a;
    a.use_lists(indegree, sources, outdegree, destinations);
    a.sendbuf = sendbuf, a.sendcount = sendcount, a.sendtype = sendtype;
    a.recvbuf = recvbuf, a.recvcounts = recvcounts, a.displs = displs, a.recvtype = recvtype;
    sparsecomm::capi::allgatherv_init(a, from_info(info), comm, request);
  });
}

}  // extern "C"
