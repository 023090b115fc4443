// sparsecomm_amg_spmv: the SpMV of every level of a Hypre BoomerAMG hierarchy through
// every backend, against Hypre's own communication, as in Collom, Li and Bienz
// (EuroMPI'23). The problem is the 2D rotated anisotropic diffusion built by Hypre's
// GenerateRotate7pt (45 degrees, anisotropy 0.001 by default).
//
// Per level and backend: the pattern through the SDDE, the Plan, then the time of the
// halo exchange alone (start+wait, packing included) and of the whole SpMV; the baseline
// is Hypre's comm package (hypre_ParCSRCommHandleCreate/Destroy, packing included) and
// hypre_ParCSRMatrixMatvec, measured in the same run, in interleaved rounds (time_level)
// with ratios paired per round. Every level's SpMV is checked against
// hypre_ParCSRMatrixMatvec. A V-cycle also exchanges along each level's interpolation P
// (P x, and P^T x for the restriction): --interp times those too (run_interp), on Hypre's
// packed buffers as the Hypre hook runs them; experiments/hypre_hook/packages.sh times every
// package of a real solve.
//
//   mpirun -np 16 sparsecomm_amg_spmv --nx 512 --ny 512 --regions node --json amg.jsonl
//   mpirun -np 8 sparsecomm_amg_spmv --nx 128 --ny 128 --regions ppn:4 --reps 200
//
// --dump-levels DIR writes every level's matrix to DIR/level_L.mtx (see level_dump.hpp)
// and reads each file back to check it against Hypre's matrix, so that the hierarchy can
// be re-run elsewhere: at simulated scale under SimGrid SMPI, where Hypre is not built
// (experiments/collom/run.sh: Collom, Li, Bienz, EuroMPI'23, at 2,048 simulated ranks).
#include <HYPRE.h>
#include <HYPRE_parcsr_ls.h>
#include <_hypre_parcsr_ls.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>

#include "sparsecomm/kernels/halo_pattern.hpp"
#include "common/app_main.hpp"
#include "common/backend_args.hpp"
#include "common/cli.hpp"
#include "common/provenance.hpp"
#include "common/options.hpp"
#include "common/table.hpp"
#include "common/timing.hpp"
#include "amg_spmv/level_dump.hpp"
#include "core/compare.hpp"
#include "core/memory.hpp"
#include "interop/hypre/package_pattern.hpp"
#include "sparsecomm/kernels/dist_spmv.hpp"
#include "sparsecomm/interop/hypre/hypre_interop.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"

using namespace sparsecomm;

