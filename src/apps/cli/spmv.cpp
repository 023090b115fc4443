// sparsecomm spmv: y = A x with every backend (and auto) on one matrix, checked against a
// serial reference, timed (barrier, max over ranks, median of batches) with ratios to p2p.
#include <fstream>
#include <iostream>

#include "sparsecomm/kernels/halo_pattern.hpp"
#include "cli/load.hpp"
#include "common/app_main.hpp"
#include "common/backend_args.hpp"
#include "common/cli.hpp"
#include "common/table.hpp"
#include "common/timing.hpp"
#include "core/compare.hpp"
#include "core/memory.hpp"
#include "sparsecomm/kernels/dist_spmv.hpp"
#include "kernels/reference.hpp"

namespace sparsecomm::apps {

int spmv_main(int argc, char** argv) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = comm_rank(comm);
  Options o({{"matrix", {"", "SuiteSparse name or path (default: the largest found)"}},
             {"gen", {"", "generator spec instead"}},
             {"ordering", {"natural", ordering_help()}},
             {"backend", {"all", "comma-separated backends, or all (includes auto)"}},
             {"sdde", {kDefaultSdde, "SDDE strategy for the pattern"}},
             {"regions", {"node", "region layout"}},
             {"width", {"1", "vectors per SpMV"}},
             {"reps", {"500", "SpMVs timed per backend"}},
             {"option", {"", "backend options key=value[,key=value] (e.g. k=4,aware=true for combined); each "
                             "backend gets the keys it declares"}},
             {"reference", {"auto", "oracle: gathered (serial product on the gathered matrix), rows (each rank "
                                    "multiplies its own rows; no gather, for thousands of simulated ranks or "
                                    "matrices too large to copy onto every rank), or auto (gathered where every "
                                    "node can hold a copy per rank, rows otherwise)"}},
             {"json", {"", "append JSON lines"}}},
            "usage: mpirun -np P sparsecomm spmv [options]\n"
            "example: mpirun -np 8 sparsecomm spmv --matrix Oberwolfach/gyro_m --regions ppn:4 --backend p2p,auto");
  if (!o.parse(argc, argv)) {
    if (rank == 0) std::cout << o.help();
    return 0;
  }
  std::string label;
  auto a = load_matrix(comm, o.get("matrix"), o.get("gen"), o.get("ordering"), &label);
  Locality loc = Locality::parse(comm, o.get("regions"));
  const int w = o.get_count("width");
  auto backends = o.get("backend") == "all" ? backend_names() : split_list(o.get("backend"));
  const auto bopts = backend_options_for(o.get("option"), backends);
  Sdde sdde(comm, loc);
  Pattern pat = pattern_from_matrix(a, sdde, o.get("sdde"));
  // Reference: y = A x with x_i = sin(i). "gathered": the serial product on the gathered
  // matrix. "rows": x is a closed form of the global index, so each rank multiplies its own
  // rows (global column ids) without any exchange; gathering would put a copy of the whole
  // matrix on every rank, which thousands of SMPI ranks in one process cannot hold.
  std::string refkind = o.get("reference");
  if (refkind != "gathered" && refkind != "rows" && refkind != "auto")
    throw InputError("--reference must be gathered, rows or auto, not '" + refkind + "'");
  if (refkind == "auto") {
    // Per rank: the gathered triplets, Eigen's copy (values, column ids, row pointers), x and y.
    const int64_t nnz = a.global_nnz(), n = a.global_rows() + a.global_cols();
    refkind = memory_fits(comm, nnz * (24 + 16) + (a.global_rows() + 1) * 8 + n * 8) ? "gathered" : "rows";
  }
  auto xval = [](int64_t gid) { return std::sin(static_cast<double>(gid)); };
  std::vector<double> yg;  // indexed by global row (gathered) or local row (rows)
  int64_t yoff = 0;
  if (refkind == "gathered") {
    const auto ref = reference::gather_eigen(a);
    std::vector<double> xg(static_cast<size_t>(a.global_cols()));
    for (size_t i = 0; i < xg.size(); ++i) xg[i] = xval(static_cast<int64_t>(i));
    yg = reference::spmv(ref, xg);
    yoff = a.row_begin();
  } else {
    yg.assign(static_cast<size_t>(a.local_rows()), 0.0);
    for (const auto& e : a.local_triplets()) yg[e.row - a.row_begin()] += e.val * xval(e.col);
  }
  std::vector<double> x(static_cast<size_t>(a.local_cols()) * w + 1), y(static_cast<size_t>(a.local_rows()) * w + 1);
  for (int32_t i = 0; i < a.local_cols(); ++i)
    for (int k = 0; k < w; ++k) x[i * w + k] = xval(a.col_begin() + i);
  Table t({"backend", "us/SpMV", "vs p2p", "setup ms", "inter msgs/rank", "verified"});
  std::vector<std::vector<std::string>> rows;
  std::map<std::string, double> times;
  bool ok = true;
  std::ofstream js;
  if (rank == 0 && !o.get("json").empty()) js.open(o.get("json"), std::ios::app);
  js.precision(12);  // byte sums over thousands of ranks exceed the default 6 digits
  for (size_t bi = 0; bi < backends.size(); ++bi) {
    const std::string& b = backends[bi];
    PlanOptions po;
    po.backend = bopts[bi];
    po.width = w;
    po.sdde = o.get("sdde");
    DistSpmv spmv(a, make_plan(b, pat, loc, comm, po));
    spmv.apply(x.data(), y.data());
    Comparison cmp;
    for (int32_t i = 0; i < a.local_rows(); ++i)
      for (int k = 0; k < w; ++k) cmp.add(y[i * w + k], yg[yoff + i], int64_t{i} * w + k);
    const bool good = cmp.allreduce(comm).ok(1e-12);
    ok = ok && good;
    times[b] = time_per_call(comm, o.get_count("reps"), [&] { spmv.apply(x.data(), y.data()); });
    const double setup = allreduce_max(comm, spmv.plan().setup_stats().time("setup.backend"));
    // Deterministic counts per exchange: max and sum over ranks, per locality class.
    const auto& c = spmv.plan().iteration_counts().total();
    const auto red = reduce_all(comm, {double(c.sent_inter.msgs), double(c.sent_intra.msgs),
                                       double(c.sent_inter.bytes), double(c.sent_intra.bytes),
                                       double(spmv.plan().stages())});
    const double inter = red[0].max;
    const std::string name = b == spmv.plan().name() ? b : b + " -> " + spmv.plan().name();
    rows.push_back({name, num("%.1f", times[b] * 1e6), b, num("%.2f", setup * 1e3), num("%.0f", inter), good ? "yes" : "NO"});
    if (js) js << "{\"bench\":\"spmv\",\"matrix\":\"" << label << "\",\"ranks\":" << comm_size(comm) << ",\"regions\":\""
               << loc.describe() << "\",\"backend\":\"" << b << "\",\"chosen\":\"" << spmv.plan().name()
               << "\",\"spmv_s\":" << times[b] << ",\"setup_s\":" << setup << ",\"width\":" << w
               << ",\"rows\":" << a.global_rows() << ",\"nnz\":" << a.global_nnz() << ",\"reps\":" << o.get_count("reps")
               << ",\"inter_msgs_max\":" << red[0].max << ",\"inter_msgs_sum\":" << red[0].sum
               << ",\"intra_msgs_max\":" << red[1].max << ",\"intra_msgs_sum\":" << red[1].sum
               << ",\"inter_bytes_max\":" << red[2].max << ",\"inter_bytes_sum\":" << red[2].sum
               << ",\"intra_bytes_max\":" << red[3].max << ",\"intra_bytes_sum\":" << red[3].sum
               << ",\"stages\":" << red[4].max << ",\"verified\":" << (good ? "true" : "false") << "}\n";
  }
  for (auto& r : rows) {
    const std::string b = r[2];
    r[2] = times.count("p2p") ? num("%.2f", times[b] / times["p2p"]) : "-";
    t.add(r);
  }
  if (rank == 0)
    std::cout << "SpMV of " << label << " (" << a.global_rows() << " x " << a.global_cols() << ", " << a.global_nnz()
              << " nonzeros), width " << w << ", " << comm_size(comm) << " ranks, regions " << loc.describe() << "\n"
              << t.str();
  if (rank == 0) std::cout << (ok ? "every backend verified (" + refkind + " reference)\n" : "VERIFICATION FAILED\n");
  return ok ? 0 : 3;
}

}  // namespace sparsecomm::apps
