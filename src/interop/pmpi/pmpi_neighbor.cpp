// libsparsecomm_mpi.so: MPI's neighborhood collectives through sparsecomm's gather plans,
// for an unmodified MPI program, through the MPI profiling interface:
//
//   LD_PRELOAD=/path/libsparsecomm_mpi.so mpirun -np 32 ./app
//
// FIRST SLICE of issue 32 (the rest is passed on, see below). Handled: the blocking
// MPI_Neighbor_allgather (gather plans) and MPI_Neighbor_alltoall (halo plans, one entry
// per edge) on a distributed-graph communicator whose neighbor lists have no duplicate
// edge and no self edge, with contiguous send and receive types of the same byte size on
// every rank. Everything else goes to PMPI_Neighbor_allgather / _alltoall unchanged, and
// every other MPI_Neighbor_* / MPI_Ineighbor_* function is not defined here at all (MPI's
// own): allgatherv, alltoallv, alltoallw, the non-blocking and persistent forms, Cartesian
// communicators.
//
// Correctness across ranks: a plan is built collectively, and ranks must agree to use it.
// MPI lets block sizes differ between calls and between ranks (only each sender-receiver
// pair must match), so every call first agrees with one PMPI_Allreduce of three integers
// (can this rank run it, its block size as min and max): all ranks then take the same
// path, the plan (cached per communicator and block size) or PMPI. That allreduce is the
// per-call price of the guarantee (a few microseconds at tens of ranks); a hint that counts
// are fixed would remove it (not implemented yet).
//
// Lifetime: the plans hang on the communicator as an attribute whose delete callback frees
// them at MPI_Comm_free, so a reused handle never finds an old plan.
//
// Environment: SPARSECOMM_MPI_BACKEND (a gather backend: combined (default), p2p,
// neighbor), SPARSECOMM_MPI_REGIONS (default node), SPARSECOMM_MPI_VERBOSE=1 (per
// communicator what was built, and at exit per rank the calls handled and passed on),
// SPARSECOMM_MPI_DISABLE=1. A bad value: every rank prints the error and exits (status 2)
// at the first call, agreed by the same allreduce.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "interop/mpi_datatype.hpp"

