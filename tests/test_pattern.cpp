// Pattern from a DistCsr: every SDDE strategy gives the same Pattern as the dense direct
// answer, and the Pattern really moves each ghost value from its owner (checked by a
// halo exchange written here with plain MPI point-to-point calls).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sparsecomm/kernels/halo_pattern.hpp"
#include "sparsecomm/comm/pattern.hpp"
#include "sparsecomm/matrix/generators.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"
#include "test_util.hpp"

using namespace sparsecomm;

namespace {

const std::vector<std::string> kRegions = {"ppn:1", "ppn:2", "ppn:3", "ppn:4", "cyclic:2"};

// Ghost values fetched through the pattern with Isend/Irecv must equal the global ids.
void check_halo_moves_ids(const DistCsr<double>& a, const Pattern& pat) {
  const auto& s = pat.send();
  const auto& r = pat.recv();
  ASSERT_EQ(pat.owned_size(), a.local_cols());
  ASSERT_EQ(pat.ghost_size(), a.num_ghosts());
  ASSERT_EQ(r.size(), a.num_ghosts());
  std::vector<int64_t> owned(static_cast<size_t>(a.local_cols()));
  for (int32_t i = 0; i < a.local_cols(); ++i) owned[i] = a.col_begin() + i;
  std::vector<int64_t> sendbuf(static_cast<size_t>(s.size())), recvbuf(static_cast<size_t>(r.size()), -1);
  for (int64_t k = 0; k < s.size(); ++k) {
    ASSERT_GE(s.indices[k], 0);
    ASSERT_LT(s.indices[k], a.local_cols());
    sendbuf[k] = owned[s.indices[k]];
    EXPECT_EQ(sendbuf[k], s.global_ids[k]);
  }
  std::vector<MPI_Request> reqs;
  for (int i = 0; i < r.num_neighbors(); ++i) {
    reqs.emplace_back();
    MPI_Irecv(recvbuf.data() + r.offsets[i], static_cast<int>(r.count(i)), MPI_INT64_T, r.ranks[i], 5, MPI_COMM_WORLD,
              &reqs.back());
  }
  for (int i = 0; i < s.num_neighbors(); ++i) {
    reqs.emplace_back();
    MPI_Isend(sendbuf.data() + s.offsets[i], static_cast<int>(s.count(i)), MPI_INT64_T, s.ranks[i], 5, MPI_COMM_WORLD,
              &reqs.back());
  }
  MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
  std::vector<int64_t> ghost(static_cast<size_t>(a.num_ghosts()), -1);
  for (int64_t k = 0; k < r.size(); ++k) ghost[r.indices[k]] = recvbuf[k];
  EXPECT_EQ(ghost, a.ghost_ids());
  for (int i = 1; i < s.num_neighbors(); ++i) EXPECT_LT(s.ranks[i - 1], s.ranks[i]);
  for (int i = 1; i < r.num_neighbors(); ++i) EXPECT_LT(r.ranks[i - 1], r.ranks[i]);
}

void check_all_strategies(const DistCsr<double>& a) {
  Pattern ref = pattern_from_matrix_reference(a);
  check_halo_moves_ids(a, ref);
  for (const auto& regions : kRegions) {
    Sdde sdde(MPI_COMM_WORLD, Locality::parse(MPI_COMM_WORLD, regions));
    for (const auto& strategy : Sdde::strategies()) {
      Stats stats;
      Pattern p = pattern_from_matrix(a, sdde, strategy, &stats);
      EXPECT_TRUE(p == ref) << strategy << " with " << regions;
      EXPECT_GT(stats.time("sdde." + strategy), 0.0) << strategy;
    }
  }
  // reverse() is the transpose exchange and an involution.
  Pattern rev = ref.reverse();
  EXPECT_EQ(rev.send(), ref.recv());
  EXPECT_EQ(rev.recv(), ref.send());
  EXPECT_TRUE(rev.reverse() == ref);
}

TEST(PatternGenerated, Laplacian2d) { check_all_strategies(gen::from_spec(MPI_COMM_WORLD, "lap2d:17,13")); }
TEST(PatternGenerated, Rotated) { check_all_strategies(gen::from_spec(MPI_COMM_WORLD, "rotate:24,20")); }
TEST(PatternGenerated, ErdosRenyi) { check_all_strategies(gen::from_spec(MPI_COMM_WORLD, "er:300,0.02,5")); }
TEST(PatternGenerated, Moore) { check_all_strategies(gen::from_spec(MPI_COMM_WORLD, "moore:2,2,9")); }
TEST(PatternGenerated, Rmat) { check_all_strategies(gen::from_spec(MPI_COMM_WORLD, "rmat:8")); }

TEST(PatternGenerated, RanksWithoutRowsOrNeighbors) {
  // 3 rows on up to 8 ranks: some ranks own nothing; diagonal matrix: nobody talks.
  const int p = test::size();
  std::vector<Triplet<double>> t;
  auto rows = RowPartition::balanced(3, p);
  for (int64_t i = rows.begin(test::rank()); i < rows.end(test::rank()); ++i) t.push_back({i, i, 1.0});
  auto diag = DistCsr<double>::from_triplets(MPI_COMM_WORLD, rows, rows, t);
  check_all_strategies(diag);
  // Dense 3x3: every owner talks to every other owner.
  t.clear();
  for (int64_t i = rows.begin(test::rank()); i < rows.end(test::rank()); ++i)
    for (int64_t j = 0; j < 3; ++j) t.push_back({i, j, 1.0 + j});
  check_all_strategies(DistCsr<double>::from_triplets(MPI_COMM_WORLD, rows, rows, t));
}

TEST(PatternGenerated, Rectangular) {
  // 7 x 19: column partition differs from the row partition.
  const int p = test::size();
  auto rows = RowPartition::balanced(7, p), cols = RowPartition::balanced(19, p);
  std::vector<Triplet<double>> t;
  for (int64_t i = rows.begin(test::rank()); i < rows.end(test::rank()); ++i)
    for (int64_t j = (i * 5) % 3; j < 19; j += 3) t.push_back({i, j, 1.0});
  check_all_strategies(DistCsr<double>::from_triplets(MPI_COMM_WORLD, rows, cols, t));
}

class PatternSuiteSparse : public ::testing::TestWithParam<std::string> {};

TEST_P(PatternSuiteSparse, AllStrategiesAgree) {
  SPC_REQUIRE_MATRIX(path, GetParam());
  check_all_strategies(read_matrix_market(MPI_COMM_WORLD, path));
}

INSTANTIATE_TEST_SUITE_P(Real, PatternSuiteSparse,
                         ::testing::Values("HB/bcsstk01", "HB/west0132", "Pajek/Journals", "HB/can_1054",
                                           "HB/bcsstk13", "Grund/bayer10", "SNAP/wiki-Vote"),
                         test::StringParamName());

}  // namespace
