// The deferred agreement of a neighborhood alltoallv init (docs/architecture.md, "Deferred
// agreement").
//
// Every rank posts one non-blocking reduction (iallreduce_max_sum) on the communicator's
// library duplicate: the lowest rank that failed its local checks, the hash of the options
// (max of h and of ~h), and the sums of the edge hashes from both ends (neighbor lists; and
// per edge its count and ids). A rank that failed, or takes a path that needs agreement
// before going on, settles at once; a rank on the direct path settles at its first start
// (or at free). Settling a failure hands the lowest failing rank's coded message to every
// rank (that rank sends it to each of the others, on the request's tag), so every rank
// reports the same error: the failing ranks at init, the others at the first SPC_Start (or
// at SPC_Request_free). Nobody waits in a collective that another rank has left: each rank
// posts the reduction exactly once, whatever path it takes. From a communicator's fifth
// init on, the reduction is one of four persistent ones kept per library duplicate
// (AgreementSlots), started instead of posted anew: an MPI_Start is much cheaper than
// building an MPI_Iallreduce's schedule each time.
//
// In the SMPI build nothing is posted at init (kDeferReduction): SimGrid 3.32's
// non-blocking collectives are no reductions to rely on (its MPI_Ibarrier lets ranks leave
// early, ../shared/simgrid/NOTES.md; its MPI_Iallreduce sends one message to every rank).
// The init records its contribution on the communicator (AgreementSlots::defer) and
// returns; the first settle of any agreement of that communicator (a first start, a free,
// an init that settles at once) completes every recorded one up to it, in init order, each
// by one blocking allreduce. Every rank records the same agreements in the same order (the
// inits are collective), so the reductions match; what this build asks more than MPI is
// that the first starts and frees of one communicator's requests be reached in an order
// consistent with the other collectives on it, as a blocking collective would be.
#include <deque>
#include <string>
#include <vector>

#include "capi_internal.hpp"

namespace sparsecomm::capi {

#ifdef SPARSECOMM_SMPI
constexpr bool kDeferReduction = true;
#else
constexpr bool kDeferReduction = false;
#endif

// One persistent reduction of AgreementSlots (below).
struct AgreementSlot {
  MaxSum in, out;
  MPI_Request req = MPI_REQUEST_NULL;
  Agreement* owner = nullptr;  // whose reduction it runs, until completed
};

// The persistent reductions of a library duplicate's agreements: kSlots persistent
// allreduces (allreduce_max_sum_init), used by the inits numbered kFirst and later, init k
// on slot k % kSlots. Every rank makes the same inits in the same order (they are
// collective), so every rank starts slot s for the same agreement, and each slot's
// persistent collective is started in the same order everywhere. A slot still running for
// agreement k - kSlots (its request not started yet, so not settled) is completed first and
// its result handed to that agreement (take): that wait ends once every rank has made init
// k - kSlots, which each did before its init k. Created on first use on the communicator
// (local); each slot's persistent request is made (collectively) at its first use. Where
// the MPI has no persistent collectives, every agreement posts its MPI_Iallreduce.
class AgreementSlots {
 public:
  static constexpr uint64_t kFirst = 4;  // a communicator's first inits: MPI_Iallreduce, no slot made
  static constexpr size_t kSlots = 4;
  using Slot = AgreementSlot;
  explicit AgreementSlots(std::shared_ptr<const Comm> lib) : lib_(std::move(lib)) {}
  AgreementSlots(const AgreementSlots&) = delete;
  AgreementSlots& operator=(const AgreementSlots&) = delete;
  ~AgreementSlots() {  // every agreement holds this: none is running when it goes
    for (Slot& sl : slots_)
      if (sl.req != MPI_REQUEST_NULL) MPI_Request_free(&sl.req);
  }
  // Starts agreement `owner`'s reduction of `mine` on its slot, or returns null (an early
  // init, or no persistent collectives): then the agreement posts its own.
  Slot* start(uint64_t sequence, Agreement* owner, const MaxSum& mine) {
    if (sequence < kFirst || !available_) return nullptr;
    Slot& sl = slots_[sequence % kSlots];
    if (sl.req == MPI_REQUEST_NULL) {
      if (!allreduce_max_sum_init(lib_->get(), &sl.in, &sl.out, &sl.req)) {
        available_ = false;  // alike on every rank: a property of the MPI
        return nullptr;
      }
    } else if (sl.owner) {
      SPC_MPI(MPI_Wait(&sl.req, MPI_STATUS_IGNORE));  // persistent: stays, inactive
      sl.owner->take(sl.out);
      sl.owner = nullptr;
    }
    sl.in = mine;
    SPC_MPI(MPI_Start(&sl.req));
    sl.owner = owner;
    return &sl;
  }
  // Completes the slot's reduction for its owner.
  void finish(Slot* sl, MaxSum* all) {
    SPC_MPI(MPI_Wait(&sl->req, MPI_STATUS_IGNORE));
    *all = sl->out;
    sl->owner = nullptr;
  }

