// The state and local kernels shared by every BFS level variant (level.hpp).
#include <algorithm>

#include "bfs2d/level.hpp"

namespace sparsecomm::bfs::detail {

int piece_of(const std::vector<int64_t>& off, int64_t x) {
  return static_cast<int>(std::upper_bound(off.begin(), off.end(), x) - off.begin()) - 1;
}

Ctx::Ctx(const Graph2D& g_, const Grid& gr, const BfsOptions& o)
    : g(g_), grid(gr), opt(o), pb(g_.piece_begin(comm_rank(gr.comm()))), pe(g_.piece_end(comm_rank(gr.comm()))),
      parent(static_cast<size_t>(pe - pb), -1), best(static_cast<size_t>(g_.row_end - g_.row_begin), kNone) {}

// One exchange with one partner, blocking: MPI_Sendrecv is the whole operation, and the
// partner and the sizes change every level, so there is no pattern to plan.
std::vector<int64_t> Ctx::transpose(const std::vector<int64_t>& f, int64_t* buf, int bound) {
  Clock c(&t.transpose), e(&t.exposed);
  const int partner = grid.rank_of(grid.col(), grid.row());
  if (partner == comm_rank(grid.comm())) return f;
  if (buf) {
    MPI_Status st;
    SPC_MPI(MPI_Sendrecv(f.data(), static_cast<int>(f.size()), MPI_INT64_T, partner, 93, buf, bound, MPI_INT64_T,
                         partner, 93, grid.comm(), &st));
    int n = 0;
    SPC_MPI(MPI_Get_count(&st, MPI_INT64_T, &n));
    return std::vector<int64_t>(buf, buf + n);
  }
  int64_t n_out = static_cast<int64_t>(f.size()), n_in = 0;
  SPC_MPI(MPI_Sendrecv(&n_out, 1, MPI_INT64_T, partner, 91, &n_in, 1, MPI_INT64_T, partner, 91, grid.comm(),
                       MPI_STATUS_IGNORE));
  std::vector<int64_t> in(static_cast<size_t>(n_in));
  SPC_MPI(MPI_Sendrecv(f.data(), static_cast<int>(n_out), MPI_INT64_T, partner, 92, in.data(), static_cast<int>(n_in),
                       MPI_INT64_T, partner, 92, grid.comm(), MPI_STATUS_IGNORE));
  return in;
}

void Ctx::spmspv(const int64_t* f, size_t n, const std::function<void()>& poll) {
  Clock c(&t.compute);
  int64_t since = 0;
  for (size_t k = 0; k < n; ++k) {
    // A frontier id outside my column block came from a transport that delivered wrong
    // data: skipped and counted (BfsTimes::corrupt), so validation fails instead of an
    // out-of-bounds read.
    if (f[k] < g.col_begin || f[k] >= g.col_end) {
      ++t.corrupt;
      continue;
    }
    if (poll && since > opt.poll_edges) poll(), since = 0;
    since += g.colptr[f[k] - g.col_begin + 1] - g.colptr[f[k] - g.col_begin];
    const int64_t u = f[k], cu = u - g.col_begin;
    for (int64_t e = g.colptr[cu]; e < g.colptr[cu + 1]; ++e) {
      const int32_t v = g.rowidx[e];
      if (best[v] == kNone) touched.push_back(v), best[v] = u;
      else if (u < best[v]) best[v] = u;
    }
  }
}

void Ctx::bucket(std::vector<int64_t>& data, std::vector<int>& counts, bool sorted) {
  Clock c(&t.sort);
  const int pc = grid.pc();
  counts.assign(static_cast<size_t>(pc), 0);
  if (sorted) std::sort(touched.begin(), touched.end());
  std::vector<int> owner(touched.size());
  const int base = grid.row() * pc;
  for (size_t k = 0; k < touched.size(); ++k) {
    owner[k] = piece_of(g.piece_offsets, g.row_begin + touched[k]) - base;
    counts[owner[k]] += 2;
  }
  std::vector<int> pos(static_cast<size_t>(pc) + 1, 0);
  for (int j = 0; j < pc; ++j) pos[j + 1] = pos[j] + counts[j];
  data.assign(static_cast<size_t>(pos[pc]), 0);
  for (size_t k = 0; k < touched.size(); ++k) {
    const int32_t v = touched[k];
    data[pos[owner[k]]++] = g.row_begin + v;
    data[pos[owner[k]]++] = best[v];
    best[v] = kNone;
  }
  touched.clear();
}

std::vector<int64_t> Ctx::update(const std::vector<int64_t>& pairs, std::vector<int64_t> frontier_new) {
  Clock c(&t.sort);
  for (size_t k = 0; k + 1 < pairs.size(); k += 2) {
    const int64_t v = pairs[k], u = pairs[k + 1], i = v - pb;
    if (v < pb || v >= pe || u < 0 || u >= g.n) {  // wrong data delivered: see spmspv
      ++t.corrupt;
      continue;
    }
    if (parent[i] == -1) parent[i] = -2 - u, frontier_new.push_back(v);  // provisional this level
    else if (parent[i] <= -2 && u < -2 - parent[i]) parent[i] = -2 - u;
  }
  for (int64_t v : frontier_new) parent[v - pb] = -2 - parent[v - pb];
  std::sort(frontier_new.begin(), frontier_new.end());
  return frontier_new;
}

}  // namespace sparsecomm::bfs::detail
