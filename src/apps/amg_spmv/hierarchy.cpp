#include "amg_spmv/hierarchy.hpp"

#include <cmath>

#include "sparsecomm/core/mpi_util.hpp"

namespace sparsecomm::apps::amg {

Hierarchy::Hierarchy(MPI_Comm comm, const Config& cfg) {
  // Processor grid P x Q as close to square as possible (Hypre's ij driver layout).
  const int nranks = comm_size(comm), rank = comm_rank(comm);
  for (int d = 1; d * d <= nranks; ++d)
    if (nranks % d == 0) P = d;
  Q = nranks / P;
  HYPRE_Init();
  A_ = GenerateRotate7pt(comm, cfg.nx, cfg.ny, P, Q, rank % P, rank / P, cfg.angle, cfg.eps);
  auto* Ah = reinterpret_cast<hypre_ParCSRMatrix*>(A_);
  HYPRE_ParVectorCreate(comm, hypre_ParCSRMatrixGlobalNumRows(Ah), hypre_ParCSRMatrixRowStarts(Ah), &b_);
  HYPRE_ParVectorInitialize(b_);
  HYPRE_ParVectorCreate(comm, hypre_ParCSRMatrixGlobalNumRows(Ah), hypre_ParCSRMatrixRowStarts(Ah), &x_);
  HYPRE_ParVectorInitialize(x_);
  HYPRE_BoomerAMGCreate(&amg_);
  HYPRE_BoomerAMGSetPrintLevel(amg_, 0);
  HYPRE_BoomerAMGSetMaxLevels(amg_, cfg.max_levels);
  const double t0 = MPI_Wtime();
  HYPRE_BoomerAMGSetup(amg_, A_, b_, x_);
  setup_seconds = MPI_Wtime() - t0;
}

Hierarchy::~Hierarchy() {
  HYPRE_BoomerAMGDestroy(amg_);
  HYPRE_ParVectorDestroy(b_);
  HYPRE_ParVectorDestroy(x_);
  HYPRE_ParCSRMatrixDestroy(A_);
  HYPRE_Finalize();
}

LevelVectors::LevelVectors(MPI_Comm comm, hypre_ParCSRMatrix* Al, const DistCsr<double>& a) {
  hx = hypre_ParVectorCreate(comm, hypre_ParCSRMatrixGlobalNumCols(Al), hypre_ParCSRMatrixColStarts(Al));
  hypre_ParVectorInitialize(hx);
  hy = hypre_ParVectorCreate(comm, hypre_ParCSRMatrixGlobalNumRows(Al), hypre_ParCSRMatrixRowStarts(Al));
  hypre_ParVectorInitialize(hy);
  xd = hypre_VectorData(hypre_ParVectorLocalVector(hx));
  for (int32_t i = 0; i < a.local_cols(); ++i) xd[i] = std::sin(0.1 * static_cast<double>(a.col_begin() + i));
  xs.assign(xd, xd + a.local_cols());
  hypre_ParCSRMatrixMatvec(1.0, Al, hx, 0.0, hy);
  yref = hypre_VectorData(hypre_ParVectorLocalVector(hy));
}

LevelVectors::~LevelVectors() {
  hypre_ParVectorDestroy(hx);
  hypre_ParVectorDestroy(hy);
}

}  // namespace sparsecomm::apps::amg
