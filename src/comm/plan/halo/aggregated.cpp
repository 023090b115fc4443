// aggregated / aggregated_dedup: 3-step locality-aware aggregation of a halo exchange
// (Bienz, Gropp and Olson, "Node aware sparse matrix-vector multiplication", JPDC 2019;
// Collom, Li and Bienz, "Optimizing irregular communication with neighborhood collectives
// and locality-aware parallelism", EuroMPI'23).
//
// For a rank in region R:
//   local   : messages to ranks of R go directly (one step, in parallel with the rest);
//   initial : everything for a remote region S goes to the leader L(S) of R, a rank of R
//             chosen by balancing the regions R sends to over R's ranks by volume (LPT);
//   inter   : L(S) sends one message to the receiver V_S(R), chosen the same way in S;
//   final   : V_S(R) forwards to each destination rank of S what it needs.
// Exactly one inter-region message per (region, region) pair.
//
// A value is identified by (origin rank, global id), which makes every layout computable
// on both sides of a message from the pattern alone. (In the forward halo exchange the
// origin is the owner; in the reverse one, several ranks send partial sums for one id.)
// With duplicate removal a value that several ranks of S need crosses R -> S once
// (and reaches its leader once).
//
// Each step is a detail::Step (comm/plan/step.hpp): its transfers between ranks of one node
// (the local, initial and final steps when regions are nodes; every step when regions are
// emulated inside a node) go through the plan's shared-memory window by default, the
// others as messages; option window=false makes them all messages.
//
// Setup talks only to peers it needs: per-region allgathers and alltoallvs on the region
// communicator, and one SDDE (strategy from PlanOptions::sdde) in which leaders and
// receivers announce themselves to the first rank of the partner region.
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

constexpr int kTagLocal = 21, kTagInitial = 22, kTagInter = 23, kTagFinal = 24;

using detail::Key;
using detail::KeyMap;

