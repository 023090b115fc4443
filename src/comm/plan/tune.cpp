// auto's in-place tuning (option tune=measure). A model ranks the backends from counts, but
// it cannot know every machine's contention; the caller's own exchanges can. The plan that
// auto returns then runs its first exchanges on a shortlist of candidates in rotation and
// keeps the fastest, as self-tuning collectives choose among their algorithms at run time
// (Faraj, Yuan and Lowenthal, "STAR-MPI: self tuned adaptive routines for MPI collective
// operations", ICS 2006), here on the caller's exchanges rather than extra ones:
//
// - Every candidate is built (make_plan: collective, agreed) when the tuning plan is, at
//   set-up; a build that fails fails on every rank, and the candidate is dropped everywhere
//   there (p2p's failure fails the set-up: it is the reference).
// - Round 0 runs every candidate once, unmeasured (a first execution may finish lazy
//   set-up); rounds 1 .. samples run each once more, in an order rotated by one per round
//   so that no candidate always follows the same one. A sample is timed on each rank from
//   the pack to the moment that rank completes the candidate's exchange (its unpack
//   included): the candidate's own cost, not the failure flag's (below), whose completion
//   waits for the last rank to start. With the flag inside, every sample would include a
//   reduction's latency, alike for every candidate, and candidates faster than it would tie.
// - While measuring, a candidate that throws in its pack target, start or wait is dropped
//   on every rank: a flag entered at start into a non-blocking barrier that carries the
//   maximum (core/mpi_util.hpp's NonblockingBarrier: non-blocking under SMPI too), and one
//   reduced after wait, say whether any rank failed, and then every rank replays that
//   exchange on p2p, the reference, from the values already packed (or the caller's
//   arrays). A measuring wait polls the candidate (its test(), which every halo backend
//   has) and the flag in turn while both are pending, then waits for the other: the flag
//   reporting a failure ends it with the candidate unwaited (a peer that failed to start
//   never sent its part), one reporting none lets it wait for the candidate (every rank
//   started it), and a throw from the candidate's test() is this rank's wait failure. A
//   candidate without test() (a backend registered outside the library) completes the flag
//   first and then its blocking wait, so its sample includes the flag. The failed plan is abandoned, not
//   destroyed: completing what it left in flight could wait forever. Its receives may stay
//   posted, so while measuring no candidate receives into the caller's ghost array:
//   start(owned, ghost) hands it a scratch array of this plan (copied into the caller's
//   after wait, outside the timing), abandoned with a dropped candidate. Not covered: a
//   failure inside a multi-stage candidate's wait (or test) that keeps its peers waiting for
//   a later stage (the start's flag reports no failure, and the wait's is reduced only after
//   the candidate completes); a dropped candidate's sends from the caller's owned array
//   (start(owned, ghost)) that its failed peer never receives may still read that array
//   later.
// - After the last round one allreduce (MPI_MAX) of every sample and every candidate's
//   setup time gives each round's slowest rank; the candidate of lowest median over its
//   rounds wins (ties: the earlier in the shortlist, the model's order), the same on every
//   rank; the others are freed in the next exchange's wait (the last one's values may still
//   lie in a loser's receive buffer until then).
//
// Where the collective steps go. Every exchange this plan stands in for through the
// interposition layers is itself a collective operation over the communicator: PETSc's
// PetscSFBcastBegin/End and Hypre's comm handles (created and destroyed by every rank of the
// package) are collective, as are MPI's neighborhood collectives and MPI-4's persistent
// collectives (MPI 4.0, sections 6.12-6.13 and 8.6-8.8). The standard lets a collective
// synchronize or not and says a correct program must not depend on which (MPI 4.0, section
// 6.14, "Correctness"), so completing one may block until every rank has joined it: a wait
// may complete a collective step. A start (MPI_Start, MPI_Ineighbor_*, a Begin) must stay
// local (MPI 4.0, sections 3.9 and 6.12: starting a persistent request and initiating a
// nonblocking collective are local calls, returning whatever the other ranks do), so
// nothing that blocks on other ranks runs in this plan's start:
// - the candidates are built at set-up (set-up is collective in every layer), none lazily;
// - start's failure flag enters a non-blocking barrier (its messages posted, none waited
//   for), completed in wait;
// - wait's failure flag, the replay on p2p, the decision's allreduce and the losers'
//   destruction (a plan's destructor may free communicators and windows) run in wait.
// So a tuned plan can stand in for any of these exchanges, with tune=measure asked for
// (the layers' default stays tune=model: a user's set-up cost does not change unasked).
//
// Values are those of a single backend at every exchange: each exchange runs on exactly
// one candidate (or the replay), and every backend delivers the pattern's values.
#include "comm/plan/tune.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "comm/plan/tune_cache.hpp"
#include "sparsecomm/core/mpi_util.hpp"

