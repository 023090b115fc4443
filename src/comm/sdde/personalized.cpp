#include <climits>

#include "comm/sdde/common.hpp"

namespace sparsecomm {
namespace detail {

namespace {
// The personalized exchange's one counter per rank (personalized() below): the sum over
// every rank of its flag for me — 1 for a message to me, P + 1 from a rank that failed.
int64_t reduce_counters(const Channel& ch, const Outbox& send, bool failed, int p) {
  const int64_t base = static_cast<int64_t>(p) + 1;
  int64_t v = 0;
  if (static_cast<int64_t>(p) * base + p <= INT_MAX) {  // int counters, as long as the sum fits
    std::vector<int> flags(static_cast<size_t>(p), failed ? static_cast<int>(base) : 0);
    for (size_t i = 0; !failed && i < send.size(); ++i) flags[static_cast<size_t>(send.ranks[i])] = 1;
    int mine = 0;
    SPC_MPI(MPI_Reduce_scatter_block(flags.data(), &mine, 1, MPI_INT, MPI_SUM, ch.comm));
    v = mine;
  } else {
    std::vector<int64_t> flags(static_cast<size_t>(p), failed ? base : 0);
    for (size_t i = 0; !failed && i < send.size(); ++i) flags[static_cast<size_t>(send.ranks[i])] = 1;
    SPC_MPI(MPI_Reduce_scatter_block(flags.data(), &v, 1, MPI_INT64_T, MPI_SUM, ch.comm));
  }
  return v;
}

#ifdef SPARSECOMM_SMPI
// personalized()'s receipt of its `nrecv` messages into `into` under SMPI; a failed
// delivery is returned, for the caller to raise once its own sends completed.
// SimGrid's MPI_Probe is a polling loop (an iprobe plus a simulated sleep per poll), and
// its host cost grows faster than linearly with the ranks polling at once. So under SMPI
// each message is announced by its size (one int64, tag + 8192; the data tags are
// 1000..3047 and the barrier's 5096..7143): a blocking receive from MPI_ANY_SOURCE waits
// without polling. These headers are real simulated messages but are not counted in
// Stats, which describe the exchange itself (the same in both builds).
std::exception_ptr receive_announced(const Channel& ch, const Outbox& send, int nrecv, Delivery& into) {
  std::exception_ptr failure;
  Inbox got;
  std::vector<int64_t> sizes(send.size());
  std::vector<MPI_Request> hreqs(send.size());
  for (size_t i = 0; i < send.size(); ++i) {
    sizes[i] = send.len[i];
    SPC_MPI(MPI_Isend(&sizes[i], 1, MPI_INT64_T, send.ranks[i], ch.tag + 8192, ch.comm, &hreqs[i]));
  }
  // Each receive is posted as soon as its header arrives, into a buffer of its own (the
  // Inbox may move while receives are pending), then collected.
  std::vector<MPI_Request> rreqs(static_cast<size_t>(nrecv));
  std::vector<std::pair<int, std::vector<char>>> pending;
  pending.reserve(static_cast<size_t>(nrecv));
  for (int k = 0; k < nrecv; ++k) {
    int64_t n = 0;
    MPI_Status st;
    SPC_MPI(MPI_Recv(&n, 1, MPI_INT64_T, MPI_ANY_SOURCE, ch.tag + 8192, ch.comm, &st));
    pending.emplace_back(st.MPI_SOURCE, std::vector<char>(static_cast<size_t>(n)));
    SPC_MPI(MPI_Irecv(pending.back().second.data(), static_cast<int>(n), MPI_BYTE, st.MPI_SOURCE, ch.tag, ch.comm,
                      &rreqs[static_cast<size_t>(k)]));
    if (ch.stats) ch.stats->record_recv(ch.step, ch.intra(st.MPI_SOURCE), n);
  }
  wait_all(nrecv, rreqs.data());
  wait_all(hreqs);
  for (auto& [src, buf] : pending)
    if (!buf.empty()) std::memcpy(got.append(src, static_cast<int64_t>(buf.size())), buf.data(), buf.size());
    else got.append(src, 0);
  try {
    got.deliver(into);
  } catch (...) {
    failure = std::current_exception();
  }
  return failure;
}
#else
// personalized()'s receipt of its `nrecv` messages into `into`; a failed allocation is
// returned (the messages still received, and dropped), for the caller to raise once its own
// sends completed.
// Matched probes first (MPI_Mprobe takes each message out of the matching queue with its
// source and size), then the total is known: one allocation, and every message is
// received straight into its place in source order. No copy of our own.
std::exception_ptr receive_in_place(const Channel& ch, int nrecv, Delivery& into) {
  std::exception_ptr failure;
  struct Probed {
    int src;
    int n;
    MPI_Message msg;
  };
  std::vector<Probed> in(static_cast<size_t>(nrecv));
  for (auto& m : in) {
    MPI_Status st;
    SPC_MPI(MPI_Mprobe(MPI_ANY_SOURCE, ch.tag, ch.comm, &m.msg, &st));
    SPC_MPI(MPI_Get_count(&st, MPI_BYTE, &m.n));
    m.src = st.MPI_SOURCE;
    if (ch.stats) ch.stats->record_recv(ch.step, ch.intra(m.src), m.n);
  }
  std::stable_sort(in.begin(), in.end(), [](const Probed& a, const Probed& b) { return a.src < b.src; });
  into.restart(in.size());
  for (const auto& m : in) into.add(m.src, m.n);
  char* out = nullptr;
  try {
    out = into.allocate(into.offsets.back());
  } catch (...) {
    failure = std::current_exception();
  }
  std::vector<MPI_Request> rreqs(in.size(), MPI_REQUEST_NULL);
  std::vector<std::vector<char>> drain(failure ? in.size() : 0);  // no room: received and dropped
  for (size_t k = 0; k < in.size(); ++k) {
    char* at = !failure ? out + into.offsets[k] : (drain[k].resize(static_cast<size_t>(in[k].n)), drain[k].data());
    SPC_MPI(MPI_Imrecv(at, in[k].n, MPI_BYTE, &in[k].msg, &rreqs[k]));
  }
  wait_all(rreqs);
  return failure;
}
#endif
}  // namespace

// Personalized exchange: MPI_Reduce_scatter_block over 0/1 flags tells each rank how many
// messages to expect; then it takes exactly that many with matched probes and receives
// them straight into the caller's result (Delivery), in source order. The same single counter per
// rank carries the error flag (`err` not empty: this rank's input failed the checks, and it
// sends nothing): a failed rank adds P + 1 to every rank's counter, so the sum v tells every
// rank, before anyone sends, both v mod (P + 1) messages to expect and v / (P + 1) failed
// ranks — and all raise that error (agree: the failure path's own collectives). The success
// path runs no collective beyond the reduction, whose payload stays one counter per rank
// (the simulated cost at thousands of ranks grows with it).
// `failed_out`: instead of raising a failure, report it there and return (nothing sent or
// received): the locality-aware exchange carries it on to a second step.
void personalized(const Channel& ch, const Outbox& send, const std::string& err, Delivery& into,
                  bool* failed_out) {
  const int p = comm_size(ch.comm);
  const int64_t base = static_cast<int64_t>(p) + 1;
  const int64_t v = reduce_counters(ch, send, !err.empty(), p);
  if (v / base > 0) {
    if (failed_out) {
      *failed_out = true;
      return;
    }
    agree(ch.comm, err);  // throws on every rank
  }
  const int nrecv = static_cast<int>(v % base);
  std::vector<MPI_Request> reqs;
  post_sends(ch, send, reqs);
  // The sends complete whatever happens here (a failed allocation is this rank's own error,
  // raised after its part of the exchange).
#ifdef SPARSECOMM_SMPI
  const std::exception_ptr failure = receive_announced(ch, send, nrecv, into);
#else
  const std::exception_ptr failure = receive_in_place(ch, nrecv, into);
#endif
  wait_all(reqs);
  if (failure) std::rethrow_exception(failure);
}

#ifndef SPARSECOMM_SMPI
// The personalized exchange where the table of who sends what to whom is read in shared
// memory (`table(&from)`: the reduction of the personalized exchange, with the sizes; true
// if some rank failed) — within one node, RegionWindow::table_messages; across nodes,
// Sdde::node_table. The messages go out at once, while the table is read; then each
// message is received straight into its place in source order, with no probe. A failure
// anywhere: every message is still received (and dropped) before every rank raises it
// (agree: the failing rank's message).
void personalized_by_table(const Channel& ch, const Outbox& send, const std::string& err, Delivery& into,
                           const std::function<bool(std::vector<std::pair<int, int64_t>>*)>& table) {
  std::vector<MPI_Request> reqs;
  if (err.empty()) post_sends(ch, send, reqs);
  std::vector<std::pair<int, int64_t>> from;
  const bool failed = table(&from);
  into.restart(from.size());
  for (const auto& [src, n] : from) into.add(src, n);
  std::exception_ptr failure;
  char* out = nullptr;
  if (!failed) try {
      out = into.allocate(into.offsets.back());  // (may be null for 0 bytes)
    } catch (...) {
      failure = std::current_exception();
    }
  const bool keep = !failed && !failure;
  std::vector<std::vector<char>> drain(keep ? 0 : from.size());  // received and dropped
  std::vector<MPI_Request> rreqs(from.size(), MPI_REQUEST_NULL);
  for (size_t k = 0; k < from.size(); ++k) {
    const auto& [src, n] = from[k];
    char* at = keep ? out + into.offsets[k] : (drain[k].resize(static_cast<size_t>(n)), drain[k].data());
    SPC_MPI(MPI_Irecv(at, static_cast<int>(n), MPI_BYTE, src, ch.tag, ch.comm, &rreqs[k]));
    if (ch.stats) ch.stats->record_recv(ch.step, ch.intra(src), n);
  }
  wait_all(rreqs);
  wait_all(reqs);
  if (failed) agree(ch.comm, err);  // every rank
  if (failure) std::rethrow_exception(failure);
}
#endif

}  // namespace detail
}  // namespace sparsecomm
