// sparsecomm plan-stats: exact schedule counts of the communication backends for P
// VIRTUAL ranks, computed in one process (no MPI exchange, no simulation): messages and
// bytes per rank split intra/inter-region, stages, combining groups (hyperedges) and their
// sizes, and a MODELLED latency from the alpha-beta model per locality class. Two kinds of
// exchange: the allgather shape over a topology spec (every rank sends one block to each
// out-neighbor), and the SpMV halo of a matrix file with rows block-distributed over P.
// These are the counts the real runs produce (tests/test_plan_stats.cpp checks that rank
// by rank), for the sizes where even SMPI is too slow (dense random graphs at 4K+ ranks).
#include <algorithm>
#include <chrono>
#include <functional>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

#include "sparsecomm/comm/plan/model.hpp"
#include "sparsecomm/comm/plan/combining_options.hpp"
#include "sparsecomm/comm/virt/plan_stats.hpp"
#include "sparsecomm/matrix/data_path.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"
#include "core/memory.hpp"
#include "common/app_main.hpp"
#include "common/cli.hpp"
#include "common/provenance.hpp"
#include "common/options.hpp"
#include "common/table.hpp"

namespace sparsecomm::apps {

namespace {

struct Summary {
  double msgs_max = 0, msgs_mean = 0, intra_mean = 0, inter_mean = 0, inter_max = 0;
  double bytes_max = 0, bytes_mean = 0, model_max = 0;
  int stages = 1, groups = 0;
  double group_size_mean = 0;
};

// Modelled seconds of one execution on one rank: step_cost (model.hpp) summed over the
// steps in sequence, plus the model's cost per extra stage (stage_cost, per locality
// class). A postal model in the spirit of the max-rate models the auto backend uses;
// labelled as modelled wherever printed.
double modelled(const virt::RankCounts& rc, const ModelParams& m) {
  double t = 0;
  for (const auto& [step, c] : rc.counts.steps()) t += step_cost(m, c);
  return t + stage_cost(m, rc.stages, inter_steps(rc.counts), message_steps(rc.counts, rc.window));
}

Summary summarize(const std::vector<virt::RankCounts>& v, const ModelParams& m) {
  Summary s;
  int64_t members = 0;
  for (const auto& rc : v) {
    const auto& t = rc.counts.total();
    const double msgs = static_cast<double>(t.sent().msgs), bytes = static_cast<double>(t.sent().bytes);
    s.msgs_max = std::max(s.msgs_max, msgs);
    s.inter_max = std::max(s.inter_max, static_cast<double>(t.sent_inter.msgs));
    s.bytes_max = std::max(s.bytes_max, bytes);
    s.msgs_mean += msgs, s.bytes_mean += bytes;
    s.intra_mean += static_cast<double>(t.sent_intra.msgs), s.inter_mean += static_cast<double>(t.sent_inter.msgs);
    s.stages = std::max(s.stages, rc.stages);
    s.groups += rc.groups_led;
    members += rc.group_members;
    s.model_max = std::max(s.model_max, modelled(rc, m));
  }
  const double n = static_cast<double>(v.size());
  s.msgs_mean /= n, s.bytes_mean /= n, s.intra_mean /= n, s.inter_mean /= n;
  s.group_size_mean = s.groups ? static_cast<double>(members) / s.groups : 0;
  return s;
}

// One exchange to count: a topology spec (allgather shape) or a matrix (SpMV halo).
struct Case {
  std::string label;  // topology spec or "matrix:<file name>"
  std::string shape;  // "allgather" or "spmv"
  std::string spec;   // topology spec (allgather)
  const MtxData* mtx = nullptr;
};

// Which registered backends have statistics: a counts hook (BackendHooks /
// GatherBackendHooks), by name; "direct" is the baseline row (p2p) and always printed.
struct Counted {
  std::vector<std::string> halo_names = backend_names(), gather_names = gather_backend_names();
  static bool has(const std::vector<std::string>& v, const std::string& b) {
    return std::find(v.begin(), v.end(), b) != v.end();
  }
  bool halo(const std::string& b) const { return has(halo_names, b) && bool(backend_hooks(b).counts); }
  bool gather(const std::string& b) const { return has(gather_names, b) && bool(gather_backend_hooks(b).counts); }
  /// Backends that declare the combining options run once per k and awareness.
  bool sweeps_combining(const std::string& b) const {
    return (halo(b) && halo_backend_combines(b)) || (gather(b) && gather_backend_combines(b));
  }
  std::string available() const {
    std::string names = "direct";
    for (const auto& n : halo_names)
      if (halo(n)) names += ", " + n;
    for (const auto& n : gather_names)
      if (gather(n) && !halo(n)) names += ", " + n;
    return names;
  }
};

struct Settings {
  std::vector<int> ranks, ks;
  std::vector<bool> awares;
  int theta = 4, width = 1;
  int64_t size = 4;
  std::vector<std::string> backends;  // without "direct"
  std::vector<std::string> topos, matrices;
  std::string regions, json_path;
  ModelParams model;
  Counted counted;
};

Settings parse_settings(const Options& o) {
  Settings st;
  for (int64_t v : int_list("ranks", o.get("ranks"), 1)) st.ranks.push_back(static_cast<int>(v));
  for (int64_t v : int_list("k", o.get("k"), 2)) st.ks.push_back(static_cast<int>(v));
  st.theta = o.get_int("theta");
  st.size = o.get_count("size");
  st.width = o.get_count("width");
  st.awares = aware_variants(o.get("aware"));
  for (const auto& b : split_list(o.get("backends"))) {
    if (b != "direct" && !st.counted.halo(b) && !st.counted.gather(b))
      throw InputError("plan-stats: unknown backend '" + b + "' in --backends (or one without statistics); "
                       "available: " + st.counted.available());
    if (b != "direct") st.backends.push_back(b);
  }
  bool combining = false;
  for (const auto& b : st.backends) combining = combining || st.counted.sweeps_combining(b);
  o.only_if(combining, {"k", "aware", "theta"},
            "applies to the combining backends (combined), which --backends does not name");
  st.matrices = split_specs(o.get("matrices"));
  if (st.matrices.empty() || o.given("topos")) st.topos = split_specs(o.get("topos"));
  if (st.topos.empty() && st.matrices.empty())
    throw InputError("plan-stats: nothing to count (--topos and --matrices are empty)");
  if (st.width < 1) throw InputError("plan-stats: --width must be >= 1");
  st.model = ModelParams::load(o.get("model"));
  st.regions = o.get("regions");
  st.json_path = o.get("json");
  return st;
}

using CountsFn = std::function<std::vector<virt::RankCounts>(const std::string&, const BackendOptions&)>;

// One exchange on p virtual ranks, ready to count any backend variant.
struct Exchange {
  int p = 0;
  std::vector<int> region;
  virt::Graph g;
  virt::HaloPattern halo;
  int64_t edges = 0;
  CountsFn counts;
};

/// The allgather shape over a topology spec, or the SpMV halo of a matrix; prints its line.
/// A backend that exists only as a halo backend (aggregation) counts the allgather shape
/// as the halo exchange that sends each block to every out-neighbor.
std::unique_ptr<Exchange> make_exchange(const Settings& st, int p, const Case& c) {
  auto ex = std::make_unique<Exchange>();
  Exchange& x = *ex;
  x.p = p;
  x.region = virt::regions_from_spec(p, st.regions);
  if (c.shape == "allgather") {
    x.g = virt::Graph::from_spec(p, c.spec);
    x.edges = x.g.edges();
    x.counts = [&x, &st](const std::string& b, const BackendOptions& bo) {
      if (b != "direct" && !st.counted.gather(b)) {
        if (x.halo.p != x.p) x.halo = virt::HaloPattern::from_graph(x.g, st.size);
        PlanOptions po;
        po.value_bytes = 1;
        return virt::halo_counts(b, x.halo, x.region, po);
      }
      GatherOptions go;
      go.value_bytes = 1;
      go.backend = bo;
      return virt::gather_counts(b == "direct" ? "p2p" : b, x.g, x.region, go, st.size);
    };
    std::cout << c.label << " on " << p << " ranks (allgather shape): " << x.edges << " edges, mean degree "
              << num("%.1f", static_cast<double>(x.edges) / p) << "\n";
    return ex;
  }
  const auto& h = c.mtx->header;
  x.halo = virt::HaloPattern::from_matrix(RowPartition::balanced(h.rows, p), RowPartition::balanced(h.cols, p),
                                          c.mtx->entries);
  x.edges = x.halo.segments();
  x.counts = [&x, &st](const std::string& b, const BackendOptions& bo) {
    PlanOptions po;
    po.width = st.width;
    po.backend = bo;
    return virt::halo_counts(b == "direct" ? "p2p" : b, x.halo, x.region, po);
  };
  std::cout << c.label << " on " << p << " ranks (SpMV halo, " << h.rows << " rows): " << x.edges
            << " messages, mean degree " << num("%.1f", static_cast<double>(x.edges) / p) << "\n";
  return ex;
}

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The table of one exchange, a row per variant (and a JSON line when asked).
struct Report {
  const Settings& st;
  const Case& c;
  const Exchange& x;
  JsonLines* json;
  Summary direct;
  Table tab{{"variant", "msgs max", "msgs mean", "intra", "inter", "inter max", "bytes max", "stages", "groups", "size",
             "reduction", "modelled[us]", "speedup", "host[s]"}};

