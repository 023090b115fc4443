#pragma once
// Internals shared by the files of the C API and the MPI Advance compatibility layer
// (mpi_advance_compat.cpp). Not installed; C users see include/sparsecomm.h only.
//
// The files, by concern: errors.cpp (the error protocol below, SPC_Error_string),
// options.cpp (sparsecomm_* options and info keys), neighborhood.cpp (the argument checks
// the collective calls share), agreement.cpp (the deferred agreement of the direct path),
// crs.cpp (the SDDE calls), alltoallv.cpp and allgatherv.cpp (the persistent neighborhood
// collectives), requests.cpp (SPC_Request: start, wait, free), sparsecomm_c.cpp (the C
// entry points that create things), halo.cpp (SPC_Halo).
//
// Error protocol: every entry point runs its body through guarded(), which catches every
// exception and turns it into a return code and a thread-local message. A check that may
// fail on some ranks only is thrown inside sparsecomm::agreed(), which makes every rank
// throw the message of the lowest failing rank; the SPC code travels inside that message
// as a "[[spc:<code>]]" prefix, so every rank returns the same code too.
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sparsecomm/comm/combining.hpp"
#include "sparsecomm/interop/environment.hpp"
#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/comm/messages.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/comm/sdde.hpp"
#include "sparsecomm.h"
#include "sparsecomm/core/error.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "interop/common/pipeline.hpp"

// The helpers that the C API's files share only because it is split into files: hidden,
// so that the split adds nothing to the library's exported symbols.
#if defined(__GNUC__)
#define SPC_CAPI_HIDDEN __attribute__((visibility("hidden")))
#else
#define SPC_CAPI_HIDDEN
#endif

namespace sparsecomm {
namespace capi {

/// Throws an InputError that carries `code` through agreement (see above).
[[noreturn]] void fail(int code, const std::string& message);

/// Records `message` as the calling thread's last error and returns `code`.
int record_error(int code, const std::string& message) noexcept;
/// Maps the exception being handled to a code (and records its message).
int record_current_exception() noexcept;

/// "[[spc:<code>]] message": a message carrying its C error code, as fail() throws it and
/// agreements pass it between ranks; record_current_exception() takes the code back out.
SPC_CAPI_HIDDEN std::string coded(int code, const std::string& message);
/// Inside a handler: the exception being handled as a coded message, recorded as
/// record_current_exception() records it.
SPC_CAPI_HIDDEN std::string current_exception_coded();
/// The message of an inconsistent-neighbor-lists failure (the init checks and the deferred
/// agreement report it alike).
SPC_CAPI_HIDDEN extern const char* const kListsMismatch;

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
  /// Local: the call's defaults where unset (interop::default_backend, "nbx"), then its backend
  /// (else a coded error listing `names`, as `kind`s) and SDDE strategy checked.
  void complete(const char* kind, bool (*registered)(const std::string&), std::vector<std::string> (*names)());
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

/// FNV-1a of `s`: how ranks compare strings (options) in one reduction.
SPC_CAPI_HIDDEN uint64_t fnv(const std::string& s);
/// fnv(o.canonical() + shape + esz + suffix), without building the string.
uint64_t options_hash(const Options& o, std::string_view shape, int64_t esz, std::string_view suffix);

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

/// What every neighborhood collective is given: neighbors from the distributed graph
/// communicator when `from_graph`, else from the explicit lists; the buffers and datatypes.
struct NeighborhoodArgs {
  bool from_graph = true;
  int indegree = 0, outdegree = 0;
  const int* sources = nullptr;
  const int* destinations = nullptr;
  const void* sendbuf = nullptr;
  MPI_Datatype sendtype = MPI_DATATYPE_NULL;
  void* recvbuf = nullptr;
  MPI_Datatype recvtype = MPI_DATATYPE_NULL;

