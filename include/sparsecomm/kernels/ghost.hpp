#pragma once
// The VecScatter use case outside MatMult: fetch the values of arbitrary global indices
// (any order, duplicates allowed, own indices allowed) from their owners into a ghost
// array, and send contributions back and add them (reverse). Any halo backend.
//
//   GhostScatter gs(comm, n_local, wanted_ids, "aggregated_dedup");   // collective
//   gs.forward(x_owned, ghost);        // ghost[k] = x[wanted_ids[k]]
//   gs.reverse_add(contrib, x_owned);  // x[wanted_ids[k]] += contrib[k]
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "sparsecomm/comm/plan/plan.hpp"

namespace sparsecomm {

class GhostScatter {
 public:
  /// Collective. `local_size`: values this rank owns (contiguous blocks in rank order);
  /// `indices`: global indices wanted here. Out-of-range indices: InputError everywhere.
  GhostScatter(MPI_Comm comm, int64_t local_size, std::vector<int64_t> indices, const std::string& backend = kDefaultBackend,
               const std::string& sdde = kDefaultSdde, const std::string& regions = "node");

  /// Collective. ghost[k] = value of indices[k].
  void forward(const double* owned, double* ghost);
  /// Collective. owned[i] += sum of contrib[k] over the k with indices[k] == i (on any rank).
  void reverse_add(const double* contrib, double* owned);

  const Plan& plan() const { return *fwd_; }
  int64_t size() const { return static_cast<int64_t>(indices_.size()); }

 private:
  std::vector<int64_t> indices_;
  int64_t begin_ = 0, local_ = 0;
  std::vector<int32_t> slot_;  // per index: position in the unique remote buffer, or -1 - local offset
  std::vector<double> remote_;
  std::unique_ptr<Plan> fwd_, rev_;
};

}  // namespace sparsecomm
