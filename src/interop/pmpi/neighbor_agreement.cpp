// The PMPI layer's agreement before a call, and stepping aside (pmpi_neighbor.cpp: the layer).
#include "interop/pmpi/neighbor_internal.hpp"

namespace sparsecomm::pmpi::neighborhood {

// Collective. The element-wise max over the communicator of `in` (three flags or values),
// with the settings checked at the communicator's first agreement, and at every agreement
// that they are alike on every rank (a hash of them, as its max and minus its min): a bad
// one, or a difference, ends every rank with the same error.
std::array<long long, 3> agree(MPI_Comm comm, const CommPlans& p, const std::array<long long, 3>& in) {
  std::string error;
  if (!p.checked && !global().disabled) error = check_settings(p.settings, comm_size(comm));
  const long long mine[6] = {in[0], in[1], in[2], error.empty() ? 0 : 1, p.shared_hash, -p.shared_hash};
  long long out[6];
  PMPI_Allreduce(mine, out, 6, MPI_LONG_LONG, MPI_MAX, comm);
  if (out[3] || out[4] != -out[5]) {  // every rank ends with the same message
    std::string message = error;
    try {
      if (out[3]) sparsecomm::agree(comm, error);  // the first failing rank's, thrown (core agree())
      message = settings_differ(comm, shared_settings(p.settings, global().disabled),
                                std::string(kPerProcessEnvironment) +
                                    ", and the same MPI_Info keys at the communicator's creation");
    } catch (const std::exception& e) {  // (or an MPI error under MPI_ERRORS_RETURN)
      message = out[3] ? e.what() : std::string("settings differ between ranks (which ones: ") + e.what() + ")";
    }
    interop::exit_on_every_rank(comm, kWho, message);
  }
  p.checked = true;
  return {out[0], out[1], out[2]};
}

// Disabled, no topology, a hinted communicator that has agreed (its choice, or *broken when
// the local signature `local` differs), a non-blocking call (local in MPI: no agreement).
// An alltoall(v) whose lists name a rank twice cannot (local = -1): MPI pairs those.
Prologue prologue(MPI_Comm comm, Kind k, int64_t local, Mode mode, bool* broken) {
  Global& g = global();
  Prologue r;
  *broken = false;
  r.done = true;
  if (g.world_rank < 0) PMPI_Comm_rank(MPI_COMM_WORLD, &g.world_rank);
  if (g.disabled) {
    // Every call is MPI's own; but where the layer would agree (the first blocking or
    // persistent call on a communicator it can serve) this rank agrees too, so that ranks
    // where the layer is on (SPARSECOMM_MPI_DISABLE set on some ranks only) learn of the
    // difference there instead of waiting in that agreement while this rank is in MPI's call.
    if (mode == kNonblocking) return r;
    const std::shared_ptr<CommPlans> p = plans_of(g, comm);
    if (p->usable && !p->checked) agree(comm, *p, {1, 0, 0});  // (1: this rank cannot; MPI's own)
    return r;
  }
  r.p = plans_of(g, comm);
  r.settled = true;
  if (!r.p->usable) return r;  // the same on every rank: a property of the communicator
  if (!r.p->nb.pairs_unique && (k == kAlltoall || k == kAlltoallv)) local = -1;
  r.local = local;
  const CommPlans::Agreed& a = r.p->agreed[k];
  if (r.p->settings.fixed && mode != kPersistent && a.valid) {
    *broken = local != a.local;
    r.choice = a.choice;
    r.settled = !*broken;
    return r;
  }
  if (r.p->all_mpi) return r;  // (done: MPI's own, settled)
  r.settled = false;
  if (mode == kNonblocking) {
    if (!r.p->checked) {
      if (const std::string e = check_settings(r.p->settings, comm_size(comm)); !e.empty())
        interop::exit_on_every_rank(comm, kWho, e, false);
      r.p->checked = true;
    }
    return r;
  }
  r.done = false;
  return r;
}

// Stepping aside without paying for it. Without the fixed-counts hint every blocking call
// agrees first (one allreduce over the communicator; its cost: experiments/pmpi/README.md),
// also where the agreement's outcome is that the library does nothing: MPI's own
// call (auto's choice, or a call some rank cannot run) or nothing to move. Under auto, once
// kAsideAfter agreements in a row on a communicator and function ran no plan, the calls go
// to MPI's own without agreeing, and only every gap-th call agrees (the gap doubling from
// kAsideFirstGap to kAsideMaxGap while the outcome stays the same); an agreement that
// builds or finds a plan ends it. Safe because MPI's own is right for any arguments and
// every rank skips the same calls: MPI orders a communicator's blocking collectives alike
// on every rank, so the calls are counted alike (the non-blocking and persistent forms
// never pass here). The cost: after a change that would take a plan (another block size,
// a contiguous type again), up to gap - 1 calls still run MPI's own — a speed-up missed for
// a while, never a slow-down — while each agreement kept costs an allreduce, which across
// the emulated nodes was still a visible share of a small SpMM's exchanges at a gap of 128
// (experiments/pmpi/README.md and its git history), hence the gap's growth to 1024. Forced backends
// agree at every call (the user asked for the backend).
constexpr int kAsideAfter = 2;
constexpr int64_t kAsideFirstGap = 8, kAsideMaxGap = 1024;

bool steps_aside(const CommPlans& p, Mode mode) {
  return mode == kBlocking && !p.settings.fixed && p.settings.backend == "auto";
}

// True where this call runs MPI's own without agreeing (skipping, and not the gap-th call).
bool skip_agreement(CommPlans& p, Kind k) {
  CommPlans::Aside& a = p.aside[k];
  return a.skipping && --a.left > 0;
}

// After an agreement whose outcome ran a plan (`plan`) or not.
void note_outcome(CommPlans& p, MPI_Comm comm, Kind k, bool plan) {
  CommPlans::Aside& a = p.aside[k];
  if (plan) {
    if (a.skipping) report(p, comm, k, "any blocks", "a plan again: agreeing at every call");
    a = CommPlans::Aside{};
    return;
  }
  if (a.skipping) {
    a.gap = std::min(2 * a.gap, kAsideMaxGap);
  } else if (++a.run >= kAsideAfter) {
    a.skipping = true;
    a.gap = kAsideFirstGap;
    report(p, comm, k, "any blocks",
           "MPI's own " + std::to_string(kAsideAfter) + " times in a row: stepping aside, agreeing every " +
               std::to_string(kAsideFirstGap) + "th to " + std::to_string(kAsideMaxGap) + "th call");
  } else {
    return;
  }
  a.left = a.gap;
}

// What decide() and decide_v() do around their agreement. Before it: false where this call
// skips it (stepping aside), else counted, with whether the choices built now are charged
// for it (auto's blocking calls without the hint).
bool before_agreement(CommPlans& p, Kind k, Mode mode) {
  const bool aside = steps_aside(p, mode);
  if (aside && skip_agreement(p, k)) return false;
  ++global().agreements[k];
  p.charge_agreement = aside;
  return true;
}
// After it: the outcome counted toward stepping aside (a fresh choice awaiting its trial is
// counted by dispatch()), and a declined choice is MPI's own.
std::shared_ptr<Choice> after_agreement(CommPlans& p, MPI_Comm comm, Kind k, Mode mode,
                                        const std::shared_ptr<Choice>& c) {
  if (steps_aside(p, mode) && !(c && c->needs_trial)) note_outcome(p, comm, k, c && !c->nothing && !c->declined);
  return c && c->declined ? nullptr : c;
}

// Collective (right after an agreement, alike on every rank). At the first agreement of
// auto's blocking calls without the hint on a communicator, whether its calls (all four
// functions, blocking or not) go through the one-node exchange from now on: every rank on
// one node (then shared windows exist) and one_node=exchange (the default).
// True when it was set up now (this call is then MPI's own).
bool starts_node_exchange(CommPlans& p, MPI_Comm comm, Kind k, Mode mode) {
  if (p.node_decided || !steps_aside(p, mode)) return false;
  p.node_decided = true;
  if (p.settings.one_node != "exchange" || !shm_whole_node(p, comm)) return false;
  try {
    p.node = NodeExchange::create(comm, p.nb.sources, p.nb.destinations, p.settings.shm_block_max,
                                  p.settings.node_area);
  } catch (const std::exception& e) {  // (MPI errors of the set-up: alike on every rank)
    fail(e.what());
  }
  if (!p.node) return false;
  report(p, comm, k, "any blocks",
         "auto: one node: the one-node exchange for every call (sizes carried in the shared window, no "
         "agreement per call)");
  return true;
}

// The agreed choice of an allgather or alltoall call, or null for MPI's own. `local`: this
// rank's block bytes, or -1 when it cannot run the call through a plan. One allreduce of
// {cannot, -bytes, bytes}: every rank can, with one block size. Sets *broken when a hinted
// communicator's call breaks the promise of fixed counts, and *shortcut (above).
std::shared_ptr<Choice> decide(MPI_Comm comm, Kind k, int64_t local, Mode mode, bool* broken,
                               Shortcut* shortcut) {
  const Prologue pre = prologue(comm, k, local, mode, broken);
  if (pre.done) {
    shortcut->settled = pre.settled;
    return pre.choice;
  }
  CommPlans& p = *pre.p;
  local = pre.local;
  if (!before_agreement(p, k, mode)) {  // stepping aside: MPI's own
    shortcut->aside = &p;
    return nullptr;
  }
  const auto out = agree(comm, p, {local < 0 ? 1 : 0, -local, local});
  p.all_mpi = p.settings.backend == "mpi" && !p.settings.fixed;  // (the hint's checks need every first call)
  if (starts_node_exchange(p, comm, k, mode)) return nullptr;  // this call MPI's own; every later one through it
  std::shared_ptr<Choice> c;
  if (!out[0] && -out[1] == out[2]) {  // every rank can, with one block size
    try {
      if (mode == kPersistent) {
        c = build_choice(p, comm, k, local);  // the request's own plan
      } else {
        c = p.cache[k].get(local, [&] { return build_choice(p, comm, k, local); });
      }
    } catch (const std::exception& e) {  // plan set-up failed on every rank alike (agreed errors)
      fail(e.what());
    }
  }
  if (p.settings.fixed && mode != kPersistent) p.agreed[k] = {true, local, c};
  return after_agreement(p, comm, k, mode, c);
}

}  // namespace sparsecomm::pmpi::neighborhood
