// Every registered backend (suites parameterised by the registry's names, one case per
// backend, so a new backend is tested automatically): SpMV equals the serial reference on generated and SuiteSparse matrices
// at every rank count and emulated region layout, including ranks without rows or
// neighbors; width > 1; the reverse (transpose) direction; repeated executions; counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/plan/model.hpp"
#include "sparsecomm/kernels/dist_spmv.hpp"
#include "sparsecomm/matrix/generators.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"
#include "comm/plan/halo/p2p.hpp"
#include "kernels/reference.hpp"
#include "spmv_check.hpp"
#include "test_util.hpp"

using namespace sparsecomm;

namespace {

const std::vector<std::string> kRegions = {"ppn:1", "ppn:2", "ppn:3", "ppn:4", "cyclic:2"};

using test::expect_close;
using test::xval;

// y = A x (width w) and y = A^T x with `backend`, compared with Eigen on the gathered
// matrix; width 1 with the default way of posting messages, width 3 with the other.
void check_backend(const DistCsr<double>& a, const std::string& label, const std::string& backend) {
  const auto ref = reference::gather_eigen(a);
  const reference::SpMat reft = ref.transpose();
  Pattern pat = pattern_from_matrix_reference(a);
  for (const auto& regions : kRegions) {
    Locality loc = Locality::parse(MPI_COMM_WORLD, regions);
    const std::string what = label + " backend " + backend + " regions " + regions;
    const auto specs = backend_option_specs(backend);
    const bool leads = declares_option(specs, "leaders");  // the 3-step's option: one leader per region
    for (int variant = 0; variant < (leads ? 3 : 2); ++variant) {
      const int width = variant == 1 ? 3 : 1;
      PlanOptions opt;
      opt.width = width;
      // Both ways of posting the messages (comm/messages.hpp): width 3 uses the other one,
      // and the aggregation backends' transfers between ranks of one node go as messages
      // there (window=false), through the node's shared window at width 1 (the default).
      if (width == 3) {
        opt.persistent_requests = !opt.persistent_requests;
        if (declares_option(specs, "window")) opt.backend.set("window", false);
      }
      if (variant == 2) opt.backend.set("leaders", 1);
      DistSpmv spmv(a, make_plan(backend, pat, loc, MPI_COMM_WORLD, opt));
      for (int round = 0; round < 2; ++round) {  // executions reuse the plan
        std::vector<double> x(static_cast<size_t>(a.local_cols()) * width), y(static_cast<size_t>(a.local_rows()) * width);
        for (int32_t i = 0; i < a.local_cols(); ++i)
          for (int k = 0; k < width; ++k) x[i * width + k] = xval(a.col_begin() + i, k, round);
        spmv.apply(x.data(), y.data());
        for (int k = 0; k < width; ++k) {
          std::vector<double> xg(static_cast<size_t>(a.global_cols()));
          for (int64_t g = 0; g < a.global_cols(); ++g) xg[g] = xval(g, k, round);
          auto yg = reference::spmv(ref, xg);
          std::vector<double> want(yg.begin() + a.row_begin(), yg.begin() + a.row_begin() + a.local_rows());
          std::vector<double> got(static_cast<size_t>(a.local_rows()));
          for (int32_t i = 0; i < a.local_rows(); ++i) got[i] = y[i * width + k];
          expect_close(got, want,
                       what + " width " + std::to_string(width) + (variant == 2 ? " leaders=1" : "") + " vector " +
                           std::to_string(k));
        }
      }
    }
    // Transpose through the reverse pattern.
    auto rev = make_plan(backend, pat.reverse(), loc, MPI_COMM_WORLD);
    test::expect_transpose_product(a, reft, *rev, what);
  }
}

SPC_BACKEND_SUITE(PlanSpmv, backend_names());
TEST_P(PlanSpmv, Laplacian2d) { check_backend(gen::from_spec(MPI_COMM_WORLD, "lap2d:15,11"), "lap2d", GetParam()); }
TEST_P(PlanSpmv, Laplacian3d27) {
  check_backend(gen::from_spec(MPI_COMM_WORLD, "lap3d27:5,4,6"), "lap3d27", GetParam());
}
TEST_P(PlanSpmv, Rotated) { check_backend(gen::from_spec(MPI_COMM_WORLD, "rotate:20,17"), "rotate", GetParam()); }
TEST_P(PlanSpmv, ErdosRenyi) { check_backend(gen::from_spec(MPI_COMM_WORLD, "er:200,0.03,3"), "er", GetParam()); }
TEST_P(PlanSpmv, Rmat) { check_backend(gen::from_spec(MPI_COMM_WORLD, "rmat:8"), "rmat", GetParam()); }

TEST_P(PlanSpmv, RanksWithoutRowsOrNeighbors) {
  const int p = test::size(), me = test::rank();
  auto rows = RowPartition::balanced(3, p);
  std::vector<Triplet<double>> t;
  for (int64_t i = rows.begin(me); i < rows.end(me); ++i) t.push_back({i, i, 2.0});
  check_backend(DistCsr<double>::from_triplets(MPI_COMM_WORLD, rows, rows, t), "diagonal 3x3", GetParam());
  t.clear();
  for (int64_t i = rows.begin(me); i < rows.end(me); ++i)
    for (int64_t j = 0; j < 3; ++j) t.push_back({i, j, 1.0 + i - 0.5 * j});
  check_backend(DistCsr<double>::from_triplets(MPI_COMM_WORLD, rows, rows, t), "dense 3x3", GetParam());
}

TEST_P(PlanSpmv, Rectangular) {
  const int p = test::size(), me = test::rank();
  auto rows = RowPartition::balanced(9, p), cols = RowPartition::balanced(23, p);
  std::vector<Triplet<double>> t;
  for (int64_t i = rows.begin(me); i < rows.end(me); ++i)
    for (int64_t j = (i * 7) % 4; j < 23; j += 4) t.push_back({i, j, 0.5 + static_cast<double>(j % 3)});
  check_backend(DistCsr<double>::from_triplets(MPI_COMM_WORLD, rows, cols, t), "rectangular 9x23", GetParam());
}

// Patterns no matrix makes but MPI's neighborhood collectives do (the PMPI layer builds
// them): every other rank a neighbor both ways, some segments empty (alltoallv counts of
// 0), ids unique per pair; and the allgather shape, one entry sent to every neighbor under
// one id (duplicate removal sends it once per region). Every backend, every layout, width 4.
SPC_BACKEND_SUITE(PlanHalo, backend_names());
TEST_P(PlanHalo, EmptySegmentsAndOneEntryToAll) {
  const std::string& backend = GetParam();
  const int p = test::size(), me = test::rank();
  const auto value = [](int64_t id, int k) { return static_cast<double>(id % 100003) + 0.25 * k; };
  // count(a, b): entries rank a sends rank b; odd ranks receive nothing (an empty segment
  // from every region, which the aggregation must not route through another receiver).
  const auto count = [](int a, int b) { return b % 2 ? 0 : 1 + (a + b) % 3; };
  PatternSide send, recv;
  int32_t owned = 0, ghosts = 0;
  for (int j = 0; j < p; ++j) {
    if (j == me) continue;
    send.ranks.push_back(j);
    for (int e = 0; e < count(me, j); ++e)
      send.indices.push_back(owned++), send.global_ids.push_back((static_cast<int64_t>(me) * p + j) * 8 + e);
    send.offsets.push_back(send.size());
    recv.ranks.push_back(j);
    for (int e = 0; e < count(j, me); ++e)
      recv.indices.push_back(ghosts++), recv.global_ids.push_back((static_cast<int64_t>(j) * p + me) * 8 + e);
    recv.offsets.push_back(recv.size());
  }
  PatternSide gsend, grecv;  // the allgather shape
  for (int j = 0; j < p; ++j) {
    if (j == me) continue;
    gsend.ranks.push_back(j), gsend.indices.push_back(0), gsend.global_ids.push_back(me);
    gsend.offsets.push_back(gsend.size());
    grecv.ranks.push_back(j), grecv.indices.push_back(static_cast<int32_t>(grecv.size())), grecv.global_ids.push_back(j);
    grecv.offsets.push_back(grecv.size());
  }
  const Pattern shapes[2] = {Pattern(send, recv, std::max(owned, 1), ghosts),
                             Pattern(gsend, grecv, 1, static_cast<int32_t>(grecv.size()))};
  constexpr int w = 4;
  for (int shape = 0; shape < 2; ++shape) {
    const Pattern& pat = shapes[shape];
    std::vector<double> out(static_cast<size_t>(pat.owned_size()) * w);
    for (int64_t k = 0; k < pat.send().size(); ++k)
      for (int c = 0; c < w; ++c) out[pat.send().indices[k] * w + c] = value(pat.send().global_ids[k], c);
    for (const auto& regions : kRegions) {
      Locality loc = Locality::parse(MPI_COMM_WORLD, regions);
      PlanOptions opt;
      opt.width = w;
      auto plan = make_plan(backend, pat, loc, MPI_COMM_WORLD, opt);
      for (int round = 0; round < 2; ++round) {
        std::vector<double> in(static_cast<size_t>(pat.ghost_size()) * w, -1.0);
        plan->exchange(out.data(), in.data());
        int wrong = 0;
        for (int64_t k = 0; k < pat.recv().size(); ++k)
          for (int c = 0; c < w; ++c) wrong += in[pat.recv().indices[k] * w + c] != value(pat.recv().global_ids[k], c);
        EXPECT_EQ(wrong, 0) << "shape " << shape << " backend " << backend << " regions " << regions;
      }
    }
  }
}

// The combined backend with options that make groups form (low theta, dense pattern):
// SpMV and transpose still exact, and some ranks really run two stages.
TEST(PlanCombined, GroupsFormAndResultsStayExact) {
  auto a = gen::from_spec(MPI_COMM_WORLD, "er:240,0.2,11");
  const auto ref = reference::gather_eigen(a);
  const reference::SpMat reft = ref.transpose();
  Pattern pat = pattern_from_matrix_reference(a);
  std::vector<double> xg(static_cast<size_t>(a.global_cols()));
  for (int64_t g = 0; g < a.global_cols(); ++g) xg[g] = xval(g, 0, 3);
  auto yg = reference::spmv(ref, xg), ytg = reference::spmv(reft, xg);
  int64_t two_stage = 0;
  for (int k : {2, 3, 4})
    for (int theta : {1, 2})
      for (bool aware : {false, true}) {
        PlanOptions o;
        o.backend.set("k", k).set("theta", theta).set("aware", aware);
        Locality loc = Locality::ppn(MPI_COMM_WORLD, 4);
        DistSpmv spmv(a, make_plan("combined", pat, loc, MPI_COMM_WORLD, o));
        two_stage += allreduce_sum(MPI_COMM_WORLD, spmv.plan().stages() == 2 ? 1 : 0);
        std::vector<double> x(static_cast<size_t>(a.local_cols())), y(static_cast<size_t>(a.local_rows()));
        for (int32_t i = 0; i < a.local_cols(); ++i) x[i] = xg[a.col_begin() + i];
        spmv.apply(x.data(), y.data());
        const std::string what = "k=" + std::to_string(k) + " theta=" + std::to_string(theta) + (aware ? " aware" : "");
        expect_close(y, std::vector<double>(yg.begin() + a.row_begin(), yg.begin() + a.row_begin() + a.local_rows()), what);
        auto rev = make_plan("combined", pat.reverse(), loc, MPI_COMM_WORLD, o);
        std::vector<double> xr(static_cast<size_t>(a.local_rows())), yr(static_cast<size_t>(a.local_cols()));
        for (int32_t i = 0; i < a.local_rows(); ++i) xr[i] = xg[a.row_begin() + i];
        spmv_transpose(a, *rev, xr.data(), yr.data());
        expect_close(yr, std::vector<double>(ytg.begin() + a.col_begin(), ytg.begin() + a.col_begin() + a.local_cols()),
                     what + " transpose");
      }
  if (test::size() >= 4) {
    EXPECT_GT(two_stage, 0) << "no group ever formed: the combining path went untested";
  }
}

// The top-level CMakeLists.txt reads the backend names from the backend files (for the
// interposition layers' test matrices, which must be known before anything is built): they
// are exactly the registries' names, this MPI's conditional registrations included.
TEST(Registry, CMakeListsEveryBackend) {
  const auto joined = [](std::vector<std::string> names) {
    std::sort(names.begin(), names.end());
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : ",") + n;
    return s;
  };
  const char* fix = " (a registration the top-level CMakeLists.txt cannot read from the file, or a stale"
                    " configuration: re-run cmake)";
  EXPECT_EQ(SPARSECOMM_CMAKE_HALO_BACKENDS, joined(backend_names())) << fix;
  EXPECT_EQ(SPARSECOMM_CMAKE_GATHER_BACKENDS, joined(gather_backend_names())) << fix;
}

