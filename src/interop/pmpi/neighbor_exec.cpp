// The PMPI layer's execution of a call on a plan (pmpi_neighbor.cpp: the layer).
#include "interop/pmpi/neighbor_internal.hpp"

namespace sparsecomm::pmpi::neighborhood {

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
  interop::report_error(comm, kWho,
                        std::string(kCallName[k]) + " on a communicator with fixed counts (sparsecomm_fixed_counts) "
                                                    "called with another block size or datatype than its first call");
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

// Depth of the layer's own work (neighbor_internal.hpp).
int& depth() {
  static int d = 0;
  return d;
}
// Each call shape as begin (start the plan) and finish (complete it, `block` or poll, and
// deliver into the caller's buffers; false: not yet): a blocking call runs both, a request
// runs them in MPI_Start and the completion calls.
void gather_begin(Choice& c, const void* send) { c.gather->start(static_cast<const char*>(send)); }

void halo_begin(Choice& c, const void* send) { c.halo->start(send); }  // as bytes: the plan's unit

bool halo_complete(Choice& c, void* recv, bool block) {
  if (!block) return c.halo->test(recv);
  c.halo->wait(recv);
  return true;
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

}  // namespace sparsecomm::pmpi::neighborhood
