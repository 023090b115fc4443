// sparsecomm_autoeval: how good is "auto"? For each matrix: every backend's measured halo
// exchange time next to the model's prediction, auto's choice, and its regret (measured
// time of the chosen backend / the best measured backend), plus the worst case of always
// using p2p. The model parameters come from --model / $SPARSECOMM_MODEL (see
// sparsecomm_calibrate) or the built-in defaults.
//
//   mpirun -np 8 sparsecomm_autoeval --matrices all --regions ppn:4 --model model.txt
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <tuple>

#include "sparsecomm/kernels/halo_pattern.hpp"
#include "sparsecomm/comm/plan/model.hpp"
#include "core/compare.hpp"
#include "common/app_main.hpp"
#include "common/cli.hpp"
#include "common/provenance.hpp"
#include "common/options.hpp"
#include "common/table.hpp"
#include "common/timing.hpp"
#include "sparsecomm/matrix/data_path.hpp"
#include "sparsecomm/matrix/generators.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"

using namespace sparsecomm;

namespace {

// A plan's load as the model reads it (RankLoad), reduced three ways for the JSON lines: the
// busiest rank, the busiest region (sum over its ranks) and the sum over all ranks; plus
// the stages and the steps with inter-region traffic. Lets one fit other models offline.
apps::Json load_json(const Plan& plan, MPI_Comm comm) {
  const RankLoad l = rank_load(plan);
  const std::vector<double> v = {l.msgs_intra,  l.msgs_inter,   l.bytes_intra, l.bytes_inter,
                                 l.copy_bytes,  l.window_reads, l.window_bytes};
  const char* names[] = {"msgs_intra", "msgs_inter", "bytes_intra", "bytes_inter",
                         "copy_bytes", "window_reads", "window_bytes"};
  std::vector<double> region(v.size()), region_max(v.size());
  SPC_MPI(MPI_Allreduce(v.data(), region.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_SUM,
                        plan.locality().local_comm()));
  SPC_MPI(MPI_Allreduce(region.data(), region_max.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_MAX, comm));
  const std::vector<Reduced> r = reduce_all(comm, v);
  apps::Json j;
  j["stages"] = allreduce_max(comm, static_cast<int64_t>(plan.stages()));
  j["inter_steps"] = allreduce_max(comm, inter_steps(plan.iteration_counts()));
  for (size_t i = 0; i < v.size(); ++i) j[names[i]] = {r[i].max, region_max[i], r[i].sum};
  return j;
}

// Every rank's inputs to the model (rank_terms), on rank 0, so that offline fits
// (experiments/auto/refit.py) can predict from exactly what predict_iteration reads: per
// rank {"head": [region, staged bytes, stages, steps with inter-region and with MPI
// messages, window reads, window bytes, injected bytes], "steps": {step: [its MPI part (the
// window's taken out): sent intra msgs, bytes, sent inter msgs, bytes, received likewise;
// then the window's reads and bytes]}}.
apps::Json rank_terms_json(const Plan& plan, MPI_Comm comm) {
  const Stats& c = plan.iteration_counts();
  const Stats& w = plan.window_counts();
  const auto& wt = w.total();
  apps::Json mine;
  mine["head"] = {static_cast<double>(plan.locality().region()),
                  rank_load(plan).copy_bytes,
                  static_cast<double>(plan.stages()),
                  static_cast<double>(inter_steps(c)),
                  static_cast<double>(message_steps(c, w)),
                  static_cast<double>(wt.recv_intra.msgs + wt.recv_inter.msgs),
                  static_cast<double>(wt.recv_intra.bytes + wt.recv_inter.bytes),
                  static_cast<double>(c.total().sent_inter.bytes - wt.sent_inter.bytes)};
  mine["steps"] = apps::Json::object();
  for (const auto& [step, k] : c.steps()) {
    const CommCounters mpi = message_part(k, w, step);
    std::vector<double> v;
    for (const MessageCounts& x : {mpi.sent_intra, mpi.sent_inter, mpi.recv_intra, mpi.recv_inter})
      v.push_back(static_cast<double>(x.msgs)), v.push_back(static_cast<double>(x.bytes));
    // What it read through windows: what it received less its MPI messages.
    v.push_back(static_cast<double>(k.recv_intra.msgs + k.recv_inter.msgs - mpi.recv_intra.msgs - mpi.recv_inter.msgs));
    v.push_back(static_cast<double>(k.recv_intra.bytes + k.recv_inter.bytes - mpi.recv_intra.bytes - mpi.recv_inter.bytes));
    mine["steps"][step] = v;
  }
  // To rank 0 as text (one gather of the lengths, one of the texts).
  const std::string text = mine.dump();
  const int n = static_cast<int>(text.size()), P = comm_size(comm), me = comm_rank(comm);
  std::vector<int> counts(static_cast<size_t>(P)), displs(static_cast<size_t>(P));
  SPC_MPI(MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm));
  int total = 0;
  for (int r = 0; r < P; ++r) displs[static_cast<size_t>(r)] = total, total += me == 0 ? counts[static_cast<size_t>(r)] : 0;
  std::vector<char> all(static_cast<size_t>(total));
  SPC_MPI(MPI_Gatherv(text.data(), n, MPI_CHAR, all.data(), counts.data(), displs.data(), MPI_CHAR, 0, comm));
  apps::Json j = apps::Json::array();
  if (me == 0)
    for (int r = 0; r < P; ++r)
      j.push_back(apps::Json::parse(all.begin() + displs[static_cast<size_t>(r)],
                                    all.begin() + displs[static_cast<size_t>(r)] + counts[static_cast<size_t>(r)]));
  return j;
}

