#include "sparsecomm/comm/sdde.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <numeric>

namespace sparsecomm {
namespace detail {
namespace {

// A communicator, a tag and where to count: one "step" of an exchange.
struct Channel {
  MPI_Comm comm;
  int tag;
  Stats* stats;
  const char* step;
  std::function<bool(int)> intra;  // peer rank (in `comm`) -> same region as me?
};

// What one exchange receives: messages in arrival order in one buffer (no allocation or
// zero-fill per message; sized once where the total is known), then ordered by source
// into the result with one copy.
class Inbox {
 public:
  /// Room for `bytes` more (called with the total where it is known in advance).
  void reserve(int64_t bytes) { grow(used_ + bytes); }
  /// Where the next message of `n` bytes from `src` goes (valid until the next call).
  char* append(int src, int64_t n) {
    grow(used_ + n);
    got_.push_back({src, used_, n});
    used_ += n;
    return buf_.get() + got_.back().at;
  }
  size_t size() const { return got_.size(); }
  ByteMessages sorted() {
    std::stable_sort(got_.begin(), got_.end(), [](const Entry& a, const Entry& b) { return a.src < b.src; });
    ByteMessages out;
    out.ranks.reserve(got_.size());
    out.offsets.reserve(got_.size() + 1);
    out.bytes.resize(static_cast<size_t>(used_));
    int64_t at = 0;
    for (const Entry& e : got_) {
      if (e.len > 0) std::memcpy(out.bytes.data() + at, buf_.get() + e.at, static_cast<size_t>(e.len));
      at += e.len;
      out.ranks.push_back(e.src);
      out.offsets.push_back(at);
    }
    return out;
  }

