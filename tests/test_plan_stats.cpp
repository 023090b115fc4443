// The plan statistics of virtual ranks (plan_stats.hpp) equal what the real runs build,
// rank by rank: the graphs of the topology specs, the combining schedules (every field),
// and the per-step message and byte counts, stages and groups of the gather backends;
// the halo patterns of matrices and their counts and stages for every halo backend.
// Run under MPI at several rank counts, and under SMPI at simulated scale.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "sparsecomm/kernels/halo_pattern.hpp"
#include "sparsecomm/comm/combining.hpp"
#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/plan/combining_options.hpp"
#include "sparsecomm/comm/plan/model.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/comm/virt/plan_stats.hpp"
#include "sparsecomm/matrix/generators.hpp"
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

void expect_same(const CombiningSchedule& v, const CombiningSchedule& real, const std::string& what) {
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
          const std::string what = spec + " k=" + std::to_string(k) + (aware ? " aware" : " agnostic") +
                                   " theta=" + std::to_string(theta) + " rank " + std::to_string(test::rank());
          expect_same(all[test::rank()], real, what);
          // The same pattern computed on rank 0 and scattered (nbrbench --phase1 exact),
          // then taken by build() as the given schedule.
          CombiningOptions given = opt;
          given.given = virt::scatter_combining_schedules(
              MPI_COMM_WORLD, 0, [&] { return virt::Graph::from_spec(test::size(), spec); }, loc, opt);
          expect_same(*given.given, real, what + " (scattered)");
          expect_same(CombiningSchedule::build(MPI_COMM_WORLD, t, loc, given), real, what + " (given)");
        }
}

// A given schedule is checked against the topology it is built for, on every rank; the flat
// form round-trips and a damaged one is rejected.
TEST(PlanStats, GivenSchedulesAreChecked) {
  const int p = test::size();
  const Locality loc = Locality::parse(MPI_COMM_WORLD, "ppn:2");
  CombiningOptions opt;
  opt.theta = 1;
  const std::string spec = "er:0.6,3";
  const Topology t = Topology::parse(MPI_COMM_WORLD, spec);
  const auto mine = virt::scatter_combining_schedules(
      MPI_COMM_WORLD, 0, [&] { return virt::Graph::from_spec(p, spec); }, loc, opt);
  EXPECT_EQ(mine->coverage_error(t, test::rank()), "");
  expect_same(CombiningSchedule::deserialize(mine->serialize()), *mine, "round trip");
  std::vector<int64_t> cut = mine->serialize();
  cut.pop_back();
  EXPECT_THROW(CombiningSchedule::deserialize(cut), Error);
  std::vector<int64_t> bad{0, 0, 0, 5, 1};  // a list of 5 with one value
  EXPECT_THROW(CombiningSchedule::deserialize(bad), Error);
  // The schedule of another graph: an Error on every rank. Given on one rank only: also.
  if (p >= 2) {
    const std::string other = "moore:2,1";
    const auto wrong = virt::scatter_combining_schedules(
        MPI_COMM_WORLD, 0, [&] { return virt::Graph::from_spec(p, other); }, loc, opt);
    CombiningOptions o = opt;
    o.given = wrong;
    if (virt::Graph::from_spec(p, other).dest != virt::Graph::from_spec(p, spec).dest) {
      EXPECT_THROW(CombiningSchedule::build(MPI_COMM_WORLD, t, loc, o), Error);
    }
    if (test::rank() != p - 1) o.given.reset();
    EXPECT_THROW(CombiningSchedule::build(MPI_COMM_WORLD, t, loc, o), Error);
  }
  // A graph of the wrong size: an InputError on every rank.
  EXPECT_THROW(virt::scatter_combining_schedules(
                   MPI_COMM_WORLD, 0, [&] { return virt::Graph::from_spec(p + 1, spec); }, loc, opt),
               InputError);
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
        if (backend == "combined") opt.backend.set("k", k).set("aware", k == 4);
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
  // Whole tokens only: a number followed by anything else is malformed, not truncated.
  for (const std::string spec : {"moore:2x,2", "moore:2,2.5", "moore:2,1,3", "moore:", "er:0.1x", "er:0.1,7s",
                                 "er:nan", "er:0.1,-1", "er:"}) {
    SCOPED_TRACE(spec);
    EXPECT_THROW(virt::Graph::from_spec(4, spec), InputError);
  }
  EXPECT_THROW(virt::Graph::from_spec(0, "moore:2,1"), InputError);
  EXPECT_THROW(virt::Graph::from_destinations(3, {{1}, {2}, {2}}), InputError);  // self-loop
  EXPECT_THROW(virt::Graph::from_destinations(3, {{1}, {5}, {0}}), InputError);  // out of range
  EXPECT_THROW(virt::regions_from_spec(8, "ppn:0"), InputError);
  // "node" (the programs' shared default): virtual ranks all live in one process on one
  // node, so they form one region, as "single" says.
  EXPECT_EQ(virt::regions_from_spec(8, "node"), virt::regions_from_spec(8, "single"));
  EXPECT_THROW(virt::regions_from_spec(8, "nodes"), InputError);
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
  set_combining(go.backend, opt);
  go.value_bytes = 4;
  for (const auto& c : virt::gather_counts("combined", g, virt::regions_from_spec(4, "flat"), go, 1)) {
    EXPECT_EQ(c.counts.total().sent().msgs, 2);
    EXPECT_EQ(c.counts.total().sent().bytes, 4 + 8);
    EXPECT_EQ(c.stages, 2);
  }
}

