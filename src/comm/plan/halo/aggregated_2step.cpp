// aggregated_2step: 2-step locality-aware halo exchange with duplicate removal
// (the "2-step" node-aware scheme of Bienz, Gropp and Olson, "Node aware sparse
// matrix-vector multiplication", JPDC 2019, with the partner on the destination node chosen
// by volume instead of by local index).
//
// For a rank r in region R and each remote region S it sends to:
//   inter : r sends ONE message to a receiver V_S(r) in S: every value any rank of S needs
//           from r, each once (sorted by global id). V_S(r) is the rank of S that needs the
//           most of r's values (ties: lowest rank), so most of the message is already home;
//   final : V forwards to each other destination in S what it needs from the sources V
//           receives for, one message per (V, destination).
// Messages inside a region go directly. When a single rank of S needs anything from r,
// the inter message *is* r's pattern segment: sent from and received into the plan's
// buffers with no copy, exactly as point-to-point does.
//
// Compared with the 3-step aggregation (backends/aggregated.cpp): the same bytes cross each
// region pair (a value of the forward halo exchange has one origin, so removing duplicates
// per origin rank removes all of them), more inter-region messages (one per (rank, region)
// instead of one per region pair), but one dependent step fewer and no gather to a leader
// before anything leaves the node. Where ranks outnumber cores the leader's gather costs a
// scheduling round trip per execution; this variant starts every inter-region send at
// start().
//
// Each step is a detail::Step (comm/plan/step.hpp): transfers between ranks of one node go
// through the plan's shared-memory window by default (window=false: messages).
//
// Both ends derive the receiver and every message layout from the pattern alone: the
// sender from its send segments, the region of S from an allgather of (source, count)
// pairs. Setup needs no inter-region communication beyond what the pattern implies.
#include <algorithm>
#include <cstring>
#include <map>

#include "comm/virt/counting.hpp"
#include "comm/plan/halo/aggregation.hpp"
#include "comm/plan/step.hpp"
#include "sparsecomm/comm/messages.hpp"
#include "sparsecomm/comm/plan/plan.hpp"

namespace sparsecomm {
namespace {

constexpr int kTagLocal = 31, kTagInter = 32, kTagFinal = 33;

// The receiver of a source's values in a region: the destination needing the most of
// them, ties to the lowest rank. Sender and region compute it from the same counts.
bool better(int64_t ca, int a, int64_t cb, int b) { return cb < 0 || ca > cb || (ca == cb && a < b); }

// What my region knows of each remote source I receive from (from the region allgather).
struct Sources {
  std::map<int, int> seg_from;  // remote source -> my recv segment
  std::map<int, int> ndest, receiver_of;  // source -> its number of destinations here / its receiver
};
using Forwards = std::map<int, std::map<int, std::vector<int64_t>>>;  // source -> destination -> gids

class TwoStepPlan final : public detail::ScheduledPlan {
 public:
  TwoStepPlan(const Pattern& p, const Locality& loc, MPI_Comm comm, const PlanOptions& opt)
      : ScheduledPlan("aggregated_2step", p, loc, comm, opt) {
    setup(p, loc, comm, opt);
  }
  ~TwoStepPlan() override { finish_if_active(); }

 protected:
  // Every receive and every send that needs no other rank's data is posted at the start.
  detail::Schedule& schedule() override { return schedule_; }

 private:
  void setup(const Pattern& p, const Locality& loc, MPI_Comm parent, const PlanOptions& opt);
  // The set-up steps, in order.
  void add_sends(const detail::AggregationSetup& a);
  Sources find_receivers(const detail::AggregationSetup& a);
  Forwards learn_forwards(const detail::AggregationSetup& a, const Sources& src) const;
  detail::KeyMap add_inter_recvs(const detail::AggregationSetup& a, const Sources& src, const Forwards& forwarded);
  void add_final(const detail::AggregationSetup& a, const Sources& src, const Forwards& forwarded,
                 const detail::KeyMap& at);

