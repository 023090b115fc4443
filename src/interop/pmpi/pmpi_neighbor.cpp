// libsparsecomm_mpi.so: MPI's neighborhood collectives through sparsecomm's plans, for an
// unmodified MPI program, through the MPI profiling interface:
//
//   LD_PRELOAD=/path/libsparsecomm_mpi.so mpirun -np 32 ./app
//
// Handled (everything else is MPI's own: passed to PMPI_* unchanged, or not defined here),
// each blocking, non-blocking (MPI_Ineighbor_*) and persistent (Open MPI 4.1's
// MPIX_Neighbor_*_init, MPI-4's MPI_Neighbor_*_init):
//   allgather, allgatherv: gather plans (combining over common neighborhoods, or direct;
//     allgatherv's plan learns its sources' sizes), or halo plans whose entries carry
//     their sender's id (allgather_pattern, allgatherv_pattern), so the locality-aware
//     aggregations send a block across a node pair once;
//   alltoall, alltoallv: a halo plan with an entry per block (per element of the type for
//     alltoallv);
//   behind a request only with a backend that can be polled (Plan::test), MPI's own
//   otherwise;
// on distributed-graph, Cartesian and graph communicators, with contiguous send and
// receive types (named, or contiguous/dup over one; allgather and alltoall: one block size
// on every rank; alltoallv: send and receive types of one size).
// Neighbor lists are MPI's: duplicate edges (allgather: one message per pair, copied into
// every slot), self edges (a local copy), MPI_PROC_NULL neighbors of non-periodic
// Cartesian dimensions (slot left untouched). The alltoall pairs blocks by rank, so a list
// where a rank appears twice is passed on (MPI's pairing by order is its business).
// Passed on: MPI_IN_PLACE, non-contiguous types, intercommunicators, communicators without
// topology, allgather/alltoall block sizes that differ between ranks; alltoallw is not
// defined here (MPI's own). The plans' own MPI calls (the neighbor backends call
// MPI_Ineighbor_*) go straight to MPI (depth()).
//
// Which path a call takes must be the same on every rank (a plan is collective):
//  - under auto on one node without the fixed-counts hint, the first blocking call on a
//    communicator agrees once and sets up the one-node exchange (node_exchange.hpp), which
//    carries every later call's sizes (blocking or not) in its shared window: no agreement
//    per call, any counts and datatypes (one_node=shm or off: not). Otherwise:
//  - blocking calls agree first: one PMPI_Allreduce of four integers (can this rank run it,
//    its block size as min and max, a bad setting); allgatherv/alltoallv of three (can it,
//    has its signature - a hash of counts and displacements - changed, a bad setting), and
//    a change anywhere rebuilds the plan everywhere. Under auto, where the agreements keep
//    finding nothing for the library to do (MPI's own, or nothing to move), only every
//    8th to 1024th call agrees and the others are MPI's own at once (steps_aside()); and auto
//    charges the agreement to the plans it weighs (agreement_cost; on one node by timing its
//    shm plan against MPI's own at a signature's first call, trial_keeps()). With the hint that counts are fixed
//    (MPI_Info key "sparsecomm_fixed_counts" = "true" given when the topology communicator
//    is created, or SPARSECOMM_MPI_FIXED_COUNTS=1), only the first call per communicator
//    and function agrees; later calls check their local signature against the agreed one
//    and need no communication. A call that breaks the promise is an error raised through
//    the communicator's error handler (an erroneous program, as a type-signature mismatch
//    is in MPI).
//  - non-blocking calls are local in MPI, so they never agree: they run the agreed plan of
//    a hinted communicator, or the one-node exchange once a blocking call has set it up,
//    and are MPI's own otherwise.
//  - persistent initialisation is collective and non-local in MPI-4 (section 6.13), so it
//    agrees and builds a plan for that request alone; starts then cost nothing extra.
//
// Choice: SPARSECOMM_MPI_BACKEND = auto (default) | mpi | a gather backend (combined,
// p2p, neighbor, shm) | a halo-only backend (aggregated, aggregated_dedup,
// aggregated_2step: every function through it as a halo plan). auto takes
// the shm backends (shared-memory window) when every rank of the communicator is on one
// node; across nodes the halo auto predicts every halo backend from counts (for an
// allgather(v) on its halo pattern, beside the combining gather plan) and the choice is
// kept only where the performance model (comm/plan/model.hpp) predicts it 1.3x faster
// than the direct exchange MPI itself does; otherwise it steps aside (MPI's own). The model's parameters are the ones every auto
// uses (ModelParams::resolve: $SPARSECOMM_MODEL, a file or builtin, else this machine's,
// measured in the first three launches per machine and layout and cached). mpi: always MPI's own. Combining parameters: SPARSECOMM_MPI_K, _AWARE (0/1);
// regions: SPARSECOMM_MPI_REGIONS (default node); the same as MPI_Info keys
// sparsecomm_backend / sparsecomm_k / sparsecomm_aware / sparsecomm_regions at communicator
// creation. SPARSECOMM_MPI_VERBOSE=1: per communicator what was chosen, and at exit per rank
// the calls handled and passed on. SPARSECOMM_MPI_DISABLE=1. auto's rule on one node
// (Settings in neighbor_internal.hpp): SPARSECOMM_MPI_ONE_NODE = exchange (default) | shm |
// off, SPARSECOMM_MPI_SHM_BLOCK_MAX, SPARSECOMM_MPI_NODE_AREA (the one-node exchange's
// shared bytes per writer, node_exchange.hpp), and their MPI_Info keys sparsecomm_one_node,
// _shm_block_max, _node_area. Every setting but VERBOSE
// and NODE_AREA must be the same on every rank of a communicator (each agreement compares a
// hash of them; a rank where the layer is disabled still takes part in a communicator's
// first agreement). A bad value, or a difference: every rank prints the error and exits
// (status 2) at the first call that agrees.
//
// Lifetime: the plans hang on the communicator as an attribute whose delete callback frees
// them at MPI_Comm_free (a request still using one keeps it alive), so a reused handle
// never finds an old plan.
#include "interop/pmpi/neighbor_internal.hpp"  // (every header the layer uses)

