#pragma once
// Distributed CSR matrix split like PETSc's MPIAIJ (A/B + garray) or Hypre's ParCSR
// (diag/offd + col_map_offd): each rank owns a contiguous block of rows; the columns
// it owns in the column partition form the diagonal block, every other column goes to
// the off-diagonal block, whose columns are compressed into a sorted "ghost" map of
// global ids. Local indices are 32-bit, global ids 64-bit.
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "sparsecomm/core/row_partition.hpp"
#include "sparsecomm/core/triplet.hpp"

namespace sparsecomm {


/// A local CSR block with 32-bit column indices.
template <class V>
struct CsrBlock {
  int32_t nrows = 0;
  int32_t ncols = 0;
  std::vector<int64_t> row_ptr{0};
  std::vector<int32_t> col;
  std::vector<V> val;
  int64_t nnz() const { return static_cast<int64_t>(col.size()); }
};

/// What to do with repeated (row, col) entries when assembling.
enum class Duplicates {
  sum,         ///< add them up (Matrix Market / finite-element assembly convention)
  keep_first,  ///< keep one (graph generators: a repeated edge is one edge)
  error        ///< reject the input
};

template <class V>
class DistCsr {
 public:
  DistCsr() = default;

  /// Collective. Every rank passes the entries of the rows it owns in `rows`
  /// (global ids); columns index [0, cols.global_size()). Bad entries (row not owned,
  /// column out of range, duplicates with Duplicates::error) are reported on every rank.
  /// `comm` must outlive the matrix; rows.num_parts() and cols.num_parts() must equal
  /// the communicator size.
  static DistCsr from_triplets(MPI_Comm comm, RowPartition rows, RowPartition cols, std::vector<Triplet<V>> entries,
                               Duplicates dup = Duplicates::sum);

  /// Collective. The matrix from the CSR arrays each rank already holds for its own rows,
  /// without an intermediate triplet copy: rank r passes rows [row_begin, row_begin + nrows)
  /// (the ranks' blocks must be consecutive in rank order: row_begin of rank r is the sum of
  /// nrows of ranks 0..r-1), row_ptr[0..nrows] (offsets into the two arrays, row_ptr[0] need
  /// not be 0), global column ids and values. Columns of a row may come in any order;
  /// repeated columns follow `dup`. The columns are partitioned like the rows (a square
  /// matrix) unless `cols` is given (num_parts() == communicator size). Bad input (row_begin
  /// inconsistent, row_ptr decreasing, a column out of range) is an InputError on every rank.
  ///
  ///   // rows 0..n-1 of a 1D Laplacian on one rank of many:
  ///   auto A = DistCsr<double>::from_local_csr(comm, first_row, n, rowptr.data(), cols.data(), vals.data());
  static DistCsr from_local_csr(MPI_Comm comm, int64_t row_begin, int32_t nrows, const int64_t* row_ptr,
                                const int64_t* global_cols, const V* values, RowPartition cols = RowPartition(),
                                Duplicates dup = Duplicates::sum);
  /// The same with 32-bit row pointers and column ids (Hypre's and PETSc's default ints).
  static DistCsr from_local_csr(MPI_Comm comm, int64_t row_begin, int32_t nrows, const int32_t* row_ptr,
                                const int32_t* global_cols, const V* values, RowPartition cols = RowPartition(),
                                Duplicates dup = Duplicates::sum);

  /// Collective. Like from_triplets, but any rank may hold entries of any row: entries
  /// are first sent to the owners of their rows (one dense MPI_Alltoallv).
  static DistCsr from_distributed_triplets(MPI_Comm comm, RowPartition rows, RowPartition cols,
                                           std::vector<Triplet<V>> entries, Duplicates dup = Duplicates::sum);

  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  const RowPartition& row_partition() const { return rows_; }
  const RowPartition& col_partition() const { return cols_; }
  int64_t global_rows() const { return rows_.global_size(); }
  int64_t global_cols() const { return cols_.global_size(); }
  int64_t global_nnz() const { return global_nnz_; }
  /// Repeated (row, col) entries that assembly folded into one (summed with
  /// Duplicates::sum, dropped with keep_first), over all ranks.
  int64_t global_duplicates() const { return global_duplicates_; }
  int32_t local_rows() const { return diag_.nrows; }
  int32_t local_cols() const { return diag_.ncols; }  ///< owned columns (x entries owned)
  int64_t row_begin() const { return rows_.begin(rank_); }
  int64_t col_begin() const { return cols_.begin(rank_); }
  int64_t local_nnz() const { return diag_.nnz() + offd_.nnz(); }

  const CsrBlock<V>& diag() const { return diag_; }
  const CsrBlock<V>& offd() const { return offd_; }
  /// Sorted global column ids of the off-diagonal block's columns.
  const std::vector<int64_t>& ghost_ids() const { return ghost_; }
  int32_t num_ghosts() const { return static_cast<int32_t>(ghost_.size()); }

  /// y = D x_local (D: diagonal block), for `width` interleaved vectors
  /// (x[i*width + k]). Local, not collective.
  void multiply_diag(const V* x_local, V* y, int width = 1) const;
  /// y += O x_ghost (O: off-diagonal block), ghosts ordered as ghost_ids().
  void multiply_offd_add(const V* x_ghost, V* y, int width = 1) const;

  /// This rank's entries with global ids, rows in order.
  std::vector<Triplet<V>> local_triplets() const;
  /// Collective: every rank gets every entry (for tests and small references only).
  std::vector<Triplet<V>> gather_all() const;

 private:
  template <class I, class J>
  static DistCsr from_csr_arrays(MPI_Comm comm, int64_t row_begin, int32_t nrows, const I* row_ptr, const J* cols,
                                 const V* values, RowPartition col_part, Duplicates dup);
  // The off-diagonal block's columns from global ids to positions in ghost_ (sorted).
  void compress_ghost_columns(std::vector<int64_t>& offd_global);
  // Collective. The partitions, and the global counts of entries and merged duplicates.
  void finish(RowPartition rows, RowPartition cols, int64_t merged);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  RowPartition rows_, cols_;
  CsrBlock<V> diag_, offd_;
  // The rows with off-diagonal entries (finish()): the off-diagonal product visits only
  // these — PETSc's compressed rows — where most rows of a well-partitioned matrix have none.
  std::vector<int32_t> offd_rows_;
  std::vector<int64_t> ghost_;
  int64_t global_nnz_ = 0;
  int64_t global_duplicates_ = 0;
};

extern template class DistCsr<double>;
extern template class DistCsr<float>;

}  // namespace sparsecomm
