#include "sparsecomm/comm/combining.hpp"

#include <algorithm>
#include <climits>
#include <map>
#include <memory>
#include <set>

#include "sparsecomm/comm/sdde.hpp"

namespace sparsecomm {

namespace {

using Lists = std::map<int, std::vector<int64_t>>;

// Exchange with peers known on both sides: send out[p] to every key p, receive one
// message of at most `max_count` values from every rank in `from`. The receives are
// posted with that bound and trimmed to the count that arrived, rather than probed: under
// SimGrid's SMPI a blocking MPI_Probe is a polling loop whose polls also advance the
// simulated clock (the simulated phase 1 with and without probes: git log -p --
// experiments/mirsadeghi/README.md).
Lists known_exchange(MPI_Comm comm, int tag, const Lists& out, const std::vector<int>& from, size_t max_count) {
  std::vector<MPI_Request> reqs(from.size() + out.size());
  Lists in;
  for (size_t i = 0; i < from.size(); ++i) {
    auto& v = in[from[i]];
    v.resize(std::max<size_t>(max_count, 1));
    SPC_MPI(MPI_Irecv(v.data(), static_cast<int>(v.size()), MPI_INT64_T, from[i], tag, comm, &reqs[i]));
  }
  size_t i = from.size();
  for (const auto& [p, v] : out) {
    if (v.size() > max_count) throw Error("combining: internal message of " + std::to_string(v.size()) +
                                          " values exceeds its bound " + std::to_string(max_count));
    SPC_MPI(MPI_Isend(v.data(), static_cast<int>(v.size()), MPI_INT64_T, p, tag, comm, &reqs[i++]));
  }
  std::vector<MPI_Status> st(reqs.size());
  wait_all(reqs, st.data());
  for (size_t j = 0; j < from.size(); ++j) {
    int n = 0;
    SPC_MPI(MPI_Get_count(&st[j], MPI_INT64_T, &n));
    in[from[j]].resize(static_cast<size_t>(n));
  }
  return in;
}

Lists sdde_lists(Sdde& sdde, const Lists& out, const std::string& strategy, Stats* stats) {
  SparseMessages<int64_t> m;
  for (const auto& [p, v] : out) m.add(p, v);
  auto got = sdde.exchange(m, strategy, stats);
  Lists in;
  for (size_t i = 0; i < got.size(); ++i) in[got.ranks[i]] = got.message(i);
  return in;
}

int any_true(MPI_Comm comm, bool b) {
  int v = b ? 1 : 0, r = 0;
  SPC_MPI(MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_MAX, comm));
  return r;
}

int64_t sum_all(MPI_Comm comm, int64_t v) { return allreduce_sum(comm, v); }

// The greedy matching of the candidate graph (`live` is symmetric: u lists v iff v lists
// u) under one strict order of its edges: heavier first, ties to the pair with the lower
// ranks (a rank prefers the heaviest candidate, then the lowest rank; this is the order
// (weight desc, min rank, max rank) on edges). Returns my partner or -1.
//
// Computed with Hoepman's request protocol ("Simple distributed weighted matchings",
// 2004; the distributed form of Preis's locally dominant edges): every rank sends REQ to
// its best candidate not known to be out; two ranks that request each other match. An
// edge matches only when it is the best remaining edge at both ends, so the result is the
// greedy matching, whatever the message timing (the same one the synchronous proposal
// rounds of virt::combining_schedules compute).
//
// Out-notices are lazy: a rank that is done (matched, or every candidate is out) answers
// FIN to the requests waiting for it and to every later one, and tells nobody else. A
// rank learns that a candidate is out only by asking it. (The eager form told every
// candidate: one FIN each way over every candidate pair. On Erdős–Rényi graphs two ranks
// share P density^2 destinations, so at 4,096 ranks nearly every pair is a candidate and
// that was 33 M messages per matching, more than a simulation of it can afford.)
// Termination: a done rank enters a non-blocking barrier (NonblockingBarrier; one wait
// serves it and the incoming requests, without polling) and keeps answering. A rank with a request outstanding is never done,
// and every request is answered, so when the barrier completes nothing is in flight.
int greedy_match(MPI_Comm comm, int tag, int barrier_tag, const std::set<int>& live, const std::map<int, int>& weight) {
  static_assert(sizeof(int64_t) == 8, "");
  static const int64_t kReq = 1, kFin = 2, kSelf = 3;
  const int me = comm_rank(comm);
  std::set<int> cand = live, asked_me;  // cand: candidates not known to be out
  std::vector<MPI_Request> sends;
  auto send = [&](int to, const int64_t& what) {
    sends.emplace_back();
    SPC_MPI(MPI_Isend(&what, 1, MPI_INT64_T, to, tag, comm, &sends.back()));
  };
  auto best = [&]() {
    int b = -1;
    for (int l : cand)  // ascending: on equal weight the lower rank stays
      if (b < 0 || weight.at(l) > weight.at(b)) b = l;
    return b;
  };
  MPI_Request recv = MPI_REQUEST_NULL;  // the next REQ or FIN
  int64_t in = 0;
  auto post_recv = [&]() { SPC_MPI(MPI_Irecv(&in, 1, MPI_INT64_T, MPI_ANY_SOURCE, tag, comm, &recv)); };
  std::unique_ptr<NonblockingBarrier> barrier;  // entered once I am done

  int target = best(), partner = -1;
  if (target >= 0) send(target, kReq);
  post_recv();
  auto settle = [&]() {
    if (barrier) return;
    if (target >= 0 && asked_me.count(target)) partner = target;  // we requested each other
    if (partner < 0 && target >= 0) return;                       // still waiting for target
    for (int a : asked_me)
      if (a != partner) send(a, kFin);
    barrier = std::make_unique<NonblockingBarrier>(comm, barrier_tag);
  };
  settle();
  while (true) {
    MPI_Status st;
    if (!barrier) SPC_MPI(MPI_Wait(&recv, &st));
    else if (!barrier->wait_with(recv, &st)) break;  // everyone is done
    const int from = st.MPI_SOURCE;
    const int64_t what = in;
    if (!live.count(from) || (what != kReq && what != kFin))
      throw Error("combining: unexpected matching message from rank " + std::to_string(from));
    post_recv();
    if (what == kReq) {
      if (barrier) send(from, kFin);
      else asked_me.insert(from);
    } else {
      cand.erase(from);
      if (from == target && partner < 0) {
        target = best();
        if (target >= 0) send(target, kReq);
      }
    }
    settle();
  }
  // Nothing else is in flight: complete the posted receive with a message to myself.
  MPI_Request self = MPI_REQUEST_NULL;
  SPC_MPI(MPI_Isend(&kSelf, 1, MPI_INT64_T, me, tag, comm, &self));
  SPC_MPI(MPI_Wait(&recv, MPI_STATUS_IGNORE));
  SPC_MPI(MPI_Wait(&self, MPI_STATUS_IGNORE));
  if (in != kSelf) throw Error("combining: a matching message arrived after the matching ended");
  wait_all(sends);
  return partner;
}

// Phase 1 of message combining on one rank: rounds in which groups grow by merge levels
// (leaders matched by the greedy matching of the candidate pairs that share at least
// theta destinations, up to k members), then the groups are announced and each splits its
// common destinations among its members. Every step is collective over the ranks in the
// same order.
class Phase1 {
 public:
  Phase1(const Comm& comm, Sdde& sdde, const Topology& topo, const Locality& loc, const CombiningOptions& opt,
         Stats* stats)
      : comm_(comm.get()), sdde_(sdde), loc_(loc), opt_(opt), stats_(stats), me_(comm.rank()),
        // The most leaders that can ask one destination: the bound of the replies' receives.
        max_in_degree_(static_cast<size_t>(allreduce_max(comm.get(), static_cast<int64_t>(topo.sources.size())))),
        // A merge message: [size, members (< k), common destinations (< P)].
        merge_bound_(1 + static_cast<size_t>(opt.k) + static_cast<size_t>(comm.size())) {
    for (int d : topo.destinations) {
      if (d == me_) self_loop_ = true;
      else pending_.insert(d);
    }
  }