// --- Halo-exchange Plans ----------------------------------------------------------------

// The allgather shape as a real halo Pattern: every rank sends its `count` values (ids
// rank*count + j) to each out-neighbor of the topology.
Pattern allgather_pattern(const Topology& t, int64_t count) {
  const int me = test::rank();
  PatternSide send, recv;
  for (int d : t.destinations) {
    send.ranks.push_back(d);
    for (int64_t j = 0; j < count; ++j) {
      send.indices.push_back(static_cast<int32_t>(j));
      send.global_ids.push_back(me * count + j);
    }
    send.offsets.push_back(static_cast<int64_t>(send.indices.size()));
  }
  for (int x : t.sources) {
    recv.ranks.push_back(x);
    for (int64_t j = 0; j < count; ++j) {
      recv.indices.push_back(static_cast<int32_t>(recv.indices.size()));
      recv.global_ids.push_back(x * count + j);
    }
    recv.offsets.push_back(static_cast<int64_t>(recv.indices.size()));
  }
  const auto ghosts = static_cast<int32_t>(recv.indices.size());
  return Pattern(std::move(send), std::move(recv), static_cast<int32_t>(count), ghosts);
}

// The virtual pattern equals the real one on this rank (as sets of ids per segment), and
// every halo backend's counts and stages equal the real Plan's, for several layouts.
void check_halo(const Pattern& real, const virt::HaloPattern& v, const std::string& name,
                const std::vector<std::string>& layouts) {
  const int me = test::rank();
  ASSERT_EQ(v.p, test::size()) << name;
  const auto& mine = v.send[me];
  ASSERT_EQ(static_cast<int>(mine.size()), real.send().num_neighbors()) << name << " rank " << me;
  for (int i = 0; i < real.send().num_neighbors(); ++i) {
    EXPECT_EQ(mine[i].dest, real.send().ranks[i]) << name << " rank " << me;
    std::vector<int64_t> ids(real.send().global_ids.begin() + real.send().offsets[i],
                             real.send().global_ids.begin() + real.send().offsets[i + 1]);
    std::sort(ids.begin(), ids.end());
    auto vids = mine[i].ids;
    std::sort(vids.begin(), vids.end());
    EXPECT_EQ(vids, ids) << name << " rank " << me << " segment to " << real.send().ranks[i];
  }
  std::vector<std::string> backends;
  for (const auto& b : backend_names())
    if (b != "auto") backends.push_back(b);
  for (const std::string want : {"p2p", "combined", "aggregated", "aggregated_dedup"})
    ASSERT_NE(std::find(backends.begin(), backends.end(), want), backends.end()) << want << " not registered";
  for (const auto& layout : layouts) {
    const Locality loc = Locality::parse(MPI_COMM_WORLD, layout);
    const auto region = virt::regions_from_spec(test::size(), layout);
    for (const auto& backend : backends) {
      // A second variant: combined's larger aware groups; else the 3-step's one leader per
      // region (option leaders), or the 2-step's transfers as messages (window=false).
      const auto specs = backend_option_specs(backend);
      std::string key, value;
      if (declares_option(specs, "leaders")) key = "leaders", value = "1";
      else if (backend != "combined" && declares_option(specs, "window")) key = "window", value = "false";
      const bool two = backend == "combined" || !key.empty();
      for (int variant = 0; variant < (two ? 2 : 1); ++variant) {
        PlanOptions opt;
        opt.width = 2;
        opt.value_bytes = 8;
        if (backend == "combined") opt.backend.set("theta", 2).set("k", variant == 0 ? 2 : 4).set("aware", variant == 1);
        else if (variant == 1) opt.backend.set(key, value);
        auto plan = make_plan(backend, real, loc, MPI_COMM_WORLD, opt);
        // With the real nodes the hooks also tell what moves through shared windows.
        virt::HaloPattern vn = v;
#ifndef SPARSECOMM_SMPI  // (no shared windows under SMPI: nothing does)
        vn.node = node_labels(MPI_COMM_WORLD);
#endif
        const auto counts = virt::halo_counts(backend, vn, region, opt);
        const std::string variant_name = variant == 0 ? "" : backend == "combined" ? " k=4 aware" : " " + key + "=" + value;
        const std::string what = name + " " + layout + " " + backend + variant_name + " rank " + std::to_string(me);
        EXPECT_EQ(describe(counts[me].counts), describe(plan->iteration_counts())) << what;
        EXPECT_EQ(describe(counts[me].window), describe(plan->window_counts())) << what;
        EXPECT_EQ(counts[me].stages, plan->stages()) << what;
      }
    }
  }
}

