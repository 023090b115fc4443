// sparsecomm_nbrbench: the topology microbenchmark of the message-combining papers
// (Mirsadeghi, Träff, Balaji and Afsahi, HiPC 2017, and its k-group follow-up): an
// allgather-shaped neighborhood exchange (MPI_Neighbor_allgather semantics) over random
// Erdős–Rényi graphs and Moore neighborhoods, for every GatherPlan backend.
//
// Per topology and message size: `neighbor` (MPI's Ineighbor_allgatherv, the baseline,
// measured in the same run), every other registered backend, and `combined` for each
// group size k x {topology-agnostic, topology-aware}. Reported per variant:
//   latency   time per exchange (start+wait). The variants are timed in --rounds rounds,
//             interleaved (every variant once per round, reps/rounds exchanges each through
//             apps::time_per_call: barrier before each batch, per batch the max over ranks,
//             median of the batches); the latency is the median over the rounds, with the
//             best and worst round next to it, and the mean over ranks of each rank's median
//             per-call time (no barrier between calls);
//   speedup   neighbor latency / variant latency (>1: faster than neighbor);
//   stages    communication stages one after the other (max over ranks);
//   messages  sent per rank and exchange (max and mean over ranks; from the plan's
//             deterministic counts: stage 1 + stage 2 for combined);
//   groups    combining groups found (sum over ranks of the groups each rank leads);
//   setup     phase 1 (combining pattern) and phase 2 (schedule on the buffers), max over ranks.
//             With --phase1 exact, phase 1 is not run: rank 0 computes every rank's pattern
//             with the exact model of plan-stats (virt::combining_schedules, tested equal to
//             the distributed phase 1) and scatters it; the plans check it against their
//             topology. For simulations at scales where phase 1's own messages cost too much
//             host time (ER at 4,096 SMPI ranks); ph1 then reads "exact".
// Every plan is verified twice (before and after the timed exchanges; --verify once: before
// only, for long simulations): each rank's block is filled with bytes derived from its rank,
// and every received block must match its source.
// The exit code is 3 if any verification failed.
//
//   mpirun -np 32 sparsecomm_nbrbench --topos "moore:2,3;er:0.2" --sizes 4 --json nbr.jsonl
//   mpirun -np 8 sparsecomm_nbrbench --topos "moore:2,1;er:0.5" --sizes 4,256 --k 2,3 --reps 5
//
// --topos takes topology specs separated by ';' or spaces (a spec itself contains commas:
// "moore:<dims>,<radius>", "er:<density>[,<seed>]"); quote the list in the shell.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/plan/combining_options.hpp"
#include "sparsecomm/comm/virt/plan_stats.hpp"
#include "common/app_main.hpp"
#include "common/cli.hpp"
#include "common/provenance.hpp"
#include "common/options.hpp"
#include "common/table.hpp"
#include "common/timing.hpp"

using namespace sparsecomm;