  /// The explicit lists (the _lists and _topo forms) instead of the graph.
  void use_lists(int indeg, const int* srcs, int outdeg, const int* dsts) {
    from_graph = false;
    indegree = indeg, sources = srcs, outdegree = outdeg, destinations = dsts;
  }
};

/// Arguments of the neighborhood alltoallv.
struct AlltoallvArgs : NeighborhoodArgs {
  const int* sendcounts = nullptr;
  const int* sdispls = nullptr;
  const int64_t* gsend = nullptr;  ///< id per sendbuf position (ext) or null
  const int* recvcounts = nullptr;
  const int* rdispls = nullptr;
  const int64_t* grecv = nullptr;  ///< id per recvbuf position (ext) or null
  bool ext = false;
};

/// Collective. Sets *out to the new request. `cached` (may be null): a Locality of `comm`
/// built for `cached_regions`, used when the resolved regions are the same.
void alltoallv_init(const AlltoallvArgs& a, const OptionSource& os, MPI_Comm comm, const Locality* cached,
                    const std::string& cached_regions, SPC_Request* out);

/// Arguments of the neighborhood allgather(v). `uniform`: every in-edge receives
/// `recvcount` elements at j * recvcount (allgather); else recvcounts/displs per in-edge.
struct AllgatherArgs : NeighborhoodArgs {
  int sendcount = 0;
  bool uniform = false;
  int recvcount = 0;
  const int* recvcounts = nullptr;
  const int* displs = nullptr;
};

/// Collective. Sets *out to the new request.
void allgatherv_init(const AllgatherArgs& a, const OptionSource& os, MPI_Comm comm, SPC_Request* out);

/// The neighbors of a distributed graph communicator, in MPI's order. Local.
SPC_CAPI_HIDDEN void dist_graph_neighbors(MPI_Comm comm, std::vector<int>& sources, std::vector<int>& destinations);

/// The checks every neighborhood init starts with (run inside an agreement): the options
/// with their defaults, valid names (`backend_kind`: "backend" or "gather backend", whose
/// registry `registered` / `names` is), the neighbor lists, equal element sizes of both
/// datatypes (set in `esz`).
SPC_CAPI_HIDDEN Options resolve_neighborhood(const NeighborhoodArgs& a, const OptionSource& os, MPI_Comm comm,
                                             SPC_Request* out, const char* backend_kind,
                                             bool (*registered)(const std::string&),
                                             std::vector<std::string> (*names)(), std::vector<int>& srcs,
                                             std::vector<int>& dsts, int64_t& esz);

/// Collective. agreed(body), then the check that every rank passed the same options (hash
/// of `canonical()`, called after a successful body) and consistent neighbor lists (`out`
/// / `in`: sums of edge hashes, read after the body, 0 without lists), in ONE collective.
SPC_CAPI_HIDDEN void checked_and_cross_checked(MPI_Comm comm, const std::function<void()>& body,
                                               const std::function<std::string()>& canonical, const uint64_t& out,
                                               const uint64_t& in);

/// Bytes of a contiguous datatype; MPI_ERR_TYPE for anything else. Local.
int64_t contiguous_size(MPI_Datatype t, const char* what);
/// Largest Plan value size (8, 4, 2 or 1 bytes) that divides the element size.
int unit_for(int64_t esz);
/// SPC_ERR_NOT_FOUND listing the valid names unless `name` is one of them.
void check_names(const std::string& what, const std::string& name, const std::vector<std::string>& valid);

class AgreementSlots;
struct AgreementSlot;

// The agreement of a neighborhood alltoallv init, posted without waiting
// (docs/architecture.md, "Deferred agreement"; agreement.cpp says how). A rank that failed
// its local checks, or takes a path that needs agreement before going on, settles it at
// once; a rank on the direct path settles it at its first start (or at free).
class Agreement {
 public:
  struct Local {
    std::string error;  // "" or this rank's coded message ("[[spc:N]] text")
    uint64_t options = 0;
    uint64_t lists_out = 0, lists_in = 0;  // edge hashes of the neighbor lists
    uint64_t exact_out = 0, exact_in = 0;  // ... with each edge's count and ids (direct path)
  };
  // `slots` (may be null): the library duplicate's persistent reductions; `sequence`: this
  // init's number on the communicator (alike on every rank).
  Agreement(MPI_Comm lib, int tag, Local mine, std::shared_ptr<AgreementSlots> slots, uint64_t sequence);
  Agreement(const Agreement&) = delete;
  Agreement& operator=(const Agreement&) = delete;
  ~Agreement() {
    if (settled_) return;
    try {  // never leave the reduction (or a message for this rank) behind
      settle();
    } catch (...) {
    }
  }
  // Completes the agreement (blocking, once); throws the agreed error, again at every later
  // call once it failed. The exact sums (counts and ids per edge) are 0 on both sides where
  // no rank takes the direct path, so comparing them always is right; where ranks disagree
  // on the path (the environment differs), the sums differ and every rank fails instead of
  // the others waiting for setup messages.
  void settle();
  // The result, when AgreementSlots completes this agreement's reduction (to reuse its
  // slot, or a deferred one).
  void take(const MaxSum& all) {
    all_ = all;
    slot_ = nullptr;
  }
  // This rank's part of the reduction.
  const MaxSum& contribution() const { return mine_; }

