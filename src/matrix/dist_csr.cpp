#include "sparsecomm/matrix/dist_csr.hpp"

#include <algorithm>
#include <string>

#include "sparsecomm/core/error.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "core/memory.hpp"

namespace sparsecomm {

namespace {

/// Checks that every entry lies in this rank's rows [rb, re) and in the column range, sorts
/// the entries by (row, col) and folds repeated pairs as `dup` says. Returns how many
/// entries were folded. Throws InputError (the caller agrees on it across ranks).
template <class V>
int64_t sort_and_merge_triplets(std::vector<Triplet<V>>& entries, int rank, int64_t rb, int64_t re, int64_t ncols,
                                Duplicates dup) {
  for (const auto& t : entries) {
    if (t.row < rb || t.row >= re)
      throw InputError("DistCsr: entry (" + std::to_string(t.row) + ", " + std::to_string(t.col) +
                       ") is in a row not owned by rank " + std::to_string(rank) + " (owns [" + std::to_string(rb) +
                       ", " + std::to_string(re) + "))");
    if (t.col < 0 || t.col >= ncols)
      throw InputError("DistCsr: column " + std::to_string(t.col) + " out of range [0, " + std::to_string(ncols) +
                       ") in row " + std::to_string(t.row));
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Triplet<V>& a, const Triplet<V>& b) { return a.row != b.row ? a.row < b.row : a.col < b.col; });
  // Merge repeated (row, col) pairs in place.
  int64_t merged = 0;
  size_t out = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (out > 0 && entries[out - 1].row == entries[i].row && entries[out - 1].col == entries[i].col) {
      if (dup == Duplicates::sum) entries[out - 1].val += entries[i].val;
      else if (dup == Duplicates::error)
        throw InputError("DistCsr: duplicate entry (" + std::to_string(entries[i].row) + ", " +
                         std::to_string(entries[i].col) + ")");
      ++merged;
      continue;
    }
    entries[out++] = entries[i];
  }
  entries.resize(out);
  return merged;
}

/// Sorted unique columns outside this rank's columns [cb, ce): the ghost map.
template <class V>
std::vector<int64_t> ghost_columns(const std::vector<Triplet<V>>& entries, int64_t cb, int64_t ce) {
  std::vector<int64_t> ghost;
  for (const auto& t : entries)
    if (t.col < cb || t.col >= ce) ghost.push_back(t.col);
  std::sort(ghost.begin(), ghost.end());
  ghost.erase(std::unique(ghost.begin(), ghost.end()), ghost.end());
  return ghost;
}

/// Fills the diagonal and off-diagonal blocks of rows [rb, rb + nloc) from entries sorted
/// by (row, col); off-diagonal columns become indices into `ghost`.
template <class V>
void fill_blocks(const std::vector<Triplet<V>>& entries, int64_t rb, int32_t nloc, int64_t cb, int64_t ce,
                 const std::vector<int64_t>& ghost, CsrBlock<V>& diag, CsrBlock<V>& offd) {
  diag.nrows = offd.nrows = nloc;
  diag.ncols = static_cast<int32_t>(ce - cb);
  offd.ncols = static_cast<int32_t>(ghost.size());
  diag.row_ptr.assign(static_cast<size_t>(nloc) + 1, 0);
  offd.row_ptr.assign(static_cast<size_t>(nloc) + 1, 0);
  for (const auto& t : entries) {
    auto& blk = (t.col >= cb && t.col < ce) ? diag : offd;
    ++blk.row_ptr[static_cast<size_t>(t.row - rb) + 1];
  }
  for (int32_t i = 0; i < nloc; ++i) {
    diag.row_ptr[i + 1] += diag.row_ptr[i];
    offd.row_ptr[i + 1] += offd.row_ptr[i];
  }
  diag.col.reserve(static_cast<size_t>(diag.row_ptr.back()));
  diag.val.reserve(static_cast<size_t>(diag.row_ptr.back()));
  offd.col.reserve(static_cast<size_t>(offd.row_ptr.back()));
  offd.val.reserve(static_cast<size_t>(offd.row_ptr.back()));
  // Entries are sorted by (row, col), so appending keeps both blocks in CSR order.
  for (const auto& t : entries) {
    if (t.col >= cb && t.col < ce) {
      diag.col.push_back(static_cast<int32_t>(t.col - cb));
      diag.val.push_back(t.val);
    } else {
      auto it = std::lower_bound(ghost.begin(), ghost.end(), t.col);
      offd.col.push_back(static_cast<int32_t>(it - ghost.begin()));
      offd.val.push_back(t.val);
    }
  }
}

}  // namespace