namespace {

/// One measured configuration.
struct Variant {
  std::string backend;
  int k = 0;           ///< > 0: a combining variant (a backend with combining_options), group size k
  bool aware = false;  ///< combining variants only
  std::string label() const {
    if (k == 0) return backend;
    return backend + " k=" + std::to_string(k) + (aware ? " aware" : " agnostic");
  }
};

struct Result {
  Variant v;
  int64_t size = 0;
  double lat_max = 0, lat_best = 0, lat_worst = 0, lat_mean = 0;  // seconds
  double stages = 0, msgs_max = 0, msgs_mean = 0, msgs_inter_max = 0, msgs_inter_mean = 0, bytes_max = 0;
  double groups = 0, phase1 = 0, phase2 = 0, setup_backend = 0;
  bool verified = false;
};

/// The byte pattern of rank r's block, position b, in verification round `round`.
char pattern_byte(int r, int64_t b, int round) {
  uint64_t x = (static_cast<uint64_t>(r) * 0x9e3779b97f4a7c15ull) ^ (static_cast<uint64_t>(b) * 0xbf58476d1ce4e5b9ull) ^
               (static_cast<uint64_t>(round + 1) * 0x94d049bb133111ebull);
  x ^= x >> 31;
  return static_cast<char>(x & 0xff);
}

/// Collective. Exchanges once with round-specific bytes and checks every received block.
bool verify(GatherPlan& plan, int me, int round) {
  const int64_t n = plan.my_count();
  std::vector<char> block(static_cast<size_t>(n)), recv(static_cast<size_t>(plan.recv_total()), 0);
  for (int64_t b = 0; b < n; ++b) block[b] = pattern_byte(me, b, round);
  plan.exchange(block.data(), recv.data());
  bool ok = plan.recv_counts().size() == plan.topology().sources.size();
  for (size_t i = 0; ok && i < plan.topology().sources.size(); ++i) {
    const int s = plan.topology().sources[i];
    if (plan.recv_counts()[i] != n) ok = false;  // every rank sends the same size here
    for (int64_t b = 0; ok && b < n; ++b)
      if (recv[plan.recv_offsets()[i] + b] != pattern_byte(s, b, round)) ok = false;
  }
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all != 0;
}

/// Progress on rank 0 for long (simulated) runs: a line for each step that took more than
/// 20 s of host time. Host time (steady_clock), not MPI_Wtime, which is simulated under SMPI.
class Progress {
 public:
  explicit Progress(std::string what) : what_(std::move(what)), last_(now()) {}
  void step(const std::string& done) {
    const double t = now();
    if (t - last_ > 20 && comm_rank(MPI_COMM_WORLD) == 0)
      std::cerr << "nbrbench: " << what_ << ": " << done << " (" << apps::num("%.0f", t - last_) << " s host)\n";
    last_ = t;
  }

 private:
  static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  std::string what_;
  double last_;
};

/// Measures every variant at one message size. All plans are built (and verified) first;
/// the timed exchanges then run in `rounds` interleaved rounds (variant after variant, each
/// round reps/rounds exchanges through apps::time_per_call), and a variant's latency is the
/// median over the rounds. On an oversubscribed machine the ranks fall in and out of slow
/// scheduling phases lasting many exchanges; interleaving spreads them over every variant
/// instead of charging them to whichever variant happened to run then.
/// --phase1 exact: the schedules scattered for one topology, per (k, aware). The theta of a
/// run is fixed and a schedule does not depend on the message size, so each is computed once
/// per topology, not again for every size.
using GivenSchedules = std::map<std::pair<int, bool>, std::shared_ptr<const CombiningSchedule>>;

std::vector<Result> measure(const std::string& topo_name, const Topology& topo, const Locality& loc,
                            const std::vector<Variant>& variants, int64_t size, int theta, int reps, int rounds,
                            bool exact_phase1, GivenSchedules& given, int warmup, bool verify_after) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int me = comm_rank(comm), p = comm_size(comm);
  const size_t nv = variants.size();
  Progress progress(topo_name + ", " + std::to_string(size) + " B");
  std::vector<std::unique_ptr<GatherPlan>> plans;
  std::vector<Result> res(nv);
  for (size_t i = 0; i < nv; ++i) {
    const Variant& v = variants[i];
    GatherOptions go;
    go.value_bytes = 1;     // char buffers: any byte size works
    go.same_count = true;  // every block has `size` bytes: MPI_Neighbor_allgather
    if (v.k > 0) {  // a combining variant (the backend declares k, theta, aware, schedule)
      CombiningOptions co;
      co.theta = theta, co.k = v.k, co.aware = v.aware;
      if (exact_phase1) {
        auto& sched = given[{v.k, v.aware}];
        if (!sched)
          sched = virt::scatter_combining_schedules(
              comm, 0, [&] { return virt::Graph::from_spec(p, topo_name); }, loc, co);
        co.given = sched;
      }
      set_combining(go.backend, co);
    }
    res[i].v = v;
    res[i].size = size;
    plans.push_back(make_gather_plan(v.backend, topo, loc, comm, size, go));
    res[i].verified = verify(*plans.back(), me, 0);
    progress.step(v.label() + " set up and verified");
  }