namespace sparsecomm::pmpi::neighborhood {
namespace {

// The same for allgatherv / alltoallv, whose signature is a hash of this rank's counts
// (and displacements where the plan depends on them): one allreduce of {cannot, changed,
// moves}; a change on any rank rebuilds the plan on every rank (`build`, collective), or,
// where no rank moves a byte (`moves`: this rank sends or receives a non-empty block),
// agrees on nothing to move -- no plan, and under auto the calls step aside as for empty
// fixed-size blocks. With the hint, only the first call agrees.
template <class Build>
std::shared_ptr<Choice> decide_v(MPI_Comm comm, Kind k, bool can, bool moves, uint64_t hash, Mode mode, Build build,
                                 bool* broken) {
  const Prologue pre = prologue(comm, k, can ? static_cast<int64_t>(hash >> 1) : -1, mode, broken);
  if (pre.done) return pre.choice;
  CommPlans& p = *pre.p;
  const int64_t local = pre.local;
  can = local >= 0;
  if (!before_agreement(p, k, mode)) return nullptr;  // stepping aside: MPI's own
  CommPlans::Last& last = p.last[k - kAllgatherv];
  const bool changed = mode == kPersistent || !(last.built && last.hash == hash);
  const auto out = agree(comm, p, {can ? 0 : 1, can && changed ? 1 : 0, moves ? 1 : 0});
  p.all_mpi = p.settings.backend == "mpi" && !p.settings.fixed;
  if (starts_node_exchange(p, comm, k, mode)) return nullptr;  // this call MPI's own; every later one through it
  std::shared_ptr<Choice> c;
  auto choose = [&] { return out[2] ? build(p) : nothing_to_move(p, comm, k, "variable blocks, all empty"); };
  try {
    if (!out[0] && mode == kPersistent) return choose();  // the request's own plan
    if (!out[0] && out[1]) {
      last.choice = choose();
      last.built = true, last.hash = hash;
    }
  } catch (const std::exception& e) {  // plan set-up failed on every rank alike
    fail(e.what());
  }
  if (!out[0]) c = last.choice;
  if (p.settings.fixed) p.agreed[k] = {true, local, c};
  return after_agreement(p, comm, k, mode, c);
}


// A blocking call on choice c: the operation running on its plan (a request) completes
// first, then begin and finish.
template <class Begin, class Finish>
void run_blocking(Choice& c, Begin begin, Finish finish) {
  if (c.nothing) return;
  if (c.inflight) c.inflight->progress(true);
  begin();
  finish(true);
}

}  // namespace
}  // namespace sparsecomm::pmpi::neighborhood


