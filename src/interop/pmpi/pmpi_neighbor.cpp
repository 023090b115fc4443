// libsparsecomm_mpi.so: MPI's neighborhood collectives through sparsecomm's plans, for an
// unmodified MPI program, through the MPI profiling interface:
//
//   LD_PRELOAD=/path/libsparsecomm_mpi.so mpirun -np 32 ./app
//
// Handled (everything else is MPI's own: passed to PMPI_* unchanged, or not defined here),
// each blocking, non-blocking (MPI_Ineighbor_*) and persistent (Open MPI 4.1's
// MPIX_Neighbor_*_init, MPI-4's MPI_Neighbor_*_init):
//   allgather, allgatherv: gather plans (combining over common neighborhoods, or direct;
//     allgatherv's plan learns its sources' sizes), or halo plans whose entries carry
//     their sender's id (allgather_pattern, allgatherv_pattern), so the locality-aware
//     aggregations send a block across a node pair once;
//   alltoall, alltoallv: a halo plan with an entry per block (per element of the type for
//     alltoallv);
//   behind a request only with a backend that can be polled (Plan::test), MPI's own
//   otherwise;
// on distributed-graph, Cartesian and graph communicators, with contiguous send and
// receive types (named, or contiguous/dup over one; allgather and alltoall: one block size
// on every rank; alltoallv: send and receive types of one size).
// Neighbor lists are MPI's: duplicate edges (allgather: one message per pair, copied into
// every slot), self edges (a local copy), MPI_PROC_NULL neighbors of non-periodic
// Cartesian dimensions (slot left untouched). The alltoall pairs blocks by rank, so a list
// where a rank appears twice is passed on (MPI's pairing by order is its business).
// Passed on: MPI_IN_PLACE, non-contiguous types, intercommunicators, communicators without
// topology, allgather/alltoall block sizes that differ between ranks; alltoallw is not
// defined here (MPI's own). The plans' own MPI calls (the neighbor backends call
// MPI_Ineighbor_*) go straight to MPI (depth()).
//
// Which path a call takes must be the same on every rank (a plan is collective):
//  - under auto on one node without the fixed-counts hint, the first blocking call on a
//    communicator agrees once and sets up the one-node exchange (node_exchange.hpp), which
//    carries every later call's sizes (blocking or not) in its shared window: no agreement
//    per call, any counts and datatypes (SPARSECOMM_MPI_NODE_EXCHANGE=0: off). Otherwise:
//  - blocking calls agree first: one PMPI_Allreduce of four integers (can this rank run it,
//    its block size as min and max, a bad setting); allgatherv/alltoallv of three (can it,
//    has its signature - a hash of counts and displacements - changed, a bad setting), and
//    a change anywhere rebuilds the plan everywhere. Under auto, where the agreements keep
//    finding nothing for the library to do (MPI's own, or nothing to move), only every
//    8th to 1024th call agrees and the others are MPI's own at once (steps_aside()); and auto
//    charges the agreement to the plans it weighs (agreement_cost; on one node by timing its
//    shm plan against MPI's own at a signature's first call, trial_keeps()). With the hint that counts are fixed
//    (MPI_Info key "sparsecomm_fixed_counts" = "true" given when the topology communicator
//    is created, or SPARSECOMM_MPI_FIXED_COUNTS=1), only the first call per communicator
//    and function agrees; later calls check their local signature against the agreed one
//    and need no communication. A call that breaks the promise is an error raised through
//    the communicator's error handler (an erroneous program, as a type-signature mismatch
//    is in MPI).
//  - non-blocking calls are local in MPI, so they never agree: they run the agreed plan of
//    a hinted communicator, or the one-node exchange once a blocking call has set it up,
//    and are MPI's own otherwise.
//  - persistent initialisation is collective and non-local in MPI-4 (section 6.13), so it
//    agrees and builds a plan for that request alone; starts then cost nothing extra.
//
// Choice: SPARSECOMM_MPI_BACKEND = auto (default) | mpi | a gather backend (combined,
// p2p, neighbor, shm) | a halo-only backend (aggregated, aggregated_dedup,
// aggregated_2step: every function through it as a halo plan). auto takes
// the shm backends (shared-memory window) when every rank of the communicator is on one
// node; across nodes the halo auto predicts every halo backend from counts (for an
// allgather(v) on its halo pattern, beside the combining gather plan) and the choice is
// kept only where the performance model (comm/plan/model.hpp) predicts it 1.3x faster
// than the direct exchange MPI itself does; otherwise it steps aside (MPI's own). The model's parameters are the ones every auto
// uses (ModelParams::resolve: $SPARSECOMM_MODEL, a file or builtin, else this machine's,
// measured in the first three launches per machine and layout and cached). mpi: always MPI's own. Combining parameters: SPARSECOMM_MPI_K, _AWARE (0/1);
// regions: SPARSECOMM_MPI_REGIONS (default node); the same as MPI_Info keys
// sparsecomm_backend / sparsecomm_k / sparsecomm_aware / sparsecomm_regions at communicator
// creation. SPARSECOMM_MPI_VERBOSE=1: per communicator what was chosen, and at exit per rank
// the calls handled and passed on. SPARSECOMM_MPI_DISABLE=1. SPARSECOMM_MPI_NODE_AREA: the
// one-node exchange's shared bytes per writer (node_exchange.hpp). Every setting but VERBOSE
// and NODE_AREA must be the same on every rank of a communicator (each agreement compares a
// hash of them; a rank where the layer is disabled still takes part in a communicator's
// first agreement). A bad value, or a difference: every rank prints the error and exits
// (status 2) at the first call that agrees.
//
// Lifetime: the plans hang on the communicator as an attribute whose delete callback frees
// them at MPI_Comm_free (a request still using one keeps it alive), so a reused handle
// never finds an old plan.
#include <mpi.h>
#ifdef SPARSECOMM_HAVE_MPI_EXT_H
#include <mpi-ext.h>  // Open MPI's MPIX_Neighbor_*_init (the pcollreq extension)
#endif

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "interop/mpi_datatype.hpp"
#include "interop/pmpi/comm_info.hpp"
#include "interop/pmpi/node_exchange.hpp"
#include "interop/pmpi/requests.hpp"
#include "sparsecomm/comm/combining.hpp"
#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/plan/combining_options.hpp"
#include "sparsecomm/comm/plan/model.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "core/handle.hpp"
#include "core/parse.hpp"

