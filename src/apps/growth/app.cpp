// sparsecomm growth: how the set-up and the exchange cost grow with P, on one problem
// (meant for weak-scaled generators: lap3d27w, rotatew; experiments/scaling).
//
// For each SDDE strategy: the time of pattern_from_matrix (barrier before, max over ranks,
// median of the repetitions after one warm-up) and its heap memory per rank. For each halo
// backend: make_plan's time and memory, then the time of one exchange (start + wait),
// checked value by value. Memory: the counting allocator of the stand-alone program
// (alloc_count.cpp), per rank: "peak" = the most bytes held during the step above what was
// held before it (the step's transient and retained structures), "kept" = what the step's
// result still holds afterwards (the Pattern, the Plan). Max over ranks.
//
//   smpi.sh run 1024 --platform gpc_fattree -- build-smpi/src/apps/growth/sparsecomm_growth --gen lap3d27w:10,10,10
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "alloc_count.hpp"
#include "common/app_main.hpp"
#include "common/cli.hpp"
#include "common/options.hpp"
#include "common/provenance.hpp"
#include "common/timing.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/kernels/halo_pattern.hpp"
#include "sparsecomm/matrix/generators.hpp"

namespace sparsecomm::apps {

namespace {

struct Result {
  std::string kind, name;  // kind: "sdde" or "plan"
  double setup = 0, exchange = -1;
  double peak = -1, kept = -1;  // bytes per rank, max over ranks; -1: not counted
  bool verified = false;
};

/// Heap bytes of one step on this rank: the peak above the start and what stays.
class MemoryProbe {
 public:
  MemoryProbe() : c_(sparsecomm_growth_alloc_counter ? sparsecomm_growth_alloc_counter() : nullptr) {
    if (c_) start_ = c_->peak = c_->current;
  }
  double peak() const { return c_ ? static_cast<double>(c_->peak - start_) : -1; }
  double kept() const { return c_ ? static_cast<double>(c_->current - start_) : -1; }

 private:
  AllocCounter* c_;
  long long start_ = 0;
};

/// Host seconds since the first call: progress for whoever waits for a simulation, never a result.
long host_seconds() {
  static const auto t0 = std::chrono::steady_clock::now();
  return static_cast<long>(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - t0).count());
}

double xval(int64_t gid) { return std::sin(static_cast<double>(gid)); }

/// Collective. One SDDE strategy: `reps` discoveries after one warm-up; the memory of the
/// first (a fresh Sdde, as a code's first set-up). `*out` gets the pattern.
Result measure_sdde(const DistCsr<double>& a, const Locality& loc, const std::string& strategy, int reps,
                    const Pattern* reference, Pattern* out) {
  Result r{"sdde", strategy};
  std::vector<double> times;
  *out = Pattern();
  {
    MemoryProbe mem;
    {
      Sdde sdde(a.comm(), loc);
      sdde.prepare(strategy);
      *out = pattern_from_matrix(a, sdde, strategy);
    }
    r.peak = allreduce_max(a.comm(), mem.peak());
    r.kept = allreduce_max(a.comm(), mem.kept());
  }
  Sdde sdde(a.comm(), loc);
  sdde.prepare(strategy);
  for (int it = 0; it <= reps; ++it) {
    Pattern p;
    const double t = timed(a.comm(), [&] { p = pattern_from_matrix(a, sdde, strategy); });
    if (it > 0) times.push_back(t);
  }
  r.setup = median_of(times);
  const bool ok = reference == nullptr || *out == *reference;
  r.verified = allreduce_max(a.comm(), static_cast<int64_t>(ok ? 0 : 1)) == 0;
  return r;
}

/// Collective. One backend: set-up `setup_reps` times (memory of the first), then `reps`
/// exchanges of x_i = sin(global id), every ghost value checked.
Result measure_plan(const DistCsr<double>& a, const Locality& loc, const Pattern& pat, const std::string& backend,
                    int setup_reps, int reps) {
  Result r{"plan", backend};
  PlanOptions opt;
  std::unique_ptr<Plan> plan;
  {
    MemoryProbe mem;
    plan = make_plan(backend, pat, loc, a.comm(), opt);
    r.peak = allreduce_max(a.comm(), mem.peak());
    r.kept = allreduce_max(a.comm(), mem.kept());
  }
  std::vector<double> times;
  for (int it = 0; it < setup_reps; ++it) {
    plan.reset();
    times.push_back(timed(a.comm(), [&] { plan = make_plan(backend, pat, loc, a.comm(), opt); }));
  }
  r.setup = median_of(times);
  std::vector<double> x(static_cast<size_t>(a.local_rows())), ghost(static_cast<size_t>(a.num_ghosts()), 0.0);
  for (size_t i = 0; i < x.size(); ++i) x[i] = xval(a.row_begin() + static_cast<int64_t>(i));
  r.exchange = time_per_call(a.comm(), reps, [&] { plan->exchange(x.data(), ghost.data()); });
  bool ok = true;
  for (size_t j = 0; j < ghost.size(); ++j) ok = ok && ghost[j] == xval(a.ghost_ids()[j]);
  r.verified = allreduce_max(a.comm(), static_cast<int64_t>(ok ? 0 : 1)) == 0;
  return r;
}

void report(const std::vector<Result>& rows, const std::string& spec, const DistCsr<double>& a, const Locality& loc,
            const Pattern& pat, int reps, const std::string& json) {
  const int nranks = comm_size(a.comm());
  // Neighbors per rank (max): what a weak-scaled problem holds fixed.
  const int64_t nbrs = allreduce_max(a.comm(), static_cast<int64_t>(pat.recv().num_neighbors()));
  const auto js = open_json_lines(a.comm(), json);
  if (comm_rank(a.comm()) != 0) return;
  std::cout << "sparsecomm growth: " << spec << " (" << a.global_rows() << " rows, " << a.global_nnz()
            << " nonzeros) on " << nranks << " ranks, regions " << loc.describe() << "; at most " << nbrs
            << " neighbors per rank\n"
            << "time: barrier before, max over ranks, median (sdde: of " << reps
            << " after a warm-up); memory: heap bytes per rank (max over ranks) at the step's peak above "
               "its start / kept after it\n\n";
  std::printf("%-6s %-22s %12s %14s %12s %12s %8s\n", "kind", "name", "setup[us]", "exchange[us]", "peak[B]",
              "kept[B]", "verified");
  for (const auto& r : rows) {
    char ex[32] = "-";
    if (r.exchange >= 0) std::snprintf(ex, sizeof ex, "%.3f", r.exchange * 1e6);
    std::printf("%-6s %-22s %12.2f %14s %12.0f %12.0f %8s\n", r.kind.c_str(), r.name.c_str(), r.setup * 1e6, ex,
                r.peak, r.kept, r.verified ? "yes" : "NO");
  }
  if (!js) return;
  for (const auto& r : rows) {
    Json j = json_record("growth");
    j["problem"] = spec;
    j["ranks"] = nranks;
    j["rows"] = a.global_rows();
    j["regions"] = loc.describe();
    j["max_neighbors"] = nbrs;
    j["kind"] = r.kind;
    j["name"] = r.name;
    j["setup_s"] = r.setup;
    j["exchange_s"] = r.exchange;
    j["peak_bytes"] = r.peak;
    j["kept_bytes"] = r.kept;
    j["verified"] = r.verified;
    js->write(j);
  }
}

}  // namespace