  std::vector<char> block(static_cast<size_t>(size));
  for (int64_t b = 0; b < size; ++b) block[b] = pattern_byte(me, b, 7);
  std::vector<std::vector<char>> recv(nv);
  for (size_t i = 0; i < nv; ++i) recv[i].resize(static_cast<size_t>(plans[i]->recv_total()) + 1);
  std::vector<std::vector<double>> per_round(nv), per_call(nv);
  const int reps_per_round = std::max(1, reps / rounds);
  for (int round = 0; round < rounds; ++round)
    for (size_t i = 0; i < nv; ++i) {
      GatherPlan& plan = *plans[i];
      char* rb = recv[i].data();
      auto& calls = per_call[i];
      per_round[i].push_back(apps::time_per_call(comm, reps_per_round, [&] {
        const double t0 = MPI_Wtime();
        plan.start(block.data());
        plan.wait(rb);
        calls.push_back(MPI_Wtime() - t0);
      }, warmup));
      progress.step(variants[i].label() + " timed, round " + std::to_string(round + 1));
    }

  for (size_t i = 0; i < nv; ++i) {
    GatherPlan& plan = *plans[i];
    Result& r = res[i];
    if (verify_after) r.verified = verify(plan, me, 1) && r.verified;  // still right after the timed exchanges
    r.lat_max = apps::median_of(per_round[i]);
    r.lat_best = *std::min_element(per_round[i].begin(), per_round[i].end());
    r.lat_worst = *std::max_element(per_round[i].begin(), per_round[i].end());
    const auto& c = plan.iteration_counts().total();
    const Stats& st = plan.setup_stats();
    auto red = reduce_all(comm, {apps::median_of(per_call[i]), static_cast<double>(plan.stages()),
                                 static_cast<double>(c.sent().msgs), static_cast<double>(c.sent_inter.msgs),
                                 static_cast<double>(c.sent().bytes), static_cast<double>(plan.groups_led()),
                                 st.time("setup.combining.phase1"), st.time("setup.combining.phase2"),
                                 st.time("setup.backend")});
    r.lat_mean = red[0].sum / p;
    r.stages = red[1].max;
    r.msgs_max = red[2].max, r.msgs_mean = red[2].sum / p;
    r.msgs_inter_max = red[3].max, r.msgs_inter_mean = red[3].sum / p;
    r.bytes_max = red[4].max;
    r.groups = red[5].sum;
    r.phase1 = red[6].max, r.phase2 = red[7].max, r.setup_backend = red[8].max;
  }
  return res;
}

// The run's settings, from the options.
struct Settings {
  std::vector<std::string> topos;
  std::vector<int64_t> sizes;
  std::vector<Variant> variants;
  std::string baseline, phase1, json;
  int theta = 4, reps = 200, rounds = 5, warmup = -1;
  bool exact_phase1 = false, verify_after = true;
  Locality loc;
};

/// Variants: the baseline first (MPI's own neighborhood collective; where it is not
/// registered, the SimGrid SMPI build, p2p takes its place and the table says so), then
/// every other chosen backend; backends that declare the combining options
/// (GatherBackendHooks::options has "k") once per group size k and awareness, after the others.
std::vector<Variant> make_variants(const std::string& backends, const std::string& baseline,
                                   const std::vector<int64_t>& ks, const std::vector<bool>& awares) {
  const std::vector<std::string> all = gather_backend_names();
  std::vector<std::string> chosen = backends == "all" ? all : apps::split_list(backends);
  for (const auto& b : chosen)
    if (std::find(all.begin(), all.end(), b) == all.end()) {
      std::string names;
      for (const auto& n : all) names += (names.empty() ? "" : ", ") + n;
      throw InputError("unknown gather backend '" + b + "'; valid backends: " + names);
    }
  std::vector<Variant> variants{{baseline, 0, false}};
  auto combining = [](const std::string& b) { return gather_backend_combines(b); };
  for (const auto& b : chosen)
    if (b != baseline && !combining(b)) variants.push_back({b, 0, false});
  for (const auto& b : chosen)
    if (combining(b))
      for (int64_t k : ks)
        for (bool a : awares) variants.push_back({b, static_cast<int>(k), a});
  return variants;
}