namespace sparsecomm::detail {

namespace {
TuneTimer& timer_hook() {
  static TuneTimer t;
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size();
  return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}
}  // namespace

void set_tune_timer(TuneTimer timer) { timer_hook() = std::move(timer); }

std::string tune_summary(const Plan& p) {
  const auto& t = p.setup_stats().timers();
  // The forecast against the caller's expected exchanges (tune_forecast), where one was made.
  std::string forecast;
  if (t.count("auto.tune.cost") && t.count("auto.tune.gain")) {
    char f[160];
    std::snprintf(f, sizeof f, "predicted gain %.4f ms %s cost %.4f ms over %lld expected exchanges",
                  t.at("auto.tune.gain") * 1e3, t.count("auto.tune.skipped") ? "<=" : ">", t.at("auto.tune.cost") * 1e3,
                  static_cast<long long>(t.count("auto.tune.iterations") ? t.at("auto.tune.iterations") : 0));
    forecast = f;
  }
  if (t.count("auto.tune.skipped"))
    return "tune=measure: not started (" + forecast + "); the model's choice " + p.name();
  const std::string won = tuned_winner(p);  // (a cache hit: the winner's own plan, no candidates)
  if (!t.count("auto.tune.candidates") && won.empty()) return "";
  if (!forecast.empty()) forecast = "; " + forecast;
  if (won.empty())
    return "tune=measure: measuring " + std::to_string(static_cast<long long>(t.at("auto.tune.candidates"))) +
           " candidates" + forecast;
  std::string tried, dropped;
  char ms[32];
  for (const auto& [k, v] : t) {
    if (k.rfind("auto.tune.median.", 0) == 0) {
      std::snprintf(ms, sizeof ms, " %.4f ms", v * 1e3);
      tried += (tried.empty() ? "" : ", ") + k.substr(17) + ms;
    } else if (k.rfind("auto.tune.dropped.", 0) == 0) {
      dropped += (dropped.empty() ? "" : ", ") + k.substr(18);
    }
  }
  const auto exchanges = t.count("auto.tune.exchanges") ? static_cast<long long>(t.at("auto.tune.exchanges")) : 0LL;
  const bool cached = t.count("auto.tune.cache.hit") > 0;
  return "tune=measure: " + std::string(cached ? "cached: " : "tried ") + tried +
         " (median per exchange of the slowest rank)" + (dropped.empty() ? "" : "; dropped " + dropped) + "; winner " +
         won + (cached ? " from the tuning cache" : " after " + std::to_string(exchanges) + " measuring exchanges") +
         forecast;
}

std::string tuned_winner(const Plan& p) {
  static const std::string kWinner = "auto.tune.winner.";
  const auto& t = p.setup_stats().timers();
  const auto it = t.lower_bound(kWinner);
  return it != t.end() && it->first.compare(0, kWinner.size(), kWinner) == 0 ? it->first.substr(kWinner.size()) : "";
}

TuneSettings tune_settings(const BackendOptions& o) {
  TuneSettings s;
  const std::string tune = o.get("tune", "");
  if (!tune.empty() && tune != "model" && tune != "measure")
    throw InputError("auto: option tune is model or measure, not '" + tune + "'");
  s.candidates = o.get_int("candidates", 3);
  s.samples = o.get_int("samples", 5);
  s.iterations = o.get_int("iterations", 0);
  s.gain_percent = o.get_int("tune_gain", 10);
  // Only when asked: iterations alone keeps its meaning (the setup-inclusive model choice), and
  // a tuned plan's start and wait are collective while it measures, which a caller must choose.
  s.measure = tune == "measure";
  if (!s.measure && (o.has("candidates") || o.has("samples") || o.has("tune_cache") || o.has("tune_gain")))
    throw InputError("auto: options candidates, samples, tune_cache and tune_gain need tune=measure");
  if (o.has("tune_gain") && s.iterations <= 0)  // (one that would be ignored)
    throw InputError("auto: option tune_gain needs iterations > 0 (the exchanges tuning must repay)");
  return s;
}

// Tuning pays where what it can win back exceeds what it spends: the model's choice is
// wrong by some share of an exchange (tune_gain), which tuning wins back on every exchange
// after it settles; it spends the measuring exchanges' excess over the model's choice and
// their failure flags. Both weighed in the model's own predictions, as auto's choice with
// iterations = N weighs set-up against N exchanges; the predictions are agreed, so every
// rank decides alike. The model's error is not known for one case, only its spread over
// measured ones, so tune_gain is an expectation the caller may change.
TuneForecast tune_forecast(const TuneSettings& s, const std::vector<double>& shortlisted, double chosen,
                           double reduction) {
  TuneForecast f;
  const int64_t rounds = s.samples + 1;
  f.measuring = static_cast<int64_t>(shortlisted.size()) * rounds;
  if (s.iterations <= 0) return f;  // (no expected count: tune, as asked)
  for (double t : shortlisted) f.cost += static_cast<double>(rounds) * std::max(0.0, t - chosen);
  f.cost += static_cast<double>(2 * f.measuring + 1) * reduction;
  const double after = static_cast<double>(std::max<int64_t>(0, s.iterations - f.measuring));
  f.gain = after * static_cast<double>(s.gain_percent) / 100.0 * chosen;
  f.start = f.gain > f.cost;
  return f;
}

bool same_plan_options(const std::string& backend, const PlanOptions& built, const PlanOptions& wanted) {
  const std::vector<std::string> names = backend_names();  // (an unknown backend: make_plan's error, later)
  const std::vector<OptionSpec> specs = std::find(names.begin(), names.end(), backend) != names.end()
                                            ? backend_option_specs(backend)
                                            : std::vector<OptionSpec>{};
  return built.width == wanted.width && built.value_bytes == wanted.value_bytes && built.sdde == wanted.sdde &&
         built.persistent_requests == wanted.persistent_requests &&
         built.backend.canonical(specs) == wanted.backend.canonical(specs);
}

namespace {
// Whether `x`, the plan built for `backend`, serves candidate `k`: the same backend and options.
bool serves(const std::string& backend, const BuiltCandidate& x, const TuneCandidate& k) {
  return x.plan && k.backend == backend && same_plan_options(backend, x.options, k.options);
}
// The plan built for candidate `k`, taken over where one serves it (its build time in
// *setup); else null.
std::unique_ptr<Plan> take_built(BuiltCandidates& built, const TuneCandidate& k, double* setup) {
  const auto it = built.find(k.backend);
  if (it == built.end() || !serves(it->first, it->second, k)) return nullptr;
  *setup = it->second.setup;
  return std::move(it->second.plan);
}
}  // namespace

class TunedPlan final : public Plan {
 public:
  TunedPlan(std::vector<TuneCandidate> list, const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o,
            int64_t samples, const std::map<std::string, double>& notes, BuiltCandidates built)
      : Plan("auto", p, l, c, o), samples_(samples) {
    for (const auto& [k, v] : notes) setup_stats_mut().add_time(k, v);
    for (auto& t : list) c_.push_back(Candidate{std::move(t), nullptr, false, 0.0, {}});
    for (size_t j = 0; j < c_.size(); ++j)
      if (c_[j].what.backend == "p2p") ref_ = j;
    if (ref_ == kNone) throw InputError("auto: tuning needs p2p among its candidates (the reference)");
    // The plans built before that no candidate takes are freed first (a destructor may be
    // collective: here, at set-up, in the same order on every rank), then the candidates
    // taken over or built (collective, at set-up: a start stays local).
    for (auto& [b, x] : built)
      if (std::none_of(c_.begin(), c_.end(), [&, &b = b, &x = x](const Candidate& k) { return serves(b, x, k.what); }))
        x.plan.reset();
    for (auto& k : c_) build(k, built);
    flag_comm_ = library_comm(comm());  // (collective on its first call: here, at set-up)
    setup_stats_mut().add_time("auto.tune.samples", static_cast<double>(samples));
    setup_stats_mut().add_time("auto.tune.candidates", static_cast<double>(c_.size()));
  }
  ~TunedPlan() override { finish_if_active(); }