  /// One round; false once no rank belongs to a new group (the rounds end).
  bool round(CombiningSchedule& s) {
    // Every rank starts the round as the leader of a group of one.
    Group g{true, {me_}, std::vector<int64_t>(pending_.begin(), pending_.end())};
    while (merge_level(g)) {
    }
    const Lists mine = announce(g, s);
    exchange_flags(mine);
    cover(mine);
    ++s.rounds;
    return sum_all(comm_, static_cast<int64_t>(mine.size())) != 0;
  }

  /// The schedule's lists, once the rounds are over.
  void finish(CombiningSchedule& s) {
    for (int d : pending_) origins_[d].insert(me_);
    if (self_loop_) origins_[me_].insert(me_);

    for (const auto& [m, d] : send_dests_) s.stage1_send.push_back(m);
    for (const auto& [m, d] : recv_dests_) s.stage1_recv.push_back(m);
    Lists tell;
    for (const auto& [d, o] : origins_) {
      s.dest.push_back(d);
      s.dest_origins.emplace_back(o.begin(), o.end());
      tell[d] = std::vector<int64_t>(o.begin(), o.end());
    }
    Lists told = sdde_lists(sdde_, tell, opt_.sdde, stats_);
    for (const auto& [f, o] : told) {
      s.from.push_back(f);
      s.from_origins.emplace_back(o.begin(), o.end());
    }
    // Stage-1 destinations per member, for alltoallv-shaped use.
    for (const auto& [m, d] : send_dests_) s.stage1_send_dests.emplace_back(d.begin(), d.end());
    for (const auto& [m, d] : recv_dests_) s.stage1_recv_dests.emplace_back(d.begin(), d.end());
  }

