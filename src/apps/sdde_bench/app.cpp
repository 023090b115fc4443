// sparsecomm_sdde: compares the SDDE strategies on the pattern discovery of a real matrix.
//
// For each strategy: the setup time of pattern_from_matrix (barrier before, max over ranks,
// median of the repetitions after warm-up), the messages and bytes each rank sent, split
// intra-/inter-region (max over ranks and total), and whether the pattern equals the
// direct answer (a dense MPI_Alltoallv). Prints a table on rank 0 and writes JSON lines.
//
//   mpirun -np 4 sparsecomm_sdde --regions ppn:2                 # largest matrix found
//   mpirun -np 8 sparsecomm_sdde --matrix HB/bcsstk13 --regions ppn:4 --reps 20
//   mpirun -np 4 sparsecomm_sdde --gen rotate:512,512 --json out.jsonl
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "sparsecomm/kernels/halo_pattern.hpp"
#include "sparsecomm/comm/pattern.hpp"
#include "common/app_main.hpp"
#include "common/cli.hpp"
#include "common/provenance.hpp"
#include "common/options.hpp"
#include "sparsecomm/matrix/data_path.hpp"
#include "sparsecomm/matrix/generators.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"

using namespace sparsecomm;

namespace {

struct Row {
  std::string strategy;
  double median = 0, min = 0;
  double intra_max = 0, intra_total = 0, inter_max = 0, inter_total = 0;
  double inter_bytes_max = 0, inter_bytes_total = 0, intra_bytes_total = 0;
  bool verified = false;
  bool one_per_region_pair = false;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string fixed(double v, int prec) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(prec);
  os << v;
  return os.str();
}

// The matrix whose pattern is discovered: a named matrix, a generator, or the largest
// matrix found (fallback: generated rotated anisotropic diffusion).
struct Input {
  std::string source, name;
  double t_read = 0;
  DistCsr<double> a;
};

Input load_input(const std::string& gen_spec, const std::string& matrix) {
  Input in;
  if (!gen_spec.empty() && !matrix.empty())
    throw InputError("--matrix " + matrix + " and --gen " + gen_spec +
                     ": give one of them (a file or a generated matrix), not both");
  in.t_read = MPI_Wtime();
  if (!gen_spec.empty()) {
    in.name = gen_spec;
    in.source = "generator";
    in.a = gen::from_spec(MPI_COMM_WORLD, in.name);
  } else {
    std::string path = matrix.empty() ? largest_matrix() : find_matrix(matrix);
    if (path.empty()) {
      in.name = "rotate:512,512";
      in.source = "generator (no SuiteSparse matrix found on the data search path)";
      in.a = gen::from_spec(MPI_COMM_WORLD, in.name);
    } else {
      in.name = path.substr(path.find_last_of('/') + 1);
      in.source = path;
      in.a = read_matrix_market(MPI_COMM_WORLD, path);
    }
  }
  in.t_read = MPI_Wtime() - in.t_read;
  return in;
}

/// Collective. One strategy: `warmup + reps` discoveries, each checked against the
/// reference pattern; the counts of the first (they are deterministic).
Row measure(const DistCsr<double>& a, const Locality& loc, const Pattern& reference, const std::string& strategy,
            int warmup, int reps) {
  Sdde sdde(MPI_COMM_WORLD, loc);
  sdde.prepare(strategy);  // communicators made before the timing, like the constructor's
  Row row;
  row.strategy = strategy;
  std::vector<double> times;
  Stats counted;
  bool ok = true;
  for (int it = 0; it < warmup + reps; ++it) {
    Stats stats;
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    Pattern p = pattern_from_matrix(a, sdde, strategy, &stats);
    const double t = allreduce_max(MPI_COMM_WORLD, MPI_Wtime() - t0);
    if (it >= warmup) times.push_back(t);
    ok = ok && (p == reference);
    if (it == 0) counted = stats;
  }
  row.median = median(times);
  row.min = *std::min_element(times.begin(), times.end());
  const auto& c = counted.total();
  // One inter-region message per (rank, destination region) pair at most: the number of
  // inter-region messages a rank sent never exceeds the number of other regions.
  const double other_regions = loc.num_regions() - 1;
  auto red = reduce_all(MPI_COMM_WORLD,
                        {static_cast<double>(c.sent_intra.msgs), static_cast<double>(c.sent_inter.msgs),
                         static_cast<double>(c.sent_inter.bytes), static_cast<double>(c.sent_intra.bytes),
                         c.sent_inter.msgs <= other_regions ? 1.0 : 0.0, ok ? 0.0 : 1.0});
  row.intra_max = red[0].max, row.intra_total = red[0].sum;
  row.inter_max = red[1].max, row.inter_total = red[1].sum;
  row.inter_bytes_max = red[2].max, row.inter_bytes_total = red[2].sum;
  row.intra_bytes_total = red[3].sum;
  row.one_per_region_pair = red[4].min > 0.5;
  row.verified = red[5].max == 0.0;
  return row;
}

/// Rank 0. The table.
void print_table(const Input& in, int nranks, const Locality& loc, int reps, int warmup, const std::vector<Row>& rows) {
  const double base = rows.front().median;
  const auto& a = in.a;
  std::cout << "sparsecomm SDDE comparison: pattern discovery for SpMV\n"
            << "matrix  : " << in.name << "  (" << a.global_rows() << " x " << a.global_cols() << ", " << a.global_nnz()
            << " nonzeros; from " << in.source << "; read+distributed in " << fixed(in.t_read, 2) << " s)\n"
            << "ranks   : " << nranks << ", regions " << loc.describe() << "\n"
            << "timing  : pattern_from_matrix, barrier before, max over ranks, median of " << reps << " after " << warmup
            << " warm-up; ratio = time / " << rows.front().strategy << " (same run)\n"
            << "messages: sent per rank in one pattern discovery, max over ranks / total\n\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-22s %10s %7s %15s %15s %19s %9s %14s\n", "strategy", "setup[ms]", "ratio",
                "intra max/total", "inter max/total", "inter bytes max/tot", "verified", "<=1 per region");
  std::cout << line << std::string(117, '-') << "\n";
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "%-22s %10.3f %7.2f %7.0f/%-7.0f %7.0f/%-7.0f %9.0f/%-9.0f %9s %14s\n",
                  r.strategy.c_str(), r.median * 1e3, r.median / base, r.intra_max, r.intra_total, r.inter_max,
                  r.inter_total, r.inter_bytes_max, r.inter_bytes_total, r.verified ? "yes" : "NO",
                  r.one_per_region_pair ? "yes" : "no");
    std::cout << line;
  }
  std::cout << "\n(<=1 per region: every rank sent at most one inter-region message per destination region)\n";
}