  // The tuning cache (tune_cache.cpp): the lookup's note now, the decision stored at decide().
  void use_cache(TuneCacheLookup found) {
    cache_ = std::move(found);
    if (!cache_.on) return;
    setup_stats_mut().add_time("auto.tune.cache.miss", 1.0);
    setup_stats_mut().add_time("auto.tune.cache.note: " + cache_.note, 1.0);
  }
  // A cache hit: the winner alone, built by make_plan (agreed: a failed build fails on every
  // rank, and the caller measures instead), with the cached medians in its setup statistics.
  // A winner built before with its options (`built`) is taken over, its build time the one
  // recorded with it.
  static std::unique_ptr<Plan> cached_winner(const std::vector<TuneCandidate>& list, const TuneCacheLookup& hit,
                                             const Pattern& p, const Locality& l, MPI_Comm c,
                                             const std::map<std::string, double>& notes, BuiltCandidates& built) {
    const TuneCandidate& w = list[hit.winner];
    const double t0 = MPI_Wtime();
    double setup = 0;
    std::unique_ptr<Plan> q = take_built(built, w, &setup);
    const bool reused = q != nullptr;
    if (!reused) {
      try {
        q = make_plan(w.backend, p, l, c, w.options);
      } catch (const std::exception&) {
        return nullptr;
      }
      setup = MPI_Wtime() - t0;  // (the slowest rank's, as a measured plan states it)
      SPC_MPI(MPI_Allreduce(MPI_IN_PLACE, &setup, 1, MPI_DOUBLE, MPI_MAX, c));
    }
    Stats& s = q->setup_stats_mut();
    s.add_time("setup.backend", -s.time("setup.backend"));  // (make_plan("auto") adds auto's whole setup)
    for (const auto& [k, v] : notes) s.add_time(k, v);
    if (reused) s.add_time("auto.tune.reused." + w.backend, 1.0);
    s.add_time("auto.tune.setup." + w.backend, setup);
    for (size_t j = 0; j < list.size(); ++j)
      if (std::isfinite(hit.medians[j])) s.add_time("auto.tune.median." + list[j].backend, hit.medians[j]);
    s.add_time("auto.tune.winner." + w.backend, hit.medians[hit.winner]);
    s.add_time("auto.tune.exchanges", 0.0);
    s.add_time("auto.tune.cache.hit", 1.0);
    s.add_time("auto.tune.cache.note: " + hit.note, 1.0);
    return q;
  }

