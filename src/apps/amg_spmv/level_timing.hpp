#pragma once
// One level of the hierarchy measured: Hypre's halo exchange and matvec as the baseline and
// every backend's, each checked against Hypre's product and timed in interleaved rounds;
// with --interp also the exchanges along the level's interpolation P.
#include <mpi.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "amg_spmv/config.hpp"
#include "amg_spmv/hierarchy.hpp"

namespace sparsecomm::apps::amg {

struct Result {
  double comm = 0, spmv = 0, setup_sdde = 0, setup_backend = 0, err = 0;  // comm, spmv: medians over rounds
  std::vector<double> comm_rounds, spmv_rounds;  // every interleaved round's time (time_level)
  double setup_plan = 0;  // the plan alone, median of interleaved rounds (plan_setup_rounds)
  double inter_msgs = 0, intra_msgs = 0, inter_bytes = 0, intra_bytes = 0;
  int stages = 1;
  std::string runs;  // the backend the plan runs (auto's pick)
};

struct Level {
  int64_t rows = 0, nnz = 0;
  std::map<std::string, Result> by;  // "hypre" and every backend
  // --interp, levels with an interpolation P: the exchange along P's comm package (job 1,
  // the interpolation P x) and its transpose (job 2, the restriction P^T x), comm only.
  std::map<std::string, Result> interp, restrict_;
  // --dump-levels: the file, and what reading it back found.
  std::string file;
  int64_t hypre_nnz = 0, file_nnz = 0;
  bool same_entries = false;
  double reread_err = 0;  // SpMV of the re-read matrix vs hypre_ParCSRMatrixMatvec
};

/// Collective. Level l: its sizes, the dump (--dump-levels), Hypre's baseline and every
/// backend, and with --interp the exchanges along its interpolation.
Level run_level(MPI_Comm comm, const Config& cfg, const Hierarchy& h, int l);

}  // namespace sparsecomm::apps::amg