namespace sparsecomm::pmpi {
namespace {

struct Settings {
  std::string backend = "combined", regions = "node";
  bool verbose = false, disabled = false;
};

Settings read_settings() {
  Settings s;
  if (const char* v = std::getenv("SPARSECOMM_MPI_BACKEND"); v && *v) s.backend = v;
  if (const char* v = std::getenv("SPARSECOMM_MPI_REGIONS"); v && *v) s.regions = v;
  if (const char* v = std::getenv("SPARSECOMM_MPI_VERBOSE"); v && *v && std::strcmp(v, "0") != 0) s.verbose = true;
  if (const char* v = std::getenv("SPARSECOMM_MPI_DISABLE"); v && *v && std::strcmp(v, "0") != 0) s.disabled = true;
  return s;
}

// What one communicator carries: its neighbors in MPI's order, the order the plan delivers
// (sorted), and a plan per block size.
struct CommPlans {
  std::vector<int> sources, destinations;  // as MPI_Dist_graph_neighbors returns them
  bool usable = false;                     // no duplicate or self edge
  std::unique_ptr<Locality> loc;
  std::map<int64_t, std::unique_ptr<GatherPlan>> by_bytes;
  std::map<int64_t, std::unique_ptr<Plan>> alltoall_by_bytes;  // MPI_Neighbor_alltoall
  std::vector<char> staging;  // the plan's source order when MPI's order differs
  bool sorted_sources = true;
  std::vector<size_t> source_slot;  // MPI's source i arrives as the plan's block source_slot[i]
};

struct State {
  Settings settings = read_settings();
  bool checked = false;
  int keyval = MPI_KEYVAL_INVALID;
  long handled = 0, passed = 0, a2a_handled = 0, a2a_passed = 0;
  int world_rank = -1;
  ~State() {
    if (settings.verbose)
      std::fprintf(stderr,
                   "sparsecomm mpi [rank %d]: MPI_Neighbor_allgather: %ld calls through sparsecomm, %ld passed to MPI; "
                   "MPI_Neighbor_alltoall: %ld through sparsecomm, %ld passed to MPI\n",
                   world_rank, handled, passed, a2a_handled, a2a_passed);
  }
};

State& state() {
  static State s;
  return s;
}

int delete_plans(MPI_Comm, int, void* value, void*) {
  delete static_cast<CommPlans*>(value);
  return MPI_SUCCESS;
}

// A run of one named type without holes or offset (named, contiguous or dup over one):
// its size in bytes; -1 otherwise.
int64_t contiguous_bytes(MPI_Datatype t, int count) {
  MPI_Datatype base = MPI_DATATYPE_NULL;
  int n = 0;
  if (!interop::flatten_contiguous(t, &base, &n)) return -1;
  int size = 0;
  MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
  MPI_Type_size(t, &size);
  MPI_Type_get_extent(t, &lb, &extent);
  MPI_Type_get_true_extent(t, &tlb, &textent);
  if (lb != 0 || tlb != 0 || extent != size || textent != size) return -1;  // holes or offsets
  return static_cast<int64_t>(size) * count;
}

// This communicator's entry (created on first use; not collective).
CommPlans* plans_of(State& s, MPI_Comm comm) {
  if (s.keyval == MPI_KEYVAL_INVALID) PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_plans, &s.keyval, nullptr);
  void* v = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, s.keyval, &v, &found);
  if (found) return static_cast<CommPlans*>(v);
  auto* p = new CommPlans();
  int indeg = 0, outdeg = 0, weighted = 0;
  PMPI_Dist_graph_neighbors_count(comm, &indeg, &outdeg, &weighted);
  p->sources.resize(static_cast<size_t>(indeg));
  p->destinations.resize(static_cast<size_t>(outdeg));
  std::vector<int> sw(static_cast<size_t>(indeg) + 1), dw(static_cast<size_t>(outdeg) + 1);
  PMPI_Dist_graph_neighbors(comm, indeg, p->sources.data(), sw.data(), outdeg, p->destinations.data(), dw.data());
  int me = 0;
  PMPI_Comm_rank(comm, &me);
  const auto clean = [me](std::vector<int> v) {
    for (int r : v)
      if (r == me) return false;
    std::sort(v.begin(), v.end());
    return std::adjacent_find(v.begin(), v.end()) == v.end();
  };
  p->usable = clean(p->sources) && clean(p->destinations);
  p->sorted_sources = std::is_sorted(p->sources.begin(), p->sources.end());
  std::vector<int> sorted(p->sources);
  std::sort(sorted.begin(), sorted.end());
  for (int r : p->sources)
    p->source_slot.push_back(static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), r) - sorted.begin()));
  PMPI_Comm_set_attr(comm, s.keyval, p);
  return p;
}