namespace sparsecomm::pmpi::neighborhood {
namespace {
// The request of a non-blocking (started now) or persistent operation on choice c.
MPI_Request plan_request(const std::shared_ptr<Choice>& c, bool persistent, std::function<void()> begin,
                         std::function<bool(bool)> finish) {
  if (c->nothing) {  // a request that completes at once
    struct Nothing final : Operation {
      void start() override {}
      bool progress(bool) override { return true; }
    };
    return register_operation(std::make_unique<Nothing>(), persistent, !persistent);
  }
  auto op = std::make_unique<PlanOp>(c, std::move(begin), std::move(finish));
  if (!persistent) op->start();
  return register_operation(std::move(op), persistent, !persistent);
}

// A halo choice is usable behind a request only where its backend can be polled (the same
// on every rank: it depends on the backend's name).
std::shared_ptr<Choice> pollable(std::shared_ptr<Choice> c) {
  return c && c->halo && !c->halo->supports_test() ? nullptr : c;
}

// Collective (every rank has the same fresh choice at the same call). Whether auto's shm
// plan on one node is kept for blocking calls without the hint: such a call pays an
// agreement before the plan and (once stepped aside) none before MPI's own, and on an
// oversubscribed node the agreement (a global allreduce; experiments/pmpi/README.md) can
// cost more than the plan saves on small blocks. auto on one node has no model
// verdict (its predictions there are least reliable), so it measures: the plan and MPI's
// own alternately on the call's own buffers (both deliver the same result into them), one
// warm-up and five timed each, the medians' maximum over ranks, plus the agreement
// (agreement_cost). Kept if kTrialMargin faster.
constexpr double kTrialMargin = 1.1;
template <class Run, class Pass>
bool trial_keeps(MPI_Comm comm, Kind k, Run run, Pass pass) {
  CommPlans& p = *plans_of(global(), comm);
  double tp[5], tm[5];
  run(), pass();
  for (int i = 0; i < 5; ++i) {
    double t0 = MPI_Wtime();
    run();
    tp[i] = MPI_Wtime() - t0;
    t0 = MPI_Wtime();
    pass();
    tm[i] = MPI_Wtime() - t0;
  }
  std::sort(tp, tp + 5), std::sort(tm, tm + 5);
  const double mine[2] = {tp[2], tm[2]};
  double most[2] = {0, 0};
  PMPI_Allreduce(mine, most, 2, MPI_DOUBLE, MPI_MAX, comm);
  const double agree = agreement_cost(p, comm);
  const bool keep = (most[0] + agree) * kTrialMargin < most[1];
  char why[200];
  std::snprintf(why, sizeof why, "measured %.1f us shm + %.1f us agreement against %.1f us MPI's own: %s",
                most[0] * 1e6, agree * 1e6, most[1] * 1e6, keep ? "shm" : "MPI's own");
  report(p, comm, k, "this signature", why);
  return keep;
}

// What every entry point does: decide (`decide_fn(&broken)`), then MPI's own (`pass`) or
// the plan (`run`, returning the call's code), counted under `counter` (Global::handled /
// passed).
// `passed_on` (if given): set when the call went to MPI's own at depth 0.
template <class Decide, class Pass, class Run>
int dispatch(MPI_Comm comm, Kind k, int counter, Decide decide_fn, Pass pass, Run run, bool* passed_on = nullptr) {
  if (depth() > 0) return pass();  // a plan's own call
  Inside inside;
  bool broken = false;
  const std::shared_ptr<Choice> c = decide_fn(&broken);
  if (broken) return broken_promise(comm, k);
  if (c && c->needs_trial) {
    c->needs_trial = false;
    try {
      c->declined = !trial_keeps(comm, k, [&] { run(c); }, pass);
    } catch (const std::exception& e) {
      fail(e.what());
    }
    note_outcome(*plans_of(global(), comm), comm, k, !c->declined);  // (decide() left it to the trial)
  }
  if (!c || c->declined) {
    ++global().passed[counter];
    if (passed_on) *passed_on = true;
    return pass();
  }
  int rc = MPI_SUCCESS;
  try {
    rc = run(c);
  } catch (const std::exception& e) {
    fail(e.what());
  }
  ++global().handled[counter];
  return rc;
}

// A receive count that is not what the source sends: MPI calls the program erroneous; the
// data that fits has been delivered, the error goes through the communicator's handler.
int count_mismatch(MPI_Comm comm, Kind k) {
  interop::report_error(comm, kWho, std::string(kCallName[k]) + ": a receive count differs from what its source sends");
  PMPI_Comm_call_errhandler(comm, MPI_ERR_TRUNCATE);
  return MPI_ERR_TRUNCATE;
}
}  // namespace
}  // namespace sparsecomm::pmpi::neighborhood

using namespace sparsecomm::pmpi;
using namespace sparsecomm::pmpi::neighborhood;
#define SPC_EXPORT extern "C" __attribute__((visibility("default")))

