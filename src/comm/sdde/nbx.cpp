#include "comm/sdde/common.hpp"

namespace sparsecomm {
namespace detail {

// NBX (Hoefler, Siebert, Lumsdaine 2010): synchronous sends complete only once matched,
// so when all of mine are done I enter a non-blocking barrier; when the barrier completes
// every rank's sends have been matched, hence every message has been received.
// A rank whose input failed the checks (`err` not empty) sends nothing and enters the
// barrier at once with its error flag; the barrier (a non-blocking reduction of the flags,
// NonblockingBarrier) completes only after every rank's sends were matched, so nobody is
// left waiting, and then every rank knows whether one failed: all raise that error
// (agree). The success path runs no collective beyond the barrier itself.
// `failed_out`: as for personalized() (what arrived is dropped).
// `shared`: another barrier than NonblockingBarrier's messages — where the communicator
// lies within one node, its shared window's flags (each rank publishes its arrival and
// failure flag; the barrier completes when every rank's has arrived), which also counts
// receipts, so the sends there are plain ones (NbxBarrier::receipts); across nodes,
// the nodes' windows and one message per pair of nodes (Sdde::node_barrier), with
// receipts for the messages within a node.

namespace {
// The barrier by messages: a non-blocking reduction of the flags on the exchange's
// communicator. Its messages use a tag range of their own (data tags are 1000..3047):
// never matched by NBX's probe, nor by a later exchange.
class MessageBarrier : public NbxBarrier {
 public:
  MessageBarrier(MPI_Comm comm, int tag) : comm_(comm), tag_(tag) {}
  void arrive(bool failed) override { b_ = std::make_unique<NonblockingBarrier>(comm_, tag_, failed ? 1 : 0); }
  bool test(bool* any_failed) override {
    if (!b_->test()) return false;
    *any_failed = b_->flag() != 0;
    return true;
  }

 private:
  MPI_Comm comm_;
  int tag_;
  std::unique_ptr<NonblockingBarrier> b_;
};
}  // namespace

void nbx(const Channel& ch, const Outbox& send, const std::string& err, Delivery& into, bool* failed_out,
         NbxBarrier* shared) {
  MessageBarrier by_messages(ch.comm, ch.tag + 4096);
  NbxBarrier& barrier = shared ? *shared : by_messages;
  // Where the barrier confirms receipts, those sends need not be synchronous: "matched" is
  // then "reported received" (below), and their requests complete before returning.
  std::vector<MPI_Request> reqs, plain;  // synchronous sends; plain ones
  for (size_t i = 0; err.empty() && i < send.size(); ++i) {
    const bool by_receipt = barrier.receipts(send.ranks[i]);
    std::vector<MPI_Request>& into_reqs = by_receipt ? plain : reqs;
    into_reqs.emplace_back();
    post_send(ch, send, i, !by_receipt, &into_reqs.back());
  }
  barrier.expect(plain.size());
  Inbox got;
  bool arrived = false, any_failed = false;
  while (true) {
    int flag = 0;
    MPI_Status st;
    SPC_MPI(MPI_Iprobe(MPI_ANY_SOURCE, ch.tag, ch.comm, &flag, &st));
    if (flag) {
      receive_probed(ch, st, got);
      if (barrier.receipts(st.MPI_SOURCE)) barrier.received(st.MPI_SOURCE);
      continue;
    }
    if (!arrived) {
      int done = barrier.all_received() ? 1 : 0;
      if (done && !reqs.empty()) SPC_MPI(MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE));
      if (done) barrier.arrive(!err.empty()), arrived = true;
    } else if (barrier.test(&any_failed)) {
      break;
    }
  }
  wait_all(plain);  // every one received already: only their completion
  if (any_failed) {
    if (failed_out) {
      *failed_out = true;
      return;
    }
    agree(ch.comm, err);  // throws on every rank
  }
  got.deliver(into);  // everything is received: a failure here is this rank's alone
}

}  // namespace detail
}  // namespace sparsecomm
