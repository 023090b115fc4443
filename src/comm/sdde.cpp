#include "sparsecomm/comm/sdde.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <numeric>
#include <string>
#include <vector>

#include "core/parse.hpp"
#ifndef SPARSECOMM_SMPI
#include "comm/shm_channel.hpp"  // detail::node_of: the node's patience for flag waits
#endif

namespace sparsecomm {
namespace detail {
// NBX's barrier (nbx() below), entered once: arrive(), then test() until every rank arrived.
// A barrier that can also confirm receipts (receipts(rank): messages between this rank and
// `rank` are confirmed through shared memory) lets NBX send those with plain sends: a
// receiver reports each such message it received (received(src)), and a sender arrives
// once all of its such messages of this exchange were reported (all_received(), after
// expect(n) at the start) and its synchronous sends (to the other ranks) completed.
struct NbxBarrier {
  virtual ~NbxBarrier() = default;
  virtual void arrive(bool failed) = 0;
  virtual bool test(bool* any_failed) = 0;  // true once every rank arrived (then *any_failed)
  virtual bool receipts(int) const { return false; }
  virtual void expect(size_t) {}
  virtual void received(int) {}
  virtual bool all_received() const { return true; }
};

namespace {

// A communicator, a tag and where to count: one "step" of an exchange.
struct Channel {
  MPI_Comm comm;
  int tag;
  Stats* stats;
  const char* step;
  std::function<bool(int)> intra;  // peer rank (in `comm`) -> same region as me?
};

// What one exchange receives: messages in arrival order, in chunks that are never moved
// (no zero-fill per message, no copy when more arrive than the first chunk holds), then
// delivered ordered by source with one copy each (deliver()).
class Inbox {
 public:
  /// Where the next message of `n` bytes from `src` goes (stays valid).
  char* append(int src, int64_t n) {
    if (chunks_.empty() || room_ < n) {
      const int64_t cap = std::max<int64_t>(n, std::max<int64_t>(kFirst, 2 * last_cap_));
      chunks_.emplace_back(new char[static_cast<size_t>(cap)]);  // uninitialised: MPI writes it
      last_cap_ = cap, room_ = cap;
    }
    char* at = chunks_.back().get() + (last_cap_ - room_);
    room_ -= n;
    got_.push_back({src, at, n});
    total_ += n;
    return at;
  }
  size_t size() const { return got_.size(); }
  /// Everything received, ordered by source (stable: messages of one source in arrival
  /// order), into the memory into.allocate returns.
  void deliver(Delivery& into) {
    std::stable_sort(got_.begin(), got_.end(), [](const Entry& a, const Entry& b) { return a.src < b.src; });
    into.restart(got_.size());
    char* out = into.allocate(total_);
    for (const Entry& e : got_) {
      if (e.len > 0) std::memcpy(out + into.offsets.back(), e.at, static_cast<size_t>(e.len));
      into.add(e.src, e.len);
    }
  }

 private:
  static constexpr int64_t kFirst = 4096;
  struct Entry {
    int src;
    const char* at;
    int64_t len;
  };
  std::vector<std::unique_ptr<char[]>> chunks_;
  int64_t last_cap_ = 0, room_ = 0, total_ = 0;
  std::vector<Entry> got_;
};

// A Delivery into a ByteMessages (internal steps that read the result themselves).
struct IntoBytes {
  ByteMessages out;
  Delivery d;
  IntoBytes() {
    d.allocate = [this](int64_t n) {
      out.bytes.resize(static_cast<size_t>(n));
      return out.bytes.data();
    };
  }
  ByteMessages take() {
    out.ranks = std::move(d.ranks), out.offsets = std::move(d.offsets);
    return std::move(out);
  }
};

// Message i of `send`, plain or synchronous, counted in the channel's Stats.
void post_send(const Channel& ch, const Outbox& send, size_t i, bool synchronous, MPI_Request* req) {
  char* p = const_cast<char*>(send.ptr[i]);
  const int n = static_cast<int>(send.len[i]);
  if (synchronous) SPC_MPI(MPI_Issend(p, n, MPI_BYTE, send.ranks[i], ch.tag, ch.comm, req));
  else SPC_MPI(MPI_Isend(p, n, MPI_BYTE, send.ranks[i], ch.tag, ch.comm, req));
  if (ch.stats) ch.stats->record_send(ch.step, ch.intra(send.ranks[i]), send.len[i]);
}

void post_sends(const Channel& ch, const Outbox& send, std::vector<MPI_Request>& reqs) {
  reqs.assign(send.size(), MPI_REQUEST_NULL);
  for (size_t i = 0; i < send.size(); ++i) post_send(ch, send, i, false, &reqs[i]);
}

void receive_probed(const Channel& ch, const MPI_Status& st, Inbox& got) {
  int n = 0;
  SPC_MPI(MPI_Get_count(&st, MPI_BYTE, &n));
  SPC_MPI(MPI_Recv(got.append(st.MPI_SOURCE, n), n, MPI_BYTE, st.MPI_SOURCE, ch.tag, ch.comm, MPI_STATUS_IGNORE));
  if (ch.stats) ch.stats->record_recv(ch.step, ch.intra(st.MPI_SOURCE), n);
}

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
                  bool* failed_out = nullptr) {
  const int p = comm_size(ch.comm);
  const int64_t base = static_cast<int64_t>(p) + 1;
  const bool failed = !err.empty();
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
  std::exception_ptr failure;
#ifdef SPARSECOMM_SMPI
  Inbox got;
  // SimGrid's MPI_Probe is a polling loop (an iprobe plus a simulated sleep per poll), and
  // its host cost grows faster than linearly with the ranks polling at once. So under SMPI
  // each message is announced by its size (one int64, tag + 8192; the data tags are
  // 1000..3047 and the barrier's 5096..7143): a blocking receive from MPI_ANY_SOURCE waits
  // without polling. These headers are real simulated messages but are not counted in
  // Stats, which describe the exchange itself (the same in both builds).
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
#else
  // Matched probes first (MPI_Mprobe takes each message out of the matching queue with its
  // source and size), then the total is known: one allocation, and every message is
  // received straight into its place in source order. No copy of our own.
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
#endif
  wait_all(reqs);
  if (failure) std::rethrow_exception(failure);
}

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

void nbx(const Channel& ch, const Outbox& send, const std::string& err, Delivery& into, bool* failed_out = nullptr,
         NbxBarrier* shared = nullptr) {
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

// One-sided exchange of fixed-size messages: each rank owns a window with one slot per
// rank (a flag byte + the payload, padded to 8 bytes); senders put into slot [my rank] of
// the destination between two fences, receivers scan their slots. O(P) memory per rank.
// The window ends with one more slot, the error flag: a rank whose input failed the checks
// (`err` not empty) puts no message but sets that flag in every rank's window (P puts, on
// the failure path only); after the closing fence every rank sees it and all raise that
// error (agree). The success path runs no collective beyond the window's own.
void rma(const Channel& ch, const Outbox& send, int64_t fixed_bytes, const std::string& err, Delivery& into) {
  const int p = comm_size(ch.comm);
  const int me = comm_rank(ch.comm);
  const int64_t slot = (1 + std::max<int64_t>(fixed_bytes, 0) + 7) / 8 * 8;
  const MPI_Aint error_at = static_cast<MPI_Aint>(slot) * p;
  // The window's size a multiple of 16 bytes: MPICH 4.0.2 loses a put at the last 8 bytes of
  // a window whose size is not (the error flag, seen with 4 ranks of 8-byte messages).
  const MPI_Aint window_bytes = (error_at + 8 + 15) / 16 * 16;
  std::vector<char> stage(static_cast<size_t>(slot) * send.size(), 0);
  // MPI_Win_allocate rather than MPI_Win_create: Open MPI 4.1's shared-memory osc
  // component only serves windows whose memory MPI allocates itself.
  char* base = nullptr;
  MPI_Win win;
  SPC_MPI(MPI_Win_allocate(window_bytes, 1, MPI_INFO_NULL, ch.comm, &base, &win));
  std::vector<char> window;
  bool someone_failed = false;
  const char one = 1;
  try {
    std::memset(base, 0, static_cast<size_t>(window_bytes));
    SPC_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    if (!err.empty())
      for (int r = 0; r < p; ++r) SPC_MPI(MPI_Put(&one, 1, MPI_BYTE, r, error_at, 1, MPI_BYTE, win));
    for (size_t i = 0; err.empty() && i < send.size(); ++i) {
      char* s = stage.data() + static_cast<int64_t>(i) * slot;
      s[0] = 1;
      if (fixed_bytes > 0) std::memcpy(s + 1, send.ptr[i], static_cast<size_t>(fixed_bytes));
      SPC_MPI(MPI_Put(s, static_cast<int>(slot), MPI_BYTE, send.ranks[i], static_cast<MPI_Aint>(me) * slot,
                      static_cast<int>(slot), MPI_BYTE, win));
      if (ch.stats) ch.stats->record_send(ch.step, ch.intra(send.ranks[i]), fixed_bytes);
    }
    SPC_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    someone_failed = base[error_at] != 0;
    if (!someone_failed) window.assign(base, base + static_cast<size_t>(slot) * p);
  } catch (...) {
    MPI_Win_free(&win);
    throw;
  }
  SPC_MPI(MPI_Win_free(&win));
  if (someone_failed) agree(ch.comm, err);  // throws on every rank
  into.restart(0);
  for (int r = 0; r < p; ++r)
    if (window[static_cast<size_t>(static_cast<int64_t>(r) * slot)]) {
      into.add(r, fixed_bytes);
      if (ch.stats) ch.stats->record_recv(ch.step, ch.intra(r), fixed_bytes);
    }
  char* out = into.allocate(into.offsets.back());
  for (size_t k = 0; k < into.ranks.size(); ++k)
    if (fixed_bytes > 0)
      std::memcpy(out + into.offsets[k], window.data() + static_cast<int64_t>(into.ranks[k]) * slot + 1,
                  static_cast<size_t>(fixed_bytes));
}

// Records inside locality bundles: header then payload padded to 8 bytes.
struct RecordHeader {
  int32_t src;
  int32_t dest;
  int64_t nbytes;
};

// Bytes a record of an n-byte message takes in a bundle.
size_t record_size(int64_t n) { return sizeof(RecordHeader) + static_cast<size_t>((n + 7) / 8 * 8); }

void append_record(std::vector<char>& buf, int src, int dest, const char* p, int64_t n) {
  RecordHeader h{src, dest, n};
  const size_t at = buf.size();
  const size_t padded = static_cast<size_t>((n + 7) / 8 * 8);
  buf.resize(at + sizeof(h) + padded, 0);
  std::memcpy(buf.data() + at, &h, sizeof(h));
  if (n > 0) std::memcpy(buf.data() + at + sizeof(h), p, static_cast<size_t>(n));
}

template <class F>
void for_each_record(const char* p, int64_t len, F&& f) {
  int64_t pos = 0;
  while (pos < len) {
    RecordHeader h;
    std::memcpy(&h, p + pos, sizeof(h));
    f(h, p + pos + sizeof(h));
    pos += static_cast<int64_t>(sizeof(h)) + (h.nbytes + 7) / 8 * 8;
  }
}

}  // namespace
}  // namespace detail

using detail::ByteMessages;

namespace {
// A function-local static, not a namespace-scope one: tests instantiate parameters from
// Sdde::strategies() during static initialisation, whose order across files is unspecified.
#ifndef SPARSECOMM_SMPI
// The redistribution step of the locality-aware exchange (step 3 below) through an MPI-3
// shared-memory window, where the region lies within one node (MPI_COMM_TYPE_SHARED: the
// real node). A message inside a node is otherwise copied into Open MPI's shared segment
// and out again, and each one is probed and matched; here every rank writes what it has
// for each region member into its own segment once, and each member reads its part
// straight out of the writers' segments (Hoefler et al., "MPI+MPI", Computing 95, 2013,
// for the window; the step is Geyko et al.'s redistribution, done without messages). The
// personalized step's reduction becomes a flag per member in the window: each rank writes
// its records, then [bytes needed, failed] into its header and, last, its round number
// (a release store); each waits until every member's round number has reached this round
// (acquire loads), then reads every header — so all learn that the writes are done (the
// reads may start), whether the segments were large enough and whether any rank's input
// failed, with no MPI call at all on the success path (a barrier of flags: the last
// member to arrive releases the others at once, where an MPI_Allreduce over the region
// takes log2(size) dependent messages, each a wake-up on an oversubscribed node).
//
// Segment of a rank: a header line [round][need, failed per parity] and two buffers of
// `cap_` bytes (double buffering, by the parity of the round), each [total][offset per
// member][length per member][records]. Reuse is safe without a further sync: a rank writes
// buffer and header slot r % 2 in round r only after every member published round r - 1,
// which each did after reading round r - 2's. Memory model: C++ release/acquire on
// lock-free 64-bit atomics in the window (address-free across processes, as the shm
// backends' epochs: comm/shm_channel.hpp), one passive-target epoch
// (MPI_Win_lock_all) for the window's lifetime (the unified model of shared windows,
// MPI-3.1 11.5.5). When some rank needs more than `cap_`, every rank learns it from the
// headers, frees the window and allocates one of twice the largest need (collective),
// writes again and meets once more (MPI_Barrier).
//
// The window lives as long as the region communicator (an attribute, freed in its delete
// callback at MPI_Comm_free: collective over the region, as the window's own free), so the
// temporary Sdde objects of plan set-ups share it. SPARSECOMM_SDDE_WINDOW=0 turns it off
// (agreed over the region at first use, like the node check).
class RegionWindow {
 public:
  /// Collective over `region` at its first call: the region's window, or null when the
  /// region is not within one node (or the window is turned off) — alike on its ranks.
  /// `slot`: which of the region's windows (an exchange that needs two at once, node_window
  /// across nodes, asks for 0 and 1).
  /// $SPARSECOMM_SDDE_WINDOW, a switch (parse_bool's spellings): 1 on (also unset), 0 off,
  /// -1 malformed.
  static int window_switch() {
    const char* env = std::getenv("SPARSECOMM_SDDE_WINDOW");
    bool on = true;
    if (env && *env && !parse_bool(env, on)) return -1;
    return on ? 1 : 0;
  }

