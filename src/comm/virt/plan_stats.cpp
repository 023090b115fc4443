#include "sparsecomm/comm/virt/plan_stats.hpp"

#include <algorithm>
#include <climits>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "comm/plan/registry.hpp"
#include "sparsecomm/core/error.hpp"
#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "sparsecomm/comm/topology.hpp"

namespace sparsecomm::virt {

namespace {

// A set of ranks in [0, p) as a bitset: intersections and counts of common neighborhoods
// in p/64 word operations.
class Bits {
 public:
  explicit Bits(int p = 0) : w_(static_cast<size_t>((p + 63) / 64), 0) {}
  void set(int i) { w_[static_cast<size_t>(i) >> 6] |= 1ull << (i & 63); }
  void reset(int i) { w_[static_cast<size_t>(i) >> 6] &= ~(1ull << (i & 63)); }
  bool test(int i) const { return (w_[static_cast<size_t>(i) >> 6] >> (i & 63)) & 1u; }
  int count() const {
    int c = 0;
    for (uint64_t x : w_) c += __builtin_popcountll(x);
    return c;
  }
  int and_count(const Bits& o) const {
    int c = 0;
    for (size_t k = 0; k < w_.size(); ++k) c += __builtin_popcountll(w_[k] & o.w_[k]);
    return c;
  }
  Bits& operator&=(const Bits& o) {
    for (size_t k = 0; k < w_.size(); ++k) w_[k] &= o.w_[k];
    return *this;
  }
  /// Members in ascending order.
  std::vector<int> list() const {
    std::vector<int> v;
    for (size_t k = 0; k < w_.size(); ++k)
      for (uint64_t x = w_[k]; x; x &= x - 1) v.push_back(static_cast<int>(k * 64) + __builtin_ctzll(x));
    return v;
  }