namespace sparsecomm::pmpi {
namespace {

enum Kind { kAllgather = 0, kAlltoall = 1, kAllgatherv = 2, kAlltoallv = 3 };
const char* const kCallName[4] = {"MPI_Neighbor_allgather", "MPI_Neighbor_alltoall", "MPI_Neighbor_allgatherv",
                                  "MPI_Neighbor_alltoallv"};
enum Mode { kBlocking, kNonblocking, kPersistent };
// The persistent forms are counted under the spelling this MPI has: MPI-4's
// MPI_Neighbor_*_init, else Open MPI 4.1's MPIX_ (an MPI with both counts both under MPI-4's).
// Both are found by CMake compiling against the MPI (cmake/SparsecommMpi.cmake).
#if defined(SPARSECOMM_HAVE_MPI4_NEIGHBOR_INIT) || !defined(SPARSECOMM_HAVE_MPIX_NEIGHBOR_INIT)
#define SPC_PERSISTENT(name) "MPI_Neighbor_" name "_init"
#else
#define SPC_PERSISTENT(name) "MPIX_Neighbor_" name "_init"
#endif
// The entry points, in the order of Global's counters.
const char* const kEntryName[12] = {
    "MPI_Neighbor_allgather",      "MPI_Neighbor_alltoall",        "MPI_Ineighbor_allgather",
    SPC_PERSISTENT("allgather"),   "MPI_Neighbor_allgatherv",      "MPI_Neighbor_alltoallv",
    "MPI_Ineighbor_allgatherv",    SPC_PERSISTENT("allgatherv"),   "MPI_Ineighbor_alltoall",
    SPC_PERSISTENT("alltoall"),    "MPI_Ineighbor_alltoallv",      SPC_PERSISTENT("alltoallv")};
#undef SPC_PERSISTENT
constexpr int kSelf = -1, kNull = -2;  // slots of a neighbor list that are not another rank

// SPARSECOMM_MPI_NODE_AREA: default and bound. The bound keeps every offset into a writer's
// buffer an int (MPI_Pack's) and two buffers per rank and communicator within a node's
// shared memory; larger blocks go by message anyway.
constexpr int64_t kNodeAreaDefault = 128 * 1024, kNodeAreaMax = int64_t{1} << 30;

// Settings from the environment; MPI_Info keys on a communicator override them there.
struct Settings {
  std::string backend = kInterposedDefaultBackend, regions = "node";
  int k = 0;       // combining group size; 0: the backend's default
  int aware = -1;  // topology-aware combining; -1: the backend's default
  bool fixed = false;
  bool node_exchange = true;  // auto's one-node exchange for calls without the hint (NodeExchange)
  int64_t node_area = kNodeAreaDefault;  // its shared bytes per writer and call (may differ by rank)
  std::string bad;            // the first value that did not parse (environment or MPI_Info), or ""
};

// Parsers of one setting: a value that does not parse is kept in `s->bad` (the first one),
// reported on every rank at the communicator's first call (check_settings), never guessed.
void set_flag(Settings* s, const std::string& name, const std::string& v, bool* out) {
  if (!parse_bool(v, *out) && s->bad.empty())
    s->bad = name + "='" + v + "' is not a boolean (true/false, 1/0, yes/no, on/off)";
}
void set_int(Settings* s, const std::string& name, const std::string& v, int* out) {
  int64_t x = 0;
  if (parse_int(v, x) && x >= INT32_MIN && x <= INT32_MAX) *out = static_cast<int>(x);
  else if (s->bad.empty()) s->bad = name + "='" + v + "' is not an integer";
}
void set_bytes(Settings* s, const std::string& name, const std::string& v, int64_t lo, int64_t hi, int64_t* out) {
  int64_t x = 0;
  if (parse_int(v, x) && x >= lo && x <= hi) *out = x;
  else if (s->bad.empty())
    s->bad = name + "='" + v + "' is not a number of bytes from " + std::to_string(lo) + " to " + std::to_string(hi);
}

// The settings that must be alike on every rank of a communicator, as (name, value): a
// plan is collective, and whether a call agrees, skips its agreement or takes the one-node
// exchange follows from them. SPARSECOMM_MPI_VERBOSE and SPARSECOMM_MPI_NODE_AREA may
// differ (one prints, the other sizes a rank's own shared buffer).
std::vector<NamedValue> shared_settings(const Settings& s, bool disabled) {
  return {{"SPARSECOMM_MPI_DISABLE", disabled ? "1" : "0"},
          {"the backend (SPARSECOMM_MPI_BACKEND, sparsecomm_backend)", s.backend},
          {"the regions (SPARSECOMM_MPI_REGIONS, sparsecomm_regions)", s.regions},
          {"k (SPARSECOMM_MPI_K, sparsecomm_k)", std::to_string(s.k)},
          {"aware (SPARSECOMM_MPI_AWARE, sparsecomm_aware)", s.aware < 0 ? "default" : std::to_string(s.aware)},
          {"fixed counts (SPARSECOMM_MPI_FIXED_COUNTS, sparsecomm_fixed_counts)", s.fixed ? "1" : "0"},
          {"SPARSECOMM_MPI_NODE_EXCHANGE", s.node_exchange ? "1" : "0"}};
}

struct CommPlans;  // (below: a communicator's plans and agreements)

struct Global {
  Settings env;
  bool verbose = false, disabled = false;
  int keyval = MPI_KEYVAL_INVALID;
  // The communicator of the last call and its entry (the attribute's own value, not a
  // reference of ours): most programs call on one communicator in a row, and an entry
  // point asks for it up to three times per call. Forgotten in delete_plans, before MPI
  // can hand the handle out again.
  MPI_Comm last_comm = MPI_COMM_NULL;
  std::shared_ptr<CommPlans>* last_plans = nullptr;
  int world_rank = -1;
  // Calls through sparsecomm / passed to MPI, per entry point (kEntryName).
  long handled[12] = {}, passed[12] = {};
  long agreements[4] = {};  // agreements (blocking calls, persistent inits), per Kind
  std::atomic<long> threaded{0};  // calls passed on because MPI runs MPI_THREAD_MULTIPLE
  // Per blocking allgather and alltoall, the communicator whose calls last settled on MPI's
  // own (note_settled()): the same communicator (and arguments) again go to MPI's own at
  // once (passes_at_once()). Forgotten in delete_plans with the communicator's entry.
  struct Settled {
    MPI_Comm comm = MPI_COMM_NULL;
    const void* plans = nullptr;  // the communicator's attribute value
    CommPlans* owner = nullptr;   // set: stepping aside without the hint, any arguments
    bool in_place = false;
    int sc = 0, rc = 0;
    MPI_Datatype st = MPI_DATATYPE_NULL, rt = MPI_DATATYPE_NULL;
  } settled[2];
  Global() {
    const auto get = [](const char* n) -> const char* {
      const char* v = std::getenv(n);
      return v && *v ? v : nullptr;
    };
    if (const char* v = get("SPARSECOMM_MPI_BACKEND")) env.backend = v;
    if (const char* v = get("SPARSECOMM_MPI_REGIONS")) env.regions = v;
    if (const char* v = get("SPARSECOMM_MPI_K")) set_int(&env, "SPARSECOMM_MPI_K", v, &env.k);
    bool b = false;
    if (const char* v = get("SPARSECOMM_MPI_AWARE")) set_flag(&env, "SPARSECOMM_MPI_AWARE", v, &b), env.aware = b;
    if (const char* v = get("SPARSECOMM_MPI_FIXED_COUNTS")) set_flag(&env, "SPARSECOMM_MPI_FIXED_COUNTS", v, &env.fixed);
    if (const char* v = get("SPARSECOMM_MPI_NODE_EXCHANGE"))
      set_flag(&env, "SPARSECOMM_MPI_NODE_EXCHANGE", v, &env.node_exchange);
    if (const char* v = get("SPARSECOMM_MPI_NODE_AREA"))
      set_bytes(&env, "SPARSECOMM_MPI_NODE_AREA", v, 1, kNodeAreaMax, &env.node_area);
    if (const char* v = get("SPARSECOMM_MPI_VERBOSE")) set_flag(&env, "SPARSECOMM_MPI_VERBOSE", v, &verbose);
    // A value that does not say "disable" leaves the layer on, to report it at the first call.
    if (const char* v = get("SPARSECOMM_MPI_DISABLE")) set_flag(&env, "SPARSECOMM_MPI_DISABLE", v, &disabled);
  }
  ~Global() {
    if (!verbose || world_rank < 0) return;
    std::string line;
    for (int i = 0; i < 12; ++i)
      line += std::string(i ? ", " : "") + kEntryName[i] + " " + std::to_string(handled[i]) + "/" +
              std::to_string(passed[i]);
    line += "; agreements:";
    for (int k = 0; k < 4; ++k) line += std::string(k ? ", " : " ") + kCallName[k] + " " + std::to_string(agreements[k]);
    std::fprintf(stderr, "sparsecomm mpi [rank %d]: through sparsecomm / passed to MPI: %s\n", world_rank,
                 line.c_str());
    if (threaded.load() > 0)
      std::fprintf(stderr, "sparsecomm mpi [rank %d]: MPI_THREAD_MULTIPLE: %ld calls passed to MPI's own\n", world_rank,
                   threaded.load());
  }
};

Global& global() {
  static Global g;
  return g;
}

// A communicator's neighbors as MPI orders them, and as the plans see them.
struct Neighbors {
  std::vector<int> sources, destinations;  // MPI's order; MPI_PROC_NULL on Cartesian borders
  std::vector<int> uniq_src, uniq_dst;     // other ranks, sorted, once each: the plans' topology
  std::vector<int> src_slot;               // MPI's source i: its index in uniq_src, kSelf or kNull
  bool src_identity = true;                // sources == uniq_src: receive in place
  bool pairs_unique = true;                // no rank twice in either list (alltoall pairs by rank)
  int self_src = -1, self_dst = -1;        // the first self edge in each list (alltoall's copy)
};

// Counts and displacements of an alltoall(v) side: an alltoallv's arrays, or (null) an
// alltoall's one unit per edge, edge i at unit i.
struct Layout {
  const int* counts = nullptr;
  const int* displs = nullptr;
  int count(size_t i) const { return counts ? counts[i] : 1; }
  int displ(size_t i) const { return displs ? displs[i] : static_cast<int>(i); }
};

void normalize(Neighbors& nb, int me) {
  const auto uniq = [me](const std::vector<int>& v) {
    std::vector<int> u;
    for (int r : v)
      if (r != me && r != MPI_PROC_NULL) u.push_back(r);
    std::sort(u.begin(), u.end());
    u.erase(std::unique(u.begin(), u.end()), u.end());
    return u;
  };
  const auto distinct = [](std::vector<int> v) {
    v.erase(std::remove(v.begin(), v.end(), MPI_PROC_NULL), v.end());
    std::sort(v.begin(), v.end());
    return std::adjacent_find(v.begin(), v.end()) == v.end();
  };
  nb.uniq_src = uniq(nb.sources);
  nb.uniq_dst = uniq(nb.destinations);
  for (int r : nb.sources)
    nb.src_slot.push_back(r == MPI_PROC_NULL ? kNull
                          : r == me          ? kSelf
                                             : static_cast<int>(std::lower_bound(nb.uniq_src.begin(), nb.uniq_src.end(), r) -
                                                                nb.uniq_src.begin()));
  nb.src_identity = nb.sources == nb.uniq_src;
  nb.pairs_unique = distinct(nb.sources) && distinct(nb.destinations);
  const auto first_self = [me](const std::vector<int>& v) {
    auto it = std::find(v.begin(), v.end(), me);
    return it == v.end() ? -1 : static_cast<int>(it - v.begin());
  };
  nb.self_src = first_self(nb.sources);
  nb.self_dst = first_self(nb.destinations);
}

// MPI's neighbor lists of a topology communicator (MPI-3.1 section 7.6): a distributed
// graph's in and out lists; a graph's neighbors both ways; a Cartesian grid's, for each
// dimension, the rank at -1 then the rank at +1 (MPI_PROC_NULL past a non-periodic border).
bool read_neighbors(MPI_Comm comm, int topo, Neighbors* nb) {
  int me = 0;
  PMPI_Comm_rank(comm, &me);
  if (topo == MPI_DIST_GRAPH) {
    int in = 0, out = 0, weighted = 0;
    PMPI_Dist_graph_neighbors_count(comm, &in, &out, &weighted);
    nb->sources.resize(static_cast<size_t>(in));
    nb->destinations.resize(static_cast<size_t>(out));
    std::vector<int> sw(static_cast<size_t>(in) + 1), dw(static_cast<size_t>(out) + 1);
    PMPI_Dist_graph_neighbors(comm, in, nb->sources.data(), sw.data(), out, nb->destinations.data(), dw.data());
  } else if (topo == MPI_GRAPH) {
    int n = 0;
    PMPI_Graph_neighbors_count(comm, me, &n);
    nb->sources.resize(static_cast<size_t>(n));
    PMPI_Graph_neighbors(comm, me, n, nb->sources.data());
    nb->destinations = nb->sources;
  } else if (topo == MPI_CART) {
    int nd = 0;
    PMPI_Cartdim_get(comm, &nd);
    for (int d = 0; d < nd; ++d) {
      int lo = MPI_PROC_NULL, hi = MPI_PROC_NULL;
      PMPI_Cart_shift(comm, d, 1, &lo, &hi);
      nb->sources.push_back(lo);
      nb->sources.push_back(hi);
    }
    nb->destinations = nb->sources;
  } else {
    return false;
  }
  normalize(*nb, me);
  return true;
}


// What every rank agreed for one function and block size: a plan, or nothing to move
// (empty blocks). No Choice at all means MPI's own.
struct Choice {
  std::unique_ptr<GatherPlan> gather;
  std::unique_ptr<Plan> halo;
  std::vector<int64_t> halo_off, halo_bytes;  // allgatherv as a halo plan: per uniq source, in staging
  std::vector<char> staging;         // the plan's source order, when MPI's differs
  Operation* inflight = nullptr;    // the non-blocking operation running on the plan
  bool nothing = false;             // agreed empty blocks
  // auto's shm plan on one node for blocking calls without the hint: measured against MPI's
  // own on the first call's own buffers before it is used (dispatch(), trial_keeps());
  // `declined` after the trial: MPI's own for this signature.
  bool needs_trial = false, declined = false;
};

struct CommPlans {
  bool usable = false;  // an intracommunicator with a topology
  Neighbors nb;
  Settings settings;
  // The settings were checked at this communicator's first call (each communicator has its
  // own, from its MPI_Info keys): by the first agreement, or locally by a non-blocking call.
  mutable bool checked = false;
  long long shared_hash = 0;  // of shared_settings(): compared at every agreement
  // Backend mpi: every call is MPI's own, the same on every rank once the settings are agreed
  // (at the communicator's first agreement): later calls agree on nothing, so that the
  // program's calls reach MPI with no collective of the layer's between them.
  bool all_mpi = false;
  std::unique_ptr<Locality> loc;
  int one_node = -1;  // every rank of the communicator on one node (1), or not (0); -1 unknown
  std::map<int64_t, std::shared_ptr<Choice>> cache[2];  // allgather, alltoall: per block size
  struct Last {  // allgatherv, alltoallv: the choice of the last signature
    bool built = false;
    uint64_t hash = 0;
    std::shared_ptr<Choice> choice;
  } last[2];
  struct Agreed {
    bool valid = false;
    int64_t local = -1;  // this rank's signature when agreed (block bytes or a hash, or -1: cannot)
    std::shared_ptr<Choice> choice;
  } agreed[4];  // under the fixed-counts hint
  double agreement = -1;          // seconds one agreement takes here (max over ranks); -1: not measured
  bool charge_agreement = false;  // the choice being built runs behind an agreement per call
  struct Aside {  // auto's blocking calls without the hint: see steps_aside()
    int run = 0;            // consecutive agreements that ran no plan
    bool skipping = false;  // MPI's own without agreeing, but every `gap`-th call
    int64_t gap = 0, left = 0;
  } aside[4];
  // auto on one node without the hint: every call after the first blocking one through the
  // one-node exchange (when set), which needs no agreement (node_exchange.hpp). Decided at
  // the first agreement.
  bool node_decided = false;
  std::unique_ptr<NodeExchange> node;
};

int delete_plans(MPI_Comm, int, void* value, void*) {
  Global& g = global();
  if (g.last_plans == value) g.last_comm = MPI_COMM_NULL, g.last_plans = nullptr;
  for (auto& e : g.settled)
    if (e.plans == value) e = Global::Settled{};
  delete static_cast<std::shared_ptr<CommPlans>*>(value);
  return MPI_SUCCESS;
}

// The communicator's sparsecomm_* info keys: as the layer recorded them at its creation
// (comm_info.hpp: MPICH's MPI_Comm_get_info drops user keys), else as MPI returns them.
void apply_info(MPI_Comm comm, Settings* s) {
  static const char* const kKeys[] = {"sparsecomm_fixed_counts", "sparsecomm_backend", "sparsecomm_regions",
                                      "sparsecomm_k", "sparsecomm_aware"};
  std::map<std::string, std::string> keys;
  if (!recorded_info(comm, &keys)) {
    MPI_Info info = MPI_INFO_NULL;
    if (PMPI_Comm_get_info(comm, &info) != MPI_SUCCESS || info == MPI_INFO_NULL) return;
    int n = 0;
    PMPI_Info_get_nkeys(info, &n);
    for (int i = 0; i < n; ++i) {
      char key[MPI_MAX_INFO_KEY + 1] = {}, v[256];
      int flag = 0;
      if (PMPI_Info_get_nthkey(info, i, key) != MPI_SUCCESS || std::strncmp(key, "sparsecomm_", 11) != 0) continue;
      PMPI_Info_get(info, key, 255, v, &flag);
      if (flag) keys[key] = v;
    }
    PMPI_Info_free(&info);
  }
  // A sparsecomm_ key the layer does not know is a mistyped setting (the C API rejects one
  // too), never ignored.
  for (const auto& kv : keys)
    if (std::none_of(std::begin(kKeys), std::end(kKeys), [&](const char* k) { return kv.first == k; }) &&
        s->bad.empty()) {
      std::string known;
      for (const char* k : kKeys) known += std::string(known.empty() ? "" : ", ") + k;
      s->bad = "MPI_Info key '" + kv.first + "' is not one of the layer's (" + known + ")";
    }
  const auto get = [&keys](const char* key, std::string* out) {
    const auto it = keys.find(key);
    if (it == keys.end()) return false;
    *out = it->second;
    return true;
  };
  std::string v;
  if (get("sparsecomm_fixed_counts", &v)) set_flag(s, "MPI_Info sparsecomm_fixed_counts", v, &s->fixed);
  if (get("sparsecomm_backend", &v)) s->backend = v;
  if (get("sparsecomm_regions", &v)) s->regions = v;
  if (get("sparsecomm_k", &v)) set_int(s, "MPI_Info sparsecomm_k", v, &s->k);
  bool b = false;
  if (get("sparsecomm_aware", &v)) set_flag(s, "MPI_Info sparsecomm_aware", v, &b), s->aware = b;
}

// This communicator's entry, created at its first call (local: no communication).
std::shared_ptr<CommPlans> plans_of(Global& g, MPI_Comm comm) {
  if (comm == g.last_comm && g.last_plans) return *g.last_plans;
  if (g.keyval == MPI_KEYVAL_INVALID) PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_plans, &g.keyval, nullptr);
  void* v = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, g.keyval, &v, &found);
  if (found) {
    g.last_comm = comm, g.last_plans = static_cast<std::shared_ptr<CommPlans>*>(v);
    return *g.last_plans;
  }
  auto p = std::make_shared<CommPlans>();
  int inter = 0, topo = MPI_UNDEFINED;
  PMPI_Comm_test_inter(comm, &inter);
  if (!inter) PMPI_Topo_test(comm, &topo);
  p->usable = !inter && read_neighbors(comm, topo, &p->nb);
  p->settings = g.env;
  apply_info(comm, &p->settings);
  // (where the layer is off on every rank nothing else matters)
  p->shared_hash = settings_hash(g.disabled ? std::vector<NamedValue>{{"", "disabled"}} : shared_settings(p->settings, false));
  auto* slot = new std::shared_ptr<CommPlans>(p);
  PMPI_Comm_set_attr(comm, g.keyval, slot);
  g.last_comm = comm, g.last_plans = slot;
  return p;
}

