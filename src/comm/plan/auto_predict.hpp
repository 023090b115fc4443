#pragma once
// auto's prediction without gathering the pattern on one rank (src/comm/plan/halo/auto.cpp):
// every rank holds its own counts of each candidate (from its region's summaries, or from a
// plan built), and a few reductions over vectors of a few hundred words per candidate give
// every rank the values that predict_from_terms() and total_work() compute over the terms
// of all ranks. Per-rank memory: O(candidates) here, O(region x neighbors) in the counting.
#include <mpi.h>

#include <string>
#include <vector>

#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/comm/plan/model.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/core/stats.hpp"

namespace sparsecomm::detail {

/// One rank's counts of one execution of a candidate: what Plan::iteration_counts(),
/// window_counts() and stages() report, and the bytes it sends beyond its own send buffer.
struct OwnCounts {
  Stats counts, window;
  int stages = 1;
  double staged = 0;
};

/// Collective over `comm` and the region communicator of `loc`. For each candidate i, the
/// prediction predict_from_terms() makes over every rank's terms (rank_terms of `mine[i]`,
/// with the shares of step_shares() over all ranks), bit for bit: the reductions are maxima
/// and sums of integers. work[i]: total_work() over the ranks, a sum of doubles reduced in
/// MPI's order (its last bits may differ from a sum in rank order); every rank gets the same
/// value (rank 0's reduction). `m`: the model for the layout (for_layout applied).
std::vector<double> predict_reduced(const std::vector<OwnCounts>& mine, const Locality& loc, MPI_Comm comm,
                                    const ModelParams& m, std::vector<double>& work);

/// auto's candidates (every registered backend that does not choose among others) in the
/// order that breaks its ties: setup complexity (BackendHooks::setup_rank), then name.
std::vector<std::string> auto_candidate_order();

/// How auto may label nodes in a region's view of the pattern (auto.cpp: region_counts).
enum class NodeLayout {
  none,          ///< no node labels (SMPI, or no candidate moves transfers through windows)
  regions,       ///< every region is exactly one node: ranks of other regions are off-node
  one_node,      ///< every rank is on one node
  mixed          ///< neither: a candidate with windows cannot be counted by region
};

}  // namespace sparsecomm::detail
