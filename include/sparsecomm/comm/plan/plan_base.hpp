#pragma once
// What every plan is, whatever the shape of its exchange (halo: Plan, plan.hpp; allgather:
// GatherPlan, gather_plan.hpp): a named schedule on its own communicator, built once, that
// its backend executes through three byte-level verbs (do_start, do_wait, do_test), one
// exchange active at a time, and its accounting — setup statistics, the deterministic
// counts of one exchange by step and locality class (and the part that moves through the
// node's shared-memory window), its stages, and execution timers. Each shape adds its
// public verbs, start / wait / test / exchange over bytes with typed forms on top (pack
// and unpack, or block and receive copies), and what its backends read.
// Following the split of PETSc's PetscSF (one object whatever the implementation) and
// Tpetra's Distributor (a plan built once, executed many times).
#include <mpi.h>

#include <memory>
#include <string>

#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "sparsecomm/core/stats.hpp"

namespace sparsecomm {

class PlanBase {
 public:
  virtual ~PlanBase() = default;
  PlanBase(const PlanBase&) = delete;
  PlanBase& operator=(const PlanBase&) = delete;

  /// The backend's registered name.
  const std::string& name() const { return name_; }
  const Locality& locality() const { return loc_; }
  /// An exchange has started and not yet completed.
  bool active() const { return active_; }
  /// Setup: timers ("setup.backend", and sub-steps) and the messages the setup itself sent.
  const Stats& setup_stats() const { return setup_; }
  /// What one execution sends and receives, per step and locality class (deterministic).
  const Stats& iteration_counts() const { return per_iter_; }
  /// The part of iteration_counts() that moves through a shared-memory window instead of
  /// MPI messages (shm backends and the multi-step backends' node lanes; empty for the
  /// others), recorded like those (per edge, step and locality class): the model prices it
  /// as the reader's copy, not as messages. (The writer's copy into the window is the pack
  /// every backend does.)
  const Stats& window_counts() const { return window_; }
  /// Accumulated execution timers (pack, start, wait, unpack; and local, ghost where
  /// DistSpmv runs on the plan), one slot per ExecPhase: an exchange writes no string.
  ExecTimers& exec_timers() { return exec_; }
  const ExecTimers& exec_timers() const { return exec_; }
  /// The execution timers by name, as a Stats (a copy: exec_timers() to add or clear).
  Stats exec_stats() const { return exec_.stats(); }
  /// Number of communication steps that follow one another in one execution.
  int stages() const { return stages_; }

 protected:
  /// `kind` names the shape in messages ("Plan", "GatherPlan"). Collective: the plan runs
  /// on a duplicate of `comm` of its own.
  PlanBase(const char* kind, std::string name, const Locality& loc, MPI_Comm comm)
      : PlanBase(kind, std::move(name), loc, std::make_shared<const Comm>(comm)) {}
  /// Local: the plan runs on `shared`, a communicator other plans may use too (then the
  /// backend keeps its messages apart from theirs, by tag).
  PlanBase(const char* kind, std::string name, const Locality& loc, std::shared_ptr<const Comm> shared)
      : kind_(kind), name_(std::move(name)), loc_(loc), comm_(std::move(shared)) {}

  /// Start moving the send side (the shape's send buffer) into its receive buffer.
  virtual void do_start() = 0;
  /// Finish: the receive buffer must hold every received value afterwards.
  virtual void do_wait() = 0;
  /// do_wait() without blocking: true once the receive buffer holds every received value
  /// (and the sends are complete). The default throws NotImplementedError; halo backends
  /// that override it also override Plan::supports_test().
  virtual bool do_test();
  /// Derived destructors call this first: an exchange still in flight is completed
  /// (a request is never freed behind the user's back); failures are reported on stderr.
  void finish_if_active() noexcept;

  /// "Plan(p2p)": how messages name this plan.
  std::string who() const { return std::string(kind_) + "(" + name_ + ")"; }
  MPI_Comm comm() const { return comm_->get(); }
  /// Backends declare what one execution moves, once at setup: a transfer with `peer` in
  /// `step` (send: which way), through a shared-memory window or as a message.
  void count_transfer(const std::string& step, bool send, int peer, int64_t bytes, bool window = false) {
    per_iter_.record_transfer(window_, step, send, loc_.same_region(peer), bytes, window);
  }
  void count_send(const std::string& step, int peer, int64_t bytes) { count_transfer(step, true, peer, bytes); }
  void count_recv(const std::string& step, int peer, int64_t bytes) { count_transfer(step, false, peer, bytes); }
  void set_stages(int s) { stages_ = s; }
  Stats& setup_stats_mut() { return setup_; }

  // Driven by the shapes' typed verbs.
  bool active_ = false;
  ExecTimers exec_;

 private:
  const char* kind_;
  std::string name_;
  Locality loc_;
  std::shared_ptr<const Comm> comm_;
  int stages_ = 1;
  Stats setup_, per_iter_, window_;
};

}  // namespace sparsecomm