 private:
  struct Entry {
    int src;
    int64_t at, len;
  };
  void grow(int64_t need) {
    if (need <= cap_) return;
    const int64_t cap = std::max(need, 2 * cap_);
    std::unique_ptr<char[]> b(new char[static_cast<size_t>(cap)]);  // uninitialised: MPI writes it
    if (used_ > 0) std::memcpy(b.get(), buf_.get(), static_cast<size_t>(used_));
    buf_ = std::move(b), cap_ = cap;
  }
  std::unique_ptr<char[]> buf_;
  int64_t used_ = 0, cap_ = 0;
  std::vector<Entry> got_;
};

int msg_len(const ByteMessages& m, size_t i) { return static_cast<int>(m.offsets[i + 1] - m.offsets[i]); }
char* msg_ptr(const ByteMessages& m, size_t i) { return const_cast<char*>(m.bytes.data() + m.offsets[i]); }

void post_sends(const Channel& ch, const ByteMessages& send, std::vector<MPI_Request>& reqs, bool synchronous) {
  reqs.assign(send.ranks.size(), MPI_REQUEST_NULL);
  for (size_t i = 0; i < send.ranks.size(); ++i) {
    if (synchronous)
      SPC_MPI(MPI_Issend(msg_ptr(send, i), msg_len(send, i), MPI_BYTE, send.ranks[i], ch.tag, ch.comm, &reqs[i]));
    else
      SPC_MPI(MPI_Isend(msg_ptr(send, i), msg_len(send, i), MPI_BYTE, send.ranks[i], ch.tag, ch.comm, &reqs[i]));
    if (ch.stats) ch.stats->record_send(ch.step, ch.intra(send.ranks[i]), msg_len(send, i));
  }
}

void receive_probed(const Channel& ch, const MPI_Status& st, Inbox& got) {
  int n = 0;
  SPC_MPI(MPI_Get_count(&st, MPI_BYTE, &n));
  SPC_MPI(MPI_Recv(got.append(st.MPI_SOURCE, n), n, MPI_BYTE, st.MPI_SOURCE, ch.tag, ch.comm, MPI_STATUS_IGNORE));
  if (ch.stats) ch.stats->record_recv(ch.step, ch.intra(st.MPI_SOURCE), n);
}

// Personalized exchange: MPI_Reduce_scatter_block over 0/1 flags tells each rank how many
// messages to expect; then it probes for exactly that many. The same single counter per
// rank carries the error flag (`err` not empty: this rank's input failed the checks, and it
// sends nothing): a failed rank adds P + 1 to every rank's counter, so the sum v tells every
// rank, before anyone sends, both v mod (P + 1) messages to expect and v / (P + 1) failed
// ranks — and all raise that error (agree: the failure path's own collectives). The success
// path runs no collective beyond the reduction, whose payload stays one counter per rank
// (the simulated cost at thousands of ranks grows with it).
ByteMessages personalized(const Channel& ch, const ByteMessages& send, const std::string& err = "") {
  const int p = comm_size(ch.comm);
  const int64_t base = static_cast<int64_t>(p) + 1;
  const bool failed = !err.empty();
  int64_t v = 0;
  if (static_cast<int64_t>(p) * base + p <= INT_MAX) {  // int counters, as long as the sum fits
    std::vector<int> flags(static_cast<size_t>(p), failed ? static_cast<int>(base) : 0);
    for (size_t i = 0; !failed && i < send.ranks.size(); ++i) flags[static_cast<size_t>(send.ranks[i])] = 1;
    int mine = 0;
    SPC_MPI(MPI_Reduce_scatter_block(flags.data(), &mine, 1, MPI_INT, MPI_SUM, ch.comm));
    v = mine;
  } else {
    std::vector<int64_t> flags(static_cast<size_t>(p), failed ? base : 0);
    for (size_t i = 0; !failed && i < send.ranks.size(); ++i) flags[static_cast<size_t>(send.ranks[i])] = 1;
    SPC_MPI(MPI_Reduce_scatter_block(flags.data(), &v, 1, MPI_INT64_T, MPI_SUM, ch.comm));
  }
  if (v / base > 0) agree(ch.comm, err);  // throws on every rank
  const int nrecv = static_cast<int>(v % base);
  std::vector<MPI_Request> reqs;
  post_sends(ch, send, reqs, false);
  Inbox got;
#ifdef SPARSECOMM_SMPI
  // SimGrid's MPI_Probe is a polling loop (an iprobe plus a simulated sleep per poll), and
  // its host cost grows faster than linearly with the ranks polling at once. So under SMPI
  // each message is announced by its size (one int64, tag + 8192; the data tags are
  // 1000..3047 and the barrier's 5096..7143): a blocking receive from MPI_ANY_SOURCE waits
  // without polling. These headers are real simulated messages but are not counted in
  // Stats, which describe the exchange itself (the same in both builds).
  std::vector<int64_t> sizes(send.ranks.size());
  std::vector<MPI_Request> hreqs(send.ranks.size());
  for (size_t i = 0; i < send.ranks.size(); ++i) {
    sizes[i] = msg_len(send, i);
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
#else
  for (int k = 0; k < nrecv; ++k) {
    MPI_Status st;
    SPC_MPI(MPI_Probe(MPI_ANY_SOURCE, ch.tag, ch.comm, &st));
    receive_probed(ch, st, got);
  }
#endif
  wait_all(reqs);
  return got.sorted();
}

// NBX (Hoefler, Siebert, Lumsdaine 2010): synchronous sends complete only once matched,
// so when all of mine are done I enter a non-blocking barrier; when the barrier completes
// every rank's sends have been matched, hence every message has been received.
// A rank whose input failed the checks (`err` not empty) sends nothing and enters the
// barrier at once with its error flag; the barrier (a non-blocking reduction of the flags,
// NonblockingBarrier) completes only after every rank's sends were matched, so nobody is
// left waiting, and then every rank knows whether one failed: all raise that error
// (agree). The success path runs no collective beyond the barrier itself.
ByteMessages nbx(const Channel& ch, const ByteMessages& send, const std::string& err = "") {
  std::vector<MPI_Request> reqs;
  if (err.empty()) post_sends(ch, send, reqs, true);
  Inbox got;
  std::unique_ptr<NonblockingBarrier> barrier;
  while (true) {
    int flag = 0;
    MPI_Status st;
    SPC_MPI(MPI_Iprobe(MPI_ANY_SOURCE, ch.tag, ch.comm, &flag, &st));
    if (flag) {
      receive_probed(ch, st, got);
      continue;
    }
    if (!barrier) {
      int done = 0;
      if (reqs.empty()) done = 1;
      else SPC_MPI(MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE));
      // The barrier's own messages use a tag range of their own (data tags are 1000..3047):
      // never matched by the probe above, nor by a later exchange.
      if (done) barrier = std::make_unique<NonblockingBarrier>(ch.comm, ch.tag + 4096, err.empty() ? 0 : 1);
    } else if (barrier->test()) {
      break;
    }
  }
  if (barrier->flag()) agree(ch.comm, err);  // throws on every rank
  return got.sorted();
}

// One-sided exchange of fixed-size messages: each rank owns a window with one slot per
// rank (a flag byte + the payload, padded to 8 bytes); senders put into slot [my rank] of
// the destination between two fences, receivers scan their slots. O(P) memory per rank.
// The window ends with one more slot, the error flag: a rank whose input failed the checks
// (`err` not empty) puts no message but sets that flag in every rank's window (P puts, on
// the failure path only); after the closing fence every rank sees it and all raise that
// error (agree). The success path runs no collective beyond the window's own.
ByteMessages rma(const Channel& ch, const ByteMessages& send, int64_t fixed_bytes, const std::string& err = "") {
  const int p = comm_size(ch.comm);
  const int me = comm_rank(ch.comm);
  const int64_t slot = (1 + std::max<int64_t>(fixed_bytes, 0) + 7) / 8 * 8;
  const MPI_Aint error_at = static_cast<MPI_Aint>(slot) * p;
  std::vector<char> stage(static_cast<size_t>(slot) * send.ranks.size(), 0);
  // MPI_Win_allocate rather than MPI_Win_create: Open MPI 4.1's shared-memory osc
  // component only serves windows whose memory MPI allocates itself.
  char* base = nullptr;
  MPI_Win win;
  SPC_MPI(MPI_Win_allocate(error_at + 8, 1, MPI_INFO_NULL, ch.comm, &base, &win));
  std::vector<char> window;
  bool someone_failed = false;
  const char one = 1;
  try {
    std::memset(base, 0, static_cast<size_t>(error_at + 8));
    SPC_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    if (!err.empty())
      for (int r = 0; r < p; ++r) SPC_MPI(MPI_Put(&one, 1, MPI_BYTE, r, error_at, 1, MPI_BYTE, win));
    for (size_t i = 0; err.empty() && i < send.ranks.size(); ++i) {
      char* s = stage.data() + static_cast<int64_t>(i) * slot;
      s[0] = 1;
      if (fixed_bytes > 0) std::memcpy(s + 1, msg_ptr(send, i), static_cast<size_t>(fixed_bytes));
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
  ByteMessages out;
  for (int r = 0; r < p; ++r) {
    const char* s = window.data() + static_cast<int64_t>(r) * slot;
    if (!s[0]) continue;
    out.ranks.push_back(r);
    out.bytes.insert(out.bytes.end(), s + 1, s + 1 + fixed_bytes);
    out.offsets.push_back(static_cast<int64_t>(out.bytes.size()));
    if (ch.stats) ch.stats->record_recv(ch.step, ch.intra(r), fixed_bytes);
  }
  return out;
}

// Records inside locality bundles: header then payload padded to 8 bytes.
struct RecordHeader {
  int32_t src;
  int32_t dest;
  int64_t nbytes;
};

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
const std::vector<std::string>& strategy_list() {
  static const std::vector<std::string> s = {"personalized", "nbx", "rma", "locality_personalized", "locality_nbx"};
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

std::string Sdde::check_messages(const ByteMessages& send, size_t elem, int64_t fixed_count) const {
  const int p = comm_.size();
  try {
    if (send.offsets.size() != send.ranks.size() + 1 || send.offsets[0] != 0 ||
        send.offsets.back() != static_cast<int64_t>(send.bytes.size()))
      throw InputError("SDDE: offsets do not match the number of messages and the data size");
    std::vector<char> seen(static_cast<size_t>(p), 0);
    for (size_t i = 0; i < send.ranks.size(); ++i) {
      const int r = send.ranks[i];
      if (r < 0 || r >= p)
        throw InputError("SDDE: destination rank " + std::to_string(r) + " out of range [0, " + std::to_string(p) + ")");
      if (seen[r]) throw InputError("SDDE: two messages to rank " + std::to_string(r) + " in one exchange");
      seen[r] = 1;
      const int64_t n = send.offsets[i + 1] - send.offsets[i];
      if (n < 0) throw InputError("SDDE: offsets must be non-decreasing");
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
  if (strategy == "personalized") return detail::personalized(global, send, err);
  if (strategy == "nbx") return detail::nbx(global, send, err);
  if (strategy == "rma") return detail::rma(global, send, fixed_count * static_cast<int64_t>(elem), err);
  return locality_exchange(send, strategy == "locality_nbx", tag, stats, err);
}

// Locality-aware SDDE (Geyko et al. 2023). Three steps:
//  1. bundle my messages by destination region (messages for my own region go straight
//     to step 3);
//  2. send each bundle to the rank with my local index (modulo the region's size) in that
//     region: one inter-region message per (rank, destination region) pair;
//  3. redistribute every received record inside the region to its final destination.
// Steps 2 and 3 are themselves sparse exchanges (personalized or NBX) on the global and
// the region communicator.
// A failed check on some rank (`err`) travels in step 2's collective: that rank bundles
// nothing, and every rank raises the error there, before step 3.
ByteMessages Sdde::locality_exchange(const ByteMessages& send, bool use_nbx, int tag, Stats* stats,
                                     const std::string& err) {
  const int me = comm_.rank();
  const int my_region = loc_.region();
  const int my_local = loc_.local_rank();
  std::map<int, std::vector<char>> to_region;  // ordered: deterministic send order
  std::vector<char> mine_local;                 // records for ranks in my own region
  for (size_t i = 0; err.empty() && i < send.ranks.size(); ++i) {
    const int d = send.ranks[i];
    const int rd = loc_.region_of(d);
    auto& buf = (rd == my_region) ? mine_local : to_region[rd];
    detail::append_record(buf, me, d, detail::msg_ptr(send, i), send.offsets[i + 1] - send.offsets[i]);
  }
  auto run = [&](const detail::Channel& ch, const ByteMessages& m, const std::string& e) {
    return use_nbx ? detail::nbx(ch, m, e) : detail::personalized(ch, m, e);
  };

  // Step 2: inter-region bundles.
  ByteMessages inter_send;
  for (auto& [rd, buf] : to_region) {
    inter_send.ranks.push_back(loc_.member(rd, my_local % loc_.region_size(rd)));
    inter_send.bytes.insert(inter_send.bytes.end(), buf.begin(), buf.end());
    inter_send.offsets.push_back(static_cast<int64_t>(inter_send.bytes.size()));
  }
  to_region.clear();
  detail::Channel inter{comm_.get(), tag, stats, "inter", [this](int r) { return loc_.same_region(r); }};
  ByteMessages inter_recv = run(inter, inter_send, err);  // raises a failure on every rank

  // Step 3: regroup all records for my region by final destination (local index).
  std::map<int, std::vector<char>> to_local;
  detail::Inbox got;
  auto keep = [&](const detail::RecordHeader& h, const char* payload) {
    if (h.nbytes > 0) std::memcpy(got.append(h.src, h.nbytes), payload, static_cast<size_t>(h.nbytes));
    else got.append(h.src, 0);
  };
  auto route = [&](const detail::RecordHeader& h, const char* payload) {
    if (h.dest == me) {
      keep(h, payload);
    } else {
      detail::append_record(to_local[loc_.local_index_of(h.dest)], h.src, h.dest, payload, h.nbytes);
    }
  };
  detail::for_each_record(mine_local.data(), static_cast<int64_t>(mine_local.size()), route);
  for (size_t i = 0; i < inter_recv.ranks.size(); ++i)
    detail::for_each_record(detail::msg_ptr(inter_recv, i), inter_recv.offsets[i + 1] - inter_recv.offsets[i], route);
  ByteMessages intra_send;
  for (auto& [li, buf] : to_local) {
    intra_send.ranks.push_back(li);
    intra_send.bytes.insert(intra_send.bytes.end(), buf.begin(), buf.end());
    intra_send.offsets.push_back(static_cast<int64_t>(intra_send.bytes.size()));
  }
  detail::Channel intra{local_comm_.get(), tag, stats, "intra", [](int) { return true; }};
  ByteMessages intra_recv = run(intra, intra_send, "");
  for (size_t i = 0; i < intra_recv.ranks.size(); ++i)
    detail::for_each_record(detail::msg_ptr(intra_recv, i), intra_recv.offsets[i + 1] - intra_recv.offsets[i],
                            keep);
  return got.sorted();
}

}  // namespace sparsecomm