namespace {

struct Result {
  double comm = 0, spmv = 0, setup_sdde = 0, setup_backend = 0, err = 0;  // comm, spmv: medians over rounds
  std::vector<double> comm_rounds, spmv_rounds;  // every interleaved round's time (time_level)
  double setup_plan = 0;  // the plan alone, median of interleaved rounds (plan_setup_rounds)
  double inter_msgs = 0, intra_msgs = 0, inter_bytes = 0, intra_bytes = 0;
  int stages = 1;
  std::string runs;  // the backend the plan runs (auto's pick)
};

struct Level {
  int64_t rows = 0, nnz = 0;
  std::map<std::string, Result> by;  // "hypre" and every backend
  // --interp, levels with an interpolation P: the exchange along P's comm package (job 1,
  // the interpolation P x) and its transpose (job 2, the restriction P^T x), comm only.
  std::map<std::string, Result> interp, restrict_;
  // --dump-levels: the file, and what reading it back found.
  std::string file;
  int64_t hypre_nnz = 0, file_nnz = 0;
  bool same_entries = false;
  double reread_err = 0;  // SpMV of the re-read matrix vs hypre_ParCSRMatrixMatvec
};

const char* kUsage =
    "usage: mpirun -np P sparsecomm amg [options]\n"
    "Builds the rotated anisotropic diffusion problem (Hypre's GenerateRotate7pt, nx*ny rows), a BoomerAMG\n"
    "hierarchy with Hypre's default settings, and times every level's SpMV with every backend vs Hypre.\n"
    "example (per-level table, JSON for experiments/collom/plot_amg.py):\n"
    "  mpirun -np 8 sparsecomm amg --nx 256 --ny 256 --regions ppn:4 --backend p2p,aggregated_dedup,combined \\\n"
    "      --json amg.jsonl\n"
    "\n"
    "--dump-levels DIR writes each level's matrix A_l to DIR/level_L.mtx (L = 0 is the finest) and an index\n"
    "DIR/levels.tsv (level, rows, nnz, file). Format: '%%MatrixMarket matrix coordinate real general', '%'\n"
    "comment lines saying how the hierarchy was built (grid, angle, eps, the number of ranks Hypre ran on),\n"
    "then 'rows cols nnz' and one 'row col value' line per stored entry: 1-based global ids in Hypre's\n"
    "global row order, rows ascending (each rank writes its own rows in place with MPI-IO), columns\n"
    "ascending in a row, values with 17 significant digits (exact), explicit zeros kept. The files are\n"
    "the same at any rank count for the same hierarchy. (Hypre's global order depends on its processor\n"
    "grid: with 1 rank or a prime number of ranks (grid 1 x P) level 0 is in natural lexicographic order.)\n"
    "Every file is read back with the library's Matrix Market reader and checked: identical entries and\n"
    "nnz as Hypre's level matrix, and its SpMV equal to hypre_ParCSRMatrixMatvec (exit 3 otherwise).\n"
    "--dump-only skips the benchmarks. Re-run a level elsewhere, e.g. on simulated ranks (experiments/collom/run.sh\n"
    "does this for every level, with SMPI options that keep 2,048 ranks affordable):\n"
    "  mpirun -np 2 sparsecomm amg --nx 1024 --ny 512 --dump-levels lv --dump-only\n"
    "  scripts/smpi.sh run 2048 --ppn 16 -- build-smpi/src/apps/cli/sparsecomm spmv --matrix lv/level_3.mtx \\\n"
    "      --regions node --reference rows --backend p2p,aggregated_dedup";

// The run's settings, from the options.
struct Config {
  /// The plan of one --backend entry (`name` or `name:key=value[:...]`, e.g. auto:race=30,
  /// measured beside plain auto): its backend and that entry's own options.
  std::unique_ptr<Plan> plan(const std::string& entry, const Pattern& pat, MPI_Comm comm) const {
    PlanOptions popt;
    popt.sdde = sdde;
    const std::string name = apps::split_backend_entry(entry, popt.backend);
    return make_plan(name, pat, loc, comm, popt);
  }
  int64_t nx = 0, ny = 0;
  double angle = 0, eps = 0;
  int reps = 0, max_levels = 0, nranks = 1;
  std::vector<std::string> backends;
  std::string sdde, dump_dir, json;
  bool dump_only = false, interp = false;
  Locality loc;
};

// The problem and its BoomerAMG hierarchy; Hypre's objects are destroyed with it.
class Hierarchy {
 public:
  Hierarchy(MPI_Comm comm, const Config& cfg) {
    // Processor grid P x Q as close to square as possible (Hypre's ij driver layout).
    const int nranks = comm_size(comm), rank = comm_rank(comm);
    for (int d = 1; d * d <= nranks; ++d)
      if (nranks % d == 0) P = d;
    Q = nranks / P;
    HYPRE_Init();
    A_ = GenerateRotate7pt(comm, cfg.nx, cfg.ny, P, Q, rank % P, rank / P, cfg.angle, cfg.eps);
    auto* Ah = reinterpret_cast<hypre_ParCSRMatrix*>(A_);
    HYPRE_ParVectorCreate(comm, hypre_ParCSRMatrixGlobalNumRows(Ah), hypre_ParCSRMatrixRowStarts(Ah), &b_);
    HYPRE_ParVectorInitialize(b_);
    HYPRE_ParVectorCreate(comm, hypre_ParCSRMatrixGlobalNumRows(Ah), hypre_ParCSRMatrixRowStarts(Ah), &x_);
    HYPRE_ParVectorInitialize(x_);
    HYPRE_BoomerAMGCreate(&amg_);
    HYPRE_BoomerAMGSetPrintLevel(amg_, 0);
    HYPRE_BoomerAMGSetMaxLevels(amg_, cfg.max_levels);
    const double t0 = MPI_Wtime();
    HYPRE_BoomerAMGSetup(amg_, A_, b_, x_);
    setup_seconds = MPI_Wtime() - t0;
  }
  ~Hierarchy() {
    HYPRE_BoomerAMGDestroy(amg_);
    HYPRE_ParVectorDestroy(b_);
    HYPRE_ParVectorDestroy(x_);
    HYPRE_ParCSRMatrixDestroy(A_);
    HYPRE_Finalize();
  }
  Hierarchy(const Hierarchy&) = delete;
  Hierarchy& operator=(const Hierarchy&) = delete;
  int levels() const { return hypre_ParAMGDataNumLevels(reinterpret_cast<hypre_ParAMGData*>(amg_)); }
  hypre_ParCSRMatrix* level(int l) const { return hypre_ParAMGDataAArray(reinterpret_cast<hypre_ParAMGData*>(amg_))[l]; }
  /// The interpolation from level l + 1 to level l (l < levels() - 1).
  hypre_ParCSRMatrix* interp(int l) const { return hypre_ParAMGDataPArray(reinterpret_cast<hypre_ParAMGData*>(amg_))[l]; }
  int P = 1, Q = 1;
  double setup_seconds = 0;