// The stage term of the model: the first stage is free; the other inter-region ones cost
// stage_inter, the intra-region ones stage_intra.
TEST(Model, StageCostPerLocalityClass) {
  ModelParams m;
  m.stage_intra = 1;
  m.stage_inter = 10;
  EXPECT_EQ(stage_cost(m, 1, 0), 0);
  EXPECT_EQ(stage_cost(m, 1, 1), 0);
  EXPECT_EQ(stage_cost(m, 2, 0), 1);    // two intra-region stages (one region)
  EXPECT_EQ(stage_cost(m, 2, 2), 10);   // combining across regions
  EXPECT_EQ(stage_cost(m, 2, 1), 1);    // combining with stage 1 inside regions
  EXPECT_EQ(stage_cost(m, 3, 1), 2);    // aggregation: gather, inter-region, scatter
  EXPECT_EQ(stage_cost(m, 3, 7), 20);   // more inter-region steps than stages: capped
  // Stages whose transfers all go through shared windows cost stage_shm.
  m.stage_shm = 0.25;
  EXPECT_EQ(stage_cost(m, 3, 1, 3), 2);     // every stage has MPI messages: as before
  EXPECT_EQ(stage_cost(m, 3, 1, 1), 0.5);   // aggregation with gather and scatter in windows
  EXPECT_EQ(stage_cost(m, 3, 1, 2), 1.25);  // one of them by message
  EXPECT_EQ(stage_cost(m, 2, 0, 0), 0.25);  // two window stages on one node: one is free
  EXPECT_EQ(stage_cost(m, 2, 0, 1), 0.25);  // a message stage and a window stage: the message one is free
  EXPECT_EQ(stage_cost(m, 2, 2, 0), 10);    // fewer message stages than inter ones: capped below
  // The key "stage" of earlier model files sets both, and stage_shm follows stage_intra.
  const std::string dir = test::temp_dir();
  const ModelParams legacy = ModelParams::load(test::write_file(dir, "legacy.txt", "stage 7e-6\n"));
  EXPECT_EQ(legacy.stage_intra, 7e-6);
  EXPECT_EQ(legacy.stage_inter, 7e-6);
  EXPECT_EQ(legacy.stage_shm, 7e-6);
  m.save(dir + "/stages.txt");
  EXPECT_EQ(ModelParams::load(dir + "/stages.txt").stage_shm, 0.25);
}

// message_steps: the steps in which a rank has MPI messages, the window's part taken out.
TEST(Model, MessageStepsLeaveOutWindowTransfers) {
  Stats c, w;
  c.record_transfer(w, "gather", true, true, 80, true);  // all through the window
  c.record_transfer(w, "inter", true, false, 800, false);
  c.record_transfer(w, "scatter", false, true, 40, true);  // one of two through the window
  c.record_transfer(w, "scatter", false, true, 40, false);
  EXPECT_EQ(message_steps(c, w), 2);
  EXPECT_EQ(message_steps(c, Stats()), 3);
  EXPECT_EQ(inter_steps(c), 1);
}

// The loaded costs (msg/byte, every rank communicating) are read and written; a file
// without them (earlier versions) lets the ping-pong alpha/beta stand in.
// Where every region is one whole node, a rank alone on its link moves inter-region bytes
// at the link's rate (byte_inter at most 1 / region_rate); elsewhere the model is unchanged.
TEST(Model, ForLayoutPricesOneFlowWhereRegionsAreNodes) {
  ModelParams m;
  m.byte_inter = 4e-8, m.region_rate = 1.25e8;  // loaded share of 1 / 8e-9
  const std::vector<int> region = {0, 0, 1, 1, 2, 2};
  EXPECT_DOUBLE_EQ(for_layout(m, region, {5, 5, 7, 7, 9, 9}).byte_inter, 8e-9);  // regions are nodes
  EXPECT_EQ(for_layout(m, region, {0, 0, 0, 0, 0, 0}).byte_inter, 4e-8);         // emulated on one node
  EXPECT_EQ(for_layout(m, region, {0, 0, 0, 0, 1, 1}).byte_inter, 4e-8);         // a node holds two regions
  EXPECT_EQ(for_layout(m, region, {0, 1, 2, 2, 3, 3}).byte_inter, 4e-8);         // a region spans two nodes
  EXPECT_EQ(for_layout(m, region, {}).byte_inter, 4e-8);                         // nodes unknown
  EXPECT_EQ(for_layout(m, {0, 0}, {3, 3}).byte_inter, 4e-8);                     // one region
  m.byte_inter = 1e-9;  // already below the link's rate: kept
  EXPECT_EQ(for_layout(m, region, {5, 5, 7, 7, 9, 9}).byte_inter, 1e-9);
  EXPECT_EQ(for_layout(m, region, {5, 5, 7, 7, 9, 9}).msg_inter, m.msg_inter);
}

// predict_from_terms: a plan's steps follow one another, so each step costs its own
// busiest rank (against its busiest region's link), and the steps add up; the copy cost
// is the largest of the ranks'. Two step names in one slot fold every step into one.
TEST(Model, StepsAddTheirOwnBusiestRanks) {
  ModelParams m;
  m.region_rate = 1;  // injected bytes are seconds
  auto terms = [](double copy, std::map<std::string, StepTerms> steps) {
    RankTerms t;
    t.copy = copy, t.steps = std::move(steps), t.stages = static_cast<int>(t.steps.size());
    return t;
  };
  // Rank 0 is busiest in the gather, rank 1 in the scatter: 3 + 4, not max(3 + 1, 1 + 4).
  const std::vector<RankTerms> two = {terms(0.5, {{"gather", {3, 0}}, {"scatter", {1, 0}}}),
                                      terms(0.25, {{"gather", {1, 0}}, {"scatter", {4, 0}}})};
  const double stage = stage_cost(m, 2, 0, 0);
  EXPECT_DOUBLE_EQ(predict_from_terms(two, {0, 1}, m), 0.5 + 3 + 4 + stage);
  // A step's link: the ranks of a region inject together in that step.
  const std::vector<RankTerms> link = {terms(0, {{"inter", {2, 5}}}), terms(0, {{"inter", {2, 6}}}),
                                       terms(0, {{"inter", {9, 1}}})};
  EXPECT_DOUBLE_EQ(predict_from_terms(link, {0, 0, 1}, m), 11);  // region 0's 5 + 6 beat rank 2's 9
  // The other direction of the link: a region that the others send to (the hub of a
  // partition) is limited by what its ranks receive together, not by what they inject.
  const std::vector<RankTerms> hub = {terms(0, {{"inter", {2, 1, 7}}}), terms(0, {{"inter", {2, 1, 8}}}),
                                      terms(0, {{"inter", {9, 13, 2}}})};
  EXPECT_DOUBLE_EQ(predict_from_terms(hub, {0, 0, 1}, m), 15);  // region 0 receives 7 + 8: more than 13, 9
  // The built-in steps' names are told apart from each other.
  const std::vector<std::string> builtin = {"direct", "local", "initial", "inter", "final", "stage1", "stage2"};
  for (const auto& a : builtin)
    for (const auto& b : builtin) {
      if (a == b) continue;
      EXPECT_DOUBLE_EQ(predict_from_terms({terms(0, {{a, {3, 0}}}), terms(0, {{b, {4, 0}}})}, {0, 1}, m),
                       7 + stage_cost(m, 1, 0, 1)) << a << " and " << b << " share a slot";
    }
  // Some pair of names shares one of the 67 slots: then the whole exchange is one step.
  bool folded = false;
  for (int i = 0; i < 1000 && !folded; ++i) {
    const double p = predict_from_terms({terms(0, {{"a", {3, 0}}}), terms(0, {{"x" + std::to_string(i), {4, 0}}})},
                                        {0, 1}, m);
    if (p != 7 + stage_cost(m, 1, 0, 1)) {
      EXPECT_DOUBLE_EQ(p, 4 + stage_cost(m, 1, 0, 1));
      folded = true;
    }
  }
  EXPECT_TRUE(folded) << "no two of 1000 names share a slot: the fold went untested";
}

// The loaded costs were measured with every rank taking part at once: a step in which a
// share of the ranks exchanges inter-region messages pays that share of msg_inter per
// message (rank_terms) and that share of stage_inter of latency, and the share taking part
// in its intra-region messages that share of stage_intra (predict_from_terms); window
// transfers take no part.
TEST(Model, StepsPayTheShareOfRanksTakingPart) {
  ModelParams m;
  m.region_rate = 1e30;  // no link term
  m.stage_inter = 8, m.stage_intra = 2;
  auto rank = [](double busy, bool inter, bool intra = false) {
    RankTerms t;
    t.steps["x"] = StepTerms{busy, 0, 0, inter, intra};
    return t;
  };
  const std::vector<int> region = {0, 0, 1, 1};
  EXPECT_DOUBLE_EQ(predict_from_terms({rank(1, false), rank(0, false), rank(0, false), rank(0, false)}, region, m), 1);
  EXPECT_DOUBLE_EQ(predict_from_terms({rank(1, true), rank(0, true), rank(0, false), rank(0, false)}, region, m),
                   1 + 8 * 0.5);
  EXPECT_DOUBLE_EQ(predict_from_terms({rank(1, true), rank(0, true), rank(0, true), rank(0, true)}, region, m), 1 + 8);
  EXPECT_DOUBLE_EQ(
      predict_from_terms({rank(1, true, true), rank(0, false, true), rank(0, false, true), rank(0, false)}, region, m),
      1 + 8 * 0.25 + 2 * 0.75);
  // rank_terms: 3 inter-region messages sent at a quarter of the loaded cost; the flags set.
  Stats c, w;
  for (int i = 0; i < 3; ++i) c.record_send("inter", false, 0);
  c.record_send("local", true, 0);
  w.record_send("local", true, 0);  // through a window: no message
  c.record_recv("direct", true, 0);
  m.msg_inter = 2, m.byte_inter = 0, m.msg_intra = 0, m.msg_shm = 0;
  const RankTerms all = rank_terms(c, w, 0, 3, m), quarter = rank_terms(c, w, 0, 3, m, {{"inter", 0.25}});
  EXPECT_DOUBLE_EQ(all.steps.at("inter").busy, 6);
  EXPECT_DOUBLE_EQ(quarter.steps.at("inter").busy, 1.5);
  EXPECT_TRUE(quarter.steps.at("inter").inter);
  EXPECT_FALSE(quarter.steps.at("inter").intra);
  EXPECT_FALSE(quarter.steps.at("local").inter || quarter.steps.at("local").intra);
  EXPECT_TRUE(quarter.steps.at("direct").intra);
  using Parts = std::map<std::string, bool>;
  EXPECT_EQ(takes_part(c, w, true), (Parts{{"direct", false}, {"inter", true}, {"local", false}}));
  EXPECT_EQ(takes_part(c, w, false), (Parts{{"direct", true}, {"inter", false}, {"local", false}}));
  EXPECT_EQ(step_shares({takes_part(c, w, true), takes_part(Stats(), Stats(), true)}),
            (std::map<std::string, double>{{"direct", 0.0}, {"inter", 0.5}, {"local", 0.0}}));
}

