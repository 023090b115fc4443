#include "sparsecomm/comm/plan/gather_plan.hpp"

#include "comm/plan/registry.hpp"

#include "core/hash.hpp"

#include <algorithm>
#include <cstring>
#include <cstdio>
#include <map>

namespace sparsecomm {

GatherPlan::GatherPlan(std::string name, const Topology& topo, const Locality& loc, MPI_Comm comm, int64_t my_count,
                       const GatherOptions& opt)
    : PlanBase("GatherPlan", std::move(name), loc, comm), topo_(topo), opt_(opt), my_count_(my_count) {
  // Every source tells me its block size (one message per edge, peers known on both sides),
  // unless every rank passes the same size (make_gather_plan checked that).
  recv_counts_.assign(topo.sources.size(), opt.same_count ? my_count_ : 0);
  if (!opt.same_count) {
    std::vector<MPI_Request> reqs(topo.sources.size() + topo.destinations.size(), MPI_REQUEST_NULL);
    for (size_t i = 0; i < topo.sources.size(); ++i)
      SPC_MPI(MPI_Irecv(&recv_counts_[i], 1, MPI_INT64_T, topo.sources[i], 3, PlanBase::comm(), &reqs[i]));
    for (size_t i = 0; i < topo.destinations.size(); ++i)
      SPC_MPI(MPI_Isend(&my_count_, 1, MPI_INT64_T, topo.destinations[i], 3, PlanBase::comm(),
                        &reqs[topo.sources.size() + i]));
    wait_all(reqs);
  }
  for (int64_t c : recv_counts_) recv_offsets_.push_back(recv_offsets_.back() + c);
  block_.assign(static_cast<size_t>(my_count_ * opt.value_bytes), 0);
  recv_.assign(static_cast<size_t>(recv_offsets_.back() * opt.value_bytes), 0);
}

void GatherPlan::check(size_t value_size) const {
  if (static_cast<int>(value_size) != opt_.value_bytes)
    throw InputError(detail::value_size_mismatch(who(), value_size, opt_.value_bytes));
}

void GatherPlan::start(const void* block) {
  if (active_) throw Error(who() + ": start() called twice without wait()");
  ScopedPhase t(&exec_, ExecPhase::start);
  char* to = do_block_target();
  if (!block_.empty()) std::memcpy(to ? to : block_.data(), block, block_.size());  // memcpy of 0 bytes from null is UB
  do_start();
  active_ = true;
}

void GatherPlan::wait(void* recv) {
  if (!active_) throw Error(who() + ": wait() without start()");
  ScopedPhase t(&exec_, ExecPhase::wait);
  active_ = false;
  do_wait();
  if (!recv_.empty()) std::memcpy(recv, recv_.data(), recv_.size());
}

bool GatherPlan::test(void* recv) {
  if (!active_) throw Error(who() + ": test() without start()");
  {
    ScopedPhase t(&exec_, ExecPhase::wait);
    if (!do_test()) return false;
  }
  active_ = false;
  if (!recv_.empty()) std::memcpy(recv, recv_.data(), recv_.size());
  return true;
}

size_t GatherPlan::source_index(int source) const {
  auto it = std::lower_bound(topo_.sources.begin(), topo_.sources.end(), source);
  if (it == topo_.sources.end() || *it != source) throw Error("GatherPlan: rank " + std::to_string(source) + " is not a source");
  return static_cast<size_t>(it - topo_.sources.begin());
}

namespace {
auto& gregistry() { return detail::registry<GatherShape>(); }
}  // namespace

std::string gather_baseline_backend() { return gregistry().find("neighbor") ? "neighbor" : "p2p"; }

std::unique_ptr<GatherPlan> make_gather_plan(const std::string& backend, const Topology& topo, const Locality& loc,
                                             MPI_Comm comm, int64_t my_count, const GatherOptions& opt) {
  const CommExclusive exclusive(comm, "make_gather_plan");
  std::string err;
  const int p = comm_size(comm);
  const auto* entry = gregistry().find(backend);
  if (!entry) {
    err = gregistry().unknown(backend);
  } else if (std::string why = validate_backend_options(backend, gregistry().option_specs(backend), opt.backend); !why.empty()) {
    err = "make_gather_plan: " + why;
  } else if (my_count < 0 || opt.value_bytes < 1) {
    err = "make_gather_plan: negative block size or value size < 1";
  } else if (loc.size() != p) {
    err = "make_gather_plan: the locality does not describe this communicator";
  } else {
    for (int r : topo.sources)
      if (r < 0 || r >= p) err = "make_gather_plan: source rank " + std::to_string(r) + " out of range";
    for (int r : topo.destinations)
      if (r < 0 || r >= p) err = "make_gather_plan: destination rank " + std::to_string(r) + " out of range";
    if (!std::is_sorted(topo.sources.begin(), topo.sources.end()) ||
        !std::is_sorted(topo.destinations.begin(), topo.destinations.end()))
      err = "make_gather_plan: topology neighbor lists must be sorted";
  }
  const uint64_t h = std::hash<std::string>{}(backend + "|" + opt.sdde + "|" + std::to_string(opt.value_bytes) + "|" +
                                              (opt.persistent_requests ? "1" : "0") + "|" +
                                              (opt.same_count ? "1" : "0") + "|" + opt.backend.canonical());
  const uint64_t n = static_cast<uint64_t>(std::max<int64_t>(my_count, 0));
  uint64_t v[4] = {h, ~h, n, ~n}, mx[4];
  SPC_MPI(MPI_Allreduce(v, mx, 4, MPI_UINT64_T, MPI_MAX, comm));
  if (mx[0] != h || mx[1] != ~h) {  // (known on every rank: which ones, collectively)
    const std::string which = differing_settings(comm, {{"the backend", backend},
                                                        {"the SDDE strategy", opt.sdde},
                                                        {"the bytes per value (the datatype's size)",
                                                         std::to_string(opt.value_bytes)},
                                                        {"persistent requests", opt.persistent_requests ? "on" : "off"},
                                                        {"same_count", opt.same_count ? "on" : "off"},
                                                        {"the backend options", opt.backend.canonical()}});
    if (err.empty()) err = "make_gather_plan: the ranks asked for different exchanges: " + which + ", not on every rank";
  }
  if (err.empty() && opt.same_count && mx[2] != ~mx[3])
    err = "make_gather_plan: same_count is set, but the ranks pass block sizes from " + std::to_string(~mx[3]) +
          " to " + std::to_string(mx[2]);
  // The graph must be consistent: every edge listed as a destination by its source and as a
  // source by its destination (else exchanges would wait forever). A hash of every edge,
  // summed from both ends, catches a mismatch without gathering the graph.
  const int me = comm_rank(comm);
  uint64_t sums[2] = {0, 0}, tot[2];
  for (int d : topo.destinations) sums[0] += detail::edge_hash(me, d);
  for (int s : topo.sources) sums[1] += detail::edge_hash(s, me);
  SPC_MPI(MPI_Allreduce(sums, tot, 2, MPI_UINT64_T, MPI_SUM, comm));
  if (err.empty() && tot[0] != tot[1])
    err = "make_gather_plan: inconsistent topology (some rank lists a destination that does not list it as a "
          "source); build it with Topology::from_destinations";
  agree(comm, err);
  const double t0 = MPI_Wtime();
  auto plan = agreed(comm, [&] { return entry->factory(topo, loc, comm, my_count, opt); });
  plan->setup_stats_mut().add_time("setup.backend", MPI_Wtime() - t0);
  return plan;
}

}  // namespace sparsecomm
