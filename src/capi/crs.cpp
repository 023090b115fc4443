// The SDDE calls of the C API (SPC_ / MPIL_ Alltoall(v)_crs): a sparse dynamic data
// exchange whose results the library allocates and the caller frees.
#include <climits>
#include <cstdlib>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "capi_internal.hpp"

namespace sparsecomm::capi {
namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using CBuffer = std::unique_ptr<void, FreeDeleter>;

// malloc'd array (NULL for 0 bytes: MPI Advance's MPIL_Alloc convention).
CBuffer c_alloc(int64_t bytes) {
  if (bytes <= 0) return CBuffer(nullptr);
  void* p = std::malloc(static_cast<size_t>(bytes));
  if (!p) throw std::bad_alloc();
  return CBuffer(p);
}

// Outputs are 0 / NULL unless the call succeeds.
void clear_outputs(const CrsArgs& a) {
  if (a.recv_nnz) *a.recv_nnz = 0;
  if (a.recv_size) *a.recv_size = 0;
  if (a.src) *a.src = nullptr;
  if (a.recvcounts) *a.recvcounts = nullptr;
  if (a.rdispls) *a.rdispls = nullptr;
  if (a.recvvals) *a.recvvals = nullptr;
}

// Step 1 (crs_exchange): the collective arguments (options, strategy), the same on every
// rank by contract, so a bad one fails on every rank alike, here, without communication.
// Whether ranks really passed the same is checked (two allreduces) only when
// SPARSECOMM_CHECK_COLLECTIVE_ARGS is set (docs/architecture.md, "SDDE agreement").
Options crs_options(const CrsArgs& a, const OptionSource& os) {
  Options opt = os.resolve();
  if (opt.sdde.empty()) opt.sdde = "personalized";
  check_names("SDDE strategy", opt.sdde, Sdde::strategies());
  if (!a.fixed && Sdde::fixed_size_only(opt.sdde))
    fail(SPC_ERR_INFO_VALUE, "sparsecomm_sdde: strategy '" + opt.sdde +
                                 "' handles fixed-size messages only (use it with Alltoall_crs)");
  return opt;
}

// Destinations in [0, p), at most one message to each.
void check_destinations(const CrsArgs& a, int p) {
  std::vector<char> seen(static_cast<size_t>(p), 0);
  for (int i = 0; i < a.send_nnz; ++i) {
    const int d = a.dest[i];
    if (d < 0 || d >= p)
      fail(MPI_ERR_RANK, "dest[" + std::to_string(i) + "] = " + std::to_string(d) + " out of range [0, " +
                             std::to_string(p) + ")");
    if (seen[d]) fail(SPC_ERR_ARG, "two messages to rank " + std::to_string(d) + " (at most one per destination)");
    seen[d] = 1;
  }
}

// The messages of the fixed-size exchange: sendcount elements each, one after another.
// Sets fixed_bytes (the message size) once the counts are valid.
void add_fixed_messages(const CrsArgs& a, int64_t ssz, int64_t rsz, int64_t& fixed_bytes, detail::Outbox& send) {
  const char* vals = static_cast<const char*>(a.sendvals);
  if (a.sendcount < 0 || a.recvcount < 0) fail(MPI_ERR_COUNT, "sendcount or recvcount is negative");
  fixed_bytes = a.sendcount * ssz;
  if (a.recvcount * rsz != fixed_bytes)
    fail(SPC_ERR_ARG, "recvcount * size(recvtype) = " + std::to_string(a.recvcount * rsz) +
                          " bytes differs from sendcount * size(sendtype) = " + std::to_string(fixed_bytes));
  if (a.send_nnz > 0 && fixed_bytes > 0 && !vals) fail(MPI_ERR_BUFFER, "sendvals is NULL");
  for (int i = 0; i < a.send_nnz; ++i) send.add(a.dest[i], vals + i * fixed_bytes, fixed_bytes);
}

// The messages of the variable-size exchange: sendcounts[i] elements at sdispls[i].
void add_variable_messages(const CrsArgs& a, int64_t ssz, detail::Outbox& send) {
  const char* vals = static_cast<const char*>(a.sendvals);
  if (a.send_size < 0) fail(SPC_ERR_ARG, "send_size is negative");
  if (a.send_nnz > 0 && (!a.sendcounts || !a.sdispls)) fail(SPC_ERR_ARG, "sendcounts or sdispls is NULL");
  int64_t total = 0;
  for (int i = 0; i < a.send_nnz; ++i) {
    const int64_t c = a.sendcounts[i], d = a.sdispls[i];
    if (c < 0) fail(MPI_ERR_COUNT, "sendcounts[" + std::to_string(i) + "] is negative");
    if (d < 0 || d + c > a.send_size)
      fail(SPC_ERR_ARG, "message " + std::to_string(i) + " (sdispls " + std::to_string(d) + ", count " +
                            std::to_string(c) + ") lies outside [0, send_size = " + std::to_string(a.send_size) + ")");
    total += c;
  }
  if (total > 0 && !vals) fail(MPI_ERR_BUFFER, "sendvals is NULL");
  for (int i = 0; i < a.send_nnz; ++i) send.add(a.dest[i], vals + a.sdispls[i] * ssz, a.sendcounts[i] * ssz);
}

// Step 2 (crs_exchange): this rank's own arguments, and its messages, sent from where they
// lie in sendvals. Throws on bad input; ssz, rsz and fixed_bytes are set as far as the
// checks got (the option cross-check reads fixed_bytes even on a rank that failed).
void crs_messages(const CrsArgs& a, int p, int64_t& ssz, int64_t& rsz, int64_t& fixed_bytes,
                  detail::Outbox& send) {
  if (!a.recv_nnz || !a.src || !a.recvvals || (!a.fixed && (!a.recv_size || !a.recvcounts || !a.rdispls)))
    fail(SPC_ERR_ARG, "an output pointer (recv_nnz, src, recvcounts, rdispls, recv_size, recvvals) is NULL");
  ssz = contiguous_size(a.sendtype, "sendtype");
  rsz = contiguous_size(a.recvtype, "recvtype");
  if (a.send_nnz < 0) fail(SPC_ERR_ARG, "send_nnz is negative");
  if (a.send_nnz > 0 && !a.dest) fail(SPC_ERR_ARG, "dest is NULL");
  check_destinations(a, p);
  send.reserve(static_cast<size_t>(a.send_nnz));
  if (a.fixed) add_fixed_messages(a, ssz, rsz, fixed_bytes, send);
  else add_variable_messages(a, ssz, send);
}

// Every received message of the fixed-size exchange has this rank's message size.
void check_fixed_sizes(const detail::Delivery& got, int64_t fixed_bytes) {
  const int64_t n = static_cast<int64_t>(got.ranks.size());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t bytes = got.offsets[static_cast<size_t>(i) + 1] - got.offsets[static_cast<size_t>(i)];
    if (bytes != fixed_bytes)
      fail(SPC_ERR_MISMATCH, "rank " + std::to_string(got.ranks[static_cast<size_t>(i)]) + " sent a message of " +
                                 std::to_string(bytes) + " bytes, but this rank's recvcount x size(recvtype) is " +
                                 std::to_string(fixed_bytes) +
                                 " (ranks disagree on the message size; SPARSECOMM_CHECK_COLLECTIVE_ARGS=1 "
                                 "makes every rank report it)");
  }
}

