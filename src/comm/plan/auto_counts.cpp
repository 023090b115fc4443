// auto's counts without gathering the pattern (comm/plan/auto_predict.hpp): each rank
// evaluates the candidates' counts hooks on its region's view of the pattern and keeps its
// own counts. A hook declared counts_by_region (BackendHooks) gives a rank's counts from the
// segments its region's ranks send and receive: the direct schedules (a rank's own segments),
// the aggregations (leaders and receivers chosen by the region's own volumes, Bienz, Gropp
// and Olson, JPDC 2019). The view holds the region's ranks with their send segments and
// distinct counts, and each remote source as a rank that sends only the segments the
// region receives from it (their sizes from the receive sides); ranks and regions are
// renumbered in order, so the hooks' rank-order and region-order tie-breaks are kept.
#include <algorithm>
#include <limits>
#include <map>

#include "comm/plan/auto_predict.hpp"
#include "comm/plan/halo/aggregation.hpp"
#include "sparsecomm/comm/virt/plan_stats.hpp"
#include "sparsecomm/core/mpi_util.hpp"

namespace sparsecomm::detail {

namespace {

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
  constexpr int kTag = 7741;
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

}  // namespace

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

std::vector<OwnCounts> region_counts(const Pattern& p, const Locality& l, MPI_Comm comm,
                                     const std::vector<std::string>& names,
                                     const std::function<PlanOptions(const std::string&)>& options_of,
                                     NodeLayout nodes) {
  const std::vector<int64_t> mine = summary(p, l, comm);
  // One region left unsplit (no region communicator): the whole communicator is the region.
  const MPI_Comm local = l.local_comm() != MPI_COMM_NULL ? l.local_comm() : comm;
  const std::vector<std::vector<int64_t>> got = region_allgatherv(local, mine);
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
}

}  // namespace sparsecomm::detail
