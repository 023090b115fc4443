#pragma once
// Per-rank counters and phase timers. Every exchange records what it sent and received,
// split by locality class (intra-region / inter-region) and by step, so that benchmarks
// can print the deterministic figures (messages, bytes, steps) next to the times.
//
// Two kinds of timers: Stats holds named ones (set-up: "setup.backend", "auto.*",
// "sdde.*"), written a few times per plan, so a string map costs nothing there; the
// timers of every execution (pack, start, wait, unpack) are ExecTimers, one fixed slot per
// ExecPhase, so an exchange adds to an array instead of looking a string up in a map.
#include <mpi.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sparsecomm {

struct MessageCounts {
  int64_t msgs = 0;
  int64_t bytes = 0;
  void add(int64_t nbytes) { ++msgs, bytes += nbytes; }
  MessageCounts& operator+=(const MessageCounts& o) {
    msgs += o.msgs, bytes += o.bytes;
    return *this;
  }
};

/// Messages sent / received by one rank, split intra- / inter-region.
struct CommCounters {
  MessageCounts sent_intra, sent_inter, recv_intra, recv_inter;
  CommCounters& operator+=(const CommCounters& o);
  MessageCounts sent() const {
    MessageCounts m = sent_intra;
    return m += sent_inter;
  }
};

class Stats {
 public:
  /// Records a message of `bytes` sent in `step`; `intra` = same region as the peer.
  void record_send(const std::string& step, bool intra, int64_t bytes);
  void record_recv(const std::string& step, bool intra, int64_t bytes);
  /// record_send (send) or record_recv.
  void record(const std::string& step, bool send, bool intra, int64_t bytes) {
    send ? record_send(step, intra, bytes) : record_recv(step, intra, bytes);
  }
  /// A transfer of one execution: recorded here, and in `window` too when it moves
  /// through a shared-memory window (a plan's iteration and window counts, and the plan
  /// statistics' virtual ones).
  void record_transfer(Stats& window, const std::string& step, bool send, bool intra, int64_t bytes,
                       bool through_window) {
    record(step, send, intra, bytes);
    if (through_window) window.record(step, send, intra, bytes);
  }
  /// Adds `seconds` to the timer of `phase` (e.g. "setup.backend", "sdde.nbx").
  void add_time(const std::string& phase, double seconds) { timers_[phase] += seconds; }
  void merge(const Stats& o);
  void clear();

  const CommCounters& total() const { return total_; }
  const std::map<std::string, CommCounters>& steps() const { return steps_; }
  const std::map<std::string, double>& timers() const { return timers_; }
  double time(const std::string& phase) const;

 private:
  CommCounters total_;
  std::map<std::string, CommCounters> steps_;
  std::map<std::string, double> timers_;
};

/// The phases of one execution that a plan times (PlanBase::exec_timers()): its own four,
/// and the two of the computation DistSpmv overlaps with it, which it times on its plan.
enum class ExecPhase : uint8_t { pack, start, wait, unpack, local, ghost };
inline constexpr size_t kExecPhases = 6;
/// The name a phase is reported under ("pack", "start", "wait", "unpack", "local", "ghost").
const char* exec_phase_name(ExecPhase p);

/// Accumulated seconds per ExecPhase, in an array indexed by the phase.
class ExecTimers {
 public:
  void add_time(ExecPhase p, double seconds) {
    Slot& s = slots_[static_cast<size_t>(p)];
    s.seconds += seconds, ++s.calls;
  }
  double time(ExecPhase p) const { return slots_[static_cast<size_t>(p)].seconds; }
  /// How many times `p` was timed.
  int64_t calls(ExecPhase p) const { return slots_[static_cast<size_t>(p)].calls; }
  void clear() { slots_ = {}; }
  /// The timers as named ones, the phases timed at least once under exec_phase_name()
  /// (what PlanBase::exec_stats() reports).
  Stats stats() const;

 private:
  struct Slot {
    double seconds = 0;
    int64_t calls = 0;
  };
  std::array<Slot, kExecPhases> slots_{};
};

/// Times a scope with MPI_Wtime (simulated time under SMPI, wall time otherwise) into
/// `timers->add_time(key, seconds)`; nothing when `timers` is null.
template <class Timers, class Key>
class ScopedTimerOf {
 public:
  ScopedTimerOf(Timers* timers, Key key) : timers_(timers), key_(std::move(key)), t0_(MPI_Wtime()) {}
  ~ScopedTimerOf() {
    if (timers_) timers_->add_time(key_, MPI_Wtime() - t0_);
  }
  ScopedTimerOf(const ScopedTimerOf&) = delete;
  ScopedTimerOf& operator=(const ScopedTimerOf&) = delete;

 private:
  Timers* timers_;
  Key key_;
  double t0_;
};
/// A named timer of a Stats (set-up phases).
using ScopedTimer = ScopedTimerOf<Stats, std::string>;
/// One ExecPhase of a plan's execution timers.
using ScopedPhase = ScopedTimerOf<ExecTimers, ExecPhase>;

/// Max, sum and min of one per-rank figure over the communicator.
struct Reduced {
  double max = 0, sum = 0, min = 0;
};
/// Collective: reduces each value in `local` (same length and order on every rank).
std::vector<Reduced> reduce_all(MPI_Comm comm, const std::vector<double>& local);

}  // namespace sparsecomm
