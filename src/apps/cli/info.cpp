// sparsecomm info: what the halo exchange of a matrix looks like on P ranks and a region
// layout, and what the performance model predicts for every backend (auto's choice).
#include <algorithm>
#include <iostream>
#include <map>
#include <vector>

#include "sparsecomm/kernels/halo_pattern.hpp"
#include "common/load.hpp"
#include "sparsecomm/comm/combining.hpp"
#include "sparsecomm/comm/plan/model.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "common/app_main.hpp"
#include "common/cli.hpp"
#include "common/options.hpp"
#include "common/table.hpp"

namespace sparsecomm::apps {

// auto's setup against the setup of the backend it picked, alike: each first on a fresh
// duplicate of the communicator (first use: the model, the node communicator, the library's
// duplicate) and then again on the same one (what every later plan on it pays). Wall time
// from a barrier to the slowest rank's return, median of 9 alternating rounds.
constexpr int kRounds = 9;
void compare_setup(const Pattern& pat, const Locality& loc, MPI_Comm comm, const PlanOptions& po,
                   const std::string& pick) {
  PlanOptions pick_po;  // the pick with its defaults (auto's own options are not its)
  pick_po.sdde = po.sdde;
  // auto's parts (rank 0's): model (its agreement), the region's summaries, counting (builds and reductions).
  const char* parts[3] = {"auto.choose.model", "auto.choose.gather", "auto.choose.count"};
  std::vector<double> part[2][3];  // [first, later][part]
  auto timed = [&](const std::string& backend, MPI_Comm c, int at) {
    MPI_Barrier(c);
    const double t0 = MPI_Wtime();
    auto plan = make_plan(backend, pat, loc, c, backend == "auto" ? po : pick_po);
    const double t = allreduce_max(c, MPI_Wtime() - t0);
    if (backend == "auto")
      for (int i = 0; i < 3; ++i) part[at][i].push_back(plan->setup_stats().time(parts[i]));
    return t;
  };
  std::vector<double> t[4];  // auto first, pick first, auto later, pick later
  for (int round = 0; round < kRounds; ++round) {
    Comm ca(comm), cp(comm);
    t[0].push_back(timed("auto", ca.get(), 0)), t[1].push_back(timed(pick, cp.get(), 0));
    t[2].push_back(timed("auto", ca.get(), 1)), t[3].push_back(timed(pick, cp.get(), 1));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  double med[4];
  for (int i = 0; i < 4; ++i) med[i] = median(t[i]);
  if (comm_rank(comm) != 0) return;
  auto pair = [&](int a, int b) {  // "A / B ms = Rx"
    return num("%.2f", med[a] * 1e3) + " / " + num("%.2f", med[b] * 1e3) + " ms = " + num("%.2f", med[a] / med[b]) + "x";
  };
  std::cout << "setup, auto / " << pick << " (median of " << kRounds << "): first plan on a communicator "
            << pair(0, 1) << "; later plans " << pair(2, 3) << "\n";
  for (int at = 0; at < 2; ++at)
    std::cout << "  auto choosing, " << (at ? "later" : "first") << " plans (rank 0, median): model "
              << num("%.2f", median(part[at][0]) * 1e3) << ", region summaries " << num("%.2f", median(part[at][1]) * 1e3)
              << ", counting and broadcast " << num("%.2f", median(part[at][2]) * 1e3) << " ms\n";
}

// tune=measure: runs the tuned plan's exchanges until every rank has settled (the same
// exchange on every rank: the decision is collective) and prints what it tried, what each
// candidate measured, what tuning cost and the winner beside the model's choice. Returns the
// winner's name.
std::string print_tuning(Plan& chosen, MPI_Comm comm) {
  auto under = [&](const std::string& prefix) {
    std::map<std::string, double> out;
    for (const auto& [k, v] : chosen.setup_stats().timers())
      if (k.rfind(prefix, 0) == 0) out[k.substr(prefix.size())] = v;
    return out;
  };
  for (int i = 0; i < 100000 && under("auto.tune.winner.").empty(); ++i) chosen.start(), chosen.wait();
  const auto winner = under("auto.tune.winner."), medians = under("auto.tune.median."), setup = under("auto.tune.setup.");
  const auto predicted = under("auto.predict."), dropped = under("auto.tune.dropped.");
  if (winner.empty()) throw Error("info: the tuned plan did not settle");
  const auto modeled = under("auto.tune.model.");  // the model's own choice (its tie-break included)
  const std::string model = modeled.empty() ? "?" : modeled.begin()->first;
  double setup_total = 0;
  for (const auto& [b, v] : setup) setup_total += v;
  if (comm_rank(comm) == 0) {
    Table t({"candidate", "predicted us/exchange", "measured us/exchange", "setup ms"});
    for (const auto& [b, v] : setup)
      t.add({b, num("%.2f", predicted.count(b) ? predicted.at(b) * 1e6 : -1),
             medians.count(b) ? num("%.2f", medians.at(b) * 1e6) : "dropped", num("%.2f", v * 1e3)});
    for (const auto& [b, v] : dropped)
      if (!setup.count(b)) t.add({b, "-", "dropped (build)", "-"});
    const std::string& w = winner.begin()->first;
    std::cout << "\ntune=measure (measured: median over " << chosen.setup_stats().time("auto.tune.samples")
              << " rounds of the slowest rank's exchange)\n"
              << t.str() << "tuning chooses: " << w << "; cost: "
              << num("%.0f", chosen.setup_stats().time("auto.tune.exchanges")) << " measuring exchanges and "
              << num("%.2f", setup_total * 1e3) << " ms of candidates' setup; the model chose " << model;
    if (medians.count(model))
      std::cout << ", measured " << num("%.3f", medians.at(model) / winner.begin()->second) << "x the winner";
    std::cout << "\n";
  }
  return winner.begin()->first;
}

// Whether tune=measure started against the caller's expected exchanges (auto's forecast).
void print_forecast(const Plan& chosen, const std::string& iterations) {
  const Stats& s = chosen.setup_stats();
  if (!s.timers().count("auto.tune.cost")) return;
  const bool skipped = s.timers().count("auto.tune.skipped") > 0;  // (a tuning the count would not repay)
  std::cout << "tune=measure " << (skipped ? "not started" : "started") << ": predicted gain "
            << num("%.4f", s.time("auto.tune.gain") * 1e3) << (skipped ? " ms <= cost " : " ms > cost ")
            << num("%.4f", s.time("auto.tune.cost") * 1e3) << " ms over " << iterations << " expected exchanges"
            << (skipped ? "; the model's choice\n" : "\n");
}

int info_main(int argc, char** argv) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = comm_rank(comm), p = comm_size(comm);
  Options o(with_common({"matrix", "gen", "ordering", "regions", "sdde"},
                        {resolved_model_option(),
                         {"iterations", {"0", "expected exchanges, for the setup-inclusive choice"}},
                         {"race", {"0", "exchanges timed per close candidate (auto's option race; 0: the model alone)"}},
                         {"tune", {"model", "auto's option tune: model, or measure (run the exchanges until the ranks settle, print the tuning)"}}}),
            "usage: mpirun -np P sparsecomm info [options]\n"
            "example: mpirun -np 8 sparsecomm info --matrix HB/bcsstk13 --regions ppn:4");
  if (!parse_or_help(comm, o, argc, argv)) return 0;
  auto [label, a, loc] = load_matrix_on_regions(comm, o);
  Sdde sdde(comm, loc);
  Pattern pat = pattern_from_matrix(a, sdde, o.get("sdde"));
  // Per-rank figures of the direct exchange (one double per ghost).
  int64_t mi = 0, me = 0, bi = 0, be = 0;
  for (int i = 0; i < pat.send().num_neighbors(); ++i) {
    const bool intra = loc.same_region(pat.send().ranks[i]);
    (intra ? mi : me) += 1;
    (intra ? bi : be) += 8 * pat.send().count(i);
  }
  auto red = reduce_all(comm, {double(pat.send().num_neighbors()), double(pat.recv().num_neighbors()), double(mi),
                               double(me), double(bi), double(be)});
  // Common neighborhoods: groups the combining pattern finds with default options.
  auto sched = CombiningSchedule::build(comm, Topology::from_pattern(pat), loc, {});
  const int64_t groups = allreduce_sum(comm, sched.groups_led);
  PlanOptions po;
  if (!o.get("model").empty()) po.backend.set("model", o.get("model"));
  const int64_t iterations = o.get_count64("iterations", 0);
  po.backend.set("iterations", iterations);
  po.backend.set("race", o.get_count64("race", 0));
  po.backend.set("tune", o.get("tune"));
  po.sdde = o.get("sdde");
  auto chosen = make_plan("auto", pat, loc, comm, po);
  const ModelParams m = ModelParams::resolve(comm, loc, o.get("model"));  // what auto itself used
  const double auto_setup = allreduce_max(comm, chosen->setup_stats().time("setup.backend"));
  if (rank == 0) {
    std::cout << "matrix " << label << ": " << a.global_rows() << " x " << a.global_cols() << ", " << a.global_nnz()
              << " nonzeros; " << p << " ranks, regions " << loc.describe() << "\n"
              << "duplicate entries: " << a.global_duplicates()
              << " (repeated (row, column) pairs merged into one; a file's are summed)\n\n";
    Table t({"per rank", "max", "mean", "total"});
    const char* names[] = {"send neighbors", "receive neighbors", "intra-region messages", "inter-region messages",
                           "intra-region bytes", "inter-region bytes"};
    for (int i = 0; i < 6; ++i)
      t.add({names[i], num("%.0f", red[i].max), num("%.1f", red[i].sum / p), num("%.0f", red[i].sum)});
    std::cout << t.str() << "\ncommon neighborhoods: " << groups << " groups of >= 2 ranks sharing >= 4 destinations "
              << "(pairs)\nmodel: " << m.describe() << "\n\n";
    Table pr({"backend", "predicted us/exchange", "setup ms (measured)", "raced us/exchange"});
    const auto& timers = chosen->setup_stats().timers();
    for (const auto& [k, v] : timers)
      if (k.rfind("auto.predict.", 0) == 0) {
        const std::string b = k.substr(13);
        const bool built = timers.count("auto.setup." + b) > 0, raced = timers.count("auto.race." + b) > 0;
        pr.add({b, num("%.2f", v * 1e6), built ? num("%.2f", chosen->setup_stats().time("auto.setup." + b) * 1e3) : "-",
                raced ? num("%.2f", chosen->setup_stats().time("auto.race." + b) * 1e6) : "-"});
      }
    std::cout << pr.str() << "setup: '-' where auto predicted from the counts without building the plan; raced: "
              << "measured at setup (max over ranks, median of rounds), '-' where not in the race; "
              << "auto's own setup " << num("%.2f", auto_setup * 1e3)
              << " ms (choosing " << num("%.2f", chosen->setup_stats().time("auto.choose") * 1e3) << " ms: model "
              << num("%.2f", chosen->setup_stats().time("auto.choose.model") * 1e3) << ", region summaries "
              << num("%.2f", chosen->setup_stats().time("auto.choose.gather") * 1e3) << ", counting "
              << num("%.2f", chosen->setup_stats().time("auto.choose.count") * 1e3) << " and reductions)\n"
              << "auto chooses: " << chosen->name()
              << (iterations > 0 && o.get("tune") != "measure" ? " (setup + " + o.get("iterations") + " exchanges)"
                                                                : " (per exchange)")
              << "\n";
    print_forecast(*chosen, o.get("iterations"));
  }
  const std::string pick = chosen->name() == "auto" ? print_tuning(*chosen, comm) : chosen->name();
  chosen.reset();
  compare_setup(pat, loc, comm, po, pick);
  return 0;
}

}  // namespace sparsecomm::apps
