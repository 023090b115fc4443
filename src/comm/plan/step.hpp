#pragma once
// One step of a multi-step plan (the aggregation backends' local, initial, inter and final
// steps): sends gathered from anywhere in the plan's buffers, receives scattered to where
// each value goes.
//
// A transfer between two ranks of one node goes through the sender's lane of the plan's
// MPI-3 shared-memory window (comm/shm_channel.hpp, protocol and memory-model
// argument): the sender gathers into the window, the receiver copies straight out of it to
// where each value goes -- one copy on each side, no message matching, no copy into and out
// of the MPI library's own shared segment. Any other transfer is an MPI message, sent
// straight from its source when that is one block (else gathered into a buffer of its own)
// and received straight into its destination when that is one block (else into a staging
// buffer, scattered on arrival). Without a window (the SMPI build, window=false, or an MPI
// that cannot allocate one) every transfer is a message.
//
// Every rank calls begin() at every execution, with or without transfers of its own in the
// step: the window's epochs count executions (shm_channel.hpp).
#include <mpi.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

#include "sparsecomm/comm/messages.hpp"
#include "sparsecomm/comm/plan/backend_options.hpp"
#include "sparsecomm/comm/plan/combining_options.hpp"
#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/plan/plan.hpp"

namespace sparsecomm::detail {

class ShmWindow;
class ShmChannel;

/// The option `window` of the backends whose steps are Steps (aggregation, combining).
inline OptionSpec window_option() {
  return {"window", OptionSpec::Kind::boolean, "true",
          "transfers between ranks of one node through an MPI-3 shared-memory window instead of messages (every "
          "step; no effect where the MPI has no shared windows)"};
}
/// Whether options `o` of such a backend ask for the window (window_option()'s default).
inline bool window_wanted(const BackendOptions& o) { return o.get_bool("window", true); }

class Step {
 public:
  /// `eb`: bytes per element; `tag`: the step's message tag.
  Step(int64_t eb, int tag) : eb_(eb), tag_(tag) {}
  Step(const Step&) = delete;
  Step& operator=(const Step&) = delete;

  /// Before plan(): a transfer to `peer` whose element k is read from src[k] (at most one
  /// transfer per peer and direction in a step). Returns its bytes.
  int64_t add_send(int peer, const std::vector<const char*>& src);
  /// ... whose n elements are read from one block.
  int64_t add_send(int peer, const char* block, int64_t n);
  /// A transfer from `peer` whose element k lands at dst[k].
  int64_t add_recv(int peer, const std::vector<char*>& dst);
  /// ... whose n elements land in one block.
  int64_t add_recv(int peer, char* block, int64_t n);
  /// Pieces of (address, bytes), one after the other in the transfer.
  using Pieces = std::vector<std::pair<char*, int64_t>>;
  int64_t add_send_pieces(int peer, const Pieces& src) { return add(sends_, peer, src); }
  int64_t add_recv_pieces(int peer, const Pieces& dst) { return add(recvs_, peer, dst); }

  /// Chooses the way of every transfer: through a lane of `win` when both ends are on its
  /// node (declaring the lane), else a message; null: messages only. Collective in the sense
  /// that every rank of the plan calls it for the same steps in the same order, before
  /// win->try_connect().
  void plan(ShmWindow* win);
  /// After the window's connect (`windows`: whether it succeeded; false: every transfer is a
  /// message). Fixes the messages.
  void init(MPI_Comm comm, bool persistent, bool windows);
  /// Calls f(send, peer, bytes, through_window) for every transfer (after init()).
  template <class F>
  void each(F f) const {
    for (const Transfer& t : sends_) f(true, t.peer, t.bytes, t.window);
    for (const Transfer& t : recvs_) f(false, t.peer, t.bytes, t.window);
  }
  bool empty() const { return sends_.empty() && recvs_.empty(); }

  /// Execution: begin() posts the receives (every rank, every execution); send() once the
  /// sources hold this execution's values; wait_recv() once they are all where they go;
  /// wait_send() before the sources change again.
  void begin();
  void send();
  void wait_recv();
  void wait_send() { msg_send_.wait(); }
  /// wait_recv() / wait_send() without blocking: true once done (what has arrived through
  /// the window is copied out already).
  bool test_recv();
  bool test_send() { return msg_send_.test(); }

