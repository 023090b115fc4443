// auto's tuning cache (option tune_cache, src/comm/plan/tune_cache.cpp): a second tune=measure
// plan over the same pattern, layout, value size and shortlist with the same cache file is
// built on the cached winner without measuring (a winner the model would not pick, forced by
// injected timings, so that reuse cannot pass by coincidence); another pattern, value size or
// layout measures again; a missing, malformed, foreign or unusable file is a miss that
// measures, and a foreign file is never overwritten; the values are p2p's throughout; every
// rank takes the same plan.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "comm/plan/tune.hpp"
#include "sparsecomm/comm/plan/model.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/kernels/halo_pattern.hpp"
#include "sparsecomm/matrix/generators.hpp"
#include "test_util.hpp"
#include "tune_test_util.hpp"

namespace sparsecomm {
namespace {
using test::wrong_values;

constexpr int64_t kSamples = 2;

PlanOptions cached(const std::string& path, int width = 1) {
  PlanOptions o;
  o.width = width;
  o.backend.set("tune", "measure").set("samples", kSamples).set("tune_cache", path);
  return o;
}

Pattern pattern_of(const char* spec) { return pattern_from_matrix_reference(gen::from_spec(MPI_COMM_WORLD, spec)); }

// The setup statistics under `prefix`, the prefix taken off.
std::map<std::string, double> stats_under(const Plan& plan, const std::string& prefix) {
  std::map<std::string, double> out;
  for (const auto& [k, v] : plan.setup_stats().timers())
    if (k.rfind(prefix, 0) == 0) out[k.substr(prefix.size())] = v;
  return out;
}
// The cache's note(s), joined (the lookup's; on rank 0 after settling also the store's).
std::string notes(const Plan& plan) {
  std::string s;
  for (const auto& [k, v] : stats_under(plan, "auto.tune.cache.note: ")) s += k + "; ";
  return s;
}
bool hit(const Plan& plan) { return plan.setup_stats().time("auto.tune.cache.hit") == 1.0; }
bool miss(const Plan& plan) { return plan.setup_stats().time("auto.tune.cache.miss") == 1.0; }

// The exchanges a tuned plan measures before it settles (its candidates, kSamples + 1 rounds).
int64_t measuring(const Plan& plan) {
  return static_cast<int64_t>(plan.setup_stats().time("auto.tune.candidates")) * (kSamples + 1);
}

// Runs a tuned plan until it settles, with injected timings that make the first candidate
// other than the model's own choice win; returns that winner.
std::string settle_on_other_than_model(Plan& plan, const Pattern& p) {
  const auto model = stats_under(plan, "auto.tune.model.");
  EXPECT_EQ(model.size(), 1u);
  const std::string m = model.empty() ? "" : model.begin()->first;
  detail::set_tune_timer([m](const std::string& b, int64_t, double) { return b == m ? 2e-3 : 1e-3; });
  EXPECT_EQ(wrong_values(plan, p, measuring(plan) + 2), 0);
  detail::set_tune_timer({});
  const auto winner = stats_under(plan, "auto.tune.winner.");
  EXPECT_EQ(winner.size(), 1u);
  if (winner.empty()) return "";
  EXPECT_NE(winner.begin()->first, m);
  return winner.begin()->first;
}

// The same string on every rank (its hash's min and max agree).
bool same_everywhere(const std::string& s) {
  const auto h = static_cast<long long>(std::hash<std::string>{}(s) >> 1);
  long long lo = 0, hi = 0;
  MPI_Allreduce(&h, &lo, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &hi, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh cache path: rank 0's counts; every rank names its own (the option may differ).
std::string fresh_path(const std::string& name) {
  const std::string path = test::temp_dir() + "/" + name;
  std::remove(path.c_str());
  MPI_Barrier(MPI_COMM_WORLD);
  return path;
}

TEST(TuneCache, SecondPlanTakesTheCachedWinnerWithoutMeasuring) {
  const std::string path = fresh_path("reuse.cache");
  const Pattern pat = pattern_of("er:240,0.06,5");
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  auto first = make_plan("auto", pat, loc, MPI_COMM_WORLD, cached(path));
  ASSERT_EQ(first->name(), "auto");
  EXPECT_TRUE(miss(*first)) << notes(*first);
  EXPECT_NE(notes(*first).find("no file"), std::string::npos) << notes(*first);
  const std::string winner = settle_on_other_than_model(*first, pat);
  ASSERT_FALSE(winner.empty());
  if (test::rank() == 0) {
    EXPECT_NE(notes(*first).find("stored in " + path), std::string::npos) << notes(*first);
    const std::string text = file_text(path);
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;  // the header and one entry
    EXPECT_NE(text.find("| winner=" + winner + " medians="), std::string::npos) << text;
  }
  // The second plan: no timing at all, the winner built alone, the cached medians stated.
  int timed = 0;
  detail::set_tune_timer([&timed](const std::string&, int64_t, double s) { return ++timed, s; });
  auto second = make_plan("auto", pat, loc, MPI_COMM_WORLD, cached(path));
  EXPECT_EQ(second->name(), winner);
  EXPECT_TRUE(same_everywhere(second->name()));
  EXPECT_TRUE(hit(*second)) << notes(*second);
  EXPECT_NE(notes(*second).find("from cache " + (test::rank() == 0 ? path : "")), std::string::npos);
  EXPECT_EQ(second->setup_stats().time("auto.tune.exchanges"), 0.0);
  EXPECT_EQ(stats_under(*second, "auto.tune.winner."), (std::map<std::string, double>{{winner, 1e-3}}));
  EXPECT_EQ(stats_under(*second, "auto.tune.median."), stats_under(*first, "auto.tune.median."));
  EXPECT_EQ(wrong_values(*second, pat, 7), 0);
  detail::set_tune_timer({});
  EXPECT_EQ(timed, 0);
}

TEST(TuneCache, AnotherPatternValueSizeOrLayoutMeasuresAgain) {
  const std::string path = fresh_path("invalidate.cache");
  const Pattern a = pattern_of("er:240,0.06,5"), b = pattern_of("lap2d:9,7");
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  auto first = make_plan("auto", a, loc, MPI_COMM_WORLD, cached(path));
  const std::string winner = settle_on_other_than_model(*first, a);
  ASSERT_FALSE(winner.empty());
  // Another pattern: measured, and then stored beside the first entry. (At one rank both
  // patterns are empty, the same exchange: a hit.)
  const bool alike = test::size() == 1;
  auto other = make_plan("auto", b, loc, MPI_COMM_WORLD, cached(path));
  EXPECT_EQ(other->name(), alike ? winner : "auto");
  EXPECT_EQ(miss(*other), !alike);
  EXPECT_NE(notes(*other).find(alike ? "from cache" : "no entry for this pattern"), std::string::npos) << notes(*other);
  EXPECT_EQ(wrong_values(*other, b, measuring(*other) + 3), 0);
  EXPECT_EQ(stats_under(*other, "auto.tune.winner.").size(), 1u);
  // Another value size (2 values per index).
  auto wide = make_plan("auto", a, loc, MPI_COMM_WORLD, cached(path, 2));
  EXPECT_EQ(wide->name(), "auto");
  EXPECT_TRUE(miss(*wide)) << notes(*wide);
  // Another layout: one rank per region instead of two (at 1 rank the same layout: a hit).
  auto spread = make_plan("auto", a, Locality::ppn(MPI_COMM_WORLD, 1), MPI_COMM_WORLD, cached(path));
  EXPECT_EQ(spread->name(), test::size() == 1 ? winner : "auto");
  EXPECT_EQ(hit(*spread), test::size() == 1);
  // Both entries kept: the first pattern still hits.
  auto again = make_plan("auto", a, loc, MPI_COMM_WORLD, cached(path));
  EXPECT_EQ(again->name(), winner);
  EXPECT_TRUE(hit(*again)) << notes(*again);
  EXPECT_EQ(wrong_values(*again, a, 5), 0);
  if (test::rank() == 0) {
    const std::string text = file_text(path);
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), alike ? 2 : 3) << text;
  }
}

// Rank 0 writes `text` as the cache file (the other ranks name files they never read).
std::string cache_file_with(const std::string& name, const std::string& text) {
  const std::string path = fresh_path(name);
  if (test::rank() == 0) std::ofstream(path) << text;
  MPI_Barrier(MPI_COMM_WORLD);
  return path;
}

// A plan over `pat` with the cache `path` that misses with a note containing `why`, measures
// with p2p's values and settles.
void expect_miss_and_measure(const std::string& path, const Pattern& pat, const std::string& why) {
  auto plan = make_plan("auto", pat, Locality::ppn(MPI_COMM_WORLD, 2), MPI_COMM_WORLD, cached(path));
  EXPECT_EQ(plan->name(), "auto") << why;
  EXPECT_TRUE(miss(*plan)) << why;
  EXPECT_NE(notes(*plan).find(why), std::string::npos) << notes(*plan);
  EXPECT_EQ(wrong_values(*plan, pat, measuring(*plan) + 3), 0) << why;
  EXPECT_EQ(stats_under(*plan, "auto.tune.winner.").size(), 1u) << why;
}

TEST(TuneCache, MalformedOrUnusableFileIsAMiss) {
  const Pattern pat = pattern_of("rotate:23,19");
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  // Not a tune cache: a miss, and the file is left as it was.
  const std::string foreign = cache_file_with("foreign.cache", "hello\n");
  expect_miss_and_measure(foreign, pat, "is not a v1 tune cache");
  if (test::rank() == 0) {
    EXPECT_EQ(file_text(foreign), "hello\n");
  }
  // A newer version: likewise.
  expect_miss_and_measure(cache_file_with("v2.cache", "# sparsecomm tune cache v2\n"), pat, "is not a v1 tune cache");
  // A malformed line: a miss; the measured decision is stored, the bad line dropped, and the
  // next plan hits.
  const std::string bad = cache_file_with("bad.cache", "# sparsecomm tune cache v1\nkey | winner=p2p medians=p2p:x\n");
  expect_miss_and_measure(bad, pat, "line 2 is malformed");
  auto next = make_plan("auto", pat, loc, MPI_COMM_WORLD, cached(bad));
  EXPECT_TRUE(hit(*next)) << notes(*next);
  EXPECT_NE(next->name(), "auto");
  // Its entry edited to name a backend that is no candidate: every rank misses alike.
  if (test::rank() == 0) {
    std::string text = file_text(bad);
    const size_t at = text.find(" | ", text.find('\n'));
    ASSERT_NE(at, std::string::npos) << text;
    text = text.substr(0, at) + " | winner=nosuch medians=nosuch:1e-3\n";
    std::ofstream(bad) << text;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  expect_miss_and_measure(bad, pat, "names nosuch, not a candidate");
  // A directory: unreadable and unwritable. A file in a missing directory: not stored.
  expect_miss_and_measure(test::temp_dir(), pat, "is a directory");
  // A named pipe (or /dev/stdin): rank 0 would block reading it while the others wait in
  // its broadcast; anything but a regular file is unreadable.
  const std::string pipe = test::temp_dir() + "/pipe.cache";
  if (test::rank() == 0) {
    ::unlink(pipe.c_str());
    EXPECT_EQ(::mkfifo(pipe.c_str(), 0600), 0) << std::strerror(errno);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  expect_miss_and_measure(pipe, pat, "is not a regular file");
  const std::string nowhere = test::temp_dir() + "/no/such/dir.cache";
  auto lost = make_plan("auto", pat, loc, MPI_COMM_WORLD, cached(nowhere));
  EXPECT_EQ(wrong_values(*lost, pat, measuring(*lost) + 1), 0);
  if (test::rank() == 0) {
    EXPECT_NE(notes(*lost).find("not stored: cannot write"), std::string::npos) << notes(*lost);
  }
}

// A cached winner whose build now fails (on the last rank; make_plan agrees the failure):
// every rank misses alike and measures, the failing candidate is dropped and the values stay
// p2p's. The backend is p2p that throws from its second build on (after p2p's collective
// set-up, which every rank then completes).
TEST(TuneCache, CachedWinnerThatFailsToBuildIsAMiss) {
  auto builds = std::make_shared<int>(0);
  BackendHooks hooks;
  hooks.chooses_among_others = true;  // (no candidate of auto's model in the other tests)
  register_backend(
      "fails_later", "test: p2p that throws from its second build on, on the last rank",
      [builds](const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions&) {
        auto plan = detail::make_plan_inside("p2p", p, l, c, PlanOptions{});  // (collective: on every rank)
        if (++*builds > 1 && test::rank() == test::size() - 1) throw Error("fails_later: injected build failure");
        return plan;
      },
      hooks);
  const Pattern pat = pattern_of("rotate:24,20");
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  const std::vector<detail::TuneCandidate> list{{"fails_later", PlanOptions{}}, {"p2p", PlanOptions{}}};
  const PlanOptions o = cached(fresh_path("fails.cache"));
  auto first = detail::make_tuned_plan(list, pat, loc, MPI_COMM_WORLD, o, kSamples);
  detail::set_tune_timer([](const std::string& b, int64_t, double) { return b == "p2p" ? 2e-3 : 1e-3; });
  EXPECT_EQ(wrong_values(*first, pat, 2 * (kSamples + 1) + 1), 0);
  detail::set_tune_timer({});
  EXPECT_EQ(stats_under(*first, "auto.tune.winner."), (std::map<std::string, double>{{"fails_later", 1e-3}}));
  auto second = detail::make_tuned_plan(list, pat, loc, MPI_COMM_WORLD, o, kSamples);
  EXPECT_EQ(second->name(), "auto");
  EXPECT_TRUE(miss(*second));
  EXPECT_NE(notes(*second).find("the cached winner fails_later failed to build"), std::string::npos) << notes(*second);
  EXPECT_EQ(wrong_values(*second, pat, 2 * (kSamples + 1) + 2), 0);
  EXPECT_EQ(stats_under(*second, "auto.tune.dropped."), (std::map<std::string, double>{{"fails_later", 1}}));
  EXPECT_EQ(stats_under(*second, "auto.tune.winner.").count("p2p"), 1u);
}

TEST(TuneCache, OptionNeedsTuneMeasure) {
  const Pattern pat = pattern_of("lap2d:6,6");
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  PlanOptions o;
  o.backend.set("tune_cache", fresh_path("unused.cache"));
  EXPECT_THROW(make_plan("auto", pat, loc, MPI_COMM_WORLD, o), InputError);
  o.backend.set("tune", "model");
  EXPECT_THROW(make_plan("auto", pat, loc, MPI_COMM_WORLD, o), InputError);
  // none: no cache (no lookup note), whatever the environment says.
  o.backend.set("tune", "measure").set("tune_cache", "none");
  auto plan = make_plan("auto", pat, loc, MPI_COMM_WORLD, o);
  EXPECT_EQ(plan->name(), "auto");
  EXPECT_FALSE(miss(*plan) || hit(*plan));
  // Unset: the process default ($SPARSECOMM_TUNE_CACHE at the entry points), which none
  // given as the option overrides.
  const ModelSettings saved = ModelSettings::defaults();
  ModelSettings with = saved;
  with.tune_cache = fresh_path("default.cache");
  ModelSettings::set_defaults(with);
  auto overridden = make_plan("auto", pat, loc, MPI_COMM_WORLD, o);
  o.backend.erase("tune_cache");
  auto by_default = make_plan("auto", pat, loc, MPI_COMM_WORLD, o);
  ModelSettings::set_defaults(saved);
  EXPECT_FALSE(miss(*overridden) || hit(*overridden));
  EXPECT_TRUE(miss(*by_default));
  EXPECT_NE(notes(*by_default).find("no file"), std::string::npos) << notes(*by_default);
}

}  // namespace
}  // namespace sparsecomm
