#pragma once
// Internal to the SDDE (src/comm/sdde/*.cpp; the interface is sparsecomm/comm/sdde.hpp): what
// its strategies share. The step an exchange runs on (Channel), how it sends and receives
// (post_sends, Inbox), the strategies themselves (personalized, nbx, rma: each in its own
// file, composed by Sdde::exchange_into and the locality-aware steps), how a failed check
// travels (each strategy's own collective, then agree()), NBX's barrier with its receipts
// (NbxBarrier), the records of the locality-aware bundles, and a node's shared-memory window
// (RegionWindow) that the window strategies read their tables, flags and records from.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sparsecomm/comm/sdde.hpp"
#include "core/spin_wait.hpp"

namespace sparsecomm {
namespace detail {
// NBX's barrier (nbx(), nbx.cpp), entered once: arrive(), then test() until every rank arrived.
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
void post_send(const Channel& ch, const Outbox& send, size_t i, bool synchronous, MPI_Request* req);
// Every message of `send`, plain sends (reqs: one request each).
void post_sends(const Channel& ch, const Outbox& send, std::vector<MPI_Request>& reqs);
// Receives the message `st` announced (a probe's status) into `got`, counted in Stats.
void receive_probed(const Channel& ch, const MPI_Status& st, Inbox& got);

// The strategies (a rank whose input failed the checks passes its error in `err`, and every
// rank raises it after the strategy's own collective; `failed_out`: report it there instead,
// nothing delivered, for a later step to carry on):
// the personalized exchange (personalized.cpp; Hoefler, Siebert, Lumsdaine 2010),
void personalized(const Channel& ch, const Outbox& send, const std::string& err, Delivery& into,
                  bool* failed_out = nullptr);
// NBX, with a barrier by messages or a `shared` one (nbx.cpp; same paper),
void nbx(const Channel& ch, const Outbox& send, const std::string& err, Delivery& into, bool* failed_out = nullptr,
         NbxBarrier* shared = nullptr);
// one-sided puts of fixed-size messages (rma.cpp).
void rma(const Channel& ch, const Outbox& send, int64_t fixed_bytes, const std::string& err, Delivery& into);

// Records inside locality bundles: header then payload padded to 8 bytes.
struct RecordHeader {
  int32_t src;
  int32_t dest;
  int64_t nbytes;
};

// Bytes a record of an n-byte message takes in a bundle.
inline size_t record_size(int64_t n) { return sizeof(RecordHeader) + static_cast<size_t>((n + 7) / 8 * 8); }

// Appends the record of an n-byte message from `src` to `dest` to a bundle.
void append_record(std::vector<char>& buf, int src, int dest, const char* p, int64_t n);

// Calls f(header, payload) for every record of a bundle of `len` bytes.
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

// Appends a received record's message to `got` (from its source).
void keep_record(Inbox& got, const RecordHeader& h, const char* payload);

#ifndef SPARSECOMM_SMPI
// The redistribution step of the locality-aware exchange (step 3 of locality.cpp) through an MPI-3
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
// temporary Sdde objects of plan set-ups share it. SddeOptions::window off turns it off
// (agreed over the region at first use, like the node check).
class RegionWindow {
 public:
  /// SddeOptions::window, a switch (parse_bool's spellings): 1 on (also ""), 0 off,
  /// -1 malformed.
  static int window_switch(const std::string& window);
  /// Collective over `region` at its first call: the region's window, or null when the
  /// region is not within one node (or `window`, SddeOptions::window, turns it off) —
  /// alike on its ranks. `slot`: which of the region's windows (an exchange that needs two
  /// at once, node_window across nodes, asks for 0 and 1).
  static RegionWindow* of(MPI_Comm region, int slot, const std::string& window);

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
      spin_wait(
          patience_, [&] { return l->round.load(std::memory_order_acquire) >= r; },
          mpi_progress);  // MPI progress for this rank's own pending traffic
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
      if (len > 0) for_each_record(buffer_of(w) + off, len, keep);
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
  bool publish_row(const Outbox& send, bool failed, int width) {
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
  bool table_messages(const Outbox& send, bool failed, std::vector<std::pair<int, int64_t>>* from) {
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
  bool exchange_messages(const Outbox& send, bool failed, const std::vector<int>& rank_of, LocalOf local_of,
                         Delivery& into) {
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
  explicit RegionWindow(MPI_Comm region);
  ~RegionWindow();
  static int release(MPI_Comm, int, void* v, void*);  // the attribute's delete callback
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
  // per rank (region_window.cpp).
  void resize(int64_t cap);

  MPI_Comm comm_;
  int size_, me_;
  int patience_;  // checks of a flag before yielding the core (NodeComm::patience)
  MPI_Win win_ = MPI_WIN_NULL;
  int64_t cap_ = 0;
  std::vector<char*> base_;
  uint64_t round_ = 0;  // rounds published (publish() calls), this window and its predecessors
  uint64_t sent_ = 0;   // my NBX messages since this window was made (expect())
};

// The personalized exchange where the table of who sends what to whom is read in shared
// memory (personalized.cpp): `table(&from)` fills (source, bytes) of every message to
// expect, in source order, and says whether some rank failed.
void personalized_by_table(const Channel& ch, const Outbox& send, const std::string& err, Delivery& into,
                           const std::function<bool(std::vector<std::pair<int, int64_t>>*)>& table);
#endif
}  // namespace detail
}  // namespace sparsecomm
