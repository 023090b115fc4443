#pragma once
// A Plan executes one halo-exchange Pattern many times: set up once (communicators,
// buffers, persistent requests, aggregation schedules), then start()/wait() per use.
// Backends derive from Plan and register under a name (like PETSc's -sf_type):
//
//   auto plan = make_plan("aggregated_dedup", pattern, locality, comm);  // collective
//   plan->start(x_owned);          // pack + start
//   ... local work ...
//   plan->wait(x_ghost);           // complete + unpack into the ghost buffer
//
// The public calls are non-virtual: they check arguments and state, pack and unpack, and
// time each phase. Backends only move packed bytes: send_buf() (pattern send order) to
// recv_buf() (pattern receive order), so a backend is not a template over the value type.
// One start() may be outstanding per Plan; wait() must follow before the next start().
#include <mpi.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "sparsecomm/comm/plan/backend_hooks.hpp"
#include "sparsecomm/comm/plan/backend_options.hpp"
#include "sparsecomm/comm/plan/plan_base.hpp"
#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/comm/messages.hpp"
#include "sparsecomm/comm/pattern.hpp"
#include "sparsecomm/core/stats.hpp"

namespace sparsecomm {

class Plan;
struct PlanOptions;
namespace detail {
void register_auto();
class TunedPlan;
/// For a backend that builds another inside its own make_plan (auto): the factory of
/// `backend` with make_plan's local checks (an InputError) but none of its collectives.
/// Only where make_plan's checks already ran on options from which every rank derives the
/// same ones here, and inside make_plan's agreement (a rank whose factory throws meets the
/// others there, so nothing collective may follow this call in the caller).
std::unique_ptr<Plan> make_plan_inside(const std::string&, const Pattern&, const Locality&, MPI_Comm,
                                       const PlanOptions&);
}  // namespace detail

/// The backend an entry point uses when its caller names none. The explicit APIs (the C
/// API, GhostScatter, PETSc's MatMult interop, the apps' plan variants) default to p2p: one
/// message per neighbor, no model and no locality needed, what the caller would have
/// written. The zero-code layers (the PETSc SF type, the Hypre hook, the PMPI layer), whose
/// users chose no backend at all, default to auto.
inline constexpr const char* kDefaultBackend = "p2p";
inline constexpr const char* kInterposedDefaultBackend = "auto";

struct PlanOptions {
  int width = 1;             ///< values per index (k vectors interleaved: x[i*width + k])
  int value_bytes = 8;       ///< bytes of one value (8 for double)
  std::string sdde = kDefaultSdde;  ///< SDDE strategy for setup steps that must discover peers
  /// How the point-to-point backends post their fixed messages at every execution:
  /// MPI_Irecv/MPI_Isend (false, the default with Open MPI, whose inline send path makes it
  /// faster) or persistent requests started with MPI_Startall (true; the SMPI default).
  /// See comm/messages.hpp. Same name and meaning in GatherOptions.
  bool persistent_requests = kPersistentRequestsDefault;
  /// Options only some backends read, declared by each backend (BackendHooks::options):
  /// "combined" takes k, theta, aware, rounds; "auto" takes model, iterations and race; see
  /// backend_option_specs() or `sparsecomm info --backends`. Validated by make_plan.
  BackendOptions backend;
};

/// How received values are written into the destination buffer.
enum class Unpack { replace, add };

class Plan : public PlanBase {
 public:
  // Execution: four verbs, start / wait / test / exchange, one exchange active at a time (a
  // wait, or a test that returned true, before the next start). Each is the byte-level core,
  // over untyped memory where a value (one unit: unit_bytes() = width * value_bytes bytes)
  // of index i lies at byte i * unit_bytes(), and a typed convenience over T of value_bytes
  // bytes (checked) that calls it; only Unpack::add, which computes on the values, needs the
  // type. Not collective by themselves, but every rank of the plan must run each exchange.
  //
  //   plan->start(x_owned);  ...  plan->wait(x_ghost);    // pack, exchange, unpack
  //
  // Zero-copy use (what PETSc's star forest and Hypre do for their contiguous layouts): where
  // the ghosts are numbered in arrival order (receives_in_ghost_order()), the received
  // buffer *is* the ghost array,
  //
  //   plan->start(x_owned);
  //   const double* ghost = plan->wait<double>();         // no unpack copy
  //
  // and where send entry k is owned entry k (sends_in_owned_order(): a reverse, transpose
  // exchange sending from ghosts in arrival order), the caller computes straight into the
  // buffer that is sent:
  //
  //   double* partial = plan->send_area<double>();        // pattern().send() order
  //   ... write partial[0 .. pattern().send().size() * width) ...
  //   plan->start();
  //   plan->wait(y_owned, Unpack::add);