 protected:
  bool moves_in_place() const override { return true; }

  // begin() stays outside the guard: what it can throw is agreed already (make_plan's
  // failures, the reference's rethrown build failure, decide()'s), and it throws before any
  // candidate is chosen. The candidate's own pack target is guarded: a throw there (on some
  // ranks) is reduced with the start's flag, the caller packs into this plan's buffer, and
  // the candidate is dropped on every rank as for a failed start.
  char* do_pack_target() override {
    begin();
    packed_ = true;
    Plan& q = *c_[cur_].plan;
    char* t = nullptr;
    if (settled_) {
      t = q.do_pack_target();
    } else {
      try {
        t = q.do_pack_target();
      } catch (const std::exception&) {
        pending_failure_ = true;
        return src_ = send_buf();
      }
    }
    src_ = t ? t : q.send_buf();
    return src_;
  }
  void do_start() override {
    if (!begun_) begin();  // start(): the caller wrote this plan's send_area()
    Plan& q = *c_[cur_].plan;
    if (!packed_) {
      src_ = q.send_buf();
      if (send_bytes() > 0) std::memcpy(src_, send_buf(), static_cast<size_t>(send_bytes()));
    }
    guarded_start([&] { q.launch(); });
  }
  bool do_start_direct(const char* send, char* recv) override {
    begin();
    into_ghost_ = true, owned_ = send, ghost_ = recv;
    // While measuring, a candidate receives into this plan's scratch ghost array, not the
    // caller's: a dropped candidate's receives may still be posted (see drop()).
    into_ = settled_ || !recv ? recv : scratch_ghosts();
    Plan& q = *c_[cur_].plan;
    guarded_start([&] { q.start(static_cast<const void*>(send), static_cast<void*>(into_)); });
    return true;
  }
  void do_wait() override {
    Candidate& k = c_[cur_];
    if (settled_) {
      free_losers();  // (first: collective frees, which a winner's wait that throws on one rank must not skip)
      finish(*k.plan);
      return reset();
    }
    failed_ = 0;
    const double seconds = measured_wait(*k.plan);
    int failed = flag_->flag();
    flag_.reset();
    if (!failed) {
      SPC_MPI(MPI_Allreduce(&failed_, &any_failed_, 1, MPI_INT, MPI_MAX, comm()));
      failed = any_failed_;
    }
    if (!failed && into_ != ghost_) copy_ghosts();  // (not timed: the settled plan receives in place)
    ++measuring_;
    if (failed) {
      drop(k);
      replay();
    } else if (round_ > 0) {
      const TuneTimer& hook = timer_hook();
      k.times.push_back(hook ? hook(k.what.backend, round_, seconds) : seconds);
    }
    reset();
    ++slot_;
    advance();
  }
  char* do_recv_area() override { return received_; }