TEST(Model, LoadedCostsDefaultToPingPong) {
  const std::string dir = test::temp_dir();
  const ModelParams old = ModelParams::load(test::write_file(dir, "old.txt", "alpha_intra 2e-6\nbeta_inter 3e-9\n"));
  EXPECT_EQ(old.msg_intra, 2e-6);
  EXPECT_EQ(old.byte_inter, 3e-9);
  ModelParams m;
  m.alpha_intra = 9e-6, m.msg_intra = 4e-7, m.byte_inter = 5e-10;
  const std::string path = dir + "/saved.txt";
  m.save(path);
  const ModelParams back = ModelParams::load(path);
  EXPECT_DOUBLE_EQ(back.alpha_intra, 9e-6);
  EXPECT_DOUBLE_EQ(back.msg_intra, 4e-7);
  EXPECT_DOUBLE_EQ(back.byte_inter, 5e-10);
  // step_cost reads msg/byte, not alpha/beta: the larger of sending and receiving.
  CommCounters k;
  k.sent_intra.add(100), k.sent_intra.add(100);
  k.recv_inter.add(10);
  EXPECT_DOUBLE_EQ(step_cost(back, k), std::max(2 * 4e-7 + 200 * back.byte_intra, back.msg_inter + 10 * 5e-10));
}

// Without a model file, auto measures the machine on first use and caches it: the second
// use reads back exactly what the first measured (every rank the same values), a damaged
// cache is measured again and rewritten, "builtin" gives the documented defaults, and a
// cache keyed for another layout is not used.
TEST(Model, MeasuredOnFirstUseAndCached) {
  const std::string cache = test::temp_dir() + "/xdg";
  const test::EnvGuard xdg("XDG_CACHE_HOME", cache), no_model("SPARSECOMM_MODEL", std::nullopt);
  const Locality loc = Locality::parse(MPI_COMM_WORLD, "ppn:2");
  auto same_everywhere = [](const ModelParams& m) {
    double lo[ModelParams::kFields], hi[ModelParams::kFields];
    MPI_Allreduce(&m, lo, ModelParams::kFields, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&m, hi, ModelParams::kFields, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return std::memcmp(lo, hi, sizeof lo) == 0;
  };
  auto files = [&] {
    std::vector<std::string> f;
    if (std::filesystem::exists(cache + "/sparsecomm"))
      for (const auto& e : std::filesystem::directory_iterator(cache + "/sparsecomm")) f.push_back(e.path().string());
    return f;
  };
  const ModelParams first = machine_model_uncached(MPI_COMM_WORLD, loc);  // measured: no cache here yet
  EXPECT_TRUE(same_everywhere(first));
  EXPECT_TRUE(same_everywhere(ModelParams::resolve(MPI_COMM_WORLD, loc, "")));
  // A dependent window stage is measured wherever a node has a second rank, two included
  // (it was left at its default there, priced far below the stage_intra beside it).
  const auto names = backend_names();
  if (std::find(names.begin(), names.end(), "shm") != names.end() && test::size() >= 2 &&
      Locality::one_node(MPI_COMM_WORLD)) {
    EXPECT_NE(first.stage_shm, ModelParams{}.stage_shm);
  }
  if (test::rank() == 0) {
    ASSERT_EQ(files().size(), 1u);
    std::ifstream in(files()[0]);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line.rfind("# key: v10 mpi ", 0), 0u) << line;
    EXPECT_NE(line.find(" host "), std::string::npos) << line;
  }
  // Read back from the file (another process's view), and from the communicator.
  const ModelParams second = machine_model_uncached(MPI_COMM_WORLD, loc);
  EXPECT_EQ(std::memcmp(&first, &second, sizeof first), 0);
  // On a fresh communicator: read from the file once, then remembered on it.
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  const ModelParams from_file = machine_model(dup, loc);
  EXPECT_EQ(std::memcmp(&first, &from_file, sizeof first), 0);
  if (test::rank() == 0) std::filesystem::remove(files()[0]);
  MPI_Barrier(MPI_COMM_WORLD);
  const ModelParams remembered = machine_model(dup, loc);  // no file, no measurement: the same values
  EXPECT_EQ(std::memcmp(&first, &remembered, sizeof first), 0);
  MPI_Comm_free(&dup);
  if (test::rank() == 0) {
    EXPECT_TRUE(files().empty());
  }
  machine_model_uncached(MPI_COMM_WORLD, loc);  // written again
  // Damaged: measured again (a valid file afterwards).
  if (test::rank() == 0) std::ofstream(files()[0]) << "# key: nonsense\nalpha_intra banana\n";
  MPI_Barrier(MPI_COMM_WORLD);
  const ModelParams third = machine_model_uncached(MPI_COMM_WORLD, loc);
  EXPECT_TRUE(same_everywhere(third));
  if (test::rank() == 0) {
    std::ifstream in(files()[0]);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line.rfind("# key: v10 mpi ", 0), 0u) << line;
    EXPECT_NE(line.find(" host "), std::string::npos) << line;
  }
  // Another layout (at one rank, "single" is ppn:2's): a second cache file.
  machine_model_uncached(MPI_COMM_WORLD, Locality::parse(MPI_COMM_WORLD, "single"));
  if (test::rank() == 0) {
    EXPECT_EQ(files().size(), test::size() >= 2 ? 2u : 1u);
  }
  // Another network selection (a tag, or an Open MPI transport choice as mpirun --mca gives
  // it): a cache file of its own, the network named in its key; the same selection reads it.
  const size_t before_tag = test::rank() == 0 ? files().size() : 0;
  {
    const test::EnvGuard tag("SPARSECOMM_MODEL_TAG", "links 1000mbit");
    const test::EnvGuard btl("OMPI_MCA_btl_tcp_if_include", "10.77.0.0/24");
    const ModelParams tagged = machine_model_uncached(MPI_COMM_WORLD, loc);
    EXPECT_TRUE(same_everywhere(tagged));
    if (test::rank() == 0) {
      EXPECT_EQ(files().size(), before_tag + 1);
      bool named = false;
      for (const auto& f : files()) {
        std::ifstream in(f);
        std::string line;
        std::getline(in, line);
        const size_t net = line.find(" net ");
        named = named || (net != std::string::npos &&
                          line.find(" OMPI_MCA_btl_tcp_if_include=10.77.0.0/24", net) != std::string::npos &&
                          line.find(" SPARSECOMM_MODEL_TAG=links 1000mbit", net) != std::string::npos);
      }
      EXPECT_TRUE(named);
    }
    const ModelParams tagged_again = machine_model_uncached(MPI_COMM_WORLD, loc);
    EXPECT_EQ(std::memcmp(&tagged, &tagged_again, sizeof tagged), 0);
    if (test::rank() == 0) {
      EXPECT_EQ(files().size(), before_tag + 1);
    }
  }  // (the variables back as they were)
  // builtin: the defaults, measured nothing.
  const ModelParams builtin = ModelParams::resolve(MPI_COMM_WORLD, loc, "builtin"), defaults;
  EXPECT_EQ(std::memcmp(&builtin, &defaults, sizeof defaults), 0);
}

// auto predicts every candidate from its counts hook without building it where the hook
// counts by region (BackendHooks::counts_by_region), and from the plan built otherwise
// (combined): the prediction equals predict_iteration() on the plan that candidate builds,
// for every built-in backend (shm's window part included), and only the chosen plan and the
// candidates not counted by region are built (their auto.setup entries); with iterations > 0
// every candidate is built (its setup is measured).
TEST(PlanAuto, PredictsWithoutBuilding) {
  auto a = gen::from_spec(MPI_COMM_WORLD, "er:240,0.06,5");
  const Pattern pat = pattern_from_matrix_reference(a);
  for (const std::string regions : {"ppn:2", "cyclic:2", "ppn:3"}) {
    const Locality loc = Locality::parse(MPI_COMM_WORLD, regions);
    PlanOptions o;
    o.width = 2;
    o.backend.set("model", "builtin");
    auto chosen = make_plan("auto", pat, loc, MPI_COMM_WORLD, o);
    const ModelParams m;
    int candidates = 0, setups = 0, built = 0;
    for (const auto& [k, v] : chosen->setup_stats().timers()) setups += k.rfind("auto.setup.", 0) == 0;
    for (const auto& b : backend_names()) {
      if (backend_hooks(b).chooses_among_others) continue;
      ++candidates;
      built += !backend_hooks(b).counts_by_region && b != chosen->name();
      PlanOptions co;
      co.width = 2;
      const double real = predict_iteration(*make_plan(b, pat, loc, MPI_COMM_WORLD, co), m, MPI_COMM_WORLD);
      const double virt = chosen->setup_stats().time("auto.predict." + b);
      EXPECT_NEAR(virt, real, 1e-9 * real) << b << " " << regions;
    }
    EXPECT_EQ(setups, 1 + built) << regions;
    EXPECT_GT(chosen->setup_stats().timers().count("auto.setup." + chosen->name()), 0u);
    o.backend.set("iterations", 10);
    auto weighed = make_plan("auto", pat, loc, MPI_COMM_WORLD, o);
    setups = 0;
    for (const auto& [k, v] : weighed->setup_stats().timers()) setups += k.rfind("auto.setup.", 0) == 0;
    EXPECT_EQ(setups, candidates) << regions;
  }
}