void append_json(apps::JsonLines& js, const Input& in, int nranks, const Locality& loc, int reps,
                 const std::vector<Row>& rows) {
  const double base = rows.front().median;
  for (const auto& r : rows) {
    apps::Json j = apps::json_record("sdde");
    j["matrix"] = in.name;
    j["rows"] = in.a.global_rows();
    j["nnz"] = in.a.global_nnz();
    j["ranks"] = nranks;
    j["regions"] = loc.describe();
    j["strategy"] = r.strategy;
    j["setup_median_s"] = r.median;
    j["setup_min_s"] = r.min;
    j["ratio"] = r.median / base;
    j["reps"] = reps;
    j["msgs_intra_max"] = r.intra_max;
    j["msgs_intra_total"] = r.intra_total;
    j["msgs_inter_max"] = r.inter_max;
    j["msgs_inter_total"] = r.inter_total;
    j["bytes_inter_max"] = r.inter_bytes_max;
    j["bytes_inter_total"] = r.inter_bytes_total;
    j["bytes_intra_total"] = r.intra_bytes_total;
    j["verified"] = r.verified;
    j["one_inter_msg_per_region_pair"] = r.one_per_region_pair;
    js.write(j);
  }
}

}  // namespace

namespace sparsecomm::apps {

int sdde_main(int argc, char** argv) {
  const int rank = comm_rank(MPI_COMM_WORLD), nranks = comm_size(MPI_COMM_WORLD);
  apps::Options opt(
      apps::with_common({"matrix", "gen", "regions", "sdde", "reps", "json"},
                        {{"warmup", {"2", "untimed repetitions first"}}}, {{"sdde", "all"}, {"reps", "10"}}),
      "usage: mpirun -np P sparsecomm sdde [options]\n"
      "example: mpirun -np 8 sparsecomm sdde --matrix vanHeukelum/cage11 --regions ppn:4");
  if (!apps::parse_or_help(MPI_COMM_WORLD, opt, argc, argv)) return 0;
  const int reps = opt.get_count("reps"), warmup = opt.get_count("warmup", 0);
  if (reps < 1 || warmup < 0) throw InputError("--reps must be >= 1 and --warmup >= 0");
  std::vector<std::string> strategies =
      opt.get("sdde") == "all" ? Sdde::strategies() : apps::split_list(opt.get("sdde"));
  for (const auto& s : strategies) Sdde::check_strategy(s);
  const Input in = load_input(opt.get("gen"), opt.get("matrix"));
  Locality loc = Locality::parse(MPI_COMM_WORLD, opt.get("regions"));
  const Pattern reference = pattern_from_matrix_reference(in.a);
  std::vector<Row> rows;
  for (const auto& strategy : strategies) {
    rows.push_back(measure(in.a, loc, reference, strategy, warmup, reps));
    const Row& row = rows.back();
    if (rank == 0)
      std::cerr << "sdde: " << strategy << " done (" << rows.size() << "/" << strategies.size() << ", median "
                << fixed(row.median * 1e3, 3) << " ms, " << (row.verified ? "verified" : "NOT VERIFIED") << ")"
                << std::endl;
  }
  const auto js = open_json_lines(MPI_COMM_WORLD, opt.get("json"));
  if (rank == 0) {
    print_table(in, nranks, loc, reps, warmup, rows);
    if (js) {
      append_json(*js, in, nranks, loc, reps, rows);
      std::cout << "JSON lines appended to " << opt.get("json") << "\n";
    }
  }
  bool all_verified = true;
  for (const auto& r : rows) all_verified = all_verified && r.verified;
  return all_verified ? 0 : 3;
}

}  // namespace sparsecomm::apps
