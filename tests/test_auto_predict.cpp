// auto's predictions without the rank-0 gather (src/comm/plan/auto_counts.cpp, the
// reductions of model.cpp's predict_reduced) against the gathered path they replace,
// computed here as it was: the whole pattern of every rank as one virtual pattern (the
// test holds it, from the gathered matrix), every candidate's counts hook on it with the
// real node labels, predict_from_terms() and total_work() over all ranks' terms, and the
// choice by least prediction, then least work, then setup order. Every candidate's
// prediction must be equal bit for bit, and the choice the same, on generated and real
// (SuiteSparse) matrices, on layouts of several regions (emulated on this node) and with
// regions that are whole nodes.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "comm/plan/auto_predict.hpp"
#include "sparsecomm/comm/plan/model.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/comm/virt/plan_stats.hpp"
#include "sparsecomm/kernels/halo_pattern.hpp"
#include "sparsecomm/matrix/generators.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"
#include "test_util.hpp"

namespace sparsecomm {
namespace {

struct Gathered {
  double predicted = 0, work = 0;
};

// The gathered path's prediction of `name` (auto.cpp's predict_virtual before this change).
Gathered gathered_prediction(const std::string& name, const virt::HaloPattern& h, const std::vector<int>& region,
                             const PlanOptions& co, const ModelParams& model) {
  const ModelParams m = for_layout(model, region, h.node);
  const std::vector<virt::RankCounts> c = virt::halo_counts(name, h, region, co);
  const double eb = static_cast<double>(co.width) * co.value_bytes;
  std::vector<std::map<std::string, bool>> parts(c.size());
  for (size_t r = 0; r < c.size(); ++r) parts[r] = takes_part(c[r].counts, c[r].window, true);
  const std::map<std::string, double> share = step_shares(parts);
  std::vector<RankTerms> terms(c.size());
  for (size_t r = 0; r < c.size(); ++r) {
    double own = 0;
    for (const auto& seg : h.send[r]) own += static_cast<double>(seg.size) * eb;
    const auto& t = c[r].counts.total();
    const double staged = std::max(0.0, static_cast<double>(t.sent_intra.bytes + t.sent_inter.bytes) - own);
    terms[r] = rank_terms(c[r].counts, c[r].window, staged, c[r].stages, m, share);
  }
  return {predict_from_terms(terms, region, m), total_work(terms)};
}


// auto's rule (Choice::choose_by_cost with iterations = 0) over the gathered figures.
std::string gathered_choice(const std::vector<std::string>& order, const std::map<std::string, Gathered>& g) {
  size_t best = 0;
  double best_cost = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < order.size(); ++i) {
    const Gathered& x = g.at(order[i]);
    const bool tie = x.predicted <= best_cost * (1 + 1e-9) && x.predicted >= best_cost * (1 - 1e-9);
    if (x.predicted < best_cost * (1 - 1e-9) || (tie && x.work < g.at(order[best]).work * (1 - 1e-9)))
      best_cost = x.predicted, best = i;
  }
  return order[best];
}

void check_against_gathered(const DistCsr<double>& a, const std::string& what, const std::vector<std::string>& layouts) {
  const Pattern pat = pattern_from_matrix_reference(a);
  virt::HaloPattern h = virt::HaloPattern::from_matrix(a.row_partition(), a.col_partition(), a.gather_all());
#ifndef SPARSECOMM_SMPI  // (no windows under SMPI: auto gives the counts no nodes there)
  h.node = node_labels(MPI_COMM_WORLD);
#endif
  const std::vector<std::string> order = detail::auto_candidate_order();
  for (const auto& layout : layouts) {
    const Locality loc = Locality::parse(MPI_COMM_WORLD, layout);
    PlanOptions o;
    o.width = 2;
    o.backend.set("model", "builtin");
    auto chosen = make_plan("auto", pat, loc, MPI_COMM_WORLD, o);
    std::map<std::string, Gathered> g;
    for (const auto& b : order) {
      PlanOptions co;
      co.width = 2;
      g[b] = gathered_prediction(b, h, loc.regions(), co, ModelParams{});
      const double now = chosen->setup_stats().time("auto.predict." + b);
      EXPECT_EQ(now, g[b].predicted) << what << " " << layout << " " << b << " rank " << test::rank();
    }
    EXPECT_EQ(chosen->name(), gathered_choice(order, g)) << what << " " << layout;
  }
}

const std::vector<std::string> kLayouts = {"ppn:2", "ppn:3", "cyclic:2", "node"};

TEST(AutoPredict, GeneratedMatricesEqualTheGatheredPath) {
  check_against_gathered(gen::laplacian_2d(MPI_COMM_WORLD, 24, 20, 9), "laplacian_2d 24x20", kLayouts);
  check_against_gathered(gen::from_spec(MPI_COMM_WORLD, "rotate:14,9"), "rotate 14x9", kLayouts);
  check_against_gathered(gen::erdos_renyi(MPI_COMM_WORLD, 300, 0.02, 7), "erdos_renyi 300 0.02", kLayouts);
  check_against_gathered(gen::from_spec(MPI_COMM_WORLD, "er:240,0.06,5"), "er 240 0.06", kLayouts);
}

TEST(AutoPredict, SuiteSparseEqualsTheGatheredPath) {
  SPC_REQUIRE_MATRIX(path, "HB/can_1054");
  check_against_gathered(read_matrix_market(MPI_COMM_WORLD, path), "HB/can_1054", kLayouts);
}

}  // namespace
}  // namespace sparsecomm
