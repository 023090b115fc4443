#pragma once
// 2D top-down BFS (Buluç and Madduri, SC'11, as in CombBLAS) and its overlapped version
// with non-blocking neighborhood collectives split into phases (Kandalla, Buluç,
// Subramoni, Tomko, Vienne, Oliker and Panda, "Can network-offload based non-blocking
// neighborhood MPI collectives improve communication overheads of irregular graph
// algorithms?", 2012).
//
// A pr x pc processor grid (square; other shapes are an InputError) owns the adjacency
// matrix in 2D blocks; vectors (frontier, parents) are split into P pieces, piece r on
// rank r (row-major grid order), so that row block i is the pieces of processor row i.
// One level: transpose the frontier piece to (j, i); gather the column block's frontier
// along the processor column ("expand"); local SpMSpV over (select, min-parent); send the
// candidates to their owners along the processor row ("fold"); keep unvisited ones.
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "sparsecomm/matrix/dist_csr.hpp"

namespace sparsecomm::bfs {

/// Collective. Square processor grid over `comm`; rank r is (r / pc, r % pc).
class Grid {
 public:
  explicit Grid(MPI_Comm comm);
  MPI_Comm comm() const { return comm_; }
  int pr() const { return pr_; }
  int pc() const { return pc_; }
  int row() const { return row_; }
  int col() const { return col_; }
  int rank_of(int row, int col) const { return row * pc_ + col; }
  MPI_Comm row_comm() const { return row_comm_.get(); }  ///< my processor row, ordered by column
  MPI_Comm col_comm() const { return col_comm_.get(); }  ///< my processor column, ordered by row

 private:
  MPI_Comm comm_;
  int pr_ = 1, pc_ = 1, row_ = 0, col_ = 0;
  Comm row_comm_, col_comm_;
};

/// The graph in 2D blocks: block (i, j) holds the edges u -> v with v in row block i and
/// u in column block j, column-major (for each local column u, its rows v).
struct Graph2D {
  int64_t n = 0;
  std::vector<int64_t> piece_offsets;  ///< vector piece r = [piece_offsets[r], piece_offsets[r+1])
  int64_t row_begin = 0, row_end = 0;  ///< my row block
  int64_t col_begin = 0, col_end = 0;  ///< my column block
  std::vector<int64_t> colptr;         ///< size col_end - col_begin + 1
  std::vector<int32_t> rowidx;         ///< v - row_begin
  /// Collective. Redistributes a 1D graph (rows balanced over the ranks, as from
  /// rmat_graph / file_graph) into the grid's 2D blocks.
  static Graph2D build(const DistCsr<double>& g, const Grid& grid);
  int64_t piece_begin(int r) const { return piece_offsets[r]; }
  int64_t piece_end(int r) const { return piece_offsets[r + 1]; }
};

struct BfsOptions {
  std::string variant = "blocking";  ///< "blocking", "overlapped", "plan"
  int phase_size = 1;                ///< overlapped: neighbors per phase of the split collectives
  std::string merge = "sort";        ///< overlapped: "sort" (counting sort; the default: experiments/bfs/README.md) or "merge" (k-way merge)
  /// overlapped: "neighbor" (MPI_Ineighbor_*), "p2p" (MPI_Isend/Irecv per phase) or "direct"
  /// (no transpose: each frontier piece goes straight to its column's ranks; every receive of
  /// a level posted first; pieces computed in arrival order; phase_size does not apply)
  std::string transport = "neighbor";
  int fold_every = 1;                ///< overlapped: compute chunks per fold chunk (0: one fold per level)
  int64_t poll_edges = 4096;         ///< overlapped: edges of local compute between progress polls (0: none)
  std::string backend = kDefaultBackend;  ///< plan: halo-exchange backend of the fold
  std::string gather_backend = "p2p";  ///< plan: allgather-shaped backend of the expand
  std::string sdde = "nbx";          ///< plan: SDDE strategy of the fold's pattern (every level)
};

/// Per-BFS time breakdown, max over ranks of each part (seconds).
struct BfsTimes {
  double total = 0, transpose = 0, expand = 0, fold = 0, compute = 0, sort = 0, exposed = 0;
  int levels = 0;
  /// Received vertex ids outside the range their receiver owns, summed over the ranks: a
  /// transport delivered wrong data. The BFS skipped them; its result must not be trusted.
  int64_t corrupt = 0;
};

/// Empty when `opt` is valid, else what is wrong with it (the first problem). run_bfs
/// raises the same error on every rank; callers may check their options before running.
std::string options_error(const BfsOptions& opt);

/// Collective. BFS from `root`; returns the parents of my vector piece (rank r's piece),
/// -1 for unreached vertices; the root is its own parent.
std::vector<int64_t> run_bfs(const Graph2D& g, const Grid& grid, int64_t root, const BfsOptions& opt,
                             BfsTimes* times = nullptr);

/// Collective. Undirected edges in the component reached by a BFS (for TEPS: Graph500
/// counts the input edges with an endpoint in the traversed component), from the 1D graph.
int64_t traversed_edges(const DistCsr<double>& g, const std::vector<int64_t>& parent);

}  // namespace sparsecomm::bfs