void sort_unique(std::vector<Key>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// Step 1: my remote segments by region (ascending segment indices).
struct Regions {
  std::map<int, std::vector<int>> send_to;    // S -> my send segment indices
  std::map<int, std::vector<int>> recv_from;  // R' -> my recv segment indices
};
// Step 2: the ranks of my region that handle each partner region.
struct Roles {
  std::map<int, int> leader_of, receiver_of;  // region -> global rank
};
// Step 3: the partner regions' ranks that handle my region.
struct Partners {
  std::map<int, int> leader_in, receiver_out;  // R' -> L_{R'}(mine); S -> V_S(mine)
};
// Step 4: what I lead and receive for. std::map keeps every order ascending.
using Segs = std::map<int, std::vector<int64_t>>;  // peer rank -> gids
struct Meta {
  std::map<int, std::map<int, Segs>> lead;   // S -> src rank -> d -> gids
  std::map<int, std::map<int, Segs>> recvr;  // R' -> dest rank -> r -> gids
};

class AggregatedPlan final : public detail::ScheduledPlan {
 public:
  AggregatedPlan(const Pattern& p, const Locality& loc, MPI_Comm comm, const PlanOptions& opt, bool dedup)
      : ScheduledPlan(dedup ? "aggregated_dedup" : "aggregated", p, loc, comm, opt), dedup_(dedup) {
    setup(p, loc, comm, opt);
  }
  ~AggregatedPlan() override { finish_if_active(); }

 protected:
  // Every receive is posted at the start; each step's sends as soon as their data is in.
  detail::Schedule& schedule() override { return schedule_; }

 private:
  void setup(const Pattern& p, const Locality& loc, MPI_Comm parent, const PlanOptions& opt);
  // The set-up steps, in order.
  Regions split(const detail::AggregationSetup& a);
  Roles choose_roles(const detail::AggregationSetup& a, const Regions& regions, const PlanOptions& opt) const;
  Partners rendezvous(const detail::AggregationSetup& a, const Roles& roles, const PlanOptions& opt, Stats& st);
  Meta exchange_meta(const detail::AggregationSetup& a, const Regions& regions, const Roles& roles) const;
  void add_leader_steps(const detail::AggregationSetup& a, const Regions& regions, const Roles& roles,
                        const Partners& partners, const Meta& meta);
  void add_receiver_steps(const detail::AggregationSetup& a, const Regions& regions, const Roles& roles,
                          const Partners& partners, const Meta& meta);
  // The values of a message, in its order: the content of the inter-region step and of a
  // source's initial part (dedup: unique).
  std::vector<Key> my_keys(const detail::AggregationSetup& a, const std::vector<int>& segs) const;
  std::vector<Key> contribution(int src, const Segs& by_dest) const;
  std::vector<Key> inter_from_leader(const std::map<int, Segs>& by_src) const;
  std::vector<Key> inter_from_receiver(const std::map<int, Segs>& by_dest) const;

  bool dedup_;
  detail::StepWindow window_;  // the steps' transfers between ranks of one node
  detail::Step local_{elem_bytes(), kTagLocal}, initial_{elem_bytes(), kTagInitial}, inter_{elem_bytes(), kTagInter},
      final_{elem_bytes(), kTagFinal};
  std::vector<char> r1_, r2_;  // where leaders / receivers keep the initial / inter values
  detail::SelfCopies self_final_;
  // Start: local and initial transfers (from the send buffer). Leaders, once the initial
  // transfers are in: the inter-region ones. Receivers, once those are in: the forwards,
  // and their own share copied. Then the final and local transfers arrive.
  detail::Schedule schedule_{{&local_, &initial_, &inter_, &final_},
                             detail::then_forward({{{}, [this] { local_.send(), initial_.send(); }},
                                                   {{&initial_}, [this] { inter_.send(); }}},
                                                  inter_, final_, local_, self_final_, elem_bytes())};
};

void AggregatedPlan::setup(const Pattern& p, const Locality& loc, MPI_Comm parent, const PlanOptions& opt) {
  Stats& st = setup_stats_mut();
  const double t0 = MPI_Wtime();
  const detail::AggregationSetup a(p, loc);
  const Regions regions = split(a);
  const Roles roles = choose_roles(a, regions, opt);
  const Partners partners = rendezvous(a, roles, opt, st);
  const Meta meta = exchange_meta(a, regions, roles);
  add_leader_steps(a, regions, roles, partners, meta);
  add_receiver_steps(a, regions, roles, partners, meta);
  window_.connect(comm(), parent, opt.backend, opt.persistent_requests,
                  {{&local_, "local"}, {&initial_, "initial"}, {&inter_, "inter"}, {&final_, "final"}}, counter());
  set_stages((regions.send_to.empty() && regions.recv_from.empty() && roles.leader_of.empty()) ? 1 : 3);
  st.add_time("setup.aggregation", MPI_Wtime() - t0);
}

// --- 1. Split my neighbors into local ones and remote regions -------------------------
Regions AggregatedPlan::split(const detail::AggregationSetup& a) {
  const auto& s = a.s;
  const auto& r = a.r;
  const int64_t eb = elem_bytes();
  Regions out;
  out.send_to = detail::by_remote_region(s, a.loc, [&](int i) {
    local_.add_send(s.ranks[i], send_buf() + s.offsets[i] * eb, s.count(i));
  });
  out.recv_from = detail::by_remote_region(r, a.loc, [&](int i) {
    local_.add_recv(r.ranks[i], recv_buf() + r.offsets[i] * eb, r.count(i));
  });
  return out;
}

// Gids I send to region S (segments `segs`): the inter-region content contributed by me
// (dedup: unique).
std::vector<Key> AggregatedPlan::my_keys(const detail::AggregationSetup& a, const std::vector<int>& segs) const {
  std::vector<Key> g;
  for (int i : segs)
    for (int64_t k = a.s.offsets[i]; k < a.s.offsets[i + 1]; ++k) g.emplace_back(a.me, a.s.global_ids[k]);
  if (dedup_) sort_unique(g);
  return g;
}

// --- 2. Leaders (send side) and receivers (receive side) by volume, per region ----------
Roles AggregatedPlan::choose_roles(const detail::AggregationSetup& a, const Regions& regions,
                                   const PlanOptions& opt) const {
  std::vector<int64_t> mine;  // [kind(0 send,1 recv), region, volume] triples
  for (auto& [S, segs] : regions.send_to) mine.insert(mine.end(), {0, S, static_cast<int64_t>(my_keys(a, segs).size())});
  for (auto& [Rp, segs] : regions.recv_from) {
    int64_t v = 0;
    for (int i : segs) v += a.r.count(i);
    mine.insert(mine.end(), {1, Rp, v});
  }
  std::map<int, int64_t> send_vol, recv_vol;
  for (const auto& all : detail::region_allgatherv(a.local, mine))
    for (size_t k = 0; k < all.size(); k += 3) (all[k] == 0 ? send_vol : recv_vol)[static_cast<int>(all[k + 1])] += all[k + 2];
  Roles roles;
  const int slots = detail::leader_slots(opt.backend, a.nlocal);
  for (auto& [S, slot] : detail::lpt_assign(send_vol, slots)) roles.leader_of[S] = a.loc.member(a.my_region, slot);
  for (auto& [Rp, slot] : detail::lpt_assign(recv_vol, slots)) roles.receiver_of[Rp] = a.loc.member(a.my_region, slot);
  return roles;
}

// --- 3. Rendezvous: leaders and receivers announce themselves to the partner region ----
// Records (kind, my region, my rank) go to the first rank of the partner region, which
// broadcasts them in its region. kind 0: "I lead your inbound traffic from my region",
// kind 1: "I receive my region's inbound traffic from your region".
Partners AggregatedPlan::rendezvous(const detail::AggregationSetup& a, const Roles& roles, const PlanOptions& opt,
                                    Stats& st) {
  const int me = a.me;
  const Locality& loc = a.loc;
  std::map<int, std::vector<int64_t>> ann;
  for (auto& [S, L] : roles.leader_of)
    if (L == me) ann[loc.member(S, 0)].insert(ann[loc.member(S, 0)].end(), {0, a.my_region, me});
  for (auto& [Rp, V] : roles.receiver_of)
    if (V == me) ann[loc.member(Rp, 0)].insert(ann[loc.member(Rp, 0)].end(), {1, a.my_region, me});
  SparseMessages<int64_t> out;
  for (auto& [dest, rec] : ann) out.add(dest, rec);
  Sdde sdde(comm(), loc);
  auto got = sdde.exchange(out, opt.sdde, &st);
  std::vector<int64_t> table;
  if (loc.local_rank() == 0) table = got.data;
  int64_t tn = static_cast<int64_t>(table.size());
  SPC_MPI(MPI_Bcast(&tn, 1, MPI_INT64_T, 0, a.local));
  table.resize(static_cast<size_t>(tn));
  if (tn > 0) SPC_MPI(MPI_Bcast(table.data(), static_cast<int>(tn), MPI_INT64_T, 0, a.local));
  Partners partners;
  for (size_t k = 0; k < table.size(); k += 3)
    (table[k] == 0 ? partners.leader_in : partners.receiver_out)[static_cast<int>(table[k + 1])] = static_cast<int>(table[k + 2]);
  return partners;
}

// --- 4. Metadata to leaders and receivers (region alltoallv) ---------------------------
// To leader_of[S]: [S, d, count, gids...] per send segment to S.
// To receiver_of[R']: [R', r, count, gids...] per recv segment from R'.
Meta AggregatedPlan::exchange_meta(const detail::AggregationSetup& a, const Regions& regions, const Roles& roles) const {
  const auto& s = a.s;
  const auto& r = a.r;
  const auto n = static_cast<size_t>(a.nlocal);
  std::vector<std::vector<int64_t>> to_leaders(n), to_receivers(n);
  for (auto& [S, segs] : regions.send_to)
    for (int i : segs) {
      auto& v = to_leaders[a.loc.local_index_of(roles.leader_of.at(S))];
      v.insert(v.end(), {S, s.ranks[i], s.count(i)});
      v.insert(v.end(), s.global_ids.begin() + s.offsets[i], s.global_ids.begin() + s.offsets[i + 1]);
    }
  for (auto& [Rp, segs] : regions.recv_from)
    for (int i : segs) {
      auto& v = to_receivers[a.loc.local_index_of(roles.receiver_of.at(Rp))];
      v.insert(v.end(), {Rp, r.ranks[i], r.count(i)});
      v.insert(v.end(), r.global_ids.begin() + r.offsets[i], r.global_ids.begin() + r.offsets[i + 1]);
    }
  auto lead_meta = detail::region_alltoallv(a.local, to_leaders);
  auto recv_meta = detail::region_alltoallv(a.local, to_receivers);

  // Parsed: for each region S I lead: src local rank -> (d -> gids); for each R' I receive
  // for: dest local rank -> (r -> gids).
  auto parse = [&](const std::vector<std::vector<int64_t>>& meta, std::map<int, std::map<int, Segs>>& into) {
    for (int li = 0; li < a.nlocal; ++li) {
      const auto& v = meta[li];
      for (size_t k = 0; k < v.size();) {
        const int reg = static_cast<int>(v[k]), peer = static_cast<int>(v[k + 1]);
        const int64_t cnt = v[k + 2];
        into[reg][a.loc.member(a.my_region, li)][peer].assign(v.begin() + static_cast<std::ptrdiff_t>(k + 3),
                                                              v.begin() + static_cast<std::ptrdiff_t>(k + 3 + cnt));
        k += 3 + static_cast<size_t>(cnt);
      }
    }
  };
  Meta meta;
  parse(lead_meta, meta.lead);
  parse(recv_meta, meta.recvr);
  return meta;
}

// Content of what `src` contributes to S (initial message part), from its segments.
std::vector<Key> AggregatedPlan::contribution(int src, const Segs& by_dest) const {
  std::vector<Key> g;
  for (const auto& [d, gids] : by_dest)
    for (int64_t gid : gids) g.emplace_back(src, gid);
  if (dedup_) sort_unique(g);
  return g;
}
// Inter-region content R -> S seen from the leader (segments by d, then by src).
std::vector<Key> AggregatedPlan::inter_from_leader(const std::map<int, Segs>& by_src) const {
  std::vector<Key> g;
  if (dedup_) {
    for (const auto& [src, segs] : by_src) {
      auto c = contribution(src, segs);
      g.insert(g.end(), c.begin(), c.end());
    }
    sort_unique(g);
    return g;
  }
  std::map<int, std::map<int, const std::vector<int64_t>*>> by_d;
  for (const auto& [src, segs] : by_src)
    for (const auto& [d, gids] : segs) by_d[d][src] = &gids;
  for (const auto& [d, srcs] : by_d)
    for (const auto& [src, gids] : srcs)
      for (int64_t gid : *gids) g.emplace_back(src, gid);
  return g;
}
// The same content seen from the receiver (recv segments by d, then by r).
std::vector<Key> AggregatedPlan::inter_from_receiver(const std::map<int, Segs>& by_dest) const {
  std::vector<Key> g;
  for (const auto& [d, segs] : by_dest)
    for (const auto& [src, gids] : segs)
      for (int64_t gid : gids) g.emplace_back(src, gid);
  if (dedup_) sort_unique(g);
  return g;
}

// --- 5. Leaders and senders: initial receives into r1_ (one message per source rank,
// regions S ascending), inter sends gathered from send_buf and r1_, and my initial
// messages to my leaders. r1_ is sized first: pointers into it must not move afterwards.
void AggregatedPlan::add_leader_steps(const detail::AggregationSetup& a, const Regions& regions, const Roles& roles,
                                      const Partners& partners, const Meta& meta) {
  const int me = a.me;
  const int64_t eb = elem_bytes();
  std::map<int, std::vector<std::pair<int, std::vector<Key>>>> initial_in;  // src -> [(S, keys)]
  for (auto& [S, by_src] : meta.lead)
    for (auto& [src, segs] : by_src)
      if (src != me) initial_in[src].emplace_back(S, contribution(src, segs));
  int64_t n1 = 0;
  for (auto& [src, parts] : initial_in)
    for (auto& pr : parts) n1 += static_cast<int64_t>(pr.second.size());
  r1_.assign(static_cast<size_t>(n1 * eb), 0);

  // Where each of my own owned-and-sent values sits in send_buf (any copy will do).
  KeyMap in_send_buf;
  for (int64_t k = 0; k < a.s.size(); ++k) in_send_buf.emplace(Key{me, a.s.global_ids[k]}, send_buf() + k * eb);

  KeyMap at_leader = in_send_buf;
  int64_t off = 0;
  for (auto& [src, parts] : initial_in) {
    int64_t n = 0;  // position inside this source's message (regions S ascending)
    for (auto& [S, g] : parts)
      for (const Key& key : g) at_leader.emplace(key, r1_.data() + (off + n++) * eb);
    initial_.add_recv(src, r1_.data() + off * eb, n);
    off += n;
  }
  for (auto& [S, by_src] : meta.lead) {
    std::vector<const char*> src;
    for (const Key& key : inter_from_leader(by_src)) src.push_back(at_leader.at(key));
    inter_.add_send(partners.receiver_out.at(S), src);
  }
  // Senders: one initial message per leader (other than me), regions ascending.
  std::map<int, std::vector<const char*>> initial_out;
  for (auto& [S, segs] : regions.send_to) {
    const int L = roles.leader_of.at(S);
    if (L == me) continue;
    for (const Key& key : my_keys(a, segs)) initial_out[L].push_back(in_send_buf.at(key));
  }
  for (auto& [L, src] : initial_out) initial_.add_send(L, src);
}

// --- 6. Receivers and destinations: inter receives into r2_ (one per source region R',
// sized first), final sends gathered from r2_, my own share copied, and the final
// transfers straight into recv_buf.
void AggregatedPlan::add_receiver_steps(const detail::AggregationSetup& a, const Regions& regions, const Roles& roles,
                                        const Partners& partners, const Meta& meta) {
  const int me = a.me;
  const auto& r = a.r;
  const int64_t eb = elem_bytes();
  std::map<int, std::vector<Key>> inter_in;  // R' -> keys
  for (auto& [Rp, by_dest] : meta.recvr) inter_in[Rp] = inter_from_receiver(by_dest);
  int64_t n2 = 0;
  for (auto& [Rp, g] : inter_in) n2 += static_cast<int64_t>(g.size());
  r2_.assign(static_cast<size_t>(n2 * eb), 0);

  KeyMap at_receiver;
  int64_t off = 0;
  for (auto& [Rp, g] : inter_in) {
    for (size_t k = 0; k < g.size(); ++k) at_receiver.emplace(g[k], r2_.data() + (off + static_cast<int64_t>(k)) * eb);
    inter_.add_recv(partners.leader_in.at(Rp), r2_.data() + off * eb, static_cast<int64_t>(g.size()));
    off += static_cast<int64_t>(g.size());
  }
  std::map<int, std::vector<const char*>> final_out;  // d -> sources, (R' asc, r asc)
  for (auto& [Rp, by_dest] : meta.recvr)
    for (auto& [d, segs] : by_dest)
      for (auto& [src_rank, gids] : segs)
        for (int64_t gid : gids) {
          if (d == me) continue;
          final_out[d].push_back(at_receiver.at(Key{src_rank, gid}));
        }
  for (auto& [d, src] : final_out) final_.add_send(d, src);
  // My own needs from regions I receive for: copy from r2_ into recv_buf. Final receives:
  // one per receiver V that handles some of my source regions, straight into recv_buf.
  std::map<int, std::vector<std::pair<int, int>>> final_in;  // V -> [(R', recv segment)]
  for (auto& [Rp, segs] : regions.recv_from) {
    const int V = roles.receiver_of.at(Rp);
    for (int i : segs) {
      if (V != me) {
        final_in[V].emplace_back(Rp, i);
        continue;
      }
      for (int64_t k = r.offsets[i]; k < r.offsets[i + 1]; ++k)
        self_final_.emplace_back(recv_buf() + k * eb, at_receiver.at(Key{r.ranks[i], r.global_ids[k]}));
    }
  }
  for (auto& [V, lst] : final_in) {
    std::vector<char*> dst;
    for (auto& [Rp, i] : lst)
      for (int64_t k = r.offsets[i]; k < r.offsets[i + 1]; ++k) dst.push_back(recv_buf() + k * eb);
    final_.add_recv(V, dst);
  }
}

}  // namespace

