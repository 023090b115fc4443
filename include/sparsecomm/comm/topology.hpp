#pragma once
// A distributed directed graph among the ranks of a communicator, as each rank sees it:
// its in-neighbors (sources: I receive from them) and out-neighbors (destinations: I send
// to them). No rank ever holds the whole graph (MPI's distributed graph topology).
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sparsecomm/comm/pattern.hpp"
#include "sparsecomm/comm/sdde.hpp"

namespace sparsecomm {

struct Topology {
  std::vector<int> sources;       ///< in-neighbors, sorted, unique
  std::vector<int> destinations;  ///< out-neighbors, sorted, unique

  /// Collective. Each rank gives its out-neighbors; the in-neighbors are learned with the
  /// SDDE (`strategy`). Duplicates are removed; a rank out of range is an InputError on
  /// every rank; a self-loop is an InputError unless `allow_self` (then I am my own
  /// source and destination and the block is copied locally).
  static Topology from_destinations(MPI_Comm comm, std::vector<int> destinations, bool allow_self = false,
                                    const std::string& strategy = kDefaultSdde);
  /// The neighbors of a halo-exchange pattern (send ranks -> destinations, receive ranks ->
  /// sources). Local.
  static Topology from_pattern(const Pattern& p);
  /// Collective. The graph whose in-neighbors are `sources` (I receive from them); the
  /// out-neighbors are learned through the SDDE with `strategy`. (A matrix's block-row graph:
  /// topology_from_matrix_blocks() in kernels/halo_pattern.hpp.)
  static Topology from_sources(MPI_Comm comm, std::vector<int> sources, const std::string& strategy = kDefaultSdde);

  /// Erdős–Rényi random directed graph on the P ranks: each ordered pair (i, j), i != j,
  /// is an edge with probability `density`; the same graph at every run for a given seed.
  /// Local: both sides come from a hash of the pair.
  static Topology erdos_renyi(MPI_Comm comm, double density, uint64_t seed = 1);
  /// Local. Moore neighborhood of `radius` on a `dims`-dimensional torus whose sides
  /// multiply to P (balanced_dims: as even as possible): every rank within Chebyshev
  /// distance `radius` (wrapping), except itself. Symmetric.
  static Topology moore(MPI_Comm comm, int dims, int radius);
  /// Parses "er:<density>[,seed]", "moore:<dims>,<radius>". Local (every rank must pass the
  /// same spec; a bad one throws on every rank alike).
  static Topology parse(MPI_Comm comm, const std::string& spec);

  bool operator==(const Topology& o) const { return sources == o.sources && destinations == o.destinations; }
};

/// Local. The out-neighbors of `rank` in the graphs of Topology::erdos_renyi and
/// Topology::moore on `p` ranks: the same lists for any caller, so that the plan statistics
/// (plan_stats.hpp) can build the graph of thousands of virtual ranks in one process.
std::vector<int> erdos_renyi_destinations(int rank, int p, double density, uint64_t seed = 1);
/// Local. The in-neighbors of `rank` in the same graph (the edge hash tells either end).
std::vector<int> erdos_renyi_sources(int rank, int p, double density, uint64_t seed = 1);
std::vector<int> moore_destinations(int rank, int p, int dims, int radius);
/// Local. The out-neighbors of `rank` for a Topology::parse spec on `p` ranks.
std::vector<int> spec_destinations(const std::string& spec, int rank, int p);
/// `p` factored into `dims` torus sides, as even as possible, non-increasing.
std::vector<int> balanced_dims(int p, int dims);

}  // namespace sparsecomm
