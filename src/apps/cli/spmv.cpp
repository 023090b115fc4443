// sparsecomm spmv: y = A x with every backend (and auto) on one matrix, checked against a
// serial reference, timed (barrier, max over ranks, median of batches) with ratios to p2p.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>

#include "sparsecomm/comm/plan/model.hpp"
#include "sparsecomm/kernels/halo_pattern.hpp"
#include "common/load.hpp"
#include "common/app_main.hpp"
#include "common/backend_args.hpp"
#include "common/cli.hpp"
#include "common/provenance.hpp"
#include "common/options.hpp"
#include "common/own_rows.hpp"
#include "common/table.hpp"
#include "common/timing.hpp"
#include "core/compare.hpp"
#include "core/memory.hpp"
#include "sparsecomm/kernels/dist_spmv.hpp"
#include "kernels/reference.hpp"

namespace sparsecomm::apps {

namespace {

double xval(int64_t gid) { return std::sin(static_cast<double>(gid)); }

// y = A x with x_i = sin(i), the oracle. "gathered": the serial product on the gathered
// matrix. "rows": x is a closed form of the global index, so each rank multiplies its own
// rows (global column ids) without any exchange; gathering would put a copy of the whole
// matrix on every rank, which thousands of SMPI ranks in one process cannot hold.
struct Reference {
  std::string kind;
  std::vector<double> y;  // indexed by global row (gathered) or local row (rows)
  int64_t offset = 0;     // where my rows start in y
};

/// Collective. `kind` is gathered, rows or auto (gathered where every node can hold it).
Reference reference_product(MPI_Comm comm, const DistCsr<double>& a, std::string kind) {
  if (kind != "gathered" && kind != "rows" && kind != "auto")
    throw InputError("--reference must be gathered, rows or auto, not '" + kind + "'");
  if (kind == "auto") {
    // Per rank: the gathered triplets, Eigen's copy (values, column ids, row pointers), x and y.
    const int64_t nnz = a.global_nnz(), n = a.global_rows() + a.global_cols();
    kind = memory_fits(comm, nnz * (24 + 16) + (a.global_rows() + 1) * 8 + n * 8) ? "gathered" : "rows";
  }
  Reference r;
  r.kind = kind;
  if (kind == "gathered") {
    const auto ref = reference::gather_eigen(a);
    std::vector<double> xg(static_cast<size_t>(a.global_cols()));
    for (size_t i = 0; i < xg.size(); ++i) xg[i] = xval(static_cast<int64_t>(i));
    r.y = reference::spmv(ref, xg);
    r.offset = a.row_begin();
  } else {
    r.y = own_rows_product(a, xval);
  }
  return r;
}

// One backend, set up and checked; timed later in interleaved rounds.
struct Measured {
  std::string name;  // "b" or "b -> chosen"
  std::string chosen;
  double setup = 0;
  RoundStats time;           // median and spread over the rounds
  RoundStats exchange;       // the halo exchange alone (DistSpmv::exchange), the same way
  std::vector<Reduced> red;  // inter msgs, intra msgs, inter bytes, intra bytes, stages, copied bytes
  bool good = false;
  std::unique_ptr<DistSpmv> spmv;
  std::vector<double> x, y;
};

// What every backend's run shares.
struct Run {
  MPI_Comm comm;
  const DistCsr<double>& a;
  const Pattern& pat;
  const Locality& loc;
  const Reference& ref;
  int width, reps, rounds;
  std::string sdde;
  bool one_node;  // every rank on one node: inter-region messages stay in memory too
};

/// Collective. Plans backend `b` and checks one product against the reference.
std::unique_ptr<Measured> set_up(const Run& r, const std::string& entry, const std::string& b,
                                 const BackendOptions& bo) {
  const int w = r.width;
  const auto& a = r.a;
  auto m = std::make_unique<Measured>();
  m->x.assign(static_cast<size_t>(a.local_cols()) * w + 1, 0.0);
  m->y.assign(static_cast<size_t>(a.local_rows()) * w + 1, 0.0);
  for (int32_t i = 0; i < a.local_cols(); ++i)
    for (int k = 0; k < w; ++k) m->x[i * w + k] = xval(a.col_begin() + i);
  PlanOptions po;
  po.backend = bo;
  po.width = w;
  po.sdde = r.sdde;
  m->spmv = std::make_unique<DistSpmv>(a, make_plan(b, r.pat, r.loc, r.comm, po));
  m->spmv->apply(m->x.data(), m->y.data());
  Comparison cmp;
  for (int32_t i = 0; i < a.local_rows(); ++i)
    for (int k = 0; k < w; ++k) cmp.add(m->y[i * w + k], r.ref.y[r.ref.offset + i], int64_t{i} * w + k);
  m->good = cmp.allreduce(r.comm).ok(1e-12);
  const Plan& plan = m->spmv->plan();
  m->setup = allreduce_max(r.comm, plan.setup_stats().time("setup.backend"));
  // Deterministic counts per exchange: max and sum over ranks, per locality class.
  const auto& c = plan.iteration_counts().total();
  m->red = reduce_all(r.comm, {double(c.sent_inter.msgs), double(c.sent_intra.msgs), double(c.sent_inter.bytes),
                               double(c.sent_intra.bytes), double(plan.stages()),
                               copied_bytes(plan, r.one_node), one_copy_bytes(plan)});
  m->chosen = plan.name();
  m->name = b == m->chosen ? entry : entry + " -> " + m->chosen;
  return m;
}

/// Collective. Every backend timed in interleaved rounds (apps::interleaved_rounds: each
/// round times every backend once, starting with a different one), reps split over them:
/// the whole SpMV, then the halo exchange alone.
void time_all(const Run& r, std::vector<std::unique_ptr<Measured>>& ms) {
  const int per_round = std::max(1, r.reps / r.rounds);
  const auto t = interleaved_rounds(ms.size(), r.rounds, [&](size_t i) {
    Measured& m = *ms[i];
    return time_per_call(r.comm, per_round, [&] { m.spmv->apply(m.x.data(), m.y.data()); });
  });
  const auto e = interleaved_rounds(ms.size(), r.rounds, [&](size_t i) {
    Measured& m = *ms[i];
    return time_per_call(r.comm, per_round, [&] { m.spmv->exchange(m.x.data()); });
  });
  for (size_t i = 0; i < ms.size(); ++i) ms[i]->time = t[i], ms[i]->exchange = e[i];
}

Json json_record(const Run& r, const std::string& label, const std::string& b, const Measured& m) {
  const auto& red = m.red;
  Json j = apps::json_record("spmv");
  j["matrix"] = label;
  j["ranks"] = comm_size(r.comm);
  j["regions"] = r.loc.describe();
  j["backend"] = b;
  j["chosen"] = m.chosen;
  j["spmv_s"] = m.time.median;
  j["spread"] = m.time.spread;
  j["exchange_s"] = m.exchange.median;
  j["exchange_spread"] = m.exchange.spread;
  j["rounds"] = r.rounds;
  j["setup_s"] = m.setup;
  j["width"] = r.width;
  j["rows"] = r.a.global_rows();
  j["nnz"] = r.a.global_nnz();
  j["reps"] = r.reps;
  const char* fields[] = {"inter_msgs", "intra_msgs", "inter_bytes", "intra_bytes"};
  for (int k = 0; k < 4; ++k) {
    j[std::string(fields[k]) + "_max"] = red[k].max;
    j[std::string(fields[k]) + "_sum"] = red[k].sum;
  }
  j["stages"] = red[4].max;
  j["copied_bytes_mean"] = red[5].sum / comm_size(r.comm);
  j["one_copy_bytes_mean"] = red[6].sum / comm_size(r.comm);
  j["verified"] = m.good;
  return j;
}

}  // namespace

namespace {
// Collective. The vectors, before any is allocated: x with its ghosts and y, width w of
// each, for the run and its reference, and a ghost buffer per backend (column-sized vectors
// included: a 1 x 3e9 matrix has few rows and a huge x).
void require_vectors(MPI_Comm comm, const DistCsr<double>& a, int w, size_t backends) {
  const double vec = static_cast<double>(w) * static_cast<double>(sizeof(double)) *
                     (2.0 * (static_cast<double>(a.local_cols()) + static_cast<double>(a.num_ghosts()) +
                             static_cast<double>(a.local_rows())) +
                      static_cast<double>(backends) * static_cast<double>(a.num_ghosts()));
  require_estimated_memory(comm, vec,
                 "spmv: the vectors of width " + std::to_string(w) + " (x with its ghosts and y, for the run and "
                     "its reference, and each backend's ghosts)",
                 "a smaller --width, fewer backends at once, or more nodes");
}
}  // namespace

int spmv_main(int argc, char** argv) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = comm_rank(comm);
  Options o(with_common({"matrix", "gen", "ordering", "backend", "sdde", "regions", "reps", "rounds", "option", "json"},
                        {{"width", {"1", "vectors per SpMV"}},
                         {"reference", {"auto", "oracle: gathered (serial product on the gathered matrix), rows (each "
                                                "rank multiplies its own rows; no gather, for thousands of simulated "
                                                "ranks or matrices too large to copy onto every rank), or auto "
                                                "(gathered where every node can hold a copy per rank, rows otherwise)"}}},
                        {{"reps", "500"}}),
            "usage: mpirun -np P sparsecomm spmv [options]\n"
            "example: mpirun -np 8 sparsecomm spmv --matrix Oberwolfach/gyro_m --regions ppn:4 --backend p2p,auto\n"
            "a --backend entry may carry options of its own, name:key=value[:key=value]: e.g. --backend "
            "aggregated_dedup,aggregated_dedup:window=false times both in one run");
  if (!parse_or_help(comm, o, argc, argv)) return 0;
  auto [label, a, loc] = load_matrix_on_regions(comm, o);
  const int w = o.get_count("width");
  const auto entries = backend_entries(o);
  auto backends = entries;
  const auto bopts = backend_options_for(o.get("option"), backends);
  require_vectors(comm, a, w, backends.size());
  Sdde sdde(comm, loc);
  const Pattern pat = pattern_from_matrix(a, sdde, o.get("sdde"));
  const Reference ref = reference_product(comm, a, o.get("reference"));
  const int reps = o.get_count("reps"), rounds = std::min(o.get_count("rounds"), reps);
  const Run run{comm, a, pat, loc, ref, w, reps, rounds, o.get("sdde"), Locality::one_node(comm)};
  std::vector<std::unique_ptr<Measured>> ms;
  bool ok = true;
  const double t0 = MPI_Wtime();
  for (size_t bi = 0; bi < backends.size(); ++bi) {
    ms.push_back(set_up(run, entries[bi], backends[bi], bopts[bi]));
    ok = ok && ms.back()->good;
    if (rank == 0)
      std::cerr << "spmv: " << ms.back()->name << " set up and " << (ms.back()->good ? "verified" : "WRONG") << " ("
                << num("%.1f", MPI_Wtime() - t0) << " s)\n";
  }
  time_all(run, ms);
  if (rank == 0) std::cerr << "spmv: timed in " << rounds << " rounds (" << num("%.1f", MPI_Wtime() - t0) << " s)\n";
  if (auto js = apps::open_json_lines(comm, o.get("json")))
    for (size_t bi = 0; bi < backends.size(); ++bi) js->write(json_record(run, label, entries[bi], *ms[bi]));
  const auto p2p = std::find(entries.begin(), entries.end(), "p2p");
  // Speedups are paired (apps::paired_ratio: per round against p2p's time of the same round).
  const auto* base = p2p != entries.end() ? &ms[p2p - entries.begin()]->time : nullptr;
  const auto* ebase = p2p != entries.end() ? &ms[p2p - entries.begin()]->exchange : nullptr;
  Table t({"backend", "us/SpMV", "spread", "speedup vs p2p", "us/exchange", "spread", "exchange vs p2p", "setup ms",
           "inter msgs/rank", "copied B/rank", "verified"});
  for (const auto& m : ms)
    t.add({m->name, num("%.1f", m->time.median * 1e6), num("%.0f%%", m->time.spread * 100),
           base ? num("%.2f", 1 / paired_ratio(m->time, *base)) : "-", num("%.1f", m->exchange.median * 1e6),
           num("%.0f%%", m->exchange.spread * 100), ebase ? num("%.2f", 1 / paired_ratio(m->exchange, *ebase)) : "-",
           num("%.2f", m->setup * 1e3), num("%.0f", m->red[0].max), num("%.0f", m->red[5].sum / comm_size(comm)),
           m->good ? "yes" : "NO"});
  if (rank == 0)
    std::cout << "SpMV of " << label << " (" << a.global_rows() << " x " << a.global_cols() << ", " << a.global_nnz()
              << " nonzeros), width " << w << ", " << comm_size(comm) << " ranks, regions " << loc.describe() << "\n"
              << "us/SpMV: median over " << rounds << " interleaved rounds of the max over ranks; spread: (max - min) / "
              << "median; speedup: p2p time / backend time in the same round, median over rounds (higher is better);\n"
              << "us/exchange: the halo exchange alone\n"
              << "copied B/rank: bytes each rank copies in memory per exchange, mean over ranks (pack, unpack, "
              << "staging, shared windows, Open MPI's shared-memory transport; model::copied_bytes); one-copy "
              << "limit (each ghost value read once): "
              << (ms.empty() ? std::string("-") : num("%.0f", ms.front()->red[6].sum / comm_size(comm))) << " B\n"
              << t.str() << (ok ? "every backend verified (" + ref.kind + " reference)\n" : "VERIFICATION FAILED\n");
  return ok ? 0 : 3;
}

}  // namespace sparsecomm::apps
