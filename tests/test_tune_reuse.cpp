// auto's tuning takes over the plans auto's choice built (tune.hpp's BuiltCandidates): a
// shortlisted candidate that auto built to count it is not built again, and its plan is the
// one the rotation runs (the values stay p2p's); one built with other options is built
// again, and a built plan no candidate takes is freed at set-up; the tuning cache's winner
// is taken over alike. A test backend ("counted": p2p inside, counting its builds and
// destructions) is registered as a candidate of auto's model: it has no counts hook, so
// auto builds it to count it. (Its own program: a registration cannot be undone, and in
// test_tune.cpp it would join every model choice.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/plan/tune.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/kernels/halo_pattern.hpp"
#include "sparsecomm/matrix/generators.hpp"
#include "test_util.hpp"
#include "tune_test_util.hpp"

namespace sparsecomm {
namespace {
using test::wrong_values;

int g_builds = 0, g_freed = 0, g_starts = 0;

// p2p inside, counted: its builds, destructions and starts on this rank.
class Counted final : public Plan {
 public:
  Counted(const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o) : Plan("counted", p, l, c, o) {
    PlanOptions inner = o;
    inner.backend = BackendOptions{};
    inner_ = detail::make_plan_inside("p2p", p, l, c, inner);
    ++g_builds;
  }
  ~Counted() override {
    finish_if_active();
    ++g_freed;
  }

 protected:
  void do_start() override {
    ++g_starts;
    if (send_bytes() > 0) std::memcpy(inner_->send_area(), send_buf(), static_cast<size_t>(send_bytes()));
    inner_->start();
  }
  void do_wait() override {
    const void* r = inner_->wait();
    if (recv_bytes() > 0) std::memcpy(recv_buf(), r, static_cast<size_t>(recv_bytes()));
  }

