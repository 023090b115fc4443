// sparsecomm_bfs: 2D top-down BFS on R-MAT / Graph500 or SuiteSparse graphs, every run
// validated with the Graph500 rules. Variants: blocking (CombBLAS-style collectives),
// overlapped (phased non-blocking neighborhood collectives; merge- or sort-based
// combination of candidates), plan (expand and fold through sparsecomm Plans, the fold's
// pattern discovered by the SDDE every level).
//
//   mpirun -np 4 sparsecomm_bfs --scale 16                     # 2x2 grid, 16 roots
//   mpirun -np 9 sparsecomm_bfs --graph DIMACS10/luxembourg_osm --variants blocking,overlapped
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <fstream>
#include <iostream>
#include <sstream>

#include "bfs2d/bfs.hpp"
#include "bfs2d/graph.hpp"
#include "bfs2d/graph_options.hpp"
#include "common/app_main.hpp"
#include "common/cli.hpp"
#include "common/provenance.hpp"
#include "common/options.hpp"
#include "common/table.hpp"
#include "sparsecomm/matrix/data_path.hpp"

using namespace sparsecomm;

namespace {

struct Config {
  std::string label;
  bfs::BfsOptions opt;
};

/// Every configuration the options name: one per variant, the overlapped one once per
/// (transport, merge, fold-every) with "fold:N" in the label unless N is 1, and the
/// transport unless it is "neighbor". Every configuration is checked before any BFS runs
/// (every rank parses the same lists, so every rank throws alike).
std::vector<Config> make_configs(const apps::Options& o, int phase_size) {
  std::vector<Config> configs;
  for (const auto& v : apps::split_list(o.get("variants"))) {
    Config c;
    c.opt.variant = v;
    c.opt.phase_size = phase_size;
    c.opt.poll_edges = o.get_int64("poll");
    c.opt.backend = o.get("backend"), c.opt.gather_backend = o.get("gather-backend"), c.opt.sdde = o.get("sdde");
    if (v != "overlapped") {
      c.label = v == "plan" ? "plan/" + c.opt.backend : v;
      configs.push_back(c);
      continue;
    }
    std::vector<std::string> merges{o.get("merge")};
    if (merges[0] == "both") merges = {"merge", "sort"};
    for (const auto& tr : apps::split_list(o.get("transport")))
      for (const auto& m : merges)
        for (int64_t fe : apps::int_list("fold-every", o.get("fold-every"), 0)) {
          c.opt.transport = tr;
          c.opt.merge = m;
          c.opt.fold_every = static_cast<int>(std::min<int64_t>(fe, INT_MAX));
          c.label = "overlapped/" + m + (fe == 1 ? "" : " fold:" + std::to_string(fe)) + (tr == "neighbor" ? "" : " " + tr);
          configs.push_back(c);
        }
  }
  for (const auto& c : configs)
    if (auto err = bfs::options_error(c.opt); !err.empty()) throw InputError(err);
  return configs;
}

// The graph, in 1D (for validation) and on the grid.
struct Input {
  std::string name;
  DistCsr<double> g;
  bfs::Graph2D g2;
  std::vector<int64_t> roots;
};

Input load_graph(MPI_Comm comm, const apps::Options& o, const bfs::Grid& grid, int64_t seed) {
  Input in;
  const double tg = MPI_Wtime();
  if (!o.get("graph").empty()) {
    in.name = o.get("graph");
    in.g = bfs::file_graph(comm, find_matrix(in.name));
  } else {
    in.name = "rmat scale " + o.get("scale") + " ef " + o.get("edge-factor");
    in.g = bfs::rmat_graph(comm, o.get_count("scale"), o.get_count("edge-factor"), static_cast<uint64_t>(seed));
  }
  in.g2 = bfs::Graph2D::build(in.g, grid);
  const double tbuild = MPI_Wtime() - tg;
  in.roots = bfs::pick_roots(in.g, o.get_count("roots"));
  if (comm_rank(comm) == 0)
    std::cerr << "bfs: " << in.name << ": " << in.g.global_rows() << " vertices, " << in.g.global_nnz() / 2
              << " undirected edges, " << grid.pr() << "x" << grid.pc() << " grid, " << in.roots.size()
              << " roots (graph built in " << apps::num("%.2f", tbuild) << " s)\n";
  return in;
}

// One configuration's BFS runs over every root.
struct Row {
  double inv_teps = 0, time = 0;
  bfs::BfsTimes sum;
  int valid = 0, runs = 0;
  std::string first_error;
};

/// Collective. Runs every configuration from every root, validated with the Graph500 rules;
/// `same_levels` becomes false where a variant's BFS levels differ from the first one's
/// (parents may differ on ties, levels may not).
std::vector<Row> run_all(const Input& in, const bfs::Grid& grid, const std::vector<Config>& configs, bool& all_valid,
                         bool& same_levels) {
  std::vector<Row> rows(configs.size());
  std::vector<std::vector<int64_t>> reference_levels(in.roots.size());
  for (size_t ci = 0; ci < configs.size(); ++ci) {
    Row& r = rows[ci];
    for (size_t ri = 0; ri < in.roots.size(); ++ri) {
      bfs::BfsTimes t;
      auto parent = bfs::run_bfs(in.g2, grid, in.roots[ri], configs[ci].opt, &t);
      std::vector<int64_t> levels;
      std::string err = bfs::validate(in.g, in.roots[ri], parent, &levels);
      if (t.corrupt > 0)
        err = "the exchanges delivered " + std::to_string(t.corrupt) +
              " vertex ids outside their receiver's range (skipped)" + (err.empty() ? "" : "; " + err);
      const int64_t m = bfs::traversed_edges(in.g, parent);
      ++r.runs;
      if (err.empty()) ++r.valid;
      else if (r.first_error.empty()) r.first_error = err;
      all_valid = all_valid && err.empty();
      if (ci == 0) reference_levels[ri] = levels;
      else if (levels != reference_levels[ri]) same_levels = false;
      r.inv_teps += t.total / std::max<int64_t>(m, 1);
      r.time += t.total;
      r.sum.transpose += t.transpose, r.sum.expand += t.expand, r.sum.fold += t.fold, r.sum.compute += t.compute;
      r.sum.sort += t.sort, r.sum.exposed += t.exposed, r.sum.levels += t.levels;
    }
  }
  return rows;
}

/// Rank 0. The table, the invalid runs, and how much communication the overlapped variants
/// hide: their exposed communication vs the blocking variant's communication.
void print_report(const Input& in, const bfs::Grid& grid, int p, const std::vector<Config>& configs,
                  const std::vector<Row>& rows, bool same_all) {
  const double nr = static_cast<double>(in.roots.size());
  std::cout << "\nsparsecomm 2D BFS: " << in.name << " (" << in.g.global_rows() << " vertices, " << in.g.global_nnz() / 2
            << " edges), " << p << " ranks (" << grid.pr() << "x" << grid.pc() << "), " << in.roots.size()
            << " roots\nTEPS: harmonic mean over roots; times: mean per BFS in ms, max over ranks of each part; "
               "exposed = time blocked in communication\n\n";
  apps::Table t({"variant", "TEPS", "ms/BFS", "transpose", "expand", "fold", "compute", "sort", "exposed", "valid"});
  for (size_t ci = 0; ci < configs.size(); ++ci) {
    const Row& r = rows[ci];
    t.add({configs[ci].label, apps::num("%.3g", nr / r.inv_teps), apps::num("%.2f", r.time / nr * 1e3),
           apps::num("%.2f", r.sum.transpose / nr * 1e3), apps::num("%.2f", r.sum.expand / nr * 1e3),
           apps::num("%.2f", r.sum.fold / nr * 1e3), apps::num("%.2f", r.sum.compute / nr * 1e3),
           apps::num("%.2f", r.sum.sort / nr * 1e3), apps::num("%.2f", r.sum.exposed / nr * 1e3),
           std::to_string(r.valid) + "/" + std::to_string(r.runs)});
  }
  std::cout << t.str();
  for (size_t ci = 0; ci < configs.size(); ++ci)
    if (!rows[ci].first_error.empty()) std::cout << configs[ci].label << ": INVALID: " << rows[ci].first_error << "\n";
  for (size_t ci = 0; ci < configs.size(); ++ci) {
    if (configs[ci].opt.variant != "blocking") continue;
    const double comm_b = rows[ci].sum.exposed;
    for (size_t cj = 0; cj < configs.size(); ++cj)
      if (configs[cj].opt.variant == "overlapped")
        std::cout << configs[cj].label << ": exposed communication " << apps::num("%.2f", rows[cj].sum.exposed / nr * 1e3)
                  << " ms/BFS vs blocking " << apps::num("%.2f", comm_b / nr * 1e3) << " ms/BFS: hides "
                  << apps::num("%.0f", 100.0 * (1.0 - rows[cj].sum.exposed / comm_b)) << "%\n";
  }
  std::cout << (same_all ? "all variants found the same BFS levels\n" : "VARIANTS DISAGREE ON LEVELS\n");
}

void append_json(apps::JsonLines& js, const Input& in, int p, const std::vector<Config>& configs,
                 const std::vector<Row>& rows) {
  const double nr = static_cast<double>(in.roots.size());
  for (size_t ci = 0; ci < configs.size(); ++ci) {
    const Row& r = rows[ci];
    apps::Json j = apps::json_record("bfs");
    j["graph"] = in.name;
    j["vertices"] = in.g.global_rows();
    j["ranks"] = p;
    j["variant"] = configs[ci].label;
    j["roots"] = in.roots.size();
    j["teps_hmean"] = nr / r.inv_teps;
    j["s_per_bfs"] = r.time / nr;
    j["transpose_s"] = r.sum.transpose / nr;
    j["expand_s"] = r.sum.expand / nr;
    j["fold_s"] = r.sum.fold / nr;
    j["compute_s"] = r.sum.compute / nr;
    j["sort_s"] = r.sum.sort / nr;
    j["exposed_s"] = r.sum.exposed / nr;
    j["transport"] = configs[ci].opt.transport;
    j["fold_every"] = configs[ci].opt.fold_every;
    j["poll_edges"] = configs[ci].opt.poll_edges;
    j["valid"] = r.valid;  // runs that passed the Graph500 validation
    js.write(j);
  }
}

}  // namespace

