#pragma once
// Matrix Market reader (https://math.nist.gov/MatrixMarket/formats.html).
// Coordinate and array formats; real, integer and pattern fields (complex: a clear
// "not supported" error); general, symmetric, skew-symmetric and hermitian symmetry
// (expanded to both triangles); comments and blank lines; gzip-compressed files
// (".mtx.gz", read through zlib, which also reads plain files).
// Every malformed input raises InputError naming the file and the line.
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "matrix/dist_csr.hpp"
#include "matrix/ordering.hpp"

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
MtxData parse_mtx(const std::string& path);

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
