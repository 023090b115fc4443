// libsparsecomm_hypre_hook.so: Hypre's comm-package exchange through sparsecomm, for an
// unmodified program:
//
//   mpirun -x LD_PRELOAD=/path/libsparsecomm_hypre_hook.so -np 16 ./any_hypre_program
//
// Hypre (Debian's shared libHYPRE) calls its exchange through the PLT, so these
// definitions replace
//   hypre_MatvecCommPkgCreate      (collective): the real one, then our plans for the new
//                                   package, built there because every rank is there;
//   hypre_MatvecCommPkgDestroy     the cached plans die with their package, then the real one;
//   hypre_ParCSRCommHandleCreate(_v2) / hypre_ParCSRCommHandleDestroy: jobs 1 and 2 (values
//                                   along the matvec package and its transpose), 11 and 12
//                                   (HYPRE_Int: the set-up's CF markers, dof functions and
//                                   counts along the same package), 21 and 22 (HYPRE_BigInt),
//                                   host memory, on a package whose plans we built (one pair
//                                   per unit size): started in Create from
//                                   Hypre's packed send buffer, completed in Destroy into its
//                                   receive buffer (Plan::start(owned, ghost): no copies of ours where
//                                   the backend can send and receive in place). Everything
//                                   else goes to the real functions (dlsym(RTLD_NEXT)),
//                                   unchanged: other jobs (MPI datatypes, device jobs),
//                                   device memory, packages created elsewhere (not by
//                                   hypre_MatvecCommPkgCreate: interpolation's extended
//                                   packages), a second exchange on a plan still in flight.
//
// The Pattern comes from the package alone: send side = send_procs, send_map_starts over
// Hypre's packed send buffer (so the plan's "owned" array is that buffer, in order), recv
// side = recv_procs, recv_vec_starts over Hypre's receive buffer; the ids for duplicate
// removal are global column ids (first_col_diag + send_map_elmts on the sender,
// col_map_offd on the receiver), taken from the matrix at package creation.
//
// Environment: SPARSECOMM_HYPRE_BACKEND (default auto), SPARSECOMM_HYPRE_REGIONS (default
// node), SPARSECOMM_HYPRE_OPTIONS (the backend's own options, "key=value,...", e.g. auto's
// race=30), SPARSECOMM_HYPRE_VERBOSE=1 (each package's plans; when a package goes, how many
// of its exchanges ran here and their time in start and wait on its rank 0; at exit, per
// rank, the exchanges served and passed to Hypre by kind and direction, the share served,
// and why the others were passed), SPARSECOMM_HYPRE_DISABLE=1 (everything to
// Hypre). Every setting but VERBOSE must be the same on every rank. A bad value, or a
// setting that differs between ranks, is reported on every rank at the next package's
// creation (each checks them, the hook on or off) and the program exits (status 2) on every
// rank, agreed collectively, instead of running something else or waiting forever.
//
// The package pointer is a safe key: its entry is made in the package's creation and
// dropped in its destruction, both interposed; a package freed without
// hypre_MatvecCommPkgDestroy leaves a stale entry, which its fingerprint (the arrays and
// sizes the plans were built from) declines.
#include <dlfcn.h>
#include <mpi.h>

#include <_hypre_parcsr_mv.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "sparsecomm/core/stats.hpp"
#include "sparsecomm/interop/environment.hpp"
#include "comm/plan/tune.hpp"
#include "core/handle.hpp"
#include "interop/common/pipeline.hpp"
#include "interop/hypre/package_pattern.hpp"

