#pragma once
// auto's in-place tuning (option tune=measure): a Plan whose first exchanges rotate among a
// shortlist of candidate backends, all built at set-up, timing each, until every rank settles
// on the same winner by one allreduce in a wait; its starts stay local (tune.cpp explains).
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sparsecomm/comm/plan/plan.hpp"

namespace sparsecomm::detail {

/// What auto's options ask of tuning, derived alike on every rank (make_plan agreed them).
struct TuneSettings {
  bool measure = false;       ///< tune=measure asked for (whether it starts: tune_forecast)
  int64_t candidates = 3;     ///< the model's top candidates measured (p2p added if absent)
  int64_t samples = 5;        ///< measured exchanges per candidate (after one warm-up each)
  int64_t iterations = 0;     ///< the caller's expected exchanges (0: not given)
  int64_t gain_percent = 10;  ///< option tune_gain: the share of an exchange tuning is expected to win
};

/// auto's options tune, candidates, samples, iterations and tune_gain read (InputError for a
/// tune value other than model or measure, and for an option that would be ignored). Local:
/// the options are the same on every rank.
TuneSettings tune_settings(const BackendOptions& o);

/// Whether tuning is predicted to repay itself over the caller's expected exchanges, from
/// the model's predictions alone (the same on every rank, so every rank decides alike).
struct TuneForecast {
  int64_t measuring = 0;  ///< the measuring exchanges: each candidate samples + 1 times
  /// Seconds: what the measuring exchanges cost beyond the model's choice run as many times
  /// (each candidate's predicted excess over it, samples + 1 times), and the failure flag's
  /// reductions (two per measuring exchange, one to decide). The candidates' set-ups are not
  /// in it: the model predicts no set-up.
  double cost = 0;
  /// Seconds: tune_gain percent of the model's choice's predicted exchange, over the expected
  /// exchanges left after the measuring ones.
  double gain = 0;
  bool start = true;  ///< gain > cost; without an expected count (iterations = 0): as asked
};

/// `shortlisted`: each shortlisted candidate's predicted seconds per exchange; `chosen`: the
/// model's choice's; `reduction`: the predicted seconds of one small allreduce over the
/// communicator. Local.
TuneForecast tune_forecast(const TuneSettings& s, const std::vector<double>& shortlisted, double chosen,
                           double reduction);

/// A candidate for tuning: a backend and the options it takes.
struct TuneCandidate {
  std::string backend;
  PlanOptions options;
};

/// A plan built before tuning (auto builds each backend it cannot count from a region's
/// view, to count it): a shortlisted candidate of this backend and these options takes it
/// over instead of being built again.
struct BuiltCandidate {
  std::unique_ptr<Plan> plan;
  PlanOptions options;  ///< the options it was built with
  double setup = 0;     ///< seconds its build took (the slowest rank's)
};
/// By backend name. The same on every rank (which backends were built is agreed).
using BuiltCandidates = std::map<std::string, BuiltCandidate>;

/// Whether a plan built with `built` serves a candidate of `backend` with `wanted`: the
/// same width, value size, SDDE strategy, request kind and backend options (text values
/// compared, per-rank ones left out, attachments by key). Local, alike on every rank.
bool same_plan_options(const std::string& backend, const PlanOptions& built, const PlanOptions& wanted);

/// Collective (duplicates c; builds every candidate, dropping on every rank one whose
/// build fails; p2p's failure is an error). The tuning plan, named "auto", over `shortlist`
/// in the order that breaks ties (p2p, the reference that replays an exchange a candidate
/// failed, must be among them), with `notes` in its setup statistics (auto's predictions).
/// A candidate found in `built` with its options (same_plan_options) is taken over, not
/// built ("auto.tune.reused.<backend>" = 1; its setup the one recorded there); the plans
/// of `built` no candidate takes are freed here, at set-up, before any candidate is built.
std::unique_ptr<Plan> make_tuned_plan(std::vector<TuneCandidate> shortlist, const Pattern& p, const Locality& l,
                                      MPI_Comm c, const PlanOptions& o, int64_t samples,
                                      const std::map<std::string, double>& notes = {},
                                      BuiltCandidates built = {});

/// The backend a tuned plan settled on, from its setup statistics: "" while it measures, and
/// for a plan that is not tuned. Local. What the layers report as the backend a call runs on.
std::string tuned_winner(const Plan& p);

/// A tuned plan's tuning in one line, for the layers' verbose outputs: the candidates tried
/// with their medians (of each round's slowest rank, agreed: alike on every rank), the ones
/// dropped, the winner and the measuring exchanges spent (or that the tuning cache gave the
/// winner); "measuring" before it settles; "" for a plan that is not tuned. Local.
std::string tune_summary(const Plan& p);

/// For tests: replaces what a measured exchange records. Called with the candidate's
/// backend, the measuring round (1 .. samples) and the seconds measured on this rank; returns
/// the seconds to record. An empty function restores the measurement. Process-wide: set it
/// before the exchanges of a test and clear it after.
using TuneTimer = std::function<double(const std::string& backend, int64_t round, double seconds)>;
void set_tune_timer(TuneTimer timer);

}  // namespace sparsecomm::detail
