#pragma once
// Internals shared by the C API (sparsecomm_c.cpp) and the MPI Advance compatibility layer
// (mpi_advance_compat.cpp). Not installed; C users see include/sparsecomm.h only.
//
// Error protocol: every entry point runs its body through guarded(), which catches every
// exception and turns it into a return code and a thread-local message. A check that may
// fail on some ranks only is thrown inside sparsecomm::agreed(), which makes every rank
// throw the message of the lowest failing rank; the SPC code travels inside that message
// as a "[[spc:<code>]]" prefix, so every rank returns the same code too.
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sparsecomm/comm/combining.hpp"
#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/comm/sdde.hpp"
#include "sparsecomm.h"
#include "sparsecomm/core/error.hpp"

namespace sparsecomm {
namespace capi {

/// Throws an InputError that carries `code` through agreement (see above).
[[noreturn]] void fail(int code, const std::string& message);

/// Records `message` as the calling thread's last error and returns `code`.
int record_error(int code, const std::string& message) noexcept;
/// Maps the exception being handled to a code (and records its message).
int record_current_exception() noexcept;

/// Runs `body`; returns SPC_SUCCESS or the error code of whatever it threw (and records
/// the message for SPC_Error_string). Never throws.
template <class F>
int guarded(F&& body) noexcept {
  try {
    body();
    return SPC_SUCCESS;
  } catch (...) {
    return record_current_exception();
  }
}

/// The sparsecomm_* options of one call.
struct Options {
  std::string backend;  ///< "" = the call's default
  std::string sdde;     ///< "" = the call's default
  std::string regions = "node";
  bool persistent = true;
  /// sparsecomm_<option> keys that a registered backend declares (without the prefix).
  BackendOptions backend_opts;

  /// Applies one key (which starts with "sparsecomm_"); throws coded errors
  /// (SPC_ERR_INFO_KEY, SPC_ERR_INFO_VALUE). Local.
  void set(const std::string& key, const std::string& value);
  /// Applies every sparsecomm_* key of `info` (MPI_INFO_NULL: none). Local.
  void apply(MPI_Info info);
  /// The options of `backend_opts` that backend `b` (one of `names`) declares.
  BackendOptions backend_options_for(const std::vector<std::string>& names, const std::string& b,
                                     std::vector<OptionSpec> (*specs)(const std::string&)) const;
  /// A string that is equal on two ranks iff their options are.
  std::string canonical() const;
};

/// Where a call's options come from, applied in this order: `base` (defaults, e.g. from MPI
/// Advance's algorithm enums), `pairs` (e.g. per-communicator defaults), `info`.
/// Resolved inside the collective argument check, so a bad key on one rank is an error on
/// every rank.
struct OptionSource {
  Options base;
  std::vector<std::pair<std::string, std::string>> pairs;
  MPI_Info info = MPI_INFO_NULL;
  Options resolve() const;
};

/// Collective. Locality::parse with its InputErrors coded SPC_ERR_INFO_VALUE.
Locality make_locality(MPI_Comm comm, const std::string& spec);

/// Arguments of the CRS exchanges (fixed-size when `fixed`).
struct CrsArgs {
  bool fixed = false;
  int send_nnz = 0;
  int send_size = 0;
  const int* dest = nullptr;
  int sendcount = 0;                 // fixed
  const int* sendcounts = nullptr;   // variable
  const int* sdispls = nullptr;      // variable
  MPI_Datatype sendtype = MPI_DATATYPE_NULL;
  const void* sendvals = nullptr;
  int* recv_nnz = nullptr;
  int* recv_size = nullptr;          // variable
  int** src = nullptr;
  int recvcount = 0;                 // fixed
  int** recvcounts = nullptr;        // variable
  int** rdispls = nullptr;           // variable
  MPI_Datatype recvtype = MPI_DATATYPE_NULL;
  void** recvvals = nullptr;
};

/// Collective. The CRS exchange. `cached` (may be null) is a Sdde of `comm` built for the
/// regions `cached_regions`; it is used when the resolved regions are the same.
void crs_exchange(const CrsArgs& a, const OptionSource& os, MPI_Comm comm, Sdde* cached,
                  const std::string& cached_regions);

/// Arguments of the neighborhood alltoallv. Neighbors come from the distributed graph
/// communicator when `from_graph`, else from the explicit lists.
struct AlltoallvArgs {
  bool from_graph = true;
  int indegree = 0, outdegree = 0;
  const int* sources = nullptr;
  const int* destinations = nullptr;
  const void* sendbuf = nullptr;
  const int* sendcounts = nullptr;
  const int* sdispls = nullptr;
  const int64_t* gsend = nullptr;  ///< id per sendbuf position (ext) or null
  MPI_Datatype sendtype = MPI_DATATYPE_NULL;
  void* recvbuf = nullptr;
  const int* recvcounts = nullptr;
  const int* rdispls = nullptr;
  const int64_t* grecv = nullptr;  ///< id per recvbuf position (ext) or null
  MPI_Datatype recvtype = MPI_DATATYPE_NULL;
  bool ext = false;
};

/// Collective. Sets *out to the new request. `cached` (may be null): a Locality of `comm`
/// built for `cached_regions`, used when the resolved regions are the same.
void alltoallv_init(const AlltoallvArgs& a, const OptionSource& os, MPI_Comm comm, const Locality* cached,
                    const std::string& cached_regions, SPC_Request* out);

/// Arguments of the neighborhood allgather(v). `uniform`: every in-edge receives
/// `recvcount` elements at j * recvcount (allgather); else recvcounts/displs per in-edge.
struct AllgatherArgs {
  bool from_graph = true;
  int indegree = 0, outdegree = 0;
  const int* sources = nullptr;
  const int* destinations = nullptr;
  const void* sendbuf = nullptr;
  int sendcount = 0;
  MPI_Datatype sendtype = MPI_DATATYPE_NULL;
  void* recvbuf = nullptr;
  bool uniform = false;
  int recvcount = 0;
  const int* recvcounts = nullptr;
  const int* displs = nullptr;
  MPI_Datatype recvtype = MPI_DATATYPE_NULL;
};

/// Collective. Sets *out to the new request.
void allgatherv_init(const AllgatherArgs& a, const OptionSource& os, MPI_Comm comm, SPC_Request* out);

/// Bytes of a contiguous datatype; MPI_ERR_TYPE for anything else. Local.
int64_t contiguous_size(MPI_Datatype t, const char* what);
/// Largest Plan value size (8, 4, 2 or 1 bytes) that divides the element size.
int unit_for(int64_t esz);
/// SPC_ERR_NOT_FOUND listing the valid names unless `name` is one of them.
void check_names(const std::string& what, const std::string& name, const std::vector<std::string>& valid);

// Plan values of N bytes with alignment 1: user buffers need no particular alignment.
// (Plan::wait also instantiates Unpack::add, which needs +=; the C API only replaces.)
template <int N>
struct Bytes {
  unsigned char b[N];
  Bytes& operator+=(const Bytes&) { throw NotImplementedError("sparsecomm C API: values cannot be added"); }
};

/// Calls f(Bytes<unit>{}) for unit 8, 4, 2 or 1.
template <class F>
void with_unit(int unit, F&& f) {
  switch (unit) {
    case 8: f(Bytes<8>{}); break;
    case 4: f(Bytes<4>{}); break;
    case 2: f(Bytes<2>{}); break;
    default: f(Bytes<1>{}); break;
  }
}

}  // namespace capi
}  // namespace sparsecomm
