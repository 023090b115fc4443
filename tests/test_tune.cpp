// auto's in-place tuning (tune=measure, src/comm/plan/tune.cpp): every exchange delivers the
// values p2p delivers, while the plan rotates among its candidates and after it settles, by
// every way of calling it; every rank settles on the candidate whose median over rounds of
// the slowest rank is lowest, with timings injected that differ per rank; a candidate that
// throws in its build, its start or its wait is dropped on every rank and the values stay
// right; starts stay local (two plans started in opposite orders); and tuning starts only
// where its predicted gain over the expected exchanges exceeds its predicted cost.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/plan/halo/p2p.hpp"
#include "comm/plan/tune.hpp"
#include "sparsecomm/comm/plan/model.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/kernels/halo_pattern.hpp"
#include "sparsecomm/matrix/generators.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"
#include "test_util.hpp"

namespace sparsecomm {
namespace {

PlanOptions measure(int64_t samples = 3) {
  PlanOptions o;
  o.backend.set("tune", "measure").set("samples", samples);
  return o;
}

// The setup statistics under `prefix`, the prefix taken off.
std::map<std::string, double> stats_under(const Plan& plan, const std::string& prefix) {
  std::map<std::string, double> out;
  for (const auto& [k, v] : plan.setup_stats().timers())
    if (k.rfind(prefix, 0) == 0) out[k.substr(prefix.size())] = v;
  return out;
}

// Runs `n` exchanges on `plan` and on `ref` (p2p) with owned values that change every time,
// calling `plan` in turn by start(owned)/wait(ghost), start(owned, ghost)/wait(ghost),
// start(owned)/wait() and send_area()/start()/wait(ghost); returns the ghost entries that
// differ from ref's.
int64_t differences(Plan& plan, Plan& ref, int64_t n, int64_t first = 0) {
  const Pattern& p = ref.pattern();
  int32_t owned = 0, ghosts = 0;
  for (int32_t i : p.send().indices) owned = std::max(owned, i + 1);
  for (int32_t i : p.recv().indices) ghosts = std::max(ghosts, i + 1);
  std::vector<double> x(static_cast<size_t>(owned)), g(static_cast<size_t>(ghosts)), want(g.size());
  int64_t bad = 0;
  for (int64_t it = first; it < first + n; ++it) {
    for (size_t i = 0; i < x.size(); ++i) x[i] = 1e6 * test::rank() + static_cast<double>(i) + 0.25 * it;
    std::fill(g.begin(), g.end(), -1.0), std::fill(want.begin(), want.end(), -1.0);
    ref.exchange(x.data(), want.data());
    switch (it % 4) {
      case 0: plan.start(x.data()), plan.wait(g.data()); break;
      case 1: plan.start(x.data(), g.data()), plan.wait(g.data()); break;
      case 2: {
        plan.start(x.data());
        const double* r = plan.wait<double>();
        for (size_t k = 0; k < p.recv().indices.size(); ++k) g[static_cast<size_t>(p.recv().indices[k])] = r[k];
        break;
      }
      default: {
        double* s = plan.send_area<double>();
        for (size_t k = 0; k < p.send().indices.size(); ++k) s[k] = x[static_cast<size_t>(p.send().indices[k])];
        plan.start(), plan.wait(g.data());
      }
    }
    for (size_t i = 0; i < g.size(); ++i) bad += g[i] != want[i];
  }
  return bad;
}

// Identical values to p2p on every exchange, rotating and settled; the plan says what it
// tried, what each cost and what it kept.
void check_same_values(const Pattern& pat, const std::string& what) {
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  auto ref = make_plan("p2p", pat, loc, MPI_COMM_WORLD);
  auto plan = make_plan("auto", pat, loc, MPI_COMM_WORLD, measure(3));
  ASSERT_EQ(plan->name(), "auto") << what;
  const auto n = static_cast<int64_t>(plan->setup_stats().time("auto.tune.candidates"));
  EXPECT_GE(n, 2) << what;  // (the model's top 3 with p2p, at fewer ranks fewer backends differ)
  EXPECT_LE(n, 4) << what;
  EXPECT_EQ(differences(*plan, *ref, 3), 0) << what;
  EXPECT_TRUE(stats_under(*plan, "auto.tune.winner.").empty()) << what;  // still rotating
  EXPECT_EQ(differences(*plan, *ref, n * 4 + 9, 3), 0) << what;  // 4 rounds, then settled
  const auto winner = stats_under(*plan, "auto.tune.winner.");
  ASSERT_EQ(winner.size(), 1u) << what;
  const auto medians = stats_under(*plan, "auto.tune.median.");
  EXPECT_EQ(static_cast<int64_t>(medians.size()), n) << what;
  EXPECT_EQ(stats_under(*plan, "auto.tune.setup.").size(), medians.size()) << what;
  EXPECT_TRUE(medians.count("p2p")) << what;
  const auto model = stats_under(*plan, "auto.tune.model.");  // the model's choice, first candidate
  ASSERT_EQ(model.size(), 1u) << what;
  EXPECT_TRUE(medians.count(model.begin()->first)) << what;
  for (const auto& [b, m] : medians) EXPECT_GE(m, winner.begin()->second) << b << " " << what;
  EXPECT_EQ(plan->setup_stats().time("auto.tune.exchanges"), static_cast<double>(n * 4)) << what;
  EXPECT_TRUE(stats_under(*plan, "auto.tune.dropped.").empty()) << what;
}

TEST(TuneMeasure, SameValuesAsP2p) {
  for (const char* spec : {"er:300,0.1,7", "lap2d:8,8", "rotate:23,19"}) {
    auto a = gen::from_spec(MPI_COMM_WORLD, spec);
    check_same_values(pattern_from_matrix_reference(a), spec);
  }
}

TEST(TuneMeasure, SameValuesAsP2pSuiteSparse) {
  SPC_REQUIRE_MATRIX(path, "HB/can_1054");
  check_same_values(pattern_from_matrix_reference(read_matrix_market(MPI_COMM_WORLD, path)), "HB/can_1054");
}

// Injected seconds: a different value per rank, candidate and round (a hash spread over
// [1, 2) ms), so that a rank's own medians and the slowest rank's medians disagree.
double injected(int rank, const std::string& backend, int64_t round) {
  const size_t h = std::hash<std::string>{}(backend + "/" + std::to_string(rank) + "/" + std::to_string(round));
  return 1e-3 * (1.0 + static_cast<double>(h % 100003) / 100003.0);
}

TEST(TuneMeasure, EveryRankTakesTheLowestMedianOfTheSlowest) {
  auto a = gen::from_spec(MPI_COMM_WORLD, "er:240,0.06,5");
  const Pattern pat = pattern_from_matrix_reference(a);
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  auto ref = make_plan("p2p", pat, loc, MPI_COMM_WORLD);
  const int S = 5;
  const int me = test::rank();
  detail::set_tune_timer([me](const std::string& b, int64_t round, double) { return injected(me, b, round); });
  auto plan = make_plan("auto", pat, loc, MPI_COMM_WORLD, measure(S));
  const auto n = static_cast<int64_t>(plan->setup_stats().time("auto.tune.candidates"));
  EXPECT_EQ(differences(*plan, *ref, n * (S + 1) + 2), 0);
  detail::set_tune_timer({});
  const auto medians = stats_under(*plan, "auto.tune.median.");
  const auto winner = stats_under(*plan, "auto.tune.winner.");
  ASSERT_EQ(winner.size(), 1u);
  ASSERT_EQ(static_cast<int64_t>(medians.size()), n);
  // The expected choice, from the injected values of every rank.
  std::string want;
  double lowest = std::numeric_limits<double>::infinity();
  for (const auto& [b, m] : medians) {
    std::vector<double> slowest;
    for (int r = 1; r <= S; ++r) {
      double t = 0;
      for (int p = 0; p < test::size(); ++p) t = std::max(t, injected(p, b, r));
      slowest.push_back(t);
    }
    std::sort(slowest.begin(), slowest.end());
    EXPECT_DOUBLE_EQ(m, slowest[S / 2]) << b;
    if (slowest[S / 2] < lowest) lowest = slowest[S / 2], want = b;
  }
  EXPECT_EQ(winner.begin()->first, want);
  EXPECT_DOUBLE_EQ(winner.begin()->second, lowest);
  // The same winner on every rank (by its position among the sorted candidates).
  const int mine = static_cast<int>(std::distance(medians.begin(), medians.find(winner.begin()->first)));
  int lo = 0, hi = 0;
  MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(lo, hi);
}

// A backend for the failure tests: p2p on a shared communicator (a local build), that
// throws on the last rank in its build, or in its second start or wait (after completing
// that exchange, in wait: nothing left in flight), or in its first pack target (before
// anything is posted), or in its first start(owned, ghost) (`direct`: it hands the caller's
// arrays to p2p, which receives straight into the ghost array where its positions are
// those of arrival; the other ranks have posted their receives when the last one throws),
// or in every test() of its second exchange (`test`: a measuring wait's first poll, made
// before anything else, throws). With `testable` (and for `test`) it supports test(), so
// that a measuring wait polls it instead of waiting.
class Flaky final : public Plan {
 public:
  enum class When { build, start, wait, pack, direct, test };
  Flaky(const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o, When when,
        std::shared_ptr<const Comm> chan, int tag, bool testable)
      : Plan("flaky", p, l, chan, o), when_(when), testable_(testable || when == When::test) {
    PlanOptions inner = o;
    inner.backend = BackendOptions{};
    inner.backend.attach<P2pChannel>("channel", std::make_shared<const P2pChannel>(P2pChannel{chan, tag}));
    if (when == When::build && last()) throw Error("flaky: injected build failure");
    inner_ = detail::make_plan_inside("p2p", p, l, c, inner);
  }
  ~Flaky() override { finish_if_active(); }
  bool supports_test() const override { return testable_; }

