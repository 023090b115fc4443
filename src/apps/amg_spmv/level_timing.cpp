// Every variant of a level is built and checked first, then all are timed together in
// interleaved rounds (rounds_of), so that a slow phase of the machine hits Hypre and each
// backend alike.
#include "amg_spmv/level_timing.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <memory>

#include "amg_spmv/level_dump.hpp"
#include "common/timing.hpp"
#include "core/compare.hpp"
#include "interop/hypre/package_pattern.hpp"
#include "sparsecomm/comm/sdde.hpp"
#include "sparsecomm/core/error.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "sparsecomm/interop/hypre/hypre_interop.hpp"
#include "sparsecomm/kernels/dist_spmv.hpp"
#include "sparsecomm/kernels/halo_pattern.hpp"

namespace sparsecomm::apps::amg {

namespace {

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
    plans.push_back(make_plan(cfg.plan_options(b, popt), pat, cfg.loc, comm, popt));
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

}  // namespace

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

}  // namespace sparsecomm::apps::amg
