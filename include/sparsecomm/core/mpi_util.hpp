#pragma once
// Small RAII and type helpers around MPI.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "sparsecomm/core/error.hpp"

namespace sparsecomm {

int comm_rank(MPI_Comm comm);
int comm_size(MPI_Comm comm);

/// Whether MPI_Finalize has run. MPI forbids every call after it (Open MPI aborts the
/// process), so the destructors of objects that can outlive it -- the interposition
/// layers' static caches, a user's static plan -- skip their MPI frees then (the process
/// is ending; the memory goes with it).
bool mpi_finalized() noexcept;

/// Held by a thread for the length of a collective library call on `comm` (plan creation,
/// the SDDE, the C API's creating calls). MPI matches collective calls on a communicator
/// by the order in which each process issues them, and threads must order theirs
/// themselves (MPI-4.0 section 11.6.2, "Collective calls"). One library call is a sequence
/// of collectives and messages, so two of them on one communicator at once cannot be
/// ordered alike on every rank: they cross each other's messages and end in a truncation
/// abort or a hang. A second
/// thread of this process that enters while another holds `comm` gets an InputError that
/// says so, before it sends anything. The holding thread may re-enter (a plan created
/// inside a C API call). Detection is per process: a rank whose two calls happen not to
/// overlap cannot know that another rank's did, so the program must still give each
/// thread its own communicator (MPI_Comm_dup) or serialize the calls.
class CommExclusive {
 public:
  CommExclusive(MPI_Comm comm, const char* call);
  ~CommExclusive();
  CommExclusive(const CommExclusive&) = delete;
  CommExclusive& operator=(const CommExclusive&) = delete;

 private:
  MPI_Comm comm_;
};

/// Owns a duplicate of a communicator (collective to create and to free).
/// Library traffic runs on such duplicates so a user's message with the same tag is
/// never matched by the library, and errors return codes instead of aborting.
class Comm {
 public:
  Comm() = default;
  /// Collective over `parent`.
  explicit Comm(MPI_Comm parent);
  /// Takes ownership of an already created communicator (e.g. from MPI_Comm_split).
  static Comm adopt(MPI_Comm owned);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  Comm(Comm&& o) noexcept;
  Comm& operator=(Comm&& o) noexcept;

  MPI_Comm get() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  explicit operator bool() const { return comm_ != MPI_COMM_NULL; }

 private:
  void reset() noexcept;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 0;
};

/// Completes `n` requests (nothing when n == 0), statuses into `st` (or ignored): MPI_Waitall,
/// except in the SMPI build. There, MPI_Waitall's host time appears to grow quadratically
/// with the request count (profiled in experiments/README.md, "Measurements behind
/// defaults"); waiting on each request in turn ends at the same simulated time (the last
/// completion) in linear host time.
void wait_all(int n, MPI_Request* reqs, MPI_Status* st = MPI_STATUSES_IGNORE);
inline void wait_all(std::vector<MPI_Request>& reqs, MPI_Status* st = MPI_STATUSES_IGNORE) {
  wait_all(static_cast<int>(reqs.size()), reqs.data(), st);
}

/// The requests of one step of a hand-written exchange and their statuses, for code that
/// must post its own MPI calls (receives at an upper bound whose size is read from the
/// status, phases of non-blocking collectives). Completion goes through MPI_Testsome /
/// MPI_Waitsome, which hand each completed request's status over exactly once: SimGrid
/// SMPI 3.32's MPI_Testall completes (and nulls) some requests while returning
/// flag = false, so their statuses would be lost. A request is never freed in flight:
/// reset() and the destructor complete what is still pending first (as a Plan destroyed
/// during an exchange does).
///
///   RequestPool pool;
///   MPI_Irecv(buf, bound, MPI_INT64_T, src, tag, comm, pool.add());   // request 0
///   MPI_Isend(out, n, MPI_INT64_T, dst, tag, comm, pool.add());       // request 1
///   while (!pool.test()) compute_a_little();
///   int got = pool.count(0, MPI_INT64_T);
class RequestPool {
 public:
  RequestPool() = default;
  ~RequestPool();
  RequestPool(const RequestPool&) = delete;
  RequestPool& operator=(const RequestPool&) = delete;
  RequestPool(RequestPool&& o) noexcept;
  RequestPool& operator=(RequestPool&& o) noexcept;

