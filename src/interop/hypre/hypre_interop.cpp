#include "sparsecomm/interop/hypre/hypre_interop.hpp"

#include <vector>

#include "sparsecomm/core/mpi_util.hpp"

namespace sparsecomm {

DistCsr<double> from_hypre(hypre_ParCSRMatrix* a) {
  MPI_Comm comm = hypre_ParCSRMatrixComm(a);
  hypre_CSRMatrix* diag = hypre_ParCSRMatrixDiag(a);
  hypre_CSRMatrix* offd = hypre_ParCSRMatrixOffd(a);
  const int64_t nrows = hypre_CSRMatrixNumRows(diag);
  const int64_t ncols = hypre_CSRMatrixNumCols(diag);
  const int64_t first_row = hypre_ParCSRMatrixFirstRowIndex(a);
  const int64_t first_col = hypre_ParCSRMatrixFirstColDiag(a);
  RowPartition rows = RowPartition::from_local_sizes(comm, nrows);
  RowPartition cols = RowPartition::from_local_sizes(comm, ncols);
  agree(comm, rows.begin(comm_rank(comm)) != first_row || cols.begin(comm_rank(comm)) != first_col
                  ? "from_hypre: Hypre's partition is not contiguous in rank order"
                  : "");
  std::vector<Triplet<double>> t;
  const HYPRE_Int* di = hypre_CSRMatrixI(diag);
  const HYPRE_Int* dj = hypre_CSRMatrixJ(diag);
  const HYPRE_Complex* dv = hypre_CSRMatrixData(diag);
  const HYPRE_Int* oi = hypre_CSRMatrixI(offd);
  const HYPRE_Int* oj = hypre_CSRMatrixJ(offd);
  const HYPRE_Complex* ov = hypre_CSRMatrixData(offd);
  const HYPRE_BigInt* cmap = hypre_ParCSRMatrixColMapOffd(a);
  t.reserve(static_cast<size_t>(di[nrows] + (oi ? oi[nrows] : 0)));
  for (int64_t i = 0; i < nrows; ++i) {
    for (HYPRE_Int k = di[i]; k < di[i + 1]; ++k) t.push_back({first_row + i, first_col + dj[k], dv[k]});
    if (oi)
      for (HYPRE_Int k = oi[i]; k < oi[i + 1]; ++k) t.push_back({first_row + i, static_cast<int64_t>(cmap[oj[k]]), ov[k]});
  }
  return DistCsr<double>::from_triplets(comm, std::move(rows), std::move(cols), std::move(t), Duplicates::sum);
}

}  // namespace sparsecomm