 private:
  HYPRE_ParCSRMatrix A_ = nullptr;
  HYPRE_ParVector b_ = nullptr, x_ = nullptr;
  HYPRE_Solver amg_ = nullptr;
};

// x and y = A x of one level as Hypre vectors: x_i = sin(0.1 * gid), Hypre's matvec as the
// reference.
struct LevelVectors {
  LevelVectors(MPI_Comm comm, hypre_ParCSRMatrix* Al, const DistCsr<double>& a) {
    hx = hypre_ParVectorCreate(comm, hypre_ParCSRMatrixGlobalNumCols(Al), hypre_ParCSRMatrixColStarts(Al));
    hypre_ParVectorInitialize(hx);
    hy = hypre_ParVectorCreate(comm, hypre_ParCSRMatrixGlobalNumRows(Al), hypre_ParCSRMatrixRowStarts(Al));
    hypre_ParVectorInitialize(hy);
    xd = hypre_VectorData(hypre_ParVectorLocalVector(hx));
    for (int32_t i = 0; i < a.local_cols(); ++i) xd[i] = std::sin(0.1 * static_cast<double>(a.col_begin() + i));
    xs.assign(xd, xd + a.local_cols());
    hypre_ParCSRMatrixMatvec(1.0, Al, hx, 0.0, hy);
    yref = hypre_VectorData(hypre_ParVectorLocalVector(hy));
  }
  ~LevelVectors() {
    hypre_ParVectorDestroy(hx);
    hypre_ParVectorDestroy(hy);
  }
  LevelVectors(const LevelVectors&) = delete;
  LevelVectors& operator=(const LevelVectors&) = delete;
  hypre_ParVector *hx = nullptr, *hy = nullptr;
  double* xd = nullptr;
  const double* yref = nullptr;
  std::vector<double> xs;
};

/// Collective. Sorted local entries of `a` and `b` identical, and the same column partition.
bool same_entries(const DistCsr<double>& a, const DistCsr<double>& b) {
  auto order = [](const Triplet<double>& u, const Triplet<double>& v) {
    return u.row != v.row ? u.row < v.row : u.col < v.col;
  };
  auto ta = a.local_triplets(), tb = b.local_triplets();
  std::sort(ta.begin(), ta.end(), order);
  std::sort(tb.begin(), tb.end(), order);
  bool same = ta.size() == tb.size() && b.col_partition() == a.col_partition();
  for (size_t k = 0; same && k < ta.size(); ++k)
    same = ta[k].row == tb[k].row && ta[k].col == tb[k].col && ta[k].val == tb[k].val;
  return same;
}

/// Collective. Writes level l, reads it back through the library's reader on Hypre's row
/// partition, and checks it against Hypre's matrix: same nnz, identical entries, and the
/// SpMV of the re-read matrix equal to hypre_ParCSRMatrixMatvec.
void dump_level(MPI_Comm comm, const Config& cfg, const Hierarchy& h, int l, const DistCsr<double>& a,
                const LevelVectors& v, Level& L) {
  hypre_ParCSRMatrix* Al = h.level(l);
  L.file = cfg.dump_dir + "/level_" + std::to_string(l) + ".mtx";
  std::ostringstream what;
  what << "sparsecomm_amg_spmv: BoomerAMG level " << l << " of " << h.levels() << ", " << cfg.nx << "x" << cfg.ny
       << " rotated anisotropic diffusion (Hypre GenerateRotate7pt, angle " << cfg.angle << " deg, eps " << cfg.eps << ")";
  std::ostringstream how;
  how << "hierarchy built with Hypre on " << cfg.nranks << " MPI rank(s), processor grid " << h.P << "x" << h.Q
      << "; global row order is Hypre's; rows " << L.rows << ", nnz " << L.nnz;
  apps::write_matrix_market(a, L.file, {what.str(), how.str()});
  MtxReadOptions ro;
  ro.has_row_partition = true;
  ro.rows = a.row_partition();
  DistCsr<double> back = read_matrix_market(comm, L.file, ro);
  const double hnnz = static_cast<double>(hypre_CSRMatrixNumNonzeros(hypre_ParCSRMatrixDiag(Al)) +
                                          hypre_CSRMatrixNumNonzeros(hypre_ParCSRMatrixOffd(Al)));
  auto red = reduce_all(comm, {hnnz, same_entries(a, back) ? 0.0 : 1.0});
  L.hypre_nnz = static_cast<int64_t>(red[0].sum);
  L.file_nnz = back.global_nnz();
  L.same_entries = red[1].max == 0.0 && L.file_nnz == L.hypre_nnz && L.file_nnz == L.nnz;
  Sdde sdde(comm, cfg.loc);
  PlanOptions popt;
  popt.sdde = cfg.sdde;
  DistSpmv bspmv(back, make_plan("p2p", pattern_from_matrix(back, sdde, cfg.sdde), cfg.loc, comm, popt));
  std::vector<double> yb(static_cast<size_t>(back.local_rows()) + 1);
  bspmv.apply(v.xs.data(), yb.data());
  L.reread_err = compare(yb.data(), v.yref, back.local_rows()).allreduce(comm).rel_err();
  if (comm_rank(comm) == 0)
    std::cerr << "    wrote " << L.file << " (re-read: " << (L.same_entries ? "entries identical" : "ENTRIES DIFFER")
              << ", SpMV rel err " << apps::num("%.1e", L.reread_err) << " vs hypre_ParCSRMatrixMatvec)\n";
}

/// What time_level times for one variant of a level: its halo exchange and its whole SpMV.
struct Timed {
  std::function<void()> exchange, spmv;
};

/// Collective. Hypre's own halo exchange (pack into the send buffer + CommHandleCreate /
/// Destroy) and its matvec into `t` (the buffers live in `hbuf`, `hghost`), and its counts:
/// one message per send neighbor.
Result hypre_baseline(MPI_Comm comm, const Config& cfg, hypre_ParCSRMatrix* Al, const DistCsr<double>& a,
                      LevelVectors& v, std::vector<double>& hbuf, std::vector<double>& hghost, Timed& t) {
  if (!hypre_ParCSRMatrixCommPkg(Al)) hypre_MatvecCommPkgCreate(Al);
  hypre_ParCSRCommPkg* pkg = hypre_ParCSRMatrixCommPkg(Al);
  const int nsends = hypre_ParCSRCommPkgNumSends(pkg);
  const int* starts = hypre_ParCSRCommPkgSendMapStarts(pkg);
  const int* elmts = hypre_ParCSRCommPkgSendMapElmts(pkg);
  hbuf.assign(static_cast<size_t>(starts[nsends]) + 1, 0.0), hghost.assign(static_cast<size_t>(a.num_ghosts()) + 1, 0.0);
  Result H;
  const double* xd = v.xd;
  t.exchange = [pkg, nsends, starts, elmts, xd, &hbuf, &hghost] {
    for (int k = 0; k < starts[nsends]; ++k) hbuf[k] = xd[elmts[k]];
    hypre_ParCSRCommHandle* h = hypre_ParCSRCommHandleCreate(1, pkg, hbuf.data(), hghost.data());
    hypre_ParCSRCommHandleDestroy(h);
  };
  t.spmv = [Al, &v] { hypre_ParCSRMatrixMatvec(1.0, Al, v.hx, 0.0, v.hy); };
  int ninter = 0, nintra = 0;
  double binter = 0, bintra = 0;
  for (int i = 0; i < nsends; ++i) {
    const int dst = hypre_ParCSRCommPkgSendProc(pkg, i);
    const double bytes = 8.0 * (starts[i + 1] - starts[i]);
    if (cfg.loc.same_region(dst)) ++nintra, bintra += bytes;
    else ++ninter, binter += bytes;
  }
  auto red = reduce_all(comm, {double(ninter), double(nintra), binter, bintra});
  H.inter_msgs = red[0].max, H.intra_msgs = red[1].max, H.inter_bytes = red[2].max, H.intra_bytes = red[3].max;
  return H;
}

/// Collective. One backend on one level: the pattern through the SDDE, the plan, the check
/// against Hypre's product and the plan's counts; its exchange alone and whole SpMV into `t`
/// (on `spmv_owner`, which the caller keeps while they are timed).
Result measure_backend(MPI_Comm comm, const Config& cfg, const std::string& backend, const DistCsr<double>& a,
                       const LevelVectors& v, std::unique_ptr<DistSpmv>& spmv_owner, std::vector<double>& y,
                       Timed& t) {
  Result R;
  Sdde sdde(comm, cfg.loc);
  Pattern pat;
  R.setup_sdde = apps::timed(comm, [&] { pat = pattern_from_matrix(a, sdde, cfg.sdde); });
  R.setup_backend =
      apps::timed(comm, [&] { spmv_owner = std::make_unique<DistSpmv>(a, cfg.plan(backend, pat, comm)); });
  DistSpmv& spmv = *spmv_owner;
  Plan& plan = spmv.plan();
  R.runs = plan.name();
  y.assign(static_cast<size_t>(a.local_rows()) + 1, 0.0);
  spmv.apply(v.xs.data(), y.data());
  R.err = compare(y.data(), v.yref, a.local_rows()).allreduce(comm).rel_err();  // +inf on a NaN
  const double* x = v.xs.data();
  t.exchange = [&spmv, x] { spmv.exchange(x); };
  t.spmv = [&spmv, x, &y] { spmv.apply(x, y.data()); };
  const auto& c = plan.iteration_counts().total();
  auto red = reduce_all(comm, {double(c.sent_inter.msgs), double(c.sent_intra.msgs), double(c.sent_inter.bytes),
                               double(c.sent_intra.bytes), double(plan.stages())});
  R.inter_msgs = red[0].max, R.intra_msgs = red[1].max, R.inter_bytes = red[2].max, R.intra_bytes = red[3].max;
  R.stages = static_cast<int>(red[4].max);
  return R;
}

/// Collective. Each backend's plan setup on the level, built again in 5 rounds that
/// alternate the backends (the machine's drift touches all alike), max over ranks, median:
/// what every plan after the communicator's first costs (the first one, which also pays
/// e.g. node detection, is in setup_backend). `auto`'s setup is compared with its pick's
/// from these (issue 34).
void plan_setup_rounds(MPI_Comm comm, const Config& cfg, const DistCsr<double>& a, Level& L) {
  Sdde sdde(comm, cfg.loc);
  const Pattern pat = pattern_from_matrix(a, sdde, cfg.sdde);
  std::map<std::string, std::vector<double>> t;
  for (int round = 0; round < 5; ++round)
    for (const auto& b : cfg.backends) t[b].push_back(apps::timed(comm, [&] { cfg.plan(b, pat, comm); }));
  for (auto& [b, v] : t) {
    std::sort(v.begin(), v.end());
    L.by[b].setup_plan = v[v.size() / 2];
  }
}

/// Collective. The variants' exchanges, then their whole SpMVs, in interleaved rounds
/// (apps::interleaved_rounds: up to 5 rounds, every round timing every variant once, from a
/// rotating start), so a slow phase of the machine hits Hypre and each backend alike; a
/// variant's time is its median over the rounds, and the tables' ratios pair the rounds
/// (apps::paired_ratio). A variant's round: two calls unmeasured (the one before may have
/// been another variant's), then reps / rounds calls after a barrier, the slowest rank's
/// time per call — one batch, not one call per barrier, whose exit skew on oversubscribed
/// cores would be timed with every call.
std::vector<apps::RoundStats> rounds_of(MPI_Comm comm, const Config& cfg, size_t n,
                                        const std::function<const std::function<void()>&(size_t)>& f) {
  const int rounds = std::min(cfg.reps, 5), per = std::max(1, cfg.reps / rounds);
  auto batch = [&](const std::function<void()>& g) {
    g(), g();
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < per; ++i) g();
    return allreduce_max(comm, (MPI_Wtime() - t0) / per);
  };
  return apps::interleaved_rounds(n, rounds, [&](size_t i) { return batch(f(i)); });
}