// With race = N, auto builds the candidates predicted within race_within percent of its
// model's choice (that one first, at most race_among in all), times them, and takes the
// fastest measured: the raced entries are exactly those candidates, the winner is the
// fastest of them, every rank picks alike (the times are maxima over ranks), the plan
// delivers the pattern's values, and bad race options are an error on every rank.
TEST(PlanAuto, RacesTheCloseCandidates) {
  auto a = gen::from_spec(MPI_COMM_WORLD, "er:240,0.06,5");
  const Pattern pat = pattern_from_matrix_reference(a);
  const Locality loc = Locality::parse(MPI_COMM_WORLD, "ppn:2");
  PlanOptions o;
  o.backend.set("model", "builtin");
  auto model_only = make_plan("auto", pat, loc, MPI_COMM_WORLD, o);
  std::vector<std::pair<double, std::string>> predicted;  // (prediction, backend)
  for (const auto& [k, v] : model_only->setup_stats().timers())
    if (k.rfind("auto.predict.", 0) == 0) predicted.emplace_back(v, k.substr(13));
  std::sort(predicted.begin(), predicted.end());
  const double cheapest = predicted.front().first;
  for (const auto& [within, among] : std::vector<std::pair<int, int>>{{1000, 16}, {1000, 2}, {25, 3}}) {
    const std::string what = "race_within " + std::to_string(within) + " race_among " + std::to_string(among);
    PlanOptions r = o;
    r.backend.set("race", 4).set("race_within", within).set("race_among", among);
    auto raced = make_plan("auto", pat, loc, MPI_COMM_WORLD, r);
    std::map<std::string, double> times;
    for (const auto& [k, v] : raced->setup_stats().timers())
      if (k.rfind("auto.race.", 0) == 0) times[k.substr(10)] = v;
    // The entrants: the model's choice and as many of the others within the margin as
    // race_among leaves room for, none predicted dearer than one left out (ties in the
    // prediction go by setup order, not checked here).
    size_t close = 0;
    for (const auto& [v, b] : predicted) close += b != model_only->name() && v <= cheapest * (1 + within / 100.0);
    const size_t entrants = std::min<size_t>(1 + close, static_cast<size_t>(among));
    if (entrants < 2) {
      EXPECT_TRUE(times.empty()) << what;  // one candidate: no race
      EXPECT_EQ(raced->name(), model_only->name()) << what;
      continue;
    }
    EXPECT_EQ(times.size(), entrants) << what;
    EXPECT_TRUE(times.count(model_only->name())) << what;
    double dearest_in = 0, cheapest_out = 1e300;
    for (const auto& [v, b] : predicted) {
      if (b == model_only->name()) continue;
      if (times.count(b)) dearest_in = std::max(dearest_in, v);
      else cheapest_out = std::min(cheapest_out, v);
    }
    EXPECT_LE(dearest_in, cheapest_out) << what;
    double fastest = 1e300;
    for (const auto& [b, t] : times) {
      EXPECT_GT(t, 0.0) << b << " " << what;
      fastest = std::min(fastest, t);
    }
    ASSERT_TRUE(times.count(raced->name())) << raced->name() << " " << what;
    EXPECT_TRUE(raced->exec_stats().timers().empty()) << what;  // the race's exchanges are not the caller's
    EXPECT_EQ(times[raced->name()], fastest) << what;
    // Every rank took the same backend.
    const std::string name = raced->name();
    int len = static_cast<int>(name.size()), longest = 0;
    MPI_Allreduce(&len, &longest, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    std::string root = name;
    root.resize(static_cast<size_t>(longest));
    MPI_Bcast(root.data(), longest, MPI_CHAR, 0, MPI_COMM_WORLD);
    EXPECT_EQ(std::string(root.c_str()), name) << what;
    // The winner delivers the pattern's values (x_j = j + 1 for global column j).
    std::vector<double> x(static_cast<size_t>(a.local_cols()) + 1), g(static_cast<size_t>(a.num_ghosts()) + 1);
    for (int32_t i = 0; i < a.local_cols(); ++i) x[i] = static_cast<double>(a.col_begin() + i + 1);
    raced->exchange(x.data(), g.data());
    for (int32_t k = 0; k < a.num_ghosts(); ++k) EXPECT_EQ(g[k], static_cast<double>(a.ghost_ids()[k] + 1)) << what;
  }
  for (const auto& [key, value] : std::vector<std::pair<std::string, int64_t>>{{"race", -1}, {"race_among", 1}}) {
    PlanOptions bad = o;
    bad.backend.set("race", 4).set(key, value);
    EXPECT_THROW(make_plan("auto", pat, loc, MPI_COMM_WORLD, bad), InputError) << key;
  }
}

// auto agrees on the model in two small reductions (agree_model): ranks that disagree on the source, a file that fails on one rank only, or files
// whose values differ give the same error on every rank, and the communicator stays usable.
// A measured model new on a communicator is read from the machine's cache by rank 0 and
// remembered on every rank; with no cache, every rank measures.
TEST(PlanAuto, ModelAgreedInTheGather) {
  auto a = gen::from_spec(MPI_COMM_WORLD, "er:200,0.06,5");
  const Pattern pat = pattern_from_matrix_reference(a);
  const Locality loc = Locality::parse(MPI_COMM_WORLD, "ppn:2");
  const std::string dir = test::temp_dir();
  const std::string good = test::write_file(dir, "agree_good.txt", "alpha_inter 2e-6\n");
  const std::string other = test::write_file(dir, "agree_other.txt", "alpha_inter 3e-6\n");
  const std::string bad = test::write_file(dir, "agree_bad.txt", "alpha_inter 2e-6\nbogus_key 3\n");
  auto error_of = [&](const std::string& model, MPI_Comm comm = MPI_COMM_WORLD) -> std::string {
    PlanOptions o;
    if (!model.empty()) o.backend.set("model", model);
    try {
      make_plan("auto", pat, loc, comm, o);
      return "";
    } catch (const InputError& e) {
      return e.what();
    }
  };
  const int last = test::size() - 1;
  const bool me_last = test::rank() == last;
  {
    if (test::size() >= 2) {
      std::string e = error_of(me_last ? "builtin" : good);
      EXPECT_NE(e.find("disagree on the parameter source"), std::string::npos) << e;
      e = error_of(me_last ? bad : good);
      EXPECT_NE(e.find("agree_bad.txt:2:"), std::string::npos) << e;
      EXPECT_NE(e.find("[on rank " + std::to_string(last) + "]"), std::string::npos) << e;
      e = error_of(me_last ? other : good);
      EXPECT_NE(e.find("different performance model parameters"), std::string::npos) << e;
      // A file that one rank cannot read (a mistyped path) is an error, not the defaults.
      e = error_of(me_last ? dir + "/agree_missing.txt" : good);  // (each rank's own temp dir)
      EXPECT_NE(e.find("cannot read the parameter file '"), std::string::npos) << e;
      EXPECT_NE(e.find("/agree_missing.txt'"), std::string::npos) << e;
      EXPECT_NE(e.find("[on rank " + std::to_string(last) + "]"), std::string::npos) << e;
    }
    {  // ... and on every rank alike when all name it.
      const std::string e = error_of(dir + "/agree_missing.txt");
      EXPECT_NE(e.find("cannot read the parameter file"), std::string::npos) << e;
    }
    {  // A directory and an empty file read nothing: errors, not the built-in defaults.
      std::string e = error_of(dir);
      EXPECT_NE(e.find("' is a directory"), std::string::npos) << e;
      e = error_of(test::write_file(dir, "agree_empty.txt", ""));
      EXPECT_NE(e.find("agree_empty.txt' holds no parameters"), std::string::npos) << e;
      e = error_of(test::write_file(dir, "agree_comments.txt", "# nothing but a comment\n\n"));
      EXPECT_NE(e.find("agree_comments.txt' holds no parameters"), std::string::npos) << e;
    }
    EXPECT_EQ(error_of(good), "");  // nothing left in flight: the next plan is fine
  }
  // The machine's cache, on fresh communicators.
  const std::string cache = dir + "/agree_xdg";
  const test::EnvGuard xdg("XDG_CACHE_HOME", cache), no_model("SPARSECOMM_MODEL", std::nullopt);
  auto files = [&] {
    std::vector<std::string> f;
    if (std::filesystem::exists(cache + "/sparsecomm"))
      for (const auto& e : std::filesystem::directory_iterator(cache + "/sparsecomm")) f.push_back(e.path().string());
    return f;
  };
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  EXPECT_EQ(error_of("", dup), "");  // no cache: measured by every rank, written by rank 0
  if (test::rank() == 0) {
    EXPECT_EQ(files().size(), 1u);
  }
  const ModelParams measured = machine_model(dup, loc);  // remembered: no collective, the same values
  MPI_Comm_free(&dup);
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  EXPECT_EQ(error_of("", dup), "");  // cached: rank 0 reads it, every rank remembers it
  if (test::rank() == 0) std::filesystem::remove(files()[0]);
  MPI_Barrier(MPI_COMM_WORLD);
  const ModelParams remembered = machine_model(dup, loc);  // neither read nor measured (that would write it)
  EXPECT_EQ(std::memcmp(&measured, &remembered, sizeof measured), 0);
  MPI_Barrier(MPI_COMM_WORLD);
  if (test::rank() == 0) {
    EXPECT_TRUE(files().empty());
  }
  MPI_Comm_free(&dup);
}

// auto: picks the candidate with the lowest predicted cost, and the model steers it.
TEST(PlanAuto, FollowsTheModel) {
  auto a = gen::from_spec(MPI_COMM_WORLD, "er:300,0.1,7");  // many inter-region neighbors
  Pattern pat = pattern_from_matrix_reference(a);
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  const std::string dir = test::temp_dir();
  auto plan_with = [&](const std::string& model_text, int64_t iters = 0, bool aggregation_windows = true) {
    const std::string path = test::write_file(dir, "model.txt", model_text);
    MPI_Barrier(MPI_COMM_WORLD);
    PlanOptions o;
    o.backend.set("model", path).set("iterations", iters);
    if (!aggregation_windows) o.backend.set("window", false);
    return make_plan("auto", pat, loc, MPI_COMM_WORLD, o);
  };
  // The chosen backend's prediction is the smallest among the candidates.
  auto p = plan_with("alpha_inter 1e-3\n");
  double best = 1e300;
  for (const auto& [k, v] : p->setup_stats().timers())
    if (k.rfind("auto.predict.", 0) == 0) best = std::min(best, v);
  EXPECT_EQ(p->setup_stats().time("auto.predict." + p->name()), best) << p->name();
  EXPECT_GT(p->setup_stats().timers().count("auto.predict.p2p"), 0u);
  if (test::size() >= 4) {
    // The regions are emulated on one node, where the shm backend's window carries every
    // message: priced dear below (shm_dear), and the aggregation backends send messages
    // (window=false), so the choices among MPI-based backends show.
    const std::string shm_dear = "msg_shm 10\nbyte_shm 10\n";
    auto plan_with_mpi = [&](const std::string& text) { return plan_with(text + shm_dear, 0, false); };
    // Inter-region messages very expensive: an aggregating backend (one per region pair).
    EXPECT_EQ(plan_with_mpi("alpha_inter 1.0\nbeta_inter 0\n")->name().rfind("aggregated", 0), 0u);
    // Stages and copies very expensive, inter-region cheap: a one-stage direct backend.
    auto direct = plan_with_mpi("alpha_inter 1e-9\nbeta_inter 0\nstage 1.0\ncopy 1.0\n");
    EXPECT_TRUE(direct->name() == "p2p" || direct->name() == "neighbor") << direct->name();
    // Stage costs per locality class: aggregation's two extra stages stay inside regions.
    // Free there, it wins even when its inter-region step is not much cheaper; dear there,
    // it loses however dear inter-region stages are.
    EXPECT_EQ(plan_with_mpi("alpha_inter 1.0\nbeta_inter 0\nstage_intra 0\nstage_inter 100\n")->name().rfind("aggregated", 0),
              0u);
    auto no_agg = plan_with_mpi("alpha_inter 1.0\nbeta_inter 0\nstage_intra 100\nstage_inter 100\n");
    EXPECT_NE(no_agg->name().rfind("aggregated", 0), 0u) << no_agg->name();
    // The per-message term is the loaded cost msg_inter; the ping-pong latency alpha_inter
    // only sets stage floors in `calibrate`.
    EXPECT_EQ(plan_with_mpi("alpha_inter 1e-9\nmsg_inter 1.0\nbeta_inter 0\nbyte_inter 0\n")->name().rfind("aggregated", 0),
              0u);
    auto cheap_msgs = plan_with_mpi("alpha_inter 1.0\nmsg_inter 1e-9\nbeta_inter 0\nbyte_inter 0\nstage 1.0\ncopy 1.0\n");
    EXPECT_TRUE(cheap_msgs->name() == "p2p" || cheap_msgs->name() == "neighbor") << cheap_msgs->name();
    // Messages dear, the window cheap: on one node the shm backend, whose window carries
    // them all (where it is built).
    const auto names = backend_names();
    if (std::find(names.begin(), names.end(), "shm") != names.end() && Locality::one_node(MPI_COMM_WORLD)) {
      EXPECT_EQ(plan_with("msg_intra 1.0\nmsg_inter 1.0\nmsg_shm 1e-9\nbyte_shm 1e-12\n")->name(), "shm");
    }
  }
  // The same plan still computes the right SpMV.
  DistSpmv spmv(a, plan_with("alpha_inter 1e-6\n", 100));
  std::vector<double> x(static_cast<size_t>(a.local_cols()), 1.0), y(static_cast<size_t>(a.local_rows()));
  spmv.apply(x.data(), y.data());
  const auto ref = reference::gather_eigen(a);
  auto yg = reference::spmv(ref, std::vector<double>(static_cast<size_t>(a.global_cols()), 1.0));
  expect_close(y, std::vector<double>(yg.begin() + a.row_begin(), yg.begin() + a.row_begin() + a.local_rows()), "auto");
  // A malformed model file is an error naming the line, on every rank.
  try {
    plan_with("alpha_inter 1e-6\nbogus_key 3\n");
    ADD_FAILURE() << "no throw";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("model.txt:2:"), std::string::npos) << e.what();
  }
}

