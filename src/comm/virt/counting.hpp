#pragma once
// What the backends' counts hooks share (comm/virt/plan_stats.hpp): recording a transfer of
// a virtual execution as the real plans' count_transfer() does. Each backend's counts live
// in its own file, beside the plan they describe; this header is all they need of virt/.
#include <vector>

#include "sparsecomm/comm/combining.hpp"
#include "sparsecomm/comm/virt/plan_stats.hpp"

namespace sparsecomm::virt {

// Records the transfers of a backend's execution as its plans' count_transfer() does:
// one between ranks of a node also in their window counts, where the backend moves such
// transfers through its window (`opt`'s window option) and the pattern has node labels.
struct Recorder {
  std::vector<RankCounts>& out;
  const std::vector<int>& region;
  const std::vector<int>* node;  // null: no windows
  Recorder(std::vector<RankCounts>& o, const std::vector<int>& r, const HaloPattern& pat, bool windows)
      : out(o), region(r), node(windows && !pat.node.empty() ? &pat.node : nullptr) {}
  /// Rank a's side of a transfer with `peer` (send: a sends).
  void side(const char* step, int a, bool send, int peer, int64_t bytes) const {
    out[a].counts.record_transfer(out[a].window, step, send, region[a] == region[peer], bytes,
                                  node && (*node)[a] == (*node)[peer]);
  }
  /// Both sides of a transfer from a to b.
  void operator()(const char* step, int a, int b, int64_t bytes) const {
    side(step, a, true, b, bytes);
    side(step, b, false, a, bytes);
  }
};

// The counts of a direct schedule, one transfer per pattern segment in step "direct" (p2p,
// neighbor; shm with `windows`, its transfers between ranks of a node in their window).
inline std::vector<RankCounts> direct_counts(const HaloPattern& pat, const std::vector<int>& region,
                                             const PlanOptions& opt, bool windows) {
  const int64_t eb = static_cast<int64_t>(opt.width) * opt.value_bytes;
  std::vector<RankCounts> out(static_cast<size_t>(pat.p));
  const Recorder rec(out, region, pat, windows);
  for (int a = 0; a < pat.p; ++a)
    for (const auto& seg : pat.send[a]) rec("direct", a, seg.dest, seg.size * eb);
  return out;
}

/// A rank's stages and combining groups on its schedule `s`, as the combined plans report them.
inline void record_schedule(RankCounts& c, const CombiningSchedule& s) {
  c.stages = s.stages();
  c.groups_led = s.groups_led;
  c.group_members = s.group_members;
}

}  // namespace sparsecomm::virt
