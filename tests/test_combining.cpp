// The combining pattern at larger rank counts: every edge covered exactly once (checked
// inside build on every rank, and again here by a global edge census), groups of at most
// k, friends only inside a region when topology-aware, fewer messages than direct sends
// where neighborhoods overlap, and the same pattern at every run (determinism).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "sparsecomm/comm/combining.hpp"
#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "test_util.hpp"

using namespace sparsecomm;

namespace {

// Gathers (a, b) pairs from every rank, sorted.
std::vector<std::pair<int, int>> gather_pairs(const std::vector<int>& mine) {
  int n = static_cast<int>(mine.size());
  const int p = test::size();
  std::vector<int> counts(p), displs(p + 1, 0);
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int i = 0; i < p; ++i) displs[i + 1] = displs[i] + counts[i];
  std::vector<int> all(static_cast<size_t>(displs[p]));
  MPI_Allgatherv(mine.data(), n, MPI_INT, all.data(), counts.data(), displs.data(), MPI_INT, MPI_COMM_WORLD);
  std::vector<std::pair<int, int>> pairs;
  for (size_t i = 0; i < all.size(); i += 2) pairs.emplace_back(all[i], all[i + 1]);
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

// Global census: (origin, destination) pairs the schedule delivers.
std::vector<std::pair<int, int>> delivered(const CombiningSchedule& s) {
  std::vector<int> mine;
  for (size_t i = 0; i < s.dest.size(); ++i)
    for (int o : s.dest_origins[i]) mine.insert(mine.end(), {o, s.dest[i]});
  // A member that is also my destination gets my data with the stage-1 message.
  for (size_t i = 0; i < s.stage1_send.size(); ++i)
    for (int d : s.stage1_send_dests[i])
      if (d == s.stage1_send[i]) mine.insert(mine.end(), {test::rank(), d});
  return gather_pairs(mine);
}

std::vector<std::pair<int, int>> edges(const Topology& t) {
  std::vector<int> mine;
  for (int d : t.destinations) mine.insert(mine.end(), {test::rank(), d});
  return gather_pairs(mine);
}

void check(const Topology& t, const Locality& loc, const CombiningOptions& opt, bool expect_groups) {
  auto s = CombiningSchedule::build(MPI_COMM_WORLD, t, loc, opt);
  EXPECT_EQ(delivered(s), edges(t)) << "every edge exactly once";
  // Stage-1 peers are group members: topology-aware keeps them inside my region.
  for (int m : s.stage1_send)
    if (opt.aware) {
      EXPECT_TRUE(loc.same_region(m));
    }
  for (int m : s.stage1_recv)
    if (opt.aware) {
      EXPECT_TRUE(loc.same_region(m));
    }
  // Group sizes are bounded by k (a leader's group_members / groups_led).
  if (s.groups_led > 0) {
    EXPECT_LE(s.group_members, s.groups_led * opt.k);
  }
  // Messages: stage 1 + stage 2 beat direct sends when groups formed (a group of g with
  // c common neighbors sends c + g(g-1) instead of g*c messages: fewer whenever c > g).
  const int64_t msgs = allreduce_sum(MPI_COMM_WORLD, static_cast<int64_t>(s.stage1_send.size() + s.dest.size()));
  const int64_t direct = allreduce_sum(MPI_COMM_WORLD, static_cast<int64_t>(t.destinations.size()));
  const int64_t groups = allreduce_sum(MPI_COMM_WORLD, s.groups_led);
  if (expect_groups) {
    EXPECT_GT(groups, 0);
    EXPECT_LT(msgs, direct) << "groups formed, so combining must save messages";
  }
  if (opt.theta >= 2 * opt.k) {
    EXPECT_LE(msgs, direct) << "with theta >= 2k every group saves messages";
  }
  // Deterministic: the same pattern again.
  auto s2 = CombiningSchedule::build(MPI_COMM_WORLD, t, loc, opt);
  EXPECT_EQ(s.dest, s2.dest);
  EXPECT_EQ(s.dest_origins, s2.dest_origins);
  EXPECT_EQ(s.stage1_send, s2.stage1_send);
}

TEST(Combining, MooreAndRandomAtScale) {
  const int p = test::size();
  const bool big = p >= 16;
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 4);
  for (int k : {2, 3, 4, 6}) {
    for (bool aware : {false, true}) {
      CombiningOptions o;
      o.k = k, o.aware = aware, o.theta = 4;
      o.theta = std::max(o.theta, 2 * k);
      check(Topology::moore(MPI_COMM_WORLD, 2, 2), loc, o, big && !aware);
      // ER(0.5) at 16 ranks gives ~7 out-neighbors: too few for theta = 2k to find groups.
      check(Topology::erdos_renyi(MPI_COMM_WORLD, 0.5, 4), loc, o, big && !aware && o.theta <= 4);
    }
  }
}

TEST(Combining, NoFriendsMeansDirect) {
  // A ring: no two ranks share 4 out-neighbors, so everything goes direct.
  const int me = test::rank(), p = test::size();
  std::vector<int> d;
  if (p > 1) d.push_back((me + 1) % p);
  auto t = Topology::from_destinations(MPI_COMM_WORLD, d);
  auto s = CombiningSchedule::build(MPI_COMM_WORLD, t, Locality::ppn(MPI_COMM_WORLD, 2), {});
  EXPECT_TRUE(s.stage1_send.empty());
  EXPECT_EQ(s.groups_led, 0);
  EXPECT_EQ(s.dest, t.destinations);
}

}  // namespace