void time_level(MPI_Comm comm, const Config& cfg, const std::vector<std::string>& names, const std::vector<Timed>& t,
                Level& L) {
  const auto ex = rounds_of(comm, cfg, names.size(), [&](size_t i) -> const std::function<void()>& { return t[i].exchange; });
  const auto sp = rounds_of(comm, cfg, names.size(), [&](size_t i) -> const std::function<void()>& { return t[i].spmv; });
  for (size_t i = 0; i < names.size(); ++i) {
    Result& R = L.by[names[i]];
    R.comm = ex[i].median, R.comm_rounds = ex[i].rounds;
    R.spmv = sp[i].median, R.spmv_rounds = sp[i].rounds;
  }
}

/// Collective. --interp: the exchanges along level l's interpolation P, forward (job 1,
/// what P x receives) and transposed (job 2, what P^T x sends back), Hypre's
/// (hypre_ParCSRCommHandleCreate / Destroy on its packed buffers) and every backend's plans
/// on the same buffers (the transpose with the backend the forward plan runs, as the hook
/// does); every backend's result checked equal to Hypre's, then all timed in interleaved
/// rounds.
void run_interp(MPI_Comm comm, const Config& cfg, const Hierarchy& h, int l, Level& L) {
  hypre_ParCSRMatrix* Pl = h.interp(l);
  if (!hypre_ParCSRMatrixCommPkg(Pl)) hypre_MatvecCommPkgCreate(Pl);
  hypre_ParCSRCommPkg* pkg = hypre_ParCSRMatrixCommPkg(Pl);
  Pattern pat;  // as the Hypre hook builds it
  agree(comm, hypre_pkg::package_pattern(Pl, pkg, &pat) ? "" : "--interp: P's comm package is not a plain matvec package");
  const auto ns = static_cast<size_t>(pat.send().size()), nr = static_cast<size_t>(pat.recv().size());
  const int rank = comm_rank(comm);
  // Inputs: the packed send buffer of x's entries, and the receive side's partial sums of
  // P^T x (made to differ per rank, as partial sums do).
  std::vector<double> fsend(ns + 1), rsend(nr + 1), hf(nr + 1), hr(ns + 1);
  for (size_t k = 0; k < ns; ++k) fsend[k] = std::sin(0.1 * static_cast<double>(pat.send().global_ids[k]));
  for (size_t k = 0; k < nr; ++k) rsend[k] = std::cos(0.1 * static_cast<double>(pat.recv().global_ids[k])) + rank;
  std::vector<std::string> names = {"hypre"};
  std::vector<std::function<void()>> fwd, rev;
  fwd.push_back([pkg, &fsend, &hf] {
    hypre_ParCSRCommHandleDestroy(hypre_ParCSRCommHandleCreate(1, pkg, fsend.data(), hf.data()));
  });
  rev.push_back([pkg, &rsend, &hr] {
    hypre_ParCSRCommHandleDestroy(hypre_ParCSRCommHandleCreate(2, pkg, rsend.data(), hr.data()));
  });
  fwd[0](), rev[0]();  // Hypre's results: the reference
  std::vector<std::unique_ptr<Plan>> plans;
  std::vector<std::vector<double>> outs;
  outs.reserve(2 * cfg.backends.size());  // the lambdas keep references to its elements
  for (const std::string& b : cfg.backends) {
    PlanOptions popt;
    popt.sdde = cfg.sdde;
    plans.push_back(make_plan(apps::split_backend_entry(b, popt.backend), pat, cfg.loc, comm, popt));
    Plan* pf = plans.back().get();
    PlanOptions pr;
    pr.sdde = cfg.sdde;
    pr.backend = popt.backend.only(backend_option_specs(pf->name()));
    plans.push_back(make_plan(pf->name(), pat.reverse(), cfg.loc, comm, pr));
    Plan* pb = plans.back().get();
    std::vector<double>& of = outs.emplace_back(nr + 1, 0.0);
    std::vector<double>& ob = outs.emplace_back(ns + 1, 0.0);
    fwd.push_back([pf, &fsend, &of] { pf->start(fsend.data()), pf->wait(of.data()); });
    rev.push_back([pb, &rsend, &ob] { pb->start(rsend.data()), pb->wait(ob.data()); });
    fwd.back()(), rev.back()();
    // Moved values, not computed ones: equal bit for bit, else the rank counts a mismatch.
    double bad = 0;
    for (size_t k = 0; k < nr; ++k) bad += of[k] != hf[k] ? 1 : 0;
    for (size_t k = 0; k < ns; ++k) bad += ob[k] != hr[k] ? 1 : 0;
    const double err = allreduce_max(comm, bad);
    L.interp[b].err = L.restrict_[b].err = err;
    L.interp[b].runs = L.restrict_[b].runs = pf->name();
    names.push_back(b);
  }
  const auto tf = rounds_of(comm, cfg, names.size(), [&](size_t i) -> const std::function<void()>& { return fwd[i]; });
  const auto tr = rounds_of(comm, cfg, names.size(), [&](size_t i) -> const std::function<void()>& { return rev[i]; });
  for (size_t i = 0; i < names.size(); ++i) {
    Result &F = L.interp[names[i]], &R = L.restrict_[names[i]];
    F.comm = tf[i].median, F.comm_rounds = tf[i].rounds;
    R.comm = tr[i].median, R.comm_rounds = tr[i].rounds;
  }
}