 private:
  struct Run {
    char* at;
    int64_t bytes;
  };
  struct Transfer {
    int peer = -1;
    std::vector<Run> runs;  // element order; consecutive addresses merged
    int64_t bytes = 0;
    bool window = false;
    std::vector<char> staging;  // a message that is not one block
    int64_t offset = 0;         // a window send: where it starts in my area
    bool shared = false;        // ... written by an earlier window send of the same pieces
  };
  int64_t add(std::vector<Transfer>& to, int peer, const Pieces& pieces);
  void read(size_t k);  // window recv k: copy out, tell the writer
  void unstage();       // the staged messages' values to where they go, once per execution
  // While spinning on the window: MPI progress for every message in flight, also the other
  // steps' (a large send of an earlier step that another node waits for moves only while
  // this rank calls MPI; this step's own lists may be empty).
  void progress();

  int64_t eb_;
  int tag_;
  std::vector<Transfer> sends_, recvs_;
  ShmChannel* lane_ = nullptr;  // the window's lane (window transfers only)
  std::vector<size_t> win_sends_, win_recvs_, msg_sends_, staged_recvs_;  // indices into sends_ / recvs_
  Messages msg_send_, msg_recv_;
  uint64_t epoch_ = 0;          // executions begun
  std::vector<char> read_;      // which window recvs are done in this execution
  bool scattered_ = false;      // staged messages scattered in this execution
};

/// The shared-memory window of a plan's steps (one lane per step).
class StepWindow {
 public:
  StepWindow();
  ~StepWindow();
  StepWindow(const StepWindow&) = delete;
  StepWindow& operator=(const StepWindow&) = delete;
  /// What a plan counts of each transfer (Plan::count_transfer's arguments).
  using Count = std::function<void(const char* step, bool send, int peer, int64_t bytes, bool window)>;
  /// Collective over `comm` (the plan's; `parent`: the communicator it duplicates, which
  /// keeps the node's communicator for all its plans): where `opts` want the window
  /// (window_wanted) and the MPI has shared windows, the steps' transfers between ranks of
  /// one node go through one window, the others are messages; then every step is fixed
  /// (Step::init) and count(name, ...) called for each of its transfers. Every rank passes
  /// the same options and the same steps in the same order. Returns whether a window is in
  /// use.
  bool connect(MPI_Comm comm, MPI_Comm parent, const BackendOptions& opts, bool persistent,
               std::initializer_list<std::pair<Step*, const char*>> steps, const Count& count);

 private:
  std::unique_ptr<ShmWindow> win_;
};

/// A plan's executions over its steps, as phases that a non-blocking test() can stop
/// between and resume: phase i waits for the receives of its steps, then runs its action
/// (the next steps' sends, copies); after the last phase every step's sends complete.
class Schedule {
 public:
  struct Phase {
    std::vector<Step*> in;        // whose receives this phase waits for
    std::function<void()> then;   // what it does once they are in
  };
  /// `steps`: every step of the plan (each begins at every execution).
  Schedule(std::vector<Step*> steps, std::vector<Phase> phases) : steps_(std::move(steps)), phases_(std::move(phases)) {}
  /// Begins an execution: every step's receives posted, then the leading phases that wait
  /// for nothing (the sends whose data is in the caller's buffer).
  void start() {
    for (Step* s : steps_) s->begin();
    for (phase_ = 0; phase_ < phases_.size() && phases_[phase_].in.empty(); ++phase_)
      if (phases_[phase_].then) phases_[phase_].then();
  }
  /// block: until the execution is done; else false where it would wait (call again).
  bool advance(bool block) {
    for (; phase_ < phases_.size(); ++phase_) {
      for (Step* s : phases_[phase_].in)
        if (block) s->wait_recv();
        else if (!s->test_recv()) return false;
      if (phases_[phase_].then) phases_[phase_].then();
    }
    for (Step* s : steps_)
      if (block) s->wait_send();
      else if (!s->test_send()) return false;
    return true;
  }

 private:
  std::vector<Step*> steps_;
  std::vector<Phase> phases_;
  size_t phase_ = 0;
};

/// What the halo and gather `combined` backends both register: their description and their
/// options (the combining ones, combining_option_specs, and the window).
inline constexpr const char* kCombinedDescription = "message combining over common neighborhoods (pairs or k-groups)";
inline std::vector<OptionSpec> combined_options() {
  std::vector<OptionSpec> o = combining_option_specs();
  o.push_back(window_option());
  return o;
}

/// The two stages of message combining (the halo and gather `combined` backends): stage 1
/// and the stage-2 transfers an origin delivers itself (`direct`) leave at start(), the
/// combined stage 2 once stage 1 is in. A pair of ranks meets in one of direct and stage2.
class CombiningStages {
  StepWindow window_;  // (first: outlives the steps)

