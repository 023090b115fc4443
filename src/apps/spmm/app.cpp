// sparsecomm_spmm: the SpMM kernel of the message-combining papers (Mirsadeghi, Träff,
// Balaji and Afsahi, HiPC 2017, and the k-group follow-up): C = A x B, where A is a
// SuiteSparse matrix distributed by block rows and B is A's dense counterpart (the papers
// multiply each matrix by itself): B has A's rows, distributed like A, and n dense columns,
// B(i, j) = A(i, j) and zeros elsewhere. Rank i needs rank j's rows of B when block (i, j)
// of A has a nonzero: topology_from_matrix_blocks(A).
//
// Variants, each computing all of C (local rows x n), timed as a whole: barrier before, max
// over ranks, median of --reps repetitions. Every variant is set up first and run once as
// warm-up (that run is the one checked); the repetitions then run in rounds interleaved over
// the variants, so that slow phases of a loaded or oversubscribed machine hit all of them
// alike instead of whichever variant happened to run then:
//   allgather      per column of B, MPI_Allgatherv of the whole column, then the local product
//                  (the global baseline: every rank receives every row of B);
//   <gather>       per column of B, one allgather-shaped neighborhood exchange (a GatherPlan:
//                  neighbor = MPI_Ineighbor_allgatherv, p2p, combined k x agnostic/aware) of my
//                  block of the column, overlapped with the diagonal-block product; then the
//                  off-diagonal product reads the received source blocks; `neighbor` is the
//                  per-column baseline (p2p in the SMPI build, which has no `neighbor`);
//   halo_<plan>    the efficient formulation: all n columns at once through one width-n halo
//                  exchange of only the rows of B that are needed (pattern_from_matrix and
//                  every halo Plan backend), then the DistSpmv local product.
// Every variant's C is checked against a serial Eigen product of the gathered A (each rank
// checks its own rows: C_i = A(i,:) x B); relative error max|C - C_ref| / max|C_ref| <= 1e-12.
// Exit codes: 0 ok, 3 a check failed, 77 a matrix was not found on the data search path
// (ctest reports that as skipped), 2 other errors.
//
//   mpirun -np 32 sparsecomm_spmm --matrix Pajek/Journals,HB/dwt_193 --k 2,4 --json spmm.jsonl
//   mpirun -np 8 sparsecomm_spmm --matrix HB/bcsstk13 --cols 512 --reps 5
#include <mpi.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <iostream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sparsecomm/kernels/halo_pattern.hpp"
#include "sparsecomm/comm/plan/combining_options.hpp"
#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "common/app_main.hpp"
#include "common/cli.hpp"
#include "common/load.hpp"
#include "common/provenance.hpp"
#include "common/options.hpp"
#include "common/table.hpp"
#include "common/timing.hpp"
#include "core/compare.hpp"
#include "sparsecomm/matrix/data_path.hpp"
#include "sparsecomm/kernels/dist_spmv.hpp"
#include "sparsecomm/kernels/spmm.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"
#include "sparsecomm/matrix/ordering.hpp"
#include "kernels/reference.hpp"

using namespace sparsecomm;

