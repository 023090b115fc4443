// auto: model-based choice of the backend. Predicts each other registered backend's cost
// per execution from its deterministic counts (comm/model.hpp) and returns the plan of the
// lowest prediction, its name kept; setup_stats() hold "auto.predict.<backend>" (seconds,
// every candidate), "auto.setup.<backend>" (every candidate it built), "auto.choose" (the
// time to choose) and "setup.backend" (auto's whole setup), which `sparsecomm info` prints.
//
// Counts without plans, and without any rank holding all of them: a backend's counts hook
// (BackendHooks::counts, the one plan statistics use and tests/test_plan_stats.cpp checks
// rank by rank against real plans) declared counts_by_region gives a rank's counts from its
// region's ranks' segments alone, so each rank evaluates it on its region's view of the
// pattern (detail::region_counts: an allgather inside the region, one word per inter-region
// segment) and keeps its own counts. A candidate whose counts need the whole pattern
// (message combining: its matching spans the graph), or whose window transfers need node
// labels the view cannot give (regions that are neither whole nodes nor all on one node),
// or that has no counts hook (one registered outside the library), is built and its real
// counts taken. Then a few reductions of a few hundred words per candidate
// (detail::predict_reduced) give every rank the predictions predict_from_terms would make
// over all ranks' terms, the same on every rank. Only the chosen plan is built when it was
// not, without make_plan's collectives (auto's own make_plan ran them). Per-rank memory:
// O(region x neighbors + candidates), independent of the number of ranks.
//
// With the option iterations = N > 0 the choice weighs setup + N x execution cost, and a
// setup time is only known by building: then every candidate is built and its measured
// setup (max over ranks) used, as before.
//
// With the option race = N > 0 the candidates predicted close to the cheapest are built and
// timed (race_medians), and the fastest measured is taken; "auto.race.<backend>" holds each
// one's median seconds per exchange. Off by default: it costs the close candidates' setups
// and N exchanges each, where the model alone costs a few small reductions.
#include <algorithm>
#include <cstring>
#include <limits>
#include <map>

#include "comm/plan/auto_predict.hpp"
#include "comm/plan/halo/aggregation.hpp"
#include "comm/plan/registry.hpp"
#include "comm/plan/tune.hpp"
#include "comm/shm_channel.hpp"
#include "sparsecomm/comm/plan/model.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/comm/virt/plan_stats.hpp"
#include "sparsecomm/core/mpi_util.hpp"