/// The matrices: names, paths and generator specs; 'all' = every shared matrix and gen:rotate:256,256.
std::vector<std::string> matrix_list(const std::string& list) {
  std::vector<std::string> mats;
  const bool specs = list.find_first_of("; ") != std::string::npos;  // a generator spec has commas
  for (const auto& m : specs ? apps::split_specs(list) : apps::split_list(list)) {
    if (m != "all") {
      mats.push_back(m);
      continue;
    }
    for (const auto& p : list_matrices()) mats.push_back(p);
    mats.push_back("gen:rotate:256,256");
  }
  if (mats.empty()) throw InputError("autoeval: --matrices is empty");
  return mats;
}

struct Settings {
  Locality loc;
  ModelParams model;
  std::string model_file, label, json;
  int rounds = 5, per_round = 40;
  int64_t race = 0;  // > 0: auto is also run with its option race = this, and judged alike
  bool tune = false;  // auto with tune=measure is also timed, in the same rounds as the backends
  std::string aa;     // a backend timed twice (a second, identical plan) in the same rounds: the noise floor
  int64_t solve = 0;  // > 0 (with tune): a solve of this many exchanges, tuned against the best backend
  bool exact = false;  // a deterministic simulator: exit 3 unless every A/A pair is exactly 1
};

// The name under which auto with tune=measure is timed beside the backends.
constexpr const char* kTuned = "auto:tune";
// The name under which Settings::aa's second plan is timed.
constexpr const char* kTwin = "A/A twin";

// A solve of Settings::solve exchanges from a fresh set-up, each from a barrier, max over
// ranks: auto with tune=measure against the best backend of the rounds.
struct Solve {
  double tuned = 0, best = 0;              // set-up + every exchange
  double tuned_setup = 0, best_setup = 0;  // make_plan alone (tuned: the model's choice; candidates build lazily)
  double tuning = 0;                       // tuned: from set-up to settled (candidates' builds, measuring exchanges)
  double extra_setup = 0, measuring = 0;   // tuned: the losing candidates' builds, the exchanges before settling
  bool started = true;                     // tuned: whether auto started tuning (its forecast, auto.tune.cost/gain)
  double cost = 0, gain = 0;               // tuned: that forecast's predicted seconds
};

// One matrix's figures per backend.
struct Evaluated {
  std::map<std::string, apps::RoundStats> measured;  // median, spread and every round's time
  std::map<std::string, double> predicted;
  std::map<std::string, apps::Json> load, terms;
  std::vector<std::string> wrong;  // backends whose exchange delivered wrong values
  apps::RoundStats tuned;   // auto with tune=measure (Settings::tune): its measuring exchanges included
  std::string tuned_pick;   // its winner
  std::map<std::string, double> tune_stats;  // its "auto.tune.*" set-up statistics (agreed on every rank)
  apps::RoundStats aa;      // Settings::aa's second plan
  Solve solve;              // Settings::solve
};