namespace sparsecomm::pmpi::neighborhood {
namespace {

// A completed one-node exchange call's error (NodeExchange::op_code): reported on this rank
// and through the communicator's handler; the code.
int node_error(MPI_Comm comm, Kind k, int rc) {
  if (rc == MPI_ERR_TRUNCATE) return count_mismatch(comm, k);
  if (rc == MPI_ERR_COUNT) {
    interop::report_error(MPI_COMM_WORLD, kWho, std::string(kCallName[k]) + " with a negative count");
    PMPI_Comm_call_errhandler(comm, MPI_ERR_COUNT);
  }
  if (rc == MPI_ERR_BUFFER) {
    interop::report_error(MPI_COMM_WORLD, kWho,
                          std::string(kCallName[k]) + " with MPI_IN_PLACE (not defined for neighborhood collectives)");
    PMPI_Comm_call_errhandler(comm, MPI_ERR_BUFFER);
  }
  return rc;
}

// A non-blocking call on the one-node exchange behind a request; it keeps the
// communicator's entry (and so the exchange) alive. An error is reported at completion.
class NodeOp final : public Operation {
 public:
  NodeOp(std::shared_ptr<CommPlans> p, std::shared_ptr<NodeExchange::Op> op, MPI_Comm comm, Kind k)
      : p_(std::move(p)), op_(std::move(op)), comm_(comm), k_(k) {}
  ~NodeOp() override {
    if (!complete_) progress(true);  // a request freed while active completes here
  }
  void start() override {}  // started at creation
  bool progress(bool block) override {
    if (complete_) return true;
    Inside inside;
    if (!p_->node->progress(*op_, block)) return false;
    complete_ = true;
    if (const int rc = NodeExchange::op_code(*op_); rc != MPI_SUCCESS) node_error(comm_, k_, rc);
    return true;
  }