void check_matrix_halos(const std::vector<std::string>& layouts) {
  const std::vector<std::pair<std::string, DistCsr<double>>> mats = [] {
    std::vector<std::pair<std::string, DistCsr<double>>> m;
    m.emplace_back("laplacian_2d 24x20", gen::laplacian_2d(MPI_COMM_WORLD, 24, 20, 9));
    m.emplace_back("rotated_anisotropic 16x16", gen::rotated_anisotropic_2d(MPI_COMM_WORLD, 16, 16));
    m.emplace_back("erdos_renyi 300 0.02", gen::erdos_renyi(MPI_COMM_WORLD, 300, 0.02, 7));
    return m;
  }();
  for (const auto& [name, a] : mats) {
    const Pattern real = pattern_from_matrix_reference(a);
    const auto v = virt::HaloPattern::from_matrix(a.row_partition(), a.col_partition(), a.gather_all());
    check_halo(real, v, name, layouts);
    // The transpose exchange (ghost partial sums travel back to their owners).
    if (name.rfind("erdos", 0) == 0) {
      virt::HaloPattern t;
      t.p = v.p;
      t.send.resize(static_cast<size_t>(v.p));
      for (int o = 0; o < v.p; ++o)
        for (const auto& seg : v.send[o]) t.send[seg.dest].emplace_back(o, seg.ids);
      for (auto& segs : t.send) std::sort(segs.begin(), segs.end());
      check_halo(real.reverse(), t, name + " (reverse)", layouts);
    }
  }
}

TEST(PlanStats, HaloCountsEqualThePlans) {
  check_matrix_halos({"ppn:4", "cyclic:2", "ppn:3"});
  for (const auto& spec : {"moore:2,1", "er:0.5,3"}) {
    const Topology t = Topology::parse(MPI_COMM_WORLD, spec);
    check_halo(allgather_pattern(t, 3), virt::HaloPattern::from_graph(virt::Graph::from_spec(test::size(), spec), 3),
               std::string("allgather shape ") + spec, {"ppn:4"});
  }
}

// For the simulated runs (SMPI at 64 ranks): one layout.
TEST(PlanStats, SparseHaloCountsEqualThePlans) { check_matrix_halos({"ppn:8"}); }

