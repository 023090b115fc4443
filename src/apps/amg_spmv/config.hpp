#pragma once
// sparsecomm_amg_spmv's settings (app.cpp describes the program): the grid of the problem,
// the hierarchy's depth, the backends and how long to time them, --dump-levels and --interp.
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/comm/pattern.hpp"
#include "sparsecomm/comm/plan/plan.hpp"

namespace sparsecomm::apps::amg {

struct Config {
  /// The options of one --backend entry (`name` or `name:key=value[:...]`, e.g.
  /// auto:race=30, measured beside plain auto): that entry's own backend options and the
  /// run's SDDE; returns the backend's name.
  std::string plan_options(const std::string& entry, PlanOptions& popt) const;
  /// The plan of one --backend entry on `pat`.
  std::unique_ptr<Plan> plan(const std::string& entry, const Pattern& pat, MPI_Comm comm) const;
  int64_t nx = 0, ny = 0;
  double angle = 0, eps = 0;
  int reps = 0, max_levels = 0, nranks = 1;
  std::vector<std::string> backends;
  std::string sdde, dump_dir, json;
  bool dump_only = false, interp = false;
  Locality loc;
};

/// Collective. The settings from the command line; false when --help was asked (printed).
/// Refuses a grid that Hypre's ids cannot number or the ranks' memory cannot hold.
bool parse_config(MPI_Comm comm, int argc, char** argv, Config& cfg);

}  // namespace sparsecomm::apps::amg
