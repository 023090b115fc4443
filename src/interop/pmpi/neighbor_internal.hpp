#pragma once
// The internals of the PMPI layer's neighborhood collectives (pmpi_neighbor.cpp: what the
// layer does and why), shared by its files: the settings and per-communicator state
// (neighbor_settings.cpp), the choice of a plan (neighbor_choice.cpp), the agreement
// before a call (neighbor_agreement.cpp) and the execution on a plan (neighbor_exec.cpp).
// Not installed; nothing here is part of any interface.
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

#include "interop/common/pipeline.hpp"
#include "interop/pmpi/comm_info.hpp"
#include "comm/node_exchange.hpp"
#include "core/mpi_datatype.hpp"
#include "interop/pmpi/requests.hpp"
#include "sparsecomm/comm/combining.hpp"
#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/plan/combining_options.hpp"
#include "sparsecomm/comm/plan/model.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "sparsecomm/interop/environment.hpp"
#include "core/handle.hpp"

namespace sparsecomm::pmpi::neighborhood {

using detail::NodeExchange;  // (comm/node_exchange.hpp: auto's one-node exchange)


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

// node_area (SPARSECOMM_MPI_NODE_AREA, sparsecomm_node_area): default and bound. The bound
// keeps every offset into a writer's buffer an int (MPI_Pack's) and two buffers per rank and
// communicator within a node's shared memory; larger blocks go by message anyway.
constexpr int64_t kNodeAreaDefault = 128 * 1024, kNodeAreaMax = int64_t{1} << 30;
// shm_block_max (SPARSECOMM_MPI_SHM_BLOCK_MAX, sparsecomm_shm_block_max): auto's largest
// alltoall block for the shm plan on one node, and the one-node exchange's largest block
// through shared memory (a larger one is a message). The default: the shm halo plan copies
// a block three times (pack, window, unpack) where MPI's own large-message path may copy it
// once, so only small blocks go through the window (the measurement behind the value:
// experiments/pmpi/README.md, "The one-node rule"). Bounded as node_area.
constexpr int64_t kShmBlockMaxDefault = 16384;
// one_node (SPARSECOMM_MPI_ONE_NODE, sparsecomm_one_node): what auto does where every rank
// of a communicator shares one node. exchange: blocking calls without the hint set up the
// one-node exchange (node_exchange.hpp) and the others take the shm plans; shm: the shm
// plans for every call (blocking ones without the hint measured first, trial_keeps); off:
// no rule of its own, auto weighs the plans by the model as across nodes.
const char* const kOneNodeValues[3] = {"exchange", "shm", "off"};

// Settings from the environment; MPI_Info keys on a communicator override them there.
struct Settings {
  std::string backend = interop::default_backend(interop::EntryPoint::pmpi), regions = "node";
  int k = 0;       // combining group size; 0: the backend's default
  int aware = -1;  // topology-aware combining; -1: the backend's default
  bool fixed = false;
  std::string one_node = "exchange";  // auto's rule on one node (kOneNodeValues)
  int64_t shm_block_max = kShmBlockMaxDefault;
  int64_t node_area = kNodeAreaDefault;  // the exchange's shared bytes per writer and call (may differ by rank)
  std::string bad;            // the first value that did not parse (environment or MPI_Info), or ""
};

using interop::read_bytes, interop::read_flag, interop::read_int;  // into Settings::bad, see check_settings
// (neighbor_settings.cpp) one_node's value `v` from `name` into s->one_node, or s->bad.
void read_one_node(Settings* s, const std::string& name, const std::string& v);
void read_environment(Settings* s);
// (neighbor_settings.cpp)
std::vector<NamedValue> shared_settings(const Settings& s, bool disabled);

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
    read_environment(&env);
    if (const char* v = get("SPARSECOMM_MPI_VERBOSE")) read_flag(&env.bad, "SPARSECOMM_MPI_VERBOSE", v, &verbose);
    // A value that does not say "disable" leaves the layer on, to report it at the first call.
    if (const char* v = get("SPARSECOMM_MPI_DISABLE")) read_flag(&env.bad, "SPARSECOMM_MPI_DISABLE", v, &disabled);
    apply_environment();  // the library's own variables, once with the layer's
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

Global& global();

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

// (neighbor_settings.cpp)
int delete_plans(MPI_Comm, int, void* value, void*);
std::shared_ptr<CommPlans> plans_of(Global& g, MPI_Comm comm);

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
  interop::PlanCache<int64_t, std::shared_ptr<Choice>> cache[2];  // allgather, alltoall: per block size
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

// How much faster the model must predict the combining plan before `auto` takes it over
// MPI's own. The model's default constants are not this machine's: with a 5% margin auto
// took combining on ER 0.4 and on 1-KiB Moore blocks, where it measured slower than Open
// MPI's own, while the cases where combining paid predict well above this margin (the
// runs: experiments/pmpi/README.md and its git history).
constexpr double kAutoMargin = 1.3;

// (neighbor_choice.cpp)
int64_t contiguous_bytes(MPI_Datatype t, int count);
std::string check_settings(const Settings& s, int size);
constexpr const char* kWho = "sparsecomm mpi";  // how the layer's messages begin (interop::exit_on_every_rank)
void report(const CommPlans& p, MPI_Comm comm, Kind k, const std::string& label, const std::string& what);
bool shm_whole_node(CommPlans& p, MPI_Comm comm);
Pattern allgather_pattern(const Neighbors& nb, int me);
double agreement_cost(CommPlans& p, MPI_Comm comm);
std::shared_ptr<Choice> build_gather(CommPlans& p, MPI_Comm comm, Kind k, int64_t bytes, bool same_count,
                                     const std::string& label);
std::shared_ptr<Choice> build_halo(CommPlans& p, MPI_Comm comm, Kind k, int64_t unit, Layout out, Layout in,
                                   const std::string& label);
std::shared_ptr<Choice> nothing_to_move(CommPlans& p, MPI_Comm comm, Kind k, const std::string& label);
std::shared_ptr<Choice> build_choice(CommPlans& p, MPI_Comm comm, Kind k, int64_t bytes);

// What decide() and decide_v() share before and during the agreement.
struct Prologue {
  bool done = false;                // the outcome is known without agreeing: `choice`
  bool settled = false;             // ... and for every later call with this signature too
  std::shared_ptr<Choice> choice;   // (null: MPI's own)
  std::shared_ptr<CommPlans> p;     // the communicator's entry, when not done
  int64_t local = -1;               // the local signature, -1 where this rank cannot
};

// Where decide() found that later calls will take its path without agreeing (for
// passes_at_once): `settled`, every later call with the same signature (prologue()); or
// `aside`, auto stepping aside, every call until its next agreement.
struct Shortcut {
  bool settled = false;
  CommPlans* aside = nullptr;
};

// (neighbor_agreement.cpp)
std::array<long long, 3> agree(MPI_Comm comm, const CommPlans& p, const std::array<long long, 3>& in);
Prologue prologue(MPI_Comm comm, Kind k, int64_t local, Mode mode, bool* broken);
bool steps_aside(const CommPlans& p, Mode mode);
bool skip_agreement(CommPlans& p, Kind k);
void note_outcome(CommPlans& p, MPI_Comm comm, Kind k, bool plan);
bool before_agreement(CommPlans& p, Kind k, Mode mode);
std::shared_ptr<Choice> after_agreement(CommPlans& p, MPI_Comm comm, Kind k, Mode mode,
                                        const std::shared_ptr<Choice>& c);
bool starts_node_exchange(CommPlans& p, MPI_Comm comm, Kind k, Mode mode);
std::shared_ptr<Choice> decide(MPI_Comm comm, Kind k, int64_t local, Mode mode, bool* broken,
                               Shortcut* shortcut);

// Depth of the layer's own work on this process: the plans it runs call MPI themselves
// (the neighbor backends call MPI_Ineighbor_allgatherv / _alltoallv on communicators of
// their own), and those calls must go to MPI, not back into the layer.
int& depth();
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

// (neighbor_exec.cpp)
uint64_t hash_ints(uint64_t h, const int* v, size_t n);
bool any_nonzero(const int* v, size_t n);
bool any_negative(const int* v, size_t n);
bool negative_count(const NodeExchange::Side& s, size_t n);
int64_t signature(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int recvcount, MPI_Datatype recvtype);
int broken_promise(MPI_Comm comm, Kind k);
void deliver(const Neighbors& nb, const char* staged, const void* send, void* recv, size_t B);
bool passed_for_threads();
bool from_fortran_binding(const void* caller);
void gather_begin(Choice& c, const void* send);
void halo_begin(Choice& c, const void* send);
bool halo_complete(Choice& c, void* recv, bool block);
bool allgather_finish(const Neighbors& nb, Choice& c, const void* send, void* recv, size_t B, bool block);
bool allgatherv_finish(const Neighbors& nb, Choice& c, const void* send, int64_t send_bytes, void* recv,
                       const int* rcounts, const int* displs, int64_t rsize, bool block, bool* ok);
void copy_self(const Neighbors& nb, const void* send, void* recv, size_t unit, Layout out, Layout in);

}  // namespace sparsecomm::pmpi::neighborhood
