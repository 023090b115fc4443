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

  detail::StepWindow window_;  // the steps' transfers between ranks of one node
  // Same-region transfers; inter-region ones (single-destination ones straight between the
  // plan's buffers); their forwards.
  detail::Step local_{elem_bytes(), kTagLocal}, inter_{elem_bytes(), kTagInter}, final_{elem_bytes(), kTagFinal};
  std::vector<char> r2_;  // a receiver's staged inter-region values
  std::vector<std::pair<char*, const char*>> self_copy_;
  // Start: local transfers and the inter-region ones (from the send buffer). Receivers,
  // once the inter-region transfers are in: the forwards, and their own share copied.
  detail::Schedule schedule_{{&local_, &inter_, &final_},
                             {{{}, [this] { local_.send(), inter_.send(); }},
                              {{&inter_},
                               [this] {
                                 final_.send();
                                 for (const auto& [dst, src] : self_copy_)
                                   std::memcpy(dst, src, static_cast<size_t>(elem_bytes()));
                               }},
                              {{&final_, &local_}, {}}}};
};

void TwoStepPlan::setup(const Pattern& p, const Locality& loc, MPI_Comm parent, const PlanOptions& opt) {
  const int me = loc.rank();
  const int my_region = loc.region();
  MPI_Comm local = loc.local_comm();
  const int nlocal = loc.local_size();
  const int64_t eb = elem_bytes();
  const auto& s = p.send();
  const auto& r = p.recv();
  Stats& st = setup_stats_mut();
  const double t0 = MPI_Wtime();
  // The receiver of a source's values in a region: the destination needing the most of
  // them, ties to the lowest rank. Sender and region compute it from the same counts.
  const auto better = [](int64_t ca, int a, int64_t cb, int b) { return cb < 0 || ca > cb || (ca == cb && a < b); };

  // --- Send side: same-region segments go directly; the others grouped by region ---------
  const auto send_to_region = detail::by_remote_region(s, loc, [&](int i) {  // S -> my send segments
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

  // --- Receive side: who in my region needs how much from each remote source ------------
  std::vector<int64_t> mine;    // (source rank, count) of my remote receive segments
  std::map<int, int> seg_from;  // remote source -> my recv segment
  const auto recv_from_region = detail::by_remote_region(r, loc, [&](int i) {
    local_.add_recv(r.ranks[i], recv_buf() + r.offsets[i] * eb, r.count(i));
  });
  for (const auto& [R, segs] : recv_from_region)
    for (int i : segs) {
      mine.insert(mine.end(), {r.ranks[i], r.count(i)});
      seg_from[r.ranks[i]] = i;
    }
  const auto all = detail::region_allgatherv(local, mine);
  std::map<int, int> ndest, receiver_of;  // source -> its number of destinations here / its receiver
  {
    std::map<int, int64_t> best;
    for (int li = 0; li < nlocal; ++li)
      for (size_t k = 0; k < all[li].size(); k += 2) {
        const int src = static_cast<int>(all[li][k]), d = loc.member(my_region, li);
        ++ndest[src];
        auto b = best.emplace(src, -1).first;
        if (better(all[li][k + 1], d, b->second, receiver_of[src])) receiver_of[src] = d, b->second = all[li][k + 1];
      }
  }

  // Each destination sends its gids to the receiver of every source it shares with others:
  // [source, count, gids...] (region alltoallv).
  std::vector<std::vector<int64_t>> to_receivers(static_cast<size_t>(nlocal));
  for (const auto& [src, i] : seg_from) {
    const int V = receiver_of.at(src);
    if (ndest.at(src) == 1 || V == me) continue;
    auto& v = to_receivers[loc.local_index_of(V)];
    v.insert(v.end(), {src, r.count(i)});
    v.insert(v.end(), r.global_ids.begin() + r.offsets[i], r.global_ids.begin() + r.offsets[i + 1]);
  }
  const auto meta = detail::region_alltoallv(local, to_receivers);
  std::map<int, std::map<int, std::vector<int64_t>>> forwarded;  // source -> destination -> gids
  for (int li = 0; li < nlocal; ++li)
    for (size_t k = 0; k < meta[li].size();) {
      const int src = static_cast<int>(meta[li][k]);
      const auto n = static_cast<size_t>(meta[li][k + 1]);
      forwarded[src][loc.member(my_region, li)].assign(meta[li].begin() + static_cast<std::ptrdiff_t>(k + 2),
                                                       meta[li].begin() + static_cast<std::ptrdiff_t>(k + 2 + n));
      k += 2 + n;
    }

  // --- Inter receives: straight into recv_buf, or staged (sorted unique union) at V -------
  std::map<int, std::vector<int64_t>> staged;  // source -> gids, sorted unique
  for (const auto& [src, n] : ndest) {
    auto mine_it = seg_from.find(src);
    if (n == 1) {  // a single destination here: its segment, straight into recv_buf
      if (mine_it == seg_from.end()) continue;
      const int i = mine_it->second;
      inter_.add_recv(src, recv_buf() + r.offsets[i] * eb, r.count(i));
      continue;
    }
    if (receiver_of.at(src) != me) continue;
    std::vector<int64_t> g;
    if (mine_it != seg_from.end())
      g.assign(r.global_ids.begin() + r.offsets[mine_it->second], r.global_ids.begin() + r.offsets[mine_it->second + 1]);
    if (auto fw = forwarded.find(src); fw != forwarded.end())
      for (const auto& [d, gids] : fw->second) g.insert(g.end(), gids.begin(), gids.end());
    std::sort(g.begin(), g.end());
    g.erase(std::unique(g.begin(), g.end()), g.end());
    staged[src] = std::move(g);
  }
  int64_t n2 = 0;
  for (const auto& [src, g] : staged) n2 += static_cast<int64_t>(g.size());
  r2_.assign(static_cast<size_t>(n2 * eb), 0);
  detail::KeyMap at;  // (source, gid) -> where in r2_
  {
    int64_t off = 0;
    for (const auto& [src, g] : staged) {
      for (size_t k = 0; k < g.size(); ++k) at.emplace(std::make_pair(src, g[k]), r2_.data() + (off + static_cast<int64_t>(k)) * eb);
      inter_.add_recv(src, r2_.data() + off * eb, static_cast<int64_t>(g.size()));
      off += static_cast<int64_t>(g.size());
      if (auto it = seg_from.find(src); it != seg_from.end())  // my own share
        for (int64_t k = r.offsets[it->second]; k < r.offsets[it->second + 1]; ++k)
          self_copy_.emplace_back(recv_buf() + k * eb, at.at({src, r.global_ids[k]}));
    }
  }

  // --- Final step: one message per (receiver, destination), sources ascending -------------
  std::map<int, std::vector<const char*>> final_out;  // destination -> gathered from r2_
  for (const auto& [src, by_dest] : forwarded)
    for (const auto& [d, gids] : by_dest)
      for (int64_t gid : gids) final_out[d].push_back(at.at({src, gid}));
  for (auto& [d, src] : final_out) final_.add_send(d, src);
  std::map<int, std::vector<int>> final_in;  // V -> the sources it forwards to me
  for (const auto& [src, i] : seg_from)
    if (ndest.at(src) > 1 && receiver_of.at(src) != me) final_in[receiver_of.at(src)].push_back(src);
  for (const auto& [V, srcs] : final_in) {  // straight into recv_buf
    std::vector<char*> dst;
    for (int src : srcs) {
      const int i = seg_from.at(src);
      for (int64_t k = r.offsets[i]; k < r.offsets[i + 1]; ++k) dst.push_back(recv_buf() + k * eb);
    }
    final_.add_recv(V, dst);
  }
  window_.connect(comm(), parent, opt.backend, opt.persistent_requests,
                  {{&local_, "local"}, {&inter_, "inter"}, {&final_, "final"}}, counter());
  set_stages(final_.empty() ? 1 : 2);
  st.add_time("setup.aggregation", MPI_Wtime() - t0);
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
                   [](const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o) {
                     return std::unique_ptr<Plan>(new TwoStepPlan(p, l, c, o));
                   },
                   detail::aggregation_hooks(virt::two_step_halo_counts, 2));
}
}  // namespace detail

}  // namespace sparsecomm