namespace sparsecomm {

// Candidates in order of setup complexity (each backend's BackendHooks::setup_rank, then its
// name): a tie goes to the simpler one, so the choice is deterministic (with iterations > 0
// it also weighs measured setup times, which vary from run to run).
std::vector<std::string> detail::auto_candidate_order() {
  std::vector<std::string> order;
  for (const auto& n : backend_names())
    if (!backend_hooks(n).chooses_among_others) order.push_back(n);
  std::stable_sort(order.begin(), order.end(), [](const std::string& a, const std::string& b) {
    return backend_hooks(a).setup_rank < backend_hooks(b).setup_rank;
  });
  return order;
}

namespace detail {
namespace {

// auto's counts without gathering the pattern (comm/plan/auto_predict.hpp): each rank
// evaluates the candidates' counts hooks on its region's view of the pattern and keeps its
// own counts. A hook declared counts_by_region (BackendHooks) gives a rank's counts from the
// segments its region's ranks send and receive: the direct schedules (a rank's own segments),
// the aggregations (leaders and receivers chosen by the region's own volumes, Bienz, Gropp
// and Olson, JPDC 2019). The view holds the region's ranks with their send segments and
// distinct counts, and each remote source as a rank that sends only the segments the
// region receives from it (their sizes from the receive sides); ranks and regions are
// renumbered in order, so the hooks' rank-order and region-order tie-breaks are kept.

// Per remote region, the number of distinct ids this rank sends to its ranks (what
// duplicate removal leaves). The ids a rank sends are its own values, so their range is
// usually its block: a mark per id of the range, set to the region being counted, counts
// them in one pass without sorting; a range much wider than the ids falls back to sorting.
std::map<int, int64_t> distinct_to_regions(const PatternSide& s, const Locality& l) {
  std::map<int, std::vector<int>> segs;  // remote region -> my segments to its ranks
  for (int i = 0; i < s.num_neighbors(); ++i) {  // (empty segments carry nothing)
    const int S = l.region_of(s.ranks[i]);
    if (S != l.region() && s.count(i) > 0) segs[S].push_back(i);
  }
  std::map<int, int64_t> out;
  if (segs.empty()) return out;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min(), n = 0;
  for (const auto& kv : segs)
    for (int i : kv.second)
      for (int64_t k = s.offsets[i]; k < s.offsets[i + 1]; ++k)
        lo = std::min(lo, s.global_ids[k]), hi = std::max(hi, s.global_ids[k]), ++n;
  if (hi - lo < 4 * n + 4096) {
    std::vector<int> mark(static_cast<size_t>(hi - lo + 1), -1);
    for (const auto& [S, list] : segs) {
      int64_t d = 0;
      for (int i : list)
        for (int64_t k = s.offsets[i]; k < s.offsets[i + 1]; ++k) {
          int& m = mark[static_cast<size_t>(s.global_ids[k] - lo)];
          if (m != S) m = S, ++d;
        }
      out[S] = d;
    }
    return out;
  }
  for (const auto& [S, list] : segs) {
    std::vector<int64_t> v;
    for (int i : list) v.insert(v.end(), s.global_ids.begin() + s.offsets[i], s.global_ids.begin() + s.offsets[i + 1]);
    std::sort(v.begin(), v.end());
    out[S] = static_cast<int64_t>(std::unique(v.begin(), v.end()) - v.begin());
  }
  return out;
}

// For each of my receive segments from another region, the distinct count its source sends
// my region (-1: same region, or empty): one word per inter-region segment, both ways, on the
// library's duplicate of `comm` (never matched by the program's own messages).
std::vector<int64_t> distinct_from_sources(const Pattern& p, const Locality& l, MPI_Comm comm,
                                           const std::map<int, int64_t>& distinct) {
  constexpr int kTag = kLibraryTagAutoDistinct;  // (on library_comm: core/mpi_util.hpp)
  const MPI_Comm lib = library_comm(comm);
  const auto& s = p.send();
  const auto& r = p.recv();
  std::vector<int64_t> out, in(static_cast<size_t>(r.num_neighbors()), -1);
  std::vector<MPI_Request> req;
  out.reserve(static_cast<size_t>(s.num_neighbors()));
  req.reserve(static_cast<size_t>(s.num_neighbors() + r.num_neighbors()));
  for (int i = 0; i < r.num_neighbors(); ++i)
    if (r.count(i) > 0 && !l.same_region(r.ranks[i])) {
      req.emplace_back();
      SPC_MPI(MPI_Irecv(&in[static_cast<size_t>(i)], 1, MPI_INT64_T, r.ranks[i], kTag, lib, &req.back()));
    }
  for (int i = 0; i < s.num_neighbors(); ++i)
    if (s.count(i) > 0 && !l.same_region(s.ranks[i])) {
      out.push_back(distinct.at(l.region_of(s.ranks[i])));
      req.emplace_back();
      SPC_MPI(MPI_Isend(&out.back(), 1, MPI_INT64_T, s.ranks[i], kTag, lib, &req.back()));
    }
  SPC_MPI(MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE));
  return in;
}

// What a rank tells its region: [sends, (dest, size) ..., regions, (region, distinct) ...,
// receives, (source, size, source's distinct count to my region or -1) ...], empty
// segments left out.
std::vector<int64_t> summary(const Pattern& p, const Locality& l, MPI_Comm comm) {
  const auto& s = p.send();
  const auto& r = p.recv();
  const std::map<int, int64_t> distinct = distinct_to_regions(s, l);
  const std::vector<int64_t> from = distinct_from_sources(p, l, comm, distinct);
  std::vector<int64_t> v;
  v.push_back(0);
  for (int i = 0; i < s.num_neighbors(); ++i)
    if (s.count(i) > 0) v.push_back(s.ranks[i]), v.push_back(s.count(i)), ++v[0];
  v.push_back(static_cast<int64_t>(distinct.size()));
  for (const auto& [S, d] : distinct) v.push_back(S), v.push_back(d);
  const size_t nrecv = v.size();
  v.push_back(0);
  for (int i = 0; i < r.num_neighbors(); ++i)
    if (r.count(i) > 0) v.push_back(r.ranks[i]), v.push_back(r.count(i)), v.push_back(from[static_cast<size_t>(i)]), ++v[nrecv];
  return v;
}

// The region's view (see the top of the file) and where this rank sits in it.
struct View {
  virt::HaloPattern h;
  std::vector<int> region;
  int me = -1;
};

// Renumbering: every rank the region's summaries name, ascending; regions in order.
struct Numbering {
  std::vector<int> ranks, regions;
  int rank(int g) const { return static_cast<int>(std::lower_bound(ranks.begin(), ranks.end(), g) - ranks.begin()); }
  int region(int S) const {
    return static_cast<int>(std::lower_bound(regions.begin(), regions.end(), S) - regions.begin());
  }
};

Numbering numbering(const std::vector<std::vector<int64_t>>& got, const std::vector<int>& members, const Locality& l) {
  Numbering n;
  n.ranks = members;
  for (const auto& v : got) {
    size_t at = 0;
    const int64_t ns = v[at++];
    for (int64_t k = 0; k < ns; ++k, at += 2) n.ranks.push_back(static_cast<int>(v[at]));
    at += 1 + 2 * static_cast<size_t>(v[at]);
    const int64_t nr = v[at++];
    for (int64_t k = 0; k < nr; ++k, at += 3) n.ranks.push_back(static_cast<int>(v[at]));
  }
  std::sort(n.ranks.begin(), n.ranks.end());
  n.ranks.erase(std::unique(n.ranks.begin(), n.ranks.end()), n.ranks.end());
  for (int g : n.ranks) n.regions.push_back(l.region_of(g));
  std::sort(n.regions.begin(), n.regions.end());
  n.regions.erase(std::unique(n.regions.begin(), n.regions.end()), n.regions.end());
  return n;
}

View region_view(const std::vector<std::vector<int64_t>>& got, const std::vector<int>& members, const Locality& l,
                 NodeLayout nodes) {
  const Numbering n = numbering(got, members, l);
  View w;
  const int p = static_cast<int>(n.ranks.size());
  w.h.p = p;
  w.h.send.resize(static_cast<size_t>(p));
  w.h.distinct.resize(static_cast<size_t>(p));
  for (int g : n.ranks) w.region.push_back(n.region(l.region_of(g)));
  const int mine = n.region(l.region());
  for (size_t j = 0; j < got.size(); ++j) {
    const std::vector<int64_t>& v = got[j];
    const int a = n.rank(members[j]);
    size_t at = 0;
    const int64_t ns = v[at++];
    for (int64_t k = 0; k < ns; ++k, at += 2)
      w.h.send[static_cast<size_t>(a)].push_back(virt::HaloPattern::Segment::sized(n.rank(static_cast<int>(v[at])), v[at + 1]));
    const int64_t nd = v[at++];
    for (int64_t k = 0; k < nd; ++k, at += 2)
      w.h.distinct[static_cast<size_t>(a)][n.region(static_cast<int>(v[at]))] = v[at + 1];
    const int64_t nr = v[at++];
    for (int64_t k = 0; k < nr; ++k, at += 3) {
      if (v[at + 2] < 0) continue;  // (a source of my region: its own summary has the segment)
      const int x = n.rank(static_cast<int>(v[at]));
      w.h.send[static_cast<size_t>(x)].push_back(virt::HaloPattern::Segment::sized(a, v[at + 1]));
      w.h.distinct[static_cast<size_t>(x)][mine] = v[at + 2];
    }
  }
  for (auto& segs : w.h.send)
    std::sort(segs.begin(), segs.end(), [](const auto& x, const auto& y) { return x.dest < y.dest; });
  if (nodes == NodeLayout::regions) w.h.node = w.region;  // (a region is its node)
  else if (nodes == NodeLayout::one_node) w.h.node.assign(static_cast<size_t>(p), 0);
  w.me = n.rank(l.rank());
  return w;
}

// This rank's counts of a built plan.
OwnCounts own_counts(const Plan& plan) {
  OwnCounts c;
  c.counts = plan.iteration_counts();
  c.window = plan.window_counts();
  c.stages = plan.stages();
  const auto& t = c.counts.total();
  const double own = static_cast<double>(plan.pattern().send().size()) * plan.options().width * plan.options().value_bytes;
  c.staged = std::max(0.0, static_cast<double>(t.sent_intra.bytes + t.sent_inter.bytes) - own);
  return c;
}

// Collective over `comm` and l.local_comm(): this rank's counts of each candidate in
// `names` (hooks declared counts_by_region), each hook evaluated on the region's view.
// Memory: the region's summaries and the view, O(region size x neighbors).
std::vector<OwnCounts> region_counts(const Pattern& p, const Locality& l, MPI_Comm comm,
                                     const std::vector<std::string>& names,
                                     const std::function<PlanOptions(const std::string&)>& options_of,
                                     NodeLayout nodes) {
  const std::vector<int64_t> mine = summary(p, l, comm);
  // One region left unsplit (no region communicator): the whole communicator is the region.
  const MPI_Comm local = l.local_comm() != MPI_COMM_NULL ? l.local_comm() : comm;
  const std::vector<std::vector<int64_t>> got = region_allgatherv(local, mine);
  // The counting is local; a failure on some ranks (a hook's error) is raised on all
  // (agreed), as no rank may be left in the reductions that follow.
  return agreed(comm, [&] {
    std::vector<int> members;
    for (int i = 0; i < l.local_size(); ++i) members.push_back(l.member(l.region(), i));
    const View w = region_view(got, members, l, nodes);
    std::vector<OwnCounts> out;
    for (const auto& name : names) {
      const PlanOptions o = options_of(name);
      std::vector<virt::RankCounts> c = virt::halo_counts(name, w.h, w.region, o);
      OwnCounts x;
      x.counts = std::move(c[static_cast<size_t>(w.me)].counts);
      x.window = std::move(c[static_cast<size_t>(w.me)].window);
      x.stages = c[static_cast<size_t>(w.me)].stages;
      const auto& t = x.counts.total();
      const double own = static_cast<double>(p.send().size()) * o.width * o.value_bytes;
      x.staged = std::max(0.0, static_cast<double>(t.sent_intra.bytes + t.sent_inter.bytes) - own);
      out.push_back(std::move(x));
    }
    return out;
  });
}

}  // namespace
}  // namespace detail