 private:
  std::shared_ptr<CommPlans> p_;
  std::shared_ptr<NodeExchange::Op> op_;
  MPI_Comm comm_;
  Kind k_;
  bool complete_ = false;
};

// A blocking or non-blocking call on a communicator whose calls go through the one-node
// exchange: the call's code (its errors through the communicator's handler), a request for
// a non-blocking one. Else -1. Non-blocking calls use the exchange only once a blocking
// call has set it up (the set-up is collective; a non-blocking call's initiation must not
// wait for other ranks); persistent requests keep their own agreed plans.
int node_call(int entry, Kind k, Mode mode, MPI_Request* request, NodeExchange::Shape shape,
              const NodeExchange::Side& send, const NodeExchange::Side& recv, MPI_Comm comm) {
  Global& g = global();
  if (mode == kPersistent || depth() > 0 || g.disabled) return -1;
  std::shared_ptr<CommPlans> p = plans_of(g, comm);
  if (!p->node) return -1;
  Inside inside;
  ++g.handled[entry];
  // A negative count is an error of this rank alone, reported as MPI's own reports it
  // (MPI_ERR_COUNT through the communicator's handler) before anything moves.
  if (negative_count(send, p->nb.destinations.size()) || negative_count(recv, p->nb.sources.size()))
    return node_error(comm, k, MPI_ERR_COUNT);
  if (mode == kNonblocking) {
    auto op = p->node->start(shape, send, recv);
    *request = register_operation(std::make_unique<NodeOp>(std::move(p), std::move(op), comm, k), false, true);
    return MPI_SUCCESS;
  }
  const int rc = p->node->call(shape, send, recv);
  return rc == MPI_SUCCESS ? rc : node_error(comm, k, rc);
}

// The pass-through path at the cost of a shim. Where a blocking allgather or alltoall has
// settled on MPI's own — a communicator the layer cannot use, or one with the fixed-counts
// hint whose agreed choice for this signature is MPI's own (or was declined by its trial):
// for good; or auto stepping aside without the hint (steps_aside()): until its next
// agreement — the same communicator (and arguments, where they decide) go to MPI's own
// after a few compares of one cache line, instead of the entry's lookups (the
// communicator's entry, the signature's type queries, the shared pointers). Every call
// takes the path the full one would, so every rank still skips and agrees at the same
// calls. Why it matters: on an oversubscribed node a blocking exchange waits for every rank
// sharing a core to have run its part, so each rank's CPU per call, with its data cold
// after the context switches, adds up; the full path measured clearly above a one-line
// shim where the layer passes every call (experiments/pmpi/README.md). A datatype handle freed and
// made again as another type also passes at once: MPI's own is right for any arguments
// (the size check the hint implies is then MPI's).
bool passes_at_once(Kind k, MPI_Comm comm, const void* sb, int sc, MPI_Datatype st, int rc, MPI_Datatype rt) {
  Global::Settled& e = global().settled[k];
  if (comm != e.comm) return false;
  if (e.owner) {  // skip_agreement() without the rest of the path
    CommPlans::Aside& a = e.owner->aside[k];
    if (!a.skipping || a.left <= 1) return false;
    --a.left;
    return true;
  }
  return sc == e.sc && rc == e.rc && st == e.st && rt == e.rt && (sb == MPI_IN_PLACE) == e.in_place;
}

// After a blocking call that went to MPI's own: remembers the communicator (and the
// arguments, where they decide) if decide() found that later calls will go there too
// (`shortcut`; see passes_at_once).
void note_settled(Kind k, MPI_Comm comm, const void* sb, int sc, MPI_Datatype st, int rc, MPI_Datatype rt,
                  const Shortcut& shortcut) {
  Global& g = global();
  if (!shortcut.aside && !shortcut.settled) return;
  plans_of(g, comm);  // (the entry's attribute value: g.last_plans)
  if (shortcut.aside) g.settled[k] = {comm, g.last_plans, shortcut.aside};
  else g.settled[k] = {comm, g.last_plans, nullptr, sb == MPI_IN_PLACE, sc, rc, st, rt};
}

// The four call shapes, each for blocking (request == null), non-blocking and persistent
// use; `entry` is the counter (kEntryName), `pass` the call to MPI's own.

// The two of one block per neighbor (allgather, alltoall): the same path but for how a
// plan's execution begins (`begin_of(choice)`) and completes (`finish_of(plans, choice,
// block bytes)`, called with `block`: whether it may wait).
template <class Pass, class BeginOf, class FinishOf>
int fixed_call(int entry, Kind kind, NodeExchange::Shape shape, Mode mode, const void* sendbuf, int sendcount,
               MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
               MPI_Request* request, Pass pass, BeginOf begin_of, FinishOf finish_of) {
  if (mode == kBlocking && passes_at_once(kind, comm, sendbuf, sendcount, sendtype, recvcount, recvtype)) {
    ++global().passed[entry];
    return pass();
  }
  if (passed_for_threads()) return pass();
  const NodeExchange::Side snd{sendbuf, sendcount, nullptr, nullptr, sendtype};
  const NodeExchange::Side rcv{recvbuf, recvcount, nullptr, nullptr, recvtype};
  if (const int rc = node_call(entry, kind, mode, request, shape, snd, rcv, comm); rc >= 0) return rc;
  const int64_t sig = signature(sendbuf, sendcount, sendtype, recvcount, recvtype);
  bool passed_on = false;
  Shortcut shortcut;
  const int result = dispatch(
      comm, kind, entry,
      [&](bool* broken) {
        auto c = decide(comm, kind, sig, mode, broken, &shortcut);
        return mode == kBlocking ? c : pollable(c);
      },
      pass,
      [&](const std::shared_ptr<Choice>& c) {
        const std::shared_ptr<CommPlans> p = plans_of(global(), comm);
        auto begin = begin_of(c.get());
        auto finish = finish_of(p, c.get(), static_cast<size_t>(sig));
        if (mode == kBlocking) run_blocking(*c, begin, finish);
        else *request = plan_request(c, mode == kPersistent, begin, finish);
        return MPI_SUCCESS;
      },
      &passed_on);
  if (passed_on && mode == kBlocking) note_settled(kind, comm, sendbuf, sendcount, sendtype, recvcount, recvtype, shortcut);
  return result;
}

template <class Pass>
int allgather_call(int entry, Mode mode, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request, Pass pass) {
  return fixed_call(
      entry, kAllgather, NodeExchange::kOneBlock, mode, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
      comm, request, pass,
      [sendbuf](Choice* cp) {
        return [cp, sendbuf] {
          if (cp->halo) halo_begin(*cp, sendbuf);
          else gather_begin(*cp, sendbuf);
        };
      },
      [sendbuf, recvbuf](const std::shared_ptr<CommPlans>& p, Choice* cp, size_t B) {
        return [p, cp, sendbuf, recvbuf, B](bool block) {
          return allgather_finish(p->nb, *cp, sendbuf, recvbuf, B, block);
        };
      });
}

template <class Pass>
int alltoall_call(int entry, Mode mode, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request, Pass pass) {
  return fixed_call(
      entry, kAlltoall, NodeExchange::kBlocks, mode, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
      request, pass, [sendbuf](Choice* cp) { return [cp, sendbuf] { halo_begin(*cp, sendbuf); }; },
      [sendbuf, recvbuf](const std::shared_ptr<CommPlans>& p, Choice* cp, size_t B) {
        return [p, cp, sendbuf, recvbuf, B](bool block) {
          if (!halo_complete(*cp, recvbuf, block)) return false;
          copy_self(p->nb, sendbuf, recvbuf, B, Layout{}, Layout{});
          return true;
        };
      });
}

template <class Pass>
int allgatherv_call(int entry, Mode mode, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                    MPI_Request* request, Pass pass) {
  if (passed_for_threads()) return pass();
  const NodeExchange::Side snd{sendbuf, sendcount, nullptr, nullptr, sendtype};
  const NodeExchange::Side rcv{recvbuf, 0, recvcounts, displs, recvtype};
  if (const int rc = node_call(entry, kAllgatherv, mode, request, NodeExchange::kOneBlock, snd, rcv, comm); rc >= 0)
    return rc;
  // Signature: my block's bytes, the receive type's size and the receive counts (the plan
  // learns the sources' sizes when built; displacements only place the copies).
  const int64_t sb = sendbuf == MPI_IN_PLACE ? -1 : contiguous_bytes(sendtype, sendcount);
  const int64_t rsize = contiguous_bytes(recvtype, 1);
  return dispatch(
      comm, kAllgatherv, entry,
      [&](bool* broken) {
        const Neighbors& nb = plans_of(global(), comm)->nb;
        uint64_t h = hash_ints(1469598103934665603ULL, recvcounts, nb.sources.size());
        const int head[2] = {static_cast<int>(sb), static_cast<int>(rsize)};
        h = hash_ints(h, head, 2);
        const bool can = sb >= 0 && rsize > 0 && sb <= INT32_MAX && !any_negative(recvcounts, nb.sources.size());
        // (a block sent to no destination moves nothing; one sent where every receiver
        // expects none is a count mismatch the plan reports, so it counts as moving)
        const bool moves = (sb > 0 && !nb.destinations.empty()) || any_nonzero(recvcounts, nb.sources.size());
        auto c = decide_v(
            comm, kAllgatherv, can, moves, h, mode,
            [&](CommPlans& p) { return build_gather(p, comm, kAllgatherv, sb, false, "variable blocks"); }, broken);
        return mode == kBlocking ? c : pollable(c);
      },
      pass,
      [&](const std::shared_ptr<Choice>& c) {
        const std::shared_ptr<CommPlans> p = plans_of(global(), comm);
        Choice* cp = c.get();
        // The arrays are the caller's until completion (MPI), but a copy costs nothing here.
        std::vector<int> rc(recvcounts, recvcounts + p->nb.sources.size());
        std::vector<int> rd(displs, displs + p->nb.sources.size());
        auto begin = [cp, sendbuf] {
          if (cp->halo) halo_begin(*cp, sendbuf);
          else gather_begin(*cp, sendbuf);
        };
        bool ok = true;
        if (mode == kBlocking) {
          run_blocking(*c, begin, [&](bool block) {
            return allgatherv_finish(p->nb, *cp, sendbuf, sb, recvbuf, rc.data(), rd.data(), rsize, block, &ok);
          });
          return ok ? MPI_SUCCESS : count_mismatch(comm, kAllgatherv);
        }
        auto finish = [p, cp, sendbuf, sb, recvbuf, rc, rd, rsize, comm](bool block) {
          bool fine = true;
          if (!allgatherv_finish(p->nb, *cp, sendbuf, sb, recvbuf, rc.data(), rd.data(), rsize, block, &fine))
            return false;
          if (!fine) count_mismatch(comm, kAllgatherv);
          return true;
        };
        *request = plan_request(c, mode == kPersistent, begin, finish);
        return MPI_SUCCESS;
      });
}

template <class Pass>
int alltoallv_call(int entry, Mode mode, const void* sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request, Pass pass) {
  if (passed_for_threads()) return pass();
  const NodeExchange::Side snd{sendbuf, 0, sendcounts, sdispls, sendtype};
  const NodeExchange::Side rcv{recvbuf, 0, recvcounts, rdispls, recvtype};
  if (const int rc = node_call(entry, kAlltoallv, mode, request, NodeExchange::kBlocksV, snd, rcv, comm); rc >= 0)
    return rc;
  // One unit: the (equal) size of the two types; the plan depends on counts and displacements.
  const int64_t unit = contiguous_bytes(sendtype, 1);
  return dispatch(
      comm, kAlltoallv, entry,
      [&](bool* broken) {
        const Neighbors& nb = plans_of(global(), comm)->nb;
        const size_t out = nb.destinations.size(), in = nb.sources.size();
        uint64_t h = hash_ints(1469598103934665603ULL, sendcounts, out);
        h = hash_ints(h, sdispls, out);
        h = hash_ints(h, recvcounts, in);
        h = hash_ints(h, rdispls, in);
        const int head = static_cast<int>(unit);
        h = hash_ints(h, &head, 1);
        // (negative displacements, which MPI allows, address bytes before the buffer: a plan's
        // pattern holds positions inside it, so such calls are MPI's own)
        const bool can = sendbuf != MPI_IN_PLACE && unit > 0 && unit == contiguous_bytes(recvtype, 1) &&
                         !any_negative(sendcounts, out) && !any_negative(recvcounts, in) &&
                         !any_negative(sdispls, out) && !any_negative(rdispls, in);
        const bool moves = any_nonzero(sendcounts, out) || any_nonzero(recvcounts, in);
        auto c = decide_v(
            comm, kAlltoallv, can, moves, h, mode,
            [&](CommPlans& p) {
              return build_halo(p, comm, kAlltoallv, unit, Layout{sendcounts, sdispls}, Layout{recvcounts, rdispls},
                                "variable blocks");
            },
            broken);
        return mode == kBlocking ? c : pollable(c);
      },
      pass,
      [&](const std::shared_ptr<Choice>& c) {
        const std::shared_ptr<CommPlans> p = plans_of(global(), comm);
        Choice* cp = c.get();
        const size_t out = p->nb.destinations.size(), in = p->nb.sources.size();
        std::vector<int> sc(sendcounts, sendcounts + out), sd(sdispls, sdispls + out), rd(rdispls, rdispls + in);
        auto begin = [cp, sendbuf] { halo_begin(*cp, sendbuf); };
        auto finish = [p, cp, sendbuf, recvbuf, unit, sc, sd, rd](bool block) {
          if (!halo_complete(*cp, recvbuf, block)) return false;
          copy_self(p->nb, sendbuf, recvbuf, static_cast<size_t>(unit), Layout{sc.data(), sd.data()},
                    Layout{nullptr, rd.data()});
          return true;
        };
        if (mode == kBlocking) run_blocking(*c, begin, finish);
        else *request = plan_request(c, mode == kPersistent, begin, finish);
        return MPI_SUCCESS;
      });
}

}  // namespace
}  // namespace sparsecomm::pmpi::neighborhood