int growth_main(int argc, char** argv) {
  Options opt(with_common({"gen", "regions", "sdde", "backend", "reps", "json"},
                          {{"setup-reps", {"2", "timed plan set-ups per backend"}},
                           {"sdde-reps", {"3", "timed pattern discoveries per SDDE strategy (after a warm-up)"}}},
                          {{"sdde", "all"}, {"reps", "20"}}),
              "usage: mpirun -np P sparsecomm growth [options]\n"
              "under SMPI: scripts/smpi.sh run P --platform gpc_fattree -- build-smpi/src/apps/growth/sparsecomm_growth "
              "--gen lap3d27w:8,8,8 (memory is counted only by the stand-alone sparsecomm_growth)");
  if (!parse_or_help(MPI_COMM_WORLD, opt, argc, argv)) return 0;
  const std::string spec = opt.get("gen").empty() ? "lap3d27w:10,10,10" : opt.get("gen");
  const int reps = opt.get_count("reps"), sdde_reps = opt.get_count("sdde-reps"),
            setup_reps = opt.get_count("setup-reps");
  if (reps < 1 || sdde_reps < 1 || setup_reps < 1) throw InputError("--reps, --sdde-reps and --setup-reps must be >= 1");
  std::vector<std::string> strategies = opt.get("sdde") == "all" ? Sdde::strategies() : split_list(opt.get("sdde"));
  std::vector<std::string> backends = opt.get("backend") == "all" ? backend_names() : split_list(opt.get("backend"));
  std::vector<Result> rows;
  host_seconds();
  MemoryProbe matrix_mem;  // the matrix as the generator leaves it (its row and column partitions included)
  const double t_gen = MPI_Wtime();
  const DistCsr<double> a = gen::from_spec(MPI_COMM_WORLD, spec);
  rows.push_back({"input", "matrix", allreduce_max(MPI_COMM_WORLD, MPI_Wtime() - t_gen), -1,
                  allreduce_max(MPI_COMM_WORLD, matrix_mem.peak()), allreduce_max(MPI_COMM_WORLD, matrix_mem.kept()),
                  true});
  const Locality loc = Locality::parse(MPI_COMM_WORLD, opt.get("regions"));
  Pattern reference, pat;
  for (const auto& s : strategies) {
#ifdef SPARSECOMM_SMPI
    if (s == "node_window") continue;  // needs shared-memory windows, which SMPI lacks
#endif
    const bool first = rows.size() == 1;
    rows.push_back(measure_sdde(a, loc, s, sdde_reps, first ? nullptr : &reference, &pat));
    if (first) reference = pat;
    if (comm_rank(MPI_COMM_WORLD) == 0) std::cerr << "growth: sdde " << s << " done (host " << host_seconds() << " s)" << std::endl;
  }
  if (rows.size() == 1) {
    Sdde sdde(MPI_COMM_WORLD, loc);
    reference = pattern_from_matrix(a, sdde, kDefaultSdde);
  }
  for (const auto& b : backends) {
    rows.push_back(measure_plan(a, loc, reference, b, setup_reps, reps));
    if (comm_rank(MPI_COMM_WORLD) == 0) std::cerr << "growth: plan " << b << " done (host " << host_seconds() << " s)" << std::endl;
  }
  report(rows, spec, a, loc, reference, sdde_reps, opt.get("json"));
  for (const auto& r : rows)
    if (!r.verified) return 3;
  // The counting allocator must have seen the matrix (it holds rows on every rank).
  if (sparsecomm_growth_alloc_counter && rows.front().kept <= 0) {
    if (comm_rank(MPI_COMM_WORLD) == 0) std::cerr << "growth: the counting allocator counted no matrix bytes\n";
    return 4;
  }
  return 0;
}

}  // namespace sparsecomm::apps
