#pragma once
// What a backend registers besides its factory, whatever the shape of its exchange: one
// struct over the shape (HaloShape, plan.hpp; GatherShape, gather_plan.hpp), whose traits
// name the types the shape's backends take, so that a halo backend and an allgather backend
// declare their statistics, options and auto's terms alike and one registry serves both
// (as PetscSF keeps one table of implementations with one set of operations).
#include <functional>
#include <memory>
#include <vector>

#include "sparsecomm/comm/plan/backend_options.hpp"

namespace sparsecomm {

/// What the rest of the library needs from a backend of exchange shape `Shape` besides its
/// plans, registered with it (so no other file switches on its name). Use the shapes' names:
/// BackendHooks (halo) and GatherBackendHooks (allgather).
template <class Shape>
struct BackendHooksFor {
  /// Plan statistics (comm/virt/plan_stats.hpp): the counts of one execution on every one of
  /// P virtual ranks, in one process, exactly as the plans' iteration_counts() and stages()
  /// report them on each rank of a real run; Shape::Counts gives the arguments (a halo
  /// pattern, or a graph and a block size). Empty: the backend has no statistics
  /// (virt::halo_counts() and virt::gather_counts() say so).
  std::function<typename Shape::Counts> counts;
  /// The backend-owned options it reads from its options' `backend` member
  /// (comm/plan/backend_options.hpp); make_plan / make_gather_plan reject any other key. A
  /// backend that runs message combining declares combining_option_specs(), and tools that
  /// sweep combining variants (plan-stats, nbrbench, spmm) do so for every backend that
  /// declares "k".
  std::vector<OptionSpec> options;
  // The rest is what auto reads, which chooses among halo backends (the allgather shape has
  // no such backend yet, and ignores them).
  /// How involved the backend's setup is, for auto's tie-break: of two candidates whose
  /// predicted costs tie, the lower rank wins (then the name), so the choice is
  /// deterministic and prefers the simpler plan. Built-ins: p2p 0 ... combined 5.
  int setup_rank = 100;
  /// The backend chooses among the others (auto): it is no candidate of such a choice, it
  /// accepts their options too (handed on to each), and evaluations that time every backend
  /// against it (sparsecomm autoeval) leave it out.
  bool chooses_among_others = false;
  /// Transfers between two ranks of one node may move through a shared-memory window (shm,
  /// the aggregation backends): auto gives `counts` the real nodes (virt::HaloPattern::node),
  /// and the hook reports in RankCounts::window what the plan's window_counts() will, which
  /// auto prices as window reads.
  bool node_window = false;
  /// `counts` reports each rank's counts from its region alone: a rank's counts depend only
  /// on the segments the ranks of its region send and receive (their sizes, and per remote
  /// region the distinct ids a rank sends there), not on the rest of the pattern. Then auto
  /// evaluates them per region (each rank from its region's summaries, O(region x
  /// neighbors) memory) instead of building the plan; without it a candidate with a counts
  /// hook is built and predicted from its real counts (message combining: its matching
  /// spans the whole graph).
  bool counts_by_region = false;
};

/// The factory of a backend whose plan class `P` is built from the factory's arguments (a
/// halo or a gather factory's) followed by `extra` (one class serving several names):
///   register_backend("mine", "what it does", plan_factory<MyPlan>(), hooks);
template <class P, class... Extra>
auto plan_factory(Extra... extra) {
  return [=](const auto&... args) { return std::make_unique<P>(args..., extra...); };
}

}  // namespace sparsecomm