namespace {

// The model, agreed without a collective of ModelParams::resolve's own shape: every rank's
// local_model(), then one maximum over (kind, -kind, measure, the lowest rank that failed to
// read its file), the failed rank's text broadcast, or the parameters compared through one
// maximum of (x, -x) (root_computed hands the failed rank's error on). A measured model new on this communicator is measured or read from the
// machine's cache (machine_model_remembered). Collective; errors alike on every rank.
ModelParams agree_model(MPI_Comm c, const Locality& l, const std::string& source) {
  const LocalModel lm = local_model(c, l, source);
  const int me = comm_rank(c);
  int v[4] = {lm.kind, -lm.kind, lm.measure ? 1 : 0, lm.error.empty() ? -comm_size(c) : -me};
  SPC_MPI(MPI_Allreduce(MPI_IN_PLACE, v, 4, MPI_INT, MPI_MAX, c));
  if (v[3] > -comm_size(c)) {  // some rank could not read its file: its text, on every rank
    const int bad = -v[3];
    std::vector<double> none;
    root_computed(c, bad, none, [&] { throw InputError(lm.error + " [on rank " + std::to_string(bad) + "]"); });
    throw std::logic_error("auto: the error of rank " + std::to_string(bad) + " did not arrive");
  }
  if (v[0] != -v[1]) throw InputError("model: ranks disagree on the parameter source (file, builtin or measured)");
  if (v[2] != 0) return machine_model_remembered(c, l);
  double x[2 * ModelParams::kFields];
  std::memcpy(x, &lm.params, sizeof(double) * ModelParams::kFields);
  for (int i = 0; i < ModelParams::kFields; ++i) x[ModelParams::kFields + i] = -x[i];
  SPC_MPI(MPI_Allreduce(MPI_IN_PLACE, x, 2 * ModelParams::kFields, MPI_DOUBLE, MPI_MAX, c));
  for (int i = 0; i < ModelParams::kFields; ++i)
    if (x[i] != -x[ModelParams::kFields + i])
      throw InputError("model: ranks loaded different performance model parameters from " +
                       (lm.kind == 2 ? lm.source : std::string("the measured model")));
  return lm.params;
}

// How the candidates' counts may label nodes (detail::NodeLayout), and whether every region
// is exactly one node (then for_layout caps the inter-region byte cost by the region's
// injection rate). Collective (one maximum) where a candidate moves transfers through
// windows; under SMPI there are none, and no node labels, as the plans have them.
struct Layout {
  detail::NodeLayout nodes = detail::NodeLayout::none;
  bool regions_are_nodes = false;
};
Layout node_layout(MPI_Comm c, const Locality& l, const std::vector<std::string>& order) {
  Layout out;
#ifndef SPARSECOMM_SMPI  // (SMPI has no shared windows: every transfer is a message)
  bool windows = false;
  for (const auto& n : order) windows = windows || backend_hooks(n).node_window;
  if (!windows) return out;
  const auto node = detail::node_of(c);
  bool region_is_node = static_cast<int>(node->node_rank_of.size()) == l.local_size();
  for (int i = 0; i < l.local_size() && region_is_node; ++i)
    region_is_node = node->node_rank_of.count(l.member(l.region(), i)) > 0;
  int fails[2] = {region_is_node ? 0 : 1, static_cast<int>(node->node_rank_of.size()) == comm_size(c) ? 0 : 1};
  SPC_MPI(MPI_Allreduce(MPI_IN_PLACE, fails, 2, MPI_INT, MPI_MAX, c));
  out.regions_are_nodes = fails[0] == 0;
  out.nodes = fails[0] == 0   ? detail::NodeLayout::regions
              : fails[1] == 0 ? detail::NodeLayout::one_node
                              : detail::NodeLayout::mixed;
#else
  (void)c, (void)l, (void)order;
#endif
  return out;
}

struct Times {
  double model = 0, gather = 0, count = 0;
};

// The race (option race = N > 0): where the model's error is larger than the gap between
// the candidates it ranks first (tens of percent on a loaded network, a few percent apart),
// only a measurement tells them apart, as self-tuning collectives time their algorithms at
// run time (Faraj, Yuan and Lowenthal, "STAR-MPI: self tuned adaptive routines for MPI
// collective operations", ICS 2006); here bounded to the close candidates and done once,
// at setup. `plans[j]` is timed over `reps` exchanges in up to three interleaved rounds
// (each round in another order, after a barrier; one exchange each first, unmeasured: a
// first execution may finish lazy set-up), without pack and unpack (start() and wait()
// without arguments: the same for every backend). A round's time is the slowest rank's (one
// allreduce per round), so every rank holds the same medians and decides the same.
// Collective.
std::vector<double> race_medians(MPI_Comm c, const std::vector<Plan*>& plans, int64_t reps) {
  const size_t n = plans.size();
  for (Plan* p : plans) p->start(), p->wait();
  const int64_t rounds = std::min<int64_t>(reps, 3), per = (reps + rounds - 1) / rounds;
  std::vector<std::vector<double>> t(n);
  std::vector<double> mine(n), slowest(n);
  for (int64_t r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < n; ++k) {
      const size_t j = (k + static_cast<size_t>(r)) % n;
      SPC_MPI(MPI_Barrier(c));
      const double t0 = MPI_Wtime();
      for (int64_t i = 0; i < per; ++i) plans[j]->start(), plans[j]->wait();
      mine[j] = (MPI_Wtime() - t0) / static_cast<double>(per);
    }
    SPC_MPI(MPI_Allreduce(mine.data(), slowest.data(), static_cast<int>(n), MPI_DOUBLE, MPI_MAX, c));
    for (size_t j = 0; j < n; ++j) t[j].push_back(slowest[j]);
  }
  std::vector<double> med(n);
  for (size_t j = 0; j < n; ++j) {
    std::sort(t[j].begin(), t[j].end());
    const size_t m = t[j].size();
    med[j] = m % 2 ? t[j][m / 2] : 0.5 * (t[j][m / 2 - 1] + t[j][m / 2]);
  }
  return med;
}

