#pragma once
// Exact plan statistics for P virtual ranks in one process (`sparsecomm plan-stats`).
//
// Simulating the execution of dense random graphs at thousands of ranks is too slow even
// under SMPI (../shared/simgrid/NOTES.md), but the setup algorithms are deterministic
// (a plan never depends on message timing), so each rank's schedule can be computed
// without running MPI at all. This file does that for the allgather-shaped exchange
// (gather_plan.hpp): the direct schedule (`p2p`, `neighbor`) and message combining
// (`combined`, combining.hpp); and for the halo-exchange Plans (plan.hpp) of any pattern
// (an SpMV halo of a matrix, or the allgather shape): `p2p`, `neighbor`, `combined` and the
// locality-aware `aggregated` / `aggregated_dedup` / `aggregated_2step`. It makes exactly
// the decisions of CombiningSchedule::build -- same queries, same greedy matching, same
// tie-breaks, same splits of the common neighborhoods -- from the whole graph instead of
// from messages, with bitsets and inverted lists instead of the O(degree^2) replies a rank
// exchanges.
// tests/test_plan_stats.cpp checks schedules and counts against the MPI runs (and, in
// the SMPI build, against the simulated runs) rank by rank.
#include <cstdint>
#include <functional>
#include <memory>
#include <map>
#include <string>
#include <vector>

#include "sparsecomm/comm/combining.hpp"
#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/core/stats.hpp"
#include "sparsecomm/core/row_partition.hpp"
#include "sparsecomm/core/triplet.hpp"