// Known answer, worked out by hand: regions {0,1} and {2,3}; rank 0 sends value 7 to
// ranks 2 and 3, rank 1 sends value 9 to rank 2. Region 0 sends 3 values (2 distinct
// ones) to region 1, so LPT makes rank 0 the leader, and rank 2 (first member) the
// receiver. Rank 1 sends its value to 0 (initial); 0 sends one inter-region message to 2
// (3 values; 2 with duplicate removal: rank 0's 7 crosses once); 2 forwards 3's value.
TEST(PlanStats, AggregationOnFourRanksByHand) {
  virt::HaloPattern h;
  h.p = 4;
  h.send = {{{2, {7}}, {3, {7}}}, {{2, {9}}}, {}, {}};
  const std::vector<int> region = {0, 0, 1, 1};
  PlanOptions opt;  // 8-byte values
  for (bool dedup : {false, true}) {
    const auto c = virt::halo_counts(dedup ? "aggregated_dedup" : "aggregated", h, region, opt);
    const std::string what = dedup ? "dedup" : "plain";
    EXPECT_EQ(c[1].counts.steps().at("initial").sent_intra.bytes, 8) << what;
    EXPECT_EQ(c[0].counts.steps().at("initial").recv_intra.msgs, 1) << what;
    EXPECT_EQ(c[0].counts.steps().at("inter").sent_inter.msgs, 1) << what;
    EXPECT_EQ(c[0].counts.steps().at("inter").sent_inter.bytes, dedup ? 16 : 24) << what;
    EXPECT_EQ(c[2].counts.steps().at("inter").recv_inter.bytes, dedup ? 16 : 24) << what;
    EXPECT_EQ(c[2].counts.steps().at("final").sent_intra.msgs, 1) << what;
    EXPECT_EQ(c[3].counts.steps().at("final").recv_intra.bytes, 8) << what;
    EXPECT_EQ(c[3].counts.total().sent().msgs, 0) << what;
    EXPECT_EQ(c[1].counts.total().sent_inter.msgs, 0) << what;
    for (const auto& rc : c) EXPECT_EQ(rc.stages, 3) << what;
  }
  // 2-step: rank 0's 7 crosses once, to rank 2 (tie: lowest rank), which forwards it to 3;
  // rank 1's 9 has one destination in region 1 and goes straight to it.
  const auto two = virt::halo_counts("aggregated_2step", h, region, opt);
  EXPECT_EQ(two[0].counts.steps().at("inter").sent_inter.bytes, 8);
  EXPECT_EQ(two[1].counts.steps().at("inter").sent_inter.bytes, 8);
  EXPECT_EQ(two[2].counts.steps().at("inter").recv_inter.msgs, 2);
  EXPECT_EQ(two[2].counts.steps().at("final").sent_intra.bytes, 8);
  EXPECT_EQ(two[3].counts.steps().at("final").recv_intra.msgs, 1);
  EXPECT_EQ(two[3].counts.total().recv_inter.msgs, 0);
  EXPECT_EQ((std::vector<int>{two[0].stages, two[1].stages, two[2].stages, two[3].stages}), (std::vector<int>{1, 1, 2, 2}));
  const auto direct = virt::halo_counts("p2p", h, region, opt);
  EXPECT_EQ(direct[0].counts.total().sent_inter.msgs, 2);
  EXPECT_EQ(direct[2].counts.total().recv_inter.msgs, 2);
}

TEST(PlanStats, BadHaloInputIsAnInputError) {
  const std::vector<int> region = {0, 0, 1};
  virt::HaloPattern h;
  h.p = 3;
  h.send = {{{1, {4}}}, {}, {}};
  EXPECT_THROW(virt::halo_counts("auto", h, region, {}), InputError);
  EXPECT_THROW(virt::halo_counts("p2p", h, {0, 0}, {}), InputError);
  h.send[2] = {{2, {1}}};  // self
  EXPECT_THROW(virt::halo_counts("p2p", h, region, {}), InputError);
  h.send[2] = {{1, {}}};  // empty segment
  EXPECT_THROW(virt::halo_counts("aggregated", h, region, {}), InputError);
  h.send[2] = {{1, {1}}, {0, {2}}};  // not ascending
  EXPECT_THROW(virt::halo_counts("combined", h, region, {}), InputError);
  EXPECT_THROW(virt::HaloPattern::from_graph(virt::Graph::from_spec(4, "moore:2,1"), 0), InputError);
  EXPECT_THROW(virt::HaloPattern::from_matrix(RowPartition::balanced(4, 2), RowPartition::balanced(4, 2), {{0, 4, 1.0}}),
               InputError);
  EXPECT_THROW(virt::HaloPattern::from_matrix(RowPartition::balanced(4, 2), RowPartition::balanced(4, 3), {}), InputError);
}

}  // namespace