template <class V>
DistCsr<V> DistCsr<V>::from_triplets(MPI_Comm comm, RowPartition rows, RowPartition cols,
                                     std::vector<Triplet<V>> entries, Duplicates dup) {
  DistCsr m;
  m.comm_ = comm;
  m.rank_ = comm_rank(comm);
  const int nranks = comm_size(comm);
  // Same partitions on all ranks, so this check agrees by itself.
  if (rows.num_parts() != nranks || cols.num_parts() != nranks)
    throw InputError("DistCsr: partitions have " + std::to_string(rows.num_parts()) + "/" +
                     std::to_string(cols.num_parts()) + " parts but the communicator has " +
                     std::to_string(nranks) + " ranks");
  const int64_t rb = rows.begin(m.rank_), re = rows.end(m.rank_);
  const int64_t cb = cols.begin(m.rank_), ce = cols.end(m.rank_);
  int64_t merged = 0;  // repeated (row, col) entries folded into one
  agreed(comm, [&] {
    if (re - rb > INT32_MAX || ce - cb > INT32_MAX) throw InputError("DistCsr: more than 2^31 local rows or columns");
    merged = sort_and_merge_triplets(entries, m.rank_, rb, re, cols.global_size(), dup);
  });

  // Two row-pointer arrays sized by the partition, not by the entries: a file that declares
  // 3e9 rows with 3 entries must fail here with a message, not in the OOM killer.
  require_memory(comm, 2 * (re - rb + 1) * static_cast<int64_t>(sizeof(int64_t)),
                 "DistCsr: the CSR row pointers of " + std::to_string(re - rb) + " local rows (" +
                     std::to_string(rows.global_size()) + " in all)",
                 "this is inherent to CSR storage (one pointer per row, empty or not): run on more nodes, or check "
                 "the matrix's declared size");

  m.ghost_ = ghost_columns(entries, cb, ce);
  agree(comm, m.ghost_.size() > static_cast<size_t>(INT32_MAX) ? "DistCsr: more than 2^31 ghost columns" : "");
  fill_blocks(entries, rb, static_cast<int32_t>(re - rb), cb, ce, m.ghost_, m.diag_, m.offd_);
  m.finish(std::move(rows), std::move(cols), merged);
  return m;
}

template <class V>
DistCsr<V> DistCsr<V>::from_distributed_triplets(MPI_Comm comm, RowPartition rows, RowPartition cols,
                                                 std::vector<Triplet<V>> entries, Duplicates dup) {
  const int nranks = comm_size(comm);
  if (rows.num_parts() != nranks)
    throw InputError("DistCsr: row partition has " + std::to_string(rows.num_parts()) + " parts but the communicator has " +
                     std::to_string(nranks) + " ranks");
  std::vector<int> counts(nranks, 0);
  std::vector<int> dest(entries.size());
  agreed(comm, [&] {
    std::vector<int64_t> wide(nranks, 0);
    for (size_t i = 0; i < entries.size(); ++i) {
      dest[i] = rows.owner(entries[i].row);  // throws InputError on a row out of range
      ++wide[dest[i]];
    }
    for (int p = 0; p < nranks; ++p) {
      if (wide[p] > INT32_MAX) throw InputError("DistCsr: more than 2^31 entries for one rank");
      counts[p] = static_cast<int>(wide[p]);
    }
  });
  std::vector<int> start(nranks + 1, 0);
  for (int p = 0; p < nranks; ++p) start[p + 1] = start[p] + counts[p];
  std::vector<Triplet<V>> sorted(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) sorted[start[dest[i]]++] = entries[i];
  entries.clear();
  entries.shrink_to_fit();
  auto mine = alltoallv(comm, sorted, counts);
  sorted.clear();
  sorted.shrink_to_fit();
  return from_triplets(comm, std::move(rows), std::move(cols), std::move(mine), dup);
}