namespace sparsecomm::virt {

/// A directed graph on p virtual ranks: every rank's out-neighbors (sorted, unique, no
/// self-loops) and in-neighbors.
struct Graph {
  int p = 0;
  std::vector<std::vector<int>> dest, src;
  int64_t edges() const;
  /// The graph of a Topology::parse spec ("er:<density>[,seed]", "moore:<dims>,<radius>").
  static Graph from_spec(int p, const std::string& spec);
  /// From every rank's out-neighbors (sorted and checked here).
  static Graph from_destinations(int p, std::vector<std::vector<int>> dest);
};

/// The region of every virtual rank for a layout spec: ppn:k, cyclic:n, flat, single
/// (the ones Locality::parse accepts that do not need real hosts).
std::vector<int> regions_from_spec(int p, const std::string& spec);

/// How the common-neighborhood sizes of candidate pairs are counted: inverted lists
/// (cost: sum over destinations of askers^2, good for sparse graphs), bitset
/// intersections (growers^2 * P / 64, good for dense ones), or the cheaper of the two.
/// The result is the same; the choice only exists so that tests can run both.
enum class WeightMethod { automatic, inverted, bitset };

/// The combining schedule of every rank: element r equals what
/// CombiningSchedule::build returns on rank r of a P-rank run with these regions.
std::vector<CombiningSchedule> combining_schedules(const Graph& g, const std::vector<int>& region,
                                                   const CombiningOptions& opt,
                                                   WeightMethod method = WeightMethod::automatic);

/// Collective over `comm`: rank `root` computes every rank's combining schedule with the
/// exact model above (the graph from `graph_on_root`, called on the root only; regions
/// from `loc`) and sends each rank its own, ready for CombiningOptions::given. This is
/// phase 1 without its messages, for simulations at scales where simulating them costs
/// too much host time; the plan built with it checks the schedule against its topology.
/// The root holds the whole graph, which the distributed phase 1 never does. Errors
/// (bad options, a graph of the wrong size) are thrown on every rank.
std::shared_ptr<const CombiningSchedule> scatter_combining_schedules(MPI_Comm comm, int root,
                                                                     const std::function<Graph()>& graph_on_root,
                                                                     const Locality& loc, const CombiningOptions& opt);

/// What one execution of a gather plan sends and receives on one rank.
struct RankCounts {
  Stats counts;  ///< per step and locality class, as GatherPlan::iteration_counts()
  /// The part of `counts` that moves through the node's shared-memory window, as
  /// Plan::window_counts() (only where the pattern gives HaloPattern::node).
  Stats window;
  int stages = 1;
  int groups_led = 0;      ///< combining groups (hyperedges of size >= 2) this rank leads
  int group_members = 0;   ///< their total size
};

/// Per-rank counts of gather backend `backend` when every rank sends `count` values of
/// opt.value_bytes bytes: its counts hook (GatherBackendHooks). An unknown name, or a
/// backend that registered no hook, is an InputError.
std::vector<RankCounts> gather_counts(const std::string& backend, const Graph& g, const std::vector<int>& region,
                                      const GatherOptions& opt, int64_t count);

/// A halo-exchange pattern of p virtual ranks by global id: what every rank sends to whom
/// (a Pattern's send side; the receive side is its transpose). Only the sets of ids matter
/// for the counts, not their order.
struct HaloPattern {
  /// The values one rank sends one destination: their number and their ids. The counts
  /// read the ids only to find duplicates, so where `distinct` is given the ids may be left
  /// out (sized()): auto gathers every rank's sizes and distinct counts, not its ids.
  struct Segment {
    int dest = -1;
    int64_t size = 0;
    std::vector<int64_t> ids;  ///< `size` ids, or none (sized())
    Segment() = default;
    Segment(int d, std::vector<int64_t> i) : dest(d), size(static_cast<int64_t>(i.size())), ids(std::move(i)) {}
    static Segment sized(int d, int64_t n) {
      Segment s;
      s.dest = d, s.size = n;
      return s;
    }
    bool operator<(const Segment& o) const { return dest < o.dest || (dest == o.dest && ids < o.ids); }
  };
  int p = 0;
  /// send[a]: a's segments, destinations ascending, unique and != a, at least one value
  /// each (Pattern never holds an empty segment).
  std::vector<std::vector<Segment>> send;
  /// Optional: empty, or per rank a, distinct[a][S] = the number of distinct ids a sends to
  /// the ranks of region S (S other than a's region; regions as the counts are given them).
  /// Then the duplicate-removing counts (aggregated_dedup, aggregated_2step) take it instead
  /// of sorting the ids, and segments may leave their ids out; it must agree with the ids
  /// (auto gathers it, computed on every rank in parallel, instead of every id).
  std::vector<std::map<int, int64_t>> distinct;
  /// Optional: empty, or per rank its node (the real one: MPI_COMM_TYPE_SHARED). Then the
  /// backends that move transfers between ranks of one node through a shared-memory window
  /// (shm, the aggregation backends with window=true) count those in RankCounts::window.
  std::vector<int> node;
  int64_t segments() const;
  /// The allgather shape as a halo pattern: every rank sends the same `count` values
  /// (ids a*count ... a*count+count-1) to each out-neighbor of g. count >= 1.
  static HaloPattern from_graph(const Graph& g, int64_t count);
  /// The SpMV halo of a matrix with these entries, rows and columns block-distributed
  /// as given (what pattern_from_matrix derives on every rank): rank r receives, from
  /// the owner of each column outside its own column block that its rows touch, that
  /// column's value. Entries out of range are an InputError.
  static HaloPattern from_matrix(const RowPartition& rows, const RowPartition& cols,
                                 const std::vector<Triplet<double>>& entries);
};

/// Per-rank counts of halo backend `backend`, each value of opt.width * opt.value_bytes
/// bytes: what Plan::iteration_counts() and Plan::stages() report on every rank of the real
/// run, from the backend's counts hook (BackendHooks). An unknown name, or a backend that
/// registered no hook (auto: its choice depends on measured costs), is an InputError.
std::vector<RankCounts> halo_counts(const std::string& backend, const HaloPattern& pat, const std::vector<int>& region,
                                    const PlanOptions& opt);

// The counts hooks of the built-in backends, each defined in its backend's own file (under
// src/comm/plan/halo and gather) and registered with it: regions and options already
// checked. direct_halo_counts (p2p's, one message per segment) serves any backend with a
// direct schedule, an outside one too (tests/open_backend).
std::vector<RankCounts> direct_halo_counts(const HaloPattern& pat, const std::vector<int>& region, const PlanOptions& opt);
/// As direct_halo_counts, the transfers between ranks of one node (HaloPattern::node) also
/// in RankCounts::window.
std::vector<RankCounts> shm_halo_counts(const HaloPattern& pat, const std::vector<int>& region, const PlanOptions& opt);
std::vector<RankCounts> combined_halo_counts(const HaloPattern& pat, const std::vector<int>& region, const PlanOptions& opt);
std::vector<RankCounts> aggregated_halo_counts(const HaloPattern& pat, const std::vector<int>& region,
                                               const PlanOptions& opt, bool dedup);
std::vector<RankCounts> two_step_halo_counts(const HaloPattern& pat, const std::vector<int>& region, const PlanOptions& opt);
std::vector<RankCounts> direct_gather_counts(const Graph& g, const std::vector<int>& region, const GatherOptions& opt,
                                             int64_t count);
std::vector<RankCounts> combined_gather_counts(const Graph& g, const std::vector<int>& region,
                                               const GatherOptions& opt, int64_t count);

}  // namespace sparsecomm::virt