  static RegionWindow* of(MPI_Comm region, int slot = 0) {
    static int keyvals[2] = {MPI_KEYVAL_INVALID, MPI_KEYVAL_INVALID};
    int& keyval = keyvals[slot];
    if (keyval == MPI_KEYVAL_INVALID)
      SPC_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &RegionWindow::release, &keyval, nullptr));
    void* v = nullptr;
    int found = 0;
    SPC_MPI(MPI_Comm_get_attr(region, keyval, &v, &found));
    if (found) return static_cast<RegionWindow*>(v);
    MPI_Comm node = MPI_COMM_NULL;
    SPC_MPI(MPI_Comm_split_type(region, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    int within = comm_size(node) == comm_size(region) ? 1 : 0;
    SPC_MPI(MPI_Comm_free(&node));
    // A malformed $SPARSECOMM_SDDE_WINDOW is -1, which the minimum carries to every member as
    // the error.
    const int window = window_switch();
    if (window <= 0) within = window;
    int all = 0;
    SPC_MPI(MPI_Allreduce(&within, &all, 1, MPI_INT, MPI_MIN, region));
    if (all < 0)  // (the failing member's words on every member: agree's error path)
      agree(region, within >= 0 ? "" : std::string("SPARSECOMM_SDDE_WINDOW='") + std::getenv("SPARSECOMM_SDDE_WINDOW") +
                                           "': valid values: 0, off, false, no (messages instead of the "
                                           "shared-memory windows) or 1, on, true, yes (the default)");
    RegionWindow* w = all ? new RegionWindow(region) : nullptr;
    SPC_MPI(MPI_Comm_set_attr(region, keyval, w));
    return w;
  }

  /// Collective over the region (a round): `write(buffer)` fills my buffer of this round
  /// with `need` bytes (called only where they fit), then I publish [need, failed] and the
  /// round, and wait for every member's (no MPI call); when some member needs more, every
  /// member grows the window alike, writes again and meets once more. True if some member
  /// reported `failed` (the buffers are written all the same: a failed member writes what it
  /// has, usually nothing). After it, segment(w) is member w's buffer of this round, until
  /// the next publish().
  template <class Write>
  bool publish(int64_t need, bool failed, Write write) {
    const uint64_t r = ++round_;
    if (need <= cap_) write(my_buffer());
    announce(need, failed);
    int64_t most = 0;
    bool any_failed = false;
    for (int w = 0; w < size_; ++w) {
      const Line* l = line(w);
      for (int i = 0; l->round.load(std::memory_order_acquire) < r; ++i) {
        if (i % 64 == 63) {  // now and then let MPI progress (this rank's own pending traffic)
          int flag = 0;
          SPC_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, MPI_STATUS_IGNORE));
        }
        if (i >= patience_) sched_yield();
      }
      most = std::max(most, l->need[r % 2]);
      any_failed = any_failed || l->failed[r % 2] != 0;
    }
    if (most > cap_) {  // also when some member failed: the others' buffers may still be read (node_table)
      resize(2 * most);
      write(my_buffer());
      SPC_MPI(MPI_Barrier(comm_));
    }
    return any_failed;
  }
  const char* segment(int w) const { return buffer_of(w); }