 private:
  std::vector<uint64_t> w_;
};

// One candidate of a leader: (-weight, rank), so that ascending order = the leader's
// preference (heaviest common neighborhood first, ties to the lower rank), exactly the
// choice CombiningSchedule::build makes.
using Cand = std::pair<int, int>;

// The live candidate lists of every growing leader: pairs of leaders with at least theta
// common destinations, whose merged group stays within k (and, topology-aware, inside
// one region). Computed with inverted lists (sum over destinations of askers^2) or with
// bitset intersections (growers^2 * p / 64), whichever is cheaper.
std::vector<std::vector<Cand>> live_lists(int p, const std::vector<int>& grow, const std::vector<Bits>& common,
                                          const std::vector<std::vector<int>>& members,
                                          const std::vector<int>& region, const CombiningOptions& opt,
                                          WeightMethod method) {
  std::vector<std::vector<Cand>> live(static_cast<size_t>(p));
  auto admit = [&](int a, int b, int w) {
    return w >= opt.theta && members[a].size() + members[b].size() <= static_cast<size_t>(opt.k) &&
           (!opt.aware || region[a] == region[b]);
  };
  std::vector<std::vector<int>> askers(static_cast<size_t>(p));
  std::vector<std::vector<int>> lists(static_cast<size_t>(p));
  for (int a : grow) {
    lists[a] = common[a].list();
    for (int c : lists[a]) askers[c].push_back(a);
  }
  double inv_cost = 0;
  for (const auto& v : askers) inv_cost += static_cast<double>(v.size()) * static_cast<double>(v.size());
  const double bit_cost = 0.5 * static_cast<double>(grow.size()) * static_cast<double>(grow.size()) * ((p + 63) / 64);
  const bool inverted = method == WeightMethod::inverted || (method == WeightMethod::automatic && inv_cost <= bit_cost);
  if (inverted) {
    std::vector<int> cnt(static_cast<size_t>(p), 0), touched;
    for (int a : grow) {
      touched.clear();
      for (int c : lists[a])
        for (int b : askers[c])
          if (b != a && cnt[b]++ == 0) touched.push_back(b);
      for (int b : touched) {
        if (admit(a, b, cnt[b])) live[a].emplace_back(-cnt[b], b);
        cnt[b] = 0;
      }
    }
  } else {
    for (size_t i = 0; i < grow.size(); ++i)
      for (size_t j = i + 1; j < grow.size(); ++j) {
        const int a = grow[i], b = grow[j];
        const int w = common[a].and_count(common[b]);
        if (admit(a, b, w)) live[a].emplace_back(-w, b), live[b].emplace_back(-w, a);
      }
  }
  for (auto& v : live) std::sort(v.begin(), v.end());
  return live;
}

// The registered counts hook of `backend`: InputError for an unknown name, or for a backend
// that registered none (listing those that did).
template <class Shape>
const BackendHooksFor<Shape>& counting_hooks(const std::string& backend) {
  auto& registry = detail::registry<Shape>();
  const auto& hooks = registry.hooks(backend);
  if (hooks.counts) return hooks;
  std::string with;
  for (const auto& n : registry.names())
    if (registry.hooks(n).counts) with += (with.empty() ? "" : ", ") + n;
  throw InputError(std::string("plan statistics: no statistics for ") + Shape::name + " backend '" + backend +
                   "' (it registers no counts hook); available: " + with);
}

// The matching of one merge level. CombiningSchedule::build computes the greedy matching
// asynchronously (greedy_match in combining.cpp); any schedule of locally dominant edges
// gives the same result, and here it is the synchronous one, in proposal sub-rounds:
// every unmatched leader proposes to its best live candidate; mutual proposals match; a
// leader matched in sub-round t tells its candidates in sub-round t+1, which drop it
// then. So at the start of sub-round t a candidate l is gone from every list iff it was
// matched at sub-round t-2 or earlier: the lists are scanned with one pointer each.
std::vector<int> match(int p, const std::vector<std::vector<Cand>>& live) {
  std::vector<int> partner(static_cast<size_t>(p), -1), matched_at(static_cast<size_t>(p), INT_MAX);
  std::vector<size_t> pos(static_cast<size_t>(p), 0);
  std::vector<int> act;  // ranks whose live list is not empty
  for (int a = 0; a < p; ++a)
    if (!live[a].empty()) act.push_back(a);
  std::vector<int> status(static_cast<size_t>(p), -1);
  for (int t = 0; !act.empty(); ++t) {
    for (int a : act) status[a] = partner[a] >= 0 ? -2 : live[a][pos[a]].second;
    for (int a : act) {
      const int b = status[a];
      if (b > a && status[b] == a) partner[a] = b, partner[b] = a, matched_at[a] = matched_at[b] = t;
    }
    std::vector<int> next;
    for (int a : act) {
      status[a] = -1;
      const auto& v = live[a];
      if (partner[a] >= 0 && matched_at[a] < t) continue;  // told its candidates: list cleared
      // Drop candidates that announced their match in this sub-round (matched <= t-1).
      while (pos[a] < v.size() && matched_at[v[pos[a]].second] <= t - 1) ++pos[a];
      if (partner[a] < 0) {
        if (pos[a] < v.size()) next.push_back(a);
        continue;
      }
      // Matched now: it still has to tell whoever remains besides its partner.
      bool any = false;
      for (size_t k = pos[a]; k < v.size() && !any; ++k)
        any = v[k].second != partner[a] && matched_at[v[k].second] >= t;
      if (any) next.push_back(a);
    }
    act.swap(next);
  }
  return partner;
}

}  // namespace

int64_t Graph::edges() const {
  int64_t e = 0;
  for (const auto& d : dest) e += static_cast<int64_t>(d.size());
  return e;
}

Graph Graph::from_destinations(int p, std::vector<std::vector<int>> dest) {
  if (p < 1) throw InputError("plan statistics: need at least 1 rank, got " + std::to_string(p));
  if (dest.size() != static_cast<size_t>(p))
    throw InputError("plan statistics: " + std::to_string(dest.size()) + " destination lists for " +
                     std::to_string(p) + " ranks");
  Graph g;
  g.p = p;
  g.src.assign(static_cast<size_t>(p), {});
  for (int a = 0; a < p; ++a) {
    auto& d = dest[a];
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
    for (int x : d) {
      if (x < 0 || x >= p)
        throw InputError("plan statistics: destination " + std::to_string(x) + " of rank " + std::to_string(a) +
                         " out of range [0, " + std::to_string(p) + ")");
      if (x == a) throw InputError("plan statistics: self-loop at rank " + std::to_string(a));
      g.src[x].push_back(a);  // a ascending: sorted
    }
  }
  g.dest = std::move(dest);
  return g;
}

Graph Graph::from_spec(int p, const std::string& spec) {
  if (p < 1) throw InputError("plan statistics: need at least 1 rank, got " + std::to_string(p));
  std::vector<std::vector<int>> dest(static_cast<size_t>(p));
  for (int a = 0; a < p; ++a) dest[a] = spec_destinations(spec, a, p);
  return from_destinations(p, std::move(dest));
}

std::vector<int> regions_from_spec(int p, const std::string& spec) {
  // "node" (the programs' shared default): virtual ranks all live in this one process, on
  // one node, so they form one region.
  std::vector<int> r = layout_labels(spec == "node" ? "single" : spec, p);
  if (r.empty())
    throw InputError("plan statistics: unknown region layout '" + spec +
                     "'; valid layouts for virtual ranks: ppn:<k>, cyclic:<n>, flat, single, node (= single)");
  return r;
}

namespace {
// Phase 1 of CombiningSchedule::build over every virtual rank at once: what each rank still
// sends directly (pending), and the schedule so far (stage-1 transfers, the origins each
// rank forwards to a destination, the edges covered in stage 1).
struct VirtualPhase1 {
  using SetMap = std::map<int, std::set<int>>;
  // One round's groups: which ranks lead, each leader's members and common neighborhood.
  struct Groups {
    std::vector<char> leader;
    std::vector<std::vector<int>> members;
    std::vector<Bits> common;
  };