// auto's choice among the other backends, in its steps: candidates ordered, predicted,
// the unpredicted built, the cheapest taken, the close ones raced, the choice built.
// Every step is collective in the same order on every rank, and every rank decides alike.
class Choice {
 public:
  // `iterations`: the expected exchanges the costs weigh (0 when tuning measures instead).
  Choice(const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o, int64_t iterations)
      : p_(p), l_(l), c_(c), o_(o), iterations_(iterations), order_(detail::auto_candidate_order()),
        predicted_(order_.size(), -1.0), work_(order_.size(), std::numeric_limits<double>::infinity()),
        setup_(order_.size(), 0.0), cost_(order_.size()) {}

  // Predictions from counts for every candidate (iterations = 0): this rank's counts of
  // each, from its region's view (detail::region_counts) where the hook counts by region and
  // the node labels it needs are known, else from the plan built (make_plan, collective);
  // then one set of reductions (detail::predict_reduced) gives every rank every prediction.
  // A candidate with no counts hook has no work figure (infinite), as before.
  void predict() {
    double t0 = MPI_Wtime();
    if (iterations_ != 0) {
      m_ = ModelParams::resolve(c_, l_, o_.backend.get("model", ""));
      times_.model = MPI_Wtime() - t0;
      return;
    }
    m_ = agree_model(c_, l_, o_.backend.get("model", ""));
    const Layout lay = node_layout(c_, l_, order_);
    times_.model = MPI_Wtime() - t0;
    t0 = MPI_Wtime();
    std::vector<std::string> by_region;
    std::vector<size_t> at;
    for (size_t i = 0; i < order_.size(); ++i) {
      const BackendHooks& h = backend_hooks(order_[i]);
      if (h.counts && h.counts_by_region && !(h.node_window && lay.nodes == detail::NodeLayout::mixed))
        by_region.push_back(order_[i]), at.push_back(i);
    }
    std::vector<detail::OwnCounts> own(order_.size());
    std::vector<detail::OwnCounts> got =
        detail::region_counts(p_, l_, c_, by_region, [this](const std::string& n) { return options_of(n); }, lay.nodes);
    for (size_t k = 0; k < at.size(); ++k) own[at[k]] = std::move(got[k]);
    times_.gather = MPI_Wtime() - t0;
    t0 = MPI_Wtime();
    for (size_t i = 0; i < order_.size(); ++i) {
      if (std::find(at.begin(), at.end(), i) != at.end()) continue;
      auto plan = make_plan(order_[i], p_, l_, c_, options_of(order_[i]));
      setup_[i] = allreduce_max(c_, plan->setup_stats().time("setup.backend"));
      own[i] = detail::own_counts(*plan);
      built_[order_[i]] = std::move(plan);
    }
    ModelParams m = m_;  // for_layout: a region that is one node injects at region_rate
    if (lay.regions_are_nodes && l_.num_regions() >= 2)
      m.byte_inter = std::min(m_.byte_inter, 1.0 / std::max(m_.region_rate, 1.0));
    predicted_ = detail::predict_reduced(own, l_, c_, m, work_);
    for (size_t i = 0; i < order_.size(); ++i)
      if (!backend_hooks(order_[i]).counts) work_[i] = std::numeric_limits<double>::infinity();
    times_.count = MPI_Wtime() - t0;
  }
  // The others are built and predicted from their real counts (all of them with
  // iterations > 0, where measured setup times enter the cost).
  void build_unpredicted() {
    for (size_t i = 0; i < order_.size(); ++i) {
      if (predicted_[i] >= 0) continue;
      auto plan = make_plan(order_[i], p_, l_, c_, options_of(order_[i]));
      setup_[i] = allreduce_max(c_, plan->setup_stats().time("setup.backend"));
      predicted_[i] = predict_iteration(*plan, m_, c_);
      built_[order_[i]] = std::move(plan);
    }
  }
  void choose_by_cost() {
    best_cost_ = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < order_.size(); ++i) {
      cost_[i] = iterations_ > 0 ? setup_[i] + static_cast<double>(iterations_) * predicted_[i] : predicted_[i];
      // Strictly cheaper, or as cheap with less work in all (a candidate built here has
      // no work figure: infinite); else the earlier in setup order (combining that found
      // no groups ties with p2p in both and loses). The inputs are the same on every
      // rank, so every rank decides the same.
      const bool tie = cost_[i] <= best_cost_ * (1 + 1e-9) && cost_[i] >= best_cost_ * (1 - 1e-9);
      if (cost_[i] < best_cost_ * (1 - 1e-9) || (tie && work_[i] < work_[best_] * (1 - 1e-9)))
        best_cost_ = cost_[i], best_ = i;
    }
  }
  // The race among the close candidates (race_medians): the model's choice first, then
  // the others predicted within race_within percent of it, cheapest first, at most
  // race_among in all; each built (make_plan: collective, agreed) and timed, and the
  // fastest measured taken (with iterations > 0: the least setup + iterations x
  // measured; a tie keeps the earlier). Every rank decides alike.
  void race() {
    const int64_t reps = o_.backend.get_int("race", 0);
    if (reps <= 0) return;
    const std::vector<size_t> close = close_candidates();
    if (close.size() <= 1) return;
    std::vector<Plan*> plans;
    for (size_t i : close) {
      if (!built_.count(order_[i])) {
        built_[order_[i]] = make_plan(order_[i], p_, l_, c_, options_of(order_[i]));
        setup_[i] = allreduce_max(c_, built_[order_[i]]->setup_stats().time("setup.backend"));
      }
      plans.push_back(built_[order_[i]].get());
    }
    const std::vector<double> med = race_medians(c_, plans, reps);
    for (Plan* q : plans) q->exec_timers().clear();  // the caller's timers start at its first exchange
    double won = std::numeric_limits<double>::infinity();
    for (size_t j = 0; j < close.size(); ++j) {
      const size_t i = close[j];
      raced_[order_[i]] = med[j];
      const double measured = iterations_ > 0 ? setup_[i] + static_cast<double>(iterations_) * med[j] : med[j];
      if (measured < won * (1 - 1e-9)) won = measured, best_ = i;
    }
  }
  // The chosen plan, if not built yet, without make_plan's collectives: auto's own
  // make_plan checked the pattern and the options they derive from, and its agreement
  // catches a failure of the factory (so no collective may follow: the setup time
  // recorded is this rank's).
  std::unique_ptr<Plan> take() {
    const std::string& name = order_[best_];
    std::unique_ptr<Plan> chosen =
        built_.count(name) ? std::move(built_[name]) : detail::make_plan_inside(name, p_, l_, c_, options_of(name));
    if (!built_.count(name)) setup_[best_] = chosen->setup_stats().time("setup.backend");
    return chosen;
  }

  // The plans built to count or predict them (predict, build_unpredicted, race), with the
  // options they were built with and their setup (the slowest rank's), handed over to
  // tuning (make_tuned_plan takes over a shortlisted one instead of building it again).
  detail::BuiltCandidates release_built() {
    detail::BuiltCandidates out;
    for (size_t i = 0; i < order_.size(); ++i) {
      auto it = built_.find(order_[i]);
      if (it == built_.end() || !it->second) continue;
      out[order_[i]] = detail::BuiltCandidate{std::move(it->second), options_of(order_[i]), setup_[i]};
    }
    built_.clear();
    return out;
  }

  // What the choice weighed, for the chosen plan's setup statistics.
  const std::vector<std::string>& order() const { return order_; }
  size_t best() const { return best_; }
  double predicted(size_t i) const { return predicted_[i]; }
  double setup(size_t i) const { return setup_[i]; }
  bool built(size_t i) const { return built_.count(order_[i]) > 0; }
  const std::map<std::string, double>& raced() const { return raced_; }
  const Times& times() const { return times_; }
  const ModelParams& model() const { return m_; }
  // The model's ranking: its choice first, then the others by cost (a tie keeps setup order).
  std::vector<size_t> ranked() const {
    std::vector<size_t> r(order_.size());
    for (size_t i = 0; i < r.size(); ++i) r[i] = i;
    std::stable_sort(r.begin(), r.end(), [&](size_t a, size_t b) {
      return a == best_ ? b != best_ : b == best_ ? false : cost_[a] < cost_[b];
    });
    return r;
  }
  PlanOptions options_of(const std::string& name) const {
    PlanOptions co = o_;  // each candidate gets the options it declares (k for combined, ...)
    co.backend = o_.backend.only(backend_option_specs(name));
    return co;
  }

 private:
  std::vector<size_t> close_candidates() const {
    const double within = 1 + static_cast<double>(o_.backend.get_int("race_within", 10)) / 100;
    std::vector<size_t> close = {best_};
    std::vector<size_t> by_cost(order_.size());
    for (size_t i = 0; i < order_.size(); ++i) by_cost[i] = i;
    std::stable_sort(by_cost.begin(), by_cost.end(), [&](size_t a, size_t b) { return cost_[a] < cost_[b]; });
    const auto among = static_cast<size_t>(o_.backend.get_int("race_among", 3));
    for (size_t i : by_cost)
      if (i != best_ && close.size() < among && cost_[i] <= best_cost_ * within) close.push_back(i);
    return close;
  }

  const Pattern& p_;
  const Locality& l_;
  MPI_Comm c_;
  const PlanOptions& o_;
  const int64_t iterations_;
  const std::vector<std::string> order_;
  ModelParams m_;
  Times times_;
  std::vector<double> predicted_;
  // Each candidate's total work over the ranks: of two predicted alike, the one that
  // does less in all (less contention for the cores and links it shares) wins.
  std::vector<double> work_;
  std::map<std::string, std::unique_ptr<Plan>> built_;
  std::vector<double> setup_, cost_;
  size_t best_ = 0;
  double best_cost_ = std::numeric_limits<double>::infinity();
  std::map<std::string, double> raced_;
};

