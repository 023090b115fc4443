#include "sparsecomm/matrix/mtx_reader.hpp"

#include <algorithm>
#include <climits>
#include <string>
#include <utility>

#include "sparsecomm/core/error.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "core/memory.hpp"

namespace sparsecomm {
namespace {

// Reorders `entries` in place so that the entries of part 0 come first, then part 1, ...
// This is the in-place "American flag sort" distribution pass (McIlroy, Bostic & McIlroy,
// "Engineering radix sort", 1993): every swap puts one entry into its final bucket, so
// rank 0 needs no second copy of the whole matrix. Returns the bucket offsets (P+1).
std::vector<int64_t> bucket_by_owner(std::vector<Triplet<double>>& entries, const RowPartition& rows) {
  const int p = rows.num_parts();
  std::vector<int64_t> start(static_cast<size_t>(p) + 1, 0);
  for (const auto& e : entries) ++start[static_cast<size_t>(rows.owner(e.row)) + 1];
  for (int b = 0; b < p; ++b) start[b + 1] += start[b];
  std::vector<int64_t> next(start.begin(), start.end() - 1);
  for (int b = 0; b < p; ++b) {
    while (next[b] < start[b + 1]) {
      const int o = rows.owner(entries[static_cast<size_t>(next[b])].row);
      if (o == b) ++next[b];
      else std::swap(entries[static_cast<size_t>(next[b])], entries[static_cast<size_t>(next[o]++)]);
    }
  }
  return start;
}

/// MPI_Bcast of n int64 values from rank 0, in pieces whose counts fit an int.
void bcast_int64(MPI_Comm comm, int64_t* data, int64_t n) {
  constexpr int64_t piece = 1 << 26;
  for (int64_t at = 0; at < n; at += piece)
    SPC_MPI(MPI_Bcast(data + at, static_cast<int>(std::min(piece, n - at)), MPI_INT64_T, 0, comm));
}

/// Checks the given row partition's part count against the communicator, before anyone
/// touches the file (collective: every rank raises the same error).
void check_partition_parts(MPI_Comm comm, const std::string& path, const MtxReadOptions& opt, int nranks) {
  if (!opt.has_row_partition) return;
  std::string err;
  if (opt.rows.num_parts() != nranks)
    err = "read_matrix_market(" + path + "): the given row partition has " + std::to_string(opt.rows.num_parts()) +
          " parts but the communicator has " + std::to_string(nranks) + " ranks";
  agree(comm, err);
}

/// Rank 0 reads the header; every rank then agrees that rank 0 can hold the entries the
/// size line allows (and every rank the permutation), before a single entry is parsed.
/// The size line bounds what rank 0 will hold: the parser stops one entry past what the
/// line announces and reads one bounded line at a time, whatever the file's length or its
/// compression ratio.
MtxHeader check_reader_memory(MPI_Comm comm, int rank, const std::string& path, const MtxReadOptions& opt) {
  using T = Triplet<double>;
  MtxHeader head;
  agreed(comm, [&] {
    if (rank == 0) head = read_mtx_header(path);
  });
  int64_t shape[2] = {head.rows, head.cols};
  SPC_MPI(MPI_Bcast(shape, 2, MPI_INT64_T, 0, comm));
  double bound = rank == 0 ? mtx_entry_bound(head) : 0;  // known everywhere for the message
  SPC_MPI(MPI_Bcast(&bound, 1, MPI_DOUBLE, 0, comm));
  double bytes = rank == 0 ? bound * static_cast<double>(sizeof(T)) : 0;
  // Reverse Cuthill-McKee on rank 0: a graph of both triangles plus per-row arrays
  if (rank == 0 && opt.ordering != Ordering::natural)
    bytes += 2 * bound * 8.0 + static_cast<double>(shape[0]) * 8.0 * 5;
  if (opt.permutation) bytes += static_cast<double>(shape[0]) * 8.0;  // every rank receives it
  require_estimated_memory(
      comm, bytes,
      "read_matrix_market(" + path + "): rank 0 holds the file's entries before distributing them (up to " +
          std::to_string(static_cast<long long>(std::min(bound, 9.0e18))) + " from its size line, " +
          std::to_string(shape[0]) + " x " + std::to_string(shape[1]) + ")" +
          (opt.permutation ? " and every rank the " + std::to_string(shape[0]) + "-row permutation" : ""),
      "inherent to reading on one rank: give rank 0 a node with more memory (fewer ranks beside it)");
  return head;
}

/// Rank 0 parses the file (which must still match `head`) and applies the requested
/// ordering, filling `perm`; a parse error is rethrown on every rank with rank 0's message.
MtxData parse_on_rank0(MPI_Comm comm, int rank, const std::string& path, const MtxReadOptions& opt,
                       const MtxHeader& head, std::vector<int64_t>& perm) {
  MtxData data;
  agreed(comm, [&] {
    if (rank != 0) return;
    data = parse_mtx(path, [&](const MtxHeader& h) {
      if (h.rows != head.rows || h.cols != head.cols || h.stored != head.stored || h.symmetry != head.symmetry ||
          h.format != head.format)
        throw InputError("read_matrix_market(" + path + "): the file changed while it was read (its size line now " +
                         "says " + std::to_string(h.rows) + " x " + std::to_string(h.cols) + ", " +
                         std::to_string(h.stored) + " entries)");
    });
    if (opt.ordering == Ordering::natural) return;
    if (data.header.rows != data.header.cols)
      throw InputError("read_matrix_market(" + path + "): the " + ordering_name(opt.ordering) +
                       " ordering needs a square matrix, not " + std::to_string(data.header.rows) + " x " +
                       std::to_string(data.header.cols));
    perm = rcm_permutation(data.header.rows, data.entries);
    permute_symmetric(data.entries, invert_permutation(perm));
  });
  return data;
}

/// Hands the ordering's permutation to every rank, if the caller asked for it.
void share_permutation(MPI_Comm comm, const MtxReadOptions& opt, int64_t nrows, std::vector<int64_t>& perm) {
  if (!opt.permutation) return;
  perm.resize(static_cast<size_t>(nrows));
  if (opt.ordering == Ordering::natural)
    for (int64_t i = 0; i < nrows; ++i) perm[i] = i;
  else
    bcast_int64(comm, perm.data(), nrows);
  *opt.permutation = std::move(perm);
}

/// The caller's row partition, checked against the matrix and across ranks, or a balanced one.
RowPartition row_partition_for(MPI_Comm comm, const std::string& path, const MtxReadOptions& opt, int64_t nrows,
                               int nranks) {
  if (!opt.has_row_partition) return RowPartition::balanced(nrows, nranks);
  std::string err;
  if (opt.rows.global_size() != nrows)
    err = "read_matrix_market(" + path + "): the given row partition covers " +
          std::to_string(opt.rows.global_size()) + " rows but the matrix has " + std::to_string(nrows);
  agree(comm, err);
  // Every rank must pass the same partition, or rows would be sent to ranks that do not
  // expect them.
  std::vector<int64_t> root_offsets = opt.rows.offsets();
  SPC_MPI(MPI_Bcast(root_offsets.data(), nranks + 1, MPI_INT64_T, 0, comm));
  agree(comm, root_offsets == opt.rows.offsets()
                  ? ""
                  : "read_matrix_market(" + path + "): the given row partition differs between ranks");
  return opt.rows;
}

/// Rank 0 groups `entries` by owner, then scatters them; returns this rank's entries and
/// leaves rank 0 with none of the others. MPI counts and displacements are ints, so the
/// bucketed buffer is sent as bytes through a window of at most `chunk` bytes that slides
/// over it: in round k every rank receives the part of its bucket inside bytes
/// [k*chunk, (k+1)*chunk). Counts and displacements then stay below the window size,
/// whatever the file size.
std::vector<Triplet<double>> scatter_entries(MPI_Comm comm, int rank, int nranks, std::vector<Triplet<double>>& entries,
                                             const RowPartition& rows, int64_t chunk_bytes) {
  using T = Triplet<double>;
  std::vector<int64_t> start;
  if (rank == 0) start = bucket_by_owner(entries, rows);
  int64_t total = rank == 0 ? static_cast<int64_t>(entries.size()) : 0;
  SPC_MPI(MPI_Bcast(&total, 1, MPI_INT64_T, 0, comm));
  int64_t my_range[2] = {0, 0};  // [begin, end) of my bucket, in entries
  {
    std::vector<int64_t> ranges;
    if (rank == 0) {
      ranges.resize(2 * static_cast<size_t>(nranks));
      for (int p = 0; p < nranks; ++p) ranges[2 * p] = start[p], ranges[2 * p + 1] = start[p + 1];
    }
    SPC_MPI(MPI_Scatter(ranges.data(), 2, MPI_INT64_T, my_range, 2, MPI_INT64_T, 0, comm));
  }

  const int64_t esize = static_cast<int64_t>(sizeof(T));
  int64_t chunk = chunk_bytes > 0 ? std::min<int64_t>(chunk_bytes, INT_MAX) : INT_MAX;
  chunk = std::max<int64_t>(esize, chunk / esize * esize);  // whole entries per window
  std::vector<T> mine(static_cast<size_t>(my_range[1] - my_range[0]));
  const int64_t total_bytes = total * esize;
  const int64_t my_lo = my_range[0] * esize, my_hi = my_range[1] * esize;
  std::vector<int> counts, displs;
  if (rank == 0) counts.resize(nranks), displs.resize(nranks);
  for (int64_t w = 0; w < total_bytes; w += chunk) {
    const int64_t w_end = std::min(w + chunk, total_bytes);
    if (rank == 0) {
      for (int p = 0; p < nranks; ++p) {
        const int64_t lo = std::max(start[p] * esize, w), hi = std::min(start[p + 1] * esize, w_end);
        counts[p] = hi > lo ? static_cast<int>(hi - lo) : 0;
        displs[p] = hi > lo ? static_cast<int>(lo - w) : 0;
      }
    }
    const int64_t lo = std::max(my_lo, w), hi = std::min(my_hi, w_end);
    const int my_count = hi > lo ? static_cast<int>(hi - lo) : 0;
    char* recv = reinterpret_cast<char*>(mine.data()) + (hi > lo ? lo - my_lo : 0);
    const char* send = rank == 0 ? reinterpret_cast<const char*>(entries.data()) + w : nullptr;
    SPC_MPI(MPI_Scatterv(send, counts.data(), displs.data(), MPI_BYTE, recv, my_count, MPI_BYTE, 0, comm));
  }
  std::vector<T>().swap(entries);  // rank 0 keeps only its own rows from here on
  return mine;
}

}  // namespace

// Only rank 0 reads: one sequential pass over a file is faster than P ranks seeking in it,
// and the file needs to be visible on rank 0 only. Rank 0 holds every entry before
// distributing them, so what it will hold is checked before it parses one.
DistCsr<double> read_matrix_market(MPI_Comm comm, const std::string& path, const MtxReadOptions& opt) {
  const int rank = comm_rank(comm), nranks = comm_size(comm);
  check_partition_parts(comm, path, opt, nranks);
  const MtxHeader head = check_reader_memory(comm, rank, path, opt);
  std::vector<int64_t> perm;
  MtxData data = parse_on_rank0(comm, rank, path, opt, head, perm);
  int64_t dims[2] = {data.header.rows, data.header.cols};
  SPC_MPI(MPI_Bcast(dims, 2, MPI_INT64_T, 0, comm));
  share_permutation(comm, opt, dims[0], perm);

  RowPartition rows = row_partition_for(comm, path, opt, dims[0], nranks);
  // Square: x and y share one layout, so the diagonal block is really the diagonal.
  RowPartition cols = dims[0] == dims[1] ? rows : RowPartition::balanced(dims[1], nranks);
  std::vector<Triplet<double>> mine = scatter_entries(comm, rank, nranks, data.entries, rows, opt.scatter_chunk_bytes);
  return DistCsr<double>::from_triplets(comm, std::move(rows), std::move(cols), std::move(mine), Duplicates::sum);
}

}  // namespace sparsecomm