// The counts and displacements (in recvtype elements) of the received messages; returns
// their total.
int64_t count_received(const detail::Delivery& got, int64_t rsz, int* counts, int* displs) {
  const int64_t n = static_cast<int64_t>(got.ranks.size());
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t bytes = got.offsets[static_cast<size_t>(i) + 1] - got.offsets[static_cast<size_t>(i)];
    if (bytes % rsz != 0)
      fail(SPC_ERR_MISMATCH, "rank " + std::to_string(got.ranks[static_cast<size_t>(i)]) + " sent " +
                                 std::to_string(bytes) + " bytes, not a multiple of size(recvtype) = " +
                                 std::to_string(rsz));
    counts[i] = static_cast<int>(bytes / rsz);
    displs[i] = static_cast<int>(total);
    total += bytes / rsz;
    if (total > INT_MAX) fail(SPC_ERR_ARG, "more than 2^31 elements received");
  }
  return total;
}

// Step 4 (crs_exchange): the outputs (library-allocated). A failure here (out of memory; a
// message that is no whole number of recvtype elements, which only ranks that disagree on
// the datatypes produce) is this rank's alone: the exchange is over, nobody waits for it.
void crs_outputs(const CrsArgs& a, const detail::Delivery& got, CBuffer vals, int64_t fixed_bytes, int64_t rsz) {
  const int64_t n = static_cast<int64_t>(got.ranks.size());
  if (a.fixed) check_fixed_sizes(got, fixed_bytes);
  CBuffer src = c_alloc(n * static_cast<int64_t>(sizeof(int))), counts, displs;
  for (int64_t i = 0; i < n; ++i) static_cast<int*>(src.get())[i] = got.ranks[static_cast<size_t>(i)];
  int64_t total = 0;
  if (!a.fixed) {
    counts = c_alloc(n * static_cast<int64_t>(sizeof(int)));
    displs = c_alloc(n * static_cast<int64_t>(sizeof(int)));
    total = count_received(got, rsz, static_cast<int*>(counts.get()), static_cast<int*>(displs.get()));
  }
  *a.recv_nnz = static_cast<int>(n);
  if (!a.fixed) {
    *a.recv_size = static_cast<int>(total);
    *a.recvcounts = static_cast<int*>(counts.release());
    *a.rdispls = static_cast<int*>(displs.release());
  }
  *a.src = static_cast<int*>(src.release());
  *a.recvvals = vals.release();
}

}  // namespace