  /// Packs the units of owned at pattern().send().indices and starts the exchange.
  void start(const void* owned);
  /// Starts the exchange of what the caller wrote into send_area(): no pack.
  void start();
  /// start(owned) for an exchange that wait(ghost) completes, without the plan's own copies
  /// where it can: the units are sent from `owned` as they lie where sends_in_owned_order()
  /// (Hypre's packed send buffer, a reverse plan over PETSc's lvec), and received straight
  /// into `ghost` where receives_in_ghost_order(), by backends that can send from and
  /// receive into memory they did not set up (p2p and neighbor with fresh requests), as
  /// PETSc's basic star forest and Hypre do; otherwise it packs, and wait(ghost) unpacks.
  /// `owned` must stay unchanged and `ghost` untouched until wait(ghost).
  void start(const void* owned, void* ghost);
  /// Completes the exchange and writes the received units into ghost at
  /// pattern().recv().indices (nothing left to copy if start(owned, ghost) received there).
  void wait(void* ghost);
  /// Completes the exchange and leaves the values where they arrived: returns them in
  /// pattern().recv() order (unit k belongs at ghost index pattern().recv().indices[k]).
  /// Valid, and writable, until the next start. Not after start(owned, ghost): wait(ghost).
  void* wait();
  /// wait(ghost) without blocking: false while messages are outstanding (call again; later
  /// stages of a multi-stage plan advance inside these calls), true once complete, with
  /// ghost written as wait(ghost) writes it. NotImplementedError for a backend without it
  /// (supports_test()).
  bool test(void* ghost);
  /// start(owned) then wait(ghost).
  void exchange(const void* owned, void* ghost) {
    start(owned);
    wait(ghost);
  }

  // The typed convenience: the verbs above over T (sizeof(T) == value_bytes, checked).
  template <class T>
  void start(const T* owned) {
    check_type(sizeof(T), "start");
    start(static_cast<const void*>(owned));
  }
  template <class T>
  void start(const T* owned, T* ghost) {
    check_type(sizeof(T), "start");
    start(static_cast<const void*>(owned), static_cast<void*>(ghost));
  }
  /// Unpack::add adds the received values to ghost's instead (an arithmetic T).
  template <class T>
  void wait(T* ghost, Unpack mode = Unpack::replace) {
    check_type(sizeof(T), "wait");
    if (mode == Unpack::replace) return wait(static_cast<void*>(ghost));
    if constexpr (std::is_arithmetic_v<T>) {
      add_received(ghost);
    } else {
      throw InputError(who() + "::wait: Unpack::add needs an arithmetic value type");
    }
  }
  template <class T>
  T* wait() {
    check_type(sizeof(T), "wait");
    return static_cast<T*>(wait());
  }
  template <class T>
  bool test(T* ghost, Unpack mode = Unpack::replace) {
    check_type(sizeof(T), "test");
    if (!poll()) return false;
    wait(ghost, mode);
    return true;
  }
  template <class T>
  void exchange(const T* owned, T* ghost, Unpack mode = Unpack::replace) {
    start(owned);
    wait(ghost, mode);
  }

  /// The buffer start() sends, in pattern().send() order: unit k is the value of owned index
  /// pattern().send().indices[k]. Not while an exchange is active: it is being sent.
  void* send_area();
  template <class T>
  T* send_area() {
    check_type(sizeof(T), "send_area");
    return static_cast<T*>(send_area());
  }
  /// pattern().recv().indices is 0, 1, 2, ...: wait() returns the ghost array itself.
  bool receives_in_ghost_order() const { return recv_identity_; }
  /// pattern().send().indices is 0, 1, 2, ...: the send area is the owned array itself.
  bool sends_in_owned_order() const { return send_identity_; }
  /// Whether the active exchange, started by start(owned, ghost), receives straight into ghost.
  bool receiving_direct() const { return direct_; }
  /// Whether test() is implemented by this backend.
  virtual bool supports_test() const { return false; }
  /// Bytes of one unit: width * value_bytes.
  int64_t unit_bytes() const { return elem_bytes_; }