 private:
  static constexpr int kTagPropose = 31, kTagMerge = 32, kTagBarrier = 35, kTagReply = 36;  // 33: kTagMerge + 1
  struct Group {
    bool leader;
    std::vector<int> members;
    std::vector<int64_t> common;
  };

  // One merge level; false once no pair matched anywhere (the levels end).
  bool merge_level(Group& g) {
    std::map<int, int> weight, size_of;
    const std::set<int> live = candidates(g, weight, size_of);
    if (!any_true(comm_, !live.empty())) return false;
    // Matching on leaders: the greedy matching of the live candidate pairs.
    const int partner = greedy_match(comm_, kTagPropose, kTagBarrier, live, weight);
    merge(g, partner);
    return sum_all(comm_, partner >= 0 ? 1 : 0) != 0;
  }

  // The leaders I may merge with: those sharing at least theta of my common destinations
  // whose group fits with mine in k (and, aware, in my region).
  std::set<int> candidates(const Group& g, std::map<int, int>& weight, std::map<int, int>& size_of) {
    // Ask the destinations in my common set which other leaders also have them.
    const bool can_grow = g.leader && static_cast<int>(g.members.size()) < opt_.k &&
                          static_cast<int>(g.common.size()) >= opt_.theta;
    Lists q;
    if (can_grow)
      for (int64_t c : g.common) q[static_cast<int>(c)] = {static_cast<int64_t>(g.members.size())};
    Lists asked = sdde_lists(sdde_, q, opt_.sdde, stats_);  // at a destination: leader -> [size]
    // Every asked destination answers every leader that asked it with the list of the
    // leaders that asked it. A leader knows whom it asked, so this is an exchange with
    // known sources, not a second SDDE. One value per leader: leader * (k + 1) + size.
    // (These replies carry about P (P density)^2 values on Erdős–Rényi graphs, the bulk
    // of phase 1: their size matters, and under SMPI so does the SDDE's extra traffic.)
    Lists reply;
    if (!asked.empty()) {
      std::vector<int64_t> who;
      who.reserve(asked.size());
      for (const auto& [l, v] : asked) who.push_back(static_cast<int64_t>(l) * (opt_.k + 1) + v[0]);
      for (const auto& [l, v] : asked) reply[l] = who;
    }
    std::vector<int> asked_whom;
    for (const auto& [c, v] : q) asked_whom.push_back(c);
    Lists answers = known_exchange(comm_, kTagReply, reply, asked_whom, max_in_degree_);
    for (const auto& [c, who] : answers)
      for (int64_t code : who) {
        const int l = static_cast<int>(code / (opt_.k + 1));
        if (l == me_) continue;
        ++weight[l];
        size_of[l] = static_cast<int>(code % (opt_.k + 1));
      }
    std::set<int> live;
    for (const auto& [l, w] : weight)
      if (w >= opt_.theta && static_cast<int>(g.members.size()) + size_of[l] <= opt_.k &&
          (!opt_.aware || loc_.region_of(l) == loc_.region_of(me_)))
        live.insert(l);
    return live;
  }