  void row(const std::string& name, const Summary& s, double host, int k, bool aware) {
    const double reduction = direct.msgs_mean / std::max(s.msgs_mean, 1e-30);
    const double speedup = direct.model_max / std::max(s.model_max, 1e-30);
    tab.add({name, num("%.0f", s.msgs_max), num("%.1f", s.msgs_mean), num("%.1f", s.intra_mean), num("%.1f", s.inter_mean),
             num("%.0f", s.inter_max), num("%.0f", s.bytes_max), std::to_string(s.stages), std::to_string(s.groups),
             num("%.2f", s.group_size_mean), num("%.2f", reduction), num("%.2f", s.model_max * 1e6),
             num("%.2f", speedup), num("%.2f", host)});
    if (!json) return;
    Json j = apps::json_record("plan-stats");
    j["topo"] = c.label;
    j["shape"] = c.shape;
    j["p"] = x.p;
    j["regions"] = st.regions;
    j["variant"] = name;
    j["k"] = k;
    j["aware"] = aware;
    j["theta"] = st.theta;
    j["size"] = c.shape == "spmv" ? 8 * st.width : st.size;
    j["edges"] = x.edges;
    j["msgs_max"] = s.msgs_max;
    j["msgs_mean"] = s.msgs_mean;
    j["intra_mean"] = s.intra_mean;
    j["inter_mean"] = s.inter_mean;
    j["inter_max"] = s.inter_max;
    j["bytes_max"] = s.bytes_max;
    j["stages"] = s.stages;
    j["groups"] = s.groups;
    j["group_size_mean"] = s.group_size_mean;
    j["reduction"] = reduction;
    j["modelled_s"] = s.model_max;
    j["modelled_speedup"] = speedup;
    j["host_s"] = host;
    json->write(j);
  }
};

/// Counts every variant of one exchange and prints its table.
void count_case(const Settings& st, int p, const Case& c, JsonLines* json) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto x = make_exchange(st, p, c);
  Report rep{st, c, *x, json, summarize(x->counts("direct", {}), st.model)};
  rep.row("direct", rep.direct, since(t0), 0, false);
  for (const auto& b : st.backends) {
    if (!st.counted.sweeps_combining(b)) {
      const auto t1 = std::chrono::steady_clock::now();
      rep.row(b, summarize(x->counts(b, {}), st.model), since(t1), 0, false);
      continue;
    }
    for (int k : st.ks)
      for (bool aware : st.awares) {
        const auto t1 = std::chrono::steady_clock::now();
        CombiningOptions co;
        co.k = k;
        co.theta = st.theta;
        co.aware = aware;
        BackendOptions bo;
        set_combining(bo, co);
        const auto s = summarize(x->counts(b, bo), st.model);
        rep.row(b + " k=" + std::to_string(k) + (aware ? " aware" : " agnostic"), s, since(t1), k, aware);
      }
  }
  std::cout << rep.tab.str() << "\n" << std::flush;
}

/// Rank 0: everything. Matrices are read once, before any output, so that a bad name fails early.
void run_plan_stats(const Settings& st) {
  std::unique_ptr<JsonLines> json;
  if (!st.json_path.empty()) json = std::make_unique<JsonLines>(st.json_path);
  std::vector<MtxData> mtx;
  std::vector<Case> cases;
  for (const auto& spec : st.topos) cases.push_back({spec, "allgather", spec, nullptr});
  mtx.reserve(st.matrices.size());
  for (const auto& name : st.matrices) {
    const std::string path = find_matrix(name);
    mtx.push_back(parse_mtx(path, [&](const MtxHeader& h) {
      const double bound = mtx_entry_bound(h);
      require_estimated_memory(MPI_COMM_SELF, bound * static_cast<double>(sizeof(Triplet<double>)),
                               "plan-stats: the entries of " + path + " (up to " +
                                   std::to_string(static_cast<long long>(std::min(bound, 9.0e18))) +
                                   " from its size line)",
                               "plan-stats holds each matrix whole in one process");
    }));
    cases.push_back({"matrix:" + path.substr(path.find_last_of('/') + 1), "spmv", "", &mtx.back()});
  }
  std::cout << "plan-stats: exact schedule counts of virtual ranks (no execution); latency is MODELLED\n"
            << "model: " << st.model.describe() << "\nallgather shape: " << st.size
            << " B per out-neighbor; SpMV halo: " << 8 * st.width << " B per value; regions " << st.regions
            << (st.regions == "node" ? " (the virtual ranks share this one node: one region; --regions ppn:k for more)"
                                     : "")
            << ", theta " << st.theta << "\n"
            << "msgs = messages sent per rank per exchange (max, mean; mean intra/inter-region);"
               " groups = combining groups (hyperedges) of size >= 2, mean size;\n"
               "reduction = mean msgs of direct / mean msgs; modelled = busiest rank, alpha-beta per class\n\n";
  for (int p : st.ranks)
    for (const auto& c : cases) count_case(st, p, c, json.get());
}

const char* kUsage =
    "usage: sparsecomm plan-stats [options]     (one process; extra MPI ranks stay idle)\n"
    "Exact per-rank schedule counts of the backends for P virtual ranks, the same counts a\n"
    "real run builds (tested), plus a MODELLED latency. 'direct' is the baseline.\n"
    "examples:\n"
    "  sparsecomm plan-stats --ranks 4096 --topos 'er:0.1;er:0.4' --k 2,4 --aware both --regions ppn:32\n"
    "  sparsecomm plan-stats --ranks 1024,4096,8192 --topos 'moore:2,2' --regions ppn:8\n"
    "  sparsecomm plan-stats --ranks 512,2048 --matrices G2_circuit --regions ppn:16 \\\n"
    "      --backends direct,combined,aggregated,aggregated_dedup";

}  // namespace

