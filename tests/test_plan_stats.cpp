// The plan statistics of virtual ranks (plan_stats.hpp) equal what the real runs build,
// rank by rank: the graphs of the topology specs, the combining schedules (every field),
// and the per-step message and byte counts, stages and groups of the gather backends.
// Run under MPI at several rank counts, and under SMPI at simulated scale.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "comm/combining.hpp"
#include "comm/gather_plan.hpp"
#include "comm/plan_stats.hpp"
#include "test_util.hpp"

using namespace sparsecomm;

namespace {

std::string describe(const Stats& s) {
  std::string o;
  auto mc = [](const MessageCounts& m) { return std::to_string(m.msgs) + "/" + std::to_string(m.bytes); };
  for (const auto& [step, c] : s.steps())
    o += step + ": sent intra " + mc(c.sent_intra) + " inter " + mc(c.sent_inter) + ", recv intra " +
         mc(c.recv_intra) + " inter " + mc(c.recv_inter) + "; ";
  return o;
}

const std::vector<std::string> kTopos = {"er:0.3", "er:0.7,5", "moore:2,1", "moore:2,2", "moore:3,1"};

TEST(PlanStats, GraphsEqualTheDistributedTopologies) {
  for (const auto& spec : kTopos) {
    const Topology t = Topology::parse(MPI_COMM_WORLD, spec);
    const auto g = virt::Graph::from_spec(test::size(), spec);
    EXPECT_EQ(g.dest[test::rank()], t.destinations) << spec;
    EXPECT_EQ(g.src[test::rank()], t.sources) << spec;
  }
}

TEST(PlanStats, RegionsEqualLocality) {
  for (const std::string spec : {"ppn:3", "cyclic:2", "flat", "single"}) {
    const Locality loc = Locality::parse(MPI_COMM_WORLD, spec);
    const auto r = virt::regions_from_spec(test::size(), spec);
    for (int a = 0; a < test::size(); ++a)
      EXPECT_EQ(r[test::rank()] == r[a], loc.same_region(a)) << spec << " rank " << a;
  }
}

// Every field of every rank's combining schedule, for pairs and k-groups, agnostic and aware.
TEST(PlanStats, CombiningSchedulesEqualBuild) {
  const Locality loc = Locality::parse(MPI_COMM_WORLD, "ppn:4");
  const auto region = virt::regions_from_spec(test::size(), "ppn:4");
  for (const auto& spec : kTopos)
    for (int k : {2, 3, 4})
      for (bool aware : {false, true})
        for (int theta : {2, 4}) {
          CombiningOptions opt;
          opt.k = k, opt.aware = aware, opt.theta = theta;
          const Topology t = Topology::parse(MPI_COMM_WORLD, spec);
          const CombiningSchedule real = CombiningSchedule::build(MPI_COMM_WORLD, t, loc, opt);
          const auto all = virt::combining_schedules(virt::Graph::from_spec(test::size(), spec), region, opt);
          const CombiningSchedule& v = all[test::rank()];
          const std::string what = spec + " k=" + std::to_string(k) + (aware ? " aware" : " agnostic") +
                                   " theta=" + std::to_string(theta) + " rank " + std::to_string(test::rank());
          EXPECT_EQ(v.stage1_send, real.stage1_send) << what;
          EXPECT_EQ(v.stage1_recv, real.stage1_recv) << what;
          EXPECT_EQ(v.stage1_send_dests, real.stage1_send_dests) << what;
          EXPECT_EQ(v.stage1_recv_dests, real.stage1_recv_dests) << what;
          EXPECT_EQ(v.dest, real.dest) << what;
          EXPECT_EQ(v.dest_origins, real.dest_origins) << what;
          EXPECT_EQ(v.from, real.from) << what;
          EXPECT_EQ(v.from_origins, real.from_origins) << what;
          EXPECT_EQ(v.groups_led, real.groups_led) << what;
          EXPECT_EQ(v.group_members, real.group_members) << what;
          EXPECT_EQ(v.rounds, real.rounds) << what;
        }
}

// The per-step counts of the gather plans themselves (what the benchmarks print).
void check_gather_counts(const std::vector<std::string>& topos, const std::vector<int>& ks) {
  const std::string layout = "ppn:4";
  const Locality loc = Locality::parse(MPI_COMM_WORLD, layout);
  const auto region = virt::regions_from_spec(test::size(), layout);
  std::vector<std::string> backends;
  for (const auto& b : gather_backend_names())
    if (b == "p2p" || b == "neighbor" || b == "combined") backends.push_back(b);
  ASSERT_FALSE(backends.empty());
  for (const auto& spec : topos)
    for (const auto& backend : backends)
      for (int k : ks) {
        if (backend != "combined" && k != ks.front()) continue;
        GatherOptions opt;
        opt.value_bytes = 4;
        opt.combining.k = k;
        opt.combining.aware = k == 4;
        const int64_t count = 3;
        const Topology t = Topology::parse(MPI_COMM_WORLD, spec);
        auto plan = make_gather_plan(backend, t, loc, MPI_COMM_WORLD, count, opt);
        const auto v = virt::gather_counts(backend, virt::Graph::from_spec(test::size(), spec), region, opt, count);
        const auto& mine = v[test::rank()];
        const std::string what = spec + " " + backend + " k=" + std::to_string(k) + " rank " + std::to_string(test::rank());
        EXPECT_EQ(describe(mine.counts), describe(plan->iteration_counts())) << what;
        EXPECT_EQ(mine.stages, plan->stages()) << what;
        EXPECT_EQ(mine.groups_led, plan->groups_led()) << what;
      }
}

TEST(PlanStats, GatherCountsEqualThePlans) { check_gather_counts(kTopos, {2, 4}); }

// A lighter version for the simulated runs (SMPI at 64 ranks): sparse graphs, pairs and
// aware groups of 4.
TEST(PlanStats, SparseGatherCountsEqualThePlans) { check_gather_counts({"moore:2,1", "er:0.08"}, {2, 4}); }

TEST(PlanStats, BadInputIsAnInputError) {
  EXPECT_THROW(virt::Graph::from_spec(4, "er:1.5"), InputError);
  EXPECT_THROW(virt::Graph::from_spec(4, "torus:2"), InputError);
  EXPECT_THROW(virt::Graph::from_spec(0, "moore:2,1"), InputError);
  EXPECT_THROW(virt::Graph::from_destinations(3, {{1}, {2}, {2}}), InputError);  // self-loop
  EXPECT_THROW(virt::Graph::from_destinations(3, {{1}, {5}, {0}}), InputError);  // out of range
  EXPECT_THROW(virt::regions_from_spec(8, "ppn:0"), InputError);
  EXPECT_THROW(virt::regions_from_spec(8, "node"), InputError);  // needs real hosts
  const auto g = virt::Graph::from_spec(8, "moore:2,1");
  CombiningOptions bad;
  bad.k = 1;
  EXPECT_THROW(virt::combining_schedules(g, virt::regions_from_spec(8, "flat"), bad), InputError);
  EXPECT_THROW(virt::gather_counts("aggregated", g, virt::regions_from_spec(8, "flat"), {}, 1), InputError);
  EXPECT_THROW(virt::gather_counts("p2p", g, std::vector<int>(3, 0), {}, 1), InputError);
}

// Both ways of counting common neighborhoods give the same schedules (the MPI comparison
// above mostly takes the bitset path at these small sizes), on sparse and dense graphs.
TEST(PlanStats, WeightMethodsAgree) {
  if (test::rank() != 0) GTEST_SKIP() << "serial";
  for (const std::string spec : {"moore:2,2", "moore:3,1", "er:0.05", "er:0.4,3"}) {
    const auto g = virt::Graph::from_spec(200, spec);
    for (int k : {2, 3, 6})
      for (bool aware : {false, true}) {
        CombiningOptions opt;
        opt.k = k, opt.aware = aware;
        const auto region = virt::regions_from_spec(200, "ppn:8");
        const auto a = virt::combining_schedules(g, region, opt, virt::WeightMethod::inverted);
        const auto b = virt::combining_schedules(g, region, opt, virt::WeightMethod::bitset);
        int groups = 0;
        for (int r = 0; r < 200; ++r) {
          ASSERT_EQ(a[r].dest_origins, b[r].dest_origins) << spec << " k=" << k << " rank " << r;
          ASSERT_EQ(a[r].stage1_send_dests, b[r].stage1_send_dests) << spec << " k=" << k << " rank " << r;
          ASSERT_EQ(a[r].from, b[r].from) << spec << " k=" << k << " rank " << r;
          groups += a[r].groups_led;
        }
        EXPECT_GT(groups, 0) << spec << " k=" << k << ": common neighborhoods exist, groups must form";
      }
  }
}

// Known answer, worked out by hand: a complete graph on 4 ranks, theta 2. Every pair
// shares 2 destinations; ties go to the lower rank, so 0-1 match in sub-round 0, ranks 2
// and 3 propose to 0 again in sub-round 1 (0 announces its match only then) and match
// each other in sub-round 2. Group {0,1} splits its common set {2,3}: rank 0 covers 2,
// rank 1 covers 3, and 0 and 1 get each other's data in stage 1 (no direct message).
// Each rank sends 2 messages instead of 3.
TEST(PlanStats, CompleteGraphOnFourRanksPairsUp) {
  std::vector<std::vector<int>> dest = {{1, 2, 3}, {0, 2, 3}, {0, 1, 3}, {0, 1, 2}};
  const auto g = virt::Graph::from_destinations(4, dest);
  CombiningOptions opt;
  opt.theta = 2;
  const auto s = virt::combining_schedules(g, virt::regions_from_spec(4, "flat"), opt);
  EXPECT_EQ(s[0].groups_led, 1);
  EXPECT_EQ(s[2].groups_led, 1);
  EXPECT_EQ(s[1].groups_led + s[3].groups_led, 0);
  EXPECT_EQ(s[0].stage1_send, std::vector<int>{1});
  EXPECT_EQ(s[0].stage1_send_dests, (std::vector<std::vector<int>>{{1, 3}}));
  EXPECT_EQ(s[0].dest, std::vector<int>{2});
  EXPECT_EQ(s[0].dest_origins, (std::vector<std::vector<int>>{{0, 1}}));
  EXPECT_EQ(s[1].dest, std::vector<int>{3});
  EXPECT_EQ(s[2].dest, std::vector<int>{0});
  EXPECT_EQ(s[3].dest, std::vector<int>{1});
  EXPECT_EQ(s[2].from, std::vector<int>{0});
  EXPECT_EQ(s[2].from_origins, (std::vector<std::vector<int>>{{0, 1}}));
  EXPECT_EQ(s[2].stage1_recv, std::vector<int>{3});
  EXPECT_EQ(s[0].rounds, 2);
  GatherOptions go;
  go.combining = opt;
  go.value_bytes = 4;
  for (const auto& c : virt::gather_counts("combined", g, virt::regions_from_spec(4, "flat"), go, 1)) {
    EXPECT_EQ(c.counts.total().sent().msgs, 2);
    EXPECT_EQ(c.counts.total().sent().bytes, 4 + 8);
    EXPECT_EQ(c.stages, 2);
  }
}

}  // namespace