// auto's options (it has no counts hook: what it runs depends on measured costs).
BackendHooks auto_hooks() {
  BackendHooks h;
  h.chooses_among_others = true;
  using K = OptionSpec::Kind;
  // The model file's path may be node-local: ranks agree on the parameters read, not the path.
  OptionSpec model{"model", K::text, "",
                   "performance model: a parameter file, builtin, or empty: $SPARSECOMM_MODEL, else measured in "
                   "the first three launches and cached (machine_model)"};
  model.per_rank = true;
  // Likewise the tuning cache's: only rank 0's is read and written (tune_cache.cpp).
  OptionSpec cache{"tune_cache", K::text, "",
                   "tune=measure's cache file: a decision measured before for the same pattern, layout, value "
                   "size and shortlist is reused (the winner alone built, nothing measured), a new one stored; "
                   "unset: $SPARSECOMM_TUNE_CACHE, else none; none: none (rank 0's path counts)"};
  cache.per_rank = true;
  h.options = {model, cache,
               {"iterations", K::integer, "0",
                "exchanges the caller expects: > 0 chooses by setup + iterations x execution cost (building "
                "every candidate to measure its setup); with tune=measure, the exchanges tuning must repay "
                "(see tune_gain); 0 by execution cost alone (building only the choice)",
                0},
               {"tune", K::text, "",
                "model: the model's choice; measure: the first exchanges rotate among the model's top "
                "candidates and p2p, timed, and every rank keeps the fastest (with iterations > 0: only where "
                "the predicted gain exceeds the predicted cost, see tune_gain); empty: model (measuring is "
                "only ever asked for)"},
               {"tune_gain", K::integer, "10",
                "with tune=measure and iterations > 0: the percent of the model's choice's predicted exchange "
                "tuning is expected to win back per exchange after it settles; tuning starts only where that "
                "gain exceeds the predicted cost of its measuring exchanges (their excess over the model's "
                "choice and their failure flags' reductions); else the model's choice (auto.tune.skipped)",
                0, 1000},
               {"candidates", K::integer, "3", "the model's top candidates that tune=measure times (p2p added)", 1,
                16},
               {"samples", K::integer, "5", "timed exchanges per candidate with tune=measure (after one warm-up)",
                1, 1000},
               {"race", K::integer, "0",
                "exchanges timed per close candidate: > 0 builds the candidates predicted within race_within "
                "percent of the cheapest and takes the fastest measured, 0 trusts the model",
                0},
               {"race_within", K::integer, "10", "percent above the cheapest prediction that still races", 0,
                1000, false, "race"},
               {"race_among", K::integer, "3", "most candidates in a race (the model's choice included)", 2, 16,
                false, "race"},
               {"gather_words", K::integer, "96",
                "deprecated, ignored: auto no longer gathers the pattern on rank 0 (its predictions are "
                "reduced); still accepted so that existing option strings keep working",
                2}};
  return h;
}

