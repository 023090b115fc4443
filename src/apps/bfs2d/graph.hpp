#pragma once
// Graphs for the 2D BFS: R-MAT / Graph500 and undirected SuiteSparse graphs, held as a
// 1D row-distributed adjacency matrix (symmetric pattern, no self-loops, no duplicate
// edges, values 1), plus root selection and the Graph500 validator.
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sparsecomm/matrix/dist_csr.hpp"
#include "sparsecomm/matrix/generators.hpp"

namespace sparsecomm::bfs {

/// Collective. R-MAT graph of 2^scale vertices and edge_factor * 2^scale generated edges,
/// symmetrized, self-loops and duplicates removed, vertex ids permuted. The Kandalla et
/// al. paper quotes an initiator of 0.59/0.19/0.19/0.05, which sums to 1.02 and is not a
/// distribution; we use Graph500's 0.57/0.19/0.19/0.05 unless told otherwise.
DistCsr<double> rmat_graph(MPI_Comm comm, int scale, int edge_factor = 16, uint64_t seed = 1, double a = 0.57,
                           double b = 0.19, double c = 0.19, double d = 0.05);

/// Collective. An undirected graph from a Matrix Market file: the pattern of A + A^T
/// without the diagonal (rectangular matrices are an InputError).
DistCsr<double> file_graph(MPI_Comm comm, const std::string& path);

/// Collective. `count` distinct roots with degree > 0, chosen by a seeded hash sequence
/// over vertex ids (the same on every rank and at every run). Fewer when the graph has
/// fewer non-isolated vertices; InputError on every rank when it has no edge.
std::vector<int64_t> pick_roots(const DistCsr<double>& g, int count, uint64_t seed = 2);

/// Collective. Checks a BFS parent array (1D blocks as g's rows: parent[i] of vertex
/// g.row_begin() + i; -1 = unreached) against the Graph500 rules: the root is its own
/// parent; every tree edge (v, parent[v]) is a graph edge; the tree has no cycles and
/// reaches the root (levels are well defined); levels differ by at most one across every
/// graph edge; every vertex connected to a reached vertex is reached.
/// Returns "" when valid, else the first violation found (the same text on every rank).
/// `levels_out` (optional) receives the BFS level of each local vertex (-1 unreached).
std::string validate(const DistCsr<double>& g, int64_t root, const std::vector<int64_t>& parent,
                     std::vector<int64_t>* levels_out = nullptr);

}  // namespace sparsecomm::bfs