// Collective. auto with tune=measure on the pattern (the model as auto's other runs use it).
std::unique_ptr<Plan> tuned_plan(MPI_Comm comm, const Settings& st, const Pattern& pat, int64_t iterations = 0) {
  PlanOptions po;
  if (!st.model_file.empty()) po.backend.set("model", st.model_file);
  po.backend.set("tune", "measure");
  if (iterations > 0) po.backend.set("iterations", iterations);
  return make_plan("auto", pat, st.loc, comm, po);
}

// The winner a tuned plan settled on ("" before it settles).
std::string tuned_winner(const Plan& plan) {
  for (const auto& [k, v] : plan.setup_stats().timers())
    if (k.rfind("auto.tune.winner.", 0) == 0) return k.substr(17);
  return "";
}

/// Collective. Every backend but those that choose among the others (auto): its plan, its
/// exchange checked (x_j = j + 1 for global column id j: every ghost is checked against the
/// value its id implies before the timing, so a backend that moves wrong values cannot
/// rank), its prediction and load; then the timings in interleaved rounds
/// (apps::interleaved_rounds): a backend's time is its median over the rounds. With
/// Settings::tune, auto with tune=measure too, from its first exchange (the rotation
/// included), its values checked before and after the rounds.
Evaluated evaluate(MPI_Comm comm, const Settings& st, const DistCsr<double>& a, const Pattern& pat) {
  Evaluated ev;
  std::vector<double> x(static_cast<size_t>(a.local_cols()) + 1), g(static_cast<size_t>(a.num_ghosts()) + 1);
  for (int32_t i = 0; i < a.local_cols(); ++i) x[i] = static_cast<double>(a.col_begin() + i + 1);
  std::vector<double> want(g.size());
  for (int32_t k = 0; k < a.num_ghosts(); ++k) want[k] = static_cast<double>(a.ghost_ids()[k] + 1);
  std::map<std::string, std::unique_ptr<Plan>> plans;
  for (const auto& b : backend_names()) {
    if (backend_hooks(b).chooses_among_others) continue;
    plans[b] = make_plan(b, pat, st.loc, comm);
    plans[b]->exchange(x.data(), g.data());
    if (!compare(g.data(), want.data(), a.num_ghosts()).allreduce(comm).ok(0.0)) ev.wrong.push_back(b);
    ev.predicted[b] = predict_iteration(*plans[b], st.model, comm);
    ev.load[b] = load_json(*plans[b], comm);
    ev.terms[b] = rank_terms_json(*plans[b], comm);
  }
  std::vector<std::string> order;
  for (const auto& [b, plan] : plans) order.push_back(b);
  if (st.tune) plans[kTuned] = tuned_plan(comm, st, pat), order.push_back(kTuned);
  if (!st.aa.empty()) plans[kTwin] = make_plan(st.aa, pat, st.loc, comm), order.push_back(kTwin);
  auto check = [&](const char* name) {
    plans[name]->exchange(x.data(), g.data());
    if (!compare(g.data(), want.data(), a.num_ghosts()).allreduce(comm).ok(0.0)) ev.wrong.push_back(name);
  };
  auto check_tuned = [&] { check(kTuned); };
  if (st.tune) check_tuned();
  if (!st.aa.empty()) check(kTwin);
  const auto times = apps::interleaved_rounds(order.size(), st.rounds, [&](size_t i) {
    Plan& plan = *plans[order[i]];
    return apps::time_per_call(comm, st.per_round, [&] { plan.exchange(x.data(), g.data()); });
  });
  for (size_t i = 0; i < order.size(); ++i)
    (order[i] == kTuned ? ev.tuned : order[i] == kTwin ? ev.aa : ev.measured[order[i]]) = times[i];
  if (st.tune) {
    check_tuned(), ev.tuned_pick = tuned_winner(*plans[kTuned]);
    for (const auto& [k, v] : plans[kTuned]->setup_stats().timers())
      if (k.rfind("auto.tune.", 0) == 0) ev.tune_stats[k] = v;
  }
  return ev;
}

