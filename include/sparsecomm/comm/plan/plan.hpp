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

  /// Packs owned[pattern.send.indices[k]] (width values each) and starts the exchange.
  /// Not collective by itself, but every rank of the plan must call it.
  template <class T>
  void start(const T* owned) {
    check_type(sizeof(T), "start");
    if (active_) throw Error(who() + ": start() called twice without wait()");
    pack(owned, do_pack_target());
    start_packed();
  }

  /// Completes the exchange and writes the received values into ghost[pattern.recv.indices[k]].
  template <class T>
  void wait(T* ghost, Unpack mode = Unpack::replace) {
    check_type(sizeof(T), "wait");
    if (mode == Unpack::add && !std::is_arithmetic_v<T>)
      throw InputError(who() + "::wait: Unpack::add needs an arithmetic value type");
    complete("wait");
    ScopedTimer t(&exec_, "unpack");
    const auto& r = pattern_.recv();
    const T* buf = reinterpret_cast<const T*>(recv_buf_.data());
    const int w = opt_.width;
    const int32_t* idx = r.indices.data();
    if (mode == Unpack::replace && recv_identity_) {
      if (r.size() > 0) std::memcpy(ghost, buf, static_cast<size_t>(r.size() * w) * sizeof(T));
      return;
    }
    if (w == 1 && mode == Unpack::replace) {  // the common case as a plain scatter loop
      for (int64_t k = 0; k < r.size(); ++k) ghost[idx[k]] = buf[k];
      return;
    }
    for (int64_t k = 0; k < r.size(); ++k) {
      T* dst = ghost + static_cast<int64_t>(idx[k]) * w;
      if (mode == Unpack::replace) {
        for (int j = 0; j < w; ++j) dst[j] = buf[k * w + j];
      } else if constexpr (std::is_arithmetic_v<T>) {
        for (int j = 0; j < w; ++j) dst[j] += buf[k * w + j];
      }
    }
  }

  // Zero-copy use (what PETSc's star forest does for contiguous leaves): the caller works
  // on the plan's own buffers instead of having values packed from and unpacked into its
  // arrays. When the ghosts are numbered in arrival order (receives_in_ghost_order(): PETSc's
  // and Hypre's layouts), the received buffer *is* the ghost array:
  //
  //   plan->start(x_owned);
  //   const double* ghost = plan->wait_in_place<double>();   // no unpack copy
  //
  // and where send entry k is owned entry k (sends_in_owned_order(): a reverse, transpose
  // exchange sending from ghosts in arrival order), the caller computes straight into the
  // buffer that is sent:
  //
  //   double* partial = plan->send_area<double>();   // pattern().send() order
  //   ... write partial[0 .. pattern().send().size() * width) ...
  //   plan->start_packed();
  //   plan->wait(y_owned, Unpack::add);

  /// Completes the exchange like wait() but leaves the values where they arrived and
  /// returns them in pattern().recv() order: value k (width values) belongs at ghost index
  /// pattern().recv().indices[k]. Valid, and writable, until the next start().
  template <class T>
  T* wait_in_place() {
    check_type(sizeof(T), "wait_in_place");
    complete("wait_in_place");
    return reinterpret_cast<T*>(recv_buf_.data());
  }
  /// pattern().recv().indices is 0, 1, 2, ...: wait_in_place() returns the ghost array itself.
  bool receives_in_ghost_order() const { return recv_identity_; }

  /// The buffer start_packed() sends, in pattern().send() order: entry k (width values) is
  /// the value of owned index pattern().send().indices[k]. Not while an exchange is active:
  /// it is being sent.
  template <class T>
  T* send_area() {
    check_type(sizeof(T), "send_area");
    if (active_) throw Error(who() + ": send_area() while an exchange is active (wait() first)");
    return reinterpret_cast<T*>(send_buf_.data());
  }
  /// pattern().send().indices is 0, 1, 2, ...: the send area is the owned array itself.
  bool sends_in_owned_order() const { return send_identity_; }
  /// Starts the exchange of what the caller wrote into send_area() (start() packs, then
  /// calls this).
  void start_packed() {
    if (active_) throw Error(who() + ": start() called twice without wait()");
    ScopedTimer t(&exec_, "start");
    do_start();
    active_ = true;
  }
  /// Completes an exchange and leaves the values in the plan's receive buffer, unread: the
  /// byte-level mirror of start_packed() (what wait_in_place() does without its value type;
  /// auto times its candidates this way).
  void wait_packed() { complete("wait_packed"); }

  /// start() and wait() without the plan's own copies where it can: the values are sent
  /// from `owned` as they lie where send entry k is owned entry k (sends_in_owned_order():
  /// Hypre's packed send buffer, a reverse plan over PETSc's lvec), and received straight
  /// into `ghost` where the ghosts are in arrival order (receives_in_ghost_order()), by
  /// backends that can send from and receive into memory they did not set up (p2p and
  /// neighbor with fresh requests), as PETSc's basic star forest and Hypre do. Otherwise
  /// start_into() packs and wait_into() unpacks, as start() and wait() do. `owned` must stay
  /// unchanged and `ghost` untouched until wait_into(ghost).
  template <class T>
  void start_into(const T* owned, T* ghost) {
    check_type(sizeof(T), "start_into");
    if (active_) throw Error(who() + ": start_into() called twice without wait_into()");
    const bool send_direct = send_identity_, recv_direct = recv_identity_;
    // A backend with a pack target of its own (shm) starts with do_start(), never directly.
    char* target = send_direct ? nullptr : do_pack_target();
    if (!send_direct) pack(owned, target);
    ScopedTimer t(&exec_, "start");
    const bool direct = !target && (send_direct || recv_direct) &&
                        do_start_direct(send_direct ? reinterpret_cast<const char*>(owned) : nullptr,
                                        recv_direct ? reinterpret_cast<char*>(ghost) : nullptr);
    if (!direct) {
      if (send_direct) pack(owned, do_pack_target());
      do_start();
    }
    direct_ = direct && recv_direct;
    active_ = true;
  }
  template <class T>
  void wait_into(T* ghost) {
    if (!direct_) {
      wait(ghost);
      return;
    }
    complete("wait_into");
    direct_ = false;
  }
  /// Whether the last start_into() receives straight into the caller's array.
  bool receiving_direct() const { return direct_; }

  /// wait() without blocking: false while messages are outstanding (call again; later
  /// stages of a multi-stage plan advance inside these calls), true once complete, with
  /// ghost written as wait() writes it. NotImplementedError for a backend without it
  /// (supports_test()).
  template <class T>
  bool test(T* ghost, Unpack mode = Unpack::replace) {
    check_type(sizeof(T), "test");
    if (!active_) throw Error(who() + ": test() without start()");
    {
      ScopedTimer t(&exec_, "wait");
      if (!do_test()) return false;
    }
    test_done_ = true;  // wait() completes without waiting again
    wait(ghost, mode);
    return true;
  }
  /// Whether test() is implemented by this backend.
  virtual bool supports_test() const { return false; }
  /// start() then wait().
  template <class T>
  void exchange(const T* owned, T* ghost, Unpack mode = Unpack::replace) {
    start(owned);
    wait(ghost, mode);
  }

  const Pattern& pattern() const { return pattern_; }
  const PlanOptions& options() const { return opt_; }

 protected:
  Plan(std::string name, const Pattern& pattern, const Locality& loc, MPI_Comm comm, const PlanOptions& opt);

  /// Start like do_start() but send from `send` (laid out like send_buf()) instead of
  /// send_buf() when it is not null, and receive into `recv` (laid out like recv_buf())
  /// instead of recv_buf() when it is not null; do_wait() then completes it. false (the
  /// default): not supported, nothing started (start_into() packs and copies instead).
  virtual bool do_start_direct(const char* /*send*/, char* /*recv*/) { return false; }
  /// Where the next pack writes (laid out like send_buf()), or nullptr: send_buf(). Called
  /// right before each pack of start() / start_into(), and do_start() always follows that
  /// pack (the shm backend packs straight into its shared window this way).
  virtual char* do_pack_target() { return nullptr; }

  char* send_buf() { return send_buf_.data(); }
  char* recv_buf() { return recv_buf_.data(); }
  int64_t recv_bytes() const { return static_cast<int64_t>(recv_buf_.size()); }
  int64_t send_bytes() const { return static_cast<int64_t>(send_buf_.size()); }
  int64_t elem_bytes() const { return elem_bytes_; }

 private:
  friend std::unique_ptr<Plan> make_plan(const std::string&, const Pattern&, const Locality&, MPI_Comm,
                                         const PlanOptions&, const std::string&);
  friend void detail::register_auto();
  friend std::unique_ptr<Plan> detail::make_plan_inside(const std::string&, const Pattern&, const Locality&, MPI_Comm,
                                                        const PlanOptions&);
  void check_type(size_t value_size, const char* call) const;
  /// Packs owned[pattern.send.indices[k]] (width values each) into `to` (a pack target), or
  /// the send buffer when null.
  template <class T>
  void pack(const T* owned, char* to) {
    ScopedTimer t(&exec_, "pack");
    const auto& s = pattern_.send();
    T* buf = reinterpret_cast<T*>(to ? to : send_buf_.data());
    const int w = opt_.width;
    const int32_t* idx = s.indices.data();
    if (w == 1) {  // the common case, as a plain gather loop the compiler can unroll
      for (int64_t k = 0; k < s.size(); ++k) buf[k] = owned[idx[k]];
    } else {
      for (int64_t k = 0; k < s.size(); ++k) {
        const T* src = owned + static_cast<int64_t>(idx[k]) * w;
        for (int j = 0; j < w; ++j) buf[k * w + j] = src[j];
      }
    }
  }

  /// Completes the active exchange (the "wait" timer).
  void complete(const char* call) {
    if (!active_) throw Error(who() + ": " + call + "() without start()");
    ScopedTimer t(&exec_, "wait");
    active_ = false;
    if (test_done_) {
      test_done_ = false;
      return;
    }
    do_wait();
  }

  Pattern pattern_;
  PlanOptions opt_;
  int64_t elem_bytes_;
  std::vector<char> send_buf_, recv_buf_;
  bool recv_identity_ = false;  ///< pattern.recv().indices == 0, 1, 2, ...: unpack by memcpy
  bool send_identity_ = false;  ///< pattern.send().indices == 0, 1, 2, ...
  bool direct_ = false;  ///< the active exchange receives into the caller's array (start_into)
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
