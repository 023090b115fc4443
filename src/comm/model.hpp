#pragma once
// A locality-aware performance model of one halo exchange, used by the "auto" backend.
// In the spirit of the postal and max-rate models (Gropp, Olson and Samfass, "Modeling
// MPI communication performance on SMP nodes: is it time to retire the ping pong test",
// EuroMPI'16; Bienz, Gropp and Olson, "Improving performance models for irregular
// point-to-point communication", EuroMPI'18): per locality class a latency and a per-byte
// cost, an injection-bandwidth limit shared by the ranks of a region, a cost per extra
// communication stage (per locality class: a stage whose messages stay inside regions,
// like aggregation's gather and scatter, costs less than one that crosses them), and a
// per-byte cost for packing copies.
//
// The prediction reads only a plan's deterministic counts (messages and bytes per step
// and locality class on every rank, stages), so it is the same at every run.
#include <mpi.h>

#include <string>

#include "comm/plan.hpp"

namespace sparsecomm {

struct ModelParams {
  double alpha_intra = 1.0e-6;   ///< s per intra-region message
  double beta_intra = 1.0e-10;   ///< s per intra-region byte
  double alpha_inter = 5.0e-6;   ///< s per inter-region message
  double beta_inter = 1.0e-9;    ///< s per inter-region byte
  double region_rate = 1.25e9;   ///< bytes/s a region can inject into the network
  double stage_intra = 3.0e-6;   ///< s per extra stage whose messages all stay inside regions
  double stage_inter = 3.0e-6;   ///< s per extra stage with inter-region messages
  double copy = 2.0e-10;         ///< s per byte copied between stages (aggregation, combining)

  /// Documented defaults (above) overridden by `key value` lines of a file written by
  /// `sparsecomm_calibrate`. Path: `path`, else $SPARSECOMM_MODEL; missing file: defaults.
  /// A malformed file is an InputError naming the line. The key `stage` (files of earlier
  /// versions) sets both stage costs.
  static ModelParams load(const std::string& path = "");
  void save(const std::string& path) const;
  std::string describe() const;
};

/// The stage term: of `stages` stages the first is free; of the others, those with
/// inter-region messages cost stage_inter and the rest stage_intra, with `inter_stages` the
/// number of stages that carry inter-region messages:
/// stage_inter x max(0, I - 1) + stage_intra x (S - max(I, 1)), I = min(inter_stages, S).
double stage_cost(const ModelParams& m, int64_t stages, int64_t inter_stages);

/// Number of steps of `counts` with inter-region messages (sent or received).
int64_t inter_steps(const Stats& counts);

/// Collective. Predicted seconds per execution of `plan`: the busiest rank's message and
/// byte costs summed over the plan's steps, against the busiest region's injection limit,
/// plus the copy costs and stage_cost (S = the plan's stages, I = the most steps with
/// inter-region traffic on one rank).
double predict_iteration(const Plan& plan, const ModelParams& m, MPI_Comm comm);

}  // namespace sparsecomm