  // Deprecated aliases of the verbs above, kept so that older code compiles unchanged.
  /// Deprecated: start().
  [[deprecated("use start()")]] void start_packed() { start(); }
  /// Deprecated: wait(), the values left in the receive buffer.
  [[deprecated("use wait()")]] void wait_packed() { wait(); }
  /// Deprecated: wait<T>().
  template <class T>
  [[deprecated("use wait<T>()")]] T* wait_in_place() {
    return wait<T>();
  }
  /// Deprecated: start(owned, ghost).
  template <class T>
  [[deprecated("use start(owned, ghost)")]] void start_into(const T* owned, T* ghost) {
    start(owned, ghost);
  }
  /// Deprecated: wait(ghost).
  template <class T>
  [[deprecated("use wait(ghost)")]] void wait_into(T* ghost) {
    wait(ghost);
  }

  const Pattern& pattern() const { return pattern_; }
  const PlanOptions& options() const { return opt_; }

 protected:
  Plan(std::string name, const Pattern& pattern, const Locality& loc, MPI_Comm comm, const PlanOptions& opt);
  /// Local: on a communicator shared with other plans (PlanBase).
  Plan(std::string name, const Pattern& pattern, const Locality& loc, std::shared_ptr<const Comm> comm,
       const PlanOptions& opt);

  /// Whether start(owned, ghost) hands do_start_direct() the caller's arrays themselves,
  /// whatever the pattern's positions (the backend then moves every unit in place), instead
  /// of only where they are laid out like send_buf() / recv_buf().
  virtual bool moves_in_place() const { return false; }

  /// Start like do_start() but send from `send` (laid out like send_buf()) instead of
  /// send_buf() when it is not null, and receive into `recv` (laid out like recv_buf())
  /// instead of recv_buf() when it is not null (where moves_in_place(): `send` is the
  /// caller's owned array and `recv` its ghost array, each unit at its pattern position);
  /// do_wait() then completes it. false (the
  /// default): not supported, nothing started (start(owned, ghost) packs and copies instead).
  virtual bool do_start_direct(const char* /*send*/, char* /*recv*/) { return false; }
  /// Where the next pack writes (laid out like send_buf()), or nullptr: send_buf(). Called
  /// right before each pack of start(owned) / start(owned, ghost), and do_start() always
  /// follows that pack (the shm backend packs straight into its shared window this way).
  virtual char* do_pack_target() { return nullptr; }
  /// Where the units received by the exchange just completed lie (laid out like recv_buf()),
  /// or nullptr: recv_buf(). Read by wait() and wait(ghost) after do_wait() (a plan that
  /// runs another plan inside, auto's tuning, points at that plan's buffer: no copy).
  virtual char* do_recv_area() { return nullptr; }

  /// The plan's buffers, made at their first use (a backend that moves every exchange
  /// between the caller's arrays, moves_in_place(), never needs them).
  char* send_buf() { return buffer(send_buf_, pattern_.send().size()); }
  char* recv_buf() { return buffer(recv_buf_, pattern_.recv().size()); }
  int64_t recv_bytes() const { return pattern_.recv().size() * elem_bytes_; }
  int64_t send_bytes() const { return pattern_.send().size() * elem_bytes_; }
  int64_t elem_bytes() const { return elem_bytes_; }

