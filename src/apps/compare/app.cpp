// sparsecomm compare: what a user comes for. One matrix (the largest on the data search
// path, or --matrix / --gen), its halo pattern discovered once by the SDDE, then y = A x
// through every sparsecomm backend and auto, and through PETSc's MatMult with its own
// scatters (-sf_type basic, -sf_type neighbor) and Hypre's hypre_ParCSRMatrixMatvec on the
// same rows, all in one run: every variant is set up and verified first (against each
// rank's own rows, computed from the closed form x_g = sin(g), no exchange), then timed in
// interleaved rounds (apps::interleaved_rounds; per round apps::time_per_call: barrier,
// max over ranks, median of batches). One table: median, spread over the rounds, and the
// speedup over the baseline (PETSc's default scatter, -sf_type basic; p2p where the build
// has no PETSc): baseline time / variant time, higher is better. One more row is what a
// PETSc user gets from the adapter: PETSc's MatMult (its local kernels) with the exchange
// through sparsecomm's auto; the sparsecomm rows use the library's own DistSpmv kernels.
//
//   mpirun -np 4 sparsecomm compare --matrix AMD/G2_circuit --regions ppn:2
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "common/app_main.hpp"
#include "common/backend_args.hpp"
#include "common/cli.hpp"
#include "common/load.hpp"
#include "common/options.hpp"
#include "common/own_rows.hpp"
#include "common/provenance.hpp"
#include "common/table.hpp"
#include "common/timing.hpp"
#include "compare/variant.hpp"
#include "core/compare.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/kernels/dist_spmv.hpp"
#include "sparsecomm/kernels/halo_pattern.hpp"

namespace sparsecomm::apps::comparison {
namespace {

// A sparsecomm backend on the pattern discovered once.
class Ours : public Variant {
 public:
  Ours(const DistCsr<double>& a, const Pattern& pat, const Locality& loc, const std::string& backend,
       const std::string& sdde)
      : backend_(backend), comm_(a.comm()), x_(static_cast<size_t>(a.local_cols()) + 1),
        y_(static_cast<size_t>(a.local_rows()) + 1) {
    PlanOptions po;
    po.sdde = sdde;
    spmv_ = std::make_unique<DistSpmv>(a, make_plan(backend, pat, loc, a.comm(), po));
    for (int32_t i = 0; i < a.local_cols(); ++i) x_[i] = std::sin(static_cast<double>(a.col_begin() + i));
    nrows_ = a.local_rows();
  }
  std::string name() const override {
    const std::string chosen = spmv_->plan().name();
    return "sparsecomm " + backend_ + (chosen == backend_ ? "" : " -> " + chosen);
  }
  void apply() override { spmv_->apply(x_.data(), y_.data()); }
  std::vector<double> local_y() override { return std::vector<double>(y_.begin(), y_.begin() + nrows_); }
  double messages() override {
    const auto& c = spmv_->plan().iteration_counts().total();
    return static_cast<double>(allreduce_max(comm_, c.sent().msgs));
  }