  /// Collective over the region. Delivers to `keep(header, payload)` every record the
  /// members wrote for me (bundles[i]: my records for member i, already in record format;
  /// my own index's is empty). True if some member reported `failed` (then nothing is read).
  template <class Keep>
  bool exchange(const std::vector<std::vector<char>>& bundles, bool failed, Keep keep) {
    int64_t need = header_bytes();
    for (const auto& v : bundles) need += static_cast<int64_t>(v.size());
    auto write = [&](char* b) {  // [need][offset per member][length per member] records
      auto* h = reinterpret_cast<int64_t*>(b);
      h[0] = need;
      int64_t at = header_bytes();
      for (int i = 0; i < size_; ++i) {
        const auto& v = bundles[static_cast<size_t>(i)];
        h[1 + i] = at, h[1 + size_ + i] = static_cast<int64_t>(v.size());
        if (!v.empty()) std::memcpy(b + at, v.data(), v.size());
        at += static_cast<int64_t>(v.size());
      }
    };
    if (publish(need, failed, write)) return true;
    for (int w = 0; w < size_; ++w) {
      if (w == me_) continue;
      const int64_t* h = reinterpret_cast<const int64_t*>(buffer_of(w));
      const int64_t off = h[1 + me_], len = h[1 + size_ + me_];
      if (len > 0) detail::for_each_record(buffer_of(w) + off, len, keep);
    }
    return false;
  }

  /// A round without data, split in two for NBX's barrier: arrive() publishes my arrival
  /// and failure flag; arrived() is true once every member's arrival of this round shows
  /// (then *any_failed: whether one reported failure). Between them the caller keeps
  /// receiving.
  void arrive(bool failed) {
    ++round_;
    announce(0, failed);
  }
  // NBX's receipts (NbxBarrier::receipts): each member's line counts the messages
  // of it that members have received, over every exchange since the window was made; a
  // sender compares with how many it has sent. A receiver's release increment follows its
  // completed receive; the sender's acquire load that sees the count synchronizes with it,
  // so when the sender arrives at the barrier every message of its was received (NBX's
  // condition, Hoefler et al. 2010, without the synchronous send's acknowledgement
  // through MPI). Counts are quiescent outside an exchange (every increment precedes its
  // sender's arrival): a resize restarts them.
  void expect(size_t n) { sent_ += n; }
  void received(int src) { line(src)->matched.fetch_add(1, std::memory_order_release); }
  bool all_received() const { return line(me_)->matched.load(std::memory_order_acquire) >= sent_; }

  bool arrived(bool* any_failed) const {
    bool f = false;
    for (int w = 0; w < size_; ++w) {
      const Line* l = line(w);
      if (l->round.load(std::memory_order_acquire) < round_) return false;
      f = f || l->failed[round_ % 2] != 0;
    }
    *any_failed = f;
    return true;
  }

  /// Collective over the region: a round of the personalized exchange's table — my row,
  /// `width` entries, per destination rank the message's bytes or -1 for none (all -1 when
  /// `failed`: a failed rank sends nothing). True if some member reported `failed`; the
  /// rows are written either way. After it, row(w) is member w's row, until the next round.
  bool publish_row(const detail::Outbox& send, bool failed, int width) {
    auto write = [&](char* b) {
      auto* row = reinterpret_cast<int64_t*>(b);
      std::fill(row, row + width, int64_t{-1});
      for (size_t i = 0; !failed && i < send.size(); ++i) row[send.ranks[i]] = send.len[i];
    };
    return publish(8 * static_cast<int64_t>(width), failed, write);
  }
  const int64_t* row(int w) const { return reinterpret_cast<const int64_t*>(buffer_of(w)); }

  /// Collective over the region, when it is the exchange's whole communicator: the
  /// personalized exchange's reduction in shared memory — every rank writes its row of the
  /// table, one round, and each reads its column: *from, (source, bytes) of every message to
  /// expect, in source order (also when some member failed: a failed member's row is empty).
  /// True if some member reported `failed`. (The window holds a row from the start: the
  /// round never grows it.)
  bool table_messages(const detail::Outbox& send, bool failed, std::vector<std::pair<int, int64_t>>* from) {
    const bool any_failed = publish_row(send, failed, size_);
    from->clear();
    for (int w = 0; w < size_; ++w)
      if (const int64_t n = row(w)[me_]; n >= 0) from->emplace_back(w, n);
    return any_failed;
  }

  /// Collective over the region, when it is the exchange's whole communicator (one region):
  /// the exchange itself, each message copied once into my buffer and once out of its
  /// writer's into `into` (ordered by source rank; rank_of[w]: member w's rank in the
  /// communicator, local_of: the reverse). Nothing written when `failed`; true if some
  /// member failed (then nothing is delivered). If into.allocate throws, this rank still
  /// takes its part in the exchange's collectives, then rethrows.
  template <class LocalOf>
  bool exchange_messages(const detail::Outbox& send, bool failed, const std::vector<int>& rank_of, LocalOf local_of,
                         detail::Delivery& into) {
    int64_t need = header_bytes();
    for (size_t i = 0; !failed && i < send.size(); ++i) need += send.len[i];
    auto write = [&](char* b) {  // [need][offset per member][length per member, -1: none] messages
      auto* h = reinterpret_cast<int64_t*>(b);
      h[0] = need;
      std::fill(h + 1 + size_, h + 1 + 2 * size_, int64_t{-1});
      int64_t at = header_bytes();
      for (size_t i = 0; !failed && i < send.size(); ++i) {
        const int w = local_of(send.ranks[i]);
        h[1 + w] = at, h[1 + size_ + w] = send.len[i];
        if (send.len[i] > 0) std::memcpy(b + at, send.ptr[i], static_cast<size_t>(send.len[i]));
        at += send.len[i];
      }
    };
    if (publish(need, failed, write)) return true;
    struct From {
      int src;
      const char* at;
      int64_t len;
    };
    std::vector<From> from;
    for (int w = 0; w < size_; ++w) {
      const auto* h = reinterpret_cast<const int64_t*>(buffer_of(w));
      if (h[1 + size_ + me_] >= 0) from.push_back({rank_of[static_cast<size_t>(w)], buffer_of(w) + h[1 + me_], h[1 + size_ + me_]});
    }
    std::sort(from.begin(), from.end(), [](const From& a, const From& b) { return a.src < b.src; });
    into.restart(from.size());
    for (const From& f : from) into.add(f.src, f.len);
    std::exception_ptr failure;
    try {
      char* out = into.allocate(into.offsets.back());
      for (size_t k = 0; k < from.size(); ++k)
        if (from[k].len > 0) std::memcpy(out + into.offsets[k], from[k].at, static_cast<size_t>(from[k].len));
    } catch (...) {
      failure = std::current_exception();
    }
    if (failure) std::rethrow_exception(failure);
    return false;
  }

 private:
  explicit RegionWindow(MPI_Comm region)
      : comm_(region), size_(comm_size(region)), me_(comm_rank(region)), patience_(detail::node_of(region)->patience) {
    resize(std::max<int64_t>(kFirst, 8 * static_cast<int64_t>(size_)));  // (a table row fits: table_messages)
  }
  ~RegionWindow() {
    if (win_ != MPI_WIN_NULL && !mpi_finalized()) {
      MPI_Win_unlock_all(win_);
      MPI_Win_free(&win_);
    }
  }
  static int release(MPI_Comm, int, void* v, void*) {
    delete static_cast<RegionWindow*>(v);
    return MPI_SUCCESS;
  }
  static constexpr int64_t kFirst = 64 * 1024;
  static constexpr int64_t kLine = 64;

  // A member's header line: the last round it published, and per parity of the round its
  // [bytes needed, failed] (a slow member may still read the previous round's).
  struct Line {
    std::atomic<uint64_t> round;
    int64_t need[2];
    int64_t failed[2];
    std::atomic<uint64_t> matched;  // my NBX messages received so far (expect())
  };
  static_assert(std::atomic<uint64_t>::is_always_lock_free, "the window's flags need lock-free 64-bit atomics");
  static_assert(sizeof(Line) <= kLine, "a header line is one cache line");

  int64_t header_bytes() const { return static_cast<int64_t>(sizeof(int64_t)) * (1 + 2 * static_cast<int64_t>(size_)); }
  Line* line(int w) const { return reinterpret_cast<Line*>(base_[static_cast<size_t>(w)]); }
  // My header of this round: [need, failed] in its parity's slot, then the round number
  // (the release store the other members wait for).
  void announce(int64_t need, bool failed) {
    Line* mine = line(me_);
    mine->need[round_ % 2] = need, mine->failed[round_ % 2] = failed ? 1 : 0;
    mine->round.store(round_, std::memory_order_release);
  }
  char* my_buffer() const { return base_[me_] + kLine + static_cast<int64_t>(round_ % 2) * cap_; }
  const char* buffer_of(int w) const {
    return base_[static_cast<size_t>(w)] + kLine + static_cast<int64_t>(round_ % 2) * cap_;
  }