/// Collective. Level l: its sizes, the dump (--dump-levels), Hypre's baseline and every backend.
Level run_level(MPI_Comm comm, const Config& cfg, const Hierarchy& h, int l) {
  hypre_ParCSRMatrix* Al = h.level(l);
  DistCsr<double> a = from_hypre(Al);
  Level L;
  L.rows = a.global_rows();
  L.nnz = a.global_nnz();
  if (comm_rank(comm) == 0) std::cerr << "  level " << l << ": " << L.rows << " rows, " << L.nnz << " nonzeros\n";
  LevelVectors v(comm, Al, a);
  if (!cfg.dump_dir.empty()) dump_level(comm, cfg, h, l, a, v, L);
  if (cfg.dump_only) return L;
  // Every variant built and checked first, then timed in interleaved rounds (time_level).
  std::vector<std::string> names = {"hypre"};
  std::vector<Timed> timed(1 + cfg.backends.size());
  std::vector<double> hbuf, hghost;
  L.by["hypre"] = hypre_baseline(comm, cfg, Al, a, v, hbuf, hghost, timed[0]);
  std::vector<std::unique_ptr<DistSpmv>> spmvs(cfg.backends.size());
  std::vector<std::vector<double>> ys(cfg.backends.size());
  for (size_t i = 0; i < cfg.backends.size(); ++i) {
    L.by[cfg.backends[i]] = measure_backend(comm, cfg, cfg.backends[i], a, v, spmvs[i], ys[i], timed[1 + i]);
    names.push_back(cfg.backends[i]);
  }
  time_level(comm, cfg, names, timed, L);
  spmvs.clear();
  plan_setup_rounds(comm, cfg, a, L);
  if (cfg.interp && l + 1 < h.levels()) run_interp(comm, cfg, h, l, L);
  return L;
}