// Aggregation sends one inter-region message per region pair; dedup never sends more.
TEST(PlanCounts, AggregationOneMessagePerRegionPair) {
  auto a = gen::from_spec(MPI_COMM_WORLD, "rotate:32,32");
  Pattern pat = pattern_from_matrix_reference(a);
  for (const auto& regions : {"ppn:2", "ppn:3", "cyclic:2"}) {
    Locality loc = Locality::parse(MPI_COMM_WORLD, regions);
    auto p2p = make_plan("p2p", pat, loc, MPI_COMM_WORLD);
    auto agg = make_plan("aggregated", pat, loc, MPI_COMM_WORLD);
    auto dd = make_plan("aggregated_dedup", pat, loc, MPI_COMM_WORLD);
    // Region pairs with traffic, from the pattern: (my region, region of each destination).
    std::vector<int> pair_flags(static_cast<size_t>(loc.num_regions()) * loc.num_regions(), 0), all(pair_flags.size());
    for (int d : pat.send().ranks)
      if (!loc.same_region(d)) pair_flags[static_cast<size_t>(loc.region()) * loc.num_regions() + loc.region_of(d)] = 1;
    MPI_Allreduce(pair_flags.data(), all.data(), static_cast<int>(all.size()), MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    int64_t pairs = 0;
    for (int v : all) pairs += v;
    const int64_t agg_inter = allreduce_sum(MPI_COMM_WORLD, agg->iteration_counts().total().sent_inter.msgs);
    const int64_t dd_inter = allreduce_sum(MPI_COMM_WORLD, dd->iteration_counts().total().sent_inter.msgs);
    EXPECT_EQ(agg_inter, pairs) << regions;
    EXPECT_EQ(dd_inter, pairs) << regions;
    const int64_t agg_bytes = allreduce_sum(MPI_COMM_WORLD, agg->iteration_counts().total().sent_inter.bytes);
    const int64_t dd_bytes = allreduce_sum(MPI_COMM_WORLD, dd->iteration_counts().total().sent_inter.bytes);
    const int64_t p2p_bytes = allreduce_sum(MPI_COMM_WORLD, p2p->iteration_counts().total().sent_inter.bytes);
    EXPECT_EQ(agg_bytes, p2p_bytes) << "aggregation moves the same values across regions";
    EXPECT_LE(dd_bytes, agg_bytes);
    // Received counts mirror sent counts.
    EXPECT_EQ(allreduce_sum(MPI_COMM_WORLD, agg->iteration_counts().total().recv_inter.msgs), agg_inter);
    EXPECT_EQ(allreduce_sum(MPI_COMM_WORLD, dd->iteration_counts().total().recv_inter.bytes), dd_bytes);
  }
}

// The aggregation and combining backends' transfers between ranks of one node go through
// the node's shared window by default (window=false: all messages): the same transfers
// either way, and on one node every one of them in the window counts.
TEST(PlanCounts, AggregationStepsThroughTheNodeWindow) {
  auto a = gen::from_spec(MPI_COMM_WORLD, "rotate:32,32");
  Pattern pat = pattern_from_matrix_reference(a);
  const auto flat = [](const Stats& s) {
    std::vector<int64_t> v;
    for (const auto& [step, c] : s.steps())
      for (const MessageCounts* m : {&c.sent_intra, &c.sent_inter, &c.recv_intra, &c.recv_inter})
        v.insert(v.end(), {m->msgs, m->bytes});
    return v;
  };
#ifdef SPARSECOMM_SMPI
  const bool windows = false;  // no shared windows under SMPI
#else
  const bool windows = Locality::one_node(MPI_COMM_WORLD);
#endif
  for (const auto& regions : {"ppn:2", "cyclic:2"}) {
    Locality loc = Locality::parse(MPI_COMM_WORLD, regions);
    for (const char* name : {"aggregated", "aggregated_dedup", "aggregated_2step", "combined"}) {
      PlanOptions no;
      no.backend.set("window", false);
      auto win = make_plan(name, pat, loc, MPI_COMM_WORLD), msg = make_plan(name, pat, loc, MPI_COMM_WORLD, no);
      const std::string what = std::string(name) + " " + regions;
      EXPECT_EQ(flat(win->iteration_counts()), flat(msg->iteration_counts())) << what;
      EXPECT_TRUE(flat(msg->window_counts()).empty()) << what;
      if (windows) {
        EXPECT_EQ(flat(win->window_counts()), flat(win->iteration_counts())) << what;
      }
      // Both compute the same halo.
      std::vector<double> x(static_cast<size_t>(a.local_cols())), yw(static_cast<size_t>(a.local_rows())), ym = yw;
      for (int32_t i = 0; i < a.local_cols(); ++i) x[i] = xval(a.col_begin() + i, 0, 1);
      DistSpmv(a, std::move(win)).apply(x.data(), yw.data());
      DistSpmv(a, std::move(msg)).apply(x.data(), ym.data());
      EXPECT_EQ(yw, ym) << what;
    }
  }
}

// The 2-step aggregation: one inter-region message per (rank, remote region) it sends to,
// the same deduplicated bytes as the 3-step, at most 2 dependent steps; with one rank per
// region nothing is shared and it sends exactly point-to-point's messages.
TEST(PlanCounts, TwoStepOneMessagePerRankAndRegion) {
  auto a = gen::from_spec(MPI_COMM_WORLD, "rotate:32,32");
  Pattern pat = pattern_from_matrix_reference(a);
  for (const auto& regions : {"ppn:1", "ppn:2", "ppn:3", "cyclic:2"}) {
    Locality loc = Locality::parse(MPI_COMM_WORLD, regions);
    auto p2p = make_plan("p2p", pat, loc, MPI_COMM_WORLD);
    auto dd = make_plan("aggregated_dedup", pat, loc, MPI_COMM_WORLD);
    auto two = make_plan("aggregated_2step", pat, loc, MPI_COMM_WORLD);
    std::set<int> remote_regions;
    for (int d : pat.send().ranks)
      if (!loc.same_region(d)) remote_regions.insert(loc.region_of(d));
    const auto& mine = two->iteration_counts().total();
    EXPECT_EQ(mine.sent_inter.msgs, static_cast<int64_t>(remote_regions.size())) << regions;
    EXPECT_LE(two->stages(), 2) << regions;
    auto sum = [](const Plan& pl, bool bytes) {
      const auto& c = pl.iteration_counts().total().sent_inter;
      return allreduce_sum(MPI_COMM_WORLD, bytes ? c.bytes : c.msgs);
    };
    EXPECT_EQ(sum(*two, true), sum(*dd, true)) << regions << ": a value crosses a region pair once in both";
    EXPECT_EQ(allreduce_sum(MPI_COMM_WORLD, mine.recv_inter.bytes), sum(*two, true)) << regions;
    if (std::string(regions) == "ppn:1") {
      EXPECT_EQ(sum(*two, false), sum(*p2p, false));
      EXPECT_EQ(sum(*two, true), sum(*p2p, true));
      EXPECT_EQ(allreduce_max(MPI_COMM_WORLD, static_cast<int64_t>(two->stages())), 1);
    }
  }
}

TEST(PlanCounts, DedupRemovesSharedValues) {
  // A dense block column: every rank of a remote region needs the same values, so dedup
  // must send strictly fewer inter-region bytes as soon as regions hold 2+ ranks.
  const int p = test::size(), me = test::rank();
  if (p < 4) GTEST_SKIP() << "needs two regions of two ranks";
  auto rows = RowPartition::balanced(4 * p, p);
  std::vector<Triplet<double>> t;
  for (int64_t i = rows.begin(me); i < rows.end(me); ++i)
    for (int64_t j = 0; j < 4 * p; j += 3) t.push_back({i, j, 1.0});
  auto a = DistCsr<double>::from_triplets(MPI_COMM_WORLD, rows, rows, t);
  Pattern pat = pattern_from_matrix_reference(a);
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  auto agg = make_plan("aggregated", pat, loc, MPI_COMM_WORLD);
  auto dd = make_plan("aggregated_dedup", pat, loc, MPI_COMM_WORLD);
  const int64_t agg_bytes = allreduce_sum(MPI_COMM_WORLD, agg->iteration_counts().total().sent_inter.bytes);
  const int64_t dd_bytes = allreduce_sum(MPI_COMM_WORLD, dd->iteration_counts().total().sent_inter.bytes);
  EXPECT_EQ(dd_bytes * 2, agg_bytes) << "each remote value is needed by both ranks of a region pair";
  auto two = make_plan("aggregated_2step", pat, loc, MPI_COMM_WORLD);
  EXPECT_EQ(allreduce_sum(MPI_COMM_WORLD, two->iteration_counts().total().sent_inter.bytes), dd_bytes);
  EXPECT_GT(allreduce_sum(MPI_COMM_WORLD, two->iteration_counts().total().sent_intra.bytes), 0)
      << "the second rank of each region gets its share forwarded";
}

// A malformed pattern (built by hand, or from a Hypre package or an SF) reaches no backend:
// make_plan names its defect on every rank. Each case is malformed on one rank only (the
// last), the others pass a well-formed empty pattern. (A negative count once reached a
// backend as "a message of -8 bytes does not fit an MPI count": found by fuzz_hypre_pkg.)
TEST(PlanErrors, MalformedPatternsAreNamed) {
  const Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  const bool last = test::rank() == test::size() - 1;
  struct Case {
    const char* what;
    PatternSide send;
    int32_t owned;
    const char* message;
  };
  const int p = test::size();
  const std::vector<Case> cases = {
      {"decreasing offsets", {{0, 0}, {0, 2, 1}, {0}, {}}, 4, "pattern: send side: offsets decrease at neighbor 1 (2 then 1)"},
      {"rank outside", {{p}, {0, 1}, {0}, {}}, 4, "outside the communicator's"},
      {"position outside", {{0}, {0, 1}, {4}, {}}, 4, "pattern: send side: entry 0 at position 4, outside the owned buffer of 4"},
      {"offsets short", {{0}, {0, 2}, {0}, {}}, 4, "pattern: send side: offsets end at 2 but there are 1 entries"},
      {"offsets count", {{0}, {0}, {}, {}}, 4, "pattern: send side: 1 neighbors need 2 offsets, not 1"},
      {"ids", {{0}, {0, 1}, {0}, {7, 8}}, 4, "pattern: send side: 2 global ids for 1 entries"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const Pattern pat = last ? Pattern(c.send, PatternSide{}, c.owned, 0) : Pattern();
    try {
      make_plan("p2p", pat, loc, MPI_COMM_WORLD);
      ADD_FAILURE() << "no throw";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    }
  }
  // A well-formed one on every rank still makes a plan
  EXPECT_NO_THROW(make_plan("p2p", Pattern(), loc, MPI_COMM_WORLD));
}

// The two ends of an edge with the same count but other global ids (or the same ids in
// another order): aggregated_dedup matches entries by id, p2p by position, so either would
// deliver other values than the ids say. Every backend refuses it, on every rank; the
// consistent pattern, with the ids in the same order at both ends, is served.
TEST(PlanErrors, EndsThatNameOtherGlobalIdsAreInconsistent) {
  const int p = test::size(), me = test::rank();
  if (p < 2) GTEST_SKIP() << "needs two ranks";
  const Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  // Each rank sends its entries 0 and 1 (ids 10 me, 10 me + 1) to the next rank.
  const int next = (me + 1) % p, prev = (me + p - 1) % p;
  const auto pattern = [&](std::vector<int64_t> recv_ids) {
    PatternSide send{{next}, {0, 2}, {0, 1}, {10 * me, 10 * me + 1}};
    PatternSide recv{{prev}, {0, 2}, {0, 1}, std::move(recv_ids)};
    return Pattern(std::move(send), std::move(recv), 2, 2);
  };
  const std::vector<int64_t> right = {10 * prev, 10 * prev + 1};
  for (const char* backend : {"p2p", "aggregated_dedup"}) {
    SCOPED_TRACE(backend);
    for (const auto& ids : {std::vector<int64_t>{10 * prev + 1, 10 * prev}, std::vector<int64_t>{10 * prev, 10 * prev + 7}}) {
      // (wrong on the last rank only: the others' ends agree)
      const Pattern pat = pattern(me == p - 1 ? ids : right);
      try {
        make_plan(backend, pat, loc, MPI_COMM_WORLD);
        ADD_FAILURE() << "no throw";
      } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("the two ends of an edge name different global ids"), std::string::npos)
            << e.what();
      }
    }
    auto plan = make_plan(backend, pattern(right), loc, MPI_COMM_WORLD);
    const std::vector<double> owned = {10.0 * me, 10.0 * me + 1};
    std::vector<double> got(2, -1);
    plan->start(owned.data());
    plan->wait(got.data());
    EXPECT_EQ(got, (std::vector<double>{10.0 * prev, 10.0 * prev + 1}));
  }
}