// A run of one named type without holes (interop::contiguous_run): its bytes for `count`;
// -1 otherwise.
int64_t contiguous_bytes(MPI_Datatype t, int count) {
  MPI_Datatype base = MPI_DATATYPE_NULL;
  int n = 0;
  const int64_t one = count < 0 ? -1 : interop::contiguous_run(t, &base, &n);
  return one < 0 ? -1 : one * count;
}

// Whether `name` is a halo backend that runs an allgather as a halo plan (the halo
// backends without a gather form: the locality-aware aggregations).
bool halo_only(const std::string& name) {
  const auto g = gather_backend_names(), h = backend_names();
  return std::find(g.begin(), g.end(), name) == g.end() && std::find(h.begin(), h.end(), name) != h.end();
}

// The bad setting of `s` on a communicator of `size` ranks, or "".
std::string check_settings(const Settings& s, int size) {
  try {
    if (!s.bad.empty()) throw InputError(s.bad);
    // (the regions are read only across nodes, but a bad layout is an error wherever given)
    if (std::string e = region_spec_error(s.regions, size); !e.empty())
      throw InputError("SPARSECOMM_MPI_REGIONS or sparsecomm_regions: " + e);
    if (s.backend != "auto" && s.backend != "mpi" && !halo_only(s.backend)) {
      const auto g = gather_backend_names(), h = backend_names();
      if (std::find(g.begin(), g.end(), s.backend) == g.end()) {
        std::string names;
        for (const auto& n : g) names += " " + n;
        names += ";";
        for (const auto& n : h)
          if (n != "auto" && std::find(g.begin(), g.end(), n) == g.end()) names += " " + n;
        throw InputError("unknown backend '" + s.backend + "' (SPARSECOMM_MPI_BACKEND or sparsecomm_backend): auto, mpi," +
                         names);
      }
    }
    if (s.k < 0 || s.k == 1) throw InputError("SPARSECOMM_MPI_K must be 0 (default) or at least 2");
  } catch (const std::exception& e) {
    return std::string(e.what()) + " (backend '" + s.backend + "')";
  }
  return "";
}

// Collective (after an agreement found some rank's settings bad): the first failing rank's
// reason, for every rank to print (core agree()).
std::string first_error(MPI_Comm comm, const std::string& local_error) {
  try {
    agree(comm, local_error);
  } catch (const std::exception& e) {
    return e.what();
  }
  return local_error;  // (not reached: some rank failed)
}

// Prints `error` on this rank and exits (status 2); `meet`: every rank is here (after an
// agreement), and none exits before all have said it.
[[noreturn]] void bad_settings(MPI_Comm comm, const std::string& error, bool meet) {
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  std::fprintf(stderr, "sparsecomm mpi [rank %d]: error: %s\n", rank, error.c_str());
  std::fflush(stderr);
  if (meet) PMPI_Barrier(comm);  // every rank has said it before any exits (mpirun then stops the rest)
  std::exit(2);
}

// `label`: the blocks, e.g. "4-byte blocks".
void report(const CommPlans& p, MPI_Comm comm, Kind k, const std::string& label, const std::string& what) {
  if (!global().verbose) return;
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  if (rank == 0)
    std::fprintf(stderr, "sparsecomm mpi: communicator %s, %s of %s%s: %s\n", detail::handle_id(comm).c_str(), kCallName[k],
                 label.c_str(), p.settings.fixed ? " (counts fixed)" : "", what.c_str());
}

std::string block_label(int64_t bytes) { return std::to_string(bytes) + "-byte blocks"; }


// How much faster the model must predict the combining plan before `auto` takes it over
// MPI's own. The model's default constants are not this machine's: with a 5% margin auto
// took combining on ER 0.4 and on 1-KiB Moore blocks, where it measured slower than Open
// MPI's own, while the cases where combining paid predict well above this margin (the
// runs: experiments/pmpi/README.md and its git history).
constexpr double kAutoMargin = 1.3;
constexpr long long kShmAlltoallMax = 16384;  // see build_halo

// Collective. Whether every rank of comm shares one node (the same answer on every rank),
// and the shm backends exist: then auto takes them (every transfer one copy into a shared
// window and one out, experiments/pmpi/README.md).
bool shm_whole_node(CommPlans& p, MPI_Comm comm) {
  if (p.one_node < 0) {
    MPI_Comm node = MPI_COMM_NULL;
    PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int n = 0, all = 0;
    PMPI_Comm_size(node, &n);
    PMPI_Comm_size(comm, &all);
    PMPI_Comm_free(&node);
    p.one_node = n == all ? 1 : 0;
  }
  const auto g = gather_backend_names(), h = backend_names();
  return p.one_node == 1 && std::find(g.begin(), g.end(), "shm") != g.end() &&
         std::find(h.begin(), h.end(), "shm") != h.end();
}

// The options of a halo plan whose entries are `unit`-byte blocks: the widest value type
// that divides the block, `width` of them.
// A halo plan's options: blocks of `unit` bytes, and the combining parameters
// (SPARSECOMM_MPI_K, _AWARE or their info keys) for a backend that takes them -- combined,
// and auto, which hands them on to combined -- as the gather plans get them.
PlanOptions block_options(const Settings& s, const std::string& backend, int64_t unit) {
  PlanOptions po;
  po.value_bytes = unit % 8 == 0 ? 8 : unit % 4 == 0 ? 4 : 1;
  po.width = static_cast<int>(unit / po.value_bytes);
  if (declares_option(backend_option_specs(backend), "k")) {
    if (s.k) po.backend.set("k", s.k);
    if (s.aware >= 0) po.backend.set("aware", s.aware != 0);
  }
  return po;
}

// An allgather as a halo Pattern, so that the halo backends run it, the locality-aware
// aggregations among them: one entry per block; every destination gets entry 0 (this
// rank's block) under one id, this rank's number, so duplicate removal (aggregated_dedup,
// aggregated_2step) moves a block across a region pair once however many ranks there need
// it — the node-aware allgather of Bienz, Gropp and Olson (EuroMPI 2019) with the
// duplicate-free forward of Collom et al.'s locality-aware neighborhood collectives.
// Source uniq_src[j]'s block lands at entry j (the plan's order, as the gather plans').
Pattern allgather_pattern(const Neighbors& nb, int me) {
  PatternSide send, recv;
  for (int r : nb.uniq_dst) {
    send.ranks.push_back(r);
    send.indices.push_back(0);
    send.global_ids.push_back(me);
    send.offsets.push_back(send.size());
  }
  for (size_t j = 0; j < nb.uniq_src.size(); ++j) {
    recv.ranks.push_back(nb.uniq_src[j]);
    recv.indices.push_back(static_cast<int32_t>(j));
    recv.global_ids.push_back(nb.uniq_src[j]);
    recv.offsets.push_back(recv.size());
  }
  return Pattern(std::move(send), std::move(recv), 1, static_cast<int32_t>(nb.uniq_src.size()));
}

// An allgatherv as a halo Pattern (the allgather_pattern idea with blocks of different
// sizes): a plan's entries have one width, so blocks are cut into `unit`-byte entries,
// unit the largest power of two up to 8 that divides every rank's block (agreed); entry
// e of rank r's block has the id r * 2^31 + e on every edge it travels. The receive side
// follows what each source sends (`from`, bytes per uniq source, learned from the sources),
// not the program's receive counts, so a program whose counts disagree gets MPI's
// truncation error at delivery as on the gather path. Sets `off` (bytes into the staging
// buffer per uniq source) and returns the pattern.
Pattern allgatherv_pattern(const Neighbors& nb, int me, int64_t mine, const std::vector<int64_t>& from, int64_t unit,
                           std::vector<int64_t>* off) {
  PatternSide send, recv;
  for (int r : nb.uniq_dst) {
    send.ranks.push_back(r);
    for (int64_t e = 0; e < mine / unit; ++e)
      send.indices.push_back(static_cast<int32_t>(e)), send.global_ids.push_back((static_cast<int64_t>(me) << 31) + e);
    send.offsets.push_back(send.size());
  }
  off->assign(nb.uniq_src.size() + 1, 0);
  for (size_t j = 0; j < nb.uniq_src.size(); ++j) {
    recv.ranks.push_back(nb.uniq_src[j]);
    const int64_t at = (*off)[j] / unit;
    for (int64_t e = 0; e < from[j] / unit; ++e)
      recv.indices.push_back(static_cast<int32_t>(at + e)),
          recv.global_ids.push_back((static_cast<int64_t>(nb.uniq_src[j]) << 31) + e);
    recv.offsets.push_back(recv.size());
    (*off)[j + 1] = (*off)[j] + from[j];
  }
  return Pattern(std::move(send), std::move(recv), static_cast<int32_t>(std::max<int64_t>(mine / unit, 1)),
                 static_cast<int32_t>(off->back() / unit));
}

// What auto's halo plan predicted for backend `name` (the same on every rank: rank 0's
// predictions, broadcast).
double predicted(const Plan& plan, const std::string& name) { return plan.setup_stats().time("auto.predict." + name); }

// The halo backends that are MPI's own direct exchange: auto steps aside rather than run them.
bool direct(const std::string& name) { return name == "p2p" || name.rfind("neighbor", 0) == 0; }

// auto's halo plan against the direct exchange: its prediction `t`, the direct one's, whether
// it is kept (not a direct exchange, predicted kAutoMargin faster) and the report's words.
struct HaloVerdict {
  double t = 0, direct = 0;
  bool keep = false;
  std::string text;
};
// `extra`: what the plan's path costs per call beyond the plan (an agreement; 0 where none).
HaloVerdict verdict_of(const Plan& halo, double extra) {
  HaloVerdict v;
  v.t = predicted(halo, halo.name()) + extra, v.direct = predicted(halo, "p2p");
  v.keep = !direct(halo.name()) && v.t * kAutoMargin < v.direct;
  char why[160];
  std::snprintf(why, sizeof why, "%.1f us %s against %.1f us direct", v.t * 1e6, halo.name().c_str(), v.direct * 1e6);
  v.text = why;
  return v;
}

// Collective. What one agreement (agree(): an allreduce of four integers) takes on this
// communicator, the largest over ranks (so the same everywhere), measured once: the median
// of five. A blocking call without the fixed-counts hint pays it before every plan it runs
// and, once auto steps aside (steps_aside()), hardly at all before MPI's own, so auto
// charges it to the plans it weighs for such calls: a plan that saves less than an
// agreement costs is not taken. Across emulated nodes an agreement costs milliseconds, on
// one node tens of microseconds (where auto takes the shm plans without weighing).
double agreement_cost(CommPlans& p, MPI_Comm comm) {
  if (p.agreement < 0) {
    double t[5];
    const long long in[4] = {0, 0, 0, 0};
    long long out[4];
    for (double& x : t) {
      const double t0 = MPI_Wtime();
      PMPI_Allreduce(in, out, 4, MPI_LONG_LONG, MPI_MAX, comm);
      x = MPI_Wtime() - t0;
    }
    std::sort(t, t + 5);
    double most = 0;
    PMPI_Allreduce(&t[2], &most, 1, MPI_DOUBLE, MPI_MAX, comm);
    p.agreement = most;
  }
  return p.agreement;
}

// The report's words for the agreement charged to each plan (none: nothing).
std::string agreement_text(double extra) {
  return extra > 0 ? " (each plan with a " + std::to_string(static_cast<long>(extra * 1e6)) + " us agreement per call)"
                   : std::string();
}

