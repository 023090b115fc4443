#pragma once
// Shared by the aggregated backends (backends/aggregated.cpp, aggregated2.cpp) and the plan statistics of
// virtual ranks (plan_stats.cpp), which must choose the same leaders and receivers.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace sparsecomm::detail {

/// Longest-processing-time assignment (Graham 1969) of partner regions to the `slots`
/// ranks of a region: regions by decreasing volume (ties: lower region first), each to
/// the least-loaded slot so far (ties: lowest slot). Returns region -> slot.
inline std::map<int, int> lpt_assign(const std::map<int, int64_t>& volume, int slots) {
  std::vector<std::pair<int64_t, int>> order;
  for (const auto& [region, vol] : volume) order.emplace_back(-vol, region);
  std::sort(order.begin(), order.end());
  std::vector<int64_t> load(static_cast<size_t>(slots), 0);
  std::map<int, int> out;
  for (const auto& [negvol, region] : order) {
    const int slot = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    load[static_cast<size_t>(slot)] += -negvol;
    out[region] = slot;
  }
  return out;
}

/// Dense alltoallv of int64 records inside a region (the region communicator `local`;
/// O(region size) setup cost): out[i] goes to local rank i, the result holds what each sent.
std::vector<std::vector<int64_t>> region_alltoallv(MPI_Comm local, const std::vector<std::vector<int64_t>>& out);

}  // namespace sparsecomm::detail