namespace {

constexpr double kTolerance = 1e-12;
constexpr double kHaloLimitBytes = 256.0 * 1024 * 1024;  // per rank, width-n halo buffers
constexpr double kDenseLimitBytes = 8.0 * 1024 * 1024 * 1024;  // all ranks, dense B and C copies

struct Result {
  std::string variant, kind, backend;  // kind: allgather | gather | halo
  int k = 0;
  bool aware = false;
  double time = 0, best = 0, setup = 0, err = 0;
  bool counted = false;  // message counts known (not for MPI_Allgatherv)
  double msgs_col_max = 0, msgs_col_mean = 0, msgs_total_max = 0, bytes_total_max = 0;
  double groups = 0, stages = 0;
  bool ok = false, skipped = false;
  std::string note;
};

/// The dense operands of one matrix on this rank.
struct Operands {
  int32_t lr = 0;            // local rows
  int64_t n = 0;             // columns of B and C
  std::vector<double> bcol;  // B(my rows, :) column-major: bcol[j*lr + i]
  std::vector<double> brow;  // the same, row-major: brow[i*n + j] (x of the width-n halo product)
  Eigen::MatrixXd cref;      // expected C(my rows, :)
};

/// max|C - C_ref| / max|C_ref| over all ranks (collective); +inf where C and C_ref differ
/// in a non-finite entry (core/compare.hpp).
double relative_error(const Operands& op, bool row_major, const std::vector<double>& c) {
  Comparison cmp;
  for (int32_t i = 0; i < op.lr; ++i)
    for (int64_t j = 0; j < op.n; ++j) cmp.add(row_major ? c[i * op.n + j] : c[j * op.lr + i], op.cref(i, j));
  return cmp.allreduce(MPI_COMM_WORLD).rel_err();
}

std::string matrix_label(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  for (const std::string ext : {".mtx.gz", ".mtx"})
    if (name.size() > ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0)
      return name.substr(0, name.size() - ext.size());
  return name;
}

struct Config {
  std::vector<int> ks;
  std::vector<bool> awares;
  int theta = 4, reps = 3;
  int64_t cols = 0;
  std::set<std::string> variants;  // empty: all
  Locality loc;
  std::string json;
  std::vector<Ordering> orderings{Ordering::natural};
};

bool wanted(const Config& cfg, const std::string& name, const std::string& family = "") {
  return cfg.variants.empty() || cfg.variants.count(name) || (!family.empty() && cfg.variants.count(family));
}

/// B = the first n columns of A, dense: my rows, column-major and row-major; and the
/// expected C rows: A(my rows, :) x B with the gathered A (Eigen, sparse x sparse).
Operands make_operands(const DistCsr<double>& a, int64_t n) {
  Operands op;
  op.lr = a.local_rows();
  op.n = n;
  const int32_t lr = op.lr;
  const int64_t N = a.global_rows(), rb = a.row_begin();
  op.bcol.assign(static_cast<size_t>(lr) * n, 0.0);
  op.brow.assign(static_cast<size_t>(lr) * n, 0.0);
  const auto mine = a.local_triplets();
  for (const auto& e : mine)
    if (e.col < n) {
      op.bcol[e.col * lr + (e.row - rb)] = e.val;
      op.brow[(e.row - rb) * n + e.col] = e.val;
    }
  std::vector<Triplet<double>> all = a.gather_all(), left, right;
  for (const auto& e : mine) left.push_back({e.row - rb, e.col, e.val});
  for (const auto& e : all)
    if (e.col < n) right.push_back(e);
  const reference::SpMat aloc = reference::to_eigen(left, lr, N);
  const reference::SpMat bmat = reference::to_eigen(right, N, n);
  const reference::SpMat cs = aloc * bmat;
  op.cref = Eigen::MatrixXd(cs.toDense());
  return op;
}

// One variant set up and ready: it owns its plan and buffers; once() computes all of C.
struct Runner {
  Result r;
  std::function<void(double* c)> once;
  bool row_major = false;  // layout of C: halo variants write C(i, j) at i*n + j
};

// What every variant of one matrix shares.
struct Bench {
  MPI_Comm comm;
  const DistCsr<double>& a;
  const Operands& op;
  const Config& cfg;
  int nranks;
};

/// allgather: every rank receives every column of B whole (the global baseline).
Runner allgather_runner(const Bench& b) {
  Runner run;
  run.r.variant = run.r.kind = run.r.backend = "allgather";
  auto mm = std::make_shared<AllgatherSpmm>(b.a, b.comm);
  const Operands& op = b.op;
  run.once = [&op, mm](double* c) { mm->multiply(op.bcol.data(), op.n, c); };
  return run;
}

/// The message counts of a plan per exchange, max / sum over ranks.
std::vector<Reduced> plan_counts(MPI_Comm comm, const CommCounters& cnt, double groups, double stages) {
  return reduce_all(comm, {static_cast<double>(cnt.sent().msgs), static_cast<double>(cnt.sent().bytes), groups, stages});
}

/// One per-column variant through a GatherPlan backend (k > 0: the combining options).
Runner gather_runner(const Bench& b, const Topology& topo, const std::string& backend, int k, bool aware) {
  Runner run;
  Result& r = run.r;
  r.kind = "gather", r.backend = backend, r.k = k, r.aware = aware;
  r.variant = k > 0 ? backend + " k=" + std::to_string(k) + (aware ? " aware" : " agnostic") : backend;
  GatherOptions go;
  go.value_bytes = 8;
  if (k > 0) go.backend.set("theta", b.cfg.theta).set("k", k).set("aware", aware);
  std::shared_ptr<ColumnSpmm> mm;
  r.setup = apps::timed(b.comm, [&] {
    mm = std::make_shared<ColumnSpmm>(b.a, topo, make_gather_plan(backend, topo, b.cfg.loc, b.comm, b.op.lr, go));
  });
  const Operands& op = b.op;
  run.once = [&op, mm](double* c) { mm->multiply(op.bcol.data(), op.n, c); };
  GatherPlan& plan = mm->plan();
  auto red = plan_counts(b.comm, plan.iteration_counts().total(), static_cast<double>(plan.groups_led()),
                         static_cast<double>(plan.stages()));
  const double n = static_cast<double>(op.n);
  r.counted = true;
  r.msgs_col_max = red[0].max, r.msgs_col_mean = red[0].sum / b.nranks;
  r.msgs_total_max = red[0].max * n, r.bytes_total_max = red[1].max * n;
  r.groups = red[2].sum, r.stages = red[3].max;
  return run;
}

/// The per-column variants: the baseline first, then every other gather backend; those
/// that declare the combining options (GatherBackendHooks::options has "k") once per group
/// size k and awareness, after the others.
void add_gather_runners(const Bench& b, const Topology& topo, const std::string& baseline, std::vector<Runner>& out) {
  auto combining = [](const std::string& g) { return gather_backend_combines(g); };
  out.push_back(gather_runner(b, topo, baseline, 0, false));
  for (const auto& g : gather_backend_names())
    if (g != baseline && !combining(g) && wanted(b.cfg, g)) out.push_back(gather_runner(b, topo, g, 0, false));
  for (const auto& g : gather_backend_names())
    if (combining(g) && wanted(b.cfg, g))
      for (int k : b.cfg.ks)
        for (bool aw : b.cfg.awares) out.push_back(gather_runner(b, topo, g, k, aw));
}

/// halo_<backend>: all n columns in one width-n exchange of only the needed rows of B.
/// Returns why they were skipped (empty if not); `t_pattern` gets the SDDE's time.
std::string add_halo_runners(const Bench& b, std::vector<Runner>& out, double& t_pattern) {
  // (name, k, aware): a backend that declares the combining options (its own hooks' "k")
  // once per group size and awareness, as the gather side runs them; k = 0: its defaults.
  struct Halo {
    std::string name;
    int k;
    bool aware;
  };
  std::vector<Halo> halos;
  for (const auto& name : backend_names())
    if (wanted(b.cfg, "halo_" + name, "halo")) {
      if (!halo_backend_combines(name)) {
        halos.push_back({name, 0, false});
        continue;
      }
      for (int k : b.cfg.ks)
        for (bool aw : b.cfg.awares) halos.push_back({name, k, aw});
    }
  if (halos.empty()) return "";
  Sdde sdde(b.comm, b.cfg.loc);
  Pattern pat;
  t_pattern = apps::timed(b.comm, [&] { pat = pattern_from_matrix(b.a, sdde, "nbx"); });
  // Width-n buffers of every halo plan alive at once: ghosts, packed sends and receives.
  const int64_t n = b.op.n;
  const double need = 8.0 * static_cast<double>(n) * static_cast<double>(halos.size()) *
                      static_cast<double>(b.a.num_ghosts() + pat.send().size() + pat.recv().size());
  const double need_max = allreduce_max(b.comm, need);
  if (need_max > kHaloLimitBytes)
    return "halo_* skipped: the width-" + std::to_string(n) + " buffers of " + std::to_string(halos.size()) +
           " halo plans need " + apps::num("%.0f", need_max / 1e6) + " MB on some rank (limit " +
           apps::num("%.0f", kHaloLimitBytes / 1e6) + " MB); use --cols or --variants halo_<backend>";
  for (const auto& [name, k, aware] : halos) {
    Runner run;
    Result& r = run.r;
    r.kind = "halo", r.backend = name, r.k = k, r.aware = aware;
    r.variant = "halo_" + name + (k > 0 ? " k=" + std::to_string(k) + (aware ? " aware" : " agnostic") : "");
    run.row_major = true;
    PlanOptions po;
    po.width = static_cast<int>(n);
    if (k > 0) po.backend.set("theta", b.cfg.theta).set("k", k).set("aware", aware);
    std::shared_ptr<DistSpmv> spmm;
    const std::string& backend = name;
    r.setup = apps::timed(b.comm, [&] { spmm = std::make_shared<DistSpmv>(b.a, make_plan(backend, pat, b.cfg.loc, b.comm, po)); });
    const Operands& op = b.op;
    run.once = [&op, spmm](double* c) { spmm->apply(op.brow.data(), c); };
    auto red = plan_counts(b.comm, spmm->plan().iteration_counts().total(), 0, static_cast<double>(spmm->plan().stages()));
    r.counted = true;
    r.msgs_total_max = red[0].max;
    r.msgs_col_max = red[0].max / static_cast<double>(n), r.msgs_col_mean = red[0].sum / b.nranks / n;
    r.bytes_total_max = red[1].max;
    r.stages = red[3].max;
    out.push_back(std::move(run));
  }
  return "";
}

/// Every variant run once as warm-up and checked right away (C is filled with NaN before,
/// so a variant that leaves entries unwritten fails); then the timed repetitions in rounds
/// interleaved over the variants, so that slow phases of an oversubscribed machine are
/// spread over all of them.
std::vector<Result> check_and_time(const Bench& b, std::vector<Runner>& runners) {
  std::vector<double> c(static_cast<size_t>(b.op.lr) * b.op.n + 1);
  for (auto& run : runners) {
    std::fill(c.begin(), c.end(), std::nan(""));
    run.once(c.data());
    run.r.err = relative_error(b.op, run.row_major, c);
    run.r.ok = run.r.err <= kTolerance;
  }
  std::vector<std::vector<double>> times(runners.size());
  for (int rep = 0; rep < b.cfg.reps; ++rep)
    for (size_t i = 0; i < runners.size(); ++i) times[i].push_back(apps::timed(b.comm, [&] { runners[i].once(c.data()); }));
  std::vector<Result> results;
  for (size_t i = 0; i < runners.size(); ++i) {
    Result r = runners[i].r;
    r.time = apps::median_of(times[i]);
    r.best = *std::min_element(times[i].begin(), times[i].end());
    results.push_back(r);
  }
  return results;
}

// What the table and the JSON lines of one matrix say besides the results.
struct Summary {
  std::string name, baseline, halo_note;
  Ordering ordering = Ordering::natural;
  int64_t rows = 0, nnz = 0, n = 0;
  double deg_max = 0, deg_mean = 0, t_topo = 0, t_pattern = 0, t_all = 0, t_nbr = 0;
};

std::string results_table(const Summary& s, const Config& cfg, int nranks, const std::vector<Result>& results) {
  std::ostringstream os;
  os << "\n" << s.name << ": " << s.rows << " x " << s.rows << ", " << s.nnz << " nonzeros; B: " << s.n
     << " dense columns; " << nranks << " ranks, regions " << cfg.loc.describe() << "\n"
     << "topology (block pattern): in-degree max " << s.deg_max << ", mean " << apps::num("%.1f", s.deg_mean)
     << "; built in " << apps::num("%.2f", s.t_topo * 1e3) << " ms; halo pattern (SDDE nbx) "
     << apps::num("%.2f", s.t_pattern * 1e3) << " ms\n"
     << "time = whole C (" << s.n << " columns), barrier before, max over ranks, median of " << cfg.reps
     << " rounds interleaved over the variants, after 1 warm-up (checked); best = fastest round\n"
     << "vs X = time(X) / time (>1: faster than X)\n"
     << "msgs = sent per rank per column of B, max / mean over ranks (halo: whole exchange / " << s.n
     << "); setup = plan only\n";
  apps::Table t({"variant", "time[ms]", "best[ms]", "vs allgather", "vs " + s.baseline, "msgs/col max/mean",
                 "msgs total max", "groups", "stages", "setup[ms]", "rel err", "check"});
  for (const auto& r : results) {
    const bool comb = r.kind == "gather" && r.k > 0;
    const char* f_max = r.kind == "halo" ? "%.3f" : "%.0f";
    const char* f_mean = r.kind == "halo" ? "%.3f" : "%.1f";
    t.add({r.variant, apps::num("%.3f", r.time * 1e3), apps::num("%.3f", r.best * 1e3),
           apps::num("%.2f", s.t_all / r.time), apps::num("%.2f", s.t_nbr / r.time),
           r.counted ? apps::num(f_max, r.msgs_col_max) + " / " + apps::num(f_mean, r.msgs_col_mean) : "n/a (MPI)",
           r.counted ? apps::num("%.0f", r.msgs_total_max) : "n/a", comb ? apps::num("%.0f", r.groups) : "-",
           r.counted ? apps::num("%.0f", r.stages) : "-", r.kind == "allgather" ? "-" : apps::num("%.2f", r.setup * 1e3),
           apps::num("%.1e", r.err), r.ok ? "ok" : "FAILED"});
  }
  os << t.str();
  if (!s.halo_note.empty()) os << s.halo_note << "\n";
  return os.str();
}

void append_json(apps::JsonLines& js, const Summary& s, const Config& cfg, int nranks,
                 const std::vector<Result>& results) {
  using apps::Json;
  for (const auto& r : results) {
    const bool comb = r.kind == "gather" && r.k > 0;
    Json j = apps::json_record("spmm");
    j["matrix"] = s.name;
    j["ordering"] = ordering_name(s.ordering);
    j["rows"] = s.rows;
    j["nnz"] = s.nnz;
    j["cols"] = s.n;
    j["ranks"] = nranks;
    j["regions"] = cfg.loc.describe();
    j["in_degree_max"] = s.deg_max;
    j["in_degree_mean"] = s.deg_mean;
    j["variant"] = r.variant;
    j["kind"] = r.kind;
    j["backend"] = r.backend;
    j["k"] = comb ? Json(r.k) : Json(nullptr);
    j["aware"] = comb ? Json(r.aware) : Json(nullptr);
    j["theta"] = cfg.theta;
    j["reps"] = cfg.reps;
    j["time_s"] = r.time;
    j["best_s"] = r.best;
    j["allgather_time_s"] = s.t_all;
    j["baseline"] = s.baseline;
    j["neighbor_time_s"] = s.t_nbr;
    j["speedup_vs_allgather"] = s.t_all / r.time;
    j["speedup_vs_neighbor"] = s.t_nbr / r.time;
    j["setup_s"] = r.setup;
    // MPI's own collectives are not counted (they run inside MPI): null, not zero.
    const auto counted = [&](auto v) { return r.counted ? Json(v) : Json(nullptr); };
    j["msgs_per_col_max"] = counted(r.msgs_col_max);
    j["msgs_per_col_mean"] = counted(r.msgs_col_mean);
    j["msgs_total_max"] = counted(r.msgs_total_max);
    j["bytes_total_max"] = counted(r.bytes_total_max);
    j["stages"] = counted(r.stages);
    j["groups"] = r.groups;
    j["rel_err"] = r.err;
    j["verified"] = r.ok;
    js.write(j);
  }
}

/// The matrix of `path` (reordered), checked square. A reordered matrix is labelled
/// "<name>+rcm": P A P^T times its own dense counterpart.
DistCsr<double> read_square(MPI_Comm comm, const std::string& path, Ordering ordering, Summary& s) {
  s.name = matrix_label(path) + (ordering == Ordering::natural ? "" : "+" + ordering_name(ordering));
  s.ordering = ordering;
  const double t0 = MPI_Wtime();
  MtxReadOptions ro;
  ro.ordering = ordering;
  DistCsr<double> a = read_matrix_market(comm, path, ro);
  s.rows = a.global_rows(), s.nnz = a.global_nnz();
  if (a.global_cols() != s.rows || a.col_partition() != a.row_partition())
    throw InputError("spmm: " + s.name + " is " + std::to_string(s.rows) + " x " + std::to_string(a.global_cols()) +
                     "; C = A x A needs a square matrix");
  if (s.rows == 0) throw InputError("spmm: " + s.name + " is an empty matrix (0 x 0): nothing to multiply");
  if (comm_rank(comm) == 0)
    std::cerr << "spmm: " << s.name << " (" << s.rows << " x " << s.rows << ", " << s.nnz << " nonzeros, read in "
              << apps::num("%.2f", MPI_Wtime() - t0) << " s)\n";
  return a;
}

/// Runs every variant on one matrix; prints the table on rank 0. Returns false if a check failed.
bool run_matrix(const std::string& path, Ordering ordering, const Config& cfg) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = comm_rank(comm), nranks = comm_size(comm);
  Summary s;
  const DistCsr<double> a = read_square(comm, path, ordering, s);
  s.n = cfg.cols > 0 ? std::min<int64_t>(cfg.cols, s.rows) : s.rows;
  const double dense_bytes = 5.0 * 8.0 * static_cast<double>(s.rows) * static_cast<double>(s.n);
  if (dense_bytes > kDenseLimitBytes) {
    if (rank == 0)
      std::cout << "\n" << s.name << ": skipped: dense B and C with " << s.n << " columns need "
                << apps::num("%.1f", dense_bytes / 1e9) << " GB over all ranks (limit "
                << apps::num("%.1f", kDenseLimitBytes / 1e9) << " GB); use --cols to take fewer columns of B\n";
    return true;
  }
  const Operands op = make_operands(a, s.n);
  const Bench b{comm, a, op, cfg, nranks};
  std::vector<Runner> runners{allgather_runner(b)};
  Topology topo;
  s.t_topo = apps::timed(comm, [&] { topo = topology_from_matrix_blocks(a); });
  auto deg = reduce_all(comm, {static_cast<double>(topo.sources.size())});
  s.deg_max = deg[0].max, s.deg_mean = deg[0].sum / nranks;
  // The per-column baseline is MPI's own neighborhood collective; where it is not registered
  // (the SimGrid SMPI build) p2p takes its place, and the table and JSON say so.
  s.baseline = gather_baseline_backend();
  add_gather_runners(b, topo, s.baseline, runners);
  s.halo_note = add_halo_runners(b, runners, s.t_pattern);
  const std::vector<Result> results = check_and_time(b, runners);
  bool ok = true;
  for (const auto& r : results) {
    ok = ok && r.ok;
    if (r.variant == "allgather") s.t_all = r.time;
    if (r.variant == s.baseline) s.t_nbr = r.time;
  }
  const auto js = apps::open_json_lines(comm, cfg.json);
  if (rank == 0) {
    std::cout << results_table(s, cfg, nranks, results);
    if (js) append_json(*js, s, cfg, nranks, results);
  }
  return ok;
}