// tune=measure's shortlist: the model's top candidates (positions in ch.order()), p2p added
// as the reference where it is not among them.
std::vector<size_t> shortlist(const Choice& ch, const detail::TuneSettings& ts) {
  std::vector<size_t> list;
  for (size_t i : ch.ranked()) {
    if (static_cast<int64_t>(list.size()) >= ts.candidates) break;
    list.push_back(i);
  }
  const auto& order = ch.order();
  const auto p2p = static_cast<size_t>(std::find(order.begin(), order.end(), "p2p") - order.begin());
  if (p2p == order.size()) throw std::logic_error("auto: p2p, tuning's reference, is not registered");
  if (std::find(list.begin(), list.end(), p2p) == list.end()) list.push_back(p2p);
  return list;
}

// One allreduce of a few words as the model prices it: recursive doubling, ceil(log2 P)
// rounds of one message each (Thakur, Rabenseifner and Gropp, "Optimization of collective
// communication operations in MPICH", IJHPCA 2005), between regions where there are two or
// more.
double reduction_seconds(const ModelParams& m, const Locality& l, MPI_Comm c) {
  int rounds = 0;
  for (int n = 1; n < comm_size(c); n *= 2) ++rounds;
  return rounds * (l.num_regions() >= 2 ? m.alpha_inter : m.alpha_intra);
}