  detail::StepWindow window_;  // the steps' transfers between ranks of one node
  // Same-region transfers; inter-region ones (single-destination ones straight between the
  // plan's buffers); their forwards.
  detail::Step local_{elem_bytes(), kTagLocal}, inter_{elem_bytes(), kTagInter}, final_{elem_bytes(), kTagFinal};
  std::vector<char> r2_;  // a receiver's staged inter-region values
  detail::SelfCopies self_copy_;
  // Start: local transfers and the inter-region ones (from the send buffer). Receivers,
  // once the inter-region transfers are in: the forwards, and their own share copied.
  detail::Schedule schedule_{{&local_, &inter_, &final_},
                             detail::then_forward({{{}, [this] { local_.send(), inter_.send(); }}}, inter_, final_,
                                                  local_, self_copy_, elem_bytes())};
};

void TwoStepPlan::setup(const Pattern& p, const Locality& loc, MPI_Comm parent, const PlanOptions& opt) {
  Stats& st = setup_stats_mut();
  const double t0 = MPI_Wtime();
  const detail::AggregationSetup a(p, loc);
  add_sends(a);
  const Sources src = find_receivers(a);
  const Forwards forwarded = learn_forwards(a, src);
  const detail::KeyMap at = add_inter_recvs(a, src, forwarded);
  add_final(a, src, forwarded, at);
  window_.connect(comm(), parent, opt.backend, opt.persistent_requests,
                  {{&local_, "local"}, {&inter_, "inter"}, {&final_, "final"}}, counter());
  set_stages(final_.empty() ? 1 : 2);
  st.add_time("setup.aggregation", MPI_Wtime() - t0);
}

// --- Send side: same-region segments go directly; the others grouped by region ---------
void TwoStepPlan::add_sends(const detail::AggregationSetup& a) {
  const auto& s = a.s;
  const int64_t eb = elem_bytes();
  const auto send_to_region = detail::by_remote_region(s, a.loc, [&](int i) {  // S -> my send segments
    local_.add_send(s.ranks[i], send_buf() + s.offsets[i] * eb, s.count(i));
  });
  for (const auto& [S, segs] : send_to_region) {
    if (segs.size() == 1) {  // one destination: its segment, straight from send_buf
      const int i = segs[0];
      inter_.add_send(s.ranks[i], send_buf() + s.offsets[i] * eb, s.count(i));
      continue;
    }
    int V = -1;
    int64_t vc = -1;
    std::map<int64_t, const char*> vals;  // gid -> a copy of it in send_buf (sorted, unique)
    for (int i : segs) {
      if (better(s.count(i), s.ranks[i], vc, V)) V = s.ranks[i], vc = s.count(i);
      for (int64_t k = s.offsets[i]; k < s.offsets[i + 1]; ++k) vals.emplace(s.global_ids[k], send_buf() + k * eb);
    }
    std::vector<const char*> src;
    for (const auto& [gid, where] : vals) src.push_back(where);
    inter_.add_send(V, src);
  }
}

// --- Receive side: who in my region needs how much from each remote source ------------
Sources TwoStepPlan::find_receivers(const detail::AggregationSetup& a) {
  const auto& r = a.r;
  Sources out;
  std::vector<int64_t> mine;  // (source rank, count) of my remote receive segments
  const auto recv_from_region = detail::by_remote_region(r, a.loc, [&](int i) {
    local_.add_recv(r.ranks[i], recv_buf() + r.offsets[i] * elem_bytes(), r.count(i));
  });
  for (const auto& [R, segs] : recv_from_region)
    for (int i : segs) {
      mine.insert(mine.end(), {r.ranks[i], r.count(i)});
      out.seg_from[r.ranks[i]] = i;
    }
  const auto all = detail::region_allgatherv(a.local, mine);
  std::map<int, int64_t> best;
  for (int li = 0; li < a.nlocal; ++li)
    for (size_t k = 0; k < all[li].size(); k += 2) {
      const int src = static_cast<int>(all[li][k]), d = a.loc.member(a.my_region, li);
      ++out.ndest[src];
      auto b = best.emplace(src, -1).first;
      if (better(all[li][k + 1], d, b->second, out.receiver_of[src]))
        out.receiver_of[src] = d, b->second = all[li][k + 1];
    }
  return out;
}

// Each destination sends its gids to the receiver of every source it shares with others:
// [source, count, gids...] (region alltoallv). Returns what I forward as a receiver.
Forwards TwoStepPlan::learn_forwards(const detail::AggregationSetup& a, const Sources& src) const {
  const auto& r = a.r;
  std::vector<std::vector<int64_t>> to_receivers(static_cast<size_t>(a.nlocal));
  for (const auto& [from, i] : src.seg_from) {
    const int V = src.receiver_of.at(from);
    if (src.ndest.at(from) == 1 || V == a.me) continue;
    auto& v = to_receivers[a.loc.local_index_of(V)];
    v.insert(v.end(), {from, r.count(i)});
    v.insert(v.end(), r.global_ids.begin() + r.offsets[i], r.global_ids.begin() + r.offsets[i + 1]);
  }
  const auto meta = detail::region_alltoallv(a.local, to_receivers);
  Forwards forwarded;
  for (int li = 0; li < a.nlocal; ++li)
    for (size_t k = 0; k < meta[li].size();) {
      const int from = static_cast<int>(meta[li][k]);
      const auto n = static_cast<size_t>(meta[li][k + 1]);
      forwarded[from][a.loc.member(a.my_region, li)].assign(meta[li].begin() + static_cast<std::ptrdiff_t>(k + 2),
                                                            meta[li].begin() + static_cast<std::ptrdiff_t>(k + 2 + n));
      k += 2 + n;
    }
  return forwarded;
}

// --- Inter receives: straight into recv_buf, or staged (sorted unique union) at V -------
// Returns where each staged (source, gid) sits in r2_.
detail::KeyMap TwoStepPlan::add_inter_recvs(const detail::AggregationSetup& a, const Sources& src,
                                            const Forwards& forwarded) {
  const auto& r = a.r;
  const int64_t eb = elem_bytes();
  std::map<int, std::vector<int64_t>> staged;  // source -> gids, sorted unique
  for (const auto& [from, n] : src.ndest) {
    auto mine_it = src.seg_from.find(from);
    if (n == 1) {  // a single destination here: its segment, straight into recv_buf
      if (mine_it == src.seg_from.end()) continue;
      const int i = mine_it->second;
      inter_.add_recv(from, recv_buf() + r.offsets[i] * eb, r.count(i));
      continue;
    }
    if (src.receiver_of.at(from) != a.me) continue;
    std::vector<int64_t> g;
    if (mine_it != src.seg_from.end())
      g.assign(r.global_ids.begin() + r.offsets[mine_it->second], r.global_ids.begin() + r.offsets[mine_it->second + 1]);
    if (auto fw = forwarded.find(from); fw != forwarded.end())
      for (const auto& [d, gids] : fw->second) g.insert(g.end(), gids.begin(), gids.end());
    std::sort(g.begin(), g.end());
    g.erase(std::unique(g.begin(), g.end()), g.end());
    staged[from] = std::move(g);
  }
  int64_t n2 = 0;
  for (const auto& [from, g] : staged) n2 += static_cast<int64_t>(g.size());
  r2_.assign(static_cast<size_t>(n2 * eb), 0);
  detail::KeyMap at;  // (source, gid) -> where in r2_
  int64_t off = 0;
  for (const auto& [from, g] : staged) {
    for (size_t k = 0; k < g.size(); ++k) at.emplace(std::make_pair(from, g[k]), r2_.data() + (off + static_cast<int64_t>(k)) * eb);
    inter_.add_recv(from, r2_.data() + off * eb, static_cast<int64_t>(g.size()));
    off += static_cast<int64_t>(g.size());
    if (auto it = src.seg_from.find(from); it != src.seg_from.end())  // my own share
      for (int64_t k = r.offsets[it->second]; k < r.offsets[it->second + 1]; ++k)
        self_copy_.emplace_back(recv_buf() + k * eb, at.at({from, r.global_ids[k]}));
  }
  return at;
}

// --- Final step: one message per (receiver, destination), sources ascending -------------
void TwoStepPlan::add_final(const detail::AggregationSetup& a, const Sources& src, const Forwards& forwarded,
                            const detail::KeyMap& at) {
  const auto& r = a.r;
  std::map<int, std::vector<const char*>> final_out;  // destination -> gathered from r2_
  for (const auto& [from, by_dest] : forwarded)
    for (const auto& [d, gids] : by_dest)
      for (int64_t gid : gids) final_out[d].push_back(at.at({from, gid}));
  for (auto& [d, from] : final_out) final_.add_send(d, from);
  std::map<int, std::vector<int>> final_in;  // V -> the sources it forwards to me
  for (const auto& [from, i] : src.seg_from)
    if (src.ndest.at(from) > 1 && src.receiver_of.at(from) != a.me) final_in[src.receiver_of.at(from)].push_back(from);
  for (const auto& [V, froms] : final_in) {  // straight into recv_buf
    std::vector<char*> dst;
    for (int from : froms) {
      const int i = src.seg_from.at(from);
      for (int64_t k = r.offsets[i]; k < r.offsets[i + 1]; ++k) dst.push_back(recv_buf() + k * elem_bytes());
    }
    final_.add_recv(V, dst);
  }
}

}  // namespace

// Plan statistics (virt::halo_counts): this backend's counts, following its set-up step by
// step, checked rank by rank against real plans by tests/test_plan_stats.cpp.
namespace virt {
namespace {

// Counts of the 2-step aggregation (backends/aggregated2.cpp): local segments directly;
// per (source, remote region) one inter-region message to the destination needing the
// most values (ties: lowest rank) with the distinct ids of all the region's segments, or
// the segment itself when the region holds one destination; that receiver forwards each
// other destination's segment, merged per (receiver, destination) over sources.
std::vector<RankCounts> two_step_counts(const HaloPattern& pat, const std::vector<int>& region, int64_t eb,
                                        bool windows) {
  const int p = pat.p;
  std::vector<RankCounts> out(static_cast<size_t>(p));
  const Recorder rec(out, region, pat, windows);
  std::map<std::pair<int, int>, int64_t> forwarded;  // (receiver, destination) -> values
  for (int a = 0; a < p; ++a) {
    std::map<int, std::vector<const HaloPattern::Segment*>> to_region;
    for (const auto& seg : pat.send[a]) {
      const int d = seg.dest;
      if (region[d] == region[a]) {
        rec("local", a, d, seg.size * eb);
      } else {
        to_region[region[d]].push_back(&seg);
      }
    }
    for (const auto& [S, segs] : to_region) {
      const auto* v = segs[0];
      for (const auto* seg : segs)
        if (seg->size > v->size) v = seg;  // ascending ranks: ties keep the lowest
      int64_t n = v->size;
      if (segs.size() > 1 && !pat.distinct.empty()) {
        n = pat.distinct[static_cast<size_t>(a)].at(S);
      } else if (segs.size() > 1) {
        std::vector<int64_t> ids;
        for (const auto* seg : segs) ids.insert(ids.end(), seg->ids.begin(), seg->ids.end());
        std::sort(ids.begin(), ids.end());
        n = static_cast<int64_t>(std::unique(ids.begin(), ids.end()) - ids.begin());
      }
      rec("inter", a, v->dest, n * eb);
      if (segs.size() > 1)
        for (const auto* seg : segs)
          if (seg != v) forwarded[{v->dest, seg->dest}] += seg->size;
    }
  }
  for (const auto& [pair, n] : forwarded) {
    rec("final", pair.first, pair.second, n * eb);
    out[pair.first].stages = out[pair.second].stages = 2;
  }
  return out;
}

}  // namespace

std::vector<RankCounts> two_step_halo_counts(const HaloPattern& pat, const std::vector<int>& region,
                                             const PlanOptions& opt) {
  return two_step_counts(pat, region, static_cast<int64_t>(opt.width) * opt.value_bytes,
                         detail::window_wanted(opt.backend));
}

}  // namespace virt

namespace detail {
void register_aggregated_2step() {
  register_backend("aggregated_2step",
                   "2-step locality-aware aggregation with duplicate removal (one message per rank and remote "
                   "region, forwarded inside the region)",
                   plan_factory<TwoStepPlan>(),
                   detail::aggregation_hooks(virt::two_step_halo_counts, 2));
}
}  // namespace detail

}  // namespace sparsecomm