template <class V>
void DistCsr<V>::multiply_diag(const V* x, V* y, int width) const {
  const auto& b = diag_;
  if (width == 1) {
    for (int32_t i = 0; i < b.nrows; ++i) {
      V s = 0;
      for (int64_t k = b.row_ptr[i]; k < b.row_ptr[i + 1]; ++k) s += b.val[k] * x[b.col[k]];
      y[i] = s;
    }
    return;
  }
  for (int32_t i = 0; i < b.nrows; ++i) {
    V* yi = y + static_cast<int64_t>(i) * width;
    for (int w = 0; w < width; ++w) yi[w] = 0;
    for (int64_t k = b.row_ptr[i]; k < b.row_ptr[i + 1]; ++k) {
      const V* xj = x + static_cast<int64_t>(b.col[k]) * width;
      for (int w = 0; w < width; ++w) yi[w] += b.val[k] * xj[w];
    }
  }
}

template <class V>
void DistCsr<V>::multiply_offd_add(const V* g, V* y, int width) const {
  const auto& b = offd_;
  if (width == 1) {
    // The row's sum in a register, added in the same order as below (y[i] first, then
    // entry by entry): the same result to the bit, without a load and store of y[i] per
    // entry (the compiler cannot keep it in a register in the generic loop: y might alias).
    for (const int32_t i : offd_rows_) {
      V s = y[i];
      for (int64_t k = b.row_ptr[i]; k < b.row_ptr[i + 1]; ++k) s += b.val[k] * g[b.col[k]];
      y[i] = s;
    }
    return;
  }
  for (const int32_t i : offd_rows_) {
    V* yi = y + static_cast<int64_t>(i) * width;
    for (int64_t k = b.row_ptr[i]; k < b.row_ptr[i + 1]; ++k) {
      const V* gj = g + static_cast<int64_t>(b.col[k]) * width;
      for (int w = 0; w < width; ++w) yi[w] += b.val[k] * gj[w];
    }
  }
}

template <class V>
std::vector<Triplet<V>> DistCsr<V>::local_triplets() const {
  std::vector<Triplet<V>> out;
  out.reserve(static_cast<size_t>(local_nnz()));
  const int64_t rb = row_begin(), cb = col_begin();
  for (int32_t i = 0; i < diag_.nrows; ++i) {
    const size_t first = out.size();
    for (int64_t k = diag_.row_ptr[i]; k < diag_.row_ptr[i + 1]; ++k)
      out.push_back({rb + i, cb + diag_.col[k], diag_.val[k]});
    for (int64_t k = offd_.row_ptr[i]; k < offd_.row_ptr[i + 1]; ++k)
      out.push_back({rb + i, ghost_[offd_.col[k]], offd_.val[k]});
    std::sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
              [](const Triplet<V>& a, const Triplet<V>& b) { return a.col < b.col; });
  }
  return out;
}

template <class V>
std::vector<Triplet<V>> DistCsr<V>::gather_all() const {
  agree(comm_, global_nnz_ > INT32_MAX ? "DistCsr::gather_all: " + std::to_string(global_nnz_) +
                                            " entries are more than one gather can hold (2^31)"
                                      : "");
  require_memory(comm_, global_nnz_ * static_cast<int64_t>(sizeof(Triplet<V>)),
                 "DistCsr::gather_all: a copy of all " + std::to_string(global_nnz_) + " entries on every rank",
                 "a reference that gathers the matrix is for small cases; use a check that does not gather "
                 "(sparsecomm spmv --reference rows)");
  auto mine = local_triplets();
  const int p = comm_size(comm_);
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(p), displs(p + 1, 0);
  SPC_MPI(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm_));
  for (int i = 0; i < p; ++i) displs[i + 1] = displs[i] + counts[i];
  std::vector<Triplet<V>> all(static_cast<size_t>(displs[p]));
  MPI_Datatype elem;  // one triplet as a contiguous type: counts stay in elements
  SPC_MPI(MPI_Type_contiguous(static_cast<int>(sizeof(Triplet<V>)), MPI_BYTE, &elem));
  SPC_MPI(MPI_Type_commit(&elem));
  int rc = MPI_Allgatherv(mine.data(), n, elem, all.data(), counts.data(), displs.data(), elem, comm_);
  MPI_Type_free(&elem);
  SPC_MPI(rc);
  return all;
}