// What tuning spent (from a tuned plan's agreed statistics): the builds of the candidates
// but the winner's, and the exchanges before it settled.
std::pair<double, double> tuning_cost(const std::map<std::string, double>& stats, const std::string& winner) {
  double setup = 0, measuring = 0;
  for (const auto& [k, v] : stats) {
    if (k.rfind("auto.tune.setup.", 0) == 0 && k.substr(16) != winner) setup += v;
    if (k == "auto.tune.exchanges") measuring = v;
  }
  return {setup, measuring};
}

/// Collective. One solve (Solve): st.solve exchanges of a plan made from scratch, timed
/// from a barrier, max over ranks; `tuned`: auto with tune=measure told the exchange count
/// (its option iterations), else `backend`. Returns whether the last exchange's values
/// were right on every rank; out: set-up, tuning, total seconds, then tuning_cost's two,
/// whether tuning started (1) and its forecast's cost and gain.
bool time_solve(MPI_Comm comm, const Settings& st, const Pattern& pat, bool tuned, const std::string& backend,
                const double* x, double* g, const double* want, int32_t ghosts, double out[8]) {
  SPC_MPI(MPI_Barrier(comm));
  const double t0 = MPI_Wtime();
  std::unique_ptr<Plan> plan = tuned ? tuned_plan(comm, st, pat, st.solve) : make_plan(backend, pat, st.loc, comm);
  const double t1 = MPI_Wtime();
  bool done = !tuned || plan->name() != "auto";  // (a tuning not started: the model's choice from set-up)
  double settled = t1;
  for (int64_t i = 0; i < st.solve; ++i) {
    plan->exchange(x, g);
    if (!done && !tuned_winner(*plan).empty()) done = true, settled = MPI_Wtime();  // (the exchange that decided)
  }
  const double t2 = MPI_Wtime();
  const double mine[3] = {t1 - t0, (done ? settled : t2) - t1, t2 - t0};
  SPC_MPI(MPI_Allreduce(mine, out, 3, MPI_DOUBLE, MPI_MAX, comm));
  std::tie(out[3], out[4]) = tuning_cost(plan->setup_stats().timers(), tuned_winner(*plan));
  out[5] = plan->name() == "auto" ? 1.0 : 0.0;  // (agreed: the forecast is alike on every rank)
  out[6] = plan->setup_stats().time("auto.tune.cost"), out[7] = plan->setup_stats().time("auto.tune.gain");
  return compare(g, want, ghosts).allreduce(comm).ok(0.0);
}

/// Collective. Settings::solve's two solves, tuned first, into ev.solve.
void solve(MPI_Comm comm, const Settings& st, const DistCsr<double>& a, const Pattern& pat, const std::string& best,
           Evaluated& ev) {
  std::vector<double> x(static_cast<size_t>(a.local_cols()) + 1), g(static_cast<size_t>(a.num_ghosts()) + 1);
  for (int32_t i = 0; i < a.local_cols(); ++i) x[i] = static_cast<double>(a.col_begin() + i + 1);
  std::vector<double> want(g.size());
  for (int32_t k = 0; k < a.num_ghosts(); ++k) want[k] = static_cast<double>(a.ghost_ids()[k] + 1);
  double t[8], b[8];
  if (!time_solve(comm, st, pat, true, "", x.data(), g.data(), want.data(), a.num_ghosts(), t))
    ev.wrong.push_back("solve with auto:tune");
  if (!time_solve(comm, st, pat, false, best, x.data(), g.data(), want.data(), a.num_ghosts(), b))
    ev.wrong.push_back("solve with " + best);
  ev.solve = Solve{t[2], b[2], t[0], b[0], t[1], t[3], t[4], t[5] > 0, t[6], t[7]};
}