/// The settings of the options (--matrix and --regions apart).
Config parse_config(const apps::Options& opt) {
  Config cfg;
  for (int64_t k : apps::int_list("k", opt.get("k"), 2)) cfg.ks.push_back(static_cast<int>(k));
  cfg.awares = apps::aware_variants(opt.get("aware"));
  cfg.theta = opt.get_int("theta");
  cfg.reps = opt.get_count("reps");
  cfg.cols = opt.get_count("cols", 0);
  if (cfg.reps < 1 || cfg.theta < 1 || cfg.cols < 0) throw InputError("--reps, --theta must be >= 1, --cols >= 0");
  if (opt.get("variants") != "all") {
    std::set<std::string> valid{"all", "allgather", "halo"};
    for (const auto& b : gather_backend_names()) valid.insert(b);
    for (const auto& b : backend_names()) valid.insert("halo_" + b);
    for (const auto& v : apps::split_list(opt.get("variants"))) {
      if (!valid.count(v)) {
        std::string names;
        for (const auto& x : valid) names += (names.empty() ? "" : ", ") + x;
        throw InputError("--variants: unknown '" + v + "'; valid: " + names);
      }
      if (v == "all") throw InputError("--variants " + opt.get("variants") + ": all runs every variant; give it alone");
      cfg.variants.insert(v);
    }
  }
  // The combining options must reach a variant that takes them.
  bool combining = false;
  for (const auto& g : gather_backend_names())
    combining = combining || (gather_backend_combines(g) && wanted(cfg, g));
  for (const auto& h : backend_names())
    combining = combining || (halo_backend_combines(h) && wanted(cfg, "halo_" + h, "halo"));
  opt.only_if(combining, {"k", "aware", "theta"},
              "applies to the combining variants (combined, halo_combined), which --variants does not name");
  cfg.json = opt.get("json");
  cfg.orderings.clear();
  for (const auto& o : apps::split_list(opt.get("ordering"))) cfg.orderings.push_back(parse_ordering(o));
  if (cfg.orderings.empty()) throw InputError("--ordering is empty");
  return cfg;
}

}  // namespace

