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
// Why the package pointer is a safe key: a cached entry is created in the package's
// creation and erased in its destruction, both interposed, so an address reused by a new
// package either went through our creation (fresh plans) or is not in the cache (declined).
// A package Hypre frees without hypre_MatvecCommPkgDestroy would leave a stale entry: each
// use also checks the package's arrays and sizes against the ones the plans were built
// from, and declines on a mismatch.
#include <dlfcn.h>
#include <mpi.h>

#include <_hypre_parcsr_mv.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
#include "core/handle.hpp"
#include "core/parse.hpp"
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
    std::fprintf(stderr, "sparsecomm hypre hook: error: %s not found in the libHYPRE loaded after the hook\n", name);
    std::exit(2);
  }
  return reinterpret_cast<F>(p);
}

struct Settings {
  std::string backend = kInterposedDefaultBackend, regions = "node", options;
  bool verbose = false, disabled = false;
  bool thread_multiple = false;  // MPI runs MPI_THREAD_MULTIPLE: disabled (see state())
  std::string bad;               // a switch's value that did not parse, reported at the first package
};

Settings read_settings() {
  Settings s;
  if (const char* v = std::getenv("SPARSECOMM_HYPRE_BACKEND"); v && *v) s.backend = v;
  if (const char* v = std::getenv("SPARSECOMM_HYPRE_REGIONS"); v && *v) s.regions = v;
  if (const char* v = std::getenv("SPARSECOMM_HYPRE_OPTIONS"); v && *v) s.options = v;
  // Switches: true/false, 1/0, yes/no, on/off. Anything else is an error at the first package
  // (a value that does not say "disable" leaves the hook on, to report it).
  for (auto [name, out] : {std::pair<const char*, bool*>{"SPARSECOMM_HYPRE_VERBOSE", &s.verbose},
                           std::pair<const char*, bool*>{"SPARSECOMM_HYPRE_DISABLE", &s.disabled}})
    if (const char* v = std::getenv(name); v && *v && !parse_bool(v, *out) && s.bad.empty())
      s.bad = std::string(name) + "='" + v + "' is not a boolean (true/false, 1/0, yes/no, on/off)";
  return s;
}