// Whether tuning starts (tune_forecast, from the agreed predictions: alike on every rank).
detail::TuneForecast forecast(const Choice& ch, const detail::TuneSettings& ts, const Locality& l, MPI_Comm c) {
  std::vector<double> predicted;
  for (size_t i : shortlist(ch, ts)) predicted.push_back(ch.predicted(i));
  return detail::tune_forecast(ts, predicted, ch.predicted(ch.best()), reduction_seconds(ch.model(), l, c));
}

// The forecast in setup statistics (where the caller gave an expected count).
void note_forecast(std::map<std::string, double>& notes, const detail::TuneSettings& ts,
                   const detail::TuneForecast& f) {
  if (ts.iterations <= 0) return;
  notes["auto.tune.iterations"] = static_cast<double>(ts.iterations);
  notes["auto.tune.cost"] = f.cost;
  notes["auto.tune.gain"] = f.gain;
  if (!f.start) notes["auto.tune.skipped"] = static_cast<double>(ts.iterations);
}

// tune=measure: the model's top candidates, p2p added as the reference, tuned in place by
// the caller's exchanges (tune.cpp). The predictions are kept in the plan's setup
// statistics as for a model choice. The plans the choice built are handed over: a
// shortlisted one is not built again, the others are freed at set-up.
std::unique_ptr<Plan> tuned_plan(Choice& ch, const detail::TuneSettings& ts, const detail::TuneForecast& f,
                                 const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o, double t0) {
  std::vector<detail::TuneCandidate> list;
  for (size_t i : shortlist(ch, ts)) list.push_back({ch.order()[i], ch.options_of(ch.order()[i])});
  std::map<std::string, double> notes;
  for (size_t i = 0; i < ch.order().size(); ++i) notes["auto.predict." + ch.order()[i]] = ch.predicted(i);
  notes["auto.tune.model." + ch.order()[ch.best()]] = ch.predicted(ch.best());  // the model's own choice
  note_forecast(notes, ts, f);
  notes["auto.choose"] = MPI_Wtime() - t0;
  notes["auto.choose.model"] = ch.times().model;
  notes["auto.choose.gather"] = ch.times().gather;
  notes["auto.choose.count"] = ch.times().count;
  return detail::make_tuned_plan(std::move(list), p, l, c, o, ts.samples, notes, ch.release_built());
}

}  // namespace