void append_json(apps::JsonLines& js, MPI_Comm comm, const Settings& st, const std::string& name, const Evaluated& ev,
                 const std::string& chosen, const std::string& raced) {
  for (const auto& [b, v] : ev.measured) {
    apps::Json j = apps::json_record("autoeval");
    j["label"] = st.label;
    j["matrix"] = name;
    j["ranks"] = comm_size(comm);
    j["regions"] = st.loc.describe();
    j["backend"] = b;
    j["measured_s"] = v.median;
    j["predicted_s"] = ev.predicted.at(b);
    j["spread"] = v.spread;
    j["rounds_s"] = v.rounds;
    j["auto"] = chosen;
    if (!raced.empty()) j["auto_race"] = raced;
    if (!ev.tuned_pick.empty()) j["auto_tune"] = ev.tuned_pick, j["auto_tune_s"] = ev.tuned.median;
    j["load"] = ev.load.at(b);
    j["rank_terms"] = ev.terms.at(b);
    js.write(j);
  }
}

// The tallies over the matrices.
struct Tally {
  apps::Table t{{"matrix", "auto picks", "regret", "p2p/best", "best", "pred. error (max |log ratio| over backends)",
                 "raced picks", "regret"}};
  apps::Table tuned{{"matrix", "tuned picks", "tuned/best", "best"}};
  apps::Table tuning{{"matrix", "candidates: tuning's median us", "winner", "fastest of them", "winner/fastest",
                      "best", "winner/best", "A/A", "solve tuned/best", "measuring", "their set-ups ms"}};
  int within10 = 0, never_worse = 0, cases = 0, race_within10 = 0, tuned_within5 = 0;
  int winner_fastest = 0, solve_within3 = 0, solves = 0;
  double tuned_worst = 0, winner_worst = 1, aa_worst = 1, solve_worst = 0;
  std::vector<std::string> wrong;  // "matrix: backend" whose exchange delivered wrong values
};

// auto with tune=measure against the best backend: paired ratio to each (the largest), so
// below 1 where it beat every backend in the same rounds.
void tally_tuned(Tally& tally, const std::string& name, Evaluated& ev, const std::string& best) {
  double ratio = 0;
  for (const auto& [b, r] : ev.measured) ratio = std::max(ratio, apps::paired_ratio(ev.tuned, r));
  tally.tuned_within5 += ratio <= 1.05;
  tally.tuned_worst = std::max(tally.tuned_worst, ratio);
  tally.tuned.add({name, ev.tuned_pick.empty() ? "(not settled)" : ev.tuned_pick, apps::num("%.2f", ratio), best});
}