  explicit VirtualPhase1(const Graph& g)
      : p(g.p),
        pending(static_cast<size_t>(p), Bits(p)),
        origins(static_cast<size_t>(p)),
        send_dests(static_cast<size_t>(p)),
        recv_dests(static_cast<size_t>(p)),
        via(static_cast<size_t>(p)),
        s(static_cast<size_t>(p)) {
    for (int a = 0; a < p; ++a)
      for (int d : g.dest[a]) pending[a].set(d);
  }

  // The merge levels of one round: leaders with a large enough common neighborhood merge
  // along a matching of their live candidates until none is left.
  Groups merge(const std::vector<int>& region, const CombiningOptions& opt, WeightMethod method) const {
    Groups gr{std::vector<char>(static_cast<size_t>(p), 1), std::vector<std::vector<int>>(static_cast<size_t>(p)),
              pending};
    for (int a = 0; a < p; ++a) gr.members[a] = {a};
    while (true) {
      std::vector<int> grow;
      for (int a = 0; a < p; ++a)
        if (gr.leader[a] && static_cast<int>(gr.members[a].size()) < opt.k && gr.common[a].count() >= opt.theta)
          grow.push_back(a);
      const auto live = live_lists(p, grow, gr.common, gr.members, region, opt, method);
      if (std::all_of(live.begin(), live.end(), [](const auto& v) { return v.empty(); })) break;
      const std::vector<int> partner = match(p, live);
      bool merged = false;
      for (int a = 0; a < p; ++a) {
        const int b = partner[a];
        if (b <= a) continue;  // the lower rank leads the merged group
        merged = true;
        gr.members[a].insert(gr.members[a].end(), gr.members[b].begin(), gr.members[b].end());
        std::sort(gr.members[a].begin(), gr.members[a].end());
        gr.common[a] &= gr.common[b];
        gr.leader[b] = 0;
      }
      if (!merged) break;
    }
    return gr;
  }

