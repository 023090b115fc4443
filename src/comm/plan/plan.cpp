#include "sparsecomm/comm/plan/plan.hpp"

#include "core/hash.hpp"
#include "comm/plan/registry.hpp"

#include <algorithm>
#include <cstdio>
#include <climits>
#include <cstring>
#include <map>

namespace sparsecomm {

Plan::Plan(std::string name, const Pattern& pattern, const Locality& loc, MPI_Comm comm, const PlanOptions& opt)
    : Plan(std::move(name), pattern, loc, std::make_shared<const Comm>(comm), opt) {}

Plan::Plan(std::string name, const Pattern& pattern, const Locality& loc, std::shared_ptr<const Comm> comm,
           const PlanOptions& opt)
    : PlanBase("Plan", std::move(name), loc, std::move(comm)),
      pattern_(pattern),
      opt_(opt),
      elem_bytes_(static_cast<int64_t>(opt.width) * opt.value_bytes) {
  // Ghosts numbered in the order they arrive (PETSc's and Hypre's ghost layouts: by owner,
  // then by global index): unpacking is one memcpy.
  auto identity = [](const std::vector<int32_t>& v) {
    for (size_t k = 0; k < v.size(); ++k)
      if (v[k] != static_cast<int32_t>(k)) return false;
    return true;
  };
  recv_identity_ = identity(pattern.recv().indices);
  send_identity_ = identity(pattern.send().indices);
}

void Plan::check_type(size_t value_size, const char* call) const {
  if (static_cast<int>(value_size) != opt_.value_bytes)
    throw InputError(detail::value_size_mismatch(who() + "::" + call, value_size, opt_.value_bytes));
}

namespace {
// to[k] = from[idx[k]] (a gather: the pack) or to[idx[k]] = from[k] (a scatter: the
// unpack), for n units of E bytes. A constant E lets the compiler copy each unit as plain
// loads and stores, with no alignment assumed (a unit of two ints is 4-aligned).
template <size_t E, bool Scatter>
void move_fixed(char* to, const char* from, const int32_t* idx, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = idx[k];
    if constexpr (Scatter) std::memcpy(to + i * int64_t{E}, from + k * int64_t{E}, E);
    else std::memcpy(to + k * int64_t{E}, from + i * int64_t{E}, E);
  }
}

template <bool Scatter>
void move_units(char* to, const char* from, const int32_t* idx, int64_t n, int64_t e) {
  switch (e) {
    case 1: return move_fixed<1, Scatter>(to, from, idx, n);
    case 2: return move_fixed<2, Scatter>(to, from, idx, n);
    case 4: return move_fixed<4, Scatter>(to, from, idx, n);
    case 8: return move_fixed<8, Scatter>(to, from, idx, n);
    case 16: return move_fixed<16, Scatter>(to, from, idx, n);
    case 24: return move_fixed<24, Scatter>(to, from, idx, n);
    case 32: return move_fixed<32, Scatter>(to, from, idx, n);
    case 64: return move_fixed<64, Scatter>(to, from, idx, n);
    case 128: return move_fixed<128, Scatter>(to, from, idx, n);
    default: break;
  }
  const auto u = static_cast<size_t>(e);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = idx[k];
    if constexpr (Scatter) std::memcpy(to + i * e, from + k * e, u);
    else std::memcpy(to + k * e, from + i * e, u);
  }
}
}  // namespace

void Plan::check_idle(const char* call) const {
  if (active_) throw Error(who() + ": " + call + "() while an exchange is active (wait() first)");
}

void Plan::pack(const void* owned, char* to) {
  ScopedPhase t(&exec_, ExecPhase::pack);
  const auto& s = pattern_.send();
  move_units<false>(to ? to : send_buf(), static_cast<const char*>(owned), s.indices.data(), s.size(),
                    elem_bytes_);
}

void Plan::launch() {
  ScopedPhase t(&exec_, ExecPhase::start);
  do_start();
  active_ = true;
}

void Plan::start(const void* owned) {
  check_idle("start");
  pack(owned, do_pack_target());
  launch();
}

void Plan::start() {
  check_idle("start");
  launch();
}

void Plan::start(const void* owned, void* ghost) {
  check_idle("start");
  const bool in_place = moves_in_place();
  const bool send_direct = send_identity_ || in_place, recv_direct = recv_identity_ || in_place;
  // A backend with a pack target of its own (shm) starts with do_start(), never directly.
  char* target = send_direct ? nullptr : do_pack_target();
  if (!send_direct) pack(owned, target);
  ScopedPhase t(&exec_, ExecPhase::start);
  const bool direct = !target && (send_direct || recv_direct) &&
                      do_start_direct(send_direct ? static_cast<const char*>(owned) : nullptr,
                                      recv_direct ? static_cast<char*>(ghost) : nullptr);
  if (!direct) {
    if (send_direct) pack(owned, do_pack_target());
    do_start();
  }
  direct_ = direct && recv_direct && ghost;  // a null ghost: do_start_direct received into recv_buf()
  direct_ghost_ = direct_ ? ghost : nullptr;
  active_ = true;
}

