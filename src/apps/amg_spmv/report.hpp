#pragma once
// The benchmark's report: per-level tables of the exchange and SpMV times (each backend
// paired with Hypre round by round), the message counts, the plan setup and what it pays
// back, and the JSON records (one per level and variant).
#include <vector>

#include "amg_spmv/config.hpp"
#include "amg_spmv/level_timing.hpp"
#include "common/provenance.hpp"

namespace sparsecomm::apps::amg {

/// Rank 0. Prints the tables of the benchmark and, with `js`, writes its records; false if a
/// level's check failed.
bool report(const Config& cfg, int nlevels, const std::vector<Level>& out, apps::JsonLines* js);

}  // namespace sparsecomm::apps::amg
