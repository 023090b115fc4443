#pragma once
// Shared by the aggregated backends (backends/aggregated.cpp, aggregated2.cpp) and the plan
// statistics of virtual ranks (plan_stats.cpp), which must choose the same leaders and
// receivers.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sparsecomm/comm/messages.hpp"

namespace sparsecomm::detail {

/// (origin rank, global id): the name of one value in an aggregation step.
using Key = std::pair<int, int64_t>;
struct KeyHash {
  size_t operator()(const Key& k) const { return std::hash<int64_t>{}(k.second * 1000003 + k.first); }
};
/// Where each value sits in a plan's buffers.
using KeyMap = std::unordered_map<Key, const char*, KeyHash>;

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

/// The sends of one aggregation step: each message's elements (`eb` bytes each) are
/// gathered at every execution from anywhere in the plan's buffers -- values that arrived
/// in the previous step or sit in the send buffer -- into the message's own buffer.
class GatheredSends {
 public:
  explicit GatheredSends(int64_t eb) : eb_(static_cast<size_t>(eb)) {}
  /// Before init(). Returns the message's size in bytes.
  int64_t add(int peer, std::vector<const char*> src) {
    msgs_.push_back(Msg{peer, std::move(src), {}});
    msgs_.back().buf.assign(msgs_.back().src.size() * eb_, 0);
    return static_cast<int64_t>(msgs_.back().buf.size());
  }
  /// The set is fixed: the buffers no longer move.
  void init(MPI_Comm comm, int tag, bool persistent) {
    for (const auto& m : msgs_) sends_.add(true, m.buf.data(), static_cast<int64_t>(m.buf.size()), m.peer, tag);
    sends_.init(comm, persistent);
  }
  /// Gathers and starts every message, one after the other.
  void start() {
    for (size_t i = 0; i < msgs_.size(); ++i) {
      char* out = msgs_[i].buf.data();
      const auto& src = msgs_[i].src;
      for (size_t k = 0; k < src.size(); ++k) std::memcpy(out + k * eb_, src[k], eb_);
      sends_.start(i);
    }
  }
  void wait() { sends_.wait(); }
  bool empty() const { return msgs_.empty(); }

 private:
  struct Msg {
    int peer;
    std::vector<const char*> src;
    std::vector<char> buf;
  };
  std::vector<Msg> msgs_;
  Messages sends_;
  size_t eb_;
};

}  // namespace sparsecomm::detail