/// Rank 0. The index of the dumped levels, and the verdict of reading them back.
bool report_dump(const Config& cfg, int nlevels, const std::vector<Level>& out) {
  std::ofstream idx(cfg.dump_dir + "/levels.tsv");
  idx << "# BoomerAMG hierarchy of the " << cfg.nx << "x" << cfg.ny << " rotated anisotropic diffusion (angle "
      << cfg.angle << " deg, eps " << cfg.eps << "), built with Hypre on " << cfg.nranks << " MPI rank(s), " << nlevels
      << " levels\n"
      << "level\trows\tnnz\tfile\n";
  std::ostringstream os;
  os << "\nlevels written to " << cfg.dump_dir << " (hierarchy built with Hypre on " << cfg.nranks << " rank(s)):\n";
  apps::Table t({"level", "rows", "nnz", "hypre nnz", "file nnz", "entries", "SpMV rel err", "file"});
  bool ok = true;
  for (int l = 0; l < nlevels; ++l) {
    const Level& L = out[l];
    const std::string fname = L.file.substr(L.file.find_last_of('/') + 1);
    idx << l << "\t" << L.rows << "\t" << L.nnz << "\t" << fname << "\n";
    ok = ok && L.same_entries && L.reread_err <= 1e-12;
    t.add({std::to_string(l), std::to_string(L.rows), std::to_string(L.nnz), std::to_string(L.hypre_nnz),
           std::to_string(L.file_nnz), L.same_entries ? "identical" : "DIFFER", apps::num("%.1e", L.reread_err), fname});
  }
  std::cout << os.str() << t.str()
            << (ok ? "every level re-read and checked against Hypre (entries, nnz, hypre_ParCSRMatrixMatvec)\n"
                   : "DUMP VERIFICATION FAILED\n");
  return ok;
}

/// Per level: Hypre's time and each backend's with (Hypre / backend, paired over the
/// rounds), then the sum: of the medians, and its ratio paired too (round r of the sum adds
/// round r of every level, each timed beside Hypre's round r). `field` picks the time
/// (comm or whole SpMV), `rounds` its rounds.
std::string time_table(const Config& cfg, const std::vector<Level>& out, double Result::*field,
                       std::vector<double> Result::*rounds,
                       std::map<std::string, Result> Level::*which = &Level::by) {
  using apps::num;
  std::vector<std::string> head = {"level", "rows", "nnz", "hypre"};
  for (const auto& b : cfg.backends) head.push_back(b);
  apps::Table t(head);
  std::map<std::string, apps::RoundStats> sum;  // per variant: the medians and every round, summed over levels
  for (size_t l = 0; l < out.size(); ++l) {
    const Level& L = out[l];
    const std::map<std::string, Result>& by = L.*which;
    if (by.empty()) continue;  // (no interpolation below the coarsest level)
    for (const auto& [name, R] : by) {
      apps::RoundStats& s = sum[name];
      s.median += R.*field;
      s.rounds.resize(std::max(s.rounds.size(), (R.*rounds).size()), 0.0);
      for (size_t r = 0; r < (R.*rounds).size(); ++r) s.rounds[r] += (R.*rounds)[r];
    }
    auto stats = [&](const Result& R) {
      apps::RoundStats s;
      s.median = R.*field, s.rounds = R.*rounds;
      return s;
    };
    const Result& H = by.at("hypre");
    std::vector<std::string> row = {std::to_string(l), std::to_string(L.rows), std::to_string(L.nnz),
                                    num("%.1f", H.*field * 1e6)};
    for (const auto& b : cfg.backends) {
      const Result& R = by.at(b);
      row.push_back(num("%.1f", R.*field * 1e6) + num(" (%.2f)", apps::paired_ratio(stats(H), stats(R))));
    }
    t.add(row);
  }
  t.rule();
  std::vector<std::string> total = {"sum", "", "", num("%.1f", sum["hypre"].median * 1e6)};
  for (const auto& b : cfg.backends)
    total.push_back(num("%.1f", sum[b].median * 1e6) + num(" (%.2f)", apps::paired_ratio(sum["hypre"], sum[b])));
  t.add(total);
  return t.str();
}

std::string counts_table(const Config& cfg, const std::vector<Level>& out) {
  using apps::num;
  std::vector<std::string> chead = {"level", "hypre"};
  for (const auto& b : cfg.backends) chead.push_back(b);
  apps::Table counts(chead);
  for (size_t l = 0; l < out.size(); ++l) {
    std::vector<std::string> row = {std::to_string(l)};
    for (size_t c = 1; c < chead.size(); ++c) {
      const Result& R = out[l].by.at(chead[c]);
      row.push_back(num("%.0f", R.inter_msgs) + " / " + num("%.0f", R.intra_msgs) + " / " + num("%.0f", R.inter_bytes));
    }
    counts.add(row);
  }
  return counts.str();
}

/// Setup summed over levels, the SpMVs until it pays off; `ok` becomes false on a failed check.
std::string setup_table(const Config& cfg, const std::vector<Level>& out, bool& ok) {
  using apps::num;
  apps::Table setup({"backend", "setup[ms]", "sdde[ms]", "plan[ms]", "saved/SpMV[us]", "pays off after", "max rel err"});
  for (const auto& b : cfg.backends) {
    double sdde = 0, plan = 0, saved = 0, err = 0;
    for (const Level& L : out) {
      const Result& R = L.by.at(b);
      sdde += R.setup_sdde, plan += R.setup_backend, err = std::max(err, R.err);
      saved += L.by.at("hypre").comm - R.comm;
      ok = ok && R.err < 1e-12;
    }
    setup.add({b, num("%.2f", (sdde + plan) * 1e3), num("%.2f", sdde * 1e3), num("%.2f", plan * 1e3),
               num("%.1f", saved * 1e6), saved > 0 ? num("%.0f", std::ceil((sdde + plan) / saved)) : "never",
               num("%.1e", err)});
  }
  return setup.str();
}

