// auto: model-based choice of the backend. Predicts each other registered backend's cost
// per execution from its deterministic counts (comm/model.hpp) and returns the plan of the
// lowest prediction, its name kept; setup_stats() hold "auto.predict.<backend>" (seconds,
// every candidate), "auto.setup.<backend>" (every candidate it built), "auto.choose" (the
// time to choose) and "setup.backend" (auto's whole setup), which `sparsecomm info` prints.
//
// Counts without plans: a backend's counts hook (BackendHooks::counts, the one plan
// statistics use and tests/test_plan_stats.cpp checks rank by rank against real plans)
// gives every rank's counts from the whole pattern. Rank 0 gathers the pattern's send
// side (every rank's destinations and segment sizes, and per remote region the number of
// distinct ids it sends there, counted by each rank for itself; the ids themselves stay
// home: rank 0 stands in ids that repeat alike, see gather_pattern — a counts hook that
// reads more of the ids than their repetition per rank and region would see stand-ins),
// evaluates every candidate's counts and the model's
// prediction (predict_from_terms, the same formula predict_iteration reduces over real
// ranks), and broadcasts the predictions. Only the chosen plan is built. A backend
// without a counts hook (one registered outside the library) is built and predicted from
// its real counts, as before. So auto's setup is its chosen backend's plus one gather of
// the pattern and rank 0's counting; the counting of message-combining candidates grows
// with P (combining_schedules) and dominates at thousands of ranks.
//
// With the option iterations = N > 0 the choice weighs setup + N x execution cost, and a
// setup time is only known by building: then every candidate is built and its measured
// setup (max over ranks) used, as before.
#include <algorithm>
#include <limits>
#include <map>

#include "sparsecomm/comm/plan/model.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/comm/virt/plan_stats.hpp"