Settings parse_settings(MPI_Comm comm, const apps::Options& opt) {
  Settings st;
  st.topos = apps::split_specs(opt.get("topos"));
  if (st.topos.empty()) throw InputError("--topos is empty");
  st.sizes = apps::int_list("sizes", opt.get("sizes"), 0);
  const std::vector<int64_t> ks = apps::int_list("k", opt.get("k"), 2);
  st.theta = opt.get_int("theta"), st.reps = opt.get_count("reps"), st.rounds = opt.get_count("rounds");
  if (st.reps < 1 || st.theta < 1 || st.rounds < 1) throw InputError("--reps, --rounds and --theta must be >= 1");
  const std::vector<bool> awares = apps::aware_variants(opt.get("aware"));
  st.phase1 = opt.get("phase1");
  if (st.phase1 != "distributed" && st.phase1 != "exact")
    throw InputError("--phase1 expects distributed or exact, got '" + st.phase1 + "'");
  st.exact_phase1 = st.phase1 == "exact";
  st.warmup = opt.get("warmup") == "auto" ? -1 : opt.get_count("warmup", 0);
  if (opt.get("warmup") != "auto" && st.warmup < 0) throw InputError("--warmup must be auto or >= 0");
  const std::string verify_mode = opt.get("verify");
  if (verify_mode != "twice" && verify_mode != "once")
    throw InputError("--verify expects twice or once, got '" + verify_mode + "'");
  st.verify_after = verify_mode == "twice";
  st.baseline = gather_baseline_backend();
  st.variants = make_variants(opt.get("backends"), st.baseline, ks, awares);
  bool combining = false;
  for (const auto& v : st.variants) combining = combining || v.k > 0;
  opt.only_if(combining, {"k", "aware", "theta", "phase1"},
              "applies to the combining backends (combined), which --backends does not name");
  st.loc = Locality::parse(comm, opt.get("regions"));
  st.json = opt.get("json");
  return st;
}

/// The legend above the tables.
std::string legend(const Settings& st, int nranks) {
  std::ostringstream report;
  report << "sparsecomm neighborhood allgather microbenchmark (Mirsadeghi et al. 2017 + k-groups)\n"
         << nranks << " ranks, regions " << st.loc.describe() << ", theta " << st.theta << ", " << st.reps
         << " exchanges per variant in " << st.rounds << " rounds interleaved over the variants\n"
         << "lat      = time per exchange (start+wait) [us]: per round apps::time_per_call (barrier per batch, max\n"
         << "           over ranks, median of batches); median over rounds. best/worst: fastest/slowest round\n"
         << "rank-mean= mean over ranks of each rank's median per-call time [us]\n"
         << "speedup  = " << st.baseline << " lat / lat (same run; >1: faster than " << st.baseline
         << "); (best) = on the best rounds\n"
         << "msgs     = messages sent per rank and exchange, max / mean over ranks (inter-region max in brackets)\n"
         << "groups   = combining groups found (sum over ranks); ph1/ph2 = combining setup phases, max over ranks [ms]\n";
  if (st.warmup >= 0 || !st.verify_after)
    report << "(" << (st.warmup >= 0 ? std::to_string(st.warmup) : std::string("auto"))
           << " warm-up exchanges per round; plans verified "
           << (!st.verify_after ? "before timing only" : "before and after timing") << ")\n";
  if (st.exact_phase1)
    report << "ph1      = exact: phase 1 NOT run; every rank's pattern computed on rank 0 by the exact model\n"
           << "           (plan-stats) and scattered (--phase1 exact)\n";
  return report.str();
}