bool Plan::complete(const char* call) {
  if (!active_) throw Error(who() + ": " + call + "() without start()");
  ScopedPhase t(&exec_, ExecPhase::wait);
  active_ = false;
  const bool direct = direct_;
  direct_ = false;
  if (test_done_) {
    test_done_ = false;
    return direct;
  }
  do_wait();
  return direct;
}

bool Plan::poll() {
  if (!active_) throw Error(who() + ": test() without start()");
  ScopedPhase t(&exec_, ExecPhase::wait);
  if (!do_test()) return false;
  test_done_ = true;  // the next complete() does not wait again
  return true;
}

void Plan::wait(void* ghost) {
  void* const into = direct_ghost_;
  if (complete("wait")) {
    if (ghost != into) throw InputError(who() + "::wait: not the ghost array that start(owned, ghost) received into");
    return;
  }
  ScopedPhase t(&exec_, ExecPhase::unpack);
  const auto& r = pattern_.recv();
  if (recv_identity_) {
    if (r.size() > 0) std::memcpy(ghost, received(), static_cast<size_t>(recv_bytes()));
    return;
  }
  move_units<true>(static_cast<char*>(ghost), received(), r.indices.data(), r.size(), elem_bytes_);
}

void* Plan::wait() {
  if (complete("wait"))
    throw InputError(who() + "::wait(): the values went into the ghost array given to start(owned, ghost)");
  return received();
}

bool Plan::test(void* ghost) {
  if (!poll()) return false;
  wait(ghost);
  return true;
}

void* Plan::send_area() {
  check_idle("send_area");
  return send_buf();
}

bool PlanBase::do_test() { throw NotImplementedError(who() + ": test() is not implemented for this backend"); }

void PlanBase::finish_if_active() noexcept {
  if (!active_) return;
  active_ = false;
  detail::complete_in_destructor(who(), [this] { do_wait(); });
}

namespace detail {
void complete_in_destructor(const std::string& plan, const std::function<void()>& wait) noexcept {
  try {
    wait();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sparsecomm: %s destroyed during an exchange; completing it failed: %s\n", plan.c_str(),
                 e.what());
  }
}

std::string value_size_mismatch(const std::string& call, size_t got, int want) {
  return call + ": values of " + std::to_string(got) + " bytes, but the plan was set up for " + std::to_string(want);
}
}  // namespace detail

namespace {
auto& halo() { return detail::registry<HaloShape>(); }

// make_plan's checks that need no communication: "" or what is wrong on this rank.
std::string local_check(const std::string& backend, const detail::Registry<HaloShape>::Entry* entry, const Pattern& pattern,
                        const Locality& loc, MPI_Comm comm, const PlanOptions& opt) {
  if (!entry) return halo().unknown(backend);
  if (std::string why = validate_backend_options(backend, backend_option_specs(backend), opt.backend); !why.empty())
    return "make_plan: " + why;
  if (opt.width < 1 || opt.value_bytes < 1) return "make_plan: width and value_bytes must be at least 1";
  if ((pattern.send().size() + pattern.recv().size()) * opt.width * int64_t{opt.value_bytes} > INT32_MAX)
    return "make_plan: more than 2^31 bytes in one exchange on this rank";
  if (loc.size() != comm_size(comm))
    return "make_plan: the locality describes " + std::to_string(loc.size()) + " ranks, the communicator has " +
           std::to_string(comm_size(comm));
  if (std::string why = pattern.error(comm_size(comm)); !why.empty()) return "make_plan: " + why;
  return "";
}
}  // namespace

namespace detail {
std::unique_ptr<Plan> make_plan_inside(const std::string& backend, const Pattern& pattern, const Locality& loc,
                                       MPI_Comm comm, const PlanOptions& opt) {
  const auto* entry = halo().find(backend);
  if (std::string err = local_check(backend, entry, pattern, loc, comm, opt); !err.empty()) throw InputError(err);
  const double t0 = MPI_Wtime();
  std::unique_ptr<Plan> plan = entry->factory(pattern, loc, comm, opt);
  plan->setup_stats_mut().add_time("setup.backend", MPI_Wtime() - t0);
  return plan;
}
}  // namespace detail