 public:
  /// Every transfer is added as pieces of bytes (Step::add_send_pieces, add_recv_pieces).
  CombiningStages(int tag1, int tag_direct, int tag2)
      : stage1(1, tag1),
        direct(1, tag_direct),
        stage2(1, tag2),
        schedule_({&stage1, &direct, &stage2},
                  {{{}, [this] { stage1.send(), direct.send(); }},
                   {{&stage1}, [this] { copy(), stage2.send(); }},
                   {{&stage2, &direct}, {}}}) {}
  Step stage1, direct, stage2;

  /// Rank `me`'s stage-2 transfer to `peer` with the data of `origins`: direct where it
  /// carries only my own (it need not wait for stage 1), else combined.
  void add_stage2_send(int me, int peer, const std::vector<int>& origins, const Step::Pieces& src) {
    (origins.size() == 1 && origins[0] == me ? direct : stage2).add_send_pieces(peer, src);
  }
  /// The stage-2 transfer from `peer` with the data of `origins` (direct: only its own).
  void add_stage2_recv(int peer, const std::vector<int>& origins, const Step::Pieces& dst) {
    (origins.size() == 1 && origins[0] == peer ? direct : stage2).add_recv_pieces(peer, dst);
  }
  /// A copy made once stage 1 is in, before the combined stage 2 leaves (what stage 1
  /// brought for this rank itself, or its own data for itself).
  void copy_after_stage1(char* dst, const char* src, int64_t bytes) { copies_.push_back({dst, src, bytes}); }

  /// After every transfer is added: StepWindow::connect over the three (direct and stage2
  /// both count as "stage2").
  void connect(MPI_Comm comm, MPI_Comm parent, const BackendOptions& opts, bool persistent,
               const StepWindow::Count& count) {
    window_.connect(comm, parent, opts, persistent, {{&stage1, "stage1"}, {&direct, "stage2"}, {&stage2, "stage2"}},
                    count);
  }
  Schedule& schedule() { return schedule_; }

 private:
  struct Copy {
    char* dst;
    const char* src;
    int64_t bytes;
  };
  void copy() const {
    // (a piece of 0 bytes may sit at a null buffer: no memcpy, which forbids null)
    for (const auto& c : copies_)
      if (c.bytes > 0) std::memcpy(c.dst, c.src, static_cast<size_t>(c.bytes));
  }
  std::vector<Copy> copies_;
  Schedule schedule_;
};

/// A plan of either shape (Shape: Plan or GatherPlan, PlanBase's verbs) whose executions
/// are those of a Schedule: start() begins it, wait() and test() advance it, test()
/// stopping between phases. The multi-step backends (aggregation, combining) derive from
/// it and name their schedule (a member built with their steps, or CombiningStages').
template <class Shape>
class Scheduled : public Shape {
 protected:
  using Shape::Shape;
  virtual Schedule& schedule() = 0;
  void do_start() override { schedule().start(); }
  void do_wait() override { schedule().advance(true); }
  bool do_test() override { return schedule().advance(false); }
  /// What StepWindow::connect calls for each transfer: the plan counts it.
  StepWindow::Count counter() {
    return [this](const char* step, bool send, int peer, int64_t bytes, bool window) {
      this->count_transfer(step, send, peer, bytes, window);
    };
  }
};

/// The halo shape of Scheduled: it declares test() (Plan::supports_test).
class ScheduledPlan : public Scheduled<Plan> {
 public:
  bool supports_test() const override { return true; }

 protected:
  using Scheduled<Plan>::Scheduled;
};

/// The `combined` backend of either shape (Base: ScheduledPlan or Scheduled<GatherPlan>):
/// at start(), stage 1 and the direct stage-2 transfers; the combined stage-2 transfers once
/// stage 1 is in (CombiningStages, which test() can stop between).
template <class Base>
class Combined : public Base {
 protected:
  /// `tags`: stage 1, direct, combined stage 2; then Base's arguments.
  template <class... A>
  explicit Combined(std::array<int, 3> tags, A&&... base)
      : Base(std::forward<A>(base)...), x_(tags[0], tags[1], tags[2]) {}
  Schedule& schedule() override { return x_.schedule(); }
  CombiningStages x_;
};

}  // namespace sparsecomm::detail
