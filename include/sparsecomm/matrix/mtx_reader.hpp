#pragma once
// Matrix Market reader (https://math.nist.gov/MatrixMarket/formats.html).
// Coordinate and array formats; real, integer and pattern fields (complex: a clear
// "not supported" error); general, symmetric, skew-symmetric and hermitian symmetry
// (expanded to both triangles); comments and blank lines; gzip-compressed files
// (".mtx.gz", read through zlib, which also reads plain files).
// Every malformed input raises InputError naming the file and the line.
//
// What the reader decides where the format leaves room:
//   - NaN and infinite values ("nan", "inf", 1e400) are errors: a matrix that holds them
//     cannot be checked against a reference. A matrix built from the caller's own arrays
//     (DistCsr::from_triplets, the C API, Hypre, PETSc) may hold them; every oracle then
//     compares non-finite entries exactly (core/compare.hpp).
//   - Symmetric, skew-symmetric and hermitian files store the lower triangle: an entry
//     above the diagonal is an error naming its line (mirroring it would silently double a
//     value that the file also stores below).
//   - Repeated (row, column) entries are summed (the Matrix Market / finite-element
//     assembly convention); DistCsr::global_duplicates() and `sparsecomm info` count them.
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sparsecomm/matrix/dist_csr.hpp"
#include "sparsecomm/matrix/ordering.hpp"

namespace sparsecomm {

struct MtxHeader {
  std::string format;    ///< "coordinate" or "array"
  std::string field;     ///< "real", "integer", "pattern" (complex is rejected)
  std::string symmetry;  ///< "general", "symmetric", "skew-symmetric", "hermitian"
  int64_t rows = 0, cols = 0;
  int64_t stored = 0;  ///< entries announced in the file (coordinate) or rows*cols (array)
};

/// Reads only the banner and the size line (local, not collective).
MtxHeader read_mtx_header(const std::string& path);

/// Parses the whole file on the calling rank (local, not collective). Returns 0-based
/// triplets with symmetric / skew / hermitian storage expanded; pattern entries get 1.0.
/// Array format skips exact zeros.
struct MtxData {
  MtxHeader header;
  std::vector<Triplet<double>> entries;
};
/// `before_entries`, if given, sees the header before any entry is read (and may throw to
/// stop there): read_matrix_market checks its memory bound against it.
MtxData parse_mtx(const std::string& path, const std::function<void(const MtxHeader&)>& before_entries = {});
/// The most triplets parse_mtx can return for a file with this header: the parser stops at
/// one entry more than the size line announces, and symmetric storage mirrors each
/// off-diagonal entry (an array stores at most rows x columns). A double: the product of a
/// hostile size line may not fit an int64_t.
double mtx_entry_bound(const MtxHeader& h);
/// The same on a file's text held in memory (no zlib); `name` stands for the path in
/// error messages. The fuzz target (tests/fuzz) drives this.
MtxData parse_mtx_text(std::string_view text, const std::string& name = "<memory>");

struct MtxReadOptions {
  /// Row partition of the result; default: balanced over the communicator.
  /// Columns: balanced as well (equal to the row partition for square matrices).
  bool has_row_partition = false;
  RowPartition rows;
  /// Largest single message of the distribution step, in bytes (0: INT_MAX, MPI's count
  /// limit). Smaller values only split the scatter into more rounds; tests use them to
  /// exercise the chunked path on small files.
  int64_t scatter_chunk_bytes = 0;
  /// Relabel rows and columns symmetrically before distributing (square matrices only;
  /// InputError on every rank otherwise): rcm = reverse Cuthill-McKee (matrix/ordering.hpp),
  /// computed on rank 0 from the whole pattern. The result is P A P^T.
  Ordering ordering = Ordering::natural;
  /// If set, receives the ordering's permutation on every rank: (*permutation)[new] = old
  /// (the identity for the natural ordering).
  std::vector<int64_t>* permutation = nullptr;
};

/// Collective. Rank 0 reads and parses the file once, then sends each rank only the
/// entries of the rows it owns; after distribution no rank holds more than its rows.
/// A malformed file raises the same InputError on every rank.
DistCsr<double> read_matrix_market(MPI_Comm comm, const std::string& path, const MtxReadOptions& opt = {});

}  // namespace sparsecomm