  // Collective over the region: a window of a header line and two buffers of `cap` bytes
  // per rank. My line says this round (nothing of the old window is read again), and the
  // caller meets the region before anyone reads the new one (the constructor here; a
  // growth in publish() after its rewrite).
  void resize(int64_t cap) {
    if (win_ != MPI_WIN_NULL) {
      SPC_MPI(MPI_Win_unlock_all(win_));
      SPC_MPI(MPI_Win_free(&win_));
    }
    cap_ = (cap + kLine - 1) / kLine * kLine;
    char* mine = nullptr;
    SPC_MPI(MPI_Win_allocate_shared(static_cast<MPI_Aint>(kLine + 2 * cap_), 1, MPI_INFO_NULL, comm_, &mine, &win_));
    SPC_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_));
    base_.assign(static_cast<size_t>(size_), nullptr);
    for (int w = 0; w < size_; ++w) {
      MPI_Aint bytes = 0;
      int disp = 0;
      char* p = nullptr;
      SPC_MPI(MPI_Win_shared_query(win_, w, &bytes, &disp, &p));
      base_[static_cast<size_t>(w)] = p;
    }
    Line* l = new (mine) Line;
    l->round.store(round_, std::memory_order_release);
    l->need[0] = l->need[1] = l->failed[0] = l->failed[1] = 0;
    l->matched.store(0, std::memory_order_relaxed);
    sent_ = 0;
    if (round_ == 0) SPC_MPI(MPI_Barrier(comm_));  // the first window: every line set before any is read
  }

  MPI_Comm comm_;
  int size_, me_;
  int patience_;  // checks of a flag before yielding the core (NodeComm::patience)
  MPI_Win win_ = MPI_WIN_NULL;
  int64_t cap_ = 0;
  std::vector<char*> base_;
  uint64_t round_ = 0;  // rounds published (publish() calls), this window and its predecessors
  uint64_t sent_ = 0;   // my NBX messages since this window was made (expect())
};
#endif

#ifndef SPARSECOMM_SMPI
// The personalized exchange where the table of who sends what to whom is read in shared
// memory (`table(&from)`: the reduction of the personalized exchange, with the sizes; true
// if some rank failed) — within one node, RegionWindow::table_messages; across nodes,
// Sdde::node_table. The messages go out at once, while the table is read; then each
// message is received straight into its place in source order, with no probe. A failure
// anywhere: every message is still received (and dropped) before every rank raises it
// (agree: the failing rank's message).
template <class Table>
void personalized_by_table(const detail::Channel& ch, const detail::Outbox& send, const std::string& err,
                           detail::Delivery& into, Table table) {
  std::vector<MPI_Request> reqs;
  if (err.empty()) detail::post_sends(ch, send, reqs);
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

const std::vector<std::string>& strategy_list() {
#ifdef SPARSECOMM_SMPI
  static const std::vector<std::string> s = {"personalized", "nbx", "rma", "locality_personalized", "locality_nbx"};
#else  // (shared-memory windows: not under SMPI)
  static const std::vector<std::string> s = {"personalized", "nbx", "rma", "locality_personalized", "locality_nbx",
                                             "node_window"};
#endif
  return s;
}
}

Sdde::Sdde(MPI_Comm comm, Locality loc) : comm_(comm), loc_(std::move(loc)) {
  if (loc_.size() != comm_.size())
    throw InputError("Sdde: the locality describes " + std::to_string(loc_.size()) +
                     " ranks but the communicator has " + std::to_string(comm_.size()));
  local_comm_ = Comm(loc_.local_comm());
}

Sdde::Sdde(MPI_Comm comm) : Sdde(comm, Locality::detect(comm)) {}

const std::vector<std::string>& Sdde::strategies() { return strategy_list(); }

Sdde& Sdde::over_nodes() {
  if (!nodes_) nodes_ = std::make_unique<Sdde>(comm_.get(), Locality::parse(comm_.get(), "node"));
  return *nodes_;
}

void Sdde::prepare(const std::string& strategy) {
  check_strategy(strategy);
  if (strategy == "node_window") return over_nodes().prepare("locality_personalized");
  if (group_checked_ || strategy.rfind("locality_", 0) != 0) return;
  group_checked_ = true;  // every rank decides alike, from the locality
  bool equal = loc_.num_regions() > 1;
  for (int r = 1; equal && r < loc_.num_regions(); ++r) equal = loc_.region_size(r) == loc_.region_size(0);
  if (!equal) return;
  MPI_Comm g = MPI_COMM_NULL;
  SPC_MPI(MPI_Comm_split(comm_.get(), loc_.local_rank(), loc_.region(), &g));
  group_comm_ = Comm::adopt(g);
}

bool Sdde::fixed_size_only(const std::string& s) { return s == "rma"; }

void Sdde::check_strategy(const std::string& s) {
  const auto& all = strategy_list();
  if (std::find(all.begin(), all.end(), s) != all.end()) return;
  std::string names;
  for (const auto& n : all) names += (names.empty() ? "" : ", ") + n;
  throw InputError("unknown SDDE strategy '" + s + "'; valid strategies: " + names);
}

bool Sdde::check_collective_args_default() {
  const char* e = std::getenv("SPARSECOMM_CHECK_COLLECTIVE_ARGS");
  return e && *e && std::string(e) != "0";
}