  // kDeferReduction: agreement `owner` (init `sequence`) is completed later, by
  // complete_through.
  void defer(uint64_t sequence, Agreement* owner) { deferred_.emplace_back(sequence, owner); }
  // Completes every deferred agreement up to init `sequence`, oldest first (one blocking
  // allreduce each, the same sequence on every rank), handing each its result.
  void complete_through(uint64_t sequence) {
    while (!deferred_.empty() && deferred_.front().first <= sequence) {
      Agreement* a = deferred_.front().second;
      deferred_.pop_front();
      a->take(allreduce_max_sum(lib_->get(), a->contribution()));
    }
  }

 private:
  std::shared_ptr<const Comm> lib_;  // outlives the requests made on it
  Slot slots_[kSlots];
  bool available_ = true;
  std::deque<std::pair<uint64_t, Agreement*>> deferred_;  // init order; each removed before its agreement goes
};

std::shared_ptr<AgreementSlots> comm_agreement_slots(MPI_Comm comm, const std::shared_ptr<const Comm>& lib) {
  struct Slots {  // kept on the communicator; the agreements share it (and through it the duplicate)
    std::shared_ptr<AgreementSlots> p;
  };
  Slots& slots = comm_attached<Slots>(comm);
  if (!slots.p) slots.p = std::make_shared<AgreementSlots>(lib);
  return slots.p;
}

Agreement::Agreement(MPI_Comm lib, int tag, Local mine, std::shared_ptr<AgreementSlots> slots, uint64_t sequence)
    : lib_(lib), tag_(tag), error_(std::move(mine.error)) {
  me_ = comm_rank(lib), p_ = comm_size(lib);
  h_ = mine.options;
  mine_.max[0] = error_.empty() ? 0 : static_cast<uint64_t>(p_ - me_);  // max: the lowest failing rank
  mine_.max[1] = h_, mine_.max[2] = ~h_;
  mine_.sum[0] = mine.lists_out, mine_.sum[1] = mine.lists_in;
  mine_.sum[2] = mine.exact_out, mine_.sum[3] = mine.exact_in;
  if (kDeferReduction && slots) {
    slots->defer(sequence, this);
    slots_ = std::move(slots);
    sequence_ = sequence;
    deferred_ = true;
  } else if (slots && (slot_ = slots->start(sequence, this, mine_)) != nullptr) {
    slots_ = std::move(slots);
  } else {
    iallreduce_max_sum(lib_, &mine_, &all_, &req_);
  }
}

void Agreement::settle() {
  if (!settled_) {
    settled_ = true;
    if (deferred_) {
      slots_->complete_through(sequence_);
    } else if (slot_) {
      slots_->finish(slot_, &all_);
      slot_ = nullptr;
    } else {
      SPC_MPI(MPI_Wait(&req_, MPI_STATUS_IGNORE));  // (MPI_REQUEST_NULL once a slot's result was taken)
    }
    judge();
  }
  if (!error_.empty()) throw InputError(error_);
}

void Agreement::judge() {
  if (all_.max[0] != 0) {
    error_ = lowest_failure(p_ - static_cast<int>(all_.max[0]));
  } else if (all_.max[1] != h_ || all_.max[2] != ~h_) {  // alike everywhere, see make_plan
    error_ = coded(SPC_ERR_MISMATCH,
                   "ranks passed different sparsecomm_* options (backend, regions, SDDE, ...) or datatype sizes, "
                   "or set SPARSECOMM_CHECK_COLLECTIVE_ARGS differently");
  } else if (all_.sum[0] != all_.sum[1]) {
    error_ = coded(SPC_ERR_MISMATCH, kListsMismatch);
  } else if (all_.sum[2] != all_.sum[3]) {
    error_ = coded(SPC_ERR_MISMATCH,
                   "inconsistent counts: on some edge the sender's sendcounts differ from the receiver's recvcounts "
                   "(or, _ext, the global ids sent differ from those expected, in value or order); "
                   "SPARSECOMM_CHECK_COLLECTIVE_ARGS=1 names the edge");
  }
}

std::string Agreement::lowest_failure(int lowest) {
  if (me_ == lowest) {
    std::vector<MPI_Request> reqs(static_cast<size_t>(p_ - 1), MPI_REQUEST_NULL);
    for (int r = 0, k = 0; r < p_; ++r)
      if (r != me_)
        SPC_MPI(MPI_Isend(error_.data(), static_cast<int>(error_.size()), MPI_CHAR, r, tag_, lib_,
                          &reqs[static_cast<size_t>(k++)]));
    wait_all(reqs);
    return error_;
  }
  MPI_Status st;
  SPC_MPI(MPI_Probe(lowest, tag_, lib_, &st));
  int n = 0;
  SPC_MPI(MPI_Get_count(&st, MPI_CHAR, &n));
  std::string m(static_cast<size_t>(n), '\0');
  SPC_MPI(MPI_Recv(m.data(), n, MPI_CHAR, lowest, tag_, lib_, MPI_STATUS_IGNORE));
  return m;
}

}  // namespace sparsecomm::capi