// Collective over comm (every rank is in this call): whether every rank can run this call
// through a plan with the same block size. One PMPI_Allreduce of {cannot, -bytes, bytes,
// bad setting} (max of each): every rank takes the same path. Settings are checked at the
// first call; a bad one ends every rank with the reason.
CommPlans* agree(State& s, MPI_Comm comm, int local_ok, int64_t bytes) {
  int topo = MPI_UNDEFINED;
  PMPI_Topo_test(comm, &topo);
  CommPlans* p = nullptr;
  if (topo == MPI_DIST_GRAPH) p = plans_of(s, comm);
  const int ok = local_ok && p && p->usable && bytes >= 0 ? 1 : 0;
  std::string error;
  if (!s.checked) {
    try {
      gather_backend_hooks(s.settings.backend);  // InputError listing the valid names
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  long long in[4] = {ok ? 0 : 1, -static_cast<long long>(bytes), static_cast<long long>(bytes), error.empty() ? 0 : 1};
  long long out[4];
  PMPI_Allreduce(in, out, 4, MPI_LONG_LONG, MPI_MAX, comm);
  if (out[3]) {
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    std::fprintf(stderr, "sparsecomm mpi [rank %d]: error: %s (SPARSECOMM_MPI_BACKEND='%s')\n", rank,
                 error.empty() ? "another rank rejected the settings" : error.c_str(), s.settings.backend.c_str());
    std::fflush(stderr);
    PMPI_Barrier(comm);  // every rank has said it before any exits (mpirun then stops the rest)
    std::exit(2);
  }
  s.checked = true;
  if (out[0] || -out[1] != out[2] || !p) return nullptr;  // some rank cannot, or sizes differ
  if (!p->loc) p->loc = std::make_unique<Locality>(Locality::parse(comm, s.settings.regions));
  return p;
}

void report_built(State& s, MPI_Comm comm, const char* call, int64_t bytes, const std::string& name) {
  if (!s.settings.verbose) return;
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  if (rank == 0)
    std::fprintf(stderr, "sparsecomm mpi: communicator %p, %s of %lld-byte blocks: %s plan built\n",
                 static_cast<void*>(comm), call, static_cast<long long>(bytes), name.c_str());
}

// Collective. The allgather plan for `bytes` on an agreed communicator.
GatherPlan* allgather_plan(State& s, MPI_Comm comm, CommPlans* p, int64_t bytes) {
  auto& plan = p->by_bytes[bytes];
  if (!plan) {
    Topology t;
    t.sources = p->sources, t.destinations = p->destinations;
    std::sort(t.sources.begin(), t.sources.end());
    std::sort(t.destinations.begin(), t.destinations.end());
    GatherOptions go;
    go.value_bytes = 1;
    go.same_count = true;
    plan = make_gather_plan(s.settings.backend, t, *p->loc, comm, bytes, go);
    report_built(s, comm, "MPI_Neighbor_allgather", bytes, plan->name());
    p->staging.resize(p->sources.size() * static_cast<size_t>(bytes) + 1);
  }
  return plan.get();
}

// Collective. The alltoall plan for `bytes` (> 0) on an agreed communicator: a halo
// Pattern with one entry per edge (block i of the send buffer goes to destination i in
// MPI's order; the block from source j lands at position j), ids unique per edge
// (sender * P + receiver). The backend: SPARSECOMM_MPI_BACKEND where it is also a halo
// backend (combined, p2p, neighbor), p2p otherwise.
Plan* alltoall_plan(State& s, MPI_Comm comm, CommPlans* p, int64_t bytes) {
  auto& plan = p->alltoall_by_bytes[bytes];
  if (!plan) {
    int me = 0, np = 1;
    PMPI_Comm_rank(comm, &me);
    PMPI_Comm_size(comm, &np);
    const auto side = [&](const std::vector<int>& mpi_order, bool send) {
      PatternSide ps;
      std::vector<int> order(mpi_order.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
      std::sort(order.begin(), order.end(), [&](int a, int b) { return mpi_order[a] < mpi_order[b]; });
      for (int i : order) {
        const int r = mpi_order[static_cast<size_t>(i)];
        ps.ranks.push_back(r);
        ps.offsets.push_back(static_cast<int64_t>(ps.ranks.size()));
        ps.indices.push_back(i);
        ps.global_ids.push_back(send ? static_cast<int64_t>(me) * np + r : static_cast<int64_t>(r) * np + me);
      }
      return ps;
    };
    Pattern pat(side(p->destinations, true), side(p->sources, false), static_cast<int32_t>(p->destinations.size()),
                static_cast<int32_t>(p->sources.size()));
    const auto names = backend_names();
    const std::string backend =
        std::find(names.begin(), names.end(), s.settings.backend) != names.end() ? s.settings.backend : "p2p";
    PlanOptions po;
    po.value_bytes = bytes % 8 == 0 ? 8 : bytes % 4 == 0 ? 4 : 1;
    po.width = static_cast<int>(bytes / po.value_bytes);
    plan = make_plan(backend, pat, *p->loc, comm, po);
    report_built(s, comm, "MPI_Neighbor_alltoall", bytes, plan->name());
  }
  return plan.get();
}

// A block of `N` bytes with no alignment assumption (the caller's buffers are bytes).
template <int N>
struct Block {
  unsigned char b[N];
};

void exchange_blocks(Plan& plan, const void* send, void* recv) {
  const int vb = plan.options().value_bytes;
  if (vb == 8) plan.exchange(static_cast<const Block<8>*>(send), static_cast<Block<8>*>(recv));
  else if (vb == 4) plan.exchange(static_cast<const Block<4>*>(send), static_cast<Block<4>*>(recv));
  else plan.exchange(static_cast<const Block<1>*>(send), static_cast<Block<1>*>(recv));
}

[[noreturn]] void fail(const std::exception& e) {
  std::fprintf(stderr, "sparsecomm mpi: error: %s\n", e.what());
  std::fflush(stderr);
  std::exit(2);  // agreed errors: every rank of the call ends here alike
}

// The agreed communicator entry of a call and its block size, or null to pass the call to
// MPI: the library disabled, an intercommunicator, or a call some rank cannot run.
CommPlans* prepare(State& s, MPI_Comm comm, const void* sendbuf, int sendcount, MPI_Datatype sendtype, int recvcount,
                   MPI_Datatype recvtype, int64_t* bytes) {
  if (s.world_rank < 0) PMPI_Comm_rank(MPI_COMM_WORLD, &s.world_rank);
  if (s.settings.disabled) return nullptr;
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) return nullptr;
  const int64_t sb = sendbuf == MPI_IN_PLACE ? -1 : contiguous_bytes(sendtype, sendcount);
  const int local_ok = sb >= 0 && sb == contiguous_bytes(recvtype, recvcount);
  *bytes = sb;
  try {
    return agree(s, comm, local_ok, local_ok ? sb : -1);
  } catch (const std::exception& e) {  // plan set-up failed on every rank alike (agreed errors)
    fail(e);
  }
}

}  // namespace
}  // namespace sparsecomm::pmpi