 private:
  friend std::unique_ptr<Plan> make_plan(const std::string&, const Pattern&, const Locality&, MPI_Comm,
                                         const PlanOptions&, const std::string&);
  friend void detail::register_auto();
  friend class detail::TunedPlan;  // runs other plans' pack target and launch (tune.cpp)
  friend std::unique_ptr<Plan> detail::make_plan_inside(const std::string&, const Pattern&, const Locality&, MPI_Comm,
                                                        const PlanOptions&);
  /// The received units after complete(): do_recv_area(), else recv_buf().
  char* received() {
    char* r = do_recv_area();
    return r ? r : recv_buf();
  }
  char* buffer(std::vector<char>& b, int64_t units) {
    if (b.empty() && units > 0) b.resize(static_cast<size_t>(units * elem_bytes_));
    return b.data();
  }
  void check_type(size_t value_size, const char* call) const;
  /// Throws unless the plan is idle (`call` names the caller).
  void check_idle(const char* call) const;
  /// Packs the units of owned at pattern().send().indices into `to` (a pack target), or the
  /// send buffer when null (the "pack" timer).
  void pack(const void* owned, char* to);
  /// do_start() (the "start" timer); the exchange is active afterwards.
  void launch();
  /// Completes the active exchange (the "wait" timer); true if it was received straight
  /// into the ghost array of start(owned, ghost).
  bool complete(const char* call);
  /// One do_test() (the "wait" timer): true once the active exchange is complete, which the
  /// next complete() then does not wait for again.
  bool poll();
  /// ghost[pattern.recv.indices[k]] += the received unit k, after complete().
  template <class T>
  void add_received(T* ghost) {
    if (complete("wait")) throw InputError(who() + "::wait: Unpack::add after start(owned, ghost), which received into ghost");
    ScopedPhase t(&exec_, ExecPhase::unpack);
    const auto& r = pattern_.recv();
    const T* buf = reinterpret_cast<const T*>(received());
    const int w = opt_.width;
    const int32_t* idx = r.indices.data();
    for (int64_t k = 0; k < r.size(); ++k) {
      T* dst = ghost + static_cast<int64_t>(idx[k]) * w;
      for (int j = 0; j < w; ++j) dst[j] += buf[k * w + j];
    }
  }

  Pattern pattern_;
  PlanOptions opt_;
  int64_t elem_bytes_;
  std::vector<char> send_buf_, recv_buf_;
  bool recv_identity_ = false;  ///< pattern.recv().indices == 0, 1, 2, ...: unpack by memcpy
  bool send_identity_ = false;  ///< pattern.send().indices == 0, 1, 2, ...
  bool direct_ = false;  ///< the active exchange receives into the caller's array (start(owned, ghost))
  void* direct_ghost_ = nullptr;  ///< that array
  bool test_done_ = false;  ///< test() found the active exchange complete
};

using PlanFactory =
    std::function<std::unique_ptr<Plan>(const Pattern&, const Locality&, MPI_Comm, const PlanOptions&)>;

namespace virt {
struct HaloPattern;
struct RankCounts;
}  // namespace virt

/// The halo shape of exchange (Plan) as a backend sees it: what its factory and its hooks
/// take (BackendHooksFor, backend_hooks.hpp; the allgather shape: GatherShape).
struct HaloShape {
  static constexpr const char* name = "halo";
  using Factory = PlanFactory;
  /// The counts hook: every virtual rank's counts of one execution of `pattern`, ranks in
  /// `region`s, values of opt.width * opt.value_bytes bytes.
  using Counts = std::vector<virt::RankCounts>(const virt::HaloPattern& pattern, const std::vector<int>& region,
                                               const PlanOptions& opt);
};
/// What the rest of the library needs from a halo backend besides its plans (its counts,
/// options and auto's terms), registered with it.
using BackendHooks = BackendHooksFor<HaloShape>;

/// Adds a backend under `name` (replacing one of the same name), with its hooks. Built-in
/// backends are registered on first use of the registry; call this before make_plan() for
/// your own (docs: a test defines one outside src/, tests/open_backend).
void register_backend(const std::string& name, const std::string& description, PlanFactory factory,
                      BackendHooks hooks = {});
/// The hooks registered with backend `name`; InputError (listing the names) if unknown.
const BackendHooks& backend_hooks(const std::string& name);
/// Names of every registered backend, sorted.
std::vector<std::string> backend_names();
/// Whether `name` is a registered backend (no list built).
bool backend_registered(const std::string& name);
/// The options make_plan accepts for `name`: its own, and for a backend that chooses among
/// the others (auto) theirs too, which it hands on to each candidate. InputError if unknown.
std::vector<OptionSpec> backend_option_specs(const std::string& name);
/// One-line description of a backend.
std::string backend_description(const std::string& name);

/// Collective over `comm`. Builds the named backend's Plan for `pattern`; the setup time
/// goes into plan->setup_stats() ("setup.backend"). An unknown name, or ranks that
/// disagree on the name or options, raise InputError on every rank (listing valid names).
/// Its checks cost one collective. `caller_error`: a failed check of the caller's own on
/// this rank (then `pattern` is not used), raised on every rank within that collective.
std::unique_ptr<Plan> make_plan(const std::string& backend, const Pattern& pattern, const Locality& loc, MPI_Comm comm,
                                const PlanOptions& opt = {}, const std::string& caller_error = "");

}  // namespace sparsecomm
