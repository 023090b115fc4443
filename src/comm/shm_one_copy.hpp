#pragma once
// The one-copy path of the shm halo backend (plan/halo/shm.cpp): for a large on-node segment
// whose values lie in a few runs of the owner's array (and land in a few runs of the
// reader's), the reader copies them straight out of the owner's own array into its ghosts
// with Linux cross-memory attach (process_vm_readv(2): one copy through the kernel, the
// single-copy mechanism of Open MPI's vader/CMA and MPICH's Nemesis LMT), instead of the
// owner packing them into the shared window and the reader copying them out and unpacking.
//
// The owner publishes its array's address with the exchange's epoch in the window
// (ShmChannel::publish_source) and keeps the array unchanged until each such reader has
// marked the epoch done (start(owned, ghost)'s contract: owned unchanged until wait()), or
// until it took the segment back into the window because the reader had not claimed it
// (ShmChannel::take_back).
// Whether the kernel lets this process read its node neighbors (ptrace access mode; seccomp
// in containers; not Linux) is probed at set-up and agreed over the node: where any rank
// cannot, no rank uses the path.
#ifndef SPARSECOMM_SMPI
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sparsecomm {
class Plan;
namespace detail {

/// A run of consecutive units: positions [at, at + len) of a segment are array indices
/// [idx, idx + len).
struct Run {
  int64_t at = 0, idx = 0, len = 0;
};
/// The runs of `idx[0..n)`, at most `limit` + 1 of them (more: the list stops there).
std::vector<Run> runs_of(const int32_t* idx, int64_t n, size_t limit);

/// The one-copy set-up of one plan: which on-node segments take the path, on both ends.
class OneCopy {
 public:
  /// At most this many runs per side of a segment (one process_vm_readv each side's list).
  static constexpr size_t kMaxRuns = 64;
  struct Side {
    int peer;               ///< rank of the plan's communicator
    int64_t bytes;          ///< the segment's size
    std::vector<Run> runs;  ///< my side's runs (runs_of(..., kMaxRuns))
  };
  /// Collective over `comm` (one message each way per on-node pair) and over `node` (the
  /// agreement). `wanted`: the option (the same on every rank); a segment takes the path
  /// when both ends have at most kMaxRuns runs and it has at least `min_bytes` bytes.
  void setup(MPI_Comm comm, MPI_Comm node, bool wanted, int64_t min_bytes, const std::vector<Side>& readers,
             const std::vector<Side>& writers);
  /// Whether my segment to reader k / from writer k (setup()'s order) takes the path.
  bool to_reader(size_t k) const { return !to_.empty() && to_[k]; }
  bool from_writer(size_t k) const { return !from_.empty() && from_[k]; }
  bool any() const { return any_; }
  /// How many of my segments (as reader and writer) take the path.
  int64_t segments() const;
  /// Reads writer k's segment out of its array at `source` (its address there) into
  /// `local`: at each of `local_runs` (units of `unit` bytes; null: contiguous from
  /// `local`). False where the kernel refuses or reads less, though the set-up's probe
  /// passed (the writer's memory unmapped, a changed ptrace policy): the caller falls back
  /// to the window (ShmExchange::give_back), so that the failure costs no values and leaves
  /// no rank behind.
  bool read(size_t k, const void* source, char* local, const std::vector<Run>* local_runs, int64_t unit) const;

 private:
  std::vector<char> to_, from_;
  std::vector<int> pid_;               // writer k's process id
  std::vector<std::vector<Run>> src_;  // writer k's runs
  bool any_ = false;
};

/// The number of on-node segments (sent and received) of a shm halo plan that take the
/// one-copy path; -1 for a plan of another backend (tests).
int64_t shm_one_copy_segments(const Plan& plan);
/// Tests: the next `n` one-copy reads of this process fail as a refused read would (0: none);
/// returns how many injected failures were left unused.
int fail_one_copy_reads(int n);

}  // namespace detail
}  // namespace sparsecomm
#endif  // SPARSECOMM_SMPI