  // Group `mem` (led by l) with common neighborhood `com`: flags, then the split of `com`.
  void split(int l, const std::vector<int>& mem, const std::vector<int>& com) {
    const size_t n = mem.size(), ncommon = com.size();
    ++s[l].groups_led;
    s[l].group_members += static_cast<int>(n);
    // A forwarding member (index < ncommon) that is also one of my pending destinations
    // gets my data in stage 1 instead of a direct message.
    for (int a : mem)
      for (size_t i = 0; i < n && i < ncommon; ++i) {
        const int x = mem[i];
        if (x == a || !pending[a].test(x)) continue;
        pending[a].reset(x);
        send_dests[a][x].insert(x);
        recv_dests[x][a].insert(x);
        via[x].push_back(a);
      }
    for (size_t j = 0; j < ncommon; ++j) {
      const int cover = mem[j % n], c = com[j];
      for (int a : mem) {
        pending[a].reset(c);
        if (cover == a) {
          origins[a][c].insert(mem.begin(), mem.end());
          for (int m : mem)
            if (m != a) recv_dests[a][m].insert(c);
        } else {
          send_dests[a][cover].insert(c);
        }
      }
    }
  }

  // One round: groups of 2+ with a common neighborhood split it; false when there was none.
  bool round(const std::vector<int>& region, const CombiningOptions& opt, WeightMethod method) {
    const Groups gr = merge(region, opt, method);
    bool any_group = false;
    for (int l = 0; l < p; ++l) {
      if (!gr.leader[l] || gr.members[l].size() < 2) continue;
      const std::vector<int> com = gr.common[l].list();
      if (com.empty()) continue;
      any_group = true;
      split(l, gr.members[l], com);
    }
    for (auto& x : s) ++x.rounds;
    return any_group;
  }

  // The schedules: what is still pending goes directly; stage 1 and the forwarders' origins.
  void assemble() {
    for (int a = 0; a < p; ++a) {
      for (int d : pending[a].list()) origins[a][d].insert(a);
      auto& x = s[a];
      for (const auto& [m, d] : send_dests[a]) {
        x.stage1_send.push_back(m);
        x.stage1_send_dests.emplace_back(d.begin(), d.end());
      }
      for (const auto& [m, d] : recv_dests[a]) {
        x.stage1_recv.push_back(m);
        x.stage1_recv_dests.emplace_back(d.begin(), d.end());
      }
      for (const auto& [d, o] : origins[a]) {
        x.dest.push_back(d);
        x.dest_origins.emplace_back(o.begin(), o.end());
        s[d].from.push_back(a);  // a ascending: sorted by forwarder
        s[d].from_origins.emplace_back(o.begin(), o.end());
      }
    }
  }

  // Every (source, destination) edge covered exactly once, as build() checks.
  void check_cover(const Graph& g) const {
    for (int d = 0; d < p; ++d) {
      std::vector<int> covered = via[d];
      for (const auto& o : s[d].from_origins) covered.insert(covered.end(), o.begin(), o.end());
      std::sort(covered.begin(), covered.end());
      if (covered != g.src[d])
        throw Error("plan statistics: the combining pattern does not cover rank " + std::to_string(d) +
                    "'s in-neighbors exactly once (internal error; please report)");
    }
  }