  /// A new request slot for an MPI_I* call; valid until the next add().
  MPI_Request* add();
  /// Polls; true once every request has completed.
  bool test();
  /// Blocks until every request has completed.
  void wait();
  /// Blocks until at least one more request completes (nothing if none is pending).
  void wait_some();
  /// Completes what is pending, then forgets every request.
  void reset();
  size_t size() const { return reqs_.size(); }
  size_t pending() const { return left_; }
  /// Request i has completed.
  bool completed(size_t i) const { return reqs_[i] == MPI_REQUEST_NULL; }
  /// Elements of `type` received by request i (a completed receive).
  int count(size_t i, MPI_Datatype type) const;

 private:
  void take(int n);  // statuses of the n requests just completed (idx_ / tmp_)
  std::vector<MPI_Request> reqs_;
  std::vector<MPI_Status> st_;
  size_t left_ = 0;
  std::vector<int> idx_;
  std::vector<MPI_Status> tmp_;
};

namespace detail {
template <class T>
int delete_attached(MPI_Comm, int, void* v, void*) {  // int, not auto: SMPI's MPI_SUCCESS is an enum
  delete static_cast<T*>(v);
  return MPI_SUCCESS;
}
}  // namespace detail

/// The object of type T kept on `comm` (an MPI attribute under T's own key): made T{} on
/// the first use on that communicator, deleted with it, not copied to its duplicates.
/// Local (no communication); what the caller builds into it on first use may be
/// collective, then every rank must reach that first use alike.
template <class T>
T& comm_attached(MPI_Comm comm) {
#ifdef SPARSECOMM_SMPI
  // SMPI: MPI_COMM_WORLD is one object shared by every simulated rank, and the ranks were
  // seen to run one rank's copy of this code (its static key with it), so each would find
  // another's attribute. The world's objects are kept per world rank here instead (the
  // ranks run one at a time; never deleted: SMPI may release the world first at finalize).
  if (comm == MPI_COMM_WORLD) {
    static std::map<int, T*> per_rank;
    int r = 0;
    SPC_MPI(MPI_Comm_rank(comm, &r));
    T*& t = per_rank[r];
    if (!t) t = new T{};
    return *t;
  }
#endif
  static const int keyval = [] {
    int k = MPI_KEYVAL_INVALID;
    SPC_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &detail::delete_attached<T>, &k, nullptr));
    return k;
  }();
  void* v = nullptr;
  int found = 0;
  SPC_MPI(MPI_Comm_get_attr(comm, keyval, &v, &found));
  if (found) return *static_cast<T*>(v);
  auto* t = new T{};
  SPC_MPI(MPI_Comm_set_attr(comm, keyval, t));
  return *t;
}

/// Collective on the first call per communicator: a duplicate of `comm`, kept on it (an
/// MPI attribute; not copied to its duplicates), for the library's own setup messages so
/// they never match the program's; later calls return it without communication. Its users
/// are collective calls made in the same order on every rank, whose messages between two
/// ranks are received in the order sent (MPI's non-overtaking rule keeps one call's
/// messages ahead of the next's).
MPI_Comm library_comm(MPI_Comm comm);
/// The same duplicate, shared: it stays valid while the returned pointer lives, also after
/// the program frees `comm` (a persistent request keeps its communicator, as in MPI). And
/// the number of earlier calls of this form on `comm` (0, 1, 2, ... per communicator,
/// local): callers that are collective and made in the same order on every rank get the
/// same number everywhere without communicating, e.g. to give each persistent request its
/// own message tag.
std::shared_ptr<const Comm> library_comm_shared(MPI_Comm comm, uint64_t& sequence);

/// The message tags on library_comm(), one space for every user of the duplicate: the
/// fixed tags of its set-up messages all lie below kLibraryRequestTagFirst, and
/// library_request_tag() gives the persistent requests tags from kLibraryRequestTagFirst up,
/// so a request's messages (in flight for as long as the program keeps the request) never
/// match a set-up's receive. A new fixed tag on library_comm() is added here, below
/// kLibraryRequestTagFirst, and to kLibraryFixedTags.
inline constexpr int kLibraryTagAlltoallvSetup = 77;  ///< capi/alltoallv.cpp: the setup messages
inline constexpr int kLibraryTagAutoDistinct = 78;  ///< comm/plan/halo/auto.cpp: distinct counts
inline constexpr int kLibraryTagTuneFlag = 79;  ///< comm/plan/tune.cpp: a measuring exchange's failure flag
inline constexpr int kLibraryFixedTags[] = {kLibraryTagAlltoallvSetup, kLibraryTagAutoDistinct, kLibraryTagTuneFlag};
inline constexpr int kLibraryRequestTagFirst = 1000;
static_assert(kLibraryTagAlltoallvSetup < kLibraryRequestTagFirst && kLibraryTagAutoDistinct < kLibraryRequestTagFirst &&
                  kLibraryTagTuneFlag < kLibraryRequestTagFirst,
              "the fixed tags on library_comm() lie below the requests' tags");