namespace {

/// from_local_csr's checks of the user's arrays, once the row partition is known; throws
/// InputError (the caller agrees on it across ranks).
template <class I, class J, class V>
void check_local_csr(const RowPartition& rows, const RowPartition& col_part, int nranks, int me, int64_t row_begin,
                     int32_t nrows, const I* row_ptr, const J* cols, const V* values, int64_t nnz) {
  const int64_t cb = col_part.num_parts() == nranks ? col_part.begin(me) : 0;
  const int64_t ce = col_part.num_parts() == nranks ? col_part.end(me) : 0;
  const int64_t ncols = col_part.global_size();
  if (col_part.num_parts() != nranks)
    throw InputError("DistCsr::from_local_csr: the column partition has " + std::to_string(col_part.num_parts()) +
                     " parts but the communicator has " + std::to_string(nranks) + " ranks");
  if (row_begin != rows.begin(me))
    throw InputError("DistCsr::from_local_csr: rank " + std::to_string(me) + " passes row_begin " +
                     std::to_string(row_begin) + " but the ranks before it own " + std::to_string(rows.begin(me)) +
                     " rows (each rank's rows must follow the previous rank's)");
  if (ce - cb > INT32_MAX) throw InputError("DistCsr::from_local_csr: more than 2^31 local columns");
  for (int32_t i = 0; i < nrows; ++i)
    if (row_ptr[i + 1] < row_ptr[i])
      throw InputError("DistCsr::from_local_csr: row_ptr decreases at local row " + std::to_string(i));
  if (nnz > 0 && (!cols || !values)) throw InputError("DistCsr::from_local_csr: global_cols or values is null");
  for (int64_t k = 0; k < nnz; ++k) {
    const int64_t c = static_cast<int64_t>(cols[k]);
    if (c < 0 || c >= ncols)
      throw InputError("DistCsr::from_local_csr: column " + std::to_string(c) + " out of range [0, " +
                       std::to_string(ncols) + ") at position " + std::to_string(k));
  }
}

/// What splitting the user's rows leaves besides the blocks.
struct SplitRows {
  std::vector<int64_t> offd_global;  ///< global ids of the off-diagonal entries, in block order
  int64_t merged = 0;                ///< repeated (row, col) entries folded into one
  std::string dup_error;             ///< the first duplicate, under Duplicates::error
};

/// Appends each of the user's rows, sorted by column with repeats folded as `dup` says, to
/// the diagonal block (columns [cb, ce)) or the off-diagonal one. A row is sorted in a
/// scratch buffer as long as the row, so the extra memory is O(max row length).
template <class I, class J, class V>
SplitRows split_local_rows(int64_t row_begin, int32_t nrows, const I* row_ptr, const J* cols, const V* values,
                           int64_t base, int64_t cb, int64_t ce, Duplicates dup, CsrBlock<V>& diag, CsrBlock<V>& offd) {
  SplitRows out;
  std::vector<std::pair<int64_t, V>> row;
  for (int32_t i = 0; i < nrows; ++i) {
    row.clear();
    for (int64_t k = static_cast<int64_t>(row_ptr[i]) - base; k < static_cast<int64_t>(row_ptr[i + 1]) - base; ++k)
      row.emplace_back(static_cast<int64_t>(cols[k]), values[k]);
    std::stable_sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t k = 0; k < row.size(); ++k) {
      const auto [c, v] = row[k];
      const bool repeat = k > 0 && row[k - 1].first == c;
      if (repeat) {
        ++out.merged;
        if (dup == Duplicates::error && out.dup_error.empty())
          out.dup_error = "DistCsr::from_local_csr: duplicate entry (" + std::to_string(row_begin + i) + ", " +
                          std::to_string(c) + ")";
        if (dup != Duplicates::sum) continue;
        (c >= cb && c < ce ? diag.val : offd.val).back() += v;
        continue;
      }
      if (c >= cb && c < ce) {
        diag.col.push_back(static_cast<int32_t>(c - cb));
        diag.val.push_back(v);
      } else {
        out.offd_global.push_back(c);
        offd.val.push_back(v);
      }
    }
    diag.row_ptr[i + 1] = static_cast<int64_t>(diag.col.size());
    offd.row_ptr[i + 1] = static_cast<int64_t>(out.offd_global.size());
  }
  return out;
}

}  // namespace