 private:
  struct Candidate {
    TuneCandidate what;
    std::unique_ptr<Plan> plan;
    bool dropped = false;
    double setup = 0;           ///< this rank's build time
    std::vector<double> times;  ///< seconds of each measured round
  };
  static constexpr size_t kNone = static_cast<size_t>(-1);

  // The candidate at position slot_ of round round_ (a rotation of the shortlist).
  size_t at_slot() const { return (slot_ + static_cast<size_t>(round_)) % c_.size(); }
  bool round_done() const {
    for (size_t s = slot_; s < c_.size(); ++s)
      if (!c_[(s + static_cast<size_t>(round_)) % c_.size()].dropped) return false;
    return true;
  }

  // Picks the candidate of the exchange being started, and starts its clock. Local: every
  // candidate is built, and advance() (in wait) left a live one ahead in the round.
  void begin() {
    begun_ = true;
    if (settled_) {
      cur_ = winner_;
      return;
    }
    // (every candidate dropped: only after p2p failed, an error already thrown on every rank)
    for (size_t n = 0; c_[at_slot()].dropped; ++slot_)
      if (++n > c_.size()) throw Error("auto: every tuning candidate failed");
    cur_ = at_slot();
    t0_ = MPI_Wtime();
  }
  // After a measuring exchange's wait: on to the next round when this one is done, and the
  // decision (collective) after the last. p2p is never dropped (its failure is an error), so
  // a new round always has a candidate to run.
  void advance() {
    if (!round_done()) return;
    if (round_ == samples_) return decide();
    ++round_, slot_ = 0;
  }
  // The candidates other than the winner, in the first wait after the decision (a
  // destructor may free communicators or windows: collective, so never in a start).
  void free_losers() {
    if (freed_) return;
    for (size_t j = 0; j < c_.size(); ++j)
      if (j != winner_) c_[j].plan.reset();
    freed_ = true;
  }

  // At set-up. A plan built before with the candidate's options is taken over (its build
  // time the one recorded with it). Else make_plan, which agrees a failure, so every rank
  // returns alike; the reference's failure is rethrown (on every rank): without it no
  // failed exchange could be replayed.
  bool build(Candidate& k, BuiltCandidates& built) {
    if ((k.plan = take_built(built, k.what, &k.setup))) {
      setup_stats_mut().add_time("auto.tune.reused." + k.what.backend, 1.0);
      return true;
    }
    const double t = MPI_Wtime();
    try {
      k.plan = make_plan(k.what.backend, pattern(), locality(), comm(), k.what.options);
    } catch (const std::exception&) {
      if (&k == &c_[ref_]) throw;
      drop(k);
      return false;
    }
    k.setup = MPI_Wtime() - t;
    return true;
  }
  // Abandoned, not destroyed (see the file's comment): its receives may still be posted,
  // into its own buffers or the scratch ghost array, which is abandoned with it (a new one
  // serves the next exchange), so that they can never write where a later exchange reads.
  void drop(Candidate& k) {
    k.dropped = true;
    (void)k.plan.release();
    if (into_ && into_ == scratch_.get()) (void)scratch_.release();
    setup_stats_mut().add_time("auto.tune.dropped." + k.what.backend, 1.0);
  }
  // The scratch ghost array: as large as the caller's (the highest receive position + 1).
  char* scratch_ghosts() {
    if (!scratch_) {
      int64_t n = 0;
      for (int32_t i : pattern().recv().indices) n = std::max(n, int64_t{i} + 1);
      scratch_.reset(new char[static_cast<size_t>(std::max<int64_t>(n * elem_bytes(), 1))]);
    }
    return scratch_.get();
  }
  // The values a candidate received into the scratch array, into the caller's.
  void copy_ghosts() {
    const auto& r = pattern().recv();
    const int64_t e = elem_bytes();
    for (int32_t i : r.indices) std::memcpy(ghost_ + i * e, into_ + i * e, static_cast<size_t>(e));
  }