 private:
  std::unique_ptr<Plan> inner_;
};

void register_counted() {
  static bool done = false;
  if (done) return;
  done = true;
  register_backend(
      "counted", "test: p2p inside, its builds counted",
      [](const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o) {
        return std::unique_ptr<Plan>(new Counted(p, l, c, o));
      },
      BackendHooks{});  // (no counts hook: auto builds it to count it)
}

std::map<std::string, double> stats_under(const Plan& plan, const std::string& prefix) {
  std::map<std::string, double> out;
  for (const auto& [k, v] : plan.setup_stats().timers())
    if (k.rfind(prefix, 0) == 0) out[k.substr(prefix.size())] = v;
  return out;
}

Pattern pattern_of(const char* spec) { return pattern_from_matrix_reference(gen::from_spec(MPI_COMM_WORLD, spec)); }

// Every candidate shortlisted (candidates = 16): counted, which auto built to count it, is
// taken over (one build in all, none freed), and so is every other backend auto built; p2p,
// counted from its region's view, is built by tuning. The rotation runs the plan taken over.
TEST(TuneReuse, AutoBuildsAShortlistedCandidateOnce) {
  register_counted();
  const Pattern pat = pattern_of("er:240,0.06,5");
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  PlanOptions o;
  const int64_t S = 2;
  o.backend.set("tune", "measure").set("samples", S).set("candidates", 16);
  g_builds = g_freed = g_starts = 0;
  auto plan = make_plan("auto", pat, loc, MPI_COMM_WORLD, o);
  ASSERT_EQ(plan->name(), "auto");
  EXPECT_EQ(g_builds, 1);
  EXPECT_EQ(g_freed, 0);
  const auto reused = stats_under(*plan, "auto.tune.reused.");
  EXPECT_EQ(reused.count("counted"), 1u);
  EXPECT_EQ(reused.count("p2p"), 0u);
  for (const auto& b : backend_names()) {  // (each backend auto builds to count it: no region counts)
    const BackendHooks& h = backend_hooks(b);
    if (b != "counted" && !h.chooses_among_others && !h.counts_by_region) {
      EXPECT_EQ(reused.count(b), 1u) << b;
    }
  }
  const auto n = static_cast<int64_t>(plan->setup_stats().time("auto.tune.candidates"));
  EXPECT_EQ(wrong_values(*plan, pat, n * (S + 1) + 3), 0);
  EXPECT_EQ(g_builds, 1);
  EXPECT_GE(g_starts, S + 1);  // (the plan taken over runs in the rotation: warm-up and rounds)
  EXPECT_EQ(stats_under(*plan, "auto.tune.winner.").size(), 1u);
  EXPECT_GT(stats_under(*plan, "auto.tune.setup.").at("counted"), 0.0);
  plan.reset();
  EXPECT_EQ(g_freed, 1);
}

// make_tuned_plan directly: a plan built with the candidate's options is taken over, its
// setup the one handed over (a sentinel here); one built with other options is freed and the
// candidate built again; one no candidate names is freed at set-up.
TEST(TuneReuse, OnlyAPlanOfTheCandidatesOptionsIsTakenOver) {
  register_counted();
  const Pattern pat = pattern_of("rotate:24,20");
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  const int64_t S = 2;
  PlanOptions mine, other;
  mine.persistent_requests = false;
  other.persistent_requests = true;
  const std::vector<detail::TuneCandidate> list{{"counted", mine}, {"p2p", PlanOptions{}}};
  auto handed = [&](const PlanOptions& built_with) {
    detail::BuiltCandidates b;
    b["counted"] = detail::BuiltCandidate{make_plan("counted", pat, loc, MPI_COMM_WORLD, built_with), built_with, 12.5};
    return b;
  };

  g_builds = g_freed = 0;
  auto same = detail::make_tuned_plan(list, pat, loc, MPI_COMM_WORLD, PlanOptions{}, S, {}, handed(mine));
  EXPECT_EQ(g_builds, 1);  // (the test's own build alone)
  EXPECT_EQ(g_freed, 0);
  EXPECT_EQ(stats_under(*same, "auto.tune.reused."), (std::map<std::string, double>{{"counted", 1}}));
  EXPECT_EQ(wrong_values(*same, pat, 2 * (S + 1) + 2), 0);
  EXPECT_EQ(stats_under(*same, "auto.tune.setup.").at("counted"), 12.5);  // (max over ranks of 12.5)
  same.reset();
  EXPECT_EQ(g_freed, 1);

  g_builds = g_freed = 0;
  auto differ = detail::make_tuned_plan(list, pat, loc, MPI_COMM_WORLD, PlanOptions{}, S, {}, handed(other));
  EXPECT_EQ(g_builds, 2);  // (the test's, then tuning's own)
  EXPECT_EQ(g_freed, 1);   // (the one of other options, at set-up)
  EXPECT_TRUE(stats_under(*differ, "auto.tune.reused.").empty());
  EXPECT_EQ(wrong_values(*differ, pat, 2 * (S + 1) + 2), 0);
  EXPECT_NE(stats_under(*differ, "auto.tune.setup.").at("counted"), 12.5);
  differ.reset();

  g_builds = g_freed = 0;
  const std::vector<detail::TuneCandidate> without{{"neighbor", PlanOptions{}}, {"p2p", PlanOptions{}}};
  auto unused = detail::make_tuned_plan(without, pat, loc, MPI_COMM_WORLD, PlanOptions{}, S, {}, handed(mine));
  EXPECT_EQ(g_builds, 1);
  EXPECT_EQ(g_freed, 1);  // (freed at set-up)
  EXPECT_TRUE(stats_under(*unused, "auto.tune.reused.").empty());
  EXPECT_EQ(wrong_values(*unused, pat, 2 * (S + 1) + 2), 0);
}

TEST(TuneReuse, SamePlanOptions) {
  PlanOptions a, b;
  EXPECT_TRUE(detail::same_plan_options("p2p", a, b));
  b.width = 2;
  EXPECT_FALSE(detail::same_plan_options("p2p", a, b));
  b = a, b.value_bytes = 4;
  EXPECT_FALSE(detail::same_plan_options("p2p", a, b));
  b = a, b.persistent_requests = !a.persistent_requests;
  EXPECT_FALSE(detail::same_plan_options("p2p", a, b));
  b = a, b.sdde = a.sdde == "rma" ? "nbx" : "rma";
  EXPECT_FALSE(detail::same_plan_options("p2p", a, b));
  b = a, b.backend.set("k", 3);
  EXPECT_FALSE(detail::same_plan_options("combined", a, b));
  a.backend.set("k", 3);
  EXPECT_TRUE(detail::same_plan_options("combined", a, b));
}

// A tuning cache hit on a winner handed over built: taken over, not built again.
TEST(TuneReuse, CachedWinnerIsTakenOver) {
  register_counted();
  const std::string path = test::temp_dir() + "/reuse_winner.cache";
  std::remove(path.c_str());
  MPI_Barrier(MPI_COMM_WORLD);
  const Pattern pat = pattern_of("rotate:24,20");
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  const int64_t S = 2;
  PlanOptions o;
  o.backend.set("tune", "measure").set("samples", S).set("tune_cache", path);
  const std::vector<detail::TuneCandidate> list{{"counted", PlanOptions{}}, {"p2p", PlanOptions{}}};
  auto first = detail::make_tuned_plan(list, pat, loc, MPI_COMM_WORLD, o, S);
  detail::set_tune_timer([](const std::string& b, int64_t, double) { return b == "p2p" ? 2e-3 : 1e-3; });
  EXPECT_EQ(wrong_values(*first, pat, 2 * (S + 1) + 1), 0);
  detail::set_tune_timer({});
  ASSERT_EQ(stats_under(*first, "auto.tune.winner.").count("counted"), 1u);
  first.reset();
  g_builds = g_freed = 0;
  detail::BuiltCandidates b;
  b["counted"] = detail::BuiltCandidate{make_plan("counted", pat, loc, MPI_COMM_WORLD, PlanOptions{}), PlanOptions{}, 7.5};
  auto second = detail::make_tuned_plan(list, pat, loc, MPI_COMM_WORLD, o, S, {}, std::move(b));
  EXPECT_EQ(second->setup_stats().time("auto.tune.cache.hit"), 1.0);
  EXPECT_EQ(g_builds, 1);
  EXPECT_EQ(g_freed, 0);
  EXPECT_EQ(second->setup_stats().time("auto.tune.reused.counted"), 1.0);
  EXPECT_EQ(second->setup_stats().time("auto.tune.setup.counted"), 7.5);
  EXPECT_EQ(wrong_values(*second, pat, 3), 0);
}

}  // namespace
}  // namespace sparsecomm