  // Merge matched pairs: the lower rank leads the merged group.
  void merge(Group& g, int partner) {
    Lists out;
    std::vector<int> from;
    if (partner >= 0) {
      if (me_ < partner) from.push_back(partner);
      else {
        std::vector<int64_t> v{static_cast<int64_t>(g.members.size())};
        v.insert(v.end(), g.members.begin(), g.members.end());
        v.insert(v.end(), g.common.begin(), g.common.end());
        out[partner] = v;
      }
    }
    Lists in = known_exchange(comm_, kTagMerge, out, from, merge_bound_);
    if (partner >= 0 && me_ > partner) g.leader = false;
    for (const auto& [p, v] : in) {
      const size_t n = static_cast<size_t>(v[0]);
      g.members.insert(g.members.end(), v.begin() + 1, v.begin() + 1 + static_cast<std::ptrdiff_t>(n));
      std::sort(g.members.begin(), g.members.end());
      std::vector<int64_t> theirs(v.begin() + 1 + static_cast<std::ptrdiff_t>(n), v.end()), both;
      std::set_intersection(g.common.begin(), g.common.end(), theirs.begin(), theirs.end(), std::back_inserter(both));
      g.common = std::move(both);
    }
  }

  // Leaders of groups of 2+ tell every member the group and its common neighborhood.
  // Returns the groups I am a member of: leader -> [size, members, common].
  Lists announce(const Group& g, CombiningSchedule& s) {
    Lists info;
    if (g.leader && g.members.size() >= 2 && !g.common.empty()) {
      std::vector<int64_t> v{static_cast<int64_t>(g.members.size())};
      v.insert(v.end(), g.members.begin(), g.members.end());
      v.insert(v.end(), g.common.begin(), g.common.end());
      for (int m : g.members) info[m] = v;
      ++s.groups_led;
      s.group_members += static_cast<int>(g.members.size());
    }
    return sdde_lists(sdde_, info, opt_.sdde, stats_);
  }

