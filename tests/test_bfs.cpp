// 2D BFS: parents valid by the Graph500 rules on R-MAT and SuiteSparse graphs at 1, 4 and
// 9 ranks; the validator rejects corrupted parent arrays; disconnected graphs; an isolated
// root; every variant finds the same levels; a non-square rank count and bad options are clear errors.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "bfs2d/bfs.hpp"
#include "bfs2d/graph.hpp"
#include "test_util.hpp"

using namespace sparsecomm;

namespace {

bool square(int p) {
  int q = 1;
  while (q * q < p) ++q;
  return q * q == p;
}

std::vector<bfs::BfsOptions> variants() {
  std::vector<bfs::BfsOptions> v;
  bfs::BfsOptions o;
  o.variant = "blocking";
  v.push_back(o);
  for (const char* m : {"merge", "sort"})
    for (int ps : {1, 2}) {
      o.variant = "overlapped", o.merge = m, o.phase_size = ps;
      v.push_back(o);
    }
  // Fold chunks of several compute chunks, one fold per level, and no polling.
  o.merge = "sort", o.phase_size = 1;
  for (int fe : {0, 2}) {
    o.fold_every = fe;
    v.push_back(o);
  }
  o.fold_every = 1, o.poll_edges = 0;
  v.push_back(o);
  o.poll_edges = bfs::BfsOptions().poll_edges;
  // The p2p transport (receives at upper bounds, sizes from the statuses): phases of 1 and
  // 2 neighbors, one fold per level, both merges.
  o.transport = "p2p";
  for (const char* m : {"merge", "sort"})
    for (int ps : {1, 2}) {
      o.merge = m, o.phase_size = ps;
      v.push_back(o);
    }
  o.merge = "sort", o.phase_size = 1, o.fold_every = 0;
  v.push_back(o);
  // The direct transport (no transpose; every receive posted first; pieces computed in
  // arrival order): both merges, a fold per piece, per two pieces, per level; no polling.
  o.transport = "direct";
  for (const char* m : {"merge", "sort"})
    for (int fe : {1, 2, 0}) {
      o.merge = m, o.fold_every = fe;
      v.push_back(o);
    }
  o.merge = "sort", o.fold_every = 1, o.poll_edges = 0;
  v.push_back(o);
  o.poll_edges = bfs::BfsOptions().poll_edges, o.transport = "neighbor";
  o.variant = "plan";
  for (const char* b : {"p2p", "aggregated"}) {
    o.backend = b;
    v.push_back(o);
  }
  return v;
}

// Every variant from every root: valid, and the same levels as the blocking variant.
void check_graph(const DistCsr<double>& g, int nroots, const std::string& label) {
  bfs::Grid grid(MPI_COMM_WORLD);
  auto g2 = bfs::Graph2D::build(g, grid);
  auto roots = bfs::pick_roots(g, nroots);
  ASSERT_FALSE(roots.empty()) << label;
  for (int64_t root : roots) {
    std::vector<int64_t> ref_levels;
    for (const auto& opt : variants()) {
      auto parent = bfs::run_bfs(g2, grid, root, opt);
      std::vector<int64_t> levels;
      EXPECT_EQ(bfs::validate(g, root, parent, &levels), "")
          << label << " root " << root << " variant " << opt.variant << "/" << opt.merge << "/" << opt.backend
          << " fold_every " << opt.fold_every << " poll " << opt.poll_edges << " transport " << opt.transport;
      if (ref_levels.empty()) ref_levels = levels;
      EXPECT_EQ(levels, ref_levels) << label << " root " << root << " variant " << opt.variant << "/" << opt.merge
                                    << " fold_every " << opt.fold_every << " poll " << opt.poll_edges
                                    << " transport " << opt.transport;
    }
  }
}

TEST(Bfs, RmatGraphs) {
  if (!square(test::size())) GTEST_SKIP() << "2D grid needs a square rank count";
  check_graph(bfs::rmat_graph(MPI_COMM_WORLD, 9, 8, 3), 4, "rmat 9");
  check_graph(bfs::rmat_graph(MPI_COMM_WORLD, 11, 16, 1), 2, "rmat 11");
}

TEST(Bfs, DisconnectedGraphAndIsolatedRoot) {
  if (!square(test::size())) GTEST_SKIP() << "2D grid needs a square rank count";
  // Two paths 0-1-...-9 and 10-...-19, vertex 20 isolated.
  const int p = test::size(), me = test::rank();
  auto rows = RowPartition::balanced(21, p);
  std::vector<Triplet<double>> t;
  for (int64_t v = rows.begin(me); v < rows.end(me); ++v) {
    if (v < 20 && v % 10 != 9) t.push_back({v, v + 1, 1.0});
    if (v < 20 && v % 10 != 0) t.push_back({v, v - 1, 1.0});
  }
  auto g = DistCsr<double>::from_triplets(MPI_COMM_WORLD, rows, rows, t);
  bfs::Grid grid(MPI_COMM_WORLD);
  auto g2 = bfs::Graph2D::build(g, grid);
  for (int64_t root : {0, 15, 20}) {
    for (const auto& opt : variants()) {
      auto parent = bfs::run_bfs(g2, grid, root, opt);
      std::vector<int64_t> levels;
      EXPECT_EQ(bfs::validate(g, root, parent, &levels), "") << "root " << root;
      for (int32_t i = 0; i < g.local_rows(); ++i) {
        const int64_t v = g.row_begin() + i;
        const bool same_component = (root == 20) ? v == 20 : (v < 20 && v / 10 == root / 10);
        EXPECT_EQ(parent[i] >= 0, same_component) << "vertex " << v << " root " << root;
        if (same_component) {
          EXPECT_EQ(levels[i], std::abs(v - root)) << "vertex " << v;
        }
      }
    }
  }
}

TEST(Bfs, ValidatorRejectsCorruptParents) {
  if (!square(test::size())) GTEST_SKIP() << "2D grid needs a square rank count";
  auto g = bfs::rmat_graph(MPI_COMM_WORLD, 9, 8, 5);
  bfs::Grid grid(MPI_COMM_WORLD);
  auto g2 = bfs::Graph2D::build(g, grid);
  const int64_t root = bfs::pick_roots(g, 1).at(0);
  const auto good = bfs::run_bfs(g2, grid, root, {});
  ASSERT_EQ(bfs::validate(g, root, good), "");
  // Corruptions, each applied by the rank owning the affected vertex only: every rank
  // must still report the same violation.
  auto corrupt = [&](auto&& f) {
    auto bad = good;
    f(bad);
    return bfs::validate(g, root, bad);
  };
  auto owned = [&](int64_t v) { return v >= g.row_begin() && v < g.row_begin() + g.local_rows(); };
  // (a) the root not its own parent
  std::string e = corrupt([&](std::vector<int64_t>& b) {
    if (owned(root)) b[root - g.row_begin()] = -1;
  });
  EXPECT_NE(e.find("not its own parent"), std::string::npos) << e;
  // (b) a reached vertex dropped: its neighbors are reached, it is not
  int64_t victim = -1;
  for (int32_t i = 0; i < g.local_rows(); ++i)
    if (good[i] >= 0 && g.row_begin() + i != root) victim = g.row_begin() + i;
  victim = allreduce_max(MPI_COMM_WORLD, victim);
  ASSERT_GE(victim, 0);
  e = corrupt([&](std::vector<int64_t>& b) {
    if (owned(victim)) b[victim - g.row_begin()] = -1;
  });
  EXPECT_NE(e.find("reached and an unreached"), std::string::npos) << e;
  // (c) a parent that is not a neighbor
  e = corrupt([&](std::vector<int64_t>& b) {
    if (owned(victim)) b[victim - g.row_begin()] = victim;
  });
  EXPECT_NE(e.find("not a graph edge"), std::string::npos) << e;
  // (d) a parent out of range
  e = corrupt([&](std::vector<int64_t>& b) {
    if (owned(victim)) b[victim - g.row_begin()] = g.global_rows() + 5;
  });
  EXPECT_NE(e.find("out of range"), std::string::npos) << e;
  // (e) a 2-cycle of parents between two adjacent reached vertices
  int64_t a = -1, bnb = -1;
  for (int32_t i = 0; i < g.local_rows() && a < 0; ++i) {
    const int64_t v = g.row_begin() + i;
    if (v == root || good[i] < 0) continue;
    for (int64_t k = g.diag().row_ptr[i]; k < g.diag().row_ptr[i + 1]; ++k) {
      const int64_t u = g.col_begin() + g.diag().col[k];
      if (u != root && u != v && good[u - g.row_begin()] >= 0) {
        a = v, bnb = u;
        break;
      }
    }
  }
  const int64_t pick = allreduce_max(MPI_COMM_WORLD, int64_t{a >= 0 ? test::rank() : -1});
  if (pick >= 0) {
    int64_t pair[2] = {a, bnb};
    MPI_Bcast(pair, 2, MPI_INT64_T, static_cast<int>(pick), MPI_COMM_WORLD);
    e = corrupt([&](std::vector<int64_t>& b) {
      if (owned(pair[0])) b[pair[0] - g.row_begin()] = pair[1];
      if (owned(pair[1])) b[pair[1] - g.row_begin()] = pair[0];
    });
    EXPECT_NE(e.find("no path to the root"), std::string::npos) << e;
  }
}

TEST(Bfs, BadOptionsAreClearErrorsOnEveryRank) {
  if (!square(test::size())) GTEST_SKIP() << "2D grid needs a square rank count";
  bfs::Grid grid(MPI_COMM_WORLD);
  auto g = bfs::rmat_graph(MPI_COMM_WORLD, 6, 8, 3);
  auto g2 = bfs::Graph2D::build(g, grid);
  const std::vector<std::pair<std::function<void(bfs::BfsOptions&)>, std::string>> bad = {
      {[](bfs::BfsOptions& o) { o.variant = "pipelined"; }, "unknown variant"},
      {[](bfs::BfsOptions& o) { o.variant = "overlapped", o.merge = "heap"; }, "unknown merge"},
      {[](bfs::BfsOptions& o) { o.variant = "overlapped", o.phase_size = 0; }, "phase_size must be >= 1"},
      {[](bfs::BfsOptions& o) { o.variant = "overlapped", o.fold_every = -1; }, "fold_every must be >= 0"},
      {[](bfs::BfsOptions& o) { o.variant = "overlapped", o.poll_edges = -1; }, "poll_edges must be >= 0"},
      {[](bfs::BfsOptions& o) { o.variant = "overlapped", o.transport = "rdma"; }, "unknown transport"}};
  for (const auto& [change, msg] : bad) {
    bfs::BfsOptions o;
    change(o);
    try {
      bfs::run_bfs(g2, grid, 0, o);
      ADD_FAILURE() << "no throw for " << msg;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(msg), std::string::npos) << e.what();
    }
  }
}

TEST(Bfs, NonSquareGridIsAClearError) {
  if (square(test::size())) GTEST_SKIP() << "square rank count";
  try {
    bfs::Grid grid(MPI_COMM_WORLD);
    ADD_FAILURE() << "no throw";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("must be square"), std::string::npos);
  }
}

class BfsSuiteSparse : public ::testing::TestWithParam<std::string> {};
TEST_P(BfsSuiteSparse, ValidOnRealGraph) {
  if (!square(test::size())) GTEST_SKIP() << "2D grid needs a square rank count";
  SPC_REQUIRE_MATRIX(path, GetParam());
  check_graph(bfs::file_graph(MPI_COMM_WORLD, path), 2, GetParam());
}
INSTANTIATE_TEST_SUITE_P(Real, BfsSuiteSparse,
                         ::testing::Values("HB/bcspwr10", "DIMACS10/delaunay_n16", "Newman/astro-ph", "HB/can_1054"),
                         test::StringParamName());

}  // namespace
