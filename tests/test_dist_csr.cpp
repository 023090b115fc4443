// Tests of RowPartition and DistCsr assembly (core/row_partition, matrix/dist_csr).
//
// Every matrix here is defined by a formula over global ids, so each rank can compute the
// whole expected matrix and compare it with the gathered result; rank counts 1..8 make
// some ranks own no rows at all.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "sparsecomm/core/error.hpp"
#include "sparsecomm/matrix/dist_csr.hpp"
#include "kernels/reference.hpp"
#include "sparsecomm/core/row_partition.hpp"
#include "test_util.hpp"

namespace {

using sparsecomm::DistCsr;
using sparsecomm::Duplicates;
using sparsecomm::InputError;
using sparsecomm::RowPartition;
using sparsecomm::Triplet;
using Entries = std::vector<Triplet<double>>;

int world_rank() { return sparsecomm::test::rank(); }
int world_size() { return sparsecomm::test::size(); }

using sparsecomm::test::same_entries;
using sparsecomm::test::sorted;

/// The entries of `all` in the rows that `rank` owns under `rows`.
Entries rows_of(const Entries& all, const RowPartition& rows, int rank) {
  Entries e;
  for (const auto& t : all)
    if (t.row >= rows.begin(rank) && t.row < rows.end(rank)) e.push_back(t);
  return e;
}

/// A pseudo-random sparse nrows x ncols matrix with unique (row, col) and distinct values.
Entries scattered_matrix(int64_t nrows, int64_t ncols, int per_row) {
  Entries e;
  for (int64_t i = 0; i < nrows; ++i) {
    std::set<int64_t> cols;
    for (int k = 0; k < per_row; ++k) cols.insert((i * i * 7 + 13 * k + 3 * i * k) % ncols);
    cols.insert(i % ncols);
    for (int64_t j : cols) e.push_back({i, j, 1.0 + static_cast<double>(i) * 0.25 + static_cast<double>(j) * 0.001});
  }
  return e;
}

/// Structural invariants of the diag/offd split and the ghost map on this rank.
::testing::AssertionResult consistent_blocks(const DistCsr<double>& a, const Entries& expected_all) {
  const int me = a.rank();
  const int64_t cb = a.col_begin(), ce = cb + a.local_cols();
  const auto& g = a.ghost_ids();
  if (!std::is_sorted(g.begin(), g.end()) || std::adjacent_find(g.begin(), g.end()) != g.end())
    return ::testing::AssertionFailure() << "ghost map not sorted and unique";
  if (a.offd().ncols != a.num_ghosts()) return ::testing::AssertionFailure() << "offd.ncols != num_ghosts";
  if (a.diag().nrows != a.local_rows() || a.offd().nrows != a.local_rows())
    return ::testing::AssertionFailure() << "block row counts differ from local_rows";
  if (a.local_rows() != a.row_partition().local_size(me) || a.local_cols() != a.col_partition().local_size(me))
    return ::testing::AssertionFailure() << "local sizes differ from the partitions";
  for (int64_t id : g)
    if (id >= cb && id < ce) return ::testing::AssertionFailure() << "ghost " << id << " is an owned column";
  std::vector<int> used(g.size(), 0);
  for (int32_t c : a.offd().col) {
    if (c < 0 || c >= a.num_ghosts()) return ::testing::AssertionFailure() << "offd column " << c << " out of range";
    used[static_cast<size_t>(c)] = 1;
  }
  for (int32_t c : a.diag().col)
    if (c < 0 || c >= a.local_cols()) return ::testing::AssertionFailure() << "diag column " << c << " out of range";
  if (std::find(used.begin(), used.end(), 0) != used.end())
    return ::testing::AssertionFailure() << "a ghost column has no entry";
  // The ghost set is exactly the off-rank columns appearing in my rows.
  std::set<int64_t> expect;
  for (const auto& t : rows_of(expected_all, a.row_partition(), me))
    if (t.col < cb || t.col >= ce) expect.insert(t.col);
  if (std::vector<int64_t>(expect.begin(), expect.end()) != g)
    return ::testing::AssertionFailure() << "ghost map differs from the off-rank columns of my rows";
  // CSR rows are sorted by column in both blocks.
  for (const auto* blk : {&a.diag(), &a.offd()})
    for (int32_t i = 0; i < blk->nrows; ++i)
      for (int64_t k = blk->row_ptr[i] + 1; k < blk->row_ptr[i + 1]; ++k)
        if (blk->col[k - 1] >= blk->col[k]) return ::testing::AssertionFailure() << "block row " << i << " unsorted";
  return ::testing::AssertionSuccess();
}

/// Every rank caught an InputError with the same message (errors are agreed).
template <class F>
void expect_input_error_everywhere(F&& f, const std::string& needle) {
  std::string msg;
  try {
    f();
    ADD_FAILURE() << "no exception; expected an InputError mentioning '" << needle << "'";
  } catch (const InputError& e) {
    msg = e.what();
    EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
  // Same message on every rank: compare lengths and a checksum across ranks.
  long long local[2] = {static_cast<long long>(msg.size()), 0};
  for (unsigned char ch : msg) local[1] = (local[1] * 131 + ch) % 1000000007LL;
  long long mx[2], mn[2];
  MPI_Allreduce(local, mx, 2, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(local, mn, 2, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  EXPECT_EQ(mx[0], mn[0]) << "ranks got messages of different lengths";
  EXPECT_EQ(mx[1], mn[1]) << "ranks got different messages";
}

// ---------------------------------------------------------------------------------------
// RowPartition
// ---------------------------------------------------------------------------------------

TEST(RowPartition, BalancedPutsTheExtraRowsFirst) {
  const auto p = RowPartition::balanced(10, 3);
  EXPECT_EQ(p.offsets(), (std::vector<int64_t>{0, 4, 7, 10}));
  EXPECT_EQ(p.num_parts(), 3);
  EXPECT_EQ(p.global_size(), 10);
  EXPECT_EQ(p.begin(1), 4);
  EXPECT_EQ(p.end(1), 7);
  EXPECT_EQ(p.local_size(2), 3);
  EXPECT_EQ(RowPartition::balanced(12, 4).offsets(), (std::vector<int64_t>{0, 3, 6, 9, 12}));
  EXPECT_EQ(RowPartition::balanced(0, 4).offsets(), (std::vector<int64_t>{0, 0, 0, 0, 0}));
  EXPECT_EQ(RowPartition().global_size(), 0);
}

// The balanced form (n, P, no table) against the same offsets stored explicitly: every
// begin, end and owner alike, and equal as partitions.
TEST(RowPartition, BalancedFormAnswersAsItsOffsets) {
  for (int64_t n : {0, 1, 3, 7, 10, 64, 101})
    for (int parts : {1, 2, 3, 5, 8, 13}) {
      const auto b = RowPartition::balanced(n, parts);
      const auto e = RowPartition::from_offsets(b.offsets());
      EXPECT_TRUE(b.is_balanced_form());
      EXPECT_FALSE(e.is_balanced_form());
      EXPECT_TRUE(b == e && e == b);
      ASSERT_EQ(b.num_parts(), e.num_parts());
      EXPECT_EQ(b.global_size(), e.global_size());
      for (int q = 0; q < parts; ++q) EXPECT_EQ(b.local_size(q), e.local_size(q)) << n << " over " << parts;
      for (int64_t g = 0; g < n; ++g) EXPECT_EQ(b.owner(g), e.owner(g)) << g << " of " << n << " over " << parts;
      EXPECT_THROW(b.owner(n), InputError);
      EXPECT_THROW(b.owner(-1), InputError);
    }
  EXPECT_FALSE(RowPartition::balanced(10, 3) == RowPartition::balanced(10, 4));
  EXPECT_FALSE(RowPartition::balanced(10, 3) == RowPartition::from_offsets({0, 3, 7, 10}));
}

TEST(RowPartition, EqualLocalSizesGiveTheBalancedForm) {
  const int p = sparsecomm::test::size(), me = sparsecomm::test::rank();
  const auto eq = RowPartition::from_local_sizes(MPI_COMM_WORLD, 5);
  EXPECT_TRUE(eq.is_balanced_form());
  EXPECT_EQ(eq, RowPartition::balanced(5 * p, p));
  const auto uneq = RowPartition::from_local_sizes(MPI_COMM_WORLD, me);  // 0, 1, 2, ...
  EXPECT_EQ(uneq.global_size(), int64_t{p} * (p - 1) / 2);
  for (int q = 0; q < p; ++q) EXPECT_EQ(uneq.local_size(q), q);
  EXPECT_EQ(uneq.is_balanced_form(), p == 1);
}

TEST(RowPartition, FewerRowsThanPartsGivesEmptyParts) {
  const auto p = RowPartition::balanced(3, 5);
  EXPECT_EQ(p.offsets(), (std::vector<int64_t>{0, 1, 2, 3, 3, 3}));
  EXPECT_EQ(p.local_size(4), 0);
  for (int64_t g = 0; g < 3; ++g) EXPECT_EQ(p.owner(g), g);
  EXPECT_THROW(p.owner(3), InputError);
  EXPECT_THROW(p.owner(-1), InputError);
}

TEST(RowPartition, OwnerSkipsEmptyParts) {
  const auto p = RowPartition::from_offsets({0, 2, 2, 5, 5, 6});
  EXPECT_EQ(p.owner(0), 0);
  EXPECT_EQ(p.owner(1), 0);
  EXPECT_EQ(p.owner(2), 2);  // part 1 is empty
  EXPECT_EQ(p.owner(4), 2);
  EXPECT_EQ(p.owner(5), 4);  // part 3 is empty
  EXPECT_THROW(p.owner(6), InputError);
  EXPECT_THROW(p.owner(-1), InputError);
  // Empty first part.
  const auto q = RowPartition::from_offsets({0, 0, 3});
  EXPECT_EQ(q.owner(0), 1);
  EXPECT_THROW(RowPartition::from_offsets({0, 0}).owner(0), InputError);
  // Exhaustive check against a linear scan on a bigger partition.
  const auto r = RowPartition::balanced(37, 8);
  for (int64_t g = 0; g < 37; ++g) {
    int expect = -1;
    for (int k = 0; k < r.num_parts(); ++k)
      if (g >= r.begin(k) && g < r.end(k)) expect = k;
    EXPECT_EQ(r.owner(g), expect) << "gid " << g;
  }
}

TEST(RowPartition, InvalidArgumentsThrow) {
  EXPECT_THROW(RowPartition::balanced(-1, 2), InputError);
  EXPECT_THROW(RowPartition::balanced(5, 0), InputError);
  EXPECT_THROW(RowPartition::from_offsets({}), InputError);
  EXPECT_THROW(RowPartition::from_offsets({0}), InputError);
  EXPECT_THROW(RowPartition::from_offsets({1, 2}), InputError);
  EXPECT_THROW(RowPartition::from_offsets({0, 3, 2}), InputError);
  EXPECT_NO_THROW(RowPartition::from_offsets({0, 0, 0}));
  EXPECT_EQ(RowPartition::from_offsets({0, 4, 7, 10}), RowPartition::balanced(10, 3));
  EXPECT_NE(RowPartition::from_offsets({0, 5, 7, 10}), RowPartition::balanced(10, 3));
}

TEST(RowPartition, FromLocalSizes) {
  const int p = world_size(), me = world_rank();
  auto size_of = [](int r) -> int64_t { return r % 3 == 1 ? 0 : r + 1; };  // some empty parts
  const auto part = RowPartition::from_local_sizes(MPI_COMM_WORLD, size_of(me));
  std::vector<int64_t> expect(static_cast<size_t>(p) + 1, 0);
  for (int r = 0; r < p; ++r) expect[r + 1] = expect[r] + size_of(r);
  EXPECT_EQ(part.offsets(), expect);
  EXPECT_EQ(part.local_size(me), size_of(me));
  // A negative size on one rank makes every rank throw.
  expect_input_error_everywhere(
      [&] { RowPartition::from_local_sizes(MPI_COMM_WORLD, me == p - 1 ? -2 : 3); }, "negative");
}

// ---------------------------------------------------------------------------------------
// DistCsr::from_triplets
// ---------------------------------------------------------------------------------------

/// Builds `all` with each rank passing the entries of its own rows.
DistCsr<double> build(const Entries& all, int64_t nrows, int64_t ncols, Duplicates dup = Duplicates::sum) {
  const int p = world_size();
  const auto rows = RowPartition::balanced(nrows, p), cols = RowPartition::balanced(ncols, p);
  return DistCsr<double>::from_triplets(MPI_COMM_WORLD, rows, cols, rows_of(all, rows, world_rank()), dup);
}

TEST(DistCsrFromTriplets, SquareHandMade) {
  // 6x6: diagonal, a cyclic superdiagonal and one scattered entry per row.
  Entries all;
  for (int64_t i = 0; i < 6; ++i) {
    std::set<int64_t> cols = {i, (i + 1) % 6, (i * 5 + 3) % 6};
    for (int64_t j : cols) all.push_back({i, j, 10.0 * i + j + 0.5});
  }
  all = sorted(all);
  const auto a = build(all, 6, 6);
  EXPECT_EQ(a.global_rows(), 6);
  EXPECT_EQ(a.global_cols(), 6);
  EXPECT_EQ(a.global_nnz(), static_cast<int64_t>(all.size()));
  EXPECT_EQ(a.row_begin(), RowPartition::balanced(6, world_size()).begin(world_rank()));
  EXPECT_EQ(a.comm(), MPI_COMM_WORLD);
  EXPECT_TRUE(same_entries(sorted(a.gather_all()), all));
  EXPECT_TRUE(same_entries(a.local_triplets(), rows_of(all, a.row_partition(), world_rank())));
  EXPECT_TRUE(consistent_blocks(a, all));
  // The diag block holds exactly the entries whose column this rank owns.
  int64_t owned = 0;
  for (const auto& t : rows_of(all, a.row_partition(), world_rank()))
    owned += (t.col >= a.col_begin() && t.col < a.col_begin() + a.local_cols()) ? 1 : 0;
  EXPECT_EQ(a.diag().nnz(), owned);
  EXPECT_EQ(a.local_nnz(), static_cast<int64_t>(rows_of(all, a.row_partition(), world_rank()).size()));
}

TEST(DistCsrFromTriplets, Rectangular) {
  for (auto [nr, nc] : {std::pair<int64_t, int64_t>{5, 9}, {9, 4}, {1, 11}, {13, 1}}) {
    SCOPED_TRACE(std::to_string(nr) + "x" + std::to_string(nc));
    const auto all = sorted(scattered_matrix(nr, nc, 3));
    const auto a = build(all, nr, nc);
    EXPECT_EQ(a.global_rows(), nr);
    EXPECT_EQ(a.global_cols(), nc);
    EXPECT_EQ(a.col_partition(), RowPartition::balanced(nc, world_size()));
    EXPECT_EQ(a.local_cols(), RowPartition::balanced(nc, world_size()).local_size(world_rank()));
    EXPECT_TRUE(same_entries(sorted(a.gather_all()), all));
    EXPECT_TRUE(consistent_blocks(a, all));
  }
}

TEST(DistCsrFromTriplets, RanksWithoutRows) {
  // Two rows: from 3 ranks on, some ranks own nothing (and no columns either).
  const Entries all = {{0, 0, 2.0}, {0, 1, -1.0}, {1, 0, -1.0}, {1, 1, 2.0}};
  const auto a = build(all, 2, 2);
  if (world_rank() >= 2) {
    EXPECT_EQ(a.local_rows(), 0);
    EXPECT_EQ(a.local_cols(), 0);
    EXPECT_EQ(a.local_nnz(), 0);
    EXPECT_EQ(a.num_ghosts(), 0);
    EXPECT_EQ(a.diag().row_ptr.size(), 1u);
    EXPECT_TRUE(a.local_triplets().empty());
  }
  EXPECT_EQ(a.global_nnz(), 4);
  EXPECT_TRUE(same_entries(sorted(a.gather_all()), all));
  EXPECT_TRUE(consistent_blocks(a, all));
  // An empty matrix, and a matrix with rows but no entries.
  const auto empty = build({}, 0, 0);
  EXPECT_EQ(empty.global_nnz(), 0);
  EXPECT_TRUE(empty.gather_all().empty());
  const auto zero = build({}, 5, 3);
  EXPECT_EQ(zero.global_nnz(), 0);
  EXPECT_EQ(zero.local_rows(), RowPartition::balanced(5, world_size()).local_size(world_rank()));
  EXPECT_EQ(zero.diag().row_ptr.size(), static_cast<size_t>(zero.local_rows()) + 1);
}

/// Each owned row r gets (r, r) twice and (r, r+1 mod n) twice, in interleaved order.
Entries with_duplicates(int64_t n, const RowPartition& rows, int rank) {
  Entries e;
  for (int64_t r = rows.begin(rank); r < rows.end(rank); ++r) {
    e.push_back({r, r, 1.0});
    e.push_back({r, (r + 1) % n, 2.0});
    e.push_back({r, r, 3.0});
    e.push_back({r, (r + 1) % n, 5.0});
  }
  return e;
}

TEST(DistCsrFromTriplets, DuplicatePolicies) {
  const int64_t n = 7;
  const auto rows = RowPartition::balanced(n, world_size());
  const auto mine = with_duplicates(n, rows, world_rank());
  {
    const auto a = DistCsr<double>::from_triplets(MPI_COMM_WORLD, rows, rows, mine, Duplicates::sum);
    Entries expect;
    for (int64_t r = 0; r < n; ++r) expect.push_back({r, r, 4.0}), expect.push_back({r, (r + 1) % n, 7.0});
    EXPECT_EQ(a.global_nnz(), 2 * n);
    EXPECT_TRUE(same_entries(sorted(a.gather_all()), sorted(expect)));
  }
  {
    const auto a = DistCsr<double>::from_triplets(MPI_COMM_WORLD, rows, rows, mine, Duplicates::keep_first);
    Entries expect;
    for (int64_t r = 0; r < n; ++r) expect.push_back({r, r, 1.0}), expect.push_back({r, (r + 1) % n, 2.0});
    EXPECT_TRUE(same_entries(sorted(a.gather_all()), sorted(expect)));
  }
  expect_input_error_everywhere(
      [&] { DistCsr<double>::from_triplets(MPI_COMM_WORLD, rows, rows, mine, Duplicates::error); }, "duplicate");
  // A duplicate on rank 0 only (some ranks own no rows at 8 ranks): still everyone throws.
  Entries one;
  for (int64_t r = rows.begin(world_rank()); r < rows.end(world_rank()); ++r) one.push_back({r, r, 1.0});
  if (world_rank() == 0) one.push_back({0, 0, 1.0});
  expect_input_error_everywhere(
      [&] { DistCsr<double>::from_triplets(MPI_COMM_WORLD, rows, rows, one, Duplicates::error); }, "duplicate");
  // Without duplicates the error policy accepts.
  Entries unique;
  for (int64_t r = rows.begin(world_rank()); r < rows.end(world_rank()); ++r) unique.push_back({r, r, 1.0});
  EXPECT_EQ(DistCsr<double>::from_triplets(MPI_COMM_WORLD, rows, rows, unique, Duplicates::error).global_nnz(), n);
}

TEST(DistCsrFromTriplets, EntryInRowNotOwnedThrowsEverywhere) {
  const int p = world_size(), me = world_rank();
  const int64_t n = 10;
  const auto rows = RowPartition::balanced(n, p);
  Entries mine;
  for (int64_t r = rows.begin(me); r < rows.end(me); ++r) mine.push_back({r, r, 1.0});
  // Only the last rank is wrong: row 0 (owned by rank 0), or row n when alone.
  if (me == p - 1) mine.push_back({p > 1 ? 0 : n, 0, 1.0});
  expect_input_error_everywhere([&] { DistCsr<double>::from_triplets(MPI_COMM_WORLD, rows, rows, mine); },
                                "not owned");
  // A negative row id too.
  Entries neg;
  if (me == 0) neg.push_back({-1, 0, 1.0});
  expect_input_error_everywhere([&] { DistCsr<double>::from_triplets(MPI_COMM_WORLD, rows, rows, neg); },
                                "not owned");
  // The communicator is still usable afterwards.
  EXPECT_EQ(DistCsr<double>::from_triplets(MPI_COMM_WORLD, rows, rows, rows_of({{0, 0, 1.0}}, rows, me)).global_nnz(),
            1);
}

TEST(DistCsrFromTriplets, ColumnOutOfRangeThrowsEverywhere) {
  const int p = world_size(), me = world_rank();
  const auto rows = RowPartition::balanced(4, p), cols = RowPartition::balanced(6, p);
  for (int64_t bad : {int64_t{6}, int64_t{-1}, int64_t{1} << 40}) {
    SCOPED_TRACE("column " + std::to_string(bad));
    Entries mine;
    if (me == 0) mine.push_back({0, bad, 1.0});  // rank 0 always owns row 0
    expect_input_error_everywhere(
        [&] { DistCsr<double>::from_triplets(MPI_COMM_WORLD, rows, cols, mine); }, "out of range");
  }
}

TEST(DistCsrFromTriplets, PartitionsMustMatchTheCommunicator) {
  const int p = world_size();
  const auto good = RowPartition::balanced(10, p), bad = RowPartition::balanced(10, p + 1);
  expect_input_error_everywhere([&] { DistCsr<double>::from_triplets(MPI_COMM_WORLD, bad, good, {}); }, "parts");
  expect_input_error_everywhere([&] { DistCsr<double>::from_triplets(MPI_COMM_WORLD, good, bad, {}); }, "parts");
  expect_input_error_everywhere([&] { DistCsr<double>::from_distributed_triplets(MPI_COMM_WORLD, bad, good, {}); },
                                "parts");
}

TEST(DistCsrFromTriplets, GhostMapOnScatteredMatrix) {
  for (int64_t n : {int64_t{3}, int64_t{40}, int64_t{157}}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const auto all = sorted(scattered_matrix(n, n, 6));
    const auto a = build(all, n, n);
    EXPECT_TRUE(consistent_blocks(a, all));
    EXPECT_TRUE(same_entries(sorted(a.gather_all()), all));
    // At one rank there is nothing off-rank.
    if (world_size() == 1) {
      EXPECT_EQ(a.num_ghosts(), 0);
    }
  }
}

TEST(DistCsrFromTriplets, LocalTripletsAndGatherRoundTrip) {
  const int64_t nr = 31, nc = 23;
  const auto all = sorted(scattered_matrix(nr, nc, 4));
  const auto a = build(all, nr, nc);
  // Rebuild from this rank's local triplets: identical blocks and ghost map.
  const auto b = DistCsr<double>::from_triplets(MPI_COMM_WORLD, a.row_partition(), a.col_partition(),
                                                a.local_triplets(), Duplicates::error);
  EXPECT_TRUE(same_entries(a.local_triplets(), b.local_triplets()));
  EXPECT_EQ(a.ghost_ids(), b.ghost_ids());
  EXPECT_EQ(a.diag().row_ptr, b.diag().row_ptr);
  EXPECT_EQ(a.diag().col, b.diag().col);
  EXPECT_EQ(a.diag().val, b.diag().val);
  EXPECT_EQ(a.offd().row_ptr, b.offd().row_ptr);
  EXPECT_EQ(a.offd().col, b.offd().col);
  EXPECT_EQ(a.offd().val, b.offd().val);
  // Rebuild from the gathered matrix held by rank 0 alone.
  const auto gathered = a.gather_all();
  EXPECT_TRUE(same_entries(gathered, all));  // gather_all comes in row, then column order
  const auto c = DistCsr<double>::from_distributed_triplets(MPI_COMM_WORLD, a.row_partition(), a.col_partition(),
                                                            world_rank() == 0 ? gathered : Entries{},
                                                            Duplicates::error);
  EXPECT_TRUE(same_entries(c.local_triplets(), a.local_triplets()));
  EXPECT_EQ(c.ghost_ids(), a.ghost_ids());
}

// ---------------------------------------------------------------------------------------
// DistCsr::from_distributed_triplets
// ---------------------------------------------------------------------------------------

TEST(DistCsrFromDistributedTriplets, AnyRankMayHoldAnyRow) {
  const int p = world_size(), me = world_rank();
  const int64_t nr = 45, nc = 38;
  const auto all = sorted(scattered_matrix(nr, nc, 5));
  // Entry k goes to a rank unrelated to its row, in reversed order within each rank.
  Entries mine;
  for (size_t k = 0; k < all.size(); ++k)
    if (static_cast<int>((all[k].row * 7 + all[k].col * 3 + static_cast<int64_t>(k)) % p) == me) mine.push_back(all[k]);
  std::reverse(mine.begin(), mine.end());
  const auto rows = RowPartition::balanced(nr, p), cols = RowPartition::balanced(nc, p);
  const auto a = DistCsr<double>::from_distributed_triplets(MPI_COMM_WORLD, rows, cols, mine, Duplicates::error);
  EXPECT_EQ(a.global_nnz(), static_cast<int64_t>(all.size()));
  EXPECT_TRUE(same_entries(sorted(a.gather_all()), all));
  EXPECT_TRUE(consistent_blocks(a, all));
}

TEST(DistCsrFromDistributedTriplets, DuplicatesAcrossRanks) {
  const int p = world_size(), me = world_rank();
  const int64_t n = 9;
  const auto part = RowPartition::balanced(n, p);
  // Every rank contributes (i, i) for every row i, with value rank + 1.
  Entries mine;
  for (int64_t i = 0; i < n; ++i) mine.push_back({i, i, static_cast<double>(me + 1)});
  const auto s = DistCsr<double>::from_distributed_triplets(MPI_COMM_WORLD, part, part, mine, Duplicates::sum);
  const double total = p * (p + 1) / 2.0;
  for (const auto& t : s.gather_all()) EXPECT_EQ(t.val, total);
  EXPECT_EQ(s.global_nnz(), n);
  const auto k = DistCsr<double>::from_distributed_triplets(MPI_COMM_WORLD, part, part, mine, Duplicates::keep_first);
  EXPECT_EQ(k.global_nnz(), n);
  for (const auto& t : k.gather_all()) {
    EXPECT_EQ(t.row, t.col);
    EXPECT_TRUE(t.val >= 1.0 && t.val <= p && t.val == std::floor(t.val)) << t.val;  // one of the contributions
  }
  if (p > 1) {
    expect_input_error_everywhere(
        [&] { DistCsr<double>::from_distributed_triplets(MPI_COMM_WORLD, part, part, mine, Duplicates::error); },
        "duplicate");
  }
}

TEST(DistCsrFromDistributedTriplets, RowOutOfRangeThrowsEverywhere) {
  const int p = world_size(), me = world_rank();
  const auto part = RowPartition::balanced(6, p);
  Entries mine;
  if (me == p - 1) mine.push_back({6, 0, 1.0});
  expect_input_error_everywhere(
      [&] { DistCsr<double>::from_distributed_triplets(MPI_COMM_WORLD, part, part, mine); }, "out of range");
  Entries col;
  if (me == p - 1) col.push_back({0, 6, 1.0});
  expect_input_error_everywhere(
      [&] { DistCsr<double>::from_distributed_triplets(MPI_COMM_WORLD, part, part, col); }, "out of range");
}

// ---------------------------------------------------------------------------------------
// Products through the blocks
// ---------------------------------------------------------------------------------------

TEST(DistCsrMultiply, RectangularAgainstSerialReference) {
  for (auto [nr, nc] : {std::pair<int64_t, int64_t>{17, 29}, {29, 17}, {3, 40}}) {
    const auto all = sorted(scattered_matrix(nr, nc, 5));
    const auto a = build(all, nr, nc);
    const auto ref = sparsecomm::reference::to_eigen(all, nr, nc);
    for (int width : {1, 2}) {
      SCOPED_TRACE(std::to_string(nr) + "x" + std::to_string(nc) + " width " + std::to_string(width));
      auto xv = [&](int64_t g, int k) { return std::cos(0.7 * static_cast<double>(g)) - 0.3 * k; };
      std::vector<double> x_local(static_cast<size_t>(a.local_cols()) * width), x_ghost;
      for (int32_t i = 0; i < a.local_cols(); ++i)
        for (int k = 0; k < width; ++k) x_local[static_cast<size_t>(i) * width + k] = xv(a.col_begin() + i, k);
      for (int64_t g : a.ghost_ids())
        for (int k = 0; k < width; ++k) x_ghost.push_back(xv(g, k));
      std::vector<double> y(static_cast<size_t>(a.local_rows()) * width);
      a.multiply_diag(x_local.data(), y.data(), width);
      a.multiply_offd_add(x_ghost.data(), y.data(), width);
      for (int k = 0; k < width; ++k) {
        std::vector<double> xk(static_cast<size_t>(nc));
        for (int64_t g = 0; g < nc; ++g) xk[g] = xv(g, k);
        const auto yk = sparsecomm::reference::spmv(ref, xk);
        for (int32_t i = 0; i < a.local_rows(); ++i) {
          const double want = yk[static_cast<size_t>(a.row_begin() + i)];
          EXPECT_NEAR(y[static_cast<size_t>(i) * width + k], want, 1e-12 * (1 + std::fabs(want)));
        }
      }
    }
  }
}

TEST(DistCsrFloat, AssemblesAndMultiplies) {
  const int p = world_size(), me = world_rank();
  const auto part = RowPartition::balanced(5, p);
  std::vector<Triplet<float>> mine;
  for (int64_t r = part.begin(me); r < part.end(me); ++r) {
    mine.push_back({r, r, 2.0f});
    if (r > 0) mine.push_back({r, r - 1, -1.0f});
    if (r < 4) mine.push_back({r, r + 1, -1.0f});
  }
  const auto a = DistCsr<float>::from_triplets(MPI_COMM_WORLD, part, part, mine);
  EXPECT_EQ(a.global_nnz(), 13);
  EXPECT_EQ(a.gather_all().size(), 13u);
  // x = 1: interior rows give 0, the two end rows 1.
  std::vector<float> x(static_cast<size_t>(a.local_cols()), 1.0f), g(static_cast<size_t>(a.num_ghosts()), 1.0f);
  std::vector<float> y(static_cast<size_t>(a.local_rows()));
  a.multiply_diag(x.data(), y.data());
  a.multiply_offd_add(g.data(), y.data());
  for (int32_t i = 0; i < a.local_rows(); ++i) {
    const int64_t r = a.row_begin() + i;
    EXPECT_EQ(y[i], (r == 0 || r == 4) ? 1.0f : 0.0f);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------
// DistCsr::from_local_csr: the user's own CSR arrays
// ---------------------------------------------------------------------------------------

namespace {

/// My rows of `all` (rows partitioned by `rows`) as CSR arrays of index type I: each row's
/// columns in reverse order, the first entry of every row split into two halves (summed
/// back by Duplicates::sum), and row_ptr starting at `base` (the arrays start at index 0).
template <class I>
void local_csr(const Entries& all, const RowPartition& rows, int me, I base, std::vector<I>& rp, std::vector<I>& cols,
               std::vector<double>& vals) {
  const Entries mine = rows_of(all, rows, me);
  rp.assign(1, base);
  for (int64_t r = rows.begin(me); r < rows.end(me); ++r) {
    Entries row;
    for (const auto& t : mine)
      if (t.row == r) row.push_back(t);
    std::reverse(row.begin(), row.end());
    for (size_t k = 0; k < row.size(); ++k) {
      if (k == 0) {
        cols.push_back(static_cast<I>(row[k].col)), vals.push_back(row[k].val / 2);
        cols.push_back(static_cast<I>(row[k].col)), vals.push_back(row[k].val / 2);
      } else {
        cols.push_back(static_cast<I>(row[k].col)), vals.push_back(row[k].val);
      }
    }
    rp.push_back(base + static_cast<I>(cols.size()));
  }
}

}  // namespace

/// from_local_csr on my rows of `all` as index type I (row_ptr from `base`) builds exactly
/// the blocks from_triplets builds.
template <class I>
void expect_same_as_triplets(const Entries& all, int64_t n, I base) {
  const int me = world_rank();
  const auto rows = RowPartition::balanced(n, world_size());
  const auto ref = DistCsr<double>::from_triplets(MPI_COMM_WORLD, rows, rows, rows_of(all, rows, me));
  std::vector<I> rp, cols;
  std::vector<double> vals;
  local_csr<I>(all, rows, me, base, rp, cols, vals);
  const auto a = DistCsr<double>::from_local_csr(MPI_COMM_WORLD, rows.begin(me), static_cast<int32_t>(rows.local_size(me)),
                                                 rp.data(), cols.data(), vals.data());
  EXPECT_TRUE(consistent_blocks(a, all));
  EXPECT_EQ(a.ghost_ids(), ref.ghost_ids());
  EXPECT_EQ(a.diag().row_ptr, ref.diag().row_ptr);
  EXPECT_EQ(a.offd().col, ref.offd().col);
  EXPECT_EQ(a.global_nnz(), ref.global_nnz());
  EXPECT_EQ(a.global_duplicates(), n);  // one split entry per row
  EXPECT_TRUE(same_entries(sorted(a.gather_all()), sorted(all)));
}

TEST(DistCsrFromLocalCsr, SameMatrixAsFromTriplets) {
  const int64_t n = 41;
  const Entries all = scattered_matrix(n, n, 4);
  expect_same_as_triplets<int64_t>(all, n, 5);  // row_ptr need not start at 0
  expect_same_as_triplets<int32_t>(all, n, 0);  // 32-bit indices
}

TEST(DistCsrFromLocalCsr, RectangularWithColumnPartitionAndEmptyRanks) {
  const int p = world_size(), me = world_rank();
  // Fewer rows than ranks at 8 ranks: some ranks pass nrows = 0 and null arrays.
  const int64_t nrows = 5, ncols = 23;
  const Entries all = scattered_matrix(nrows, ncols, 3);
  const auto rows = RowPartition::balanced(nrows, p), cols = RowPartition::balanced(ncols, p);
  std::vector<int64_t> rp, c;
  std::vector<double> v;
  local_csr<int64_t>(all, rows, me, 0, rp, c, v);
  const auto a = DistCsr<double>::from_local_csr(MPI_COMM_WORLD, rows.begin(me), static_cast<int32_t>(rows.local_size(me)),
                                                 rp.data(), c.empty() ? nullptr : c.data(), v.empty() ? nullptr : v.data(),
                                                 cols);
  EXPECT_EQ(a.global_cols(), ncols);
  EXPECT_TRUE(consistent_blocks(a, all));
  EXPECT_TRUE(same_entries(sorted(a.gather_all()), sorted(all)));
}

TEST(DistCsrFromLocalCsr, BadInputIsAnErrorOnEveryRank) {
  const int p = world_size(), me = world_rank();
  const int64_t n = 12;
  const auto rows = RowPartition::balanced(n, p);
  const Entries all = scattered_matrix(n, n, 2);
  std::vector<int64_t> rp, cols;
  std::vector<double> vals;
  local_csr<int64_t>(all, rows, me, 0, rp, cols, vals);
  const int32_t nl = static_cast<int32_t>(rows.local_size(me));
  // The last rank claims a row_begin one too far (at one rank: row 1 instead of 0).
  const int64_t begin = rows.begin(me) + (me == p - 1 ? 1 : 0);
  expect_input_error_everywhere(
      [&] { DistCsr<double>::from_local_csr(MPI_COMM_WORLD, begin, nl, rp.data(), cols.data(), vals.data()); },
      "row_begin");
  // A column out of range on rank 0 only.
  std::vector<int64_t> bad = cols;
  if (me == 0 && !bad.empty()) bad[0] = n;
  expect_input_error_everywhere(
      [&] { DistCsr<double>::from_local_csr(MPI_COMM_WORLD, rows.begin(me), nl, rp.data(), bad.data(), vals.data()); },
      "out of range");
  // Decreasing row pointers on rank 0 (which always has rows: n >= ranks here).
  std::vector<int64_t> down = rp;
  if (me == 0 && nl > 0) std::swap(down[0], down[static_cast<size_t>(nl)]);
  expect_input_error_everywhere(
      [&] { DistCsr<double>::from_local_csr(MPI_COMM_WORLD, rows.begin(me), nl, down.data(), cols.data(), vals.data()); },
      "row_ptr decreases");
  // Duplicates::error rejects the split first entries, everywhere.
  expect_input_error_everywhere(
      [&] {
        DistCsr<double>::from_local_csr(MPI_COMM_WORLD, rows.begin(me), nl, rp.data(), cols.data(), vals.data(),
                                        RowPartition(), Duplicates::error);
      },
      "duplicate");
}