  int p;
  std::vector<Bits> pending;
  std::vector<SetMap> origins, send_dests, recv_dests;
  std::vector<std::vector<int>> via;
  std::vector<CombiningSchedule> s;
};
}  // namespace

std::vector<CombiningSchedule> combining_schedules(const Graph& g, const std::vector<int>& region,
                                                   const CombiningOptions& opt, WeightMethod method) {
  // The same checks and messages as CombiningSchedule::build.
  if (opt.k < 2) throw InputError("combining: group size k must be >= 2, got " + std::to_string(opt.k));
  if (opt.theta < 1) throw InputError("combining: theta must be >= 1, got " + std::to_string(opt.theta));
  if (opt.max_rounds < 0) throw InputError("combining: max_rounds must be >= 0");
  if (region.size() != static_cast<size_t>(g.p))
    throw InputError("plan statistics: " + std::to_string(region.size()) + " regions for " + std::to_string(g.p) +
                     " ranks");
  VirtualPhase1 v(g);
  for (int round = 0; round < opt.max_rounds; ++round)
    if (!v.round(region, opt, method)) break;
  v.assemble();
  v.check_cover(g);
  return std::move(v.s);
}

std::vector<RankCounts> gather_counts(const std::string& backend, const Graph& g, const std::vector<int>& region,
                                      const GatherOptions& opt, int64_t count) {
  if (region.size() != static_cast<size_t>(g.p))
    throw InputError("plan statistics: " + std::to_string(region.size()) + " regions for " + std::to_string(g.p) + " ranks");
  if (count < 0) throw InputError("plan statistics: negative block size");
  return counting_hooks<GatherShape>(backend).counts(g, region, opt, count);
}

// --- Halo-exchange Plans --------------------------------------------------------------

int64_t HaloPattern::segments() const {
  int64_t n = 0;
  for (const auto& v : send) n += static_cast<int64_t>(v.size());
  return n;
}

HaloPattern HaloPattern::from_graph(const Graph& g, int64_t count) {
  if (count < 1) throw InputError("plan statistics: a halo pattern needs at least one value per message, got " + std::to_string(count));
  HaloPattern h;
  h.p = g.p;
  h.send.resize(static_cast<size_t>(g.p));
  for (int a = 0; a < g.p; ++a) {
    std::vector<int64_t> ids(static_cast<size_t>(count));
    for (int64_t j = 0; j < count; ++j) ids[static_cast<size_t>(j)] = a * count + j;
    for (int d : g.dest[a]) h.send[a].emplace_back(d, ids);
  }
  return h;
}

HaloPattern HaloPattern::from_matrix(const RowPartition& rows, const RowPartition& cols,
                                     const std::vector<Triplet<double>>& entries) {
  const int p = rows.num_parts();
  if (p < 1 || cols.num_parts() != p)
    throw InputError("plan statistics: row and column partitions over " + std::to_string(p) + " and " +
                     std::to_string(cols.num_parts()) + " parts");
  // (owner of the column, rank of the row, column): one record per ghost reference.
  struct Ref {
    int owner, rank;
    int64_t col;
    bool operator<(const Ref& o) const { return std::tie(owner, rank, col) < std::tie(o.owner, o.rank, o.col); }
    bool operator==(const Ref& o) const { return owner == o.owner && rank == o.rank && col == o.col; }
  };
  std::vector<Ref> refs;
  for (const auto& e : entries) {
    if (e.row < 0 || e.row >= rows.global_size() || e.col < 0 || e.col >= cols.global_size())
      throw InputError("plan statistics: entry (" + std::to_string(e.row) + ", " + std::to_string(e.col) +
                       ") outside a " + std::to_string(rows.global_size()) + " x " +
                       std::to_string(cols.global_size()) + " matrix");
    const int r = rows.owner(e.row);
    if (e.col >= cols.begin(r) && e.col < cols.end(r)) continue;
    refs.push_back({cols.owner(e.col), r, e.col});
  }
  std::sort(refs.begin(), refs.end());
  refs.erase(std::unique(refs.begin(), refs.end()), refs.end());
  HaloPattern h;
  h.p = p;
  h.send.resize(static_cast<size_t>(p));
  for (const Ref& x : refs) {
    auto& v = h.send[x.owner];
    if (v.empty() || v.back().dest != x.rank) v.emplace_back(x.rank, std::vector<int64_t>{});
    v.back().ids.push_back(x.col), ++v.back().size;
  }
  return h;
}

namespace {

void check_halo(const HaloPattern& pat, const std::vector<int>& region) {
  if (pat.p < 1 || pat.send.size() != static_cast<size_t>(pat.p))
    throw InputError("plan statistics: a halo pattern of " + std::to_string(pat.p) + " ranks with " +
                     std::to_string(pat.send.size()) + " send lists");
  if (!pat.distinct.empty() && pat.distinct.size() != static_cast<size_t>(pat.p))
    throw InputError("plan statistics: distinct counts for " + std::to_string(pat.distinct.size()) + " of " +
                     std::to_string(pat.p) + " ranks");
  if (region.size() != static_cast<size_t>(pat.p))
    throw InputError("plan statistics: " + std::to_string(region.size()) + " regions for " + std::to_string(pat.p) + " ranks");
  for (int a = 0; a < pat.p; ++a) {
    int last = -1;
    for (const auto& seg : pat.send[a]) {
      const int d = seg.dest;
      if (d < 0 || d >= pat.p || d == a || d <= last || seg.size < 1)
        throw InputError("plan statistics: rank " + std::to_string(a) + " of the halo pattern sends to " +
                         std::to_string(d) + " (destinations must be other ranks, ascending, each with values)");
      if (static_cast<int64_t>(seg.ids.size()) != seg.size && !(seg.ids.empty() && !pat.distinct.empty()))
        throw InputError("plan statistics: rank " + std::to_string(a) + " sends " + std::to_string(seg.size) +
                         " values to " + std::to_string(d) + " with " + std::to_string(seg.ids.size()) +
                         " ids (ids may be left out only where distinct counts are given)");
      last = d;
    }
  }
}

}  // namespace

std::vector<RankCounts> halo_counts(const std::string& backend, const HaloPattern& pat, const std::vector<int>& region,
                                    const PlanOptions& opt) {
  check_halo(pat, region);
  if (opt.width < 1 || opt.value_bytes < 1) throw InputError("plan statistics: width and value size must be positive");
  return counting_hooks<HaloShape>(backend).counts(pat, region, opt);
}

std::shared_ptr<const CombiningSchedule> scatter_combining_schedules(MPI_Comm comm, int root,
                                                                     const std::function<Graph()>& graph_on_root,
                                                                     const Locality& loc, const CombiningOptions& opt) {
  const int me = comm_rank(comm), p = comm_size(comm);
  std::vector<int64_t> flat;
  std::vector<int> counts, displs;
  agreed(comm, [&] {
    if (me != root) return;
    const Graph g = graph_on_root();
    if (g.p != p || loc.size() != p)
      throw InputError("combining: a schedule for " + std::to_string(g.p) + " ranks (regions for " +
                       std::to_string(loc.size()) + ") cannot serve " + std::to_string(p) + " ranks");
    CombiningOptions o = opt;
    o.given.reset();
    const auto all = combining_schedules(g, loc.regions(), o);
    for (const auto& s : all) {
      const auto v = s.serialize();
      if (flat.size() + v.size() > static_cast<size_t>(INT_MAX))
        throw Error("combining: the schedules of " + std::to_string(p) + " ranks are too large to scatter");
      displs.push_back(static_cast<int>(flat.size()));
      counts.push_back(static_cast<int>(v.size()));
      flat.insert(flat.end(), v.begin(), v.end());
    }
  });
  int n = 0;
  SPC_MPI(MPI_Scatter(counts.data(), 1, MPI_INT, &n, 1, MPI_INT, root, comm));
  std::vector<int64_t> mine(static_cast<size_t>(n));
  SPC_MPI(MPI_Scatterv(flat.data(), counts.data(), displs.data(), MPI_INT64_T, mine.data(), n, MPI_INT64_T, root,
                       comm));
  return agreed(comm, [&] { return std::make_shared<const CombiningSchedule>(CombiningSchedule::deserialize(mine)); });
}

}  // namespace sparsecomm::virt