// Plan statistics (virt::halo_counts): this backend's counts, following its set-up step by
// step, checked rank by rank against real plans by tests/test_plan_stats.cpp.
namespace virt {
namespace {

// keys[a][S]: the values a sends to region S != region[a] (dedup: distinct ids).
// recv_count[d][R']: how many values d receives from ranks of R' != region[d].
// pair_count[(R, S)]: the values the ranks of R send to region S — with dedup the
// distinct (origin, id) pairs, i.e. the sum over origins of their distinct ids: the sum
// of keys[a][S] over a in R either way.
struct RegionVolumes {
  std::vector<std::map<int, int64_t>> keys, recv_count;
  std::map<std::pair<int, int>, int64_t> pair_count;
};

// The volumes between regions; the local step's transfers recorded on the way.
RegionVolumes region_volumes(const HaloPattern& pat, const std::vector<int>& region, int64_t eb, bool dedup,
                             const Recorder& rec) {
  const int p = pat.p;
  RegionVolumes out{std::vector<std::map<int, int64_t>>(static_cast<size_t>(p)),
                    std::vector<std::map<int, int64_t>>(static_cast<size_t>(p)),
                    {}};
  auto& keys = out.keys;
  auto& recv_count = out.recv_count;
  for (int a = 0; a < p; ++a) {
    std::map<int, std::vector<int64_t>> ids_to;
    for (const auto& seg : pat.send[a]) {
      const int d = seg.dest, S = region[d];
      if (S == region[a]) {
        rec("local", a, d, seg.size * eb);
        continue;
      }
      recv_count[d][region[a]] += seg.size;
      if (!dedup) {
        keys[a][S] += seg.size;
        continue;
      }
      auto& v = ids_to[S];  // (with distinct counts given, the ids are not needed)
      if (pat.distinct.empty()) v.insert(v.end(), seg.ids.begin(), seg.ids.end());
    }
    for (auto& [S, v] : ids_to) {  // dedup only
      if (!pat.distinct.empty()) {
        keys[a][S] = pat.distinct[static_cast<size_t>(a)].at(S);
        continue;
      }
      std::sort(v.begin(), v.end());
      keys[a][S] = static_cast<int64_t>(std::unique(v.begin(), v.end()) - v.begin());
    }
    for (const auto& [S, n] : keys[a]) out.pair_count[{region[a], S}] += n;
  }
  return out;
}

// Counts of the 3-step aggregation (plan/halo/aggregated.cpp), following its setup step
// by step: local segments directly; each region's leaders (send side) and receivers
// (receive side) by LPT over the region's members in rank order (the first `leaders` of
// them where that option is set); initial messages to
// leaders merged per leader; one inter-region message per (region, region) pair; final
// messages from receivers merged per destination. A value is (origin rank, id); with
// duplicate removal it crosses a region pair once.
std::vector<RankCounts> aggregated_counts(const HaloPattern& pat, const std::vector<int>& region, int64_t eb,
                                          bool dedup, const BackendOptions& options) {
  const int p = pat.p;
  std::vector<RankCounts> out(static_cast<size_t>(p));
  const Recorder rec(out, region, pat, detail::window_wanted(options));
  int nreg = 0;
  for (int x : region) nreg = std::max(nreg, x + 1);
  std::vector<std::vector<int>> members(static_cast<size_t>(nreg));
  for (int a = 0; a < p; ++a) members[region[a]].push_back(a);
  const RegionVolumes vol = region_volumes(pat, region, eb, dedup, rec);
  const auto& keys = vol.keys;
  const auto& recv_count = vol.recv_count;
  // Per region: leaders of the regions it sends to, receivers of those it receives from.
  std::vector<std::map<int, int>> leader(static_cast<size_t>(nreg)), receiver(static_cast<size_t>(nreg));
  std::vector<bool> region_sends(static_cast<size_t>(nreg), false);
  for (int R = 0; R < nreg; ++R) {
    std::map<int, int64_t> send_vol, recv_vol;
    for (int a : members[R]) {
      for (const auto& [S, n] : keys[a]) send_vol[S] += n;
      for (const auto& [Rp, n] : recv_count[a]) recv_vol[Rp] += n;
    }
    region_sends[R] = !send_vol.empty();
    const int slots = detail::leader_slots(options, static_cast<int>(members[R].size()));
    for (const auto& [S, slot] : detail::lpt_assign(send_vol, slots)) leader[R][S] = members[R][slot];
    for (const auto& [Rp, slot] : detail::lpt_assign(recv_vol, slots)) receiver[R][Rp] = members[R][slot];
  }
  // The two intra-region steps, merged per peer: rank a and the member of its region that
  // handles remote region X (role[region[a]][X]) exchange the values counted in
  // volume[a][X], a itself excepted. Initial: a sends to its leaders; final: a receives
  // from its receivers.
  auto intra_step = [&](const char* step, const std::vector<std::map<int, int64_t>>& volume,
                        const std::vector<std::map<int, int>>& role, bool a_sends) {
    for (int a = 0; a < p; ++a) {
      std::map<int, int64_t> merged;
      for (const auto& [X, n] : volume[a]) {
        const int peer = role[region[a]].at(X);
        if (peer != a) merged[peer] += n;
      }
      for (const auto& [peer, n] : merged) rec(step, a_sends ? a : peer, a_sends ? peer : a, n * eb);
    }
  };
  // Initial: each rank to each leader of its remote regions.
  intra_step("initial", keys, leader, true);
  // Inter: leader of (R -> S) to the receiver of (S <- R), one message per pair.
  for (const auto& [pair, n] : vol.pair_count) {
    const auto [R, S] = pair;
    rec("inter", leader[R].at(S), receiver[S].at(R), n * eb);
  }
  // Final: each receiver to each destination of its region, merged over the source
  // regions it receives for.
  intra_step("final", recv_count, receiver, false);
  for (int a = 0; a < p; ++a)
    out[a].stages = (keys[a].empty() && recv_count[a].empty() && !region_sends[region[a]]) ? 1 : 3;
  return out;
}

}  // namespace

std::vector<RankCounts> aggregated_halo_counts(const HaloPattern& pat, const std::vector<int>& region,
                                               const PlanOptions& opt, bool dedup) {
  return aggregated_counts(pat, region, static_cast<int64_t>(opt.width) * opt.value_bytes, dedup, opt.backend);
}

}  // namespace virt

