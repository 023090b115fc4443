// Locality: region tables for detected and emulated layouts, including region sizes that
// do not divide P, regions of one rank and round-robin placement.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "sparsecomm/comm/locality.hpp"
#include "test_util.hpp"

using namespace sparsecomm;

namespace {

// Invariants every Locality must satisfy, checked against the expected label of each rank.
void check(const Locality& loc, const std::vector<int>& expected_label) {
  const int p = test::size(), me = test::rank();
  ASSERT_EQ(loc.size(), p);
  ASSERT_EQ(loc.rank(), me);
  // Same partition of ranks as the expected labels (region ids renumbered by lowest rank).
  std::map<int, int> renum;
  for (int r = 0; r < p; ++r) {
    auto it = renum.emplace(expected_label[r], static_cast<int>(renum.size())).first;
    EXPECT_EQ(loc.region_of(r), it->second) << "rank " << r;
  }
  EXPECT_EQ(loc.num_regions(), static_cast<int>(renum.size()));
  int total = 0;
  for (int g = 0; g < loc.num_regions(); ++g) {
    total += loc.region_size(g);
    for (int i = 0; i < loc.region_size(g); ++i) {
      const int r = loc.member(g, i);
      EXPECT_EQ(loc.region_of(r), g);
      EXPECT_EQ(loc.local_index_of(r), i);
      if (i > 0) {
        EXPECT_LT(loc.member(g, i - 1), r) << "members ordered by rank";
      }
    }
  }
  EXPECT_EQ(total, p);
  // The region communicator matches the tables.
  int lsize = 0, lrank = 0;
  MPI_Comm_size(loc.local_comm(), &lsize);
  MPI_Comm_rank(loc.local_comm(), &lrank);
  EXPECT_EQ(lsize, loc.local_size());
  EXPECT_EQ(lrank, loc.local_rank());
  // Every member of my region agrees on my region's membership.
  int my_region = loc.region(), mn = 0, mx = 0;
  MPI_Allreduce(&my_region, &mn, 1, MPI_INT, MPI_MIN, loc.local_comm());
  MPI_Allreduce(&my_region, &mx, 1, MPI_INT, MPI_MAX, loc.local_comm());
  EXPECT_EQ(mn, my_region);
  EXPECT_EQ(mx, my_region);
}

TEST(Locality, PpnBlocksIncludingUnevenLastRegion) {
  const int p = test::size();
  for (int k = 1; k <= 5; ++k) {
    std::vector<int> labels(p);
    for (int r = 0; r < p; ++r) labels[r] = r / k;
    Locality loc = Locality::ppn(MPI_COMM_WORLD, k);
    check(loc, labels);
    EXPECT_EQ(loc.num_regions(), (p + k - 1) / k);
    EXPECT_EQ(loc.describe().rfind("ppn:" + std::to_string(k), 0), 0u) << loc.describe();
  }
}

TEST(Locality, CyclicPlacement) {
  const int p = test::size();
  for (int n : {1, 2, 3}) {
    std::vector<int> labels(p);
    for (int r = 0; r < p; ++r) labels[r] = r % n;
    check(Locality::parse(MPI_COMM_WORLD, "cyclic:" + std::to_string(n)), labels);
  }
}

TEST(Locality, ExplicitListRenumberedByLowestRank) {
  const int p = test::size();
  std::vector<int> labels(p);
  for (int r = 0; r < p; ++r) labels[r] = 10 + (r * 7) % 3;  // scattered, not blocks
  std::string spec = "list:";
  for (int r = 0; r < p; ++r) spec += (r ? "," : "") + std::to_string(labels[r]);
  Locality loc = Locality::parse(MPI_COMM_WORLD, spec);
  check(loc, labels);
  EXPECT_EQ(loc.region_of(0), 0);
}

TEST(Locality, SingleAndFlat) {
  const int p = test::size();
  std::vector<int> own(p), one(p, 0);
  for (int r = 0; r < p; ++r) own[r] = r;
  check(Locality::parse(MPI_COMM_WORLD, "single"), own);
  check(Locality::parse(MPI_COMM_WORLD, "flat"), one);
}

TEST(Locality, DetectGroupsRanksByHost) {
  // Ranks on the same host (processor name) must share a region and no others.
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  const int p = test::size();
  std::vector<char> all(static_cast<size_t>(p) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
  std::map<std::string, int> host_id;
  std::vector<int> labels(p);
  for (int r = 0; r < p; ++r) {
    std::string h(all.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME);
    labels[r] = host_id.emplace(h, static_cast<int>(host_id.size())).first->second;
  }
  check(Locality::parse(MPI_COMM_WORLD, "node"), labels);
}

TEST(Locality, BadSpecsThrowOnEveryRank) {
  for (const char* spec : {"ppn:0", "ppn:x", "ppn:", "cyclic:-1", "bogus", "list:0,1,zz"})
    EXPECT_THROW(Locality::parse(MPI_COMM_WORLD, spec), InputError) << spec;
  // Wrong length of an explicit list.
  std::vector<int> labels(test::size() + 1, 0);
  EXPECT_THROW(Locality::from_labels(MPI_COMM_WORLD, labels), InputError);
  // Ranks passing different lists: every rank throws (and nobody hangs).
  if (test::size() > 1) {
    std::vector<int> mine(test::size(), 0);
    if (test::rank() == 1) mine[0] = 5;
    EXPECT_THROW(Locality::from_labels(MPI_COMM_WORLD, mine), InputError);
  }
  // Ranks passing different specs: every rank throws (nobody waits in MPI_Comm_split).
  if (test::size() > 1) {
    EXPECT_THROW(Locality::parse(MPI_COMM_WORLD, test::rank() == 0 ? "ppn:x" : "ppn:2"), InputError);
    EXPECT_THROW(Locality::parse(MPI_COMM_WORLD, test::rank() == 0 ? "ppn:3" : "ppn:2"), InputError);
  }
  try {
    Locality::parse(MPI_COMM_WORLD, "bogus");
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("ppn:<k>"), std::string::npos) << "lists valid forms: " << e.what();
  }
}

}  // namespace