// Collective. The agreed choice of an allgather(v) where this rank sends `bytes`: a gather
// plan, a halo plan (allgather_pattern, allgatherv_pattern), or null for MPI's own.
// same_count: every rank sends `bytes` (allgather).
std::shared_ptr<Choice> build_gather(CommPlans& p, MPI_Comm comm, Kind k, int64_t bytes, bool same_count,
                                     const std::string& label) {
  const Settings& s = p.settings;
  if (s.backend == "mpi") {
    report(p, comm, k, label, "MPI's own (backend mpi)");
    return nullptr;
  }
  if (!p.loc) p.loc = std::make_unique<Locality>(Locality::parse(comm, s.regions));
  Topology t;
  t.sources = p.nb.uniq_src, t.destinations = p.nb.uniq_dst;
  const auto make = [&](const std::string& name) {
    GatherOptions go;
    go.value_bytes = 1;
    go.same_count = same_count;
    if (name == "combined") {
      CombiningOptions co = combining_from(go.backend, go.sdde);
      if (s.k) co.k = s.k;
      if (s.aware >= 0) co.aware = s.aware != 0;
      set_combining(go.backend, co);
    }
    return make_gather_plan(name, t, *p.loc, comm, bytes, go);
  };
  auto c = std::make_shared<Choice>();
  // Collective. The halo plan `name` of this allgather(v); for an allgatherv it first
  // learns each source's block size (a neighborhood allgather of one integer) and agrees
  // the entry size (an allreduce): plans are built once per signature, so this is set-up.
  // Null (on every rank alike) where the pattern would be too large: its bytes past what a
  // plan indexes (make_plan's limit), or an allgatherv cut into more than kHaloEntries
  // entries (the pattern's memory); the gather plans take those.
  constexpr long long kHaloEntries = 1LL << 22;
  const auto make_halo = [&](const std::string& name) -> std::unique_ptr<Plan> {
    int me = 0;
    PMPI_Comm_rank(comm, &me);
    const auto nd = static_cast<long long>(p.nb.uniq_dst.size()), ns = static_cast<long long>(p.nb.uniq_src.size());
    if (same_count) {
      long long mine = (nd + ns) * bytes, most = 0;
      PMPI_Allreduce(&mine, &most, 1, MPI_LONG_LONG, MPI_MAX, comm);
      if (most > INT32_MAX) return nullptr;
      return make_plan(name, allgather_pattern(p.nb, me), *p.loc, comm, block_options(s, name, bytes));
    }
    long long mine = bytes;
    std::vector<long long> got(p.nb.sources.size() + 1, 0);
    PMPI_Neighbor_allgather(&mine, 1, MPI_LONG_LONG, got.data(), 1, MPI_LONG_LONG, comm);
    std::vector<int64_t> from(p.nb.uniq_src.size(), 0);
    long long in = 0;
    for (size_t i = 0; i < p.nb.sources.size(); ++i)
      if (p.nb.src_slot[i] >= 0) from[static_cast<size_t>(p.nb.src_slot[i])] = got[i];
    for (int64_t b : from) in += b;
    // One allreduce (minimum) agrees the entry size and the largest pattern: {my block's
    // power-of-two divisor up to 8, -(my pattern's bytes)}.
    const long long unit = bytes > 0 ? std::min<long long>(8, bytes & -bytes) : 8;
    const long long local[2] = {unit, -(nd * bytes + in)};
    long long agreed[2] = {8, 0};
    PMPI_Allreduce(local, agreed, 2, MPI_LONG_LONG, MPI_MIN, comm);
    if (-agreed[1] > INT32_MAX || -agreed[1] / agreed[0] > kHaloEntries) return nullptr;
    c->halo_bytes = from;
    Pattern pat = allgatherv_pattern(p.nb, me, bytes, from, agreed[0], &c->halo_off);
    return make_plan(name, pat, *p.loc, comm, block_options(s, name, agreed[0]));
  };
  if (s.backend == "auto" && shm_whole_node(p, comm)) {
    c->gather = make("shm");
    c->needs_trial = p.charge_agreement;
    report(p, comm, k, label, "auto: one node: shm plan built");
  } else if (s.backend == "auto") {
    const ModelParams model = ModelParams::resolve(comm, *p.loc, "");
    auto combined = make("combined");
    const double tc = predict_gather(*combined, model, comm);
    const double td = predict_gather(*make("p2p"), model, comm);  // what MPI's direct exchange costs
    // An allgather also as a halo plan: the halo auto predicts every halo backend (the
    // aggregations, combining, shm, direct) from counts and builds only its choice. Of
    // the two candidates the one predicted faster against its own direct exchange wins,
    // if by kAutoMargin.
    std::unique_ptr<Plan> halo = make_halo("auto");
    const double extra = p.charge_agreement ? agreement_cost(p, comm) : 0.0;
    const HaloVerdict h = halo ? verdict_of(*halo, extra) : HaloVerdict{};
    const bool keep_c = (tc + extra) * kAutoMargin < td;
    char why[160];
    std::snprintf(why, sizeof why, "auto predicted %.1f us combined against %.1f us direct", (tc + extra) * 1e6,
                  td * 1e6);
    std::string text = why;
    if (halo) text += ", " + h.text;
    text += agreement_text(extra);
    if (h.keep && (!keep_c || h.t / h.direct < (tc + extra) / td)) {
      report(p, comm, k, label, text + ": " + halo->name());
      c->halo = std::move(halo);
    } else if (keep_c) {
      report(p, comm, k, label, text + ": combined");
      c->gather = std::move(combined);
    } else {
      report(p, comm, k, label, text + ": MPI's own");
      return nullptr;
    }
  } else if (halo_only(s.backend) && (c->halo = make_halo(s.backend))) {
    report(p, comm, k, label, c->halo->name() + " plan built");
  } else {
    // (a halo-only backend whose pattern would be too large: the direct gather plan)
    c->gather = make(halo_only(s.backend) ? "p2p" : s.backend);
    report(p, comm, k, label, c->gather->name() + " plan built");
  }
  if (c->halo) {
    if (!same_count) c->staging.resize(static_cast<size_t>(c->halo_off.back()) + 1);
    else if (!p.nb.src_identity) c->staging.resize(p.nb.uniq_src.size() * static_cast<size_t>(bytes) + 1);
  } else if (!p.nb.src_identity || k == kAllgatherv) {
    c->staging.resize(static_cast<size_t>(c->gather->recv_total()) + 1);
  }
  return c;
}

// Collective. The agreed choice of an alltoall(v): a halo Pattern with an entry per `unit`
// bytes of each edge to another rank (destination j: out.count(j) units from out.displ(j)
// of the send buffer; source i: in.count(i) units at in.displ(i) of the receive buffer),
// ids unique per (sender, receiver, unit); self edges are a copy, MPI_PROC_NULL slots
// nothing.
std::shared_ptr<Choice> build_halo(CommPlans& p, MPI_Comm comm, Kind k, int64_t unit, Layout out, Layout in,
                                   const std::string& label) {
  const Settings& s = p.settings;
  if (s.backend == "mpi") {
    report(p, comm, k, label, "MPI's own (backend mpi)");
    return nullptr;
  }
  if (!p.loc) p.loc = std::make_unique<Locality>(Locality::parse(comm, s.regions));
  int me = 0, np = 1;
  PMPI_Comm_rank(comm, &me);
  PMPI_Comm_size(comm, &np);
  int32_t extent[2] = {0, 0};
  const auto side = [&](const std::vector<int>& mpi_order, const Layout& l, bool send) {
    PatternSide ps;
    std::vector<int> order;
    for (size_t i = 0; i < mpi_order.size(); ++i)
      if (mpi_order[i] != me && mpi_order[i] != MPI_PROC_NULL) order.push_back(static_cast<int>(i));
    std::sort(order.begin(), order.end(), [&](int a, int b) { return mpi_order[a] < mpi_order[b]; });
    for (int i : order) {
      const int r = mpi_order[static_cast<size_t>(i)];
      const int64_t pair = send ? static_cast<int64_t>(me) * np + r : static_cast<int64_t>(r) * np + me;
      ps.ranks.push_back(r);
      for (int e = 0; e < l.count(static_cast<size_t>(i)); ++e) {
        ps.indices.push_back(l.displ(static_cast<size_t>(i)) + e);
        ps.global_ids.push_back((pair << 31) + e);
      }
      ps.offsets.push_back(static_cast<int64_t>(ps.indices.size()));
    }
    for (size_t i = 0; i < mpi_order.size(); ++i)
      extent[send ? 0 : 1] = std::max(extent[send ? 0 : 1], l.displ(i) + l.count(i));
    return ps;
  };
  PatternSide send = side(p.nb.destinations, out, true);
  PatternSide recv = side(p.nb.sources, in, false);
  Pattern pat(std::move(send), std::move(recv), extent[0], extent[1]);
  const auto po = [&](const std::string& backend) { return block_options(s, backend, unit); };
  auto c = std::make_shared<Choice>();
  // On one node the shm halo plan beat Open MPI's own alltoall on small blocks but not on
  // 64 KiB ones (its pack, window and unpack copies against Open MPI's single-copy path for
  // large messages; experiments/pmpi/README.md, "The one-node rule"): auto takes it for
  // blocks up to kShmAlltoallMax bytes, the largest block over all ranks (agreed).
  if (s.backend == "auto" && shm_whole_node(p, comm)) {
    long long largest = 0, agreed = 0;
    for (size_t j = 0; j < p.nb.destinations.size(); ++j)
      largest = std::max<long long>(largest, static_cast<long long>(out.count(j)) * unit);
    PMPI_Allreduce(&largest, &agreed, 1, MPI_LONG_LONG, MPI_MAX, comm);
    if (agreed <= kShmAlltoallMax) {
      c->halo = make_plan("shm", pat, *p.loc, comm, po("shm"));
      c->needs_trial = p.charge_agreement;
      report(p, comm, k, label, "auto: one node: shm plan built");
      return c;
    }
    report(p, comm, k, label, "auto: one node, blocks above " + std::to_string(kShmAlltoallMax) + " bytes: MPI's own");
    return nullptr;
  }
  if (s.backend == "auto") {
    // The halo auto predicts every halo backend from counts and builds only its choice;
    // kept if not a direct exchange and predicted kAutoMargin faster than one.
    auto chosen = make_plan("auto", pat, *p.loc, comm, po("auto"));
    const double extra = p.charge_agreement ? agreement_cost(p, comm) : 0.0;
    const HaloVerdict v = verdict_of(*chosen, extra);
    report(p, comm, k, label,
           "auto predicted " + v.text + agreement_text(extra) + ": " + (v.keep ? chosen->name() : std::string("MPI's own")));
    if (!v.keep) return nullptr;
    c->halo = std::move(chosen);
    return c;
  }
  const auto names = backend_names();
  const bool halo_named = std::find(names.begin(), names.end(), s.backend) != names.end();
  c->halo = make_plan(halo_named ? s.backend : "p2p", pat, *p.loc, comm, po(halo_named ? s.backend : "p2p"));
  report(p, comm, k, label, c->halo->name() + " plan built");
  return c;
}

// The choice of a call in which no rank moves a byte (every block empty): no plan, nothing
// to do, which MPI's own would also do.
std::shared_ptr<Choice> nothing_to_move(CommPlans& p, MPI_Comm comm, Kind k, const std::string& label) {
  auto c = std::make_shared<Choice>();
  c->nothing = true;
  report(p, comm, k, label, "nothing to move");
  return c;
}

// Collective. The agreed choice of an allgather or alltoall of `bytes`-byte blocks.
std::shared_ptr<Choice> build_choice(CommPlans& p, MPI_Comm comm, Kind k, int64_t bytes) {
  if (bytes == 0) return nothing_to_move(p, comm, k, block_label(bytes));
  if (k == kAllgather) return build_gather(p, comm, k, bytes, true, block_label(bytes));
  return build_halo(p, comm, k, bytes, Layout{}, Layout{}, block_label(bytes));
}

// Collective. The element-wise max over the communicator of `in` (three flags or values),
// with the settings checked at the communicator's first agreement, and at every agreement
// that they are alike on every rank (a hash of them, as its max and minus its min): a bad
// one, or a difference, ends every rank with the same error.
std::array<long long, 3> agree(MPI_Comm comm, const CommPlans& p, const std::array<long long, 3>& in) {
  std::string error;
  if (!p.checked && !global().disabled) error = check_settings(p.settings, comm_size(comm));
  const long long mine[6] = {in[0], in[1], in[2], error.empty() ? 0 : 1, p.shared_hash, -p.shared_hash};
  long long out[6];
  PMPI_Allreduce(mine, out, 6, MPI_LONG_LONG, MPI_MAX, comm);
  if (out[3]) bad_settings(comm, first_error(comm, error), true);
  if (out[4] != -out[5]) {
    std::string message;
    try {
      message = settings_differ(comm, shared_settings(p.settings, global().disabled),
                                std::string(kPerProcessEnvironment) +
                                    ", and the same MPI_Info keys at the communicator's creation");
    } catch (const std::exception& e) {  // (an MPI error under MPI_ERRORS_RETURN)
      message = std::string("settings differ between ranks (which ones: ") + e.what() + ")";
    }
    bad_settings(comm, message, true);
  }
  p.checked = true;
  return {out[0], out[1], out[2]};
}