// A call from MPI's own Fortran binding goes straight to MPI (from_fortran_binding: that
// binding does its own counting and conversion, and a Fortran program's requests are
// MPI's). The caller's address must be read in the entry point's own frame, which is why
// this is a macro and not a function.
#define SPC_FORTRAN_BINDING_PASSES(counter, own_call)      \
  if (from_fortran_binding(__builtin_return_address(0))) { \
    ++global().passed[counter];                            \
    return own_call;                                       \
  }

SPC_EXPORT int MPI_Neighbor_allgather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt,
                                      MPI_Comm comm) {
  return allgather_call(0, kBlocking, sb, sc, st, rb, rc, rt, comm, nullptr,
                        [&] { return PMPI_Neighbor_allgather(sb, sc, st, rb, rc, rt, comm); });
}

SPC_EXPORT int MPI_Ineighbor_allgather(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt,
                                       MPI_Comm comm, MPI_Request* req) {
  const auto own = [&] { return PMPI_Ineighbor_allgather(sb, sc, st, rb, rc, rt, comm, req); };
  SPC_FORTRAN_BINDING_PASSES(2, own());
  return allgather_call(2, kNonblocking, sb, sc, st, rb, rc, rt, comm, req, own);
}

SPC_EXPORT int MPI_Neighbor_alltoall(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt,
                                     MPI_Comm comm) {
  return alltoall_call(1, kBlocking, sb, sc, st, rb, rc, rt, comm, nullptr,
                       [&] { return PMPI_Neighbor_alltoall(sb, sc, st, rb, rc, rt, comm); });
}

