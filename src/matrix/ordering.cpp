#include "sparsecomm/matrix/ordering.hpp"

#include <algorithm>
#include <cstdlib>

#include "sparsecomm/core/error.hpp"

namespace sparsecomm {

Ordering parse_ordering(const std::string& name) {
  if (name == "natural") return Ordering::natural;
  if (name == "rcm") return Ordering::rcm;
  throw InputError("unknown ordering '" + name + "' (valid: natural, rcm)");
}

std::string ordering_name(Ordering o) { return o == Ordering::rcm ? "rcm" : "natural"; }

namespace {

/// The symmetric adjacency of a pattern without its diagonal: CSR, sorted, no repeats.
struct Graph {
  std::vector<int64_t> ptr, adj;
  int64_t degree(int64_t v) const { return ptr[v + 1] - ptr[v]; }
};

template <class V>
Graph symmetric_graph(int64_t n, const std::vector<Triplet<V>>& entries) {
  Graph g;
  g.ptr.assign(static_cast<size_t>(n) + 1, 0);
  for (const auto& e : entries) {
    if (e.row < 0 || e.row >= n || e.col < 0 || e.col >= n)
      throw InputError("rcm_permutation: entry (" + std::to_string(e.row) + ", " + std::to_string(e.col) +
                       ") outside a " + std::to_string(n) + " x " + std::to_string(n) + " matrix");
    if (e.row != e.col) ++g.ptr[e.row + 1], ++g.ptr[e.col + 1];
  }
  for (int64_t v = 0; v < n; ++v) g.ptr[v + 1] += g.ptr[v];
  g.adj.resize(static_cast<size_t>(g.ptr[n]));
  std::vector<int64_t> fill(g.ptr.begin(), g.ptr.end() - 1);
  for (const auto& e : entries)
    if (e.row != e.col) g.adj[fill[e.row]++] = e.col, g.adj[fill[e.col]++] = e.row;
  // Sort each list and drop repeats (an unsymmetric pattern lists (r, c) once from each
  // side when both (r, c) and (c, r) are stored), compacting in place.
  int64_t out = 0;
  for (int64_t v = 0; v < n; ++v) {
    const int64_t b = g.ptr[v], e = g.ptr[v + 1];
    std::sort(g.adj.begin() + b, g.adj.begin() + e);
    const int64_t start = out;
    for (int64_t k = b; k < e; ++k)
      if (k == b || g.adj[k] != g.adj[k - 1]) g.adj[out++] = g.adj[k];
    g.ptr[v] = start;
  }
  g.ptr[n] = out;
  g.adj.resize(static_cast<size_t>(out));
  return g;
}

/// Breadth-first level structure rooted at `root` inside its component. `level` is -1 on
/// entry for every vertex and is restored to -1 before returning. Returns the depth (the
/// root's eccentricity) and leaves the vertices of the last level in `last`.
int64_t level_structure(const Graph& g, int64_t root, std::vector<int64_t>& level, std::vector<int64_t>& queue,
                        std::vector<int64_t>& last) {
  queue.clear();
  queue.push_back(root);
  level[root] = 0;
  for (size_t h = 0; h < queue.size(); ++h) {
    const int64_t v = queue[h];
    for (int64_t k = g.ptr[v]; k < g.ptr[v + 1]; ++k)
      if (level[g.adj[k]] < 0) level[g.adj[k]] = level[v] + 1, queue.push_back(g.adj[k]);
  }
  const int64_t depth = level[queue.back()];
  last.clear();
  for (auto it = queue.rbegin(); it != queue.rend() && level[*it] == depth; ++it) last.push_back(*it);
  for (int64_t v : queue) level[v] = -1;
  return depth;
}

/// George and Liu's pseudo-peripheral vertex: move to a minimum-degree vertex of the last
/// level while that increases the eccentricity.
int64_t pseudo_peripheral(const Graph& g, int64_t start, std::vector<int64_t>& level, std::vector<int64_t>& queue) {
  std::vector<int64_t> last;
  int64_t root = start;
  int64_t ecc = level_structure(g, root, level, queue, last);
  for (;;) {
    int64_t best = last.front();
    for (int64_t v : last)
      if (g.degree(v) < g.degree(best) || (g.degree(v) == g.degree(best) && v < best)) best = v;
    std::vector<int64_t> next_last;
    const int64_t e = level_structure(g, best, level, queue, next_last);
    if (e <= ecc) return root;
    root = best, ecc = e, last.swap(next_last);
  }
}

}  // namespace

template <class V>
std::vector<int64_t> rcm_permutation(int64_t n, const std::vector<Triplet<V>>& entries) {
  if (n < 0) throw InputError("rcm_permutation: negative size " + std::to_string(n));
  const Graph g = symmetric_graph(n, entries);
  std::vector<int64_t> order;  // Cuthill-McKee order: order[position] = old index
  order.reserve(static_cast<size_t>(n));
  std::vector<char> numbered(static_cast<size_t>(n), 0);
  std::vector<int64_t> level(static_cast<size_t>(n), -1), queue, nbrs;
  for (int64_t s = 0; s < n; ++s) {
    if (numbered[s]) continue;
    const int64_t root = pseudo_peripheral(g, s, level, queue);
    // Cuthill-McKee: breadth-first from the root, each vertex's unnumbered neighbors in
    // order of increasing degree (ties: lower index first).
    size_t head = order.size();
    order.push_back(root);
    numbered[root] = 1;
    for (; head < order.size(); ++head) {
      const int64_t v = order[head];
      nbrs.clear();
      for (int64_t k = g.ptr[v]; k < g.ptr[v + 1]; ++k)
        if (!numbered[g.adj[k]]) nbrs.push_back(g.adj[k]), numbered[g.adj[k]] = 1;
      std::sort(nbrs.begin(), nbrs.end(), [&](int64_t a, int64_t b) {
        return g.degree(a) != g.degree(b) ? g.degree(a) < g.degree(b) : a < b;
      });
      order.insert(order.end(), nbrs.begin(), nbrs.end());
    }
  }
  std::reverse(order.begin(), order.end());
  return order;
}

std::vector<int64_t> invert_permutation(const std::vector<int64_t>& perm) {
  const int64_t n = static_cast<int64_t>(perm.size());
  std::vector<int64_t> inv(perm.size(), -1);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t p = perm[i];
    if (p < 0 || p >= n || inv[p] >= 0)
      throw InputError("invert_permutation: entry " + std::to_string(i) + " = " + std::to_string(p) +
                       " is out of range or repeated in a permutation of " + std::to_string(n));
    inv[p] = i;
  }
  return inv;
}

template <class V>
void permute_symmetric(std::vector<Triplet<V>>& entries, const std::vector<int64_t>& inv) {
  const int64_t n = static_cast<int64_t>(inv.size());
  for (auto& e : entries) {
    if (e.row < 0 || e.row >= n || e.col < 0 || e.col >= n)
      throw InputError("permute_symmetric: entry (" + std::to_string(e.row) + ", " + std::to_string(e.col) +
                       ") outside a permutation of " + std::to_string(n));
    e.row = inv[e.row], e.col = inv[e.col];
  }
}

template <class V>
int64_t bandwidth(const std::vector<Triplet<V>>& entries) {
  int64_t b = 0;
  for (const auto& e : entries) b = std::max<int64_t>(b, std::llabs(e.row - e.col));
  return b;
}

template std::vector<int64_t> rcm_permutation<double>(int64_t, const std::vector<Triplet<double>>&);
template void permute_symmetric<double>(std::vector<Triplet<double>>&, const std::vector<int64_t>&);
template int64_t bandwidth<double>(const std::vector<Triplet<double>>&);

}  // namespace sparsecomm