// Tuning's pick against the rounds' truth: the candidates it measured (its statistics'
// medians) and the fastest of them in the rounds; the A/A pair (Settings::aa); the solve
// (Settings::solve). Fills a JSON record for experiments/tune.
void tally_tuning(Tally& tally, const Settings& st, const std::string& name, const Evaluated& ev,
                  const std::string& best, apps::Json& rec) {
  std::string cands, fastest;
  // What tuning spent: in the solve where there is one (its plan was built alone, from scratch).
  auto [extra_setup, measuring] = tuning_cost(ev.tune_stats, ev.tuned_pick);
  if (st.solve > 0) extra_setup = ev.solve.extra_setup, measuring = ev.solve.measuring;
  for (const auto& [k, v] : ev.tune_stats) {
    if (k.rfind("auto.tune.median.", 0) == 0) {
      const std::string b = k.substr(17);
      cands += (cands.empty() ? "" : " ") + b + " " + apps::num("%.1f", v * 1e6);
      rec["tuning_median_s"][b] = v;
      if (fastest.empty() || ev.measured.at(b).median < ev.measured.at(fastest).median) fastest = b;
    } else if (k.rfind("auto.tune.setup.", 0) == 0) {
      rec["setup_s"][k.substr(16)] = v;
    } else if (k.rfind("auto.tune.dropped.", 0) == 0) {
      cands += " " + k.substr(18) + " dropped";
    }
  }
  const std::string& w = ev.tuned_pick;
  const double to_fastest = w.empty() ? 0 : apps::paired_ratio(ev.measured.at(w), ev.measured.at(fastest));
  const double to_best = w.empty() ? 0 : apps::paired_ratio(ev.measured.at(w), ev.measured.at(best));
  tally.winner_fastest += !w.empty() && to_fastest <= 1.0;
  tally.winner_worst = std::max(tally.winner_worst, w.empty() ? HUGE_VAL : to_fastest);
  const double aa = st.aa.empty() ? 0 : apps::paired_ratio(ev.aa, ev.measured.at(st.aa));
  if (!st.aa.empty()) tally.aa_worst = std::max({tally.aa_worst, aa, 1 / aa});
  const double solve = st.solve > 0 ? ev.solve.tuned / ev.solve.best : 0;
  if (st.solve > 0) {
    ++tally.solves, tally.solve_within3 += solve <= 1.03;
    tally.solve_worst = std::max(tally.solve_worst, solve);
  }
  tally.tuning.add({name, cands, w.empty() ? "(not settled)" : w, fastest, apps::num("%.3f", to_fastest), best,
                    apps::num("%.3f", to_best), st.aa.empty() ? "-" : apps::num("%.3f", aa),
                    st.solve > 0 ? apps::num("%.3f", solve) : "-", apps::num("%.0f", measuring),
                    apps::num("%.3f", extra_setup * 1e3)});
  rec["matrix"] = name, rec["winner"] = w, rec["fastest_candidate"] = fastest, rec["best"] = best;
  rec["winner_to_fastest"] = to_fastest, rec["winner_to_best"] = to_best, rec["measuring_exchanges"] = measuring;
  rec["extra_setup_s"] = extra_setup;
  for (const auto& [b, v] : ev.measured) rec["measured_s"][b] = v.median;
  if (!st.aa.empty()) rec["aa_backend"] = st.aa, rec["aa_ratio"] = aa;
  if (st.solve > 0)
    rec["solve"] = {{"exchanges", st.solve},     {"tuned_s", ev.solve.tuned},         {"best_s", ev.solve.best},
                    {"tuned_setup_s", ev.solve.tuned_setup}, {"best_setup_s", ev.solve.best_setup},
                    {"tuning_s", ev.solve.tuning},          {"tuning_started", ev.solve.started},
                    {"forecast_cost_s", ev.solve.cost},     {"forecast_gain_s", ev.solve.gain}};
}

/// Collective. One matrix: every backend evaluated, auto's choice and its regret.
void run_matrix(MPI_Comm comm, const Settings& st, const std::string& m, size_t nmats, double t_start, Tally& tally,
                apps::JsonLines* js) {
  const int rank = comm_rank(comm);
  const double t_matrix = MPI_Wtime();
  DistCsr<double> a = m.rfind("gen:", 0) == 0 ? gen::from_spec(comm, m.substr(4)) : read_matrix_market(comm, find_matrix(m));
  Sdde sdde(comm, st.loc);
  Pattern pat = pattern_from_matrix(a, sdde, "nbx");
  Evaluated ev = evaluate(comm, st, a, pat);
  PlanOptions po;
  if (!st.model_file.empty()) po.backend.set("model", st.model_file);
  auto chosen = make_plan("auto", pat, st.loc, comm, po);
  std::string raced;  // auto's pick with the race (its own measurement at setup, not these rounds)
  if (st.race > 0) {
    po.backend.set("race", st.race);
    raced = make_plan("auto", pat, st.loc, comm, po)->name();
  }
  auto& measured = ev.measured;
  std::string best;
  for (const auto& [b, v] : measured)
    if (best.empty() || v.median < measured[best].median) best = b;
  if (st.tune && st.solve > 0) solve(comm, st, a, pat, best, ev);
  for (const auto& b : ev.wrong) {
    if (rank == 0) std::cerr << "autoeval: " << m << ": backend " << b << " delivered wrong ghost values\n";
    tally.wrong.push_back(m + ": " + b);
  }
  double err = 0;
  for (const auto& [b, v] : measured) err = std::max(err, std::abs(std::log(ev.predicted[b] / v.median)));
  // Regret, paired (apps::paired_ratio): auto's pick against each backend round by round,
  // median over rounds, the largest over backends (1 where the pick is itself the best).
  const apps::RoundStats& pick = measured[chosen->name()];
  double regret = 1;
  for (const auto& [b, r] : measured) regret = std::max(regret, apps::paired_ratio(pick, r));
  double race_regret = 1;
  if (!raced.empty())
    for (const auto& [b, r] : measured) race_regret = std::max(race_regret, apps::paired_ratio(measured[raced], r));
  tally.race_within10 += !raced.empty() && race_regret <= 1.10;
  if (st.tune) {
    apps::Json rec = apps::json_record("autoeval_tune");
    rec["label"] = st.label, rec["ranks"] = comm_size(comm), rec["regions"] = st.loc.describe();
    tally_tuned(tally, m.substr(m.find_last_of('/') + 1), ev, best);
    tally_tuning(tally, st, m.substr(m.find_last_of('/') + 1), ev, best, rec);
    if (js) js->write(rec);
  }
  ++tally.cases;
  tally.within10 += regret <= 1.10;
  tally.never_worse += apps::paired_ratio(pick, measured["p2p"]) <= 1.10;
  const std::string name = m.substr(m.find_last_of('/') + 1);
  if (rank == 0)
    std::cerr << "autoeval: [" << tally.cases << "/" << nmats << "] " << name << ": auto " << chosen->name() << ", regret "
              << apps::num("%.2f", regret) << " (" << apps::num("%.1f", MPI_Wtime() - t_matrix) << " s, "
              << apps::num("%.0f", MPI_Wtime() - t_start) << " s in all)" << std::endl;
  tally.t.add({name, chosen->name(), apps::num("%.2f", regret), apps::num("%.2f", measured["p2p"].median / measured[best].median), best,
               apps::num("%.2f", err), raced.empty() ? "-" : raced, raced.empty() ? "-" : apps::num("%.2f", race_regret)});
  if (js) append_json(*js, comm, st, name, ev, chosen->name(), raced);
}