// What decide() and decide_v() share before and during the agreement.
struct Prologue {
  bool done = false;                // the outcome is known without agreeing: `choice`
  bool settled = false;             // ... and for every later call with this signature too
  std::shared_ptr<Choice> choice;   // (null: MPI's own)
  std::shared_ptr<CommPlans> p;     // the communicator's entry, when not done
  int64_t local = -1;               // the local signature, -1 where this rank cannot
};

// Disabled, no topology, a hinted communicator that has agreed (its choice, or *broken when
// the local signature `local` differs), a non-blocking call (local in MPI: no agreement).
// An alltoall(v) whose lists name a rank twice cannot (local = -1): MPI pairs those.
Prologue prologue(MPI_Comm comm, Kind k, int64_t local, Mode mode, bool* broken) {
  Global& g = global();
  Prologue r;
  *broken = false;
  r.done = true;
  if (g.world_rank < 0) PMPI_Comm_rank(MPI_COMM_WORLD, &g.world_rank);
  if (g.disabled) {
    // Every call is MPI's own; but where the layer would agree (the first blocking or
    // persistent call on a communicator it can serve) this rank agrees too, so that ranks
    // where the layer is on (SPARSECOMM_MPI_DISABLE set on some ranks only) learn of the
    // difference there instead of waiting in that agreement while this rank is in MPI's call.
    if (mode == kNonblocking) return r;
    const std::shared_ptr<CommPlans> p = plans_of(g, comm);
    if (p->usable && !p->checked) agree(comm, *p, {1, 0, 0});  // (1: this rank cannot; MPI's own)
    return r;
  }
  r.p = plans_of(g, comm);
  r.settled = true;
  if (!r.p->usable) return r;  // the same on every rank: a property of the communicator
  if (!r.p->nb.pairs_unique && (k == kAlltoall || k == kAlltoallv)) local = -1;
  r.local = local;
  const CommPlans::Agreed& a = r.p->agreed[k];
  if (r.p->settings.fixed && mode != kPersistent && a.valid) {
    *broken = local != a.local;
    r.choice = a.choice;
    r.settled = !*broken;
    return r;
  }
  if (r.p->all_mpi) return r;  // (done: MPI's own, settled)
  r.settled = false;
  if (mode == kNonblocking) {
    if (!r.p->checked) {
      if (const std::string e = check_settings(r.p->settings, comm_size(comm)); !e.empty()) bad_settings(comm, e, false);
      r.p->checked = true;
    }
    return r;
  }
  r.done = false;
  return r;
}

// Stepping aside without paying for it. Without the fixed-counts hint every blocking call
// agrees first (one allreduce over the communicator; its cost: experiments/pmpi/README.md),
// also where the agreement's outcome is that the library does nothing: MPI's own
// call (auto's choice, or a call some rank cannot run) or nothing to move. Under auto, once
// kAsideAfter agreements in a row on a communicator and function ran no plan, the calls go
// to MPI's own without agreeing, and only every gap-th call agrees (the gap doubling from
// kAsideFirstGap to kAsideMaxGap while the outcome stays the same); an agreement that
// builds or finds a plan ends it. Safe because MPI's own is right for any arguments and
// every rank skips the same calls: MPI orders a communicator's blocking collectives alike
// on every rank, so the calls are counted alike (the non-blocking and persistent forms
// never pass here). The cost: after a change that would take a plan (another block size,
// a contiguous type again), up to gap - 1 calls still run MPI's own — a speed-up missed for
// a while, never a slow-down — while each agreement kept costs an allreduce, which across
// the emulated nodes was still a visible share of a small SpMM's exchanges at a gap of 128
// (experiments/pmpi/README.md and its git history), hence the gap's growth to 1024. Forced backends
// agree at every call (the user asked for the backend).
constexpr int kAsideAfter = 2;
constexpr int64_t kAsideFirstGap = 8, kAsideMaxGap = 1024;

bool steps_aside(const CommPlans& p, Mode mode) {
  return mode == kBlocking && !p.settings.fixed && p.settings.backend == "auto";
}

// True where this call runs MPI's own without agreeing (skipping, and not the gap-th call).
bool skip_agreement(CommPlans& p, Kind k) {
  CommPlans::Aside& a = p.aside[k];
  return a.skipping && --a.left > 0;
}

// After an agreement whose outcome ran a plan (`plan`) or not.
void note_outcome(CommPlans& p, MPI_Comm comm, Kind k, bool plan) {
  CommPlans::Aside& a = p.aside[k];
  if (plan) {
    if (a.skipping) report(p, comm, k, "any blocks", "a plan again: agreeing at every call");
    a = CommPlans::Aside{};
    return;
  }
  if (a.skipping) {
    a.gap = std::min(2 * a.gap, kAsideMaxGap);
  } else if (++a.run >= kAsideAfter) {
    a.skipping = true;
    a.gap = kAsideFirstGap;
    report(p, comm, k, "any blocks",
           "MPI's own " + std::to_string(kAsideAfter) + " times in a row: stepping aside, agreeing every " +
               std::to_string(kAsideFirstGap) + "th to " + std::to_string(kAsideMaxGap) + "th call");
  } else {
    return;
  }
  a.left = a.gap;
}

// What decide() and decide_v() do around their agreement. Before it: false where this call
// skips it (stepping aside), else counted, with whether the choices built now are charged
// for it (auto's blocking calls without the hint).
bool before_agreement(CommPlans& p, Kind k, Mode mode) {
  const bool aside = steps_aside(p, mode);
  if (aside && skip_agreement(p, k)) return false;
  ++global().agreements[k];
  p.charge_agreement = aside;
  return true;
}
// After it: the outcome counted toward stepping aside (a fresh choice awaiting its trial is
// counted by dispatch()), and a declined choice is MPI's own.
std::shared_ptr<Choice> after_agreement(CommPlans& p, MPI_Comm comm, Kind k, Mode mode,
                                        const std::shared_ptr<Choice>& c) {
  if (steps_aside(p, mode) && !(c && c->needs_trial)) note_outcome(p, comm, k, c && !c->nothing && !c->declined);
  return c && c->declined ? nullptr : c;
}

// Collective (right after an agreement, alike on every rank). At the first agreement of
// auto's blocking calls without the hint on a communicator, whether its calls (all four
// functions, blocking or not) go through the one-node exchange from now on: every rank on
// one node (then shared windows exist) and not switched off (SPARSECOMM_MPI_NODE_EXCHANGE=0).
// True when it was set up now (this call is then MPI's own).
bool starts_node_exchange(CommPlans& p, MPI_Comm comm, Kind k, Mode mode) {
  if (p.node_decided || !steps_aside(p, mode)) return false;
  p.node_decided = true;
  if (!p.settings.node_exchange || !shm_whole_node(p, comm)) return false;
  try {
    p.node = NodeExchange::create(comm, p.nb.sources, p.nb.destinations, kShmAlltoallMax, p.settings.node_area);
  } catch (const std::exception& e) {  // (MPI errors of the set-up: alike on every rank)
    fail(e.what());
  }
  if (!p.node) return false;
  report(p, comm, k, "any blocks",
         "auto: one node: the one-node exchange for every call (sizes carried in the shared window, no "
         "agreement per call)");
  return true;
}

// Where decide() found that later calls will take its path without agreeing (for
// passes_at_once): `settled`, every later call with the same signature (prologue()); or
// `aside`, auto stepping aside, every call until its next agreement.
struct Shortcut {
  bool settled = false;
  CommPlans* aside = nullptr;
};

// The agreed choice of an allgather or alltoall call, or null for MPI's own. `local`: this
// rank's block bytes, or -1 when it cannot run the call through a plan. One allreduce of
// {cannot, -bytes, bytes}: every rank can, with one block size. Sets *broken when a hinted
// communicator's call breaks the promise of fixed counts, and *shortcut (above).
std::shared_ptr<Choice> decide(MPI_Comm comm, Kind k, int64_t local, Mode mode, bool* broken,
                               Shortcut* shortcut) {
  const Prologue pre = prologue(comm, k, local, mode, broken);
  if (pre.done) {
    shortcut->settled = pre.settled;
    return pre.choice;
  }
  CommPlans& p = *pre.p;
  local = pre.local;
  if (!before_agreement(p, k, mode)) {  // stepping aside: MPI's own
    shortcut->aside = &p;
    return nullptr;
  }
  const auto out = agree(comm, p, {local < 0 ? 1 : 0, -local, local});
  p.all_mpi = p.settings.backend == "mpi" && !p.settings.fixed;  // (the hint's checks need every first call)
  if (starts_node_exchange(p, comm, k, mode)) return nullptr;  // this call MPI's own; every later one through it
  std::shared_ptr<Choice> c;
  if (!out[0] && -out[1] == out[2]) {  // every rank can, with one block size
    try {
      if (mode == kPersistent) {
        c = build_choice(p, comm, k, local);  // the request's own plan
      } else {
        auto it = p.cache[k].find(local);
        if (it == p.cache[k].end()) it = p.cache[k].emplace(local, build_choice(p, comm, k, local)).first;
        c = it->second;
      }
    } catch (const std::exception& e) {  // plan set-up failed on every rank alike (agreed errors)
      fail(e.what());
    }
  }
  if (p.settings.fixed && mode != kPersistent) p.agreed[k] = {true, local, c};
  return after_agreement(p, comm, k, mode, c);
}

// The same for allgatherv / alltoallv, whose signature is a hash of this rank's counts
// (and displacements where the plan depends on them): one allreduce of {cannot, changed,
// moves}; a change on any rank rebuilds the plan on every rank (`build`, collective), or,
// where no rank moves a byte (`moves`: this rank sends or receives a non-empty block),
// agrees on nothing to move -- no plan, and under auto the calls step aside as for empty
// fixed-size blocks. With the hint, only the first call agrees.
template <class Build>
std::shared_ptr<Choice> decide_v(MPI_Comm comm, Kind k, bool can, bool moves, uint64_t hash, Mode mode, Build build,
                                 bool* broken) {
  const Prologue pre = prologue(comm, k, can ? static_cast<int64_t>(hash >> 1) : -1, mode, broken);
  if (pre.done) return pre.choice;
  CommPlans& p = *pre.p;
  const int64_t local = pre.local;
  can = local >= 0;
  if (!before_agreement(p, k, mode)) return nullptr;  // stepping aside: MPI's own
  CommPlans::Last& last = p.last[k - kAllgatherv];
  const bool changed = mode == kPersistent || !(last.built && last.hash == hash);
  const auto out = agree(comm, p, {can ? 0 : 1, can && changed ? 1 : 0, moves ? 1 : 0});
  p.all_mpi = p.settings.backend == "mpi" && !p.settings.fixed;
  if (starts_node_exchange(p, comm, k, mode)) return nullptr;  // this call MPI's own; every later one through it
  std::shared_ptr<Choice> c;
  auto choose = [&] { return out[2] ? build(p) : nothing_to_move(p, comm, k, "variable blocks, all empty"); };
  try {
    if (!out[0] && mode == kPersistent) return choose();  // the request's own plan
    if (!out[0] && out[1]) {
      last.choice = choose();
      last.built = true, last.hash = hash;
    }
  } catch (const std::exception& e) {  // plan set-up failed on every rank alike
    fail(e.what());
  }
  if (!out[0]) c = last.choice;
  if (p.settings.fixed) p.agreed[k] = {true, local, c};
  return after_agreement(p, comm, k, mode, c);
}

// FNV-1a over some int arrays: the signature of a v-call.
uint64_t hash_ints(uint64_t h, const int* v, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<uint32_t>(v[i]);
    h *= 1099511628211ULL;
  }
  return h;
}

// Whether any of n counts is not 0.
bool any_nonzero(const int* v, size_t n) { return std::any_of(v, v + n, [](int x) { return x != 0; }); }
// Whether any of n counts is negative (MPI_ERR_COUNT: the layer leaves such a call to MPI's own).
bool any_negative(const int* v, size_t n) { return std::any_of(v, v + n, [](int x) { return x < 0; }); }
// The same for one side of a call with n neighbors (one count, or one per neighbor).
bool negative_count(const NodeExchange::Side& s, size_t n) {
  return s.counts ? any_negative(s.counts, n) : s.count < 0;
}

// The signature of a call: its block bytes when this rank can run it, -1 otherwise.
int64_t signature(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int recvcount, MPI_Datatype recvtype) {
  if (sendbuf == MPI_IN_PLACE) return -1;
  const int64_t sb = contiguous_bytes(sendtype, sendcount);
  return sb >= 0 && sb == contiguous_bytes(recvtype, recvcount) ? sb : -1;
}

int broken_promise(MPI_Comm comm, Kind k) {
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  std::fprintf(stderr,
               "sparsecomm mpi [rank %d]: error: %s on a communicator with fixed counts "
               "(sparsecomm_fixed_counts) called with another block size or datatype than its first call\n",
               rank, kCallName[k]);
  std::fflush(stderr);
  PMPI_Comm_call_errhandler(comm, MPI_ERR_ARG);  // fatal by default; MPI_ERRORS_RETURN: the code
  return MPI_ERR_ARG;
}