  // A member that is also one of my pending destinations and forwards for the group
  // already gets my data in stage 1: deliver it there instead of a second, direct
  // message. Members tell each other (group members know each other now).
  void exchange_flags(const Lists& mine) {
    Lists flags;
    std::vector<int> flag_from;
    for (const auto& [l, v] : mine) {
      const size_t n = static_cast<size_t>(v[0]);
      const size_t ncommon = v.size() - 1 - n;
      for (size_t i = 0; i < n; ++i) {
        const int x = static_cast<int>(v[1 + i]);
        if (x == me_) continue;
        const bool x_forwards = i < ncommon;  // member i covers common[i], common[i+n], ...
        size_t my_index = 0;
        while (static_cast<int>(v[1 + my_index]) != me_) ++my_index;
        if (x_forwards) flags[x] = {pending_.count(x) ? 1 : 0};
        if (my_index < ncommon) flag_from.push_back(x);
      }
    }
    Lists their_flags = known_exchange(comm_, kTagMerge + 1, flags, flag_from, 1);
    for (const auto& [x, f] : flags)
      if (f[0]) {  // x is my pending destination and will get my data in stage 1
        pending_.erase(x);
        send_dests_[x].insert(x);
      }
    for (const auto& [m, f] : their_flags)
      if (f[0]) recv_dests_[m].insert(me_);  // m's data for me comes in stage 1
  }

  // Each group's common destinations split among its members.
  void cover(const Lists& mine) {
    for (const auto& [l, v] : mine) {
      const size_t n = static_cast<size_t>(v[0]);
      std::vector<int> mem(v.begin() + 1, v.begin() + 1 + static_cast<std::ptrdiff_t>(n));
      std::vector<int> com(v.begin() + 1 + static_cast<std::ptrdiff_t>(n), v.end());
      // Member i of the group covers every size-th destination of the common set,
      // starting at position i: a split every member computes the same way.
      for (size_t j = 0; j < com.size(); ++j) {
        const int cover = mem[j % n];
        pending_.erase(com[j]);
        if (cover == me_) {
          for (int m : mem) origins_[com[j]].insert(m);
          for (int m : mem)
            if (m != me_) recv_dests_[m].insert(com[j]);
        } else {
          send_dests_[cover].insert(com[j]);
        }
      }
    }
  }

  MPI_Comm comm_;
  Sdde& sdde_;
  const Locality& loc_;
  const CombiningOptions& opt_;
  Stats* stats_;
  const int me_;
  const size_t max_in_degree_, merge_bound_;
  std::set<int> pending_;
  bool self_loop_ = false;
  std::map<int, std::set<int>> origins_;                  // destination -> origins I deliver there
  std::map<int, std::set<int>> send_dests_, recv_dests_;  // stage 1: member -> destinations
};

}  // namespace

CombiningSchedule CombiningSchedule::build(MPI_Comm parent, const Topology& topo, const Locality& loc,
                                           const CombiningOptions& opt, Stats* stats) {
  std::string err;
  if (opt.k < 2) err = "combining: group size k must be >= 2, got " + std::to_string(opt.k);
  else if (opt.theta < 1) err = "combining: theta must be >= 1, got " + std::to_string(opt.theta);
  else if (opt.max_rounds < 0) err = "combining: max_rounds must be >= 0";
  // A given schedule skips phase 1's collectives: every rank or none may have one.
  int given[2] = {opt.given ? 1 : 0, opt.given ? 0 : 1};
  SPC_MPI(MPI_Allreduce(MPI_IN_PLACE, given, 2, MPI_INT, MPI_MAX, parent));
  if (err.empty() && given[0] && given[1])
    err = "combining: a given schedule (CombiningOptions::given) on some ranks but not on all";
  agree(parent, err);
  if (opt.given) {
    agree(parent, opt.given->coverage_error(topo, comm_rank(parent)));
    return *opt.given;
  }
  Comm comm(parent);
  Sdde sdde(parent, loc);
  const double t0 = MPI_Wtime();
  Phase1 phase1(comm, sdde, topo, loc, opt, stats);
  CombiningSchedule s;
  for (int round = 0; round < opt.max_rounds; ++round)
    if (!phase1.round(s)) break;
  phase1.finish(s);
  const std::string bad = s.coverage_error(topo, comm.rank());
  agree(parent, bad.empty() ? bad : bad + " (internal error; please report)");
  if (stats) stats->add_time("setup.combining.phase1", MPI_Wtime() - t0);
  return s;
}