TEST(PlanErrors, BadUseIsReported) {
  auto a = gen::from_spec(MPI_COMM_WORLD, "lap2d:8,8");
  Pattern pat = pattern_from_matrix_reference(a);
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  try {
    make_plan("carrier_pigeon", pat, loc, MPI_COMM_WORLD);
    ADD_FAILURE() << "no throw";
  } catch (const InputError& e) {
    // (neighbor_persistent between neighbor and p2p where the MPI has MPI-4's persistent
    // neighborhood collectives)
    const std::string what = e.what();
    EXPECT_NE(what.find("valid backends: aggregated, aggregated_2step, aggregated_dedup, auto, combined, neighbor, "),
              std::string::npos)
        << what;
    EXPECT_NE(what.find(", p2p, shm"), std::string::npos) << what;
  }
  // Ranks disagreeing on the backend or the datatype: every rank throws, nobody hangs, and
  // every rank says which setting differs, with the value of the rank that reports it (0).
  if (test::size() > 1) {
    const auto error_of = [&](const std::string& backend, const PlanOptions& o) -> std::string {
      try {
        make_plan(backend, pat, loc, MPI_COMM_WORLD, o);
      } catch (const InputError& e) {
        return e.what();
      }
      return "no error";
    };
    const bool one = test::rank() == 1;
    std::string e = error_of(one ? "p2p" : "neighbor", PlanOptions{});
    EXPECT_NE(e.find("asked for different exchanges: the backend is 'neighbor' here"), std::string::npos) << e;
    EXPECT_NE(e.find("not on every rank [reported by rank 0"), std::string::npos) << e;
    EXPECT_EQ(e.find("bytes per value"), std::string::npos) << e;  // (only what differs)
    PlanOptions o;
    o.value_bytes = one ? 4 : 8;
    e = error_of("p2p", o);
    EXPECT_NE(e.find("the bytes per value (the datatype's size) is '8' here, not on every rank [reported by rank 0"),
              std::string::npos)
        << e;
  }
  // A hand-made pattern whose sender and receiver disagree is refused before any exchange.
  if (test::size() > 1) {
    PatternSide send, recv;
    if (test::rank() == 0) {
      send.ranks = {1}, send.offsets = {0, 2}, send.indices = {0, 0}, send.global_ids = {0, 0};
    }
    if (test::rank() == 1) {
      recv.ranks = {0}, recv.offsets = {0, 3}, recv.indices = {0, 1, 2}, recv.global_ids = {0, 1, 2};  // expects 3
    }
    Pattern bad(send, recv, 1, test::rank() == 1 ? 3 : 0);
    EXPECT_THROW(make_plan("p2p", bad, loc, MPI_COMM_WORLD), InputError);
  }
  auto plan = make_plan("p2p", pat, loc, MPI_COMM_WORLD);
  std::vector<double> x(static_cast<size_t>(a.local_cols()), 1.0), g(static_cast<size_t>(a.num_ghosts()));
  std::vector<float> xf(x.size());
  EXPECT_THROW(plan->start(xf.data()), InputError);  // float into a double plan
  EXPECT_THROW(plan->wait(g.data()), Error);         // wait without start
  plan->start(x.data());
  EXPECT_THROW(plan->start(x.data()), Error);  // one outstanding start per plan
  plan->wait(g.data());
  for (double v : g) EXPECT_EQ(v, 1.0);
}

// Destroying a plan during an exchange completes it instead of leaking requests.
SPC_BACKEND_SUITE(PlanDestroyed, backend_names());
TEST_P(PlanDestroyed, DuringAnExchange) {
  auto a = gen::from_spec(MPI_COMM_WORLD, "lap2d:8,8");
  Pattern pat = pattern_from_matrix_reference(a);
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  std::vector<double> x(static_cast<size_t>(a.local_cols()), 1.0);
  {
    auto q = make_plan(GetParam(), pat, loc, MPI_COMM_WORLD);
    q->start(x.data());
  }  // (destroyed with its exchange in flight)
  MPI_Barrier(MPI_COMM_WORLD);
}

// The tests below call the verbs under their deprecated names (wait_in_place, start_packed,
// start_into, wait_into): the aliases must keep working.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

// Zero-copy use: wait_in_place() hands out the received values in pattern receive order
// (the ghost array itself when ghosts are numbered in arrival order), and a caller that
// writes send_area() and calls start_packed() sends what start() would have packed.
SPC_BACKEND_SUITE(PlanInPlace, backend_names());
TEST_P(PlanInPlace, ZeroCopyMatchesPackAndUnpack) {
  const std::string& backend = GetParam();
  auto a = gen::from_spec(MPI_COMM_WORLD, "er:150,0.04,5");
  Pattern pat = pattern_from_matrix_reference(a);
  Pattern rpat = pat.reverse();
  for (const auto& regions : {"ppn:2", "cyclic:2"}) {
    Locality loc = Locality::parse(MPI_COMM_WORLD, regions);
    const std::string what = std::string("backend ") + backend + " regions " + regions;
    for (int width : {1, 2}) {
      PlanOptions opt;
      opt.width = width;
      auto plan = make_plan(backend, pat, loc, MPI_COMM_WORLD, opt);
      // DistCsr numbers its ghosts by global column, so by owner: arrival order.
      EXPECT_TRUE(plan->receives_in_ghost_order()) << what;
      std::vector<double> x(static_cast<size_t>(a.local_cols()) * width);
      for (size_t i = 0; i < x.size(); ++i) x[i] = xval(a.col_begin() * width + static_cast<int64_t>(i), width, 3);
      std::vector<double> g(static_cast<size_t>(a.num_ghosts()) * width, -1.0);
      plan->exchange(x.data(), g.data());
      plan->start(x.data());
      const double* in = plan->wait_in_place<double>();
      const auto& r = pat.recv();
      for (int64_t k = 0; k < r.size(); ++k)
        for (int j = 0; j < width; ++j)
          ASSERT_EQ(in[k * width + j], g[static_cast<size_t>(r.indices[k]) * width + j]) << what << " entry " << k;
      EXPECT_THROW(plan->wait_in_place<double>(), Error) << what;  // nothing active

      // Reverse: partial sums written straight into the send area, added at their owners.
      auto rev = make_plan(backend, rpat, loc, MPI_COMM_WORLD, opt);
      EXPECT_TRUE(rev->sends_in_owned_order()) << what;
      std::vector<double> y1(x.size(), 0.5), y2(x.size(), 0.5);
      rev->start(g.data());
      rev->wait(y1.data(), Unpack::add);
      double* area = rev->send_area<double>();
      const auto& s = rpat.send();
      for (int64_t k = 0; k < s.size(); ++k)
        for (int j = 0; j < width; ++j) area[k * width + j] = g[static_cast<size_t>(s.indices[k]) * width + j];
      rev->start_packed();
      EXPECT_THROW(rev->send_area<double>(), Error) << what;  // being sent
      EXPECT_THROW(rev->start_packed(), Error) << what;       // one outstanding start
      rev->wait(y2.data(), Unpack::add);
      for (size_t i = 0; i < y1.size(); ++i) ASSERT_EQ(y1[i], y2[i]) << what << " owned entry " << i;
    }
  }
}

