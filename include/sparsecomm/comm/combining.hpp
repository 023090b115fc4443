#pragma once
// Message combining over common neighborhoods (phase 1: the combining pattern).
//
// Ranks that share at least Θ out-neighbors ("friends") form groups; inside a group the
// members exchange their data once (stage 1), split the group's common out-neighborhood
// among themselves, and each member sends ONE combined message carrying every member's
// data to its share (stage 2). What is not covered after a few rounds is sent directly.
// This follows Mirsadeghi, Träff, Balaji and Afsahi, "Exploiting common neighborhoods to
// optimize MPI neighborhood collectives" (HiPC 2017; pairs, distributed matching in the
// spirit of Hoepman's algorithm) and its k-group follow-up (groups of up to k members).
//
// Each rank only ever learns about its own neighbors and its candidates: a rank asks its
// out-neighbors which other ranks (groups) also send to them. Group formation is a
// deterministic distributed matching on group leaders: every leader proposes to its
// heaviest candidate (weight = size of the common neighborhood, ties to the lower rank),
// mutual proposals merge, merged leaders drop out of their candidates' lists (Hoepman's
// asynchronous request/drop protocol, no collective per proposal); merging
// repeats (pairs of groups) while the merged size stays <= k, so k > 2 grows groups
// 1+1 -> 2, 2+1 -> 3, 2+2 -> 4, ... (a greedy approximation of k-uniform hypergraph
// matching, not the paper's exact algorithm). Topology-aware: candidates only inside the
// same region, so stage 1 never leaves the region.
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/comm/sdde.hpp"
#include "sparsecomm/core/stats.hpp"
#include "sparsecomm/comm/topology.hpp"

namespace sparsecomm {

struct CombiningSchedule;

struct CombiningOptions {
  int theta = 4;          ///< minimum common out-neighbors for two groups to combine
  int k = 2;              ///< maximum group size (2: pairs)
  bool aware = false;     ///< topology-aware: groups only inside a region
  int max_rounds = 4;     ///< rounds over the remaining (uncovered) neighbors
  std::string sdde = kDefaultSdde;  ///< SDDE strategy for the setup exchanges
  /// This rank's schedule, computed elsewhere: by the exact model of phase 1 on one rank
  /// (virt::scatter_combining_schedules, comm/virt/plan_stats.hpp). build() then skips phase 1,
  /// checks that the schedule covers this rank's edges of the topology exactly once, and
  /// returns it. For simulations at scales where simulating phase 1's own messages costs
  /// too much host time (Erdős–Rényi graphs at 4,096 SMPI ranks); null: phase 1 runs.
  std::shared_ptr<const CombiningSchedule> given;
};

/// The combining pattern of one rank (deterministic for a given topology and options).
struct CombiningSchedule {
  /// Stage 1: members that receive my data (they forward it), and members whose data I
  /// receive (I forward it). Sorted.
  std::vector<int> stage1_send, stage1_recv;
  /// For alltoallv-shaped use: the destinations each stage-1 peer covers for me
  /// (stage1_send_dests[i], sorted) and those I cover for each member (stage1_recv_dests[i]).
  /// A peer may appear in its own list: then the stage-1 message also delivers the data
  /// meant for that peer itself (a member that is also a destination gets it only once).
  std::vector<std::vector<int>> stage1_send_dests, stage1_recv_dests;
  /// Stage 2: one message per destination, carrying the data of `origins` (sorted; may
  /// contain me). Destinations sorted.
  std::vector<int> dest;
  std::vector<std::vector<int>> dest_origins;
  /// Receive side: one message from each forwarder, carrying the data of these origins.
  std::vector<int> from;
  std::vector<std::vector<int>> from_origins;
  /// Statistics: groups this rank leads (size >= 2), their total size, rounds run.
  int groups_led = 0, group_members = 0, rounds = 0;
  /// The stages of an exchange on this schedule: 1 where this rank has no stage-1 peer.
  int stages() const { return stage1_send.empty() && stage1_recv.empty() ? 1 : 2; }

  /// Collective. Builds the pattern (or takes opt.given); every (source, destination) edge
  /// of `topo` is covered exactly once (checked on every rank; a violation is an Error on
  /// every rank).
  static CombiningSchedule build(MPI_Comm comm, const Topology& topo, const Locality& loc,
                                 const CombiningOptions& opt, Stats* stats = nullptr);

  /// Flat form, to send a schedule to its rank, and back (Error on a malformed vector).
  std::vector<int64_t> serialize() const;
  static CombiningSchedule deserialize(const std::vector<int64_t>& v);
  /// Empty if this schedule, on rank `me`, delivers every one of topo's edges exactly once
  /// (my block to each destination, each source's block to me); otherwise what is wrong.
  std::string coverage_error(const Topology& topo, int me) const;
};

}  // namespace sparsecomm