  // Starts the candidate; while measuring, a failure (here or in its pack target) is
  // caught and entered into the exchange's flag, a non-blocking barrier carrying its
  // maximum (NonblockingBarrier: non-blocking under SMPI too), completed in do_wait.
  template <class F>
  void guarded_start(F&& f) {
    if (settled_) return f();
    start_failed_ = pending_failure_;
    if (!start_failed_) {
      try {
        f();
      } catch (const std::exception&) {
        start_failed_ = true;
      }
    }
    flag_ = std::make_unique<NonblockingBarrier>(flag_comm_, kLibraryTagTuneFlag, start_failed_ ? 1 : 0);
  }
  // A measuring exchange's completion; returns its sample: the seconds from begin() to this
  // rank's completion of the candidate (its unpack included). Returns with the start's flag
  // complete. While both are pending, the candidate (its test()) and the flag are polled in
  // turn, so that neither is waited for before the other; then whichever remains is waited
  // for: the flag, once the candidate completed (or threw: failed_ = 1), outside the sample;
  // or the candidate, once the flag said every rank started it (its wait cannot hang on a
  // failed start), its completion then ending the sample. A flag that reports a failed start
  // leaves the candidate abandoned, unwaited. A candidate without test() completes the old
  // way, the flag first, then its wait (the flag then lies inside its sample).
  double measured_wait(Plan& q) {
    double seconds = 0;
    bool done = start_failed_, flagged = false;  // (a failed start: no candidate to complete)
    if (!done && q.supports_test()) {
      while (!done && !flagged) {
        try {
          done = q.poll();
        } catch (const std::exception&) {
          failed_ = 1, done = true;
        }
        if (!done) {
          flagged = flag_->test();
          continue;
        }
        if (!failed_) finish_guarded(q);  // (after a poll that returned true, no waiting)
        seconds = MPI_Wtime() - t0_;
      }
    }
    if (!flagged) {
      MPI_Request none = MPI_REQUEST_NULL;
      flag_->wait_with(none, nullptr);
    }
    if (!done && !flag_->flag()) {
      finish_guarded(q);
      seconds = MPI_Wtime() - t0_;
    }
    return seconds;
  }
  // The candidate's wait; a throw is this rank's failure (failed_, reduced after the wait).
  void finish_guarded(Plan& q) {
    try {
      finish(q);
    } catch (const std::exception&) {
      failed_ = 1;
    }
  }
  void finish(Plan& q) {
    if (into_ghost_ && into_) {
      q.wait(static_cast<void*>(into_));
    } else {
      received_ = static_cast<char*>(q.wait());
    }
  }
  // The failed exchange again, on p2p (every rank: the failure was agreed).
  void replay() {
    if (cur_ == ref_) agree(comm(), "auto: the reference backend p2p failed while tuning");
    Plan& q = *c_[ref_].plan;
    into_ = ghost_;  // (the reference is kept: it may receive into the caller's array)
    if (into_ghost_) {
      q.start(static_cast<const void*>(owned_), static_cast<void*>(ghost_));
    } else {
      if (send_bytes() > 0) std::memcpy(q.send_area(), src_, static_cast<size_t>(send_bytes()));
      q.start();
    }
    finish(q);
  }
  void reset() {
    begun_ = packed_ = into_ghost_ = pending_failure_ = start_failed_ = false;
    owned_ = nullptr, ghost_ = nullptr, into_ = nullptr;
  }