/// Collective (Locality::parse, the model). The settings autoeval's options ask for.
Settings settings(MPI_Comm comm, const apps::Options& o) {
  Settings st;
  st.loc = Locality::parse(comm, o.get("regions"));
  st.model_file = o.get("model");
  st.model = ModelParams::resolve(comm, st.loc, st.model_file);  // what auto itself uses
  st.rounds = o.get_count("rounds");
  if (st.rounds < 1 || o.get_count("reps") < st.rounds)
    throw InputError("autoeval: need --rounds >= 1 and --reps >= --rounds");
  st.per_round = o.get_count("reps") / st.rounds;
  st.label = o.get("label"), st.json = o.get("json");
  st.race = o.get_count64("race", 0);
  if (o.get("tune") != "model" && o.get("tune") != "measure")
    throw InputError("autoeval: --tune is model or measure, not '" + o.get("tune") + "'");
  st.tune = o.get("tune") == "measure";
  st.aa = o.get("aa"), st.solve = o.get_count64("solve", 0);
  const auto names = backend_names();
  if (!st.aa.empty() && (std::find(names.begin(), names.end(), st.aa) == names.end() ||
                         backend_hooks(st.aa).chooses_among_others))
    throw InputError("autoeval: --aa names a backend that autoeval times (not auto), not '" + st.aa + "'");
  if ((st.solve > 0 || !st.aa.empty()) && !st.tune) throw InputError("autoeval: --aa and --solve need --tune measure");
  st.exact = o.flag("exact");
  if (st.exact && st.aa.empty()) throw InputError("autoeval: --exact needs --tune measure and --aa");
  return st;
}

}  // namespace