// The received blocks in MPI's order, from the plan's (sorted, once per rank) order.
void deliver(const Neighbors& nb, const char* staged, const void* send, void* recv, size_t B) {
  for (size_t i = 0; i < nb.sources.size(); ++i) {
    const int slot = nb.src_slot[i];
    char* at = static_cast<char*>(recv) + i * B;
    if (slot == kSelf) std::memcpy(at, send, B);
    else if (slot >= 0) std::memcpy(at, staged + static_cast<size_t>(slot) * B, B);
  }
}

// Whether MPI runs with MPI_THREAD_MULTIPLE. The layer's state (each communicator's plans
// and agreements, the call counters, the request table, depth()) has no locks: it serves
// programs whose MPI calls never overlap (MPI_THREAD_SINGLE, FUNNELED, SERIALIZED — the
// last one's program orders its calls, and that order is the synchronization). Under
// MPI_THREAD_MULTIPLE two threads may be inside the layer at once, so every call goes
// straight to MPI's own before anything of the layer's is touched (only an atomic count,
// reported with SPARSECOMM_MPI_VERBOSE). Asked once: the level is fixed at MPI_Init_thread.
bool thread_multiple() {
  static const bool multiple = [] {
    int level = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&level);
    if (level == MPI_THREAD_MULTIPLE) {
      Global& g = global();
      PMPI_Comm_rank(MPI_COMM_WORLD, &g.world_rank);
      if (g.verbose && g.world_rank == 0)
        std::fprintf(stderr, "sparsecomm mpi: MPI_THREAD_MULTIPLE: the layer steps aside, every neighborhood "
                             "collective goes to MPI's own\n");
    }
    return level == MPI_THREAD_MULTIPLE;
  }();
  return multiple;
}
bool passed_for_threads() {
  if (!thread_multiple()) return false;
  global().threaded.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// Whether a non-blocking or persistent call comes from MPI's own Fortran bindings. Where
// those reach the C entries at all (MPICH's call the C MPI_ functions; Open MPI's call the
// C profiling ones, and Fortran reaches the layer through its own entries, fortran.cpp),
// MPICH's mpi_f08 module completes and starts requests through MPI's C profiling functions
// (PMPI_Wait, PMPI_Start) directly, where a request of the layer would never be completed:
// such calls are MPI's own. Told by the caller's address (dladdr on the return address):
// inside the shared object that defines the Fortran MPI_Init (mpi_init_). Cached per call
// site.
bool from_fortran_binding(const void* caller) {
  static const void* fortran = [] {
    Dl_info i{};
    void* f = dlsym(RTLD_DEFAULT, "mpi_init_");
    return f && dladdr(f, &i) ? i.dli_fbase : nullptr;
  }();
  if (!fortran || thread_multiple()) return false;  // (threads: every call is MPI's own anyway)
  const auto look = [caller] {
    Dl_info info{};
    return dladdr(caller, &info) && info.dli_fbase == fortran;
  };
  static std::unordered_map<const void*, bool> seen;
  auto it = seen.find(caller);
  if (it == seen.end()) it = seen.emplace(caller, look()).first;
  return it->second;
}

// Depth of the layer's own work on this process: the plans it runs call MPI themselves
// (the neighbor backends call MPI_Ineighbor_allgatherv / _alltoallv on communicators of
// their own), and those calls must go to MPI, not back into the layer.
int& depth() {
  static int d = 0;
  return d;
}
struct Inside {
  Inside() { ++depth(); }
  ~Inside() { --depth(); }
  Inside(const Inside&) = delete;
  Inside& operator=(const Inside&) = delete;
};

// One execution on a plan, as an operation behind a request: `begin` starts the plan,
// `finish(block)` completes it (false: not yet) and delivers into the caller's buffers.
// One operation runs on a plan at a time: starting another first completes it.
class PlanOp final : public Operation {
 public:
  PlanOp(std::shared_ptr<Choice> c, std::function<void()> begin, std::function<bool(bool)> finish)
      : c_(std::move(c)), begin_(std::move(begin)), finish_(std::move(finish)) {}
  ~PlanOp() override {
    try {
      if (c_->inflight == this) progress(true);
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }
  void start() override {
    Inside inside;
    if (c_->inflight && c_->inflight != this) c_->inflight->progress(true);
    complete_ = false;
    begin_();
    c_->inflight = this;
  }
  bool progress(bool block) override {
    if (complete_) return true;
    Inside inside;
    if (!finish_(block)) return false;
    c_->inflight = nullptr;
    complete_ = true;
    return true;
  }

 private:
  std::shared_ptr<Choice> c_;  // keeps the plan alive while the request exists
  std::function<void()> begin_;
  std::function<bool(bool)> finish_;
  bool complete_ = true;
};

// Each call shape as begin (start the plan) and finish (complete it, `block` or poll, and
// deliver into the caller's buffers; false: not yet): a blocking call runs both, a request
// runs them in MPI_Start and the completion calls.
void gather_begin(Choice& c, const void* send) { c.gather->start(static_cast<const char*>(send)); }

// A block of `N` bytes with no alignment assumption (the caller's buffers are bytes).
template <int N>
struct Block {
  unsigned char b[N];
};

void halo_begin(Choice& c, const void* send) {
  Plan& plan = *c.halo;
  const int vb = plan.options().value_bytes;
  if (vb == 8) plan.start(static_cast<const Block<8>*>(send));
  else if (vb == 4) plan.start(static_cast<const Block<4>*>(send));
  else plan.start(static_cast<const Block<1>*>(send));
}

bool halo_complete(Choice& c, void* recv, bool block) {
  Plan& plan = *c.halo;
  const int vb = plan.options().value_bytes;
  const auto run = [&](auto* typed) {
    if (block) {
      plan.wait(typed);
      return true;
    }
    return plan.test(typed);
  };
  if (vb == 8) return run(static_cast<Block<8>*>(recv));
  if (vb == 4) return run(static_cast<Block<4>*>(recv));
  return run(static_cast<Block<1>*>(recv));
}

// allgather: the plan (a gather plan, or a halo plan of allgather_pattern) delivers by
// sorted source; MPI's slots get them (dup, self, null).
bool allgather_finish(const Neighbors& nb, Choice& c, const void* send, void* recv, size_t B, bool block) {
  char* into = nb.src_identity ? static_cast<char*>(recv) : c.staging.data();
  if (c.halo) {
    if (!halo_complete(c, into, block)) return false;
  } else if (block) {
    c.gather->wait(into);
  } else if (!c.gather->test(into)) {
    return false;
  }
  if (!nb.src_identity) deliver(nb, c.staging.data(), send, recv, B);
  return true;
}

// allgatherv: the plan's blocks to MPI's slots at displs; *ok false when a slot's count is
// not what its source sends (an erroneous program: the rest is still delivered).
bool allgatherv_finish(const Neighbors& nb, Choice& c, const void* send, int64_t send_bytes, void* recv,
                       const int* rcounts, const int* displs, int64_t rsize, bool block, bool* ok) {
  if (c.halo) {
    if (!halo_complete(c, c.staging.data(), block)) return false;
  } else if (block) {
    c.gather->wait(c.staging.data());
  } else if (!c.gather->test(c.staging.data())) {
    return false;
  }
  // Per uniq source: its bytes and where they lie in staging (the plan's layout).
  const auto size_of = [&](size_t j) { return c.halo ? c.halo_bytes[j] : c.gather->recv_counts()[j]; };
  const auto at_of = [&](size_t j) { return c.halo ? c.halo_off[j] : c.gather->recv_offsets()[j]; };
  *ok = true;
  for (size_t i = 0; i < nb.sources.size(); ++i) {
    const int slot = nb.src_slot[i];
    if (slot == kNull) continue;
    const int64_t bytes = slot == kSelf ? send_bytes : size_of(static_cast<size_t>(slot));
    if (bytes != rcounts[i] * rsize) {
      *ok = false;
      continue;
    }
    const char* from = slot == kSelf ? static_cast<const char*>(send)
                                     : c.staging.data() + at_of(static_cast<size_t>(slot));
    std::memcpy(static_cast<char*>(recv) + displs[i] * rsize, from, static_cast<size_t>(bytes));
  }
  return true;
}

// The self edge of an alltoall(v) (at most one: pairs are unique): destination self_dst's
// units land in source slot self_src (of `in`, only the displacements are read).
void copy_self(const Neighbors& nb, const void* send, void* recv, size_t unit, Layout out, Layout in) {
  if (nb.self_src < 0 || nb.self_dst < 0) return;
  const auto i = static_cast<size_t>(nb.self_src), j = static_cast<size_t>(nb.self_dst);
  const auto u = static_cast<ptrdiff_t>(unit);  // displacements may be negative (MPI allows it)
  std::memcpy(static_cast<char*>(recv) + static_cast<ptrdiff_t>(in.displ(i)) * u,
              static_cast<const char*>(send) + static_cast<ptrdiff_t>(out.displ(j)) * u,
              static_cast<size_t>(out.count(j)) * unit);
}

// A blocking call on choice c: the operation running on its plan (a request) completes
// first, then begin and finish.
template <class Begin, class Finish>
void run_blocking(Choice& c, Begin begin, Finish finish) {
  if (c.nothing) return;
  if (c.inflight) c.inflight->progress(true);
  begin();
  finish(true);
}

}  // namespace
}  // namespace sparsecomm::pmpi

namespace sparsecomm::pmpi {
namespace {
// The request of a non-blocking (started now) or persistent operation on choice c.
MPI_Request plan_request(const std::shared_ptr<Choice>& c, bool persistent, std::function<void()> begin,
                         std::function<bool(bool)> finish) {
  if (c->nothing) {  // a request that completes at once
    struct Nothing final : Operation {
      void start() override {}
      bool progress(bool) override { return true; }
    };
    return register_operation(std::make_unique<Nothing>(), persistent, !persistent);
  }
  auto op = std::make_unique<PlanOp>(c, std::move(begin), std::move(finish));
  if (!persistent) op->start();
  return register_operation(std::move(op), persistent, !persistent);
}

// A halo choice is usable behind a request only where its backend can be polled (the same
// on every rank: it depends on the backend's name).
std::shared_ptr<Choice> pollable(std::shared_ptr<Choice> c) {
  return c && c->halo && !c->halo->supports_test() ? nullptr : c;
}

// Collective (every rank has the same fresh choice at the same call). Whether auto's shm
// plan on one node is kept for blocking calls without the hint: such a call pays an
// agreement before the plan and (once stepped aside) none before MPI's own, and on an
// oversubscribed node the agreement (a global allreduce; experiments/pmpi/README.md) can
// cost more than the plan saves on small blocks. auto on one node has no model
// verdict (its predictions there are least reliable), so it measures: the plan and MPI's
// own alternately on the call's own buffers (both deliver the same result into them), one
// warm-up and five timed each, the medians' maximum over ranks, plus the agreement
// (agreement_cost). Kept if kTrialMargin faster.
constexpr double kTrialMargin = 1.1;
template <class Run, class Pass>
bool trial_keeps(MPI_Comm comm, Kind k, Run run, Pass pass) {
  CommPlans& p = *plans_of(global(), comm);
  double tp[5], tm[5];
  run(), pass();
  for (int i = 0; i < 5; ++i) {
    double t0 = MPI_Wtime();
    run();
    tp[i] = MPI_Wtime() - t0;
    t0 = MPI_Wtime();
    pass();
    tm[i] = MPI_Wtime() - t0;
  }
  std::sort(tp, tp + 5), std::sort(tm, tm + 5);
  const double mine[2] = {tp[2], tm[2]};
  double most[2] = {0, 0};
  PMPI_Allreduce(mine, most, 2, MPI_DOUBLE, MPI_MAX, comm);
  const double agree = agreement_cost(p, comm);
  const bool keep = (most[0] + agree) * kTrialMargin < most[1];
  char why[200];
  std::snprintf(why, sizeof why, "measured %.1f us shm + %.1f us agreement against %.1f us MPI's own: %s",
                most[0] * 1e6, agree * 1e6, most[1] * 1e6, keep ? "shm" : "MPI's own");
  report(p, comm, k, "this signature", why);
  return keep;
}

// What every entry point does: decide (`decide_fn(&broken)`), then MPI's own (`pass`) or
// the plan (`run`, returning the call's code), counted under `counter` (Global::handled /
// passed).
// `passed_on` (if given): set when the call went to MPI's own at depth 0.
template <class Decide, class Pass, class Run>
int dispatch(MPI_Comm comm, Kind k, int counter, Decide decide_fn, Pass pass, Run run, bool* passed_on = nullptr) {
  if (depth() > 0) return pass();  // a plan's own call
  Inside inside;
  bool broken = false;
  const std::shared_ptr<Choice> c = decide_fn(&broken);
  if (broken) return broken_promise(comm, k);
  if (c && c->needs_trial) {
    c->needs_trial = false;
    try {
      c->declined = !trial_keeps(comm, k, [&] { run(c); }, pass);
    } catch (const std::exception& e) {
      fail(e.what());
    }
    note_outcome(*plans_of(global(), comm), comm, k, !c->declined);  // (decide() left it to the trial)
  }
  if (!c || c->declined) {
    ++global().passed[counter];
    if (passed_on) *passed_on = true;
    return pass();
  }
  int rc = MPI_SUCCESS;
  try {
    rc = run(c);
  } catch (const std::exception& e) {
    fail(e.what());
  }
  ++global().handled[counter];
  return rc;
}

// A receive count that is not what the source sends: MPI calls the program erroneous; the
// data that fits has been delivered, the error goes through the communicator's handler.
int count_mismatch(MPI_Comm comm, Kind k) {
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  std::fprintf(stderr, "sparsecomm mpi [rank %d]: error: %s: a receive count differs from what its source sends\n",
               rank, kCallName[k]);
  std::fflush(stderr);
  PMPI_Comm_call_errhandler(comm, MPI_ERR_TRUNCATE);
  return MPI_ERR_TRUNCATE;
}
}  // namespace
}  // namespace sparsecomm::pmpi