  // One allreduce: each sample's slowest rank and each candidate's slowest setup.
  void decide() {
    const double t0 = MPI_Wtime();
    const size_t n = c_.size(), S = static_cast<size_t>(samples_);
    std::vector<double> v(n * (S + 1), 0.0);
    for (size_t j = 0; j < n; ++j) {
      std::copy_n(c_[j].times.begin(), std::min(S, c_[j].times.size()), v.begin() + static_cast<std::ptrdiff_t>(j * S));
      v[n * S + j] = c_[j].setup;
    }
    SPC_MPI(MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_MAX, comm()));
    double best = std::numeric_limits<double>::infinity();
    std::vector<double> medians(n, std::nan(""));  // (NaN: dropped)
    for (size_t j = 0; j < n; ++j) {
      const std::string& b = c_[j].what.backend;
      if (c_[j].setup > 0 || c_[j].plan) setup_stats_mut().add_time("auto.tune.setup." + b, v[n * S + j]);
      if (c_[j].dropped) continue;  // (alike on every rank: drops are agreed)
      const auto at = v.begin() + static_cast<std::ptrdiff_t>(j * S);
      const double m = medians[j] = median(std::vector<double>(at, at + static_cast<std::ptrdiff_t>(S)));
      setup_stats_mut().add_time("auto.tune.median." + b, m);
      if (m < best) best = m, winner_ = j;
    }
    if (winner_ == kNone) agree(comm(), "auto: every tuning candidate failed");
    settled_ = true;
    setup_stats_mut().add_time("auto.tune.winner." + c_[winner_].what.backend, best);
    setup_stats_mut().add_time("auto.tune.exchanges", static_cast<double>(measuring_));
    setup_stats_mut().add_time("auto.tune.decide", MPI_Wtime() - t0);
    if (cache_.on) remember(medians);
  }
  // Rank 0 stores the decision in the cache: the winner and every candidate's median.
  void remember(const std::vector<double>& medians) {
    std::vector<TuneCandidate> list;
    for (const Candidate& k : c_) list.push_back(k.what);
    const std::string note = tune_cache_store(cache_, list, winner_, medians);
    if (!note.empty()) setup_stats_mut().add_time("auto.tune.cache.note: " + note, 1.0);
  }

  std::vector<Candidate> c_;
  const int64_t samples_;
  size_t ref_ = kNone, cur_ = 0, slot_ = 0, winner_ = kNone;
  int64_t round_ = 0;      ///< 0: warm-up; 1 .. samples_: measured
  int64_t measuring_ = 0;  ///< exchanges run before settling
  bool settled_ = false, freed_ = false;
  // The active exchange.
  bool begun_ = false, packed_ = false, into_ghost_ = false;
  const char* owned_ = nullptr;
  char* ghost_ = nullptr;     ///< the caller's ghost array (start(owned, ghost))
  char* into_ = nullptr;      ///< where the running plan receives it (ghost_ or scratch_)
  bool pending_failure_ = false;  ///< the candidate's pack target threw (reduced at start)
  bool start_failed_ = false;     ///< its pack target or start threw on this rank
  std::unique_ptr<char[]> scratch_;
  char* src_ = nullptr;       ///< where its packed units lie (for a replay)
  char* received_ = nullptr;  ///< where the last exchange's units lie (do_recv_area)
  double t0_ = 0;
  int failed_ = 0, any_failed_ = 0;  ///< wait's failure, reduced
  std::unique_ptr<NonblockingBarrier> flag_;  ///< start's failure, reduced (its flag())
  MPI_Comm flag_comm_ = MPI_COMM_NULL;        ///< library_comm(comm()), for the flag's messages
  TuneCacheLookup cache_;
};

std::unique_ptr<Plan> make_tuned_plan(std::vector<TuneCandidate> shortlist, const Pattern& p, const Locality& l,
                                      MPI_Comm c, const PlanOptions& o, int64_t samples,
                                      const std::map<std::string, double>& notes, BuiltCandidates built) {
  // The cache first (collective, alike on every rank): a hit builds the winner alone (or
  // takes it over from `built`; the rest of `built` is freed on return, at set-up).
  TuneCacheLookup cached = tune_cache_lookup(tune_cache_path(o), shortlist, p, l, c, o);
  if (cached.winner != TuneCacheLookup::kMiss) {
    if (auto q = TunedPlan::cached_winner(shortlist, cached, p, l, c, notes, built)) return q;
    cached.note = "miss: the cached winner " + shortlist[cached.winner].backend + " failed to build";
    cached.winner = TuneCacheLookup::kMiss;
  }
  auto t = std::make_unique<TunedPlan>(std::move(shortlist), p, l, c, o, samples, notes, std::move(built));
  t->use_cache(std::move(cached));
  return t;
}

}  // namespace sparsecomm::detail
