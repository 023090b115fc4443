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

#include "sparsecomm/kernels/halo_pattern.hpp"
#include "sparsecomm/comm/plan/model.hpp"
#include "core/compare.hpp"
#include "common/app_main.hpp"
#include "common/cli.hpp"
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
std::string load_json(const Plan& plan, MPI_Comm comm) {
  const RankLoad l = rank_load(plan);
  const std::vector<double> v = {l.msgs_intra, l.msgs_inter, l.bytes_intra, l.bytes_inter, l.copy_bytes};
  const char* names[] = {"msgs_intra", "msgs_inter", "bytes_intra", "bytes_inter", "copy_bytes"};
  std::vector<double> region(v.size()), region_max(v.size());
  SPC_MPI(MPI_Allreduce(v.data(), region.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_SUM,
                        plan.locality().local_comm()));
  SPC_MPI(MPI_Allreduce(region.data(), region_max.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_MAX, comm));
  const std::vector<Reduced> r = reduce_all(comm, v);
  std::ostringstream os;
  os.precision(8);
  os << "{\"stages\":" << allreduce_max(comm, static_cast<int64_t>(plan.stages()))
     << ",\"inter_steps\":" << allreduce_max(comm, inter_steps(plan.iteration_counts()));
  for (size_t i = 0; i < v.size(); ++i)
    os << ",\"" << names[i] << "\":[" << r[i].max << "," << region_max[i] << "," << r[i].sum << "]";
  os << "}";
  return os.str();
}

}  // namespace