// A pattern whose ghosts are not in arrival order still gets its values, in receive order.
TEST(PlanZeroCopy, GhostsOutOfArrivalOrder) {
  auto a = gen::from_spec(MPI_COMM_WORLD, "er:150,0.04,5");
  Pattern pat = pattern_from_matrix_reference(a);
  PatternSide send = pat.send(), recv = pat.recv();
  std::reverse(recv.indices.begin(), recv.indices.end());
  Pattern perm(send, recv, a.local_cols(), a.num_ghosts());
  auto plan = make_plan("p2p", perm, Locality::ppn(MPI_COMM_WORLD, 2), MPI_COMM_WORLD);
  if (recv.indices.size() > 1) {
    EXPECT_FALSE(plan->receives_in_ghost_order());
  }
  std::vector<double> x(static_cast<size_t>(a.local_cols())), g(static_cast<size_t>(a.num_ghosts()));
  for (size_t i = 0; i < x.size(); ++i) x[i] = xval(a.col_begin() + static_cast<int64_t>(i), 0, 1);
  plan->exchange(x.data(), g.data());
  plan->start(x.data());
  const double* in = plan->wait_in_place<double>();
  for (size_t k = 0; k < recv.indices.size(); ++k) ASSERT_EQ(in[k], g[recv.indices[k]]) << "entry " << k;
}

// Values of 4 bytes (PlanOptions::value_bytes; Hypre's HYPRE_Int exchanges through the hook,
// the C API's MPI_INT halos): every backend delivers each ghost's owner value, at widths 1
// and 3 and through start_into (the hook's path), on patterns whose messages hold odd
// numbers of values (not multiples of 8 bytes), including ranks with no rows.
// Values of T (4 or 8 bytes) through `backend`, forward and reversed, against p2p's.
template <class T>
void check_value_bytes(const std::string& backend, const std::string& spec, const std::string& regions, bool reversed,
                       int width) {
  auto a = gen::from_spec(MPI_COMM_WORLD, spec);
  const Pattern fwd = pattern_from_matrix_reference(a);
  // Forward: owners' values to the ghosts. Reversed (the transpose, Hypre's jobs 2 and 12):
  // each ghost slot's value back to its owner's send slot.
  const Pattern pat = reversed ? fwd.reverse() : fwd;
  Locality loc = Locality::parse(MPI_COMM_WORLD, regions);
  const int64_t nowned = reversed ? a.num_ghosts() : a.local_cols();
  // Where the receive writes: recv.indices into an array of the other side's size (the
  // ghosts; reversed, the owned entries, some written by several sources: where the last
  // writer depends on the backend's order, those are left out of the comparison).
  const int64_t ntarget = reversed ? a.local_cols() : a.num_ghosts();
  std::vector<int> writers(static_cast<size_t>(ntarget), 0);
  for (int32_t i : pat.recv().indices) ++writers[static_cast<size_t>(i)];
  std::vector<T> x(static_cast<size_t>(nowned) * width);
  for (int64_t i = 0; i < nowned; ++i)
    for (int k = 0; k < width; ++k)
      x[static_cast<size_t>(i * width + k)] =
          static_cast<T>((reversed ? i * 5 + 100 * test::rank() : a.col_begin() + i) * 7 + k * 1000003 + 11);
  PlanOptions opt;
  opt.width = width, opt.value_bytes = static_cast<int>(sizeof(T));
  std::vector<T> ref(static_cast<size_t>(ntarget) * width, T(-1));
  make_plan("p2p", pat, loc, MPI_COMM_WORLD, opt)->exchange(x.data(), ref.data());
  for (int64_t i = 0; i < ntarget; ++i)
    if (writers[static_cast<size_t>(i)] > 1)
      for (int k = 0; k < width; ++k) ref[static_cast<size_t>(i * width + k)] = T(-2);
  if (!reversed) {  // p2p itself against the owners' values
    for (int64_t g = 0; g < a.num_ghosts(); ++g)
      for (int k = 0; k < width; ++k)
        ASSERT_EQ(ref[static_cast<size_t>(g * width + k)],
                  static_cast<T>(a.ghost_ids()[static_cast<size_t>(g)] * 7 + k * 1000003 + 11));
  }
  const std::string what = spec + " " + regions + " " + backend + " " + std::to_string(sizeof(T)) + "-byte width " +
                           std::to_string(width) + (reversed ? " reversed" : "");
  auto plan = make_plan(backend, pat, loc, MPI_COMM_WORLD, opt);
  for (int rep = 0; rep < 2; ++rep) {
    std::vector<T> got(ref.size(), T(-1));
    if (rep == 0) {
      plan->exchange(x.data(), got.data());
    } else {
      plan->start_into(x.data(), got.data());
      plan->wait_into(got.data());
    }
    for (int64_t i = 0; i < ntarget; ++i)
      if (writers[static_cast<size_t>(i)] > 1)
        for (int k = 0; k < width; ++k) got[static_cast<size_t>(i * width + k)] = T(-2);
    ASSERT_EQ(got, ref) << what << (rep ? " start_into" : " exchange");
  }
}

SPC_BACKEND_SUITE(PlanValueBytes, backend_names());
TEST_P(PlanValueBytes, FourAndEightByteValues) {
  for (const std::string spec : {"er:150,0.04,5", "rotate:9,7", "er:13,0.3,2"})
    for (const std::string regions : {"ppn:2", "ppn:3"})
      for (bool reversed : {false, true})
        for (int width : {1, 3}) {
          check_value_bytes<int32_t>(GetParam(), spec, regions, reversed, width);
          check_value_bytes<int64_t>(GetParam(), spec, regions, reversed, width);
        }
}

// start_into()/wait_into(): the values land in the caller's ghost array, received there
// directly by p2p and neighbor with fresh requests (no unpack copy), copied by every other
// backend and by persistent requests; the result is exchange()'s either way, the array is
// not touched by a direct receive until the wait, and the plan is reusable afterwards.
TEST_P(PlanInPlace, StartIntoMatchesExchange) {
  const std::string& backend = GetParam();
  auto a = gen::from_spec(MPI_COMM_WORLD, "er:150,0.04,5");
  Pattern pat = pattern_from_matrix_reference(a);
  Locality loc = Locality::parse(MPI_COMM_WORLD, "ppn:2");
  for (bool persistent : {false, true})
      for (int width : {1, 3}) {
        const std::string what = "backend " + backend + (persistent ? " persistent" : " fresh") + " width " +
                                 std::to_string(width);
        PlanOptions opt;
        opt.width = width;
        opt.persistent_requests = persistent;
        auto plan = make_plan(backend, pat, loc, MPI_COMM_WORLD, opt);
        std::vector<double> x(static_cast<size_t>(a.local_cols()) * width);
        for (size_t i = 0; i < x.size(); ++i) x[i] = xval(a.col_begin() * width + static_cast<int64_t>(i), width, 7);
        std::vector<double> want(static_cast<size_t>(a.num_ghosts()) * width + 1, -1.0), got(want.size(), -2.0);
        plan->exchange(x.data(), want.data());
        for (int rep = 0; rep < 2; ++rep) {
          std::fill(got.begin(), got.end(), -2.0);
          plan->start_into(x.data(), got.data());
          // neighbor posts a fresh MPI_Ineighbor_alltoallv at every start, on the caller's
          // arrays; neighbor_persistent (MPI-4) is bound to the plan's buffers at setup.
          const bool expect_direct = (plan->name() == "p2p" && !persistent) || plan->name() == "neighbor";
          EXPECT_EQ(plan->receiving_direct(), expect_direct) << what;
          EXPECT_THROW(plan->start(x.data()), Error) << what;  // one outstanding start
          plan->wait_into(got.data());
          for (size_t i = 0; i + 1 < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << what << " ghost value " << i;
          EXPECT_EQ(got.back(), -2.0) << what;  // nothing beyond the ghosts
        }
        // The reverse plan sends its owned array as it lies (send entry k = owned entry k):
        // sent from the caller's array by p2p/neighbor, packed by the others; same values.
        auto rev = make_plan(backend, pat.reverse(), loc, MPI_COMM_WORLD, opt);
        ASSERT_TRUE(rev->sends_in_owned_order()) << what;
        std::vector<double> rwant(x.size(), -1.0), rgot(x.size(), -1.0);  // owned entries no one sends keep it
        rev->exchange(want.data(), rwant.data());
        std::vector<double> rsrc(want.begin(), want.end());
        rev->start_into(rsrc.data(), rgot.data());
        rev->wait_into(rgot.data());
        for (size_t i = 0; i < rgot.size(); ++i) ASSERT_EQ(rgot[i], rwant[i]) << what << " reverse, owned value " << i;
      }
}

// p2p's own options, as the C API's neighborhood alltoallv uses them: each neighbor's
// entries cut into several messages ("messages"), sent from and received into the caller's
// arrays at positions that are not the identity ("in_place"), two plans on one shared
// communicator told apart by tag ("channel") with their exchanges in flight at once and
// started in opposite orders; fresh and persistent requests, the same arrays again, other
// arrays, and a packed start on the same plan. Then the options' misuse is named.
TEST(PlanP2p, MessagesInPlaceOnASharedChannel) {
  const int me = comm_rank(MPI_COMM_WORLD), p = comm_size(MPI_COMM_WORLD);
  if (p < 2) GTEST_SKIP() << "needs two ranks (a ring)";
  const int right = (me + 1) % p, left = (me + p - 1) % p;
  // To the right: owned {1,2,3} then {6,7}; from the left: into ghost {4,5,6} then {0,1}.
  auto side = [](int peer, std::vector<int32_t> idx) {
    PatternSide s;
    s.ranks = {peer};
    s.indices = std::move(idx);
    s.offsets = {0, s.size()};
    return s;
  };
  const Pattern pat(side(right, {1, 2, 3, 6, 7}), side(left, {4, 5, 6, 0, 1}), 10, 8);
  auto cuts = std::make_shared<const P2pMessages>(P2pMessages{{3, 2}, {3, 2}});
  auto shared = std::make_shared<const Comm>(MPI_COMM_WORLD);
  const Locality loc = Locality::single_unsplit(MPI_COMM_WORLD);
  auto expect_ring = [&](const std::vector<double>& g, double sign, const std::string& what) {
    const std::vector<double> want{sign * (100 * left + 6), sign * (100 * left + 7), -1, -1,
                                   sign * (100 * left + 1), sign * (100 * left + 2), sign * (100 * left + 3), -1};
    EXPECT_EQ(g, want) << what;
  };
  for (bool persistent : {false, true}) {
    const std::string what = persistent ? "persistent" : "fresh";
    std::vector<std::unique_ptr<Plan>> plans;
    for (int tag : {5, 6}) {
      PlanOptions opt;
      opt.persistent_requests = persistent;
      opt.backend.set("in_place", true).attach<P2pMessages>("messages", cuts);
      opt.backend.attach<P2pChannel>("channel", std::make_shared<const P2pChannel>(P2pChannel{shared, tag}));
      plans.push_back(detail::make_plan_inside("p2p", pat, loc, MPI_COMM_WORLD, opt));
    }
    std::vector<double> x(10), y(10);
    for (int i = 0; i < 10; ++i) x[i] = 100 * me + i, y[i] = -x[i];
    std::vector<double> ga1(8), gb1(8), ga2(8), gb2(8);
    for (int round = 0; round < 3; ++round) {  // the same arrays twice, then other ones
      std::vector<double>& ga = round < 2 ? ga1 : ga2;
      std::vector<double>& gb = round < 2 ? gb1 : gb2;
      std::fill(ga.begin(), ga.end(), -1.0), std::fill(gb.begin(), gb.end(), -1.0);
      const int first = me % 2;
      plans[first]->start(first ? y.data() : x.data(), first ? gb.data() : ga.data());
      plans[1 - first]->start(first ? x.data() : y.data(), first ? ga.data() : gb.data());
      EXPECT_TRUE(plans[0]->receiving_direct()) << what;
      plans[1]->wait(gb.data());
      plans[0]->wait(ga.data());
      expect_ring(ga, 1, what + " plan a, round " + std::to_string(round));
      expect_ring(gb, -1, what + " plan b, round " + std::to_string(round));
    }
    std::vector<double> g(8, -1.0);
    plans[0]->start(x.data());  // packed: the plan's own buffers
    plans[0]->wait(g.data());
    expect_ring(g, 1, what + " packed");
  }
  PlanOptions bad;
  bad.backend.set("in_place", true);  // one message per neighbor: {1,2,3,6,7} is not consecutive
  EXPECT_THROW(make_plan("p2p", pat, loc, MPI_COMM_WORLD, bad), InputError);
  PlanOptions uneven;
  uneven.backend.attach<P2pMessages>("messages", std::make_shared<const P2pMessages>(P2pMessages{{3, 3}, {3, 2}}));
  EXPECT_THROW(make_plan("p2p", pat, loc, MPI_COMM_WORLD, uneven), InputError);
}

// (matrix, backend): every backend of the registry on each matrix, a case of its own.
class PlanSuiteSparse : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};
TEST_P(PlanSuiteSparse, SpmvMatchesReference) {
  const auto& [matrix, backend] = GetParam();
  SPC_REQUIRE_MATRIX(path, matrix);
  check_backend(read_matrix_market(MPI_COMM_WORLD, path), matrix, backend);
}
INSTANTIATE_TEST_SUITE_P(Real, PlanSuiteSparse,
                         ::testing::Combine(::testing::Values("HB/bcsstk01", "HB/west0132", "Pajek/Journals",
                                                              "HB/can_1054", "HB/dwt_193"),
                                            ::testing::ValuesIn(backend_names())),
                         test::StringPairParamName());

}  // namespace