// Collective on the first call per communicator and regions: the SDDE context of the plain
// SPC_ CRS calls, kept on the communicator (an MPI attribute, freed with it; not copied to
// duplicates), so a program that rediscovers its pattern every step pays the context's
// collectives (communicator duplicates, the region split) once, as MPIL_Comm callers do.
Sdde* comm_sdde(MPI_Comm comm, const std::string& regions) {
  auto& m = comm_attached<std::map<std::string, std::unique_ptr<Sdde>>>(comm);
  auto& sdde = m[regions];
  if (!sdde) sdde = std::make_unique<Sdde>(comm, make_locality(comm, regions));
  return sdde.get();
}

void crs_exchange(const CrsArgs& a, const OptionSource& os, MPI_Comm comm, Sdde* cached,
                  const std::string& cached_regions) {
  const CommExclusive exclusive(comm, a.fixed ? "SPC_Alltoall_crs" : "SPC_Alltoallv_crs");
  apply_environment();  // this call's settings: a variable set since the last call applies
  if (comm == MPI_COMM_NULL) fail(MPI_ERR_COMM, "the communicator is MPI_COMM_NULL");
  clear_outputs(a);
  const int p = comm_size(comm);
  // 1. Collective arguments.
  Options opt = crs_options(a, os);
  // 2. This rank's own arguments: a failure travels inside the exchange's own collectives
  //    (Sdde::exchange_into's caller_error) and every rank returns it; the success path
  //    adds no collective.
  int64_t ssz = 0, rsz = 0, fixed_bytes = -1;
  detail::Outbox send;
  std::string err;
  try {
    crs_messages(a, p, ssz, rsz, fixed_bytes, send);
  } catch (const std::exception& e) {
    err = e.what();
    send = detail::Outbox{};  // nothing is sent by a rank that failed
  }

  Sdde* sdde = (cached && cached_regions == opt.regions) ? cached : comm_sdde(comm, opt.regions);
  sdde->set_check_collective_args(Sdde::check_collective_args_default());  // (this call's setting)
  if (sdde->check_collective_args()) {  // opt-in: the options (and message size) everywhere the same
    const uint64_t no_lists = 0;
    checked_and_cross_checked(
        comm, [] {},
        [&] { return opt.canonical() + (a.fixed ? "|fixed bytes=" + std::to_string(fixed_bytes) : "|variable"); },
        no_lists, no_lists);
  }

  // 3. The exchange (raises a failed check of any rank on every rank), received straight
  //    into the output array the caller frees (ordered by source; the personalized
  //    strategy receives there directly, the others copy each message once).
  CBuffer vals;
  detail::Delivery got;
  got.allocate = [&vals](int64_t bytes) {
    vals = c_alloc(bytes);
    return static_cast<char*>(vals.get());
  };
  sdde->exchange_into(send, 1, a.fixed ? fixed_bytes : -1, opt.sdde, got, nullptr, err);

  // 4. Outputs.
  crs_outputs(a, got, std::move(vals), fixed_bytes, rsz);
}

}  // namespace sparsecomm::capi