 private:
  // The agreed outcome, from the reduction's result.
  SPC_CAPI_HIDDEN void judge();
  // The lowest failing rank's message, on every rank.
  SPC_CAPI_HIDDEN std::string lowest_failure(int lowest);

  MPI_Comm lib_;
  int tag_, me_ = 0, p_ = 1;
  uint64_t h_ = 0;
  std::string error_;
  MaxSum mine_, all_;
  MPI_Request req_ = MPI_REQUEST_NULL;  // the MPI_Iallreduce, where no slot is used
  std::shared_ptr<AgreementSlots> slots_;
  AgreementSlot* slot_ = nullptr;  // the persistent reduction, until it completes
  uint64_t sequence_ = 0;
  bool deferred_ = false;  // recorded on slots_, reduced at the first settle (SMPI build)
  bool settled_ = false;
};

/// Local after the communicator's first call: the persistent reductions that the
/// agreements of `comm`'s inits share, kept on `comm` (and through them its library
/// duplicate `lib`).
SPC_CAPI_HIDDEN std::shared_ptr<AgreementSlots> comm_agreement_slots(MPI_Comm comm,
                                                                     const std::shared_ptr<const Comm>& lib);

}  // namespace capi
}  // namespace sparsecomm

// The object behind SPC_Request (declared in sparsecomm.h, global namespace).
struct SPC_Request_s {
  // The direct path's communicator (declared first: it outlives the plan and the agreement
  // that use it), kept alive after the program frees its own.
  std::shared_ptr<const sparsecomm::Comm> lib;
  bool gather = false;
  // The direct path of the neighborhood alltoallv (backend p2p, alltoallv.cpp): its
  // agreement settles at the first start.
  std::unique_ptr<sparsecomm::capi::Agreement> agreement;
  // The direct path's messages, one per edge, between sendbuf and recvbuf (instead of a plan).
  std::unique_ptr<sparsecomm::Messages> msgs;
  std::unique_ptr<sparsecomm::Plan> plan;          // alltoallv-shaped
  std::unique_ptr<sparsecomm::GatherPlan> gplan;   // allgather-shaped
  const void* sendbuf = nullptr;
  void* recvbuf = nullptr;
  int64_t esz = 0;  // bytes per element of the user's datatype
  // Local copies (self-loops, and for gathers the received blocks to their places):
  // `n` bytes from sendbuf (from_send) or the staging buffer, at byte offsets.
  struct Copy {
    int64_t from, to, bytes;
    bool from_send;
  };
  std::vector<Copy> copies;
  bool direct = false;                // gather: the plan's layout is the user's: no staging
  std::vector<unsigned char> staging;
  bool active = false;
};