// test() (non-blocking completion, used by the PMPI layer's non-blocking alltoall):
// backends that support it deliver by polling exactly what wait() delivers, over several
// executions and both unpack modes; the others say so (NotImplementedError) and the
// exchange can still be completed by wait().
SPC_BACKEND_SUITE(PlanTest, backend_names());
TEST_P(PlanTest, PollingMatchesWait) {
  const std::string& backend = GetParam();
  const auto a = gen::from_spec(MPI_COMM_WORLD, "rotate:14,9");
  Pattern pat = pattern_from_matrix_reference(a);
  Locality loc = Locality::parse(MPI_COMM_WORLD, "ppn:2");
  auto plan = make_plan(backend, pat, loc, MPI_COMM_WORLD);
  const int32_t nghost = pat.ghost_size();
  for (int round = 0; round < 3; ++round) {
    std::vector<double> x(static_cast<size_t>(a.local_cols()));
    for (int32_t i = 0; i < a.local_cols(); ++i) x[i] = xval(a.col_begin() + i, 0, round);
    std::vector<double> want(static_cast<size_t>(nghost) + 1, 0.5), got(want);
    plan->exchange(x.data(), want.data());
    plan->start(x.data());
    if (!plan->supports_test()) {
      EXPECT_THROW(plan->test(got.data()), NotImplementedError) << backend;
      plan->wait(got.data());
    } else {
      const Unpack mode = round == 2 ? Unpack::add : Unpack::replace;
      if (mode == Unpack::add)  // every ghost is received once: 0.5 + its value; the spare entry stays
        for (int32_t k = 0; k < nghost; ++k) want[static_cast<size_t>(k)] += 0.5;
      while (!plan->test(got.data(), mode)) {
      }
      EXPECT_FALSE(plan->active()) << backend;
    }
    EXPECT_EQ(got, want) << backend << " round " << round;
  }
}

// (of the registry's backends, the cases above)
TEST(PlanTestSupport, AtLeastThreeBackendsPoll) {
  const auto a = gen::from_spec(MPI_COMM_WORLD, "rotate:14,9");
  Pattern pat = pattern_from_matrix_reference(a);
  Locality loc = Locality::parse(MPI_COMM_WORLD, "ppn:2");
  int supported = 0;
  for (const auto& backend : backend_names()) supported += make_plan(backend, pat, loc, MPI_COMM_WORLD)->supports_test();
  EXPECT_GE(supported, 3) << "p2p, neighbor and combined poll";
}

// The shm plan's counts are p2p's (one transfer per neighbor); the part its window carries
// is in window_counts() — on one node all of it — and the model prices that part with the
// window costs, not as messages.
TEST(PlanShm, WindowCountsAndTheirPrice) {
  const auto names = backend_names();
  if (std::find(names.begin(), names.end(), "shm") == names.end()) GTEST_SKIP() << "no shm backend in this build";
  auto a = gen::from_spec(MPI_COMM_WORLD, "er:200,0.05,3");
  const Pattern pat = pattern_from_matrix_reference(a);
  const Locality loc = Locality::parse(MPI_COMM_WORLD, "ppn:2");
  PlanOptions o;
  o.width = 2;
  auto shm = make_plan("shm", pat, loc, MPI_COMM_WORLD, o), p2p = make_plan("p2p", pat, loc, MPI_COMM_WORLD, o);
  const auto &ts = shm->iteration_counts().total(), &tp = p2p->iteration_counts().total();
  EXPECT_EQ(ts.sent().msgs, tp.sent().msgs);
  EXPECT_EQ(ts.sent().bytes, tp.sent().bytes);
  const CommCounters& w = shm->window_counts().total();
  EXPECT_EQ(p2p->window_counts().total().sent().msgs, 0);
  if (Locality::one_node(MPI_COMM_WORLD)) {
    EXPECT_EQ(w.sent().msgs, tp.sent().msgs);
    EXPECT_EQ(w.sent().bytes, static_cast<int64_t>(pat.send().size()) * 2 * 8);
    EXPECT_EQ(w.recv_intra.bytes + w.recv_inter.bytes, tp.recv_intra.bytes + tp.recv_inter.bytes);
  }
  // Messages free, the window dear: shm predicted dearer than p2p wherever it has window
  // traffic (and with msg costs dear, the other way round).
  ModelParams m;
  m.msg_intra = m.msg_inter = m.byte_intra = m.byte_inter = 0;
  m.msg_shm = 1e-3;
  const bool any_window = allreduce_max(MPI_COMM_WORLD, w.recv_intra.msgs + w.recv_inter.msgs) > 0;
  const double shm_dear = predict_iteration(*shm, m, MPI_COMM_WORLD), p2p_free = predict_iteration(*p2p, m, MPI_COMM_WORLD);
  if (any_window) {
    EXPECT_GT(shm_dear, p2p_free + 1e-4);
  }
  m.msg_intra = m.msg_inter = 1e-3;
  m.msg_shm = 0;
  if (any_window && Locality::one_node(MPI_COMM_WORLD)) {
    EXPECT_LT(predict_iteration(*shm, m, MPI_COMM_WORLD), predict_iteration(*p2p, m, MPI_COMM_WORLD) - 1e-4);
  }
}

// The shared windows under stress: 10,000 back-to-back exchanges on a one-way ring (rank r
// sends 5 values to r + 1 only, so a writer is never held back by its reader's data and
// can run ahead of it: only the double buffering's wait keeps it from overwriting what a
// slow reader still copies), each rank sleeping a random 0-40 us before some starts and
// some waits, values changing every time (a torn, stale or overwritten read fails). Every
// third exchange is completed by polling test(), which the multi-step backends resume
// phase by phase. Every backend whose steps go through the window, regions of 2 (the
// aggregation backends' local, initial, inter and final steps all run).
class WindowStress : public ::testing::TestWithParam<const char*> {};
INSTANTIATE_TEST_SUITE_P(PlanShm, WindowStress,
                         ::testing::Values("shm", "aggregated_dedup", "aggregated_2step", "combined"));

TEST_P(WindowStress, TenThousandJitteredExchanges) {
  const auto names = backend_names();
  if (std::find(names.begin(), names.end(), "shm") == names.end()) GTEST_SKIP() << "no shared windows in this build";
  const int me = test::rank(), p = test::size(), n = 5;
  PatternSide send, recv;
  if (p > 1) {
    send.ranks = {(me + 1) % p};
    recv.ranks = {(me + p - 1) % p};
    for (int i = 0; i < n; ++i) {
      send.indices.push_back(i), send.global_ids.push_back(static_cast<int64_t>(me) * n + i);
      recv.indices.push_back(i), recv.global_ids.push_back(static_cast<int64_t>(recv.ranks[0]) * n + i);
    }
    send.offsets.push_back(n), recv.offsets.push_back(n);
  }
  Pattern pat(send, recv, n, p > 1 ? n : 0);
  auto plan = make_plan(GetParam(), pat, Locality::parse(MPI_COMM_WORLD, "ppn:2"), MPI_COMM_WORLD);
  if (Locality::one_node(MPI_COMM_WORLD) && p > 1) {
    ASSERT_GT(plan->window_counts().total().sent().msgs + plan->window_counts().total().recv_intra.msgs +
                  plan->window_counts().total().recv_inter.msgs,
              0)
        << GetParam() << ": nothing through the window";
  }
  std::mt19937 rng(static_cast<unsigned>(1234 + 77 * me));
  std::uniform_int_distribution<int> delay(0, 40), coin(0, 9);
  std::vector<double> x(static_cast<size_t>(n)), g(static_cast<size_t>(n) + 1);
  long wrong = 0;
  // 10,000 where ranks fit the 2 cores (2, 3 ranks: writers and readers really run at once);
  // oversubscribed, each exchange waits for the scheduler, and 1,500 keep the test short.
  const int kIters = p <= 3 ? 10000 : 1500, from = (me + p - 1) % p;
  for (int it = 0; it < kIters; ++it) {
    for (int i = 0; i < n; ++i) x[static_cast<size_t>(i)] = (me * 16.0 + i) * 16384.0 + it;
    // The reader side sleeps more often: writers run ahead.
    if (coin(rng) < (me % 2 ? 3 : 0)) std::this_thread::sleep_for(std::chrono::microseconds(delay(rng)));
    plan->start(x.data());
    if (coin(rng) < (me % 2 ? 3 : 1)) std::this_thread::sleep_for(std::chrono::microseconds(delay(rng)));
    if (it % 3 == 0) {
      while (!plan->test(g.data())) {
      }
    } else {
      plan->wait(g.data());
    }
    for (int i = 0; i < n && p > 1; ++i) wrong += g[static_cast<size_t>(i)] != (from * 16.0 + i) * 16384.0 + it;
  }
  EXPECT_EQ(wrong, 0) << GetParam() << ": stale, torn or overwritten values in " << kIters << " exchanges";
}