std::string Sdde::check_messages(const detail::Outbox& send, size_t elem, int64_t fixed_count) const {
  const int p = comm_.size();
  try {
    if (send.ptr.size() != send.ranks.size() || send.len.size() != send.ranks.size())
      throw InputError("SDDE: the message list's ranks, pointers and lengths differ in number");
    std::vector<char> seen(static_cast<size_t>(p), 0);
    for (size_t i = 0; i < send.ranks.size(); ++i) {
      const int r = send.ranks[i];
      if (r < 0 || r >= p)
        throw InputError("SDDE: destination rank " + std::to_string(r) + " out of range [0, " + std::to_string(p) + ")");
      if (seen[r]) throw InputError("SDDE: two messages to rank " + std::to_string(r) + " in one exchange");
      seen[r] = 1;
      const int64_t n = send.len[i];
      if (n < 0) throw InputError("SDDE: a message of negative length (offsets must be non-decreasing)");
      if (n > 0 && !send.ptr[i]) throw InputError("SDDE: a message without data");
      if (n > INT_MAX) throw InputError("SDDE: a message of more than 2^31 bytes");
      if (fixed_count >= 0 && n != fixed_count * static_cast<int64_t>(elem))
        throw InputError("SDDE: fixed-size exchange of " + std::to_string(fixed_count) + " elements, but the message to rank " +
                         std::to_string(r) + " has " + std::to_string(n / static_cast<int64_t>(elem)));
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

ByteMessages Sdde::exchange_bytes(const ByteMessages& send, size_t elem, int64_t fixed_count,
                                  const std::string& strategy, Stats* stats, const std::string& caller_error) {
  // The layout first: Outbox::of reads the offsets. A bad one is this rank's failed check,
  // raised on every rank by the exchange.
  std::string err = caller_error;
  const bool layout_ok = send.offsets.size() == send.ranks.size() + 1 && send.offsets[0] == 0 &&
                         send.offsets.back() == static_cast<int64_t>(send.bytes.size());
  if (err.empty() && !layout_ok) err = "SDDE: offsets do not match the number of messages and the data size";
  const detail::Outbox out = layout_ok && err.empty() ? detail::Outbox::of(send) : detail::Outbox{};
  detail::IntoBytes got;
  exchange_into(out, elem, fixed_count, strategy, got.d, stats, err);
  return got.take();
}

void Sdde::exchange_into(const detail::Outbox& send, size_t elem, int64_t fixed_count, const std::string& strategy,
                         detail::Delivery& into, Stats* stats, const std::string& caller_error) {
  const CommExclusive exclusive(comm_.get(), "Sdde::exchange");
  // Collective arguments (the strategy, fixed or variable size) are the same on every rank,
  // as an MPI collective's op or root: checked locally here, which fails on every rank
  // alike. Whether ranks really passed the same costs one allreduce, made only when
  // check_collective_args() is on (docs/architecture.md, "SDDE agreement").
  check_strategy(strategy);
  if (fixed_count < 0 && fixed_size_only(strategy))
    throw InputError("SDDE strategy '" + strategy +
                     "' supports fixed-size messages only: use exchange_fixed(), or another strategy");
  // Per-rank input (destinations, sizes; the caller's own checks): a failure here travels
  // inside the strategy's own collective, and every rank raises it.
  std::string err = caller_error.empty() ? check_messages(send, elem, fixed_count) : caller_error;
  if (check_collective_args()) {
    uint64_t h = std::hash<std::string>{}(strategy) ^ (static_cast<uint64_t>(fixed_count + 1) * 0x9e3779b97f4a7c15ull);
    uint64_t local[3] = {err.empty() ? 0u : 1u, h, ~h}, mx[3];
    SPC_MPI(MPI_Allreduce(local, mx, 3, MPI_UINT64_T, MPI_MAX, comm_.get()));
    if (mx[1] != h || mx[2] != ~h) {
      if (err.empty()) err = "SDDE: ranks called the exchange with different strategies or sizes";
      mx[0] = 1;
    }
    if (mx[0]) agree(comm_.get(), err);  // some rank has a message: every rank throws it
  }

  // A fresh tag per call keeps consecutive exchanges apart (a fast rank may already be in
  // the next call while a slow one still probes in this one).
  const int tag = 1000 + (calls_++ % 2048);
  ScopedTimer timer(stats, "sdde." + strategy);
  detail::Channel global{comm_.get(), tag, stats, "direct", [this](int r) { return loc_.same_region(r); }};
  if (strategy == "personalized") {
#ifndef SPARSECOMM_SMPI
    // From the second call of an Sdde on: where the communicator lies within one node, the
    // counts (and sizes) are exchanged through its shared window (made then, collectively:
    // a one-shot Sdde does not pay for a window it would use once).
    // Across nodes (agents: few nodes), the table through every node's windows and one
    // message per pair of nodes (node_table).
    if (++personalized_calls_ >= 2) {
      const bool failed = !err.empty();
      if (RegionWindow* w = RegionWindow::of(comm_.get(), 0))
        return personalized_by_table(global, send, err, into, [&](auto* from) { return w->table_messages(send, failed, from); });
      if (Sdde* nodes = by_agents())
        return personalized_by_table(global, send, err, into,
                                     [&](auto* from) { return nodes->node_table(send, failed, tag, from); });
    }
#endif
    return detail::personalized(global, send, err, into);
  }
  if (strategy == "nbx") {
#ifndef SPARSECOMM_SMPI
    // As personalized: from the second call on, the barrier in the window within one node,
    // across nodes through the nodes' windows (node_barrier).
    if (++nbx_calls_ >= 2) {
      if (RegionWindow* w = RegionWindow::of(comm_.get(), 0)) {
        struct Flags : detail::NbxBarrier {
          RegionWindow* w;
          explicit Flags(RegionWindow* x) : w(x) {}
          void arrive(bool failed) override { w->arrive(failed); }
          bool test(bool* any_failed) override { return w->arrived(any_failed); }
          bool receipts(int) const override { return true; }
          void expect(size_t n) override { w->expect(n); }
          void received(int src) override { w->received(src); }
          bool all_received() const override { return w->all_received(); }
        } flags(w);
        return detail::nbx(global, send, err, into, nullptr, &flags);
      }
      if (Sdde* nodes = by_agents()) return detail::nbx(global, send, err, into, nullptr, nodes->node_barrier(tag).get());
    }
#endif
    return detail::nbx(global, send, err, into);
  }
  if (strategy == "rma") return detail::rma(global, send, fixed_count * static_cast<int64_t>(elem), err, into);
  // node_window: the locality-aware exchange with the real nodes as regions, whatever this
  // Sdde's regions, so that its redistribution runs through each node's window (on one
  // node: that step alone, one round of the window's flags and no message).
  if (strategy == "node_window") return over_nodes().node_window_exchange(send, err, tag, stats, into);
  locality_exchange(send, strategy == "locality_nbx", tag, stats, err, into);
}

// Locality-aware SDDE (Geyko et al. 2023). Three steps:
//  1. bundle my messages by destination region (messages for my own region go straight
//     to step 3);
//  2. send each bundle to the rank with my local index (modulo the region's size) in that
//     region: one inter-region message per (rank, destination region) pair;
//  3. redistribute every received record inside the region to its final destination.
// Only step 2 follows the strategy's name (personalized or NBX); step 3 is the personalized
// exchange: inside a region its reduction spans few ranks and costs less than NBX's
// synchronous sends and barrier (MPI Advance's locality-aware exchanges do the same) —
// and where the region lies within one node, the records pass through a shared-memory
// window instead, the reduction replaced by the window's flags (RegionWindow: no message,
// probe, collective or second copy inside a node).
// Steps 2 and 3 are themselves sparse exchanges (personalized or NBX). When every region
// has the same size, step 2 runs on the communicator of the ranks with my local index (one
// per region; its rank is the region's number), so its collective — the reduction or the
// barrier — spans P / region size ranks instead of P (as MPI Advance's locality-aware
// exchanges do); otherwise on the global communicator. From an Sdde's second call, where
// the real nodes have their windows and talk by agents, step 2 runs on the global
// communicator with the table or barrier across the nodes' windows instead (node_table,
// node_barrier: one step across the network for the whole reduction or barrier). Step 3 on
// the region communicator.
// A failed check on some rank (`err`) travels in step 2's collective: that rank bundles
// nothing. On the global communicator every rank raises the error there; on the group
// communicator only the group learns it, and carries the flag into step 3's collective
// (every region holds a member of every group), after which all ranks agree on it.
void Sdde::locality_exchange(const detail::Outbox& send, bool use_nbx, int tag, Stats* stats, const std::string& err,
                             detail::Delivery& into) {
#ifndef SPARSECOMM_SMPI
  // One region within one node: the messages themselves through the window, one copy in
  // and one out (no bundles, no records).
  if (loc_.num_regions() == 1)
    if (RegionWindow* w = RegionWindow::of(local_comm_.get())) {
      std::vector<int> rank_of(static_cast<size_t>(loc_.local_size()));
      for (int i = 0; i < loc_.local_size(); ++i) rank_of[static_cast<size_t>(i)] = loc_.member(0, i);
      if (w->exchange_messages(send, !err.empty(), rank_of, [this](int r) { return loc_.local_index_of(r); }, into))
        agree(comm_.get(), err);
      return;
    }
#endif
  const int me = comm_.rank();
  const int my_region = loc_.region();
  const int my_local = loc_.local_rank();
  // Bundles per destination region, sized first (one allocation each); sent in region order.
  std::vector<std::vector<char>> to_region(static_cast<size_t>(loc_.num_regions()));
  {
    std::vector<size_t> bytes(to_region.size(), 0);
    for (size_t i = 0; err.empty() && i < send.size(); ++i)
      bytes[static_cast<size_t>(loc_.region_of(send.ranks[i]))] += detail::record_size(send.len[i]);
    for (size_t r = 0; r < bytes.size(); ++r) to_region[r].reserve(bytes[r]);
  }
  for (size_t i = 0; err.empty() && i < send.size(); ++i) {
    const int d = send.ranks[i];
    detail::append_record(to_region[static_cast<size_t>(loc_.region_of(d))], me, d, send.ptr[i], send.len[i]);
  }
  // Steps 2 and 3 send the bundles from where they are (an Outbox over them).
  auto run = [&](const detail::Channel& ch, const detail::Outbox& o, const std::string& e, bool* failed, bool nbx) {
    detail::IntoBytes got;
    if (nbx) detail::nbx(ch, o, e, got.d, failed);
    else detail::personalized(ch, o, e, got.d, failed);
    return got.take();
  };
  // One region: no inter-region step; a failed check travels in the redistribution's
  // collective, and every rank raises it.
  if (loc_.num_regions() == 1) return redistribute(to_region, {}, !err.empty(), err, true, tag, stats, into);

  // Step 2: inter-region bundles. From an Sdde's second call on, where the nodes have their
  // windows and talk by agents, on the whole communicator with the direct strategies'
  // table or barrier across nodes (node_table, node_barrier: one step across the network,
  // where the group's reduction or barrier takes log2(regions)); every rank learns a
  // failure there.
  prepare(use_nbx ? "locality_nbx" : "locality_personalized");
  Sdde* const nodes = ++locality_calls_ >= 2 ? by_agents() : nullptr;
  const bool grouped = static_cast<bool>(group_comm_) && !nodes;
  detail::Outbox inter_send;
  for (size_t r = 0; r < to_region.size(); ++r) {
    const int rd = static_cast<int>(r);
    if (rd == my_region || to_region[r].empty()) continue;
    inter_send.add(grouped ? rd : loc_.member(rd, my_local % loc_.region_size(rd)), to_region[r].data(),
                   static_cast<int64_t>(to_region[r].size()));
  }
  detail::Channel inter = grouped ? detail::Channel{group_comm_.get(), tag, stats, "inter", [](int) { return false; }}
                                  : detail::Channel{comm_.get(), tag, stats, "inter",
                                                    [this](int r) { return loc_.same_region(r); }};
  bool failed_in_group = false;  // grouped: someone in my group failed (ungrouped: raised here)
#ifndef SPARSECOMM_SMPI
  if (nodes) {
    detail::IntoBytes got;
    if (use_nbx) detail::nbx(inter, inter_send, err, got.d, nullptr, nodes->node_barrier(tag).get());
    else personalized_by_table(inter, inter_send, err, got.d,
                               [&](auto* from) { return nodes->node_table(inter_send, !err.empty(), tag, from); });
    return redistribute(to_region, got.take(), false, err, false, tag, stats, into);
  }
#endif
  const ByteMessages inter_recv = run(inter, inter_send, err, grouped ? &failed_in_group : nullptr, use_nbx);

  redistribute(to_region, inter_recv, failed_in_group, err, grouped, tag, stats, into);
}

Sdde* Sdde::by_agents() {
#ifdef SPARSECOMM_SMPI
  return nullptr;  // (no shared windows)
#else
  Sdde& nodes = over_nodes();
  return nodes.node_windows() && nodes.agents_ ? &nodes : nullptr;
#endif
}

#ifndef SPARSECOMM_SMPI
// The windows of the nodes and how pairs of nodes talk, for node_window across nodes and
// for the direct strategies' tables and barriers (node_table, node_barrier).
bool Sdde::node_windows() {
  if (leader_windows_ < 0) {  // first use, collective: windows on every node, the leaders' communicator
    // Agents or leaders ($SPARSECOMM_SDDE_NODE_EXCHANGE = agents | leaders; unset or
    // "auto": agents while every member is the agent of at most two other nodes, i.e.
    // nodes - 1 <= 2 x the smallest node; beyond, each pair's message would cost more than
    // the leaders' one reduction). Agreed here, on one node too (where the value is not
    // used, a bad one is still the user's mistake): a rank that asks otherwise, or a value
    // that differs between ranks, is an error on every rank.
    const bool across = loc_.num_regions() > 1;  // (alike on every rank)
    const char* env = std::getenv("SPARSECOMM_SDDE_NODE_EXCHANGE");
    const std::string how = env && *env ? env : "auto";
    int smallest = loc_.region_size(0);
    for (int r = 1; r < loc_.num_regions(); ++r) smallest = std::min(smallest, loc_.region_size(r));
    const int want = how == "auto" ? (loc_.num_regions() - 1 <= 2 * smallest ? 1 : 2)
                     : how == "agents" ? 1 : how == "leaders" ? 2 : 0;
    int mine[3] = {across && RegionWindow::of(local_comm_.get(), 0) && RegionWindow::of(local_comm_.get(), 1) ? 1 : 0,
                   want, -want},
        all[3];
    SPC_MPI(MPI_Allreduce(mine, all, 3, MPI_INT, MPI_MIN, comm_.get()));
    // (a rank with a good value says nothing where another's is bad: every rank raises the
    // bad one's words, agree())
    std::string bad;
    const bool window_off = RegionWindow::window_switch() == 0;  // (a malformed one: RegionWindow::of says so)
    if (want == 0) bad = "SPARSECOMM_SDDE_NODE_EXCHANGE='" + how + "': valid values: agents, leaders, auto (alike on every rank)";
    else if (window_off && how != "auto")
      bad = "SPARSECOMM_SDDE_NODE_EXCHANGE=" + how + " has no effect with SPARSECOMM_SDDE_WINDOW=" +
            std::getenv("SPARSECOMM_SDDE_WINDOW") +
            " (the nodes' exchange runs through the windows): unset one of them";
    else if (all[1] != 0 && all[1] != -all[2])
      bad = "SPARSECOMM_SDDE_NODE_EXCHANGE differs between ranks ('" + how + "' here): set it alike on every rank";
    agree(comm_.get(), bad);
    if (!across) {  // one node: nothing across nodes
      leader_windows_ = 0;
      return false;
    }
    agents_ = all[1] == 1;
    if (!agents_) {
      MPI_Comm c = MPI_COMM_NULL;
      SPC_MPI(MPI_Comm_split(comm_.get(), loc_.local_rank() == 0 ? 0 : MPI_UNDEFINED, loc_.region(), &c));
      if (c != MPI_COMM_NULL) leaders_comm_ = Comm::adopt(c);
    }
    leader_windows_ = all[0];
  }
  return leader_windows_ == 1;
}

// The agents' step across nodes (node_window, node_table; Traff and Hunold, "Decomposing
// MPI collectives for exploiting multi-lane communication", CLUSTER 2020): every pair of
// nodes (a, b) has one agent on each side, agent(a, b) and agent(b, a) — both sides compute
// both, so sender and receiver know each other and no reduction says who sends. For every
// pair whose agent on my side I am, one message [8-byte header: my node's failure flag in
// its first byte][what fill(b, buffer) appends] goes to the other agent and one comes back
// (each received as soon as it is announced, into a buffer of its own; every pair sends,
// also when empty or failed). Returns the received messages, header included, in node
// order; *flagged is set if one came with its flag set (or without a header).
std::vector<std::vector<char>> Sdde::swap_by_agents(int tag, Stats* stats, bool failed,
                                                    const std::function<void(int, std::vector<char>&)>& fill,
                                                    bool* flagged) {
  const int me = comm_.rank(), my_node = loc_.region(), nodes = loc_.num_regions();
  const detail::Channel ch{comm_.get(), tag, stats, "inter", [](int) { return false; }};
  std::vector<std::vector<char>> mine(static_cast<size_t>(nodes));  // (kept until sent)
  detail::Outbox o;
  for (int r = 0; r < nodes; ++r) {
    if (r == my_node || agent(my_node, r) != me) continue;
    auto& b = mine[static_cast<size_t>(r)];
    b.assign(8, 0);
    b[0] = failed ? 1 : 0;
    fill(r, b);
    o.add(agent(r, my_node), b.data(), static_cast<int64_t>(b.size()));
  }
  std::vector<MPI_Request> sreqs;
  detail::post_sends(ch, o, sreqs);
  std::vector<std::vector<char>> got(o.size());
  std::vector<MPI_Request> rreqs(o.size(), MPI_REQUEST_NULL);
  for (size_t k = 0; k < o.size(); ++k) {
    MPI_Message msg;
    MPI_Status st;
    int n = 0;
    SPC_MPI(MPI_Mprobe(o.ranks[k], tag, ch.comm, &msg, &st));
    SPC_MPI(MPI_Get_count(&st, MPI_BYTE, &n));
    got[k].resize(static_cast<size_t>(n));
    SPC_MPI(MPI_Imrecv(got[k].data(), n, MPI_BYTE, &msg, &rreqs[k]));
    if (stats) stats->record_recv(ch.step, false, n);
  }
  wait_all(rreqs);
  wait_all(sreqs);
  for (const auto& m : got) *flagged = *flagged || m.size() < 8 || m[0] != 0;
  return got;
}

// The personalized exchange's table across nodes (agents; Sdde::exchange_into, from the
// second call): who sends how many bytes to me, learned in two rounds of each node's
// windows and one message per pair of nodes, instead of MPI_Reduce_scatter_block over every
// rank — a reduction of P counters whose log2(P) dependent steps cross the network, where
// here one step does (the hierarchical reduction of Traff and Hunold's multi-lane
// decomposition, CLUSTER 2020, with node_window's agents):
//  1. every rank writes its row (per destination rank: the message's bytes, or -1) into its
//     segment of the node's first window and publishes it; a rank whose input failed
//     writes an empty row (its messages were not sent);
//  2. the agent of the pair (my node, b) (node_window's formula) collects from every
//     member's row the entries for b's ranks — (source, destination's index in b, bytes) —
//     and sends them, after an 8-byte failure flag, to b's agent of the pair, receiving
//     its list for my node; every pair sends, also when empty or failed;
//  3. every rank writes what it received into its segment of the second window and
//     publishes it: each then reads its column of its node's rows and its entries of the
//     lists.
// Every rank learns every message sent to it also when some rank failed (the sends went
// out before the table: the caller drains them), and whether any did.
bool Sdde::node_table(const detail::Outbox& send, bool failed, int tag, std::vector<std::pair<int, int64_t>>* from) {
  RegionWindow& out = *RegionWindow::of(local_comm_.get(), 0);
  RegionWindow& in = *RegionWindow::of(local_comm_.get(), 1);
  const int p = comm_.size(), me = comm_.rank(), members = loc_.local_size();
  const int my_node = loc_.region(), mi = loc_.local_rank();
  const bool node_failed = out.publish_row(send, failed, p);
  struct Entry {
    int32_t src, dest;  // source rank; destination's local index in its node
    int64_t bytes;
  };
  static_assert(sizeof(Entry) == 16, "entries are packed as 16 bytes");
  bool any_failed = node_failed;
  const std::vector<std::vector<char>> got = swap_by_agents(tag, nullptr, node_failed, [&](int r, std::vector<char>& l) {
    for (int w = 0; w < members; ++w)
      for (int j = 0; j < loc_.region_size(r); ++j)
        if (const int64_t n = out.row(w)[loc_.member(r, j)]; n >= 0) {
          const Entry e{loc_.member(my_node, w), j, n};
          l.resize(l.size() + sizeof(e));
          std::memcpy(l.data() + l.size() - sizeof(e), &e, sizeof(e));
        }
  }, &any_failed);
  int64_t entries = 0;  // received, in every list
  for (const auto& g : got) entries += static_cast<int64_t>(g.size() >= 8 ? (g.size() - 8) / sizeof(Entry) : 0);
  auto write_in = [&](char* b) {  // [entries][entry...]
    std::memcpy(b, &entries, 8);
    char* at = b + 8;
    for (const auto& g : got)
      if (g.size() > 8) {
        std::memcpy(at, g.data() + 8, g.size() - 8);
        at += g.size() - 8;
      }
  };
  const bool failed_anywhere = in.publish(8 + entries * static_cast<int64_t>(sizeof(Entry)), any_failed, write_in);
  from->clear();
  for (int w = 0; w < members; ++w)
    if (const int64_t n = out.row(w)[me]; n >= 0) from->emplace_back(loc_.member(my_node, w), n);
  for (int w = 0; w < members; ++w) {
    int64_t n = 0;
    std::memcpy(&n, in.segment(w), 8);
    for (int64_t k = 0; k < n; ++k) {
      Entry e;
      std::memcpy(&e, in.segment(w) + 8 + k * static_cast<int64_t>(sizeof(Entry)), sizeof(e));
      if (e.dest == mi) from->emplace_back(e.src, e.bytes);
    }
  }
  std::sort(from->begin(), from->end());
  return failed_anywhere;
}

// NBX's barrier across nodes (agents; Sdde::exchange_into, from the second call): the
// dissemination of MPI_Ibarrier over every rank replaced by the hierarchy of node_table —
// a round of the node's first window (every member arrived), then one message per pair of
// nodes (my node arrived, and its failure flag) between the pair's agents, then a round of
// the second window (each member arrives once its pairs' messages came): when it completes,
// every member of every node has arrived. Non-blocking throughout: test() advances it.
std::unique_ptr<detail::NbxBarrier> Sdde::node_barrier(int tag) {
  class Barrier : public detail::NbxBarrier {
   public:
    Barrier(Sdde& s, int tag)
        : out_(*RegionWindow::of(s.local_comm_.get(), 0)), in_(*RegionWindow::of(s.local_comm_.get(), 1)), loc_(s.loc_) {
      const int my_node = s.loc_.region(), me = s.comm_.rank();
      for (int r = 0; r < s.loc_.num_regions(); ++r)
        if (r != my_node && s.agent(my_node, r) == me) partners_.push_back(s.agent(r, my_node));
      comm_ = s.comm_.get(), tag_ = tag;
      flags_.assign(partners_.size(), 0);
      reqs_.assign(2 * partners_.size(), MPI_REQUEST_NULL);
    }
    // Messages within my node: receipts counted in its window (as on one node).
    bool receipts(int rank) const override { return loc_.same_region(rank); }
    void expect(size_t n) override { out_.expect(n); }
    void received(int src) override { out_.received(loc_.local_index_of(src)); }
    bool all_received() const override { return out_.all_received(); }
    void arrive(bool failed) override {
      for (size_t k = 0; k < partners_.size(); ++k)
        SPC_MPI(MPI_Irecv(&flags_[k], 1, MPI_INT64_T, partners_[k], tag_, comm_, &reqs_[partners_.size() + k]));
      out_.arrive(failed);
      stage_ = 1;
    }
    bool test(bool* any_failed) override {
      if (stage_ == 1) {  // my node arrived: tell the other nodes of my pairs
        if (!out_.arrived(&node_failed_)) return false;
        mine_ = node_failed_ ? 1 : 0;
        for (size_t k = 0; k < partners_.size(); ++k)
          SPC_MPI(MPI_Isend(&mine_, 1, MPI_INT64_T, partners_[k], tag_, comm_, &reqs_[k]));
        stage_ = 2;
      }
      if (stage_ == 2) {  // the nodes of my pairs arrived: so do I, in the second round
        int done = 1;
        if (!reqs_.empty()) SPC_MPI(MPI_Testall(static_cast<int>(reqs_.size()), reqs_.data(), &done, MPI_STATUSES_IGNORE));
        if (!done) return false;
        bool f = node_failed_;
        for (int64_t x : flags_) f = f || x != 0;
        in_.arrive(f);
        stage_ = 3;
      }
      return in_.arrived(any_failed);
    }

   private:
    RegionWindow &out_, &in_;
    const Locality& loc_;  // the nodes
    MPI_Comm comm_ = MPI_COMM_NULL;
    int tag_ = 0, stage_ = 0;
    bool node_failed_ = false;
    int64_t mine_ = 0;
    std::vector<int> partners_;
    std::vector<int64_t> flags_;
    std::vector<MPI_Request> reqs_;  // [sends per partner][receives per partner]
  };
  return std::make_unique<Barrier>(*this, tag);
}
#endif

// node_window (this Sdde's regions are the real nodes, over_nodes()). On one node: the
// window exchange of locality_exchange(). Across nodes, each pair of nodes exchanges one
// message (Geyko et al.'s bundling taken one step further: per node pair, not per (rank,
// node) pair; their paper's "gather inside the node first"):
//  1. every rank writes its records into its segment of the node's first window, by
//     destination member (its own node) and by destination node, then publishes
//     [bytes needed, failed] and waits for every member's (publish(): flags in the window,
//     no MPI call); then every rank takes the records for it from the members' segments;
//  2. per other node, one rank concatenates every member's bundle for it and sends it.
//     Agents (few nodes): the pair (a, b)'s message goes from member (a + b) mod |a| of a to
//     member (a + b) mod |b| of b — both sides compute the pair's two ranks, every pair
//     sends its message even when empty, so no reduction tells anyone what to expect, and
//     the pairs' work is spread over the members (multi-lane: Traff and Hunold, "Decomposing
//     MPI collectives for exploiting multi-lane communication", CLUSTER 2020). Leaders (many
//     nodes, where every pair's message would cost more than a reduction): local index 0
//     sends every bundle, by the personalized exchange on the leaders' communicator;
//  3. every rank writes what it received into its segment of the node's second window and
//     publishes it; every rank takes the records addressed to it.
// Two rounds of each node's window flags (and with leaders, one reduction over the
// leaders); no rank sends a message inside a node. A failed check travels in step 1's
// round to the node, in step 2's messages (a flag in front of every bundle; with leaders,
// their reduction) to every node and in step 3's round to every rank, which then all raise
// it (agree). Each window is reused by its own rounds (RegionWindow: double-buffered).
void Sdde::node_window_exchange(const detail::Outbox& send, const std::string& err, int tag, Stats* stats,
                                detail::Delivery& into) {
#ifndef SPARSECOMM_SMPI
  const bool windows = node_windows();  // (collective at the first use, one node too: its setting checked)
  if (loc_.num_regions() > 1) {
    if (windows) {
      RegionWindow& out = *RegionWindow::of(local_comm_.get(), 0);
      RegionWindow& in = *RegionWindow::of(local_comm_.get(), 1);
      const int me = comm_.rank(), members = loc_.local_size(), nodes = loc_.num_regions();
      const int my_node = loc_.region();
      const bool leader = loc_.local_rank() == 0;
      bool failed = !err.empty();
      // Step 1: my records, per member of my node and per other node.
      std::vector<std::vector<char>> to_member(static_cast<size_t>(members)), to_node(static_cast<size_t>(nodes));
      for (size_t i = 0; !failed && i < send.size(); ++i) {
        const int d = send.ranks[i], r = loc_.region_of(d);
        auto& b = r == my_node ? to_member[static_cast<size_t>(loc_.local_index_of(d))] : to_node[static_cast<size_t>(r)];
        detail::append_record(b, me, d, send.ptr[i], send.len[i]);
      }
      const int64_t slots = 1 + 2 * static_cast<int64_t>(members + nodes), head = 8 * slots;
      int64_t need = head;
      for (const auto& v : to_member) need += static_cast<int64_t>(v.size());
      for (const auto& v : to_node) need += static_cast<int64_t>(v.size());
      auto write_out = [&](char* b) {  // [need][member offsets][member lengths][node offsets][node lengths] records
        auto* h = reinterpret_cast<int64_t*>(b);
        h[0] = need;
        int64_t at = head;
        auto put = [&](const std::vector<char>& v, int64_t* off, int64_t* len) {
          *off = at, *len = static_cast<int64_t>(v.size());
          if (!v.empty()) std::memcpy(b + at, v.data(), v.size());
          at += static_cast<int64_t>(v.size());
        };
        for (int w = 0; w < members; ++w) put(to_member[static_cast<size_t>(w)], &h[1 + w], &h[1 + members + w]);
        for (int r = 0; r < nodes; ++r)
          put(to_node[static_cast<size_t>(r)], &h[1 + 2 * members + r], &h[1 + 2 * members + nodes + r]);
      };
      const bool node_failed = out.publish(need, failed, write_out);
      detail::Inbox got;
      auto keep = [&](const detail::RecordHeader& hd, const char* payload) {
        if (hd.nbytes > 0) std::memcpy(got.append(hd.src, hd.nbytes), payload, static_cast<size_t>(hd.nbytes));
        else got.append(hd.src, 0);
      };
      auto field = [&](int w, int64_t k) { return reinterpret_cast<const int64_t*>(out.segment(w))[k]; };
      const int mi = loc_.local_rank();
      if (!node_failed)
        for (int w = 0; w < members; ++w)
          if (const int64_t len = field(w, 1 + members + mi); len > 0)
            detail::for_each_record(out.segment(w) + field(w, 1 + mi), len, keep);
      auto node_bundle = [&](int r, std::vector<char>& b) {  // every member's records for node r
        for (int w = 0; w < members; ++w) {
          const int64_t len = field(w, 1 + 2 * members + nodes + r);
          const char* at = out.segment(w) + field(w, 1 + 2 * members + r);
          if (len > 0) b.insert(b.end(), at, at + len);
        }
      };
      // Step 2: one bundle per pair of nodes; `inbound`: the bundles this rank received for
      // its node (each [8-byte flag][records]), where they arrived.
      bool any_failed = node_failed;
      std::vector<std::vector<char>> received;  // agents: one buffer per bundle
      detail::ByteMessages from_leaders;        // leaders: the personalized exchange's result
      std::vector<std::pair<const char*, int64_t>> inbound;
      if (agents_) {
        // Every pair of nodes exchanges one bundle between its two agents (swap_by_agents:
        // no reduction to learn who sends; the pairs' copying and sending spread over the
        // node's members instead of one leader), after its node's failure flag.
        received = swap_by_agents(tag, stats, node_failed, [&](int r, std::vector<char>& b) {
          if (!node_failed) node_bundle(r, b);
        }, &any_failed);
        for (const auto& m : received) inbound.emplace_back(m.data(), static_cast<int64_t>(m.size()));
      } else if (leader) {
        // One leader per node (local index 0) sends one bundle per pair of nodes: the
        // personalized exchange on the leaders' communicator (many nodes: its reduction
        // costs fewer messages than every pair's).
        std::vector<std::vector<char>> bundle(static_cast<size_t>(nodes));
        detail::Outbox o;
        for (int r = 0; !node_failed && r < nodes; ++r) {
          if (r == my_node) continue;
          auto& b = bundle[static_cast<size_t>(r)];
          b.assign(8, 0);
          node_bundle(r, b);
          if (b.size() > 8) o.add(r, b.data(), static_cast<int64_t>(b.size()));
        }
        detail::Channel ch{leaders_comm_.get(), tag, stats, "inter", [](int) { return false; }};
        detail::IntoBytes rec;
        bool leaders_failed = false;
        detail::personalized(ch, o, node_failed ? "failed" : "", rec.d, &leaders_failed);
        any_failed = leaders_failed;
        from_leaders = rec.take();
        for (size_t i = 0; i < from_leaders.ranks.size(); ++i)
          inbound.emplace_back(from_leaders.bytes.data() + from_leaders.offsets[i],
                               from_leaders.offsets[i + 1] - from_leaders.offsets[i]);
      }
      // Step 3: what each agent (or the leader) received, to every member: each writes the
      // bundles' records after their flags into its segment, [length][records].
      int64_t inbound_bytes = 0;
      for (const auto& [at, len] : inbound) inbound_bytes += std::max<int64_t>(len - 8, 0);
      auto write_in = [&](char* b) {
        reinterpret_cast<int64_t*>(b)[0] = any_failed ? 0 : inbound_bytes;
        int64_t to = 8;
        for (size_t k = 0; !any_failed && k < inbound.size(); ++k) {
          const auto& [at, len] = inbound[k];
          if (len > 8) std::memcpy(b + to, at + 8, static_cast<size_t>(len - 8));
          to += std::max<int64_t>(len - 8, 0);
        }
      };
      const bool failed_anywhere = in.publish(any_failed ? 8 : 8 + inbound_bytes, any_failed, write_in);
      if (failed_anywhere) agree(comm_.get(), err);  // every rank: the failing rank's message
      for (int w = 0; w < members; ++w) {
        const int64_t total = reinterpret_cast<const int64_t*>(in.segment(w))[0];
        detail::for_each_record(in.segment(w) + 8, total, [&](const detail::RecordHeader& hd, const char* payload) {
          if (hd.dest == me) keep(hd, payload);
        });
      }
      got.deliver(into);
      return;
    }
  }
#endif
  locality_exchange(send, false, tag, stats, err, into);
}

// Step 3 of locality_exchange(): every record for my region — my own bundle for it and the
// bundles received from other regions — goes to its final destination inside the region
// (a local index), through the region's window where the region lies within one node, else
// through the personalized exchange on the region's communicator. `failed_here`: a failure
// this rank knows of (its own check, or its group's in step 2) to carry in this step's
// collective when `carry` (else none can be pending); then every rank raises `err` (agree:
// the failing rank's message).
void Sdde::redistribute(const std::vector<std::vector<char>>& to_region, const detail::ByteMessages& inter_recv,
                        bool failed_here, const std::string& err, bool carry, int tag, Stats* stats,
                        detail::Delivery& into) {
  const int me = comm_.rank();
  std::vector<std::vector<char>> to_local(static_cast<size_t>(loc_.local_size()));
  detail::Inbox got;
  auto keep = [&](const detail::RecordHeader& h, const char* payload) {
    if (h.nbytes > 0) std::memcpy(got.append(h.src, h.nbytes), payload, static_cast<size_t>(h.nbytes));
    else got.append(h.src, 0);
  };
  auto route = [&](const detail::RecordHeader& h, const char* payload) {
    if (h.dest == me) keep(h, payload);
    else detail::append_record(to_local[static_cast<size_t>(loc_.local_index_of(h.dest))], h.src, h.dest, payload,
                               h.nbytes);
  };
  auto msg_ptr = [](const ByteMessages& m, size_t i) { return m.bytes.data() + m.offsets[i]; };
  const std::vector<char>& mine_local = to_region[static_cast<size_t>(loc_.region())];
  detail::for_each_record(mine_local.data(), static_cast<int64_t>(mine_local.size()), route);
  for (size_t i = 0; i < inter_recv.ranks.size(); ++i)
    detail::for_each_record(msg_ptr(inter_recv, i), inter_recv.offsets[i + 1] - inter_recv.offsets[i], route);
  bool failed_anywhere = false;
#ifndef SPARSECOMM_SMPI
  if (RegionWindow* w = RegionWindow::of(local_comm_.get())) {  // the region within one node
    failed_anywhere = w->exchange(to_local, failed_here, keep);
    if (failed_anywhere) agree(comm_.get(), err);
    got.deliver(into);
    return;
  }
#endif
  detail::Outbox intra_send;
  for (size_t li = 0; li < to_local.size(); ++li)
    if (!to_local[li].empty())
      intra_send.add(static_cast<int>(li), to_local[li].data(), static_cast<int64_t>(to_local[li].size()));
  detail::Channel intra{local_comm_.get(), tag, stats, "intra", [](int) { return true; }};
  detail::IntoBytes received;
  detail::personalized(intra, intra_send, failed_here ? "failed" : "", received.d, carry ? &failed_anywhere : nullptr);
  if (failed_anywhere) agree(comm_.get(), err);  // every rank knows: the failing rank's message everywhere
  const ByteMessages intra_recv = received.take();
  for (size_t i = 0; i < intra_recv.ranks.size(); ++i)
    detail::for_each_record(msg_ptr(intra_recv, i), intra_recv.offsets[i + 1] - intra_recv.offsets[i], keep);
  got.deliver(into);
}

}  // namespace sparsecomm