apps::Json json_record(const Settings& st, const std::string& spec, int nranks, const std::vector<Reduced>& deg,
                       const Result& r, double base, double base_best) {
  const bool comb = r.v.k > 0;
  apps::Json j = apps::json_record("nbrbench");
  j["topology"] = spec;
  j["ranks"] = nranks;
  j["regions"] = st.loc.describe();
  j["out_degree_max"] = deg[0].max;
  j["out_degree_mean"] = deg[0].sum / nranks;
  j["size_bytes"] = r.size;
  j["backend"] = r.v.backend;
  j["variant"] = r.v.label();
  j["k"] = comb ? apps::Json(r.v.k) : apps::Json(nullptr);
  j["aware"] = comb ? apps::Json(r.v.aware) : apps::Json(nullptr);
  j["theta"] = st.theta;
  j["reps"] = st.reps;
  j["rounds"] = st.rounds;
  j["lat_max_s"] = r.lat_max;
  j["lat_best_s"] = r.lat_best;
  j["lat_worst_s"] = r.lat_worst;
  j["lat_mean_s"] = r.lat_mean;
  j["baseline"] = st.baseline;
  j["neighbor_lat_max_s"] = base;
  j["speedup_vs_neighbor"] = base / r.lat_max;
  j["speedup_best_vs_neighbor_best"] = base_best / r.lat_best;
  j["stages"] = r.stages;
  j["msgs_max"] = r.msgs_max;
  j["msgs_mean"] = r.msgs_mean;
  j["msgs_inter_max"] = r.msgs_inter_max;
  j["msgs_inter_mean"] = r.msgs_inter_mean;
  j["bytes_sent_max"] = r.bytes_max;
  j["groups"] = r.groups;
  // Not measured when every rank's pattern came from the exact model (--phase1 exact).
  j["setup_phase1_s"] = comb && st.exact_phase1 ? apps::Json(nullptr) : apps::Json(r.phase1);
  j["phase1"] = st.phase1;
  j["setup_phase2_s"] = r.phase2;
  j["setup_backend_s"] = r.setup_backend;
  j["verified"] = r.verified;
  return j;
}

/// Rank 0. The table of one topology (and its JSON lines).
std::string topology_table(const Settings& st, const std::string& spec, int nranks, const std::vector<Reduced>& deg,
                           const std::vector<Result>& results, apps::JsonLines* js) {
  std::ostringstream report;
  report << "\ntopology " << spec << ": out-degree max " << deg[0].max << ", mean "
         << apps::num("%.1f", deg[0].sum / nranks) << "; in-degree max " << deg[1].max << "\n";
  apps::Table t({"variant", "size[B]", "lat[us]", "best/worst[us]", "rank-mean[us]", "speedup", "(best)", "stages",
                 "msgs max/mean", "groups", "ph1[ms]", "ph2[ms]", "verified"});
  double base = 0, base_best = 0;
  int64_t last_size = -1;
  for (const auto& r : results) {
    if (r.v.backend == st.baseline) base = r.lat_max, base_best = r.lat_best;
    if (last_size >= 0 && r.size != last_size) t.rule();
    last_size = r.size;
    const bool comb = r.v.k > 0;
    t.add({r.v.label(), std::to_string(r.size), apps::num("%.1f", r.lat_max * 1e6),
           apps::num("%.1f", r.lat_best * 1e6) + " / " + apps::num("%.1f", r.lat_worst * 1e6),
           apps::num("%.1f", r.lat_mean * 1e6), apps::num("%.2f", base / r.lat_max),
           apps::num("%.2f", base_best / r.lat_best), apps::num("%.0f", r.stages),
           apps::num("%.0f", r.msgs_max) + " / " + apps::num("%.1f", r.msgs_mean) + " [" +
               apps::num("%.0f", r.msgs_inter_max) + "]",
           comb ? apps::num("%.0f", r.groups) : "-",
           comb ? (st.exact_phase1 ? "exact" : apps::num("%.2f", r.phase1 * 1e3)) : "-",
           comb ? apps::num("%.2f", r.phase2 * 1e3) : "-", r.verified ? "yes" : "NO"});
    if (js) js->write(json_record(st, spec, nranks, deg, r, base, base_best));
  }
  report << t.str();
  return report.str();
}