using namespace sparsecomm::pmpi;
#define SPC_EXPORT extern "C" __attribute__((visibility("default")))

namespace sparsecomm::pmpi {
namespace {

// A completed one-node exchange call's error (NodeExchange::op_code): reported on this rank
// and through the communicator's handler; the code.
int node_error(MPI_Comm comm, Kind k, int rc) {
  if (rc == MPI_ERR_TRUNCATE) return count_mismatch(comm, k);
  if (rc == MPI_ERR_COUNT) {
    std::fprintf(stderr, "sparsecomm mpi [rank %d]: error: %s with a negative count\n", global().world_rank, kCallName[k]);
    std::fflush(stderr);
    PMPI_Comm_call_errhandler(comm, MPI_ERR_COUNT);
  }
  if (rc == MPI_ERR_BUFFER) {
    std::fprintf(stderr, "sparsecomm mpi [rank %d]: error: %s with MPI_IN_PLACE (not defined for neighborhood "
                 "collectives)\n", global().world_rank, kCallName[k]);
    std::fflush(stderr);
    PMPI_Comm_call_errhandler(comm, MPI_ERR_BUFFER);
  }
  return rc;
}

// A non-blocking call on the one-node exchange behind a request; it keeps the
// communicator's entry (and so the exchange) alive. An error is reported at completion.
class NodeOp final : public Operation {
 public:
  NodeOp(std::shared_ptr<CommPlans> p, std::shared_ptr<NodeExchange::Op> op, MPI_Comm comm, Kind k)
      : p_(std::move(p)), op_(std::move(op)), comm_(comm), k_(k) {}
  ~NodeOp() override {
    if (!complete_) progress(true);  // a request freed while active completes here
  }
  void start() override {}  // started at creation
  bool progress(bool block) override {
    if (complete_) return true;
    Inside inside;
    if (!p_->node->progress(*op_, block)) return false;
    complete_ = true;
    if (const int rc = NodeExchange::op_code(*op_); rc != MPI_SUCCESS) node_error(comm_, k_, rc);
    return true;
  }

 private:
  std::shared_ptr<CommPlans> p_;
  std::shared_ptr<NodeExchange::Op> op_;
  MPI_Comm comm_;
  Kind k_;
  bool complete_ = false;
};

// A blocking or non-blocking call on a communicator whose calls go through the one-node
// exchange: the call's code (its errors through the communicator's handler), a request for
// a non-blocking one. Else -1. Non-blocking calls use the exchange only once a blocking
// call has set it up (the set-up is collective; a non-blocking call's initiation must not
// wait for other ranks); persistent requests keep their own agreed plans.
int node_call(int entry, Kind k, Mode mode, MPI_Request* request, NodeExchange::Shape shape,
              const NodeExchange::Side& send, const NodeExchange::Side& recv, MPI_Comm comm) {
  Global& g = global();
  if (mode == kPersistent || depth() > 0 || g.disabled) return -1;
  std::shared_ptr<CommPlans> p = plans_of(g, comm);
  if (!p->node) return -1;
  Inside inside;
  ++g.handled[entry];
  // A negative count is an error of this rank alone, reported as MPI's own reports it
  // (MPI_ERR_COUNT through the communicator's handler) before anything moves.
  if (negative_count(send, p->nb.destinations.size()) || negative_count(recv, p->nb.sources.size()))
    return node_error(comm, k, MPI_ERR_COUNT);
  if (mode == kNonblocking) {
    auto op = p->node->start(shape, send, recv);
    *request = register_operation(std::make_unique<NodeOp>(std::move(p), std::move(op), comm, k), false, true);
    return MPI_SUCCESS;
  }
  const int rc = p->node->call(shape, send, recv);
  return rc == MPI_SUCCESS ? rc : node_error(comm, k, rc);
}

// The pass-through path at the cost of a shim. Where a blocking allgather or alltoall has
// settled on MPI's own — a communicator the layer cannot use, or one with the fixed-counts
// hint whose agreed choice for this signature is MPI's own (or was declined by its trial):
// for good; or auto stepping aside without the hint (steps_aside()): until its next
// agreement — the same communicator (and arguments, where they decide) go to MPI's own
// after a few compares of one cache line, instead of the entry's lookups (the
// communicator's entry, the signature's type queries, the shared pointers). Every call
// takes the path the full one would, so every rank still skips and agrees at the same
// calls. Why it matters: on an oversubscribed node a blocking exchange waits for every rank
// sharing a core to have run its part, so each rank's CPU per call, with its data cold
// after the context switches, adds up; the full path measured clearly above a one-line
// shim where the layer passes every call (experiments/pmpi/README.md). A datatype handle freed and
// made again as another type also passes at once: MPI's own is right for any arguments
// (the size check the hint implies is then MPI's).
bool passes_at_once(Kind k, MPI_Comm comm, const void* sb, int sc, MPI_Datatype st, int rc, MPI_Datatype rt) {
  Global::Settled& e = global().settled[k];
  if (comm != e.comm) return false;
  if (e.owner) {  // skip_agreement() without the rest of the path
    CommPlans::Aside& a = e.owner->aside[k];
    if (!a.skipping || a.left <= 1) return false;
    --a.left;
    return true;
  }
  return sc == e.sc && rc == e.rc && st == e.st && rt == e.rt && (sb == MPI_IN_PLACE) == e.in_place;
}

// After a blocking call that went to MPI's own: remembers the communicator (and the
// arguments, where they decide) if decide() found that later calls will go there too
// (`shortcut`; see passes_at_once).
void note_settled(Kind k, MPI_Comm comm, const void* sb, int sc, MPI_Datatype st, int rc, MPI_Datatype rt,
                  const Shortcut& shortcut) {
  Global& g = global();
  if (!shortcut.aside && !shortcut.settled) return;
  plans_of(g, comm);  // (the entry's attribute value: g.last_plans)
  if (shortcut.aside) g.settled[k] = {comm, g.last_plans, shortcut.aside};
  else g.settled[k] = {comm, g.last_plans, nullptr, sb == MPI_IN_PLACE, sc, rc, st, rt};
}

// The four call shapes, each for blocking (request == null), non-blocking and persistent
// use; `entry` is the counter (kEntryName), `pass` the call to MPI's own.

// The two of one block per neighbor (allgather, alltoall): the same path but for how a
// plan's execution begins (`begin_of(choice)`) and completes (`finish_of(plans, choice,
// block bytes)`, called with `block`: whether it may wait).
template <class Pass, class BeginOf, class FinishOf>
int fixed_call(int entry, Kind kind, NodeExchange::Shape shape, Mode mode, const void* sendbuf, int sendcount,
               MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
               MPI_Request* request, Pass pass, BeginOf begin_of, FinishOf finish_of) {
  if (mode == kBlocking && passes_at_once(kind, comm, sendbuf, sendcount, sendtype, recvcount, recvtype)) {
    ++global().passed[entry];
    return pass();
  }
  if (passed_for_threads()) return pass();
  const NodeExchange::Side snd{sendbuf, sendcount, nullptr, nullptr, sendtype};
  const NodeExchange::Side rcv{recvbuf, recvcount, nullptr, nullptr, recvtype};
  if (const int rc = node_call(entry, kind, mode, request, shape, snd, rcv, comm); rc >= 0) return rc;
  const int64_t sig = signature(sendbuf, sendcount, sendtype, recvcount, recvtype);
  bool passed_on = false;
  Shortcut shortcut;
  const int result = dispatch(
      comm, kind, entry,
      [&](bool* broken) {
        auto c = decide(comm, kind, sig, mode, broken, &shortcut);
        return mode == kBlocking ? c : pollable(c);
      },
      pass,
      [&](const std::shared_ptr<Choice>& c) {
        const std::shared_ptr<CommPlans> p = plans_of(global(), comm);
        auto begin = begin_of(c.get());
        auto finish = finish_of(p, c.get(), static_cast<size_t>(sig));
        if (mode == kBlocking) run_blocking(*c, begin, finish);
        else *request = plan_request(c, mode == kPersistent, begin, finish);
        return MPI_SUCCESS;
      },
      &passed_on);
  if (passed_on && mode == kBlocking) note_settled(kind, comm, sendbuf, sendcount, sendtype, recvcount, recvtype, shortcut);
  return result;
}

template <class Pass>
int allgather_call(int entry, Mode mode, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request, Pass pass) {
  return fixed_call(
      entry, kAllgather, NodeExchange::kOneBlock, mode, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
      comm, request, pass,
      [sendbuf](Choice* cp) {
        return [cp, sendbuf] {
          if (cp->halo) halo_begin(*cp, sendbuf);
          else gather_begin(*cp, sendbuf);
        };
      },
      [sendbuf, recvbuf](const std::shared_ptr<CommPlans>& p, Choice* cp, size_t B) {
        return [p, cp, sendbuf, recvbuf, B](bool block) {
          return allgather_finish(p->nb, *cp, sendbuf, recvbuf, B, block);
        };
      });
}

template <class Pass>
int alltoall_call(int entry, Mode mode, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request, Pass pass) {
  return fixed_call(
      entry, kAlltoall, NodeExchange::kBlocks, mode, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
      request, pass, [sendbuf](Choice* cp) { return [cp, sendbuf] { halo_begin(*cp, sendbuf); }; },
      [sendbuf, recvbuf](const std::shared_ptr<CommPlans>& p, Choice* cp, size_t B) {
        return [p, cp, sendbuf, recvbuf, B](bool block) {
          if (!halo_complete(*cp, recvbuf, block)) return false;
          copy_self(p->nb, sendbuf, recvbuf, B, Layout{}, Layout{});
          return true;
        };
      });
}

template <class Pass>
int allgatherv_call(int entry, Mode mode, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                    MPI_Request* request, Pass pass) {
  if (passed_for_threads()) return pass();
  const NodeExchange::Side snd{sendbuf, sendcount, nullptr, nullptr, sendtype};
  const NodeExchange::Side rcv{recvbuf, 0, recvcounts, displs, recvtype};
  if (const int rc = node_call(entry, kAllgatherv, mode, request, NodeExchange::kOneBlock, snd, rcv, comm); rc >= 0)
    return rc;
  // Signature: my block's bytes, the receive type's size and the receive counts (the plan
  // learns the sources' sizes when built; displacements only place the copies).
  const int64_t sb = sendbuf == MPI_IN_PLACE ? -1 : contiguous_bytes(sendtype, sendcount);
  const int64_t rsize = contiguous_bytes(recvtype, 1);
  return dispatch(
      comm, kAllgatherv, entry,
      [&](bool* broken) {
        const Neighbors& nb = plans_of(global(), comm)->nb;
        uint64_t h = hash_ints(1469598103934665603ULL, recvcounts, nb.sources.size());
        const int head[2] = {static_cast<int>(sb), static_cast<int>(rsize)};
        h = hash_ints(h, head, 2);
        const bool can = sb >= 0 && rsize > 0 && sb <= INT32_MAX && !any_negative(recvcounts, nb.sources.size());
        // (a block sent to no destination moves nothing; one sent where every receiver
        // expects none is a count mismatch the plan reports, so it counts as moving)
        const bool moves = (sb > 0 && !nb.destinations.empty()) || any_nonzero(recvcounts, nb.sources.size());
        auto c = decide_v(
            comm, kAllgatherv, can, moves, h, mode,
            [&](CommPlans& p) { return build_gather(p, comm, kAllgatherv, sb, false, "variable blocks"); }, broken);
        return mode == kBlocking ? c : pollable(c);
      },
      pass,
      [&](const std::shared_ptr<Choice>& c) {
        const std::shared_ptr<CommPlans> p = plans_of(global(), comm);
        Choice* cp = c.get();
        // The arrays are the caller's until completion (MPI), but a copy costs nothing here.
        std::vector<int> rc(recvcounts, recvcounts + p->nb.sources.size());
        std::vector<int> rd(displs, displs + p->nb.sources.size());
        auto begin = [cp, sendbuf] {
          if (cp->halo) halo_begin(*cp, sendbuf);
          else gather_begin(*cp, sendbuf);
        };
        bool ok = true;
        if (mode == kBlocking) {
          run_blocking(*c, begin, [&](bool block) {
            return allgatherv_finish(p->nb, *cp, sendbuf, sb, recvbuf, rc.data(), rd.data(), rsize, block, &ok);
          });
          return ok ? MPI_SUCCESS : count_mismatch(comm, kAllgatherv);
        }
        auto finish = [p, cp, sendbuf, sb, recvbuf, rc, rd, rsize, comm](bool block) {
          bool fine = true;
          if (!allgatherv_finish(p->nb, *cp, sendbuf, sb, recvbuf, rc.data(), rd.data(), rsize, block, &fine))
            return false;
          if (!fine) count_mismatch(comm, kAllgatherv);
          return true;
        };
        *request = plan_request(c, mode == kPersistent, begin, finish);
        return MPI_SUCCESS;
      });
}

template <class Pass>
int alltoallv_call(int entry, Mode mode, const void* sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request, Pass pass) {
  if (passed_for_threads()) return pass();
  const NodeExchange::Side snd{sendbuf, 0, sendcounts, sdispls, sendtype};
  const NodeExchange::Side rcv{recvbuf, 0, recvcounts, rdispls, recvtype};
  if (const int rc = node_call(entry, kAlltoallv, mode, request, NodeExchange::kBlocksV, snd, rcv, comm); rc >= 0)
    return rc;
  // One unit: the (equal) size of the two types; the plan depends on counts and displacements.
  const int64_t unit = contiguous_bytes(sendtype, 1);
  return dispatch(
      comm, kAlltoallv, entry,
      [&](bool* broken) {
        const Neighbors& nb = plans_of(global(), comm)->nb;
        const size_t out = nb.destinations.size(), in = nb.sources.size();
        uint64_t h = hash_ints(1469598103934665603ULL, sendcounts, out);
        h = hash_ints(h, sdispls, out);
        h = hash_ints(h, recvcounts, in);
        h = hash_ints(h, rdispls, in);
        const int head = static_cast<int>(unit);
        h = hash_ints(h, &head, 1);
        // (negative displacements, which MPI allows, address bytes before the buffer: a plan's
        // pattern holds positions inside it, so such calls are MPI's own)
        const bool can = sendbuf != MPI_IN_PLACE && unit > 0 && unit == contiguous_bytes(recvtype, 1) &&
                         !any_negative(sendcounts, out) && !any_negative(recvcounts, in) &&
                         !any_negative(sdispls, out) && !any_negative(rdispls, in);
        const bool moves = any_nonzero(sendcounts, out) || any_nonzero(recvcounts, in);
        auto c = decide_v(
            comm, kAlltoallv, can, moves, h, mode,
            [&](CommPlans& p) {
              return build_halo(p, comm, kAlltoallv, unit, Layout{sendcounts, sdispls}, Layout{recvcounts, rdispls},
                                "variable blocks");
            },
            broken);
        return mode == kBlocking ? c : pollable(c);
      },
      pass,
      [&](const std::shared_ptr<Choice>& c) {
        const std::shared_ptr<CommPlans> p = plans_of(global(), comm);
        Choice* cp = c.get();
        const size_t out = p->nb.destinations.size(), in = p->nb.sources.size();
        std::vector<int> sc(sendcounts, sendcounts + out), sd(sdispls, sdispls + out), rd(rdispls, rdispls + in);
        auto begin = [cp, sendbuf] { halo_begin(*cp, sendbuf); };
        auto finish = [p, cp, sendbuf, recvbuf, unit, sc, sd, rd](bool block) {
          if (!halo_complete(*cp, recvbuf, block)) return false;
          copy_self(p->nb, sendbuf, recvbuf, static_cast<size_t>(unit), Layout{sc.data(), sd.data()},
                    Layout{nullptr, rd.data()});
          return true;
        };
        if (mode == kBlocking) run_blocking(*c, begin, finish);
        else *request = plan_request(c, mode == kPersistent, begin, finish);
        return MPI_SUCCESS;
      });
}

}  // namespace
}  // namespace sparsecomm::pmpi

