// The 2D BFS (bfs.hpp): the grid, the 2D blocks, the options and the level loop; the
// level variants are in level_*.cpp (level.hpp).
#include "bfs2d/bfs.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "bfs2d/level.hpp"
#include "sparsecomm/core/stats.hpp"

namespace sparsecomm::bfs {

Grid::Grid(MPI_Comm comm) : comm_(comm) {
  const int p = comm_size(comm), me = comm_rank(comm);
  int q = static_cast<int>(std::lround(std::sqrt(static_cast<double>(p))));
  if (q * q != p)
    throw InputError("bfs: the 2D processor grid must be square (1, 4, 9, 16, ... ranks); got " + std::to_string(p) +
                     " ranks, and rectangular grids are not supported");
  pr_ = pc_ = q;
  row_ = me / q, col_ = me % q;
  MPI_Comm r = MPI_COMM_NULL, c = MPI_COMM_NULL;
  SPC_MPI(MPI_Comm_split(comm, row_, col_, &r));
  SPC_MPI(MPI_Comm_split(comm, col_, row_, &c));
  row_comm_ = Comm::adopt(r);
  col_comm_ = Comm::adopt(c);
}

using detail::piece_of;

Graph2D Graph2D::build(const DistCsr<double>& g, const Grid& grid) {
  MPI_Comm comm = grid.comm();
  const int p = comm_size(comm), pc = grid.pc();
  Graph2D out;
  out.n = g.global_rows();
  out.piece_offsets = g.row_partition().offsets();
  agree(comm, g.row_partition() != RowPartition::balanced(out.n, p) || g.global_cols() != out.n
                  ? "bfs: the 1D graph must be square with balanced rows"
                  : "");
  const auto& off = out.piece_offsets;
  out.row_begin = off[grid.row() * pc], out.row_end = off[grid.row() * pc + pc];
  out.col_begin = off[grid.col() * pc], out.col_end = off[grid.col() * pc + pc];
  // Edge u -> v (row u of the 1D graph, column v) goes to block (block(v), block(u)).
  std::vector<int> counts(p, 0);
  std::vector<std::pair<int64_t, int64_t>> edges;  // (v, u)
  std::vector<int> dest;
  for (const auto& t : g.local_triplets()) {
    const int d = (piece_of(off, t.col) / pc) * pc + piece_of(off, t.row) / pc;
    edges.emplace_back(t.col, t.row);
    dest.push_back(d);
    ++counts[d];
  }
  std::vector<int> start(p + 1, 0);
  for (int r = 0; r < p; ++r) start[r + 1] = start[r] + counts[r];
  std::vector<std::pair<int64_t, int64_t>> sorted(edges.size());
  for (size_t i = 0; i < edges.size(); ++i) sorted[start[dest[i]]++] = edges[i];
  auto mine = alltoallv(comm, sorted, counts);
  std::sort(mine.begin(), mine.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second < b.second : a.first < b.first;
  });
  const int64_t ncols = out.col_end - out.col_begin;
  out.colptr.assign(static_cast<size_t>(ncols) + 1, 0);
  for (const auto& [v, u] : mine) ++out.colptr[u - out.col_begin + 1];
  for (int64_t c = 0; c < ncols; ++c) out.colptr[c + 1] += out.colptr[c];
  out.rowidx.reserve(mine.size());
  for (const auto& [v, u] : mine) out.rowidx.push_back(static_cast<int32_t>(v - out.row_begin));
  return out;
}

std::string options_error(const BfsOptions& opt) {
  if (opt.variant != "blocking" && opt.variant != "overlapped" && opt.variant != "plan")
    return "bfs: unknown variant '" + opt.variant + "'; valid: blocking, overlapped, plan";
  if (opt.merge != "merge" && opt.merge != "sort") return "bfs: unknown merge '" + opt.merge + "'; valid: merge, sort";
  if (opt.transport != "neighbor" && opt.transport != "p2p" && opt.transport != "direct")
    return "bfs: unknown transport '" + opt.transport + "'; valid: neighbor, p2p, direct";
  if (opt.phase_size < 1) return "bfs: phase_size must be >= 1, got " + std::to_string(opt.phase_size);
  if (opt.fold_every < 0) return "bfs: fold_every must be >= 0, got " + std::to_string(opt.fold_every);
  if (opt.poll_edges < 0) return "bfs: poll_edges must be >= 0, got " + std::to_string(opt.poll_edges);
  return "";
}

namespace detail {

std::unique_ptr<LevelVariant> make_level_variant(const Graph2D& g, const Grid& grid, const BfsOptions& opt) {
  if (opt.variant == "blocking") return make_blocking();
  if (opt.variant == "plan") return make_plan_variant(grid);
#ifdef SPARSECOMM_SMPI
  if (opt.transport == "neighbor")
    throw NotImplementedError("bfs: the overlapped variant's neighbor transport needs MPI neighborhood collectives, "
                              "which SimGrid SMPI 3.32 does not implement; use transport p2p");
#endif
  if (opt.transport == "direct") return make_direct(g, grid, opt);
  return make_overlapped(g, grid, opt);
}

}  // namespace detail

std::vector<int64_t> run_bfs(const Graph2D& g, const Grid& grid, int64_t root, const BfsOptions& opt,
                             BfsTimes* times) {
  MPI_Comm comm = grid.comm();
  std::string err = options_error(opt);
  if (err.empty() && (root < 0 || root >= g.n))
    err = "bfs: root " + std::to_string(root) + " out of range [0, " + std::to_string(g.n) + ")";
  agree(comm, err);
  detail::Ctx c(g, grid, opt);
  // The variant's setup (graph communicators, buffers, SDDE context) happens before the clock starts.
  const std::unique_ptr<detail::LevelVariant> variant = detail::make_level_variant(g, grid, opt);
  SPC_MPI(MPI_Barrier(comm));
  const double t0 = MPI_Wtime();
  std::vector<int64_t> frontier;
  if (root >= c.pb && root < c.pe) c.parent[root - c.pb] = root, frontier.push_back(root);
  while (true) {
    frontier = variant->level(c, frontier);
    ++c.t.levels;
    if (allreduce_sum(comm, static_cast<int64_t>(frontier.size())) == 0) break;
  }
  c.t.total = MPI_Wtime() - t0;
  if (times) {
    auto red = reduce_all(comm, {c.t.total, c.t.transpose, c.t.expand, c.t.fold, c.t.compute, c.t.sort, c.t.exposed,
                                 static_cast<double>(c.t.corrupt)});
    *times = c.t;
    times->corrupt = static_cast<int64_t>(red[7].sum);
    times->total = red[0].max, times->transpose = red[1].max, times->expand = red[2].max, times->fold = red[3].max;
    times->compute = red[4].max, times->sort = red[5].max, times->exposed = red[6].max;
  }
  return c.parent;
}

int64_t traversed_edges(const DistCsr<double>& g, const std::vector<int64_t>& parent) {
  int64_t deg = 0;
  for (int32_t i = 0; i < g.local_rows(); ++i)
    if (parent[i] >= 0)
      deg += g.diag().row_ptr[i + 1] - g.diag().row_ptr[i] + g.offd().row_ptr[i + 1] - g.offd().row_ptr[i];
  return allreduce_sum(g.comm(), deg) / 2;
}

}  // namespace sparsecomm::bfs