namespace sparsecomm::hypre_hook {
namespace {

using CreateV2Fn = hypre_ParCSRCommHandle* (*)(HYPRE_Int, hypre_ParCSRCommPkg*, HYPRE_MemoryLocation, void*,
                                                HYPRE_MemoryLocation, void*);
using CreateFn = hypre_ParCSRCommHandle* (*)(HYPRE_Int, hypre_ParCSRCommPkg*, void*, void*);
using DestroyFn = HYPRE_Int (*)(hypre_ParCSRCommHandle*);
using PkgCreateFn = HYPRE_Int (*)(hypre_ParCSRMatrix*);
using PkgDestroyFn = HYPRE_Int (*)(hypre_ParCSRCommPkg*);

template <class F>
F real(const char* name) {
  void* p = dlsym(RTLD_NEXT, name);
  if (!p) {
    // Only Hypre calls these functions, so Hypre is loaded; a libHYPRE without this symbol
    // is one the hook was not built for: nothing can be passed on.
    interop::exit_with("sparsecomm hypre hook", std::string(name) + " not found in the libHYPRE loaded after the hook");
  }
  return reinterpret_cast<F>(p);
}

struct Settings : interop::PlanSettings {
  Settings() : PlanSettings(interop::EntryPoint::hypre_hook) {}
  bool verbose = false, disabled = false;
  bool thread_multiple = false;  // MPI runs MPI_THREAD_MULTIPLE: disabled (see state())
  std::string bad;               // a switch's value that did not parse, reported at the first package
};

Settings read_settings() {
  apply_environment();  // the library's own variables, read with the hook's at each package
  Settings s;
  if (const char* v = std::getenv("SPARSECOMM_HYPRE_BACKEND"); v && *v) s.backend = v;
  if (const char* v = std::getenv("SPARSECOMM_HYPRE_REGIONS"); v && *v) s.regions = v;
  if (const char* v = std::getenv("SPARSECOMM_HYPRE_OPTIONS"); v && *v) s.options = v;
  // Switches (interop::read_flag): a bad value leaves the hook on, to report it at the first package.
  for (auto [name, out] : {std::pair<const char*, bool*>{"SPARSECOMM_HYPRE_VERBOSE", &s.verbose},
                           std::pair<const char*, bool*>{"SPARSECOMM_HYPRE_DISABLE", &s.disabled}})
    if (const char* v = std::getenv(name); v && *v) interop::read_flag(&s.bad, name, v, out);
  return s;
}

// What a package's plans were built from (its arrays and sizes): checked at every use.
using Fingerprint = std::tuple<HYPRE_Int, HYPRE_Int, HYPRE_Int, HYPRE_Int, const HYPRE_Int*, const HYPRE_Int*,
                               const HYPRE_Int*, const HYPRE_Int*>;
Fingerprint fingerprint(const hypre_ParCSRCommPkg* p) {
  return {p->num_sends, p->num_recvs, p->send_map_starts ? p->send_map_starts[p->num_sends] : 0,
          p->recv_vec_starts ? p->recv_vec_starts[p->num_recvs] : 0, p->send_procs, p->send_map_starts,
          p->recv_procs, p->recv_vec_starts};
}

// The exchanges Hypre runs along a comm package, by job: its values' kind and direction.
// Jobs 1/2: HYPRE_Complex (the matvec and its transpose); 11/12: HYPRE_Int (CF markers,
// dof functions, counts in the set-up); 21/22: HYPRE_BigInt (global column ids). Odd: along
// the package (send_map -> recv), even: the transpose.
enum Kind { kComplex = 0, kInt = 1, kBigInt = 2, kKinds = 3 };
const char* const kKindName[kKinds] = {"values", "ints", "big ints"};
constexpr size_t kUnit[kKinds] = {sizeof(HYPRE_Complex), sizeof(HYPRE_Int), sizeof(HYPRE_BigInt)};
// Kind and direction (0: along, 1: transpose) of a job; false for any other job.
bool kind_of(HYPRE_Int job, Kind* kind, int* dir) {
  switch (job) {
    case 1: case 2: *kind = kComplex; break;
    case 11: case 12: *kind = kInt; break;
    case 21: case 22: *kind = kBigInt; break;
    default: return false;
  }
  *dir = job % 2 == 1 ? 0 : 1;
  return true;
}

struct PkgPlans {
  // The values' plans {along, transpose}, on the chosen backend. Hypre runs every matvec
  // exchange on every rank of the package's communicator, so a multi-stage plan (aggregation,
  // combining, MPI's neighborhood collective), where a rank with nothing of its own to send
  // or receive may still forward others' values, is safe for them.
  std::array<std::unique_ptr<Plan>, 2> values;
  // The integer kinds' plans per unit size {along, transpose}, point-to-point: Hypre's
  // set-up runs some of its integer exchanges only on the ranks that have something to
  // exchange (a rank whose part of the package is empty skips the call), which one message
  // per neighbor allows, as Hypre's own exchange does, and a forwarding plan does not (its
  // other ranks would wait for the one that skipped).
  std::map<size_t, std::array<std::unique_ptr<Plan>, 2>> ints;
  Plan* plan(Kind k, int dir) {
    return (k == kComplex ? values : ints.at(kUnit[k]))[static_cast<size_t>(dir)].get();
  }
  long serial = 0;                 // creation order, for the verbose report
  // Verbose: per job, the exchanges run here and the seconds spent starting them (Create)
  // and completing them (Destroy: the wait, after Hypre's overlapped work), on this rank.
  bool root = false;  // rank 0 of the package's communicator: the one that reports
  long runs[2] = {0, 0};  // [direction] of the values (job 1, 2): the report's matvec figures
  double t_start[2] = {0, 0}, t_wait[2] = {0, 0};
};

// Verbose: what a package's exchanges cost on its communicator's rank 0, when the package
// goes (destroyed, replaced at its address, or still there at exit). Local: no collective
// (Hypre need not destroy a package on every rank at once).
void report_package(const PkgPlans& p) {
  if (!p.root) return;
  std::fprintf(stderr,
               "sparsecomm hypre hook: package %ld done: %ld matvec exchanges (start %.3f ms, wait %.3f ms), %ld "
               "transpose (start %.3f ms, wait %.3f ms) on rank 0\n",
               p.serial, p.runs[0], p.t_start[0] * 1e3, p.t_wait[0] * 1e3, p.runs[1], p.t_start[1] * 1e3,
               p.t_wait[1] * 1e3);
  // auto with tune=measure: what each direction's plan tried and kept (agreed figures).
  for (size_t d = 0; d < 2; ++d)
    if (const std::string t = p.values[d] ? detail::tune_summary(*p.values[d]) : ""; !t.empty())
      std::fprintf(stderr, "sparsecomm hypre hook: package %ld %s %s\n", p.serial, d ? "transpose" : "matvec",
                   t.c_str());
}

// Our handle: Hypre's struct first (code that reads a handle's fields sees sensible
// values), then what Destroy needs.
struct Handle {
  hypre_ParCSRCommHandle h;
  Plan* plan;
  void* recv;
  PkgPlans* entry;  // verbose: where Destroy adds its wait
  int job;
};

// Verbose: exchanges served and passed on, by kind and direction, and why passed.
struct Counts {
  long served[kKinds][2] = {}, passed[kKinds][2] = {};
  long other_jobs = 0;  // jobs the hook does not know (passed)
  long unknown_pkg = 0, busy = 0, memory = 0;  // why a known job was passed
};

struct State {
  std::once_flag init_once;
  Settings settings;
  bool settings_checked = false;
  CreateV2Fn create_v2 = nullptr;
  DestroyFn destroy = nullptr;
  PkgCreateFn pkg_create = nullptr;
  PkgDestroyFn pkg_destroy = nullptr;
  // Per package, until its destruction (or its address's next creation): reported as it goes.
  interop::PlanCache<const hypre_ParCSRCommPkg*, PkgPlans, Fingerprint> plans{[this](const PkgPlans& p) {
    if (settings.verbose) report_package(p);
  }};
  std::unordered_set<const hypre_ParCSRCommHandle*> ours;
  std::unordered_map<std::string, std::unique_ptr<Locality>> localities;  // per communicator size+regions
  Counts counts;
  long packages = 0;
  int world_rank = -1;  // known once MPI is up (the report runs after MPI_Finalize)
  ~State() {
    if (!settings.verbose) return;
    plans.clear();
    if (settings.thread_multiple)
      std::fprintf(stderr, "sparsecomm hypre hook [rank %d]: MPI_THREAD_MULTIPLE: every exchange passed to Hypre's own\n",
                   world_rank);
    std::string kinds;
    long served = 0, all = counts.other_jobs;
    for (int k = 0; k < kKinds; ++k)
      for (int d = 0; d < 2; ++d) {
        kinds += std::string(kinds.empty() ? "" : ", ") + kKindName[k] + (d ? " transposed " : " ") +
                 std::to_string(counts.served[k][d]) + "/" + std::to_string(counts.passed[k][d]);
        served += counts.served[k][d], all += counts.served[k][d] + counts.passed[k][d];
      }
    std::fprintf(stderr,
                 "sparsecomm hypre hook [rank %d]: %ld packages; exchanges through sparsecomm: %ld matvec, %ld "
                 "transpose; served/passed to Hypre by kind: %s, other jobs 0/%ld; served %ld of %ld (%.0f%%); "
                 "passed because: package not built here %ld, busy plan %ld, non-host memory %ld\n",
                 world_rank, packages, counts.served[kComplex][0], counts.served[kComplex][1], kinds.c_str(),
                 counts.other_jobs, served, all, all ? 100.0 * static_cast<double>(served) / static_cast<double>(all) : 0.0,
                 counts.unknown_pkg, counts.busy, counts.memory);
  }
};

State& state() {
  static State s;
  std::call_once(s.init_once, [] {
    s.settings = read_settings();
    s.create_v2 = real<CreateV2Fn>("hypre_ParCSRCommHandleCreate_v2");
    s.destroy = real<DestroyFn>("hypre_ParCSRCommHandleDestroy");
    s.pkg_create = real<PkgCreateFn>("hypre_MatvecCommPkgCreate");
    s.pkg_destroy = real<PkgDestroyFn>("hypre_MatvecCommPkgDestroy");
    // The hook's state (plans per package, the handles it made, its counters) has no
    // locks: it serves programs whose Hypre calls never overlap. Under MPI_THREAD_MULTIPLE
    // two threads may be in Hypre at once (on different matrices), so every call goes to
    // Hypre's own, as with SPARSECOMM_HYPRE_DISABLE. (Hypre calls these only after MPI_Init.)
    int up = 0, level = MPI_THREAD_SINGLE;
    MPI_Initialized(&up);
    if (up) MPI_Query_thread(&level), MPI_Comm_rank(MPI_COMM_WORLD, &s.world_rank);
    if (level == MPI_THREAD_MULTIPLE) s.settings.disabled = s.settings.thread_multiple = true;
  });
  return s;
}

const Locality& locality(State& s, MPI_Comm comm) {
  // One Locality per communicator (Hypre's matrices share the solver's communicator).
  auto& l = s.localities[detail::handle_id(comm)];
  if (!l) l = std::make_unique<Locality>(Locality::parse(comm, s.settings.regions));
  return *l;
}

constexpr interop::SettingNames kNames = {"SPARSECOMM_HYPRE_BACKEND", "SPARSECOMM_HYPRE_REGIONS", nullptr,
                                          "SPARSECOMM_HYPRE_OPTIONS"};

// Collective over comm, at every package's creation (on every rank, the hook on or off: a
// rank where it is off runs Hypre's own exchange while the others would wait in a plan; a
// communicator handle may be reused, so none is trusted from before): the settings valid
// and alike (VERBOSE may differ: it only prints; with the hook off everywhere only the
// switch), then the regions' set-up. Hypre has no error path its callers would see, and a
// configured exchange not run would be a silent choice: every rank exits instead.
void check_settings(State& s, MPI_Comm comm) {
  std::vector<NamedValue> all = interop::named(s.settings, kNames);
  all.insert(all.begin(), NamedValue{"the hook (SPARSECOMM_HYPRE_DISABLE; MPI_THREAD_MULTIPLE turns it off)",
                                     s.settings.disabled ? "off" : "on"});
  const std::vector<NamedValue> off = {{"", "off"}};
  try {
    interop::agree_checked(comm, [&] {
      if (!s.settings.bad.empty()) throw InputError(s.settings.bad);  // (VERBOSE's too, the hook off or on)
      if (!s.settings.disabled && !s.settings_checked) interop::validate(s.settings, kNames, comm_size(comm));
    }, all, kPerProcessEnvironment, s.settings.disabled ? &off : &all);
    if (s.settings.disabled) return;
    interop::agree_checked(comm, [&] { (void)locality(s, comm); });  // a node layout MPI cannot split
  } catch (const std::exception& e) {
    interop::exit_on_every_rank(comm, "sparsecomm hypre hook",
                                std::string(e.what()) + " (here SPARSECOMM_HYPRE_BACKEND='" + s.settings.backend +
                                    "', SPARSECOMM_HYPRE_REGIONS='" + s.settings.regions + "')");
  }
  s.settings_checked = true;
}

// Collective (inside hypre_MatvecCommPkgCreate). Plans for A's new package, or none if any
// rank cannot describe its package (then every rank declines it).
void build_plans(State& s, hypre_ParCSRMatrix* A) {
  const hypre_ParCSRCommPkg* pkg = hypre_ParCSRMatrixCommPkg(A);
  if (!pkg) return;
  MPI_Comm comm = pkg->comm;
  if (s.world_rank < 0) MPI_Comm_rank(MPI_COMM_WORLD, &s.world_rank);
  // An address reused without our destruction: never the old plans.
  s.plans.drop(pkg);
  Pattern pat;
  int ok = hypre_pkg::package_pattern(A, pkg, &pat) ? 1 : 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  if (!all) {
    if (s.settings.verbose && comm_rank(comm) == 0)
      std::fprintf(stderr, "sparsecomm hypre hook: package of a %lld x %lld matrix declined (not a plain matvec package)\n",
                   static_cast<long long>(hypre_ParCSRMatrixGlobalNumRows(A)),
                   static_cast<long long>(hypre_ParCSRMatrixGlobalNumCols(A)));
    return;
  }
  const Locality& loc = locality(s, comm);
  PkgPlans p;
  const double t0 = MPI_Wtime();
  PlanOptions po;
  po.backend.set_list(s.settings.options);  // (checked in check_settings)
  po.value_bytes = static_cast<int>(kUnit[kComplex]);
  auto& values = p.values;
  values[0] = make_plan(s.settings.backend, pat, loc, comm, po);
  // The transpose moves the same entries the other way: it takes the backend chosen for the
  // matvec (auto's evaluation, most of the set-up time, runs once per package), with the
  // options that backend reads.
  const std::string chosen = values[0]->name();
  PlanOptions pr;
  pr.backend = po.backend.only(backend_option_specs(chosen));
  pr.value_bytes = po.value_bytes;
  values[1] = make_plan(chosen, pat.reverse(), loc, comm, pr);
  for (const Kind k : {kInt, kBigInt}) {
    auto& pair = p.ints[kUnit[k]];
    if (pair[0]) continue;
    PlanOptions pi;
    pi.value_bytes = static_cast<int>(kUnit[k]);
    pair[0] = make_plan("p2p", pat, loc, comm, pi);
    pair[1] = make_plan("p2p", pat.reverse(), loc, comm, pi);
  }
  p.serial = ++s.packages;
  p.root = comm_rank(comm) == 0;
  // The report's figures are reduced on every rank, verbose or not: verbosity may differ
  // between ranks (it only prints), so no collective may depend on it (one allreduce beside
  // the plans' set-up).
  const double dt = MPI_Wtime() - t0;
  const CommCounters& t = values[0]->iteration_counts().total();
  const std::vector<Reduced> red =
      reduce_all(comm, {static_cast<double>(t.sent_inter.msgs), static_cast<double>(t.sent_intra.msgs), dt});
  if (s.settings.verbose) {
    if (comm_rank(comm) == 0)
      std::fprintf(stderr,
                   "sparsecomm hypre hook: package %ld (%lld x %lld matrix, at %p): %s / transpose %s; per matvec, "
                   "max over ranks: %.0f inter-region + %.0f intra-region messages; plans built in %.2f ms\n",
                   p.serial, static_cast<long long>(hypre_ParCSRMatrixGlobalNumRows(A)),
                   static_cast<long long>(hypre_ParCSRMatrixGlobalNumCols(A)), static_cast<const void*>(pkg),
                   values[0]->name().c_str(), values[1]->name().c_str(), red[0].max, red[1].max, red[2].max * 1e3);
  }
  s.plans.put(pkg, std::move(p), fingerprint(pkg));
}

// The plan for (job, pkg) when this exchange can run through it (*entry: its package's
// plans); null to decline (counted by kind and reason).
Plan* plan_for(State& s, HYPRE_Int job, const hypre_ParCSRCommPkg* pkg, HYPRE_MemoryLocation sm,
               HYPRE_MemoryLocation rm, PkgPlans** entry) {
  Kind kind = kComplex;
  int dir = 0;
  if (!kind_of(job, &kind, &dir)) return ++s.counts.other_jobs, nullptr;
  long& passed = s.counts.passed[kind][dir];
  if (sm != HYPRE_MEMORY_HOST || rm != HYPRE_MEMORY_HOST) return ++passed, ++s.counts.memory, nullptr;  // device, pinned
  const Fingerprint fp = fingerprint(pkg);
  PkgPlans* e = s.plans.find(pkg, &fp);
  if (!e) return ++passed, ++s.counts.unknown_pkg, nullptr;
  Plan* p = e->plan(kind, dir);
  if (p->active()) return ++passed, ++s.counts.busy, nullptr;  // a second exchange in flight on this plan
  *entry = e;
  return p;
}

hypre_ParCSRCommHandle* create(HYPRE_Int job, hypre_ParCSRCommPkg* pkg, HYPRE_MemoryLocation sm, void* send,
                               HYPRE_MemoryLocation rm, void* recv) {
  State& s = state();
  PkgPlans* entry = nullptr;
  Plan* p = s.settings.disabled ? nullptr : plan_for(s, job, pkg, sm, rm, &entry);
  if (!p) return s.create_v2(job, pkg, sm, send, rm, recv);
  auto* h = new Handle{};
  h->h.comm_pkg = pkg;
  h->h.send_memory_location = sm;
  h->h.recv_memory_location = rm;
  h->h.send_data = h->h.send_data_buffer = send;
  h->h.recv_data = h->h.recv_data_buffer = recv;
  h->plan = p;
  h->recv = recv;
  h->entry = entry, h->job = job;
  Kind kind = kComplex;
  int dir = 0;
  kind_of(job, &kind, &dir);
  const double t0 = s.settings.verbose ? MPI_Wtime() : 0;
  try {
    p->start(send, recv);  // as bytes: plan_for chose the plan of this job's unit size
  } catch (const std::exception& e) {
    interop::exit_with("sparsecomm hypre hook", e.what());  // an exchange half started cannot be handed to Hypre
  }
  ++s.counts.served[kind][dir];
  if (s.settings.verbose && kind == kComplex) entry->t_start[dir] += MPI_Wtime() - t0, ++entry->runs[dir];
  s.ours.insert(&h->h);
  return &h->h;
}

}  // namespace
}  // namespace sparsecomm::hypre_hook