// What a package's plans were built from: checked at every use.
struct Fingerprint {
  HYPRE_Int num_sends = 0, num_recvs = 0, nsend = 0, nrecv = 0;
  const HYPRE_Int *send_procs = nullptr, *send_map_starts = nullptr, *recv_procs = nullptr, *recv_vec_starts = nullptr;
  static Fingerprint of(const hypre_ParCSRCommPkg* p) {
    Fingerprint f;
    f.num_sends = p->num_sends, f.num_recvs = p->num_recvs;
    f.send_procs = p->send_procs, f.send_map_starts = p->send_map_starts;
    f.recv_procs = p->recv_procs, f.recv_vec_starts = p->recv_vec_starts;
    f.nsend = p->send_map_starts ? p->send_map_starts[p->num_sends] : 0;
    f.nrecv = p->recv_vec_starts ? p->recv_vec_starts[p->num_recvs] : 0;
    return f;
  }
  bool operator==(const Fingerprint& o) const {
    return num_sends == o.num_sends && num_recvs == o.num_recvs && nsend == o.nsend && nrecv == o.nrecv &&
           send_procs == o.send_procs && send_map_starts == o.send_map_starts && recv_procs == o.recv_procs &&
           recv_vec_starts == o.recv_vec_starts;
  }
};

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
  Fingerprint fp;
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
  std::unordered_map<const hypre_ParCSRCommPkg*, PkgPlans> plans;
  std::unordered_set<const hypre_ParCSRCommHandle*> ours;
  std::unordered_map<std::string, std::unique_ptr<Locality>> localities;  // per communicator size+regions
  Counts counts;
  long packages = 0;
  int world_rank = -1;  // known once MPI is up (the report runs after MPI_Finalize)
  ~State() {
    if (!settings.verbose) return;
    for (const auto& [pkg, p] : plans) report_package(p);
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

// The settings that must be alike on every rank of a package's communicator, as (name,
// value): the plans are collective, and a rank where the hook is off runs Hypre's own
// exchange while the others wait in a plan. Where the hook is off on every rank nothing else
// matters (check_settings compares the switch alone there). SPARSECOMM_HYPRE_VERBOSE may
// differ: it only prints.
std::vector<NamedValue> shared_settings(const Settings& s) {
  return {{"the hook (SPARSECOMM_HYPRE_DISABLE; MPI_THREAD_MULTIPLE turns it off)", s.disabled ? "off" : "on"},
          {"SPARSECOMM_HYPRE_BACKEND", s.backend},
          {"SPARSECOMM_HYPRE_REGIONS", s.regions},
          {"SPARSECOMM_HYPRE_OPTIONS", s.options}};
}

// Collective over comm (inside hypre_MatvecCommPkgCreate, on every rank, the hook on or off):
// every rank's settings valid and alike. Checked at every package's creation (one allreduce
// beside Hypre's own set-up collectives; a communicator handle may be reused, so none is
// trusted from before). Local checks first, then one agreement of their outcome and the
// settings (core agree_settings), then the regions' collective set-up, itself agreed: on a
// bad value or a difference every rank prints the reason, and
// every rank exits (status 2) once all have said it, so none waits for another. (Hypre has
// no error path from here its callers would see; an exchange the user configured and
// did not get would be a silent choice.)
void check_settings(State& s, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const auto fail = [&](const std::string& error) {
    std::fprintf(stderr, "sparsecomm hypre hook [rank %d]: error: %s (here SPARSECOMM_HYPRE_BACKEND='%s', "
                 "SPARSECOMM_HYPRE_REGIONS='%s')\n", rank, error.c_str(), s.settings.backend.c_str(),
                 s.settings.regions.c_str());
    std::fflush(stderr);
    MPI_Barrier(comm);  // every rank has said it before any exits (mpirun then stops the rest)
    std::exit(2);
  };
  // Every rank's error: the first failing rank's reason, on every rank (core agree()).
  const auto agreed = [&](const std::string& error) {
    try {
      agree(comm, error);
    } catch (const std::exception& e) {
      fail(e.what());
    }
  };
  std::string error;
  if (!s.settings.disabled && !s.settings_checked) {
    try {
      if (!s.settings.bad.empty()) throw InputError(s.settings.bad);
      backend_hooks(s.settings.backend);  // InputError listing the valid names
      BackendOptions opts;
      opts.set_list(s.settings.options);
      if (std::string e = validate_backend_options(s.settings.backend, backend_option_specs(s.settings.backend), opts);
          !e.empty())
        throw InputError("SPARSECOMM_HYPRE_OPTIONS: " + e);
      if (std::string e = region_spec_error(s.settings.regions, size); !e.empty())
        throw InputError("SPARSECOMM_HYPRE_REGIONS: " + e);
    } catch (const std::exception& e) {
      error = e.what();
    }
  } else if (s.settings.disabled && !s.settings.bad.empty()) {
    error = s.settings.bad;  // (SPARSECOMM_HYPRE_VERBOSE's: reported, the hook off or not)
  }
  try {
    const std::vector<NamedValue> all = shared_settings(s.settings), off = {{"", "off"}};
    agree_settings(comm, error, all, kPerProcessEnvironment, s.settings.disabled ? &off : &all);
  } catch (const std::exception& e) {
    fail(e.what());
  }
  if (s.settings.disabled) return;
  // The regions' set-up (collective, alike on every rank now that the spec is): its errors
  // (a node layout MPI cannot split) agreed too.
  error.clear();
  try {
    (void)locality(s, comm);
  } catch (const std::exception& e) {
    error = e.what();
  }
  agreed(error);
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
  if (auto old = s.plans.find(pkg); old != s.plans.end()) {
    if (s.settings.verbose) report_package(old->second);
    s.plans.erase(old);
  }
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
  p.fp = Fingerprint::of(pkg);
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
  s.plans[pkg] = std::move(p);
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
  auto it = s.plans.find(pkg);
  if (it == s.plans.end() || !(it->second.fp == Fingerprint::of(pkg))) return ++passed, ++s.counts.unknown_pkg, nullptr;
  Plan* p = it->second.plan(kind, dir);
  if (p->active()) return ++passed, ++s.counts.busy, nullptr;  // a second exchange in flight on this plan
  *entry = &it->second;
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
    std::fprintf(stderr, "sparsecomm hypre hook: error: %s\n", e.what());
    std::fflush(stderr);
    std::exit(2);  // an exchange half started cannot be handed to Hypre
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
    std::fprintf(stderr, "sparsecomm hypre hook: error: %s\n", e.what());
    std::fflush(stderr);
    std::exit(2);
  }
  // Hypre completes an exchange before it frees its package; should a program not, the
  // package's entry is gone and the time is dropped, never written to freed memory.
  if (s.settings.verbose)
    if (auto it = s.plans.find(h->h.comm_pkg); it != s.plans.end() && &it->second == h->entry)
      if (h->job == 1 || h->job == 2) h->entry->t_wait[h->job - 1] += MPI_Wtime() - t0;
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
      std::fprintf(stderr, "sparsecomm hypre hook [rank %d]: error: %s\n", s.world_rank, e.what());
      std::fflush(stderr);
      std::exit(2);
    }
  }
  return rc;
}

__attribute__((visibility("default"))) HYPRE_Int hypre_MatvecCommPkgDestroy(hypre_ParCSRCommPkg* comm_pkg) {
  State& s = state();
  if (!s.settings.disabled) {
    if (auto it = s.plans.find(comm_pkg); it != s.plans.end()) {
      if (s.settings.verbose) report_package(it->second);
      s.plans.erase(it);  // a plan in flight completes in its destructor
    }
  }
  return s.pkg_destroy(comm_pkg);
}

}  // extern "C"