SPC_EXPORT int MPI_Neighbor_allgather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt,
                                      MPI_Comm comm) {
  return allgather_call(0, kBlocking, sb, sc, st, rb, rc, rt, comm, nullptr,
                        [&] { return PMPI_Neighbor_allgather(sb, sc, st, rb, rc, rt, comm); });
}

SPC_EXPORT int MPI_Ineighbor_allgather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt,
                                       MPI_Comm comm, MPI_Request* req) {
  if (from_fortran_binding(__builtin_return_address(0))) {  // (MPI's own: see there)
    ++global().passed[2];
    return PMPI_Ineighbor_allgather(sb, sc, st, rb, rc, rt, comm, req);
  }
  return allgather_call(2, kNonblocking, sb, sc, st, rb, rc, rt, comm, req,
                        [&] { return PMPI_Ineighbor_allgather(sb, sc, st, rb, rc, rt, comm, req); });
}

SPC_EXPORT int MPI_Neighbor_alltoall(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt,
                                     MPI_Comm comm) {
  return alltoall_call(1, kBlocking, sb, sc, st, rb, rc, rt, comm, nullptr,
                       [&] { return PMPI_Neighbor_alltoall(sb, sc, st, rb, rc, rt, comm); });
}

SPC_EXPORT int MPI_Ineighbor_alltoall(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt,
                                      MPI_Comm comm, MPI_Request* req) {
  if (from_fortran_binding(__builtin_return_address(0))) {  // (MPI's own: see there)
    ++global().passed[8];
    return PMPI_Ineighbor_alltoall(sb, sc, st, rb, rc, rt, comm, req);
  }
  return alltoall_call(8, kNonblocking, sb, sc, st, rb, rc, rt, comm, req,
                       [&] { return PMPI_Ineighbor_alltoall(sb, sc, st, rb, rc, rt, comm, req); });
}

SPC_EXPORT int MPI_Neighbor_allgatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int rc[],
                                       const int rd[], MPI_Datatype rt, MPI_Comm comm) {
  return allgatherv_call(4, kBlocking, sb, sc, st, rb, rc, rd, rt, comm, nullptr,
                         [&] { return PMPI_Neighbor_allgatherv(sb, sc, st, rb, rc, rd, rt, comm); });
}

SPC_EXPORT int MPI_Ineighbor_allgatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int rc[],
                                        const int rd[], MPI_Datatype rt, MPI_Comm comm, MPI_Request* req) {
  if (from_fortran_binding(__builtin_return_address(0))) {  // (MPI's own: see there)
    ++global().passed[6];
    return PMPI_Ineighbor_allgatherv(sb, sc, st, rb, rc, rd, rt, comm, req);
  }
  return allgatherv_call(6, kNonblocking, sb, sc, st, rb, rc, rd, rt, comm, req,
                         [&] { return PMPI_Ineighbor_allgatherv(sb, sc, st, rb, rc, rd, rt, comm, req); });
}

SPC_EXPORT int MPI_Neighbor_alltoallv(const void* sb, const int sc[], const int sd[], MPI_Datatype st, void* rb,
                                      const int rc[], const int rd[], MPI_Datatype rt, MPI_Comm comm) {
  return alltoallv_call(5, kBlocking, sb, sc, sd, st, rb, rc, rd, rt, comm, nullptr,
                        [&] { return PMPI_Neighbor_alltoallv(sb, sc, sd, st, rb, rc, rd, rt, comm); });
}

SPC_EXPORT int MPI_Ineighbor_alltoallv(const void* sb, const int sc[], const int sd[], MPI_Datatype st, void* rb,
                                       const int rc[], const int rd[], MPI_Datatype rt, MPI_Comm comm,
                                       MPI_Request* req) {
  if (from_fortran_binding(__builtin_return_address(0))) {  // (MPI's own: see there)
    ++global().passed[10];
    return PMPI_Ineighbor_alltoallv(sb, sc, sd, st, rb, rc, rd, rt, comm, req);
  }
  return alltoallv_call(10, kNonblocking, sb, sc, sd, st, rb, rc, rd, rt, comm, req,
                        [&] { return PMPI_Ineighbor_alltoallv(sb, sc, sd, st, rb, rc, rd, rt, comm, req); });
}

// The persistent neighborhood collectives (MPI-4 section 6.13), under each spelling this MPI
// has (found by compiling against it, cmake/SparsecommMpi.cmake); each passes what it does not
// handle to the PMPI_ entry of the same spelling. One definition serves both spellings: the
// macro's X is the prefix (MPI or MPIX), so the four functions cannot drift apart.
#define SPC_PERSISTENT_NEIGHBOR_COLLECTIVES(X)                                                                    \
  SPC_EXPORT int X##_Neighbor_allgather_init(const void* sb, int sc, MPI_Datatype st, void* rb, int rc,          \
                                             MPI_Datatype rt, MPI_Comm comm, MPI_Info info, MPI_Request* req) { \
    if (from_fortran_binding(__builtin_return_address(0))) { /* (MPI's own: see there) */                      \
      ++global().passed[3];                                                                                     \
      return P##X##_Neighbor_allgather_init(sb, sc, st, rb, rc, rt, comm, info, req);                          \
    }                                                                                                           \
    return allgather_call(3, kPersistent, sb, sc, st, rb, rc, rt, comm, req,                                    \
                          [&] { return P##X##_Neighbor_allgather_init(sb, sc, st, rb, rc, rt, comm, info, req); }); \
  }                                                                                                             \
  SPC_EXPORT int X##_Neighbor_alltoall_init(const void* sb, int sc, MPI_Datatype st, void* rb, int rc,           \
                                            MPI_Datatype rt, MPI_Comm comm, MPI_Info info, MPI_Request* req) {  \
    if (from_fortran_binding(__builtin_return_address(0))) {                                                    \
      ++global().passed[9];                                                                                     \
      return P##X##_Neighbor_alltoall_init(sb, sc, st, rb, rc, rt, comm, info, req);                           \
    }                                                                                                           \
    return alltoall_call(9, kPersistent, sb, sc, st, rb, rc, rt, comm, req,                                     \
                         [&] { return P##X##_Neighbor_alltoall_init(sb, sc, st, rb, rc, rt, comm, info, req); }); \
  }                                                                                                             \
  SPC_EXPORT int X##_Neighbor_allgatherv_init(const void* sb, int sc, MPI_Datatype st, void* rb, const int rc[], \
                                              const int rd[], MPI_Datatype rt, MPI_Comm comm, MPI_Info info,    \
                                              MPI_Request* req) {                                               \
    if (from_fortran_binding(__builtin_return_address(0))) {                                                    \
      ++global().passed[7];                                                                                     \
      return P##X##_Neighbor_allgatherv_init(sb, sc, st, rb, rc, rd, rt, comm, info, req);                     \
    }                                                                                                           \
    return allgatherv_call(7, kPersistent, sb, sc, st, rb, rc, rd, rt, comm, req, [&] {                         \
      return P##X##_Neighbor_allgatherv_init(sb, sc, st, rb, rc, rd, rt, comm, info, req);                     \
    });                                                                                                         \
  }                                                                                                             \
  SPC_EXPORT int X##_Neighbor_alltoallv_init(const void* sb, const int sc[], const int sd[], MPI_Datatype st,    \
                                             void* rb, const int rc[], const int rd[], MPI_Datatype rt,         \
                                             MPI_Comm comm, MPI_Info info, MPI_Request* req) {                  \
    if (from_fortran_binding(__builtin_return_address(0))) {                                                    \
      ++global().passed[11];                                                                                    \
      return P##X##_Neighbor_alltoallv_init(sb, sc, sd, st, rb, rc, rd, rt, comm, info, req);                  \
    }                                                                                                           \
    return alltoallv_call(11, kPersistent, sb, sc, sd, st, rb, rc, rd, rt, comm, req, [&] {                     \
      return P##X##_Neighbor_alltoallv_init(sb, sc, sd, st, rb, rc, rd, rt, comm, info, req);                  \
    });                                                                                                         \
  }

#ifdef SPARSECOMM_HAVE_MPI4_NEIGHBOR_INIT
SPC_PERSISTENT_NEIGHBOR_COLLECTIVES(MPI)  // MPI-4's names (MPICH 4, Open MPI 5)
#endif
#ifdef SPARSECOMM_HAVE_MPIX_NEIGHBOR_INIT
SPC_PERSISTENT_NEIGHBOR_COLLECTIVES(MPIX)  // Open MPI 4.1's names (its pcollreq extension)
#endif