namespace detail {
void register_auto() {
  register_backend(
      "auto", "model-based choice among the other backends (see sparsecomm_calibrate)",
      [](const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o) -> std::unique_ptr<Plan> {
        const double t0 = MPI_Wtime();
        const detail::TuneSettings ts = detail::tune_settings(o.backend);
        if (ts.measure && o.backend.get_int("race", 0) > 0)
          throw InputError("auto: race and tune=measure both measure the candidates; give one of them");
        // With tune=measure the choice weighs exchanges alone (the candidates' set-ups are
        // only known by building them); the expected count decides whether tuning starts.
        Choice ch(p, l, c, o, ts.measure ? 0 : ts.iterations);
        ch.predict();
        ch.build_unpredicted();
        ch.choose_by_cost();
        const detail::TuneForecast f = ts.measure ? forecast(ch, ts, l, c) : detail::TuneForecast{};
        if (ts.measure && f.start) return tuned_plan(ch, ts, f, p, l, c, o, t0);
        ch.race();
        std::unique_ptr<Plan> chosen = ch.take();
        if (ts.measure) {  // (a tuning the expected exchanges would not repay: the model's choice)
          std::map<std::string, double> notes;
          note_forecast(notes, ts, f);
          for (const auto& [k, v] : notes) chosen->setup_stats_mut().add_time(k, v);
        }
        // (setup_stats_mut: register_auto is a friend of Plan.)
        const auto& order = ch.order();
        const size_t best = ch.best();
        for (size_t i = 0; i < order.size(); ++i) {
          chosen->setup_stats_mut().add_time("auto.predict." + order[i], ch.predicted(i));
          if (ch.built(i) || i == best) chosen->setup_stats_mut().add_time("auto.setup." + order[i], ch.setup(i));
        }
        for (const auto& [b, t] : ch.raced()) chosen->setup_stats_mut().add_time("auto.race." + b, t);
        chosen->setup_stats_mut().add_time("auto.choose", MPI_Wtime() - t0 - ch.setup(best));
        chosen->setup_stats_mut().add_time("auto.choose.model", ch.times().model);
        chosen->setup_stats_mut().add_time("auto.choose.gather", ch.times().gather);
        chosen->setup_stats_mut().add_time("auto.choose.count", ch.times().count);
        // make_plan adds auto's whole time to "setup.backend": the chosen backend's own
        // share, in it already, is taken out so the timer is auto's setup, counted once.
        chosen->setup_stats_mut().add_time("setup.backend", -chosen->setup_stats().time("setup.backend"));
        return chosen;
      },
      auto_hooks());
}
}  // namespace detail

}  // namespace sparsecomm