 protected:
  bool moves_in_place() const override { return when_ == When::direct; }
  char* do_pack_target() override {
    if (when_ == When::pack && ++packs_ == 1 && last()) throw Error("flaky: injected pack target failure");
    return nullptr;
  }
  void do_start() override {
    ++runs_;
    if (when_ == When::start && runs_ == 2 && last()) throw Error("flaky: injected start failure");
    if (send_bytes() > 0) std::memcpy(inner_->send_area(), send_buf(), static_cast<size_t>(send_bytes()));
    inner_->start();
  }
  bool do_start_direct(const char* send, char* recv) override {
    if (when_ != When::direct) return false;  // (do_start)
    ++runs_;
    if (when_ == When::direct && runs_ == 1 && last()) throw Error("flaky: injected direct start failure");
    inner_->start(static_cast<const void*>(send), static_cast<void*>(recv));
    ghost_ = recv;
    return true;
  }
  void do_wait() override {
    if (ghost_) {
      inner_->wait(static_cast<void*>(ghost_));
      ghost_ = nullptr;
      return;
    }
    const void* r = inner_->wait();
    if (recv_bytes() > 0) std::memcpy(recv_buf(), r, static_cast<size_t>(recv_bytes()));
    if (when_ == When::wait && runs_ == 2 && last()) throw Error("flaky: injected wait failure");
  }
  bool do_test() override {
    if (when_ == When::test && runs_ == 2 && last()) throw Error("flaky: injected test failure");
    if (ghost_) {
      if (!inner_->test(static_cast<void*>(ghost_))) return false;
      ghost_ = nullptr;
    } else {  // (inner_ unpacks into a ghost array; recv_buf() holds the units in order)
      const auto& idx = pattern().recv().indices;
      int32_t n = 0;
      for (int32_t i : idx) n = std::max(n, i + 1);
      scratch_.resize(static_cast<size_t>(n * elem_bytes()));
      if (!inner_->test(static_cast<void*>(scratch_.data()))) return false;
      for (size_t k = 0; k < idx.size(); ++k)
        std::memcpy(recv_buf() + static_cast<int64_t>(k) * elem_bytes(), scratch_.data() + idx[k] * elem_bytes(),
                    static_cast<size_t>(elem_bytes()));
    }
    return true;
  }