/// The tag of the persistent request made by the `sequence`-th library_comm_shared() call
/// on a communicator (alike on every rank): kLibraryRequestTagFirst + sequence, wrapping
/// within [kLibraryRequestTagFirst, MPI_TAG_UB].
int library_request_tag(uint64_t sequence);

/// A setting that must be alike on every rank: how an error names it, and this rank's value.
struct NamedValue {
  std::string name, value;
};
/// Local. A 62-bit hash (FNV-1a) of the settings' values: its negation fits an int64_t, so
/// one MAX reduction of (h, -h) gives its largest and smallest value over the ranks, and
/// they differ exactly where some setting does (but for a hash collision).
int64_t settings_hash(const std::vector<NamedValue>& settings);
/// Collective (every rank passes the same names, in the same order). "" when every value
/// is alike on every rank; else the ones that differ, with this rank's value: "<name> is
/// '<value>' here, ..." (one allreduce of a hash per setting): for the message of a check
/// whose combined hash differed, on every rank.
std::string differing_settings(MPI_Comm comm, const std::vector<NamedValue>& settings);

/// Where the interposition layers' settings come from, for the message of a difference.
inline constexpr const char* kPerProcessEnvironment =
    "environment variables are per process: give each rank the same, e.g. mpirun -x VAR";

/// Collective (every rank passes the same names, in the same order), after a hash of the
/// settings differed between ranks: the one message every layer gives then, "settings
/// differ between ranks: <which, with this rank's values>, not on every rank; these must
/// be the same on every rank (<where_set>)".
std::string settings_differ(MPI_Comm comm, const std::vector<NamedValue>& settings, const std::string& where_set);

/// Collective (every rank passes the same names, in the same order): the set-up check of a
/// layer whose settings come from each process's own environment or options. One allreduce
/// of (failed, hash, -hash); then, if some rank's `local_error` is set, every rank throws
/// the lowest failing rank's message (as agree() does); else, if what must be alike
/// (`compared`, by default `settings`) differs between ranks, every rank throws InputError
/// settings_differ() (naming the differing ones among `settings`). Returns normally on
/// every rank otherwise. (`compared` can be less than `settings`: a layer switched off on
/// every rank needs nothing else alike.)
void agree_settings(MPI_Comm comm, const std::string& local_error, const std::vector<NamedValue>& settings,
                    const std::string& where_set, const std::vector<NamedValue>* compared = nullptr);

/// What one allreduce_max_sum() reduces: the maximum of `max` and the sum (modulo 2^64) of
/// `sum` over the ranks.
struct MaxSum {
  uint64_t max[4] = {0, 0, 0, 0};
  uint64_t sum[4] = {0, 0, 0, 0};
};
/// Collective: both reductions in one MPI_Allreduce (a user-defined operation on one
/// element of 8 uint64, so no implementation splits it): agreement checks that need a
/// maximum (did anyone fail, do all hashes agree: max(h) and max(~h)) and a sum (edge
/// hashes from both ends) cost one collective.
MaxSum allreduce_max_sum(MPI_Comm comm, const MaxSum& mine);
/// The same reduction, non-blocking (MPI_Iallreduce): `mine` and `out` must stay in place
/// until *req completes. In the SMPI build (whose non-blocking collectives let ranks leave
/// early, see NonblockingBarrier) it is the blocking reduction, and *req is MPI_REQUEST_NULL.
void iallreduce_max_sum(MPI_Comm comm, const MaxSum* mine, MaxSum* out, MPI_Request* req);
/// Collective: the same reduction as a persistent request (MPI-4's MPI_Allreduce_init, or
/// Open MPI's MPIX_ extension), inactive until MPI_Start; each start reduces what `mine`
/// holds then. False, nothing created, where the MPI has no persistent collectives (and
/// in the SMPI build).
bool allreduce_max_sum_init(MPI_Comm comm, const MaxSum* mine, MaxSum* out, MPI_Request* req);