 private:
  std::string backend_;
  MPI_Comm comm_;
  std::unique_ptr<DistSpmv> spmv_;
  std::vector<double> x_, y_;
  int32_t nrows_ = 0;
};

struct Settings {
  std::string label, sdde, json;
  std::vector<std::string> backends;
  int rounds = 15, reps = 3000;
  bool peers = true;
};

/// Collective. Every variant, set up in this order (the same on every rank): the peers
/// first (the baseline is the first), then the sparsecomm backends. Progress on stderr.
std::vector<std::unique_ptr<Variant>> make_variants(const DistCsr<double>& a, const Pattern& pat, const Locality& loc,
                                                    const Settings& st) {
  std::vector<std::unique_ptr<Variant>> v;
  const bool root = comm_rank(a.comm()) == 0;
  const double t0 = MPI_Wtime();
  auto made = [&] {
    if (root) std::cerr << "compare: set up " << v.back()->name() << " (" << num("%.1f", MPI_Wtime() - t0) << " s)\n";
  };
  if (st.peers && have_petsc())
    for (const char* sf : {"basic", "neighbor"}) v.push_back(petsc_variant(a, sf)), made();
  if (st.peers && have_petsc()) v.push_back(petsc_variant(a, "basic", "auto")), made();
  if (st.peers && have_hypre()) v.push_back(hypre_variant(a)), made();
  for (const auto& b : st.backends) v.push_back(std::make_unique<Ours>(a, pat, loc, b, st.sdde)), made();
  return v;
}

struct Row {
  std::string name;
  RoundStats t;
  double msgs = -1, err = 0;
  bool ok = false;
};

/// Collective. Each variant applied once and checked against the reference rows (a NaN
/// or inf never passes: core/compare.hpp).
void verify(std::vector<std::unique_ptr<Variant>>& vs, const std::vector<double>& ref, MPI_Comm comm,
            std::vector<Row>& rows) {
  for (size_t i = 0; i < vs.size(); ++i) {
    vs[i]->apply();
    const std::vector<double> y = vs[i]->local_y();
    Comparison c = compare(y.data(), ref.data(), static_cast<int64_t>(ref.size()));
    if (y.size() != ref.size()) c.add(std::nan(""), 0.0);
    c = c.allreduce(comm);
    rows[i].name = vs[i]->name();
    rows[i].err = c.rel_err();
    rows[i].ok = c.ok(1e-12);
    rows[i].msgs = vs[i]->messages();
  }
}

// Speedups are paired (apps::paired_ratio): per round against the baseline's time of the
// same round, median over rounds.
std::string table(const std::vector<Row>& rows, const std::string& baseline_name, const RoundStats& baseline) {
  Table t({"variant", "us/SpMV", "spread", "speedup vs " + baseline_name, "msgs/rank", "verified"});
  for (const auto& r : rows)
    t.add({r.name, num("%.1f", r.t.median * 1e6), num("%.0f%%", r.t.spread * 100),
           num("%.2f", 1 / paired_ratio(r.t, baseline)),
           r.msgs >= 0 ? num("%.0f", r.msgs) : "-", r.ok ? "yes" : "NO"});
  return t.str();
}

void append_json(JsonLines& js, const Settings& st, const DistCsr<double>& a, const Locality& loc,
                 const std::vector<Row>& rows, const std::string& baseline_name, const RoundStats& baseline) {
  for (const auto& r : rows) {
    Json j = json_record("compare");
    j["matrix"] = st.label;
    j["rows"] = a.global_rows();
    j["nnz"] = a.global_nnz();
    j["ranks"] = comm_size(a.comm());
    j["regions"] = loc.describe();
    j["variant"] = r.name;
    j["us"] = r.t.median * 1e6;
    j["spread"] = r.t.spread;
    j["baseline"] = baseline_name;
    j["speedup"] = 1 / paired_ratio(r.t, baseline);
    j["msgs_max"] = r.msgs;
    j["rounds"] = st.rounds;
    j["reps"] = st.reps;
    j["verified"] = r.ok;
    js.write(j);
  }
}

/// Collective. The whole comparison on one matrix; false if a variant failed its check.
bool run(MPI_Comm comm, const DistCsr<double>& a, const Locality& loc, const Settings& st) {
  const int rank = comm_rank(comm);
  Sdde sdde(comm, loc);
  Pattern pat;
  const double t_sdde = timed(comm, [&] { pat = pattern_from_matrix(a, sdde, st.sdde); });
  const Peers peers;
  auto vs = make_variants(a, pat, loc, st);
  std::vector<Row> rows(vs.size());
  verify(vs, own_rows_product(a, [](int64_t g) { return std::sin(static_cast<double>(g)); }), comm, rows);
  const int per_round = std::max(1, st.reps / st.rounds);
  const auto times = interleaved_rounds(vs.size(), st.rounds, [&](size_t i) {
    const double t = time_per_call(comm, per_round, [&] { vs[i]->apply(); });
    if (rank == 0 && i + 1 == vs.size()) std::cerr << "compare: round done\n";
    return t;
  });
  bool ok = true;
  for (size_t i = 0; i < rows.size(); ++i) rows[i].t = times[i], ok = ok && rows[i].ok;
  const std::string baseline_name = rows.front().name;
  const RoundStats baseline = rows.front().t;
  const auto js = open_json_lines(comm, st.json);
  if (rank == 0) {
    std::cout << "\nSpMV y = A x of " << st.label << " (" << a.global_rows() << " x " << a.global_cols() << ", "
              << a.global_nnz() << " nonzeros) on " << comm_size(comm) << " ranks, regions " << loc.describe() << "\n"
              << "pattern discovered once by the SDDE (" << st.sdde << ") in " << num("%.2f", t_sdde * 1e3)
              << " ms; every variant verified against each rank's own rows, then timed in " << st.rounds
              << " interleaved rounds of " << per_round << " products\n"
              << "us/SpMV: median over rounds of the max over ranks; spread: (max - min) / median over rounds;\n"
              << "speedup: " << baseline_name << " time / variant time in the same round, median over rounds "
              << "(higher is better); msgs/rank: sent per "
              << "product, max over ranks\n\n"
              << table(rows, baseline_name, baseline)
              << (ok ? "every variant verified\n" : "VERIFICATION FAILED\n");
    if (js) append_json(*js, st, a, loc, rows, baseline_name, baseline);
  }
  return ok;
}

}  // namespace
}  // namespace sparsecomm::apps::comparison

namespace sparsecomm::apps {

int compare_main(int argc, char** argv) {
  MPI_Comm comm = MPI_COMM_WORLD;
  // 15 rounds: the main job's table, steadier between runs for a few seconds more
  // (experiments/README.md, "Measurements behind defaults").
  Options o(with_common({"matrix", "gen", "ordering", "backend", "sdde", "regions", "reps", "rounds", "json"},
                        {{"peers", {"yes", "yes: compare with PETSc and Hypre where the build has them; no: backends only"}}},
                        {{"reps", "3000"}, {"sdde", "nbx"}, {"rounds", "15"}}),
            "usage: mpirun -np P sparsecomm compare [options]\n"
            "SpMV through every backend and auto against PETSc's MatMult scatters and Hypre's matvec, one table.\n"
            "example: mpirun -np 4 sparsecomm compare --matrix AMD/G2_circuit --regions ppn:2");
  if (!parse_or_help(comm, o, argc, argv)) return 0;
  comparison::Settings st;
  st.rounds = o.get_count("rounds");
  st.reps = o.get_count("reps");
  if (st.reps < st.rounds) throw InputError("compare: --reps must be at least --rounds");
  st.sdde = o.get("sdde");
  Sdde::check_strategy(st.sdde);
  st.json = o.get("json");
  st.backends = backend_entries(o);
  for (const auto& b : st.backends) backend_hooks(b);  // an unknown name fails here, listing the valid ones
  if (o.get("peers") != "yes" && o.get("peers") != "no") throw InputError("--peers expects yes or no");
  st.peers = o.get("peers") == "yes";
  const auto [label, a, loc] = load_matrix_on_regions(comm, o);
  st.label = label;
  return comparison::run(comm, a, loc, st) ? 0 : 3;
}

}  // namespace sparsecomm::apps