/// The plan's setup per level and backend; for auto, its pick and the ratio to that
/// backend's own setup on the level when it was measured too (issue 34's goal: <= 1.5).
std::string plan_setup_table(const Config& cfg, const std::vector<Level>& out) {
  using apps::num;
  std::vector<std::string> head = {"level"};
  for (const auto& b : cfg.backends) head.push_back(b);
  apps::Table t(head);
  for (size_t l = 0; l < out.size(); ++l) {
    std::vector<std::string> row = {std::to_string(l)};
    for (const auto& b : cfg.backends) {
      const Result& R = out[l].by.at(b);
      std::string cell = num("%.2f", R.setup_plan * 1e3);
      if (R.runs != b) {
        cell += " (" + R.runs;
        if (out[l].by.count(R.runs)) cell += num(" %.2fx", R.setup_plan / out[l].by.at(R.runs).setup_plan);
        cell += ")";
      }
      row.push_back(cell);
    }
    t.add(row);
  }
  return t.str();
}

/// The fields every JSON record of a level's variant has: the run, the level, the variant
/// and its exchange time.
apps::Json level_record(const char* kind, const Config& cfg, size_t l, const std::string& b, const Result& R) {
  apps::Json j = apps::json_record(kind);
  j["nx"] = cfg.nx;
  j["ny"] = cfg.ny;
  j["ranks"] = cfg.nranks;
  j["regions"] = cfg.loc.describe();
  j["level"] = l;
  j["backend"] = b;
  j["runs"] = b == "hypre" ? b : R.runs;
  j["comm_s"] = R.comm;
  j["comm_rounds_s"] = R.comm_rounds;
  j["reps"] = cfg.reps;
  return j;
}

void append_json(apps::JsonLines& js, const Config& cfg, const std::vector<Level>& out) {
  // --interp: records of their own kind ("amg_interp"), so readers of amg_spmv's see only A's.
  for (size_t l = 0; l < out.size(); ++l)
    for (const auto* which : {&out[l].interp, &out[l].restrict_})
      for (const auto& [b, R] : *which) {
        apps::Json j = level_record("amg_interp", cfg, l, b, R);
        j["op"] = which == &out[l].interp ? "interpolation" : "restriction";
        j["mismatches"] = R.err;
        js.write(j);
      }
  for (size_t l = 0; l < out.size(); ++l)
    for (const auto& [b, R] : out[l].by) {
      apps::Json j = level_record("amg_spmv", cfg, l, b, R);
      j["rows"] = out[l].rows;
      j["nnz"] = out[l].nnz;
      j["spmv_s"] = R.spmv;
      j["spmv_rounds_s"] = R.spmv_rounds;
      j["setup_sdde_s"] = R.setup_sdde;
      j["setup_plan_s"] = R.setup_backend;
      j["setup_plan_median_s"] = R.setup_plan;
      j["inter_msgs_max"] = R.inter_msgs;
      j["intra_msgs_max"] = R.intra_msgs;
      j["inter_bytes_max"] = R.inter_bytes;
      j["intra_bytes_max"] = R.intra_bytes;
      j["stages"] = R.stages;
      j["rel_err"] = R.err;
      js.write(j);
    }
}

/// Rank 0. The tables of the benchmark; false if a level's check failed.
bool report(const Config& cfg, int nlevels, const std::vector<Level>& out, apps::JsonLines* js) {
  std::ostringstream os;
  os << "\nsparsecomm AMG per-level SpMV: " << cfg.nx << "x" << cfg.ny << " rotated anisotropic diffusion (" << cfg.angle
     << " deg, eps " << cfg.eps << "), BoomerAMG " << nlevels << " levels\n"
     << cfg.nranks << " ranks, regions " << cfg.loc.describe() << ", SDDE " << cfg.sdde << ", " << cfg.reps
     << " exchanges per level and backend\n"
     << "comm = halo exchange alone (pack+start+wait+unpack) in us, max over ranks, median over interleaved rounds\n"
     << "(each round times Hypre and every backend once: the median of batches of max over ranks);\n"
     << "(x) = hypre time / backend time in the same round, median over rounds (>1: faster than Hypre)\n\n"
     << time_table(cfg, out, &Result::comm, &Result::comm_rounds)
     << "\nwhole SpMV in us (same method), (x) = hypre_ParCSRMatrixMatvec time / backend time\n"
     << time_table(cfg, out, &Result::spmv, &Result::spmv_rounds)
     << "\nper rank and exchange, max over ranks: inter-region msgs / intra-region msgs / inter-region bytes\n"
     << counts_table(cfg, out)
     << "\nplan setup per level in ms, max over ranks, median of 5 rounds alternating the backends (auto: its pick,\n"
     << "and auto's setup / the pick's own when measured; a communicator's first plan, which also pays e.g. node\n"
     << "detection, is not among them: experiments/auto/setup.sh compares first plans)\n"
     << plan_setup_table(cfg, out)
     << "\nsetup: pattern via SDDE + plan, summed over levels; hierarchy SpMVs until the setup pays for itself\n";
  bool ok = true;
  os << setup_table(cfg, out, ok);
  if (cfg.interp) {
    double bad = 0;
    for (const Level& L : out)
      for (const auto& [b, R] : L.interp) bad += R.err;
    os << "\ninterpolation P x: the exchange along level l's P (to level l from l + 1; job 1 of its comm package), in us,\n"
       << "same method as comm above; every backend's values checked equal to Hypre's ("
       << (bad == 0 ? "all equal" : "MISMATCHES") << ")\n"
       << time_table(cfg, out, &Result::comm, &Result::comm_rounds, &Level::interp)
       << "\nrestriction P^T x: the transpose exchange (job 2), the backend the interpolation's plan runs\n"
       << time_table(cfg, out, &Result::comm, &Result::comm_rounds, &Level::restrict_);
    ok = ok && bad == 0;
  }
  std::cout << os.str() << (ok ? "all levels verified against hypre_ParCSRMatrixMatvec\n" : "VERIFICATION FAILED\n");
  if (js) append_json(*js, cfg, out);
  return ok;
}

