// Tests of the reverse Cuthill-McKee ordering (matrix/ordering.hpp): a valid permutation,
// the bandwidth it reaches on patterns whose best bandwidth is known (a path, a grid, both
// relabelled at random first), connected components kept contiguous, independence from
// the order and symmetry of the entries, and clear errors on bad input. Local functions:
// every rank computes the same thing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "sparsecomm/core/error.hpp"
#include "sparsecomm/matrix/ordering.hpp"
#include "test_util.hpp"

namespace sparsecomm {
namespace {

using Entries = std::vector<Triplet<double>>;

/// A random relabelling of 0..n-1 (seeded): the natural order of the result tells nothing.
std::vector<int64_t> shuffled(int64_t n, unsigned seed) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(p.begin(), p.end(), rng);
  return p;
}

/// Symmetric pattern of an nx x ny 5-point grid with its diagonal.
Entries grid(int64_t nx, int64_t ny) {
  Entries e;
  for (int64_t y = 0; y < ny; ++y)
    for (int64_t x = 0; x < nx; ++x) {
      const int64_t v = y * nx + x;
      e.push_back({v, v, 4.0});
      if (x + 1 < nx) e.push_back({v, v + 1, -1.0}), e.push_back({v + 1, v, -1.0});
      if (y + 1 < ny) e.push_back({v, v + nx, -1.0}), e.push_back({v + nx, v, -1.0});
    }
  return e;
}

Entries relabelled(Entries e, const std::vector<int64_t>& old_to_new) {
  for (auto& t : e) t.row = old_to_new[t.row], t.col = old_to_new[t.col];
  return e;
}

Entries reordered(Entries e, const std::vector<int64_t>& perm) {
  permute_symmetric(e, invert_permutation(perm));
  return e;
}

void expect_permutation(const std::vector<int64_t>& perm, int64_t n) {
  ASSERT_EQ(static_cast<int64_t>(perm.size()), n);
  std::vector<int64_t> s = perm;
  std::sort(s.begin(), s.end());
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(s[i], i) << "not a permutation of 0.." << n - 1;
}

TEST(Rcm, ShuffledPathGetsBandwidthOne) {
  const int64_t n = 200;
  Entries path;
  for (int64_t i = 0; i + 1 < n; ++i) path.push_back({i, i + 1, 1.0}), path.push_back({i + 1, i, 1.0});
  const Entries e = relabelled(path, shuffled(n, 7));
  EXPECT_GT(bandwidth(e), 100);
  const auto perm = rcm_permutation(n, e);
  expect_permutation(perm, n);
  EXPECT_EQ(bandwidth(reordered(e, perm)), 1);
}

TEST(Rcm, ShuffledGridGetsBandedWithinTwoLevels) {
  // Started from a corner, the level sets of a grid are its anti-diagonals (at most
  // min(nx, ny) vertices), and a Cuthill-McKee ordering's bandwidth is below the size of
  // two consecutive levels.
  const int64_t nx = 20, ny = 35, n = nx * ny;
  const Entries e = relabelled(grid(nx, ny), shuffled(n, 11));
  EXPECT_GT(bandwidth(e), 300);
  const auto perm = rcm_permutation(n, e);
  expect_permutation(perm, n);
  EXPECT_LE(bandwidth(reordered(e, perm)), 2 * nx);
  EXPECT_GE(bandwidth(reordered(e, perm)), nx);  // no ordering of this grid does better than nx
}

TEST(Rcm, ComponentsStayContiguousAndIsolatedVerticesAreKept) {
  // Two shuffled paths (vertices 0..4 and 5..11 before the shuffle) and three isolated
  // vertices 12..14, one of them with only a diagonal entry.
  const int64_t n = 15;
  Entries e;
  for (int64_t i = 0; i < 4; ++i) e.push_back({i, i + 1, 1.0});
  for (int64_t i = 5; i < 11; ++i) e.push_back({i + 1, i, 1.0});  // lower triangle only
  e.push_back({13, 13, 2.0});
  const auto lab = shuffled(n, 3);
  const Entries s = relabelled(e, lab);
  const auto perm = rcm_permutation(n, s);
  expect_permutation(perm, n);
  // Map each new position back to its original component id.
  std::vector<int> comp(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) comp[lab[v]] = v < 5 ? 0 : v < 12 ? 1 : static_cast<int>(v);
  std::set<int> closed;
  for (int64_t i = 0; i < n; ++i) {
    const int c = comp[perm[i]];
    if (i > 0 && comp[perm[i - 1]] != c) {
      EXPECT_FALSE(closed.count(c)) << "component " << c << " is split in the ordering";
      closed.insert(comp[perm[i - 1]]);
    }
  }
  EXPECT_EQ(bandwidth(reordered(s, perm)), 1);
}

TEST(Rcm, IndependentOfEntryOrderAndStorageSide) {
  // The same pattern given (a) shuffled and with duplicates, (b) upper triangle only, and
  // (c) lower triangle only orders identically: the ordering sees the pattern of A + A^T.
  const int64_t nx = 9, ny = 7, n = nx * ny;
  Entries full = relabelled(grid(nx, ny), shuffled(n, 5));
  Entries upper, lower;
  for (const auto& t : full) {
    if (t.row <= t.col) upper.push_back(t);
    if (t.row >= t.col) lower.push_back(t);
  }
  Entries noisy = full;
  noisy.insert(noisy.end(), full.begin(), full.begin() + 10);
  std::mt19937_64 rng(1);
  std::shuffle(noisy.begin(), noisy.end(), rng);
  const auto ref = rcm_permutation(n, full);
  EXPECT_EQ(rcm_permutation(n, noisy), ref);
  EXPECT_EQ(rcm_permutation(n, upper), ref);
  EXPECT_EQ(rcm_permutation(n, lower), ref);
}

TEST(Rcm, EmptyAndTinyPatterns) {
  EXPECT_TRUE(rcm_permutation(0, Entries{}).empty());
  EXPECT_EQ(rcm_permutation(1, Entries{}), (std::vector<int64_t>{0}));
  expect_permutation(rcm_permutation(4, Entries{}), 4);
}

TEST(Rcm, BadInputIsAnInputError) {
  EXPECT_THROW(rcm_permutation(3, Entries{{0, 3, 1.0}}), InputError);
  EXPECT_THROW(rcm_permutation(3, Entries{{-1, 0, 1.0}}), InputError);
  EXPECT_THROW(invert_permutation({0, 2, 2}), InputError);
  EXPECT_THROW(invert_permutation({0, 3, 1}), InputError);
  Entries e{{0, 5, 1.0}};
  EXPECT_THROW(permute_symmetric(e, {1, 0}), InputError);
  try {
    parse_ordering("metis");
    ADD_FAILURE() << "parse_ordering accepted 'metis'";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("valid: natural, rcm"), std::string::npos) << err.what();
  }
  EXPECT_EQ(parse_ordering("rcm"), Ordering::rcm);
  EXPECT_EQ(parse_ordering("natural"), Ordering::natural);
}

}  // namespace
}  // namespace sparsecomm