/// Collective. Every size and variant on one topology; appends to `report` on rank 0.
bool run_topology(const Settings& st, const std::string& spec, std::ostringstream& report, apps::JsonLines* js) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = comm_rank(comm), nranks = comm_size(comm);
  const double t_topo = MPI_Wtime();
  Progress progress(spec);
  Topology topo = Topology::parse(comm, spec);
  progress.step("topology built");
  auto deg = reduce_all(comm, {static_cast<double>(topo.destinations.size()), static_cast<double>(topo.sources.size())});
  std::vector<Result> results;
  GivenSchedules given;
  bool ok = true;
  for (int64_t size : st.sizes)
    for (const auto& r : measure(spec, topo, st.loc, st.variants, size, st.theta, st.reps, st.rounds, st.exact_phase1,
                                 given, st.warmup, st.verify_after)) {
      results.push_back(r);
      ok = ok && r.verified;
    }
  if (rank != 0) return ok;
  report << topology_table(st, spec, nranks, deg, results, js);
  std::cerr << "nbrbench: " << spec << " done (out-degree max " << deg[0].max << ") in "
            << apps::num("%.2f", MPI_Wtime() - t_topo) << " s\n";
  return ok;
}

}  // namespace

namespace sparsecomm::apps {

int nbrbench_main(int argc, char** argv) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = comm_rank(comm), nranks = comm_size(comm);
  apps::Options opt(
      apps::with_common(
          {"reps", "rounds", "regions", "json"},
          apps::with_combining(
          {{"topos",
            {"er:0.05;er:0.1;er:0.2;er:0.4;er:0.8;moore:2,1;moore:2,2;moore:2,3;moore:2,4;moore:3,1;moore:3,2;moore:4,1",
             "topologies separated by ';' or spaces (quote it): er:<density>[,<seed>], moore:<dims>,<radius>"}},
           {"sizes", {"4,64,512,4096", "bytes per message (each rank's block), comma-separated"}},
           {"backends", {"all", "gather backends to run (comma-separated) or all; neighbor always runs"}},
           {"warmup", {"auto", "untimed exchanges before each round's timed ones: auto (one batch) or a number"}},
           {"verify", {"twice", "check every plan's exchange before and after timing (twice) or before only (once)"}},
           {"phase1",
            {"distributed",
             "combining phase 1: distributed (run it) or exact (rank 0 computes every rank's pattern with the "
             "exact model of plan-stats and scatters it; for simulations at scale)"}}},
          "2,3,4,6"),
          {{"reps", "200"}}),
      "usage: mpirun -np P sparsecomm nbrbench [options]\n"
      "Allgather-shaped neighborhood exchange on random and Moore topologies: neighbor vs p2p vs\n"
      "message combining (k-groups, topology-agnostic / -aware).\n"
      "example: mpirun -np 32 sparsecomm nbrbench --topos \"moore:2,3;er:0.4\" --sizes 4,4096 --k 2,4 --aware both");
  if (!apps::parse_or_help(comm, opt, argc, argv)) return 0;
  const Settings st = parse_settings(comm, opt);
  if (rank == 0)
    std::cerr << "nbrbench: " << nranks << " ranks, regions " << st.loc.describe() << ", " << st.topos.size()
              << " topologies x " << st.sizes.size() << " sizes x " << st.variants.size() << " variants, " << st.reps
              << " reps in " << st.rounds << " rounds\n";
  std::ostringstream report;
  report << legend(st, nranks);
  const auto js = apps::open_json_lines(comm, st.json);
  bool all_ok = true;
  for (const auto& spec : st.topos) all_ok = run_topology(st, spec, report, js.get()) && all_ok;
  if (rank == 0) {
    std::cout << report.str() << "\n"
              << (all_ok ? "every exchange verified against the expected blocks\n" : "VERIFICATION FAILED\n");
    if (js) std::cout << "JSON lines appended to " << st.json << "\n";
  }
  return all_ok ? 0 : 3;
}

}  // namespace sparsecomm::apps