/// The settings; false when --help was asked (printed).
bool parse_config(MPI_Comm comm, int argc, char** argv, Config& cfg) {
  apps::Options opt(apps::with_common({"reps", "backend", "sdde", "regions", "json"},
                                      {{"nx", {"512", "grid points in x"}},
                                       {"ny", {"512", "grid points in y"}},
                                       {"angle", {"45", "rotation angle in degrees"}},
                                       {"eps", {"0.001", "anisotropy"}},
                                       {"max-levels", {"25", "BoomerAMG max levels"}},
                                       {"dump-levels", {"", "write each level to DIR/level_L.mtx and DIR/levels.tsv, "
                                                            "read back and checked (format above)"}},
                                       {"dump-only", {"", "[flag] with --dump-levels: only build, write and check the levels"}},
                                       {"interp", {"", "[flag] also the exchanges along each level's interpolation P "
                                                       "(P x and P^T x), Hypre's and every backend's, checked and timed"}}},
                                      {{"reps", "1000"}}),
                    kUsage);
  if (!apps::parse_or_help(comm, opt, argc, argv)) return false;
  cfg.nx = opt.get_count64("nx"), cfg.ny = opt.get_count64("ny");
  cfg.angle = opt.get_double("angle"), cfg.eps = opt.get_double("eps");
  cfg.reps = opt.get_count("reps");
  cfg.max_levels = opt.get_count("max-levels");
  cfg.backends = apps::backend_entries(opt);
  std::vector<std::string> names = cfg.backends;
  (void)apps::backend_options_for("", names);  // every entry's name and own options checked here
  cfg.sdde = opt.get("sdde");
  Sdde::check_strategy(cfg.sdde);
  // (get_count already refused values below 1; a 1-point side has no neighbor to couple)
  for (const auto& [name, v] : {std::pair<const char*, int64_t>{"--nx", cfg.nx}, {"--ny", cfg.ny}})
    if (v < 2) throw InputError(std::string("option ") + name + " must be at least 2 (grid points per side), got " + std::to_string(v));
  // Hypre numbers rows with HYPRE_BigInt (32 bits in a default build, as Debian's) and does
  // not check the grid it is asked for: too many points crash inside it. Bounded here, and
  // the memory of the matrix and its hierarchy asked for before Hypre allocates any.
  constexpr int64_t kIdMax = std::numeric_limits<HYPRE_BigInt>::max();
  if (cfg.nx > kIdMax / cfg.ny)
    throw InputError("--nx " + std::to_string(cfg.nx) + " x --ny " + std::to_string(cfg.ny) +
                     " grid points: more rows than Hypre's ids hold (HYPRE_BigInt of " +
                     std::to_string(8 * sizeof(HYPRE_BigInt)) + " bits: at most " + std::to_string(kIdMax) + ")");
  // (9-point stencil: 9 values and column ids per row; BoomerAMG's levels and interpolation
  // about three times the fine matrix: a lower bound, so that no feasible run is refused)
  const int64_t rows = (cfg.nx * cfg.ny + comm_size(comm) - 1) / comm_size(comm);
  require_memory(comm, rows * 9 * static_cast<int64_t>(sizeof(HYPRE_Complex) + sizeof(HYPRE_Int)) * 3,
                 "amg_spmv: the " + std::to_string(cfg.nx) + " x " + std::to_string(cfg.ny) +
                     " grid's matrix and its BoomerAMG hierarchy",
                 "fewer grid points (--nx, --ny) or more nodes");
  cfg.loc = Locality::parse(comm, opt.get("regions"));
  cfg.dump_dir = opt.get("dump-levels");
  cfg.dump_only = opt.flag("dump-only");
  cfg.interp = opt.flag("interp");
  if (cfg.dump_only && cfg.dump_dir.empty()) throw InputError("--dump-only needs --dump-levels DIR");
  opt.only_if(!cfg.dump_only, {"json", "interp", "backend", "reps", "sdde"},
              "has no effect with --dump-only (which builds, writes and checks the levels and runs no exchange)");
  if (!cfg.dump_dir.empty()) apps::make_directory(comm, cfg.dump_dir);
  cfg.json = opt.get("json");
  cfg.nranks = comm_size(comm);
  return true;
}

}  // namespace

namespace sparsecomm::apps {

int amg_main(int argc, char** argv) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = comm_rank(comm);
  Config cfg;
  if (!parse_config(comm, argc, argv, cfg)) return 0;
  Hierarchy h(comm, cfg);
  const int nlevels = h.levels();
  if (rank == 0)
    std::cerr << "amg_spmv: " << cfg.nx << "x" << cfg.ny << " rotated diffusion, " << nlevels
              << " levels (BoomerAMG setup " << apps::num("%.2f", h.setup_seconds) << " s), "
              << (cfg.dump_only ? std::string("dump only")
                                : std::to_string(cfg.backends.size()) + " backends, " + std::to_string(cfg.reps) + " reps")
              << "\n";
  std::vector<Level> out;
  for (int l = 0; l < nlevels; ++l) out.push_back(run_level(comm, cfg, h, l));
  bool ok = true;
  if (rank == 0 && !cfg.dump_dir.empty()) ok = report_dump(cfg, nlevels, out) && ok;
  const auto js = apps::open_json_lines(comm, cfg.dump_only ? "" : cfg.json);
  if (rank == 0 && !cfg.dump_only) ok = report(cfg, nlevels, out, js.get()) && ok;
  int okall = ok ? 1 : 0;
  MPI_Bcast(&okall, 1, MPI_INT, 0, comm);
  return okall ? 0 : 3;
}

}  // namespace sparsecomm::apps
