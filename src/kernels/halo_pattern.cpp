#include "sparsecomm/kernels/halo_pattern.hpp"

namespace sparsecomm {

Pattern pattern_from_matrix(const DistCsr<double>& a, Sdde& sdde, const std::string& strategy, Stats* stats) {
  return Pattern::from_ghosts(a.comm(), a.col_partition(), a.ghost_ids(), sdde, strategy, stats);
}

Pattern pattern_from_matrix_reference(const DistCsr<double>& a) {
  return Pattern::from_ghosts_reference(a.comm(), a.col_partition(), a.ghost_ids());
}

Topology topology_from_matrix_blocks(const DistCsr<double>& a, const std::string& strategy) {
  // I (block row i) need the B rows of every rank owning one of my ghost columns.
  std::vector<int> need;
  for (int64_t g : a.ghost_ids()) need.push_back(a.col_partition().owner(g));
  return Topology::from_sources(a.comm(), std::move(need), strategy);
}

}  // namespace sparsecomm
