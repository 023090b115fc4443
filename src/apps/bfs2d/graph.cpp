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
  // The same on every rank (the degrees are reduced): a graph without edges has no root,
  // and a report of zero searches would divide by zero.
  if (roots.empty())
    throw InputError("bfs: the graph has no edges (" + std::to_string(n) +
                     " vertices): every search starts at a vertex of degree > 0 (Graph500), and there is none");
  return roots;
}

namespace {

// The Graph500 rules checked step by step; each step's first failure on any rank is agreed
// on every rank (the lowest failing rank's message).
class Validator {
 public:
  Validator(const DistCsr<double>& g, int64_t root, const std::vector<int64_t>& parent)
      : g_(g), root_(root), parent_(parent), comm_(g.comm()), rb_(g.row_begin()), nl_(g.local_rows()) {}

  std::string run(std::vector<int64_t>* levels_out) {
    if (static_cast<int32_t>(parent_.size()) != nl_) fail("parent array has the wrong local length");
    if (std::string e = agreed_error(); !e.empty()) return e;
    check_tree_edges();
    if (std::string e = agreed_error(); !e.empty()) return e;
    compute_levels();
    for (int32_t i = 0; i < nl_; ++i)
      if (parent_[i] >= 0 && level_[i] < 0)
        fail("vertex " + std::to_string(rb_ + i) + " has parent " + std::to_string(parent_[i]) +
             " but no path to the root along parents (cycle or detached tree)");
    if (std::string e = agreed_error(); !e.empty()) {
      if (levels_out) *levels_out = level_;
      return e;
    }
    check_level_spans();
    if (levels_out) *levels_out = level_;
    return agreed_error();
  }

 private:
  void fail(const std::string& e) {
    if (err_.empty()) err_ = e;
  }
  // Collective: the lowest failing rank's message on every rank, or "".
  std::string agreed_error() {
    try {
      agree(comm_, err_);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
  // Neighbors of local vertex i as global ids, with their ghost position (-1: local).
  template <class F>
  void for_neighbors(int32_t i, F&& f) const {
    for (int64_t k = g_.diag().row_ptr[i]; k < g_.diag().row_ptr[i + 1]; ++k) f(g_.col_begin() + g_.diag().col[k], -1);
    for (int64_t k = g_.offd().row_ptr[i]; k < g_.offd().row_ptr[i + 1]; ++k)
      f(g_.ghost_ids()[g_.offd().col[k]], g_.offd().col[k]);
  }
  int64_t level_of(int64_t u, int32_t ghost_pos) const { return ghost_pos >= 0 ? ghost_[ghost_pos] : level_[u - rb_]; }

  // Rule: root is its own parent; parents in range; tree edges are graph edges.
  void check_tree_edges() {
    const int64_t n = g_.global_rows();
    for (int32_t i = 0; i < nl_; ++i) {
      const int64_t v = rb_ + i, p = parent_[i];
      if (v == root_ && p != root_) fail("root " + std::to_string(root_) + " is not its own parent");
      if (p < -1 || p >= n) fail("parent of " + std::to_string(v) + " out of range: " + std::to_string(p));
      if (p >= 0 && v != root_) {
        bool edge = false;
        for_neighbors(i, [&](int64_t u, int32_t) { edge = edge || u == p; });
        if (!edge) fail("tree edge (" + std::to_string(v) + ", " + std::to_string(p) + ") is not a graph edge");
      }
    }
  }

  // Levels: every reached vertex is one further than its parent (parents are neighbors, so
  // a halo exchange of levels over the graph's own pattern brings them). Ends with the
  // ghosts' levels exchanged.
  void compute_levels() {
    const Locality flat = Locality::parse(comm_, "flat");
    Sdde sdde(comm_, flat);
    auto plan = make_plan("p2p", pattern_from_matrix(g_, sdde, "nbx"), flat, comm_);
    level_.assign(static_cast<size_t>(nl_), -1);
    ghost_.assign(static_cast<size_t>(g_.num_ghosts()), -1);
    for (int32_t i = 0; i < nl_; ++i)
      if (rb_ + i == root_) level_[i] = 0;
    while (true) {
      plan->exchange(level_.data(), ghost_.data());
      int64_t changed = 0;
      for (int32_t i = 0; i < nl_; ++i) {
        if (level_[i] >= 0 || parent_[i] < 0) continue;
        for_neighbors(i, [&](int64_t u, int32_t gp) {
          if (u == parent_[i] && level_[i] < 0) {
            const int64_t lu = level_of(u, gp);
            if (lu >= 0) level_[i] = lu + 1, ++changed;
          }
        });
      }
      if (allreduce_sum(comm_, changed) == 0) break;
    }
    plan->exchange(level_.data(), ghost_.data());
  }

  // Rule: no edge joins a reached and an unreached vertex or spans more than one level.
  void check_level_spans() {
    for (int32_t i = 0; i < nl_; ++i) {
      const int64_t v = rb_ + i;
      for_neighbors(i, [&](int64_t u, int32_t gp) {
        const int64_t lu = level_of(u, gp);
        if ((level_[i] < 0) != (lu < 0))
          fail("edge (" + std::to_string(v) + ", " + std::to_string(u) + ") joins a reached and an unreached vertex");
        else if (level_[i] >= 0 && std::abs(level_[i] - lu) > 1)
          fail("edge (" + std::to_string(v) + ", " + std::to_string(u) + ") spans levels " + std::to_string(level_[i]) +
               " and " + std::to_string(lu));
      });
    }
  }

  const DistCsr<double>& g_;
  const int64_t root_;
  const std::vector<int64_t>& parent_;
  MPI_Comm comm_;
  const int64_t rb_;
  const int32_t nl_;
  std::string err_;
  std::vector<int64_t> level_, ghost_;
};

}  // namespace

std::string validate(const DistCsr<double>& g, int64_t root, const std::vector<int64_t>& parent,
                     std::vector<int64_t>* levels_out) {
  return Validator(g, root, parent).run(levels_out);
}

}  // namespace sparsecomm::bfs