 private:
  static bool last() { return test::rank() == test::size() - 1; }
  When when_;
  bool testable_;
  int runs_ = 0, packs_ = 0;
  char* ghost_ = nullptr;
  std::vector<char> scratch_;
  std::unique_ptr<Plan> inner_;
};

// Registers flaky backend `name` on a channel (a duplicate of MPI_COMM_WORLD, returned)
// with tag `tag`. (Marked as
// choosing among the others, which makes it no candidate of auto's model choices in the
// other tests of this program: a registration cannot be undone.)
std::shared_ptr<const Comm> register_flaky(const std::string& name, Flaky::When when, int tag,
                                           bool testable = false) {
  auto chan = std::make_shared<const Comm>(MPI_COMM_WORLD);  // (a duplicate)
  BackendHooks hooks;
  hooks.chooses_among_others = true;
  register_backend(
      name, "test: throws on the last rank",
      [when, chan, tag, testable](const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o) {
        return std::unique_ptr<Plan>(new Flaky(p, l, c, o, when, chan, tag, testable));
      },
      hooks);
  return chan;
}

TEST(TuneMeasure, CandidateThatThrowsIsDroppedOnEveryRank) {
  register_flaky("flaky_build", Flaky::When::build, 900);
  register_flaky("flaky_start", Flaky::When::start, 901);
  register_flaky("flaky_wait", Flaky::When::wait, 902);
  auto a = gen::from_spec(MPI_COMM_WORLD, "rotate:24,20");
  const Pattern pat = pattern_from_matrix_reference(a);
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  auto ref = make_plan("p2p", pat, loc, MPI_COMM_WORLD);
  std::vector<detail::TuneCandidate> list;
  for (const char* b : {"flaky_start", "flaky_build", "neighbor", "flaky_wait", "p2p"}) list.push_back({b, PlanOptions{}});
  const int64_t S = 3;
  auto plan = detail::make_tuned_plan(list, pat, loc, MPI_COMM_WORLD, PlanOptions{}, S);
  EXPECT_EQ(differences(*plan, *ref, 5 * (S + 1) + 6), 0);
  const auto dropped = stats_under(*plan, "auto.tune.dropped.");
  EXPECT_EQ(dropped, (std::map<std::string, double>{{"flaky_build", 1}, {"flaky_start", 1}, {"flaky_wait", 1}}));
  const auto medians = stats_under(*plan, "auto.tune.median.");
  EXPECT_EQ(medians.size(), 2u);
  EXPECT_TRUE(medians.count("neighbor") && medians.count("p2p"));
  const auto winner = stats_under(*plan, "auto.tune.winner.");
  ASSERT_EQ(winner.size(), 1u);
  EXPECT_TRUE(winner.count("neighbor") || winner.count("p2p")) << winner.begin()->first;
  // Warm-up and 3 rounds of neighbor and p2p, each flaky_* run up to its failure (the build
  // failure: none) and the exchanges that failed replayed on p2p.
  EXPECT_EQ(plan->setup_stats().time("auto.tune.exchanges"), 2.0 * (S + 1) + 2 + 2);
}

// The same with candidates that support test(), which a measuring wait polls together with
// the start's flag: one whose start throws on the last rank (the others' candidates never
// complete, as the last rank sent nothing: the flag must end their polling), and one whose
// test() throws there (a wait failure, agreed after the wait).
TEST(TuneMeasure, PolledCandidateThatThrowsIsDroppedOnEveryRank) {
  register_flaky("flaky_start_polled", Flaky::When::start, 905, true);
  register_flaky("flaky_test", Flaky::When::test, 906);
  auto a = gen::from_spec(MPI_COMM_WORLD, "rotate:24,20");
  const Pattern pat = pattern_from_matrix_reference(a);
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  auto ref = make_plan("p2p", pat, loc, MPI_COMM_WORLD);
  std::vector<detail::TuneCandidate> list;
  for (const char* b : {"flaky_start_polled", "flaky_test", "p2p"}) list.push_back({b, PlanOptions{}});
  const int64_t S = 3;
  auto plan = detail::make_tuned_plan(list, pat, loc, MPI_COMM_WORLD, PlanOptions{}, S);
  EXPECT_EQ(differences(*plan, *ref, 3 * (S + 1) + 6), 0);
  EXPECT_EQ(stats_under(*plan, "auto.tune.dropped."),
            (std::map<std::string, double>{{"flaky_start_polled", 1}, {"flaky_test", 1}}));
  EXPECT_EQ(stats_under(*plan, "auto.tune.winner.").count("p2p"), 1u);
  // Warm-up and 3 rounds of p2p, each flaky_* run up to its failure (its second exchange).
  EXPECT_EQ(plan->setup_stats().time("auto.tune.exchanges"), 1.0 * (S + 1) + 2 + 2);
}

// A candidate's sample is its own exchange time, not the start's flag: with an empty
// pattern (a p2p exchange completes at once, locally) and the last rank starting each
// exchange 300 ms after the others, the flag completes only once it has started, but every
// other rank's sample (seen through the timer hook, which records it unchanged) is far
// below that delay. With the flag inside the timed interval each would be at least ~300 ms.
TEST(TuneMeasure, SampleIsTheCandidatesOwnExchange) {
  if (test::size() < 2) GTEST_SKIP() << "needs a rank that starts late";
  constexpr double kDelay = 0.3;
  const bool late = test::rank() == test::size() - 1;
  std::vector<double> seen;
  detail::set_tune_timer([&seen](const std::string&, int64_t, double s) {
    seen.push_back(s);
    return s;
  });
  const int64_t S = 2;
  auto plan = detail::make_tuned_plan({{"p2p", PlanOptions{}}}, Pattern(), Locality::ppn(MPI_COMM_WORLD, 2),
                                      MPI_COMM_WORLD, PlanOptions{}, S);
  for (int64_t it = 0; it < S + 1; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (late) std::this_thread::sleep_for(std::chrono::duration<double>(kDelay));
    plan->start(), plan->wait();
  }
  detail::set_tune_timer({});
  EXPECT_EQ(stats_under(*plan, "auto.tune.winner.").count("p2p"), 1u);
  ASSERT_EQ(seen.size(), static_cast<size_t>(S));
  if (!late) {
    for (double s : seen) EXPECT_LT(s, kDelay / 2);
  }
}

// A candidate whose pack target throws on one rank (before it starts): dropped on every
// rank like a start failure, the values right (without the guard there, the other ranks
// wait for the failing one in the failure flag's reduction).
TEST(TuneMeasure, CandidateWhosePackTargetThrowsIsDroppedOnEveryRank) {
  register_flaky("flaky_pack", Flaky::When::pack, 903);
  auto a = gen::from_spec(MPI_COMM_WORLD, "rotate:24,20");
  const Pattern pat = pattern_from_matrix_reference(a);
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  auto ref = make_plan("p2p", pat, loc, MPI_COMM_WORLD);
  std::vector<detail::TuneCandidate> list{{"flaky_pack", PlanOptions{}}, {"p2p", PlanOptions{}}};
  const int64_t S = 2;
  auto plan = detail::make_tuned_plan(list, pat, loc, MPI_COMM_WORLD, PlanOptions{}, S);
  EXPECT_EQ(differences(*plan, *ref, 2 * (S + 1) + 4), 0);  // (exchange 0 is start(owned): a pack target)
  EXPECT_EQ(stats_under(*plan, "auto.tune.dropped."), (std::map<std::string, double>{{"flaky_pack", 1}}));
  EXPECT_EQ(stats_under(*plan, "auto.tune.winner.").count("p2p"), 1u);
}

// A candidate that fails in start(owned, ghost) on the last rank after the others posted
// their receives straight into the caller's ghost array: once dropped, those receives
// (still posted: the last rank never sent) must not write into the caller's array when
// messages with their tag arrive later. The last rank sends such messages after tuning.
TEST(TuneMeasure, AbandonedCandidateNeverWritesIntoTheGhostArray) {
  constexpr int kTag = 904;
  const MPI_Comm chan = register_flaky("flaky_direct", Flaky::When::direct, kTag)->get();
  auto a = gen::from_spec(MPI_COMM_WORLD, "rotate:24,20");
  const Pattern pat = pattern_from_matrix_reference(a);
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  auto ref = make_plan("p2p", pat, loc, MPI_COMM_WORLD);
  PlanOptions fresh;  // (fresh requests: p2p receives into the ghost array, not its own buffer)
  fresh.persistent_requests = false;
  std::vector<detail::TuneCandidate> list{{"flaky_direct", fresh}, {"p2p", PlanOptions{}}};
  const int64_t S = 2;
  auto plan = detail::make_tuned_plan(list, pat, loc, MPI_COMM_WORLD, PlanOptions{}, S);
  int32_t owned = 0, ghosts = 0;
  for (int32_t i : pat.send().indices) owned = std::max(owned, i + 1);
  for (int32_t i : pat.recv().indices) ghosts = std::max(ghosts, i + 1);
  std::vector<double> x(static_cast<size_t>(owned)), g(static_cast<size_t>(ghosts)), want(g.size());
  int64_t bad = 0;
  for (int it = 0; it < 2 * (S + 1) + 2; ++it) {
    for (size_t i = 0; i < x.size(); ++i) x[i] = 1e6 * test::rank() + static_cast<double>(i) + 0.25 * it;
    ref->exchange(x.data(), want.data());
    plan->start(x.data(), g.data()), plan->wait(g.data());
    for (size_t i = 0; i < g.size(); ++i) bad += g[i] != want[i];
  }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(stats_under(*plan, "auto.tune.dropped."), (std::map<std::string, double>{{"flaky_direct", 1}}));
  // The messages the last rank never sent in the failed exchange, now, with other values.
  std::vector<MPI_Request> req;
  std::vector<std::vector<double>> junk;
  const auto& s = pat.send();
  if (test::rank() == test::size() - 1)
    for (int i = 0; i < s.num_neighbors(); ++i) {
      junk.emplace_back(static_cast<size_t>(s.count(i)), -7.0);
      req.emplace_back();
      MPI_Isend(junk.back().data(), static_cast<int>(s.count(i)), MPI_DOUBLE, s.ranks[i], kTag, chan, &req.back());
    }
  MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
  MPI_Barrier(MPI_COMM_WORLD);
  for (int k = 0; k < 50; ++k) {  // (progress for any receive the messages matched)
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, kTag + 1, chan, &flag, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  int64_t changed = 0;
  for (size_t i = 0; i < g.size(); ++i) changed += g[i] != want[i];
  EXPECT_EQ(changed, 0);
}

// A start stays local (tune.cpp: the layers' starts are MPI_Start, MPI_Ineighbor_*, a Begin):
// two tuned plans, started in opposite orders on even and odd ranks before either is
// waited for, through every measuring exchange and the decision. A blocking collective in
// a start (a candidate built at its first exchange, a blocking flag) would leave each rank
// waiting in one plan's collective for a peer blocked in the other's.
TEST(TuneMeasure, StartsStayLocalInEitherOrder) {
  auto a = gen::from_spec(MPI_COMM_WORLD, "rotate:24,20");
  const Pattern pat = pattern_from_matrix_reference(a);
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  auto ref = make_plan("p2p", pat, loc, MPI_COMM_WORLD);
  const std::vector<detail::TuneCandidate> list{{"neighbor", PlanOptions{}}, {"p2p", PlanOptions{}}};
  const int64_t S = 2;
  std::unique_ptr<Plan> tuned[2] = {detail::make_tuned_plan(list, pat, loc, MPI_COMM_WORLD, PlanOptions{}, S),
                                    detail::make_tuned_plan(list, pat, loc, MPI_COMM_WORLD, PlanOptions{}, S)};
  int32_t owned = 0, ghosts = 0;
  for (int32_t i : pat.send().indices) owned = std::max(owned, i + 1);
  for (int32_t i : pat.recv().indices) ghosts = std::max(ghosts, i + 1);
  std::vector<double> x(static_cast<size_t>(owned)), want(static_cast<size_t>(ghosts));
  std::vector<double> g[2] = {want, want};
  const int first = test::rank() % 2, second = 1 - first;
  int64_t bad = 0;
  for (int it = 0; it < 2 * (S + 1) + 3; ++it) {
    for (size_t i = 0; i < x.size(); ++i) x[i] = 1e6 * test::rank() + static_cast<double>(i) + 0.5 * it;
    ref->exchange(x.data(), want.data());
    tuned[first]->start(x.data(), g[first].data());
    tuned[second]->start(x.data(), g[second].data());
    tuned[0]->wait(g[0].data()), tuned[1]->wait(g[1].data());
    for (int k = 0; k < 2; ++k)
      for (size_t i = 0; i < want.size(); ++i) bad += g[k][i] != want[i];
  }
  EXPECT_EQ(bad, 0);
  for (auto& t : tuned) EXPECT_EQ(stats_under(*t, "auto.tune.winner.").size(), 1u);
}

// The forecast by hand: a candidate predicted no dearer than the choice costs nothing extra,
// the others their excess per round; the reductions two per measuring exchange and one more;
// the gain tune_gain percent of the choice over the exchanges after measuring.
TEST(TuneMeasure, ForecastWeighsPredictedGainAgainstPredictedCost) {
  detail::TuneSettings s;
  s.samples = 3, s.iterations = 1000, s.gain_percent = 10;
  const detail::TuneForecast f = detail::tune_forecast(s, {2e-6, 3e-6, 1.5e-6}, 2e-6, 1e-6);
  EXPECT_EQ(f.measuring, 12);
  EXPECT_DOUBLE_EQ(f.cost, 4 * 1e-6 + 25 * 1e-6);
  EXPECT_DOUBLE_EQ(f.gain, 988 * 0.1 * 2e-6);
  EXPECT_TRUE(f.start);  // 197.6 us > 29 us
  s.iterations = 100;    // 88 x 0.2 us = 17.6 us < 29 us
  EXPECT_FALSE(detail::tune_forecast(s, {2e-6, 3e-6, 1.5e-6}, 2e-6, 1e-6).start);
  s.iterations = 12;  // nothing left after measuring (3 candidates x 4 rounds)
  EXPECT_EQ(detail::tune_forecast(s, {2e-6, 2e-6, 2e-6}, 2e-6, 0.0).gain, 0.0);
  EXPECT_FALSE(detail::tune_forecast(s, {2e-6, 2e-6, 2e-6}, 2e-6, 0.0).start);
  s.iterations = 0;  // no count given: tune, as asked
  EXPECT_TRUE(detail::tune_forecast(s, {2e-6, 1.0}, 2e-6, 1.0).start);
}

// Through auto, with the built-in model (its predictions and latencies known here): the cost
// and gain it records are the forecast of the predictions it records for the shortlist it
// measures; one exchange fewer than the break-even count keeps the model's choice (on every
// rank, saying why), one more tunes (on every rank).
TEST(TuneMeasure, TuningStartsOnlyWhereThePredictedGainExceedsTheCost) {
  auto a = gen::from_spec(MPI_COMM_WORLD, "er:150,0.04,5");
  const Pattern pat = pattern_from_matrix_reference(a);
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  auto with = [&](const std::map<std::string, std::string>& opts) {
    PlanOptions o;
    o.backend.set("model", "builtin");
    for (const auto& [k, v] : opts) o.backend.set(k, v);
    return make_plan("auto", pat, loc, MPI_COMM_WORLD, o);
  };
  auto agreed = [](bool mine) {
    int v[2] = {mine ? 1 : 0, mine ? -1 : 0};
    MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_EQ(v[0], -v[1]) << "the ranks decided differently";
    return mine;
  };
  const int64_t S = 5, N = 1000000000;
  auto big = with({{"tune", "measure"}, {"iterations", std::to_string(N)}});
  if (!agreed(big->name() == "auto")) {  // (only where the model's choice exchanges nothing: one rank)
    EXPECT_EQ(stats_under(*big, "auto.predict.").at(big->name()), 0.0);
    EXPECT_EQ(big->setup_stats().time("auto.tune.skipped"), static_cast<double>(N));
    EXPECT_EQ(big->setup_stats().time("auto.tune.gain"), 0.0);
    return;
  }
  const auto model = stats_under(*big, "auto.tune.model.");
  ASSERT_EQ(model.size(), 1u);
  const double chosen = model.begin()->second;
  ASSERT_GT(chosen, 0.0);
  const double cost = big->setup_stats().time("auto.tune.cost"), gain = big->setup_stats().time("auto.tune.gain");
  auto ref = make_plan("p2p", pat, loc, MPI_COMM_WORLD);
  const auto n = static_cast<int64_t>(big->setup_stats().time("auto.tune.candidates"));
  EXPECT_EQ(differences(*big, *ref, n * (S + 1) + 1), 0);  // (settled: its medians name the shortlist)
  const auto medians = stats_under(*big, "auto.tune.median.");
  ASSERT_EQ(static_cast<int64_t>(medians.size()), n);
  const auto predicted = stats_under(*big, "auto.predict.");
  double want = 0;
  for (const auto& [b, m] : medians) want += static_cast<double>(S + 1) * std::max(0.0, predicted.at(b) - chosen);
  int rounds = 0;
  for (int k = 1; k < test::size(); k *= 2) ++rounds;
  const ModelParams builtin;
  const double reduction = rounds * (loc.num_regions() >= 2 ? builtin.alpha_inter : builtin.alpha_intra);
  const int64_t M = n * (S + 1);
  want += static_cast<double>(2 * M + 1) * reduction;
  EXPECT_NEAR(cost, want, 1e-9 * want);
  EXPECT_NEAR(gain, static_cast<double>(N - M) * 0.10 * chosen, 1e-9 * gain);
  EXPECT_GT(gain, cost);
  // The break-even count: (N - M) x 10% x chosen = cost.
  const auto even = static_cast<int64_t>(M + cost / (0.10 * chosen));
  auto below = with({{"tune", "measure"}, {"iterations", std::to_string(even - 1)}});
  EXPECT_FALSE(agreed(below->name() == "auto"));
  EXPECT_EQ(below->setup_stats().time("auto.tune.skipped"), static_cast<double>(even - 1));
  EXPECT_NEAR(below->setup_stats().time("auto.tune.cost"), cost, 1e-12 * cost);
  EXPECT_LE(below->setup_stats().time("auto.tune.gain"), cost);
  EXPECT_EQ(below->name(), model.begin()->first);  // (the model's choice, by exchange cost)
  const std::string why = detail::tune_summary(*below);
  EXPECT_NE(why.find("not started"), std::string::npos) << why;
  EXPECT_NE(why.find(std::to_string(even - 1) + " expected exchanges"), std::string::npos) << why;
  EXPECT_EQ(differences(*below, *ref, 3), 0);
  auto above = with({{"tune", "measure"}, {"iterations", std::to_string(even + 2)}});
  EXPECT_TRUE(agreed(above->name() == "auto"));
  EXPECT_GT(above->setup_stats().time("auto.tune.gain"), above->setup_stats().time("auto.tune.cost"));
  EXPECT_EQ(above->setup_stats().timers().count("auto.tune.skipped"), 0u);
  EXPECT_NE(detail::tune_summary(*above).find("predicted gain"), std::string::npos) << detail::tune_summary(*above);
  // A larger expected share of the exchange moves the break-even down; none never tunes.
  EXPECT_TRUE(agreed(with({{"tune", "measure"}, {"iterations", std::to_string(even - 1)}, {"tune_gain", "40"}})->name() ==
                     "auto"));
  EXPECT_FALSE(agreed(with({{"tune", "measure"}, {"iterations", std::to_string(N)}, {"tune_gain", "0"}})->name() ==
                      "auto"));
}

TEST(TuneMeasure, OptionsOfTuning) {
  auto a = gen::from_spec(MPI_COMM_WORLD, "er:150,0.04,5");
  const Pattern pat = pattern_from_matrix_reference(a);
  Locality loc = Locality::ppn(MPI_COMM_WORLD, 2);
  auto with = [&](const std::map<std::string, std::string>& opts) {
    PlanOptions o;
    for (const auto& [k, v] : opts) o.backend.set(k, v);
    return make_plan("auto", pat, loc, MPI_COMM_WORLD, o);
  };
  // tune unset: the model, whatever the count (iterations keeps its setup-inclusive meaning)
  auto by_default = with({{"iterations", "100000"}});
  EXPECT_NE(by_default->name(), "auto");
  EXPECT_EQ(by_default->setup_stats().timers().count("auto.tune.skipped"), 0u);
  EXPECT_EQ(with({{"tune", "measure"}})->name(), "auto");  // no count given: as asked
  auto model = with({{"tune", "model"}, {"iterations", "100000"}});
  EXPECT_NE(model->name(), "auto");
  EXPECT_EQ(model->setup_stats().timers().count("auto.tune.skipped"), 0u);
  EXPECT_NE(with({})->name(), "auto");  // the default: the model
  // Fewer expected exchanges than the measuring ones (at least 3 candidates x 6 rounds): no
  // exchange left to win anything back.
  auto few = with({{"tune", "measure"}, {"iterations", "15"}});
  EXPECT_NE(few->name(), "auto");
  EXPECT_EQ(few->setup_stats().time("auto.tune.skipped"), 15.0);
  EXPECT_EQ(few->setup_stats().time("auto.tune.gain"), 0.0);
  EXPECT_THROW(with({{"tune", "sometimes"}}), InputError);
  EXPECT_THROW(with({{"tune", "measure"}, {"race", "4"}}), InputError);
  EXPECT_THROW(with({{"tune", "measure"}, {"samples", "0"}}), InputError);
  EXPECT_THROW(with({{"samples", "3"}}), InputError);  // would be ignored: the model alone
  EXPECT_THROW(with({{"tune", "model"}, {"candidates", "2"}}), InputError);
  EXPECT_THROW(with({{"tune_gain", "5"}, {"iterations", "1000"}}), InputError);  // (no tune=measure)
  EXPECT_THROW(with({{"tune", "measure"}, {"tune_gain", "5"}}), InputError);     // (no count to weigh)
  EXPECT_THROW(with({{"tune", "measure"}, {"tune_gain", "-1"}, {"iterations", "1000"}}), InputError);
}

}  // namespace
}  // namespace sparsecomm