int plan_stats_main(int argc, char** argv) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = comm_rank(comm);
  Options o(with_common({"regions", "json"},
                        {{"ranks", {"4096", "P: number of virtual ranks (comma-separated list allowed)"}},
                         {"topos", {"er:0.05;moore:2,2", "topologies separated by ';' or spaces: er:<density>[,seed], "
                                                         "moore:<dims>,<radius> (allgather shape; skipped when only "
                                                         "--matrices is given)"}},
                         {"matrices", {"", "matrices (SuiteSparse names or .mtx paths, ';' or spaces): their SpMV halo, "
                                           "rows block-distributed over P"}},
                         {"backends", {"direct,combined", "direct (the p2p baseline) and any registered backend with "
                                                          "statistics (combined, aggregated, aggregated_dedup, "
                                                          "aggregated_2step, ...)"}},
                         {"k", {"2", "combining group sizes, comma-separated (each >= 2)"}},
                         {"theta", {"4", "combining threshold: minimum common out-neighbors"}},
                         {"aware", {"agnostic", "agnostic, aware or both"}},
                         {"size", {"4", "allgather shape: bytes each rank sends to each out-neighbor"}},
                         {"width", {"1", "SpMV halo: vectors per exchange (8-byte values)"}},
                         {"model", {"", "model parameter file for the modelled latency (default: built-in, see model.hpp)"}}}),
            kUsage);
  if (!parse_or_help(comm, o, argc, argv)) return 0;
  // Everything happens on rank 0; an error there is agreed with the other ranks.
  std::string err;
  int rc = 0;
  if (rank == 0) {
    try {
      run_plan_stats(parse_settings(o));
    } catch (const std::exception& e) {
      err = e.what();
      rc = 2;
    }
  }
  agree(comm, err);
  return rc;
}

}  // namespace sparsecomm::apps
