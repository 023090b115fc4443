#pragma once
// Writing the levels of an AMG hierarchy to Matrix Market files, so that the same matrices
// can be re-read at another rank count: e.g. a BoomerAMG hierarchy built with Hypre on a
// few real ranks, then every level's SpMV run on thousands of SimGrid SMPI ranks (where
// Hypre is not available) with `sparsecomm spmv --matrix DIR/level_L.mtx`; --dump-levels
// writes every level so, reads each file back and checks it against Hypre's matrix.
#include <string>
#include <vector>

#include "amg_spmv/level_timing.hpp"
#include "sparsecomm/matrix/dist_csr.hpp"

namespace sparsecomm::apps {

/// Collective over a.comm(). Writes `a` to `path` as one
/// "%%MatrixMarket matrix coordinate real general" file: the header (banner, one "% "
/// line per entry of `comments`, "rows cols nnz") and then every stored entry as
/// "row col value", 1-based global ids, in global row order (rank order, each rank's rows
/// in order, columns ascending inside a row), values with 17 significant digits so that
/// they read back bit for bit. Explicit zeros are kept: the file has exactly the nnz of
/// the matrix. The result does not depend on the number of ranks that write it.
///
/// How: each rank formats its own rows into text; an exclusive prefix sum of the text
/// sizes (rank 0's includes the header) gives each rank its byte offset, and MPI-IO writes
/// the pieces in place, so no rank ever holds more than its own rows. A failure on any
/// rank (cannot open, short write) throws the same error on every rank.
///
///   write_matrix_market(a, "levels/level_0.mtx", {"BoomerAMG level 0"});
void write_matrix_market(const DistCsr<double>& a, const std::string& path, const std::vector<std::string>& comments);

/// Collective. Creates directory `dir` (and its parents) on rank 0; the error, if any,
/// is thrown on every rank.
void make_directory(MPI_Comm comm, const std::string& dir);

}  // namespace sparsecomm::apps

namespace sparsecomm::apps::amg {

/// Collective. Writes level l (`a`, Hypre's matrix as the library's) to
/// cfg.dump_dir/level_L.mtx, reads it back through the library's reader on Hypre's row
/// partition, and checks it against Hypre's matrix: same nnz, identical entries, and the
/// SpMV of the re-read matrix equal to hypre_ParCSRMatrixMatvec (v.yref); the findings go
/// into `L`.
void dump_level(MPI_Comm comm, const Config& cfg, const Hierarchy& h, int l, const DistCsr<double>& a,
                const LevelVectors& v, Level& L);

/// Rank 0. The index of the dumped levels (cfg.dump_dir/levels.tsv) and the table of what
/// reading them back found; false if a level failed its check.
bool report_dump(const Config& cfg, int nlevels, const std::vector<Level>& out);

}  // namespace sparsecomm::apps::amg
