#include "bfs2d/graph.hpp"

#include <algorithm>
#include <unordered_set>

#include "sparsecomm/kernels/halo_pattern.hpp"
#include "core/hash.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"

namespace sparsecomm::bfs {

DistCsr<double> rmat_graph(MPI_Comm comm, int scale, int edge_factor, uint64_t seed, double a, double b, double c,
                           double d) {
  gen::RmatParams p;
  p.scale = scale, p.edge_factor = edge_factor, p.seed = seed;
  p.a = a, p.b = b, p.c = c, p.d = d;
  p.symmetrize = true, p.remove_self_loops = true, p.permute = true;
  return gen::rmat(comm, p);
}

DistCsr<double> file_graph(MPI_Comm comm, const std::string& path) {
  DistCsr<double> m = read_matrix_market(comm, path);
  if (m.global_rows() != m.global_cols())
    throw InputError("bfs: " + path + " is not square (" + std::to_string(m.global_rows()) + " x " +
                     std::to_string(m.global_cols()) + "); a graph needs a square adjacency matrix");
  std::vector<Triplet<double>> t;
  for (const auto& e : m.local_triplets())
    if (e.row != e.col) {
      t.push_back({e.row, e.col, 1.0});
      t.push_back({e.col, e.row, 1.0});
    }
  auto rows = RowPartition::balanced(m.global_rows(), comm_size(comm));
  return DistCsr<double>::from_distributed_triplets(comm, rows, rows, std::move(t), Duplicates::keep_first);
}


std::vector<int64_t> pick_roots(const DistCsr<double>& g, int count, uint64_t seed) {
  const int64_t n = g.global_rows();
  std::vector<int64_t> roots;
  std::unordered_set<int64_t> seen;
  const int batch = 64;
  // Try candidates in batches; each batch's degrees are summed over the owners.
  for (uint64_t k = 0; static_cast<int>(roots.size()) < count && k < static_cast<uint64_t>(4 * n + 4 * batch);) {
    std::vector<int64_t> cand(batch);
    std::vector<double> deg(batch, 0.0), tot(batch);
    for (int i = 0; i < batch; ++i, ++k) {
      cand[i] = n > 0 ? static_cast<int64_t>(detail::splitmix64(seed * 0x100000001b3ull + k) % static_cast<uint64_t>(n)) : 0;
      const int64_t v = cand[i] - g.row_begin();
      if (v >= 0 && v < g.local_rows())
        deg[i] = static_cast<double>(g.diag().row_ptr[v + 1] - g.diag().row_ptr[v] + g.offd().row_ptr[v + 1] -
                                     g.offd().row_ptr[v]);
    }
    SPC_MPI(MPI_Allreduce(deg.data(), tot.data(), batch, MPI_DOUBLE, MPI_SUM, g.comm()));
    for (int i = 0; i < batch && static_cast<int>(roots.size()) < count; ++i)
      if (tot[i] > 0 && seen.insert(cand[i]).second) roots.push_back(cand[i]);
  }
  return roots;
}

std::string validate(const DistCsr<double>& g, int64_t root, const std::vector<int64_t>& parent,
                     std::vector<int64_t>* levels_out) {
  MPI_Comm comm = g.comm();
  const int64_t n = g.global_rows(), rb = g.row_begin();
  const int32_t nl = g.local_rows();
  std::string err;
  auto fail = [&](const std::string& e) {
    if (err.empty()) err = e;
  };
  // Collective: the lowest failing rank's message on every rank, or "".
  auto agreed_error = [&]() -> std::string {
    try {
      agree(comm, err);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  if (static_cast<int32_t>(parent.size()) != nl) fail("parent array has the wrong local length");
  if (std::string e = agreed_error(); !e.empty()) return e;
  // Neighbors of local vertex i as global ids.
  auto for_neighbors = [&](int32_t i, auto&& f) {
    for (int64_t k = g.diag().row_ptr[i]; k < g.diag().row_ptr[i + 1]; ++k) f(g.col_begin() + g.diag().col[k], -1);
    for (int64_t k = g.offd().row_ptr[i]; k < g.offd().row_ptr[i + 1]; ++k) f(g.ghost_ids()[g.offd().col[k]], g.offd().col[k]);
  };
  // Rule: root is its own parent; parents in range; tree edges are graph edges.
  for (int32_t i = 0; i < nl; ++i) {
    const int64_t v = rb + i, p = parent[i];
    if (v == root && p != root) fail("root " + std::to_string(root) + " is not its own parent");
    if (p < -1 || p >= n) fail("parent of " + std::to_string(v) + " out of range: " + std::to_string(p));
    if (p >= 0 && v != root) {
      bool edge = false;
      for_neighbors(i, [&](int64_t u, int32_t) { edge = edge || u == p; });
      if (!edge) fail("tree edge (" + std::to_string(v) + ", " + std::to_string(p) + ") is not a graph edge");
    }
  }
  if (std::string e = agreed_error(); !e.empty()) return e;
  // Levels: every reached vertex is one further than its parent (parents are neighbors,
  // so a halo exchange of levels over the graph's own pattern brings them).
  Sdde sdde(comm, Locality::parse(comm, "flat"));
  Pattern pat = pattern_from_matrix(g, sdde, "nbx");
  auto plan = make_plan("p2p", pat, Locality::parse(comm, "flat"), comm);
  std::vector<int64_t> level(static_cast<size_t>(nl), -1), ghost(static_cast<size_t>(g.num_ghosts()), -1);
  for (int32_t i = 0; i < nl; ++i)
    if (rb + i == root) level[i] = 0;
  auto level_of = [&](int64_t u, int32_t ghost_pos) {
    return ghost_pos >= 0 ? ghost[ghost_pos] : level[u - rb];
  };
  while (true) {
    plan->exchange(level.data(), ghost.data());
    int64_t changed = 0;
    for (int32_t i = 0; i < nl; ++i) {
      if (level[i] >= 0 || parent[i] < 0) continue;
      for_neighbors(i, [&](int64_t u, int32_t gp) {
        if (u == parent[i] && level[i] < 0) {
          const int64_t lu = level_of(u, gp);
          if (lu >= 0) level[i] = lu + 1, ++changed;
        }
      });
    }
    if (allreduce_sum(comm, changed) == 0) break;
  }
  plan->exchange(level.data(), ghost.data());
  for (int32_t i = 0; i < nl; ++i)
    if (parent[i] >= 0 && level[i] < 0)
      fail("vertex " + std::to_string(rb + i) + " has parent " + std::to_string(parent[i]) +
           " but no path to the root along parents (cycle or detached tree)");
  if (std::string e = agreed_error(); !e.empty()) {
    if (levels_out) *levels_out = level;
    return e;
  }
  for (int32_t i = 0; i < nl; ++i) {
    const int64_t v = rb + i;
    for_neighbors(i, [&](int64_t u, int32_t gp) {
      const int64_t lu = level_of(u, gp);
      if ((level[i] < 0) != (lu < 0))
        fail("edge (" + std::to_string(v) + ", " + std::to_string(u) + ") joins a reached and an unreached vertex");
      else if (level[i] >= 0 && std::abs(level[i] - lu) > 1)
        fail("edge (" + std::to_string(v) + ", " + std::to_string(u) + ") spans levels " + std::to_string(level[i]) +
             " and " + std::to_string(lu));
    });
  }
  if (levels_out) *levels_out = level;
  return agreed_error();
}

}  // namespace sparsecomm::bfs