namespace sparsecomm::apps {

int bfs_main(int argc, char** argv) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = comm_rank(comm), p = comm_size(comm);
  apps::Options o(
      apps::with_common(
          {"backend", "sdde", "json"},
          bfs::with_graph_options(
          {{"variants", {"blocking,overlapped,plan", "comma-separated: blocking, overlapped, plan"}},
           {"phase-size", {"1", "overlapped: neighbors per phase"}},
           {"merge", {"both", "overlapped: merge, sort or both"}},
           {"transport", {"neighbor", "overlapped: neighbor (MPI_Ineighbor_*), p2p (Isend/Irecv per phase) or direct (no "
                                      "transpose, every receive first, pieces in arrival order), comma-separated"}},
           {"fold-every", {"1", "overlapped: compute chunks per fold chunk, comma-separated (0: one fold per level)"}},
           {"poll", {"4096", "overlapped: edges of local compute between progress polls (0: none)"}},
           {"gather-backend", {"p2p", "plan: allgather backend of the expand"}}}),
          {{"backend", "p2p"}, {"sdde", "nbx"}}),
      "usage: mpirun -np P sparsecomm bfs [options]   (P must be a square: 1, 4, 9, 16, ...)\n"
      "example: mpirun -np 4 sparsecomm bfs --scale 16 --roots 16");
  if (!apps::parse_or_help(comm, o, argc, argv)) return 0;
  // Every rank parses the same arguments: a bad value throws on every rank alike. An option
  // of a variant or graph this run does not use is an error, not silently unused.
  const auto variants = apps::split_list(o.get("variants"));
  const auto runs = [&](const char* v) { return std::find(variants.begin(), variants.end(), v) != variants.end(); };
  o.only_if(runs("overlapped"), {"phase-size", "merge", "transport", "fold-every", "poll"},
            "applies to the overlapped variant, which --variants does not name");
  o.only_if(runs("plan"), {"backend", "gather-backend", "sdde"},
            "applies to the plan variant, which --variants does not name");
  o.only_if(o.get("graph").empty(), {"scale", "edge-factor", "seed"},
            "applies to the generated R-MAT graph, not to a --graph file");
  const int64_t seed = o.get_int64("seed");
  const int phase_size = o.get_count("phase-size");
  if (seed < 0 || phase_size < 1) throw InputError("bfs: --seed must be >= 0 and --phase-size >= 1");
  bfs::Grid grid(comm);
  const std::vector<Config> configs = make_configs(o, phase_size);  // checked before the graph is built
  const Input in = load_graph(comm, o, grid, seed);
  bool all_valid = true, same_levels = true;
  const std::vector<Row> rows = run_all(in, grid, configs, all_valid, same_levels);
  int same = same_levels ? 1 : 0, same_all = 0;
  MPI_Allreduce(&same, &same_all, 1, MPI_INT, MPI_MIN, comm);
  const auto js = apps::open_json_lines(comm, o.get("json"));
  if (rank == 0) {
    print_report(in, grid, p, configs, rows, same_all != 0);
    if (js) append_json(*js, in, p, configs, rows);
  }
  return all_valid && same_all ? 0 : 3;
}

}  // namespace sparsecomm::apps