namespace sparsecomm {

namespace {

// Collective: every rank's send side on rank 0 as a virtual pattern (the other ranks get
// an empty one). What the counts need of the ids is, per rank and remote region, how many
// distinct ids it sends there: every rank counts its own (in parallel) and sends that with
// its destinations and segment sizes, not the ids. Rank 0 fills each segment with
// stand-in ids that repeat across one rank's segments to a region exactly as often as the
// real ones (segment j of a region's segments takes (offset_j + t) mod D, D the distinct
// count), and records the counts in HaloPattern::distinct.
virt::HaloPattern gather_pattern(MPI_Comm c, const Pattern& p, const std::vector<int>& region) {
  const auto& s = p.send();
  const int me = comm_rank(c);
  std::map<int, std::vector<int64_t>> to_region;  // remote region -> my ids for it
  for (int i = 0; i < s.num_neighbors(); ++i)
    if (region[static_cast<size_t>(s.ranks[i])] != region[static_cast<size_t>(me)]) {
      auto& v = to_region[region[static_cast<size_t>(s.ranks[i])]];
      v.insert(v.end(), s.global_ids.begin() + s.offsets[i], s.global_ids.begin() + s.offsets[i + 1]);
    }
  std::vector<int64_t> mine;  // [neighbors, (rank, count) ..., regions, (region, distinct) ...]
  mine.reserve(2 + 2 * static_cast<size_t>(s.num_neighbors()) + 2 * to_region.size());
  mine.push_back(s.num_neighbors());
  for (int i = 0; i < s.num_neighbors(); ++i) mine.push_back(s.ranks[i]), mine.push_back(s.count(i));
  mine.push_back(static_cast<int64_t>(to_region.size()));
  for (auto& [S, v] : to_region) {
    std::sort(v.begin(), v.end());
    mine.push_back(S), mine.push_back(static_cast<int64_t>(std::unique(v.begin(), v.end()) - v.begin()));
  }
  // To rank 0 point-to-point on the library's duplicate of c (rank 0 takes them in arrival
  // order): one message per rank, no count exchange before it as a gatherv would need.
  const int P = comm_size(c);
  const MPI_Comm lc = library_comm(c);
  constexpr int kTag = 71;
  if (me != 0) {
    SPC_MPI(MPI_Send(mine.data(), static_cast<int>(mine.size()), MPI_INT64_T, 0, kTag, lc));
    return {};
  }
  std::vector<std::vector<int64_t>> got(static_cast<size_t>(P));
  got[0] = std::move(mine);
  for (int k = 1; k < P; ++k) {  // (probe, then receive from the source it names: SMPI has no MPI_Mprobe)
    MPI_Status st;
    SPC_MPI(MPI_Probe(MPI_ANY_SOURCE, kTag, lc, &st));
    int n = 0;
    SPC_MPI(MPI_Get_count(&st, MPI_INT64_T, &n));
    auto& v = got[static_cast<size_t>(st.MPI_SOURCE)];
    v.resize(static_cast<size_t>(n));
    SPC_MPI(MPI_Recv(v.data(), n, MPI_INT64_T, st.MPI_SOURCE, kTag, lc, MPI_STATUS_IGNORE));
  }
  virt::HaloPattern h;
  h.p = P;
  h.send.resize(static_cast<size_t>(P));
  h.distinct.resize(static_cast<size_t>(P));
  for (int r = 0; r < P; ++r) {
    const std::vector<int64_t>& all = got[static_cast<size_t>(r)];
    size_t at = 0;
    const int64_t nb = all[at++];
    const size_t seg_at = at;
    at += 2 * static_cast<size_t>(nb);
    const int64_t nreg = all[at++];
    for (int64_t k = 0; k < nreg; ++k, at += 2) h.distinct[static_cast<size_t>(r)][static_cast<int>(all[at])] = all[at + 1];
    std::map<int, int64_t> offset;  // per remote region: values handed out so far
    for (int64_t i = 0; i < nb; ++i) {
      const int dest = static_cast<int>(all[seg_at + 2 * static_cast<size_t>(i)]);
      const int64_t cnt = all[seg_at + 2 * static_cast<size_t>(i) + 1];
      std::vector<int64_t> ids(static_cast<size_t>(cnt));
      const int S = region[static_cast<size_t>(dest)];
      if (S == region[static_cast<size_t>(r)]) {
        for (int64_t t = 0; t < cnt; ++t) ids[static_cast<size_t>(t)] = t;
      } else {
        const int64_t D = std::max<int64_t>(1, h.distinct[static_cast<size_t>(r)].at(S));
        int64_t& off = offset[S];
        for (int64_t t = 0; t < cnt; ++t) ids[static_cast<size_t>(t)] = (off + t) % D;
        off += cnt;
      }
      h.send[static_cast<size_t>(r)].push_back({dest, std::move(ids)});
    }
  }
  return h;
}

// Rank 0: the prediction of backend `name` from its counts hook, as predict_iteration
// would make it on the plan that backend builds.
double predict_virtual(const std::string& name, const virt::HaloPattern& h, const std::vector<int>& region,
                       const PlanOptions& co, const ModelParams& m) {
  const std::vector<virt::RankCounts> c = virt::halo_counts(name, h, region, co);
  const double eb = static_cast<double>(co.width) * co.value_bytes;
  std::vector<RankTerms> terms(c.size());
  for (size_t r = 0; r < c.size(); ++r) {
    double own = 0;
    for (const auto& seg : h.send[r]) own += static_cast<double>(seg.second.size()) * eb;
    const auto& t = c[r].counts.total();
    const double staged = std::max(0.0, static_cast<double>(t.sent_intra.bytes + t.sent_inter.bytes) - own);
    terms[r] = rank_terms(c[r].counts, c[r].window, staged, c[r].stages, m);
  }
  return predict_from_terms(terms, region, m);
}

}  // namespace

namespace detail {
void register_auto() {
  register_backend(
      "auto", "model-based choice among the other backends (see sparsecomm_calibrate)",
      [](const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o) -> std::unique_ptr<Plan> {
        const double t0 = MPI_Wtime();
        const ModelParams m = ModelParams::resolve(c, l, o.backend.get("model", ""));
        const double t_model = MPI_Wtime() - t0;
        double t_gather = 0, t_count = 0;
        const int64_t iterations = o.backend.get_int("iterations", 0);
        // Candidates in order of setup complexity (each backend's BackendHooks::setup_rank,
        // then its name): a tie goes to the simpler one, so the choice is deterministic
        // (with iterations > 0 it also weighs measured setup times, which vary
        // from run to run).
        std::vector<std::string> order;
        for (const auto& n : backend_names())
          if (!backend_hooks(n).chooses_among_others) order.push_back(n);
        std::stable_sort(order.begin(), order.end(), [](const std::string& a, const std::string& b) {
          return backend_hooks(a).setup_rank < backend_hooks(b).setup_rank;
        });
        auto options_of = [&](const std::string& name) {
          PlanOptions co = o;  // each candidate gets the options it declares (k for combined, ...)
          co.backend = o.backend.only(backend_option_specs(name));
          return co;
        };
        // Predictions from counts, on rank 0, for the candidates with a counts hook.
        std::vector<double> predicted(order.size(), -1.0);
        if (iterations == 0) {
          std::vector<int> node;  // windows follow the real node, not emulated regions
#ifndef SPARSECOMM_SMPI  // (SMPI has no shared windows: every transfer is a message)
          bool windows = false;
          for (const auto& n : order) windows = windows || backend_hooks(n).node_window;
          if (windows) node = node_labels(c);
#endif
          std::vector<int> region;
          for (int r = 0; r < l.size(); ++r) region.push_back(l.region_of(r));
          const double tg = MPI_Wtime();
          virt::HaloPattern h = gather_pattern(c, p, region);
          h.node = std::move(node);
          t_gather = MPI_Wtime() - tg;
          const double tc = MPI_Wtime();
          // Rank 0 counts; its predictions (or its error) reach every rank in one broadcast.
          root_computed(c, 0, predicted, [&] {
            for (size_t i = 0; i < order.size(); ++i)
              if (backend_hooks(order[i]).counts)
                predicted[i] = predict_virtual(order[i], h, region, options_of(order[i]), m);
          });
          t_count = MPI_Wtime() - tc;
        }
        // The others are built and predicted from their real counts (all of them with
        // iterations > 0, where measured setup times enter the cost).
        std::map<std::string, std::unique_ptr<Plan>> built;
        std::vector<double> setup(order.size(), 0.0);
        for (size_t i = 0; i < order.size(); ++i) {
          if (predicted[i] >= 0) continue;
          auto plan = make_plan(order[i], p, l, c, options_of(order[i]));
          setup[i] = allreduce_max(c, plan->setup_stats().time("setup.backend"));
          predicted[i] = predict_iteration(*plan, m, c);
          built[order[i]] = std::move(plan);
        }
        size_t best = 0;
        double best_cost = std::numeric_limits<double>::infinity();
        for (size_t i = 0; i < order.size(); ++i) {
          const double cost = iterations > 0 ? setup[i] + static_cast<double>(iterations) * predicted[i] : predicted[i];
          // Strictly cheaper only (combining that found no groups ties with p2p and loses);
          // the inputs are the same on every rank, so every rank decides the same.
          if (cost < best_cost * (1 - 1e-9)) best_cost = cost, best = i;
        }
        const std::string& name = order[best];
        std::unique_ptr<Plan> chosen =
            built.count(name) ? std::move(built[name]) : make_plan(name, p, l, c, options_of(name));
        if (!built.count(name)) setup[best] = allreduce_max(c, chosen->setup_stats().time("setup.backend"));
        for (size_t i = 0; i < order.size(); ++i) {
          chosen->setup_stats_mut().add_time("auto.predict." + order[i], predicted[i]);
          if (built.count(order[i]) || i == best) chosen->setup_stats_mut().add_time("auto.setup." + order[i], setup[i]);
        }
        chosen->setup_stats_mut().add_time("auto.choose", MPI_Wtime() - t0 - setup[best]);
        chosen->setup_stats_mut().add_time("auto.choose.model", t_model);
        chosen->setup_stats_mut().add_time("auto.choose.gather", t_gather);
        chosen->setup_stats_mut().add_time("auto.choose.count", t_count);
        // make_plan adds auto's whole time to "setup.backend": the chosen backend's own
        // share, in it already, is taken out so the timer is auto's setup, counted once.
        chosen->setup_stats_mut().add_time("setup.backend", -chosen->setup_stats().time("setup.backend"));
        return chosen;
      },
      [] {
        BackendHooks h;  // no counts hook: what it runs depends on measured costs
        h.chooses_among_others = true;
        using K = OptionSpec::Kind;
        // The model file's path may be node-local: ranks agree on the parameters read, not the path.
        OptionSpec model{"model", K::text, "",
                         "performance model: a parameter file, builtin, or empty: $SPARSECOMM_MODEL, else measured on "
                         "first use and cached (machine_model)"};
        model.per_rank = true;
        h.options = {model,
                     {"iterations", K::integer, "0",
                      "exchanges the caller expects: > 0 chooses by setup + iterations x execution cost (building "
                      "every candidate to measure its setup), 0 by execution cost alone (building only the choice)",
                      0}};
        return h;
      }());
}
}  // namespace detail

}  // namespace sparsecomm