// from_local_csr: the user's CSR rows go straight into the diagonal and off-diagonal
// blocks; a row's entries are sorted (and duplicates merged) in a scratch buffer as long as
// the longest row, so the extra memory is O(max row length), not O(nnz) as for triplets.
template <class V>
template <class I, class J>
DistCsr<V> DistCsr<V>::from_csr_arrays(MPI_Comm comm, int64_t row_begin, int32_t nrows, const I* row_ptr,
                                       const J* cols, const V* values, RowPartition col_part, Duplicates dup) {
  const int nranks = comm_size(comm), me = comm_rank(comm);
  agreed(comm, [&] {
    if (nrows < 0) throw InputError("DistCsr::from_local_csr: nrows is negative (" + std::to_string(nrows) + ")");
    if (!row_ptr) throw InputError("DistCsr::from_local_csr: row_ptr is null");
  });
  RowPartition rows = RowPartition::from_local_sizes(comm, nrows);
  if (col_part.num_parts() == 0) col_part = rows;
  DistCsr m;
  m.comm_ = comm;
  m.rank_ = me;
  const int64_t cb = col_part.num_parts() == nranks ? col_part.begin(me) : 0;
  const int64_t ce = col_part.num_parts() == nranks ? col_part.end(me) : 0;
  const int64_t base = nrows > 0 ? static_cast<int64_t>(row_ptr[0]) : 0;
  const int64_t nnz = nrows > 0 ? static_cast<int64_t>(row_ptr[nrows]) - base : 0;
  agreed(comm, [&] { check_local_csr(rows, col_part, nranks, me, row_begin, nrows, row_ptr, cols, values, nnz); });
  require_memory(comm, 2 * (static_cast<int64_t>(nrows) + 1) * static_cast<int64_t>(sizeof(int64_t)) + nnz * 24,
                 "DistCsr::from_local_csr: the diagonal and off-diagonal blocks of " + std::to_string(nrows) +
                     " local rows and " + std::to_string(nnz) + " entries",
                 "run on more nodes, or check the sizes passed");
  m.diag_.nrows = m.offd_.nrows = nrows;
  m.diag_.ncols = static_cast<int32_t>(ce - cb);
  m.diag_.row_ptr.assign(static_cast<size_t>(nrows) + 1, 0);
  m.offd_.row_ptr.assign(static_cast<size_t>(nrows) + 1, 0);
  m.diag_.col.reserve(static_cast<size_t>(nnz));
  m.diag_.val.reserve(static_cast<size_t>(nnz));
  SplitRows split = split_local_rows(row_begin, nrows, row_ptr, cols, values, base, cb, ce, dup, m.diag_, m.offd_);
  agree(comm, split.dup_error);
  m.compress_ghost_columns(split.offd_global);
  m.finish(std::move(rows), std::move(col_part), split.merged);
  return m;
}

template <class V>
void DistCsr<V>::finish(RowPartition rows, RowPartition cols, int64_t merged) {
  rows_ = std::move(rows);
  cols_ = std::move(cols);
  offd_rows_.clear();
  for (int32_t i = 0; i < offd_.nrows; ++i)
    if (offd_.row_ptr[i + 1] > offd_.row_ptr[i]) offd_rows_.push_back(i);
  int64_t local[2] = {local_nnz(), merged}, global[2];
  SPC_MPI(MPI_Allreduce(local, global, 2, MPI_INT64_T, MPI_SUM, comm_));
  global_nnz_ = global[0];
  global_duplicates_ = global[1];
}

template <class V>
void DistCsr<V>::compress_ghost_columns(std::vector<int64_t>& offd_global) {
  ghost_ = offd_global;
  std::sort(ghost_.begin(), ghost_.end());
  ghost_.erase(std::unique(ghost_.begin(), ghost_.end()), ghost_.end());
  agree(comm_, ghost_.size() > static_cast<size_t>(INT32_MAX) ? "DistCsr: more than 2^31 ghost columns" : "");
  offd_.ncols = static_cast<int32_t>(ghost_.size());
  offd_.col.resize(offd_global.size());
  for (size_t k = 0; k < offd_global.size(); ++k)
    offd_.col[k] = static_cast<int32_t>(std::lower_bound(ghost_.begin(), ghost_.end(), offd_global[k]) - ghost_.begin());
}

template <class V>
DistCsr<V> DistCsr<V>::from_local_csr(MPI_Comm comm, int64_t row_begin, int32_t nrows, const int64_t* row_ptr,
                                      const int64_t* global_cols, const V* values, RowPartition cols, Duplicates dup) {
  return from_csr_arrays(comm, row_begin, nrows, row_ptr, global_cols, values, std::move(cols), dup);
}

template <class V>
DistCsr<V> DistCsr<V>::from_local_csr(MPI_Comm comm, int64_t row_begin, int32_t nrows, const int32_t* row_ptr,
                                      const int32_t* global_cols, const V* values, RowPartition cols, Duplicates dup) {
  return from_csr_arrays(comm, row_begin, nrows, row_ptr, global_cols, values, std::move(cols), dup);
}

template class DistCsr<double>;
template class DistCsr<float>;

}  // namespace sparsecomm