namespace sparsecomm::apps {

int spmm_main(int argc, char** argv) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = comm_rank(comm);
  apps::Options opt(
      apps::with_common({"matrix", "reps", "ordering", "regions", "json"},
                        apps::with_combining(
                            {{"cols", {"0", "columns of B (the first n columns of A); 0: all"}},
                             {"variants",
                              {"all", "comma-separated: all, or any of <gather backend> (p2p, combined, ...), halo, "
                                      "halo_<plan backend>; allgather and neighbor (p2p where neighbor is not "
                                      "registered: SMPI) always run"}}},
                            "2"),
      {{"matrix", "HB/ash292"}, {"reps", "3"}}),
      "usage: mpirun -np P sparsecomm spmm [options]\n"
      "SpMM C = A x B (B = A dense) with one allgather-shaped exchange per column of B, against\n"
      "MPI_Allgatherv and the width-n halo exchange.\n"
      "example: mpirun -np 32 sparsecomm spmm --matrix Pajek/Journals,HB/dwt_193 --k 2,4");
  if (!apps::parse_or_help(comm, opt, argc, argv)) return 0;
  Config cfg = parse_config(opt);

  // Resolve every matrix first; an absent one is a skip (77), not a failure.
  const auto paths = apps::find_matrices_or_skip(comm, apps::split_list(opt.get("matrix")),
                                                 "sparsecomm_spmm: skipped (exit 77): matrix not found on the data "
                                                 "search path (set SPARSECOMM_DATA or fetch it with ssget):\n");
  if (!paths) return 77;
  if (paths->empty()) throw InputError("--matrix is empty");
  cfg.loc = Locality::parse(comm, opt.get("regions"));

  bool ok = true;
  for (const auto& p : *paths)
    for (Ordering o : cfg.orderings) ok = run_matrix(p, o, cfg) && ok;
  if (rank == 0) {
    std::cout << "\n" << (ok ? "every variant's C verified against the serial Eigen product\n" : "VERIFICATION FAILED\n");
    if (!cfg.json.empty()) std::cout << "JSON lines appended to " << cfg.json << "\n";
  }
  return ok ? 0 : 3;
}

}  // namespace sparsecomm::apps