/// A non-blocking barrier, entered on construction, that carries a flag: once complete,
/// flag() is the maximum of the flags every rank entered with (NBX's barrier carrying an
/// error flag costs nothing more: the SDDE's agreement rides on it). MPI_Iallreduce (MAX)
/// normally, which completes only once every rank has entered, as MPI_Ibarrier; under
/// SimGrid SMPI 3.32, whose non-blocking collectives let ranks leave early
/// (../shared/simgrid/NOTES.md), a dissemination barrier (Hensgen, Finkel and Manber 1988)
/// on Isend/Irecv with tag `tag`: in round k every rank sends rank + 2^k the maximum it
/// has seen and receives rank - 2^k's; after ceil(log2 P) rounds everyone has arrived and
/// holds the maximum of all (the rounds reach every rank, and max is idempotent).
class NonblockingBarrier {
 public:
  NonblockingBarrier(MPI_Comm comm, int tag, int flag = 0);
  /// The maximum flag over the ranks; valid once test() or wait_with() reported completion.
  int flag() const { return acc_; }
  NonblockingBarrier(const NonblockingBarrier&) = delete;
  NonblockingBarrier& operator=(const NonblockingBarrier&) = delete;
  /// Polls: true once the barrier has completed.
  bool test();
  /// Blocks until `other` completes (true, its status in *st) or the barrier does (false;
  /// `other` is left pending). One wait serves both, without polling.
  bool wait_with(MPI_Request& other, MPI_Status* st);

 private:
  void post();     // the current round's requests
  bool advance();  // after both of the round's requests completed: next round; true when done
  MPI_Comm comm_;
  int tag_;
  int p_ = 1, me_ = 0, dist_ = 1;
  bool done_ = false;
  int mine_ = 0, acc_ = 0, in_ = 0, out_ = 0;
  MPI_Request req_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
};

/// The MPI datatype of a C++ arithmetic type.
template <class T>
MPI_Datatype mpi_type() {
  if constexpr (std::is_same_v<T, double>) return MPI_DOUBLE;
  else if constexpr (std::is_same_v<T, float>) return MPI_FLOAT;
  else if constexpr (std::is_same_v<T, int32_t>) return MPI_INT32_T;
  else if constexpr (std::is_same_v<T, int64_t>) return MPI_INT64_T;
  else if constexpr (std::is_same_v<T, uint64_t>) return MPI_UINT64_T;
  else if constexpr (std::is_same_v<T, uint32_t>) return MPI_UINT32_T;
  else if constexpr (std::is_same_v<T, char>) return MPI_CHAR;
  else if constexpr (std::is_same_v<T, unsigned char>) return MPI_UNSIGNED_CHAR;
  else if constexpr (std::is_same_v<T, long long>) return MPI_LONG_LONG;
  else static_assert(sizeof(T) == 0, "no MPI datatype for this type");
}

/// The element-wise maximum of n unsigned 64-bit values over the communicator, in place
/// (collective). MPI_MAX on MPI_UINT64_T is what this should be, but MPICH 4.0.2 compares
/// those values as signed (2^63 + 1 "loses" to 5), so it is made here from the signed
/// maximum of the values with their top bit flipped, which orders them as unsigned.
void allreduce_max_u64(MPI_Comm comm, uint64_t* values, int n);

/// Max / sum / min of one value over the communicator (collective).
double allreduce_max(MPI_Comm comm, double v);
int64_t allreduce_max(MPI_Comm comm, int64_t v);
int64_t allreduce_sum(MPI_Comm comm, int64_t v);
int64_t allreduce_min(MPI_Comm comm, int64_t v);

/// Dense all-to-all-v of typed data with 64-bit-safe counts checked to fit int.
/// `send_counts[p]` elements go to rank p, taken in rank order from `send`.
/// Used where a dense collective is the right tool (generators, reference answers).
template <class T>
std::vector<T> alltoallv(MPI_Comm comm, const std::vector<T>& send, const std::vector<int>& send_counts,
                         std::vector<int>* recv_counts_out = nullptr);

}  // namespace sparsecomm

#include "sparsecomm/core/mpi_util_impl.hpp"