using namespace sparsecomm::hypre_hook;

extern "C" {

__attribute__((visibility("default"))) hypre_ParCSRCommHandle* hypre_ParCSRCommHandleCreate_v2(
    HYPRE_Int job, hypre_ParCSRCommPkg* comm_pkg, HYPRE_MemoryLocation send_memory_location, void* send_data_in,
    HYPRE_MemoryLocation recv_memory_location, void* recv_data_in) {
  return create(job, comm_pkg, send_memory_location, send_data_in, recv_memory_location, recv_data_in);
}

__attribute__((visibility("default"))) hypre_ParCSRCommHandle* hypre_ParCSRCommHandleCreate(
    HYPRE_Int job, hypre_ParCSRCommPkg* comm_pkg, void* send_data, void* recv_data) {
  return create(job, comm_pkg, HYPRE_MEMORY_HOST, send_data, HYPRE_MEMORY_HOST, recv_data);
}

__attribute__((visibility("default"))) HYPRE_Int hypre_ParCSRCommHandleDestroy(hypre_ParCSRCommHandle* handle) {
  State& s = state();
  if (!handle || !s.ours.count(handle)) return s.destroy(handle);
  s.ours.erase(handle);
  auto* h = reinterpret_cast<Handle*>(handle);
  const double t0 = s.settings.verbose ? MPI_Wtime() : 0;
  try {
    h->plan->wait(h->recv);
  } catch (const std::exception& e) {
    sparsecomm::interop::exit_with("sparsecomm hypre hook", e.what());
  }
  // Hypre completes an exchange before it frees its package; should a program not, the
  // package's entry is gone and the time is dropped, never written to freed memory.
  if (s.settings.verbose && s.plans.find(h->h.comm_pkg) == h->entry && (h->job == 1 || h->job == 2))
    h->entry->t_wait[h->job - 1] += MPI_Wtime() - t0;
  delete h;
  return 0;
}

__attribute__((visibility("default"))) HYPRE_Int hypre_MatvecCommPkgCreate(hypre_ParCSRMatrix* A) {
  State& s = state();
  const HYPRE_Int rc = s.pkg_create(A);
  if (const hypre_ParCSRCommPkg* pkg = hypre_ParCSRMatrixCommPkg(A)) {
    if (s.world_rank < 0) MPI_Comm_rank(MPI_COMM_WORLD, &s.world_rank);
    try {
      check_settings(s, pkg->comm);  // (on every rank, the hook on or off: see there)
      if (!s.settings.disabled) build_plans(s, A);
    } catch (const std::exception& e) {
      // The plans' set-up agrees its errors (every rank throws the same), or MPI failed
      // under MPI_ERRORS_RETURN: nothing may escape into Hypre, and a package without the
      // plans the user configured is not run silently on Hypre's own.
      sparsecomm::interop::exit_on_every_rank(MPI_COMM_WORLD, "sparsecomm hypre hook", e.what(), false);
    }
  }
  return rc;
}

__attribute__((visibility("default"))) HYPRE_Int hypre_MatvecCommPkgDestroy(hypre_ParCSRCommPkg* comm_pkg) {
  State& s = state();
  s.plans.drop(comm_pkg);  // (reported; a plan in flight completes in its destructor)
  return s.pkg_destroy(comm_pkg);
}

}  // extern "C"