namespace sparsecomm::apps {

int autoeval_main(int argc, char** argv) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = comm_rank(comm);
  apps::Options o({{"matrices", {"all", "names/paths/generator specs (gen:...) separated by ',' (or by ';' or spaces when a spec has commas); 'all' = every shared matrix and gen:rotate:256,256"}},
                   {"regions", {"node", "region layout"}},
                   {"model", {"", "model parameter file (default: $SPARSECOMM_MODEL or built-in)"}},
                   {"reps", {"200", "exchanges timed per backend (split over the rounds)"}},
                   {"rounds", {"5", "interleaved rounds: each times every backend once; median over rounds"}},
                   {"label", {"", "name of this setting in the JSON lines (e.g. node, cluster)"}},
                   {"json", {"", "append JSON lines"}}},
                  "usage: mpirun -np P sparsecomm_autoeval [options]\n"
                  "Progress goes to stderr (one line per matrix); experiments/auto/run.sh runs the whole evaluation.\n"
                  "example: mpirun -np 8 sparsecomm autoeval --matrices HB/bcsstk13,AMD/G2_circuit --regions ppn:4 --reps 100");
  if (!o.parse(argc, argv)) {
    if (rank == 0) std::cout << o.help();
    return 0;
  }
  std::vector<std::string> mats;
  const std::string list = o.get("matrices");
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
  Locality loc = Locality::parse(comm, o.get("regions"));
  const ModelParams model = agreed(comm, [&] { return ModelParams::load(o.get("model")); });
  apps::Table t({"matrix", "auto picks", "regret", "p2p/best", "best", "pred. error (max |log ratio| over backends)"});
  int within10 = 0, never_worse = 0, cases = 0;
  std::vector<std::string> wrong;  // "matrix: backend" whose exchange delivered wrong values
  const int rounds = o.get_count("rounds");
  if (rounds < 1 || o.get_count("reps") < rounds) throw InputError("autoeval: need --rounds >= 1 and --reps >= --rounds");
  const int per_round = o.get_count("reps") / rounds;
  const double t_start = MPI_Wtime();
  for (const auto& m : mats) {
    const double t_matrix = MPI_Wtime();
    DistCsr<double> a = m.rfind("gen:", 0) == 0 ? gen::from_spec(comm, m.substr(4)) : read_matrix_market(comm, find_matrix(m));
    Sdde sdde(comm, loc);
    Pattern pat = pattern_from_matrix(a, sdde, "nbx");
    std::map<std::string, double> measured, predicted;
    std::map<std::string, std::string> load;
    // x_j = j + 1 (global column id j): every exchanged ghost is checked against the value
    // its id implies before the timing, so a backend that moves wrong values cannot rank.
    std::vector<double> x(static_cast<size_t>(a.local_cols()) + 1), g(static_cast<size_t>(a.num_ghosts()) + 1);
    for (int32_t i = 0; i < a.local_cols(); ++i) x[i] = static_cast<double>(a.col_begin() + i + 1);
    std::vector<double> want(g.size());
    for (int32_t k = 0; k < a.num_ghosts(); ++k) want[k] = static_cast<double>(a.ghost_ids()[k] + 1);
    // Every backend's plan first, then the timings in interleaved rounds
    // (apps::interleaved_rounds): a backend's time is its median over the rounds.
    std::map<std::string, std::unique_ptr<Plan>> plans;
    for (const auto& b : backend_names()) {
      if (backend_hooks(b).chooses_among_others) continue;  // auto itself: measured below
      plans[b] = make_plan(b, pat, loc, comm);
      plans[b]->exchange(x.data(), g.data());
      if (!compare(g.data(), want.data(), a.num_ghosts()).allreduce(comm).ok(0.0)) {
        if (rank == 0) std::cerr << "autoeval: " << m << ": backend " << b << " delivered wrong ghost values\n";
        wrong.push_back(m + ": " + b);
      }
      predicted[b] = predict_iteration(*plans[b], model, comm);
      load[b] = load_json(*plans[b], comm);
    }
    std::vector<std::string> order;
    for (const auto& [b, plan] : plans) order.push_back(b);
    const auto times = apps::interleaved_rounds(order.size(), rounds, [&](size_t i) {
      Plan& plan = *plans[order[i]];
      return apps::time_per_call(comm, per_round, [&] { plan.exchange(x.data(), g.data()); });
    });
    std::map<std::string, double> spread;
    for (size_t i = 0; i < order.size(); ++i) measured[order[i]] = times[i].median, spread[order[i]] = times[i].spread;
    plans.clear();
    PlanOptions po;
    if (!o.get("model").empty()) po.backend.set("model", o.get("model"));
    auto chosen = make_plan("auto", pat, loc, comm, po);
    std::string best;
    for (const auto& [b, v] : measured)
      if (best.empty() || v < measured[best]) best = b;
    double err = 0;
    for (const auto& [b, v] : measured) err = std::max(err, std::abs(std::log(predicted[b] / v)));
    const double regret = measured[chosen->name()] / measured[best];
    ++cases;
    within10 += regret <= 1.10;
    never_worse += measured[chosen->name()] <= measured["p2p"] * 1.10;
    const std::string name = m.substr(m.find_last_of('/') + 1);
    if (rank == 0)
      std::cerr << "autoeval: [" << cases << "/" << mats.size() << "] " << name << ": auto " << chosen->name()
                << ", regret " << apps::num("%.2f", regret) << " (" << apps::num("%.1f", MPI_Wtime() - t_matrix)
                << " s, " << apps::num("%.0f", MPI_Wtime() - t_start) << " s in all)" << std::endl;
    t.add({name, chosen->name(), apps::num("%.2f", regret), apps::num("%.2f", measured["p2p"] / measured[best]), best,
           apps::num("%.2f", err)});
    if (rank == 0 && !o.get("json").empty()) {
      std::ofstream js(o.get("json"), std::ios::app);
      for (const auto& [b, v] : measured)
        js << "{\"bench\":\"autoeval\",\"label\":\"" << apps::json_escape(o.get("label")) << "\",\"matrix\":\""
           << apps::json_escape(name) << "\",\"ranks\":" << comm_size(comm)
           << ",\"regions\":\"" << loc.describe() << "\",\"backend\":\"" << b << "\",\"measured_s\":" << v
           << ",\"predicted_s\":" << predicted[b] << ",\"spread\":" << spread[b] << ",\"auto\":\"" << chosen->name()
           << "\",\"load\":" << load[b] << "}\n";
    }
  }
  if (rank == 0)
    std::cout << "sparsecomm auto evaluation: " << comm_size(comm) << " ranks, regions " << loc.describe()
              << "\nmodel: " << model.describe() << "\nregret = measured time of auto's choice / best measured "
              << "backend (same run)\n\n"
              << t.str() << "\nauto within 10% of the best: " << within10 << "/" << cases
              << "; auto at most 10% slower than always-p2p: " << never_worse << "/" << cases << "\n";
  if (!wrong.empty()) {
    if (rank == 0) {
      std::cout << "VERIFICATION FAILED: wrong ghost values from";
      for (const auto& w : wrong) std::cout << " [" << w << "]";
      std::cout << "\n";
    }
    return 3;
  }
  if (rank == 0) std::cout << "every backend's exchange verified\n";
  return 0;
}

}  // namespace sparsecomm::apps