SPC_EXPORT int MPI_Ineighbor_alltoall(const void* sb, int sc, MPI_Datatype st, void* rb, int rc, MPI_Datatype rt,
                                      MPI_Comm comm, MPI_Request* req) {
  const auto own = [&] { return PMPI_Ineighbor_alltoall(sb, sc, st, rb, rc, rt, comm, req); };
  SPC_FORTRAN_BINDING_PASSES(8, own());
  return alltoall_call(8, kNonblocking, sb, sc, st, rb, rc, rt, comm, req, own);
}

SPC_EXPORT int MPI_Neighbor_allgatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int rc[],
                                       const int rd[], MPI_Datatype rt, MPI_Comm comm) {
  return allgatherv_call(4, kBlocking, sb, sc, st, rb, rc, rd, rt, comm, nullptr,
                         [&] { return PMPI_Neighbor_allgatherv(sb, sc, st, rb, rc, rd, rt, comm); });
}

SPC_EXPORT int MPI_Ineighbor_allgatherv(const void* sb, int sc, MPI_Datatype st, void* rb, const int rc[],
                                        const int rd[], MPI_Datatype rt, MPI_Comm comm, MPI_Request* req) {
  const auto own = [&] { return PMPI_Ineighbor_allgatherv(sb, sc, st, rb, rc, rd, rt, comm, req); };
  SPC_FORTRAN_BINDING_PASSES(6, own());
  return allgatherv_call(6, kNonblocking, sb, sc, st, rb, rc, rd, rt, comm, req, own);
}