std::string CombiningSchedule::coverage_error(const Topology& topo, int me) const {
  auto has_me = [me](const std::vector<int>& v) { return std::binary_search(v.begin(), v.end(), me); };
  // Sources: what forwarders bring me, and stage-1 messages that also deliver the member's
  // own block to me (I am then among the destinations I cover for that member).
  std::vector<int> got;
  for (const auto& o : from_origins) got.insert(got.end(), o.begin(), o.end());
  for (size_t i = 0; i < stage1_recv.size() && i < stage1_recv_dests.size(); ++i)
    if (has_me(stage1_recv_dests[i])) got.push_back(stage1_recv[i]);
  // Destinations: those I send my block to myself, and those stage-1 peers cover for me.
  std::vector<int> sent;
  for (size_t i = 0; i < dest.size() && i < dest_origins.size(); ++i)
    if (has_me(dest_origins[i])) sent.push_back(dest[i]);
  for (const auto& d : stage1_send_dests) sent.insert(sent.end(), d.begin(), d.end());
  std::sort(got.begin(), got.end());
  std::sort(sent.begin(), sent.end());
  const std::string who = "combining: the pattern of rank " + std::to_string(me);
  if (got != topo.sources) return who + " does not deliver the block of each in-neighbor exactly once";
  if (sent != topo.destinations) return who + " does not deliver its block to each out-neighbor exactly once";
  if (stage1_send.size() != stage1_send_dests.size() || stage1_recv.size() != stage1_recv_dests.size() ||
      dest.size() != dest_origins.size() || from.size() != from_origins.size())
    return who + " has lists of different lengths";
  return "";
}

namespace {
void put(std::vector<int64_t>& out, const std::vector<int>& v) {
  out.push_back(static_cast<int64_t>(v.size()));
  out.insert(out.end(), v.begin(), v.end());
}
void put(std::vector<int64_t>& out, const std::vector<std::vector<int>>& vv) {
  out.push_back(static_cast<int64_t>(vv.size()));
  for (const auto& v : vv) put(out, v);
}
struct Reader {
  const std::vector<int64_t>& in;
  size_t at = 0;
  int64_t next() {
    if (at >= in.size()) throw Error("combining: a serialized schedule ends early");
    return in[at++];
  }
  size_t count() {
    const int64_t n = next();
    if (n < 0 || static_cast<uint64_t>(n) > in.size() - at)
      throw Error("combining: a serialized schedule has a bad length " + std::to_string(n));
    return static_cast<size_t>(n);
  }
  void get(std::vector<int>& v) {
    v.resize(count());
    for (int& x : v) x = static_cast<int>(next());
  }
  void get(std::vector<std::vector<int>>& vv) {
    vv.resize(count());
    for (auto& v : vv) get(v);
  }
};
}  // namespace

std::vector<int64_t> CombiningSchedule::serialize() const {
  std::vector<int64_t> out{groups_led, group_members, rounds};
  for (const auto* v : {&stage1_send, &stage1_recv, &dest, &from}) put(out, *v);
  for (const auto* vv : {&stage1_send_dests, &stage1_recv_dests, &dest_origins, &from_origins}) put(out, *vv);
  return out;
}

CombiningSchedule CombiningSchedule::deserialize(const std::vector<int64_t>& in) {
  CombiningSchedule s;
  Reader r{in};
  s.groups_led = static_cast<int>(r.next());
  s.group_members = static_cast<int>(r.next());
  s.rounds = static_cast<int>(r.next());
  for (auto* v : {&s.stage1_send, &s.stage1_recv, &s.dest, &s.from}) r.get(*v);
  for (auto* vv : {&s.stage1_send_dests, &s.stage1_recv_dests, &s.dest_origins, &s.from_origins}) r.get(*vv);
  if (r.at != in.size()) throw Error("combining: a serialized schedule has trailing values");
  return s;
}

}  // namespace sparsecomm