std::unique_ptr<Plan> make_plan(const std::string& backend, const Pattern& pattern, const Locality& loc, MPI_Comm comm,
                                const PlanOptions& opt, const std::string& caller_error) {
  const CommExclusive exclusive(comm, "make_plan");
  const auto* entry = halo().find(backend);
  std::string err = caller_error.empty() ? local_check(backend, entry, pattern, loc, comm, opt) : caller_error;
  // Every rank must ask for the same backend and options (a canonical string's hash), and
  // the pattern must be consistent: what I send to d is what d expects from me (a hash of
  // every edge with its count, summed from both ends).
  const std::string canon = backend + "|" + opt.sdde + "|" + std::to_string(opt.width) + "|" +
                            std::to_string(opt.value_bytes) + "|" + (opt.persistent_requests ? "1" : "0") + "|" +
                            opt.backend.canonical(entry ? backend_option_specs(backend) : std::vector<OptionSpec>{});
  const uint64_t h = std::hash<std::string>{}(canon);
  const int me = comm_rank(comm);
  // One collective for all three checks: max of (failed, h, ~h), sum of the edge hashes.
  MaxSum mine;
  mine.max[0] = err.empty() ? 0 : 1, mine.max[1] = h, mine.max[2] = ~h, mine.max[3] = caller_error.empty() ? 0 : 1;
  // (only over a pattern that passed the local checks: a malformed one's offsets cannot be
  // read, and its rank's failure is reported instead). With global ids, an edge's hash
  // covers its ids in order too: the duplicate-removing backends match entries by id, the
  // others by position, so ends that name different ids would get other values silently.
  const auto edge = [](const PatternSide& s, int i, int from, int to) {
    const uint64_t ids =
        s.global_ids.empty() ? 0 : detail::ids_hash(s.global_ids.data() + s.offsets[i], s.count(i));
    return detail::splitmix64(detail::edge_hash(from, to, s.count(i)) ^ ids);
  };
  for (int i = 0; err.empty() && i < pattern.send().num_neighbors(); ++i)
    mine.sum[0] += edge(pattern.send(), i, me, pattern.send().ranks[i]);
  for (int i = 0; err.empty() && i < pattern.recv().num_neighbors(); ++i)
    mine.sum[1] += edge(pattern.recv(), i, pattern.recv().ranks[i], me);
  const MaxSum all = allreduce_max_sum(comm, mine);
  // A caller's failure explains whatever else looks wrong (its pattern was not built):
  // the callers' messages alone are reported.
  if (all.max[3] != 0) agree(comm, caller_error);
  // Every rank decides alike from the reduced values (a rank whose hash differs makes
  // max(h) or max(~h) differ from some rank's own; that rank reports it, the others join).
  const bool options_differ = all.max[1] != h || all.max[2] != ~h;
  if (options_differ) {  // (known on every rank: which ones, collectively)
    const std::string which = differing_settings(
        comm, {{"the backend", backend},
               {"the SDDE strategy", opt.sdde},
               {"the values per entry (width)", std::to_string(opt.width)},
               {"the bytes per value (the datatype's size)", std::to_string(opt.value_bytes)},
               {"persistent requests", opt.persistent_requests ? "on" : "off"},
               {"the backend options", opt.backend.canonical(entry ? backend_option_specs(backend)
                                                                    : std::vector<OptionSpec>{})}});
    if (err.empty()) err = "make_plan: the ranks asked for different exchanges: " + which + ", not on every rank";
  }
  // (where some rank failed its own checks -- a malformed pattern, say -- the mismatch it
  // causes is explained by that failure: its message alone is reported)
  if (err.empty() && all.max[0] == 0 && all.sum[0] != all.sum[1])
    err = "make_plan: inconsistent pattern (a rank's send count to a neighbor differs from what that neighbor "
          "expects to receive, one side does not list the other, or the two ends of an edge name different "
          "global ids)";
  // Whether anyone failed must be known alike everywhere: a failure flag, a pattern
  // mismatch (the sums are the same on every rank), or options that differ somewhere
  // (then max(h) != min(h), i.e. max(h) != h or max(~h) != ~h on at least one rank — and
  // on every rank max(h) == h and max(~h) == ~h only if all hashes are equal).
  const bool anyone = all.max[0] != 0 || all.sum[0] != all.sum[1] || options_differ;
  if (anyone) agree(comm, err);  // failure path: every rank joins and throws the same error
  const double t0 = MPI_Wtime();
  std::unique_ptr<Plan> plan = agreed(comm, [&] { return entry->factory(pattern, loc, comm, opt); });
  plan->setup_stats_mut().add_time("setup.backend", MPI_Wtime() - t0);
  return plan;
}

}  // namespace sparsecomm
