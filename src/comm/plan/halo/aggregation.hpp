#pragma once
// Shared by the aggregated backends (plan/halo/aggregated.cpp, aggregated_2step.cpp) and the
// plan statistics of virtual ranks (comm/virt/plan_stats.cpp), which must choose the same
// leaders and receivers.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sparsecomm/comm/messages.hpp"
#include "sparsecomm/comm/plan/backend_options.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "comm/plan/step.hpp"

namespace sparsecomm::detail {

/// (origin rank, global id): the name of one value in an aggregation step.
using Key = std::pair<int, int64_t>;
struct KeyHash {
  size_t operator()(const Key& k) const { return std::hash<int64_t>{}(k.second * 1000003 + k.first); }
};
/// Where each value sits in a plan's buffers.
using KeyMap = std::unordered_map<Key, const char*, KeyHash>;

/// What every set-up step of an aggregation plan reads: my pattern's two sides, my rank,
/// my region and the region's communicator.
struct AggregationSetup {
  AggregationSetup(const Pattern& p, const Locality& l)
      : loc(l), s(p.send()), r(p.recv()), me(l.rank()), my_region(l.region()), local(l.local_comm()),
        nlocal(l.local_size()) {}
  const Locality& loc;
  const PatternSide& s;  // what I send
  const PatternSide& r;  // what I receive
  int me, my_region;
  MPI_Comm local;
  int nlocal;
};

/// A receiver's copies of its own share: (destination, source) of one element each.
using SelfCopies = std::vector<std::pair<char*, const char*>>;
/// The phases that end both aggregations (the final step of Bienz et al.), after `first`:
/// once `inter` is in, a receiver's forwards leave (`final_step`) and its own share is
/// copied (`self`, elements of `eb` bytes); then the final and local transfers arrive.
inline std::vector<Schedule::Phase> then_forward(std::vector<Schedule::Phase> first, Step& inter, Step& final_step,
                                                 Step& local, const SelfCopies& self, int64_t eb) {
  first.push_back({{&inter}, [&final_step, &self, eb] {
                     final_step.send();
                     for (const auto& [dst, src] : self) std::memcpy(dst, src, static_cast<size_t>(eb));
                   }});
  first.push_back({{&final_step, &local}, {}});
  return first;
}

/// Hooks of an aggregation backend: its counts, the window option, its setup rank; auto
/// gives its counts the node labels (BackendHooks::node_window).
inline BackendHooks aggregation_hooks(decltype(BackendHooks::counts) counts, int setup_rank) {
  BackendHooks h{std::move(counts), {window_option()}, setup_rank};
  h.node_window = true;
  h.counts_by_region = true;  // leaders and receivers follow from the region's own volumes
  return h;
}

/// Option `leaders` of the 3-step aggregations: how many ranks of a region send and receive
/// its inter-region messages. 0 (the default) spreads the partner regions over every rank
/// of the region by volume (lpt_assign), as Bienz et al. do; N > 0 over at most N of them
/// (local indices 0..N-1). Fewer leaders put fewer processes in each exchange's chain of
/// dependent steps (every rank's values wait for their leader, the leader's message for its
/// receiver, the destinations for the receiver): where ranks share cores that chain, not
/// the bytes, is what a small exchange waits for; one leader carries all of a region's
/// bytes through one process, which large exchanges pay for (experiments/hypre_hook/README.md).
inline OptionSpec leaders_option() {
  return {"leaders", OptionSpec::Kind::integer, "0",
          "ranks per region that send and receive its inter-region messages (0: all, partner regions spread by "
          "volume; 1: one per region)",
          0, 1 << 20};
}
/// The number of a region's ranks (of `size`) that lead under option `leaders`.
inline int leader_slots(const BackendOptions& o, int size) {
  const int64_t n = o.get_int("leaders", 0);
  return n <= 0 || n > size ? size : static_cast<int>(n);
}

/// One side of my pattern split by where its ranks live: each non-empty segment whose rank
/// is in my own region goes to `same_region(i)` (the backends move those directly, in one
/// step); the others come back grouped by region, segment indices ascending. Empty
/// segments are skipped on both sides: a consistent pattern has them on both, so a
/// transfer expected for one would wait for a message nobody sends.
template <class SameRegion>
std::map<int, std::vector<int>> by_remote_region(const PatternSide& side, const Locality& loc, SameRegion same_region) {
  std::map<int, std::vector<int>> out;
  for (int i = 0; i < side.num_neighbors(); ++i) {
    if (side.count(i) == 0) continue;
    const int region = loc.region_of(side.ranks[i]);
    if (region == loc.region()) same_region(i);
    else out[region].push_back(i);
  }
  return out;
}

/// Longest-processing-time assignment (Graham 1969) of partner regions to the `slots`
/// ranks of a region: regions by decreasing volume (ties: lower region first), each to
/// the least-loaded slot so far (ties: lowest slot). Returns region -> slot.
inline std::map<int, int> lpt_assign(const std::map<int, int64_t>& volume, int slots) {
  std::vector<std::pair<int64_t, int>> order;
  for (const auto& [region, vol] : volume) order.emplace_back(-vol, region);
  std::sort(order.begin(), order.end());
  std::vector<int64_t> load(static_cast<size_t>(slots), 0);
  std::map<int, int> out;
  for (const auto& [negvol, region] : order) {
    const int slot = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    load[static_cast<size_t>(slot)] += -negvol;
    out[region] = slot;
  }
  return out;
}

/// Dense alltoallv of int64 records inside a region (the region communicator `local`;
/// O(region size) setup cost): out[i] goes to local rank i, the result holds what each sent.
std::vector<std::vector<int64_t>> region_alltoallv(MPI_Comm local, const std::vector<std::vector<int64_t>>& out);
/// Allgatherv of int64 records inside a region: element i of the result is what local rank
/// i contributed.
std::vector<std::vector<int64_t>> region_allgatherv(MPI_Comm local, const std::vector<int64_t>& mine);

}  // namespace sparsecomm::detail