using namespace sparsecomm::pmpi;

extern "C" __attribute__((visibility("default"))) int MPI_Neighbor_allgather(const void* sendbuf, int sendcount,
                                                                           MPI_Datatype sendtype, void* recvbuf,
                                                                           int recvcount, MPI_Datatype recvtype,
                                                                           MPI_Comm comm) {
  State& s = state();
  int64_t sb = -1;
  CommPlans* p = prepare(s, comm, sendbuf, sendcount, sendtype, recvcount, recvtype, &sb);
  if (p && sb == 0) {  // agreed empty blocks: nothing moves
    ++s.handled;
    return MPI_SUCCESS;
  }
  if (!p) {
    ++s.passed;
    return PMPI_Neighbor_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  }
  const auto B = static_cast<size_t>(sb);
  try {
    sparsecomm::GatherPlan* plan = allgather_plan(s, comm, p, sb);
    if (p->sorted_sources) {
      plan->exchange(static_cast<const char*>(sendbuf), static_cast<char*>(recvbuf));
    } else {  // the plan delivers by sorted source; MPI wants the order of the graph's sources
      plan->exchange(static_cast<const char*>(sendbuf), p->staging.data());
      for (size_t i = 0; i < p->sources.size(); ++i)
        std::memcpy(static_cast<char*>(recvbuf) + i * B, p->staging.data() + p->source_slot[i] * B, B);
    }
  } catch (const std::exception& e) {
    fail(e);
  }
  ++s.handled;
  return MPI_SUCCESS;
}

extern "C" __attribute__((visibility("default"))) int MPI_Neighbor_alltoall(const void* sendbuf, int sendcount,
                                                                          MPI_Datatype sendtype, void* recvbuf,
                                                                          int recvcount, MPI_Datatype recvtype,
                                                                          MPI_Comm comm) {
  State& s = state();
  int64_t sb = -1;
  CommPlans* p = prepare(s, comm, sendbuf, sendcount, sendtype, recvcount, recvtype, &sb);
  if (p && sb == 0) {  // agreed empty blocks: nothing moves
    ++s.a2a_handled;
    return MPI_SUCCESS;
  }
  if (!p) {
    ++s.a2a_passed;
    return PMPI_Neighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  }
  try {
    exchange_blocks(*alltoall_plan(s, comm, p, sb), sendbuf, recvbuf);
  } catch (const std::exception& e) {
    fail(e);
  }
  ++s.a2a_handled;
  return MPI_SUCCESS;
}