SPC_EXPORT int MPI_Neighbor_alltoallv(const void* sb, const int sc[], const int sd[], MPI_Datatype st, void* rb,
                                      const int rc[], const int rd[], MPI_Datatype rt, MPI_Comm comm) {
  return alltoallv_call(5, kBlocking, sb, sc, sd, st, rb, rc, rd, rt, comm, nullptr,
                        [&] { return PMPI_Neighbor_alltoallv(sb, sc, sd, st, rb, rc, rd, rt, comm); });
}

SPC_EXPORT int MPI_Ineighbor_alltoallv(const void* sb, const int sc[], const int sd[], MPI_Datatype st, void* rb,
                                       const int rc[], const int rd[], MPI_Datatype rt, MPI_Comm comm,
                                       MPI_Request* req) {
  const auto own = [&] { return PMPI_Ineighbor_alltoallv(sb, sc, sd, st, rb, rc, rd, rt, comm, req); };
  SPC_FORTRAN_BINDING_PASSES(10, own());
  return alltoallv_call(10, kNonblocking, sb, sc, sd, st, rb, rc, rd, rt, comm, req, own);
}

// The persistent neighborhood collectives (MPI-4 section 6.13), under each spelling this MPI
// has (found by compiling against it, cmake/SparsecommMpi.cmake); each passes what it does not
// handle to the PMPI_ entry of the same spelling. One definition serves both spellings: the
// macro's X is the prefix (MPI or MPIX), so the four functions cannot drift apart.
#define SPC_PERSISTENT_NEIGHBOR_COLLECTIVES(X)                                                                    \
  SPC_EXPORT int X##_Neighbor_allgather_init(const void* sb, int sc, MPI_Datatype st, void* rb, int rc,          \
                                             MPI_Datatype rt, MPI_Comm comm, MPI_Info info, MPI_Request* req) { \
    const auto own = [&] { return P##X##_Neighbor_allgather_init(sb, sc, st, rb, rc, rt, comm, info, req); };   \
    SPC_FORTRAN_BINDING_PASSES(3, own());                                                                       \
    return allgather_call(3, kPersistent, sb, sc, st, rb, rc, rt, comm, req, own);                              \
  }                                                                                                             \
  SPC_EXPORT int X##_Neighbor_alltoall_init(const void* sb, int sc, MPI_Datatype st, void* rb, int rc,           \
                                            MPI_Datatype rt, MPI_Comm comm, MPI_Info info, MPI_Request* req) {  \
    const auto own = [&] { return P##X##_Neighbor_alltoall_init(sb, sc, st, rb, rc, rt, comm, info, req); };    \
    SPC_FORTRAN_BINDING_PASSES(9, own());                                                                       \
    return alltoall_call(9, kPersistent, sb, sc, st, rb, rc, rt, comm, req, own);                               \
  }                                                                                                             \
  SPC_EXPORT int X##_Neighbor_allgatherv_init(const void* sb, int sc, MPI_Datatype st, void* rb, const int rc[], \
                                              const int rd[], MPI_Datatype rt, MPI_Comm comm, MPI_Info info,    \
                                              MPI_Request* req) {                                               \
    const auto own = [&] { return P##X##_Neighbor_allgatherv_init(sb, sc, st, rb, rc, rd, rt, comm, info, req); }; \
    SPC_FORTRAN_BINDING_PASSES(7, own());                                                                       \
    return allgatherv_call(7, kPersistent, sb, sc, st, rb, rc, rd, rt, comm, req, own);                         \
  }                                                                                                             \
  SPC_EXPORT int X##_Neighbor_alltoallv_init(const void* sb, const int sc[], const int sd[], MPI_Datatype st,    \
                                             void* rb, const int rc[], const int rd[], MPI_Datatype rt,         \
                                             MPI_Comm comm, MPI_Info info, MPI_Request* req) {                  \
    const auto own = [&] {                                                                                      \
      return P##X##_Neighbor_alltoallv_init(sb, sc, sd, st, rb, rc, rd, rt, comm, info, req);                  \
    };                                                                                                          \
    SPC_FORTRAN_BINDING_PASSES(11, own());                                                                      \
    return alltoallv_call(11, kPersistent, sb, sc, sd, st, rb, rc, rd, rt, comm, req, own);                     \
  }

#ifdef SPARSECOMM_HAVE_MPI4_NEIGHBOR_INIT
SPC_PERSISTENT_NEIGHBOR_COLLECTIVES(MPI)  // MPI-4's names (MPICH 4, Open MPI 5)
#endif
#ifdef SPARSECOMM_HAVE_MPIX_NEIGHBOR_INIT
SPC_PERSISTENT_NEIGHBOR_COLLECTIVES(MPIX)  // Open MPI 4.1's names (its pcollreq extension)
#endif