namespace sparsecomm::apps {

int autoeval_main(int argc, char** argv) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = comm_rank(comm);
  apps::Options o(
      apps::with_common({"regions", "reps", "rounds", "json"},
                        {{"matrices", {"all", "names/paths/generator specs (gen:...) separated by ',' (or by ';' or "
                                              "spaces when a spec has commas); 'all' = every shared matrix and "
                                              "gen:rotate:256,256"}},
                         apps::resolved_model_option(),
                         {"race", {"0", "also run auto with its option race = N (timing the close candidates at "
                                        "setup) and judge its picks alike; 0: auto as configured"}},
                         {"tune", {"model", "measure: also time auto with tune=measure in the same rounds as "
                                            "every backend (its measuring exchanges included) and print its "
                                            "ratio to the best"}},
                         {"aa", {"", "a backend timed twice in the same rounds (a second, identical plan): the "
                                     "A/A noise floor, printed with --tune measure"}},
                         {"solve", {"0", "with --tune measure: also time a solve of N exchanges from a fresh "
                                         "set-up, auto with tune=measure (iterations=N) against the best backend"}},
                         {"exact", {"", "[flag] with --tune measure and --aa, for a deterministic simulator "
                                        "(SMPI): exit 3 unless every A/A pair times exactly alike"}},
                         {"label", {"", "name of this setting in the JSON lines (e.g. node, cluster)"}}},
                        {{"reps", "200"}}),
      "usage: mpirun -np P sparsecomm autoeval [options]\n"
      "Progress goes to stderr (one line per matrix); experiments/auto/run.sh runs the whole evaluation.\n"
      "example: mpirun -np 8 sparsecomm autoeval --matrices HB/bcsstk13,AMD/G2_circuit --regions ppn:4 --reps 100");
  if (!apps::parse_or_help(comm, o, argc, argv)) return 0;
  const std::vector<std::string> mats = matrix_list(o.get("matrices"));
  const Settings st = settings(comm, o);
  Tally tally;
  const double t_start = MPI_Wtime();
  const auto js = apps::open_json_lines(comm, st.json);
  for (const auto& m : mats) run_matrix(comm, st, m, mats.size(), t_start, tally, js.get());
  if (rank == 0)
    std::cout << "sparsecomm auto evaluation: " << comm_size(comm) << " ranks, regions " << st.loc.describe()
              << "\nmodel: " << st.model.describe() << "\nregret = measured time of auto's choice / best measured "
              << "backend (same run; per round, median over rounds)\n\n"
              << tally.t.str() << "\nauto within 10% of the best: " << tally.within10 << "/" << tally.cases
              << "; auto at most 10% slower than always-p2p: " << tally.never_worse << "/" << tally.cases << "\n";
  if (rank == 0 && st.race > 0)
    std::cout << "auto with race=" << st.race << " within 10% of the best: " << tally.race_within10 << "/" << tally.cases
              << "\n";
  if (rank == 0 && st.tune)
    std::cout << "\nauto with tune=measure, timed in the same rounds (tuned/best: paired ratio to the best backend, "
              << "its measuring exchanges included)\n"
              << tally.tuned.str() << "auto tune=measure within 5% of the best: " << tally.tuned_within5 << "/"
              << tally.cases << "; worst " << apps::num("%.2f", tally.tuned_worst) << "\n"
              << "\ntuning's winner against the candidates it measured (winner/fastest: paired ratio in the rounds; "
              << "A/A: --aa's twin against it; solve: --solve exchanges from set-up, tuned / best backend)\n"
              << tally.tuning.str() << "winner the fastest of its candidates: " << tally.winner_fastest << "/"
              << tally.cases << "; worst winner/fastest " << apps::num("%.3f", tally.winner_worst)
              << "; A/A worst " << (st.aa.empty() ? "-" : apps::num("%.3f", tally.aa_worst)) << "; solve within 3%: "
              << tally.solve_within3 << "/" << tally.solves << ", worst "
              << (tally.solves ? apps::num("%.3f", tally.solve_worst) : "-") << "\n";
  if (!tally.wrong.empty()) {
    if (rank == 0) {
      std::cout << "VERIFICATION FAILED: wrong ghost values from";
      for (const auto& w : tally.wrong) std::cout << " [" << w << "]";
      std::cout << "\n";
    }
    return 3;
  }
  if (rank == 0) std::cout << "every backend's exchange verified\n";
  // (the tallies are alike on every rank: each time is the max over ranks, the stats agreed)
  // Whether the winners are the fastest is reported, not required: tuning's timing has a floor
  // (experiments/tune/README.md) under which it cannot rank candidates.
  if (st.exact && tally.aa_worst != 1.0) {
    if (rank == 0) std::cout << "NOT EXACT: A/A worst " << apps::num("%.6f", tally.aa_worst) << "\n";
    return 3;
  }
  return 0;
}

}  // namespace sparsecomm::apps
