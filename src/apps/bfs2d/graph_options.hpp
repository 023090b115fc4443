#pragma once
// The options that choose the BFS graph (R-MAT or a file) and its roots, declared once for
// the two programs that take them (sparsecomm bfs, sparsecomm_bfs_combblas).
#include "common/options.hpp"

namespace sparsecomm::bfs {

/// The graph options added to a program's own options `own`.
inline apps::OptionTable with_graph_options(apps::OptionTable own) {
  own["scale"] = {"16", "R-MAT scale (2^scale vertices)"};
  own["edge-factor"] = {"16", "R-MAT edges per vertex (edge_factor * 2^scale generated edges)"};
  own["seed"] = {"1", "R-MAT seed"};
  own["graph"] = {"", "SuiteSparse name or .mtx path: BFS on the pattern of A + A^T instead of R-MAT"};
  own["roots"] = {"16", "number of BFS roots (distinct, degree > 0)"};
  return own;
}

}  // namespace sparsecomm::bfs