namespace detail {
std::vector<std::vector<int64_t>> region_allgatherv(MPI_Comm local, const std::vector<int64_t>& mine) {
  const int n = comm_size(local);
  const int n_mine = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<size_t>(n)), displs(static_cast<size_t>(n) + 1, 0);
  SPC_MPI(MPI_Allgather(&n_mine, 1, MPI_INT, counts.data(), 1, MPI_INT, local));
  for (int i = 0; i < n; ++i) displs[i + 1] = displs[i] + counts[i];
  std::vector<int64_t> all(static_cast<size_t>(displs[n]));
  SPC_MPI(MPI_Allgatherv(mine.data(), n_mine, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T, local));
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out[i].assign(all.begin() + displs[i], all.begin() + displs[i + 1]);
  return out;
}

std::vector<std::vector<int64_t>> region_alltoallv(MPI_Comm local, const std::vector<std::vector<int64_t>>& out) {
  const int n = comm_size(local);
  std::vector<int64_t> flat;
  std::vector<int> counts(n);
  for (int i = 0; i < n; ++i) {
    counts[i] = static_cast<int>(out[i].size());
    flat.insert(flat.end(), out[i].begin(), out[i].end());
  }
  std::vector<int> rcounts;
  auto got = alltoallv(local, flat, counts, &rcounts);
  std::vector<std::vector<int64_t>> in(static_cast<size_t>(n));
  size_t pos = 0;
  for (int i = 0; i < n; ++i) {
    in[i].assign(got.begin() + static_cast<std::ptrdiff_t>(pos), got.begin() + static_cast<std::ptrdiff_t>(pos + rcounts[i]));
    pos += static_cast<size_t>(rcounts[i]);
  }
  return in;
}

void register_aggregated() {
  for (const bool dedup : {false, true}) {
    auto hooks = aggregation_hooks([dedup](const virt::HaloPattern& h, const std::vector<int>& r, const PlanOptions& o) {
      return virt::aggregated_halo_counts(h, r, o, dedup);
    }, dedup ? 4 : 3);
    hooks.options.push_back(leaders_option());
    register_backend(dedup ? "aggregated_dedup" : "aggregated",
                     dedup ? "aggregation with duplicate removal (a value crosses a region pair once)"
                           : "3-step locality-aware aggregation (one message per region pair)",
                     plan_factory<AggregatedPlan>(dedup),
                     std::move(hooks));
  }
}
}  // namespace detail

}  // namespace sparsecomm
