#pragma once
// The Hypre side of sparsecomm_amg_spmv: the problem and its BoomerAMG hierarchy, and one
// level's input vector with Hypre's product as the reference.
#include <HYPRE.h>
#include <HYPRE_parcsr_ls.h>
#include <_hypre_parcsr_ls.h>
#include <mpi.h>

#include <vector>

#include "amg_spmv/config.hpp"
#include "sparsecomm/matrix/dist_csr.hpp"

namespace sparsecomm::apps::amg {

/// The rotated anisotropic diffusion problem (GenerateRotate7pt, cfg.nx x cfg.ny, on a
/// processor grid P x Q) and its BoomerAMG hierarchy with Hypre's default settings; Hypre's
/// objects are destroyed with it.
class Hierarchy {
 public:
  Hierarchy(MPI_Comm comm, const Config& cfg);
  ~Hierarchy();
  Hierarchy(const Hierarchy&) = delete;
  Hierarchy& operator=(const Hierarchy&) = delete;
  int levels() const { return hypre_ParAMGDataNumLevels(reinterpret_cast<hypre_ParAMGData*>(amg_)); }
  hypre_ParCSRMatrix* level(int l) const { return hypre_ParAMGDataAArray(reinterpret_cast<hypre_ParAMGData*>(amg_))[l]; }
  /// The interpolation from level l + 1 to level l (l < levels() - 1).
  hypre_ParCSRMatrix* interp(int l) const { return hypre_ParAMGDataPArray(reinterpret_cast<hypre_ParAMGData*>(amg_))[l]; }
  int P = 1, Q = 1;
  double setup_seconds = 0;

 private:
  HYPRE_ParCSRMatrix A_ = nullptr;
  HYPRE_ParVector b_ = nullptr, x_ = nullptr;
  HYPRE_Solver amg_ = nullptr;
};

/// x and y = A x of one level as Hypre vectors: x_i = sin(0.1 * gid), Hypre's matvec as the
/// reference.
struct LevelVectors {
  LevelVectors(MPI_Comm comm, hypre_ParCSRMatrix* Al, const DistCsr<double>& a);
  ~LevelVectors();
  LevelVectors(const LevelVectors&) = delete;
  LevelVectors& operator=(const LevelVectors&) = delete;
  hypre_ParVector *hx = nullptr, *hy = nullptr;
  double* xd = nullptr;
  const double* yref = nullptr;
  std::vector<double> xs;
};

}  // namespace sparsecomm::apps::amg
