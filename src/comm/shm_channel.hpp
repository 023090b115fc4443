#pragma once
// The shared-memory channel of the `shm` backends (halo: plan/halo/shm.cpp, gather:
// plan/gather/shm.cpp): the ranks of one node write what their node neighbors need into an
// MPI-3 shared-memory window, and those read it straight out (Hoefler et al., "MPI+MPI: a
// new hybrid approach to parallel programming with MPI plus shared memory", Computing 95,
// 2013). MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) gives the real node (Open MPI's notion
// of host: the emulated cluster's namespaces are separate nodes).
//
// Each rank's segment holds a header and two buffers of `area` bytes (double buffering):
//   header: its epoch (how many exchanges it has published) on one cache line, then one
//           cache line per reader holding the last epoch that reader has finished copying.
// Writer, exchange e: begin_write(e) waits until every reader has finished epoch e - 2 (the
//   last one to use buffer e % 2) and returns that buffer; the writer fills it and calls
//   publish(e). A writer waits for a slow reader only when it is two exchanges ahead.
// Reader: ready(k, e) once writer k's epoch reaches e; data(k, e) is its segment; done(k, e)
//   after copying it out.
// Ordering (C++ memory model, across processes on the same physical memory): the writer's
// stores into the buffer happen-before its release store of the epoch; a reader's acquire
// load that sees e synchronizes with it, so its copy sees the data. The reader's copy
// happens-before its release store into its slot; the writer's acquire load of that slot
// before reusing the buffer synchronizes with it, so the writer never overwrites what a
// reader is still copying. The atomics are lock-free 64-bit (checked at compile time),
// which makes them address-free: valid through each process's own mapping. MPI's part: one
// passive-target epoch (MPI_Win_lock_all) for the channel's lifetime, the unified memory
// model of Open MPI's shared windows. Destruction frees the window: collective over the
// node, like creation (plans are destroyed in the same order on every rank).
#ifndef SPARSECOMM_SMPI
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "sparsecomm/comm/messages.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "core/spin_wait.hpp"

namespace sparsecomm::detail {

class ShmWindow;

/// One lane of a ShmWindow: this rank as a writer to some ranks of its node and as a reader
/// of others, with its own epochs (a plan with several dependent steps gives each step a
/// lane, all in one window).
class ShmChannel {
 public:
  /// Before ShmWindow::connect(). `readers`: the ranks of my node I write to (of the plan's
  /// communicator), each with where its segment starts in my buffers; `writers`: the ranks
  /// of my node I read from (reader k below is writer k here); `area`: my buffer size.
  void declare(std::vector<int> readers, std::vector<int64_t> offsets, int64_t area, std::vector<int> writers) {
    readers_ = std::move(readers), offsets_ = std::move(offsets), writers_ = std::move(writers);
    area_ = (area + kLine - 1) / kLine * kLine;
  }

  /// Writer: waits (calling progress() now and then) until buffer e % 2 is free; returns it.
  template <class Progress>
  char* begin_write(uint64_t e, Progress progress) {
    if (e > 2)
      spin([&] {
        for (Epoch* s : slots_)
          if (s->load(std::memory_order_acquire) < e - 2) return false;
        return true;
      }, progress);
    return buffers_ + static_cast<int64_t>(e % 2) * area_;
  }
  /// Writer: whether begin_write(e) would return at once (every reader done with e - 2).
  bool writable(uint64_t e) const {
    if (e > 2)
      for (Epoch* s : slots_)
        if (s->load(std::memory_order_acquire) < e - 2) return false;
    return true;
  }
  void publish(uint64_t e) { epoch_->store(e, std::memory_order_release); }
  /// Writer, before publish(e): the address (in my process) of the array the one-copy
  /// readers of exchange e copy from, or null (shm_one_copy.hpp). Two slots beside the
  /// epoch, by parity: the slot of e is rewritten at e + 2, after every reader is done with e.
  void publish_source(uint64_t e, const void* p) {
    epoch_[1 + e % 2].store(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)), std::memory_order_relaxed);
  }
  /// Writer: whether reader k (declare()'s order) has finished exchange e.
  bool reader_done(size_t k, uint64_t e) const { return slots_[k]->load(std::memory_order_acquire) >= e; }
  // Who copies a one-copy segment of exchange e (shm_one_copy.hpp), decided once by a
  // compare-and-swap on a word beside reader k's slot: the reader claims it (4e + 1) and
  // reads the writer's array, or the writer, tired of waiting for a reader busy elsewhere
  // (another plan's wait), takes it back (4e + 2), copies the segment into its window
  // buffer as for any segment and marks it there (4e + 3); the reader then reads the window.
  // So a writer's wait() never depends on its readers calling wait() on this plan.
  /// Writer: takes reader k's segment of exchange e back; false if the reader claimed it.
  bool take_back(size_t k, uint64_t e) {
    uint64_t c = claims_[k]->load(std::memory_order_acquire);
    while (c < 4 * e)
      if (claims_[k]->compare_exchange_weak(c, 4 * e + 2, std::memory_order_acq_rel)) return true;
    return false;
  }
  /// Writer: the segment taken back is in the window.
  void taken_back(size_t k, uint64_t e) { claims_[k]->store(4 * e + 3, std::memory_order_release); }
  bool has_readers() const { return !readers_.empty(); }
  /// My buffer `parity` (0 or 1), after connect().
  char* buffer(int parity) const { return buffers_ + static_cast<int64_t>(parity) * area_; }

  /// Reader side, writer k (in declare()'s order).
  bool ready(size_t k, uint64_t e) const { return in_[k].epoch->load(std::memory_order_acquire) >= e; }
  template <class Progress>
  void wait_ready(size_t k, uint64_t e, Progress progress) const {
    spin([&] { return ready(k, e); }, progress);
  }
  const char* data(size_t k, uint64_t e) const {
    return in_[k].buffers + static_cast<int64_t>(e % 2) * in_[k].area + in_[k].offset;
  }
  /// Writer k's source of exchange e (publish_source), once ready(k, e).
  const void* source(size_t k, uint64_t e) const {
    return reinterpret_cast<const void*>(static_cast<uintptr_t>(in_[k].epoch[1 + e % 2].load(std::memory_order_relaxed)));
  }
  void done(size_t k, uint64_t e) { in_[k].slot->store(e, std::memory_order_release); }
  /// Reader: claims writer k's one-copy segment of exchange e (take_back); false when the
  /// writer took it back (then, on return, it is in the window).
  bool claim(size_t k, uint64_t e) const {
    Epoch* w = in_[k].slot + 1;
    uint64_t c = w->load(std::memory_order_acquire);
    while (c < 4 * e)
      if (w->compare_exchange_weak(c, 4 * e + 1, std::memory_order_acq_rel)) return true;
    // Taken back: wait until the copy is in the window (4e + 3). The word can be past it
    // already: a writer whose reader is slow takes back exchange e + 1 too (4e + 6, 4e + 7)
    // before this reader comes to exchange e; every value >= 4e + 3 follows the copy of e
    // (the 4e + 3 store releases it; later stores are the same writer's, after it).
    spin([&] { return in_window(k, e); }, [] {});
    return false;
  }
  /// Reader: undoes claim(k, e) (which returned true) when the read failed: the word goes
  /// back below 4e (to 4e - 1, "exchange e - 1 taken back", at or above anything it held
  /// before the claim), so the writer, not past exchange e while the reader has not marked
  /// it done, takes the segment back (take_back) when tired of waiting; in_window(k, e)
  /// says when the copy is there.
  void unclaim(size_t k, uint64_t e) const { (in_[k].slot + 1)->store(4 * e - 1, std::memory_order_release); }
  /// Reader: whether writer k has copied its one-copy segment of exchange e into the window.
  bool in_window(size_t k, uint64_t e) const { return (in_[k].slot + 1)->load(std::memory_order_acquire) >= 4 * e + 3; }
  size_t writers() const { return writers_.size(); }
  /// Waits (as the channel's own waits do) until ready().
  template <class Ready, class Progress>
  void wait_until(Ready ready, Progress progress) const {
    spin(ready, progress);
  }

 private:
  friend class ShmWindow;
  using Epoch = std::atomic<uint64_t>;
  static_assert(Epoch::is_always_lock_free, "shm needs lock-free 64-bit atomics (address-free across processes)");
  static constexpr int64_t kLine = 64;  // one cache line per flag

  template <class Ready, class Progress>
  void spin(Ready ready, Progress progress) const {
    spin_wait(patience_, ready, progress);  // core/spin_wait.hpp: why progress at every yield
  }
  int64_t header() const { return kLine * (1 + static_cast<int64_t>(readers_.size())); }
  int64_t bytes() const { return header() + 2 * area_; }

  struct In {
    Epoch* epoch = nullptr;        // the writer's epoch
    Epoch* slot = nullptr;         // my slot in the writer's header
    const char* buffers = nullptr; // the writer's first buffer
    int64_t area = 0, offset = 0;  // its buffer size, my segment's start
  };
  std::vector<int> readers_, writers_;
  std::vector<int64_t> offsets_;
  Epoch* epoch_ = nullptr;
  std::vector<Epoch*> slots_, claims_;  // reader k's done epoch; the claim word beside it
  char* buffers_ = nullptr;
  int64_t area_ = 0;
  int patience_ = 256;  // NodeComm::patience (ShmWindow::try_connect sets it)
  std::vector<In> in_;
};

/// The ranks of a communicator's node: the node communicator (MPI_COMM_TYPE_SHARED) and
/// each node rank's rank in the communicator. Kept on the communicator (node_of()).
struct NodeComm {
  Comm node;
  std::map<int, int> node_rank_of;  // rank of the communicator -> node rank
  // Checks a window wait makes before it yields the core: none where the node is
  // oversubscribed — more MPI processes on it than online CPUs (the launcher's count of local
  // ranks where it gives one, ShmSettings::local_ranks, else this communicator's), or Open
  // MPI told to yield when idle (mpi_yield_when_idle: the user says so) — as MPI's own waits
  // do; else 256. ShmSettings::patience overrides.
  int patience = 256;
};
/// What decides NodeComm::patience besides the node's size: the user's and the launcher's
/// word, which the entry points read from the environment (src/interop/environment.cpp:
/// SPARSECOMM_SHM_PATIENCE, OMPI_MCA_mpi_yield_when_idle, OMPI_COMM_WORLD_LOCAL_SIZE or
/// MPI_LOCALNRANKS). A local performance choice: ranks of one node may differ without harm.
struct ShmSettings {
  int patience = -1;             ///< >= 0: the checks before yielding; -1: decided as NodeComm says
  bool yield_when_idle = false;  ///< Open MPI's mpi_yield_when_idle is set
  long local_ranks = 0;          ///< the launcher's count of this node's processes; 0: unknown
};
/// Local: the settings of the NodeComms made from now on (those made keep theirs).
void set_shm_settings(const ShmSettings& s);
ShmSettings shm_settings();
/// Collective on the first call per communicator (a split), then local: its NodeComm.
std::shared_ptr<const NodeComm> node_of(MPI_Comm comm);

/// The node's shared-memory window of one plan: one segment per rank holding its lanes one
/// after the other (each: its header, then its two buffers).
class ShmWindow {
 public:
  /// `comm`: the plan's communicator (its setup messages); `parent`: the communicator it
  /// duplicates (same ranks), which keeps the node communicator for every plan on it
  /// (node_of(); collective on the first plan only).
  ShmWindow(MPI_Comm comm, MPI_Comm parent);
  ~ShmWindow();
  ShmWindow(const ShmWindow&) = delete;
  ShmWindow& operator=(const ShmWindow&) = delete;

  /// The node rank of `rank` of the plan's communicator, or -1 when it is on another node.
  int node_rank(int rank) const {
    auto it = node_->node_rank_of.find(rank);
    return it == node_->node_rank_of.end() ? -1 : it->second;
  }
  /// The node's communicator (MPI_COMM_TYPE_SHARED).
  MPI_Comm node_comm() const { return node_->node.get(); }
  /// A new lane (before connect(); the reference stays valid).
  ShmChannel& add_lane() {
    lanes_.emplace_back(new ShmChannel);
    return *lanes_.back();
  }
  /// Collective over the plan's communicator, after every lane's declare() (every rank has
  /// the same number of lanes). false, alike on every rank of the node, where the MPI cannot
  /// allocate a shared window there (then no lane may be used; lanes only join ranks of one
  /// node, so nodes need not agree).
  bool try_connect();
  /// try_connect(), or NotImplementedError on every rank (`who` names the backend).
  void connect(const char* who);

 private:
  static constexpr int kTag = 100;  // lane l: kTag + l
  MPI_Comm comm_;
  std::shared_ptr<const NodeComm> node_;
  MPI_Win win_ = MPI_WIN_NULL;
  std::vector<std::unique_ptr<ShmChannel>> lanes_;
};

// One exchange of a shm backend: this rank's window written and published, the on-node
// writers' segments read into the receive buffer as they are published, the off-node
// messages beside them. The backends only say what goes where: the reads (add_read, in
// connect()'s writer order), the off-node receives and sends (add_recv, add_send), and what
// they write into the area begin() returns.
//
// The area a writer fills is its window's buffer e % 2 when it has on-node readers (so the
// plan packs straight into shared memory: one copy by the writer, one by each reader), else
// its private area. Off-node sends go out of the same area at their offsets: with a window,
// one set of requests per buffer; buffer e % 2 is reused only at e + 2, after wait(e)
// completed those sends.
class ShmExchange {
 public:
  ShmExchange(MPI_Comm comm, MPI_Comm parent) : window(comm, parent), channel(window.add_lane()) {}
  ShmWindow window;
  ShmChannel& channel;

  /// Writer k's segment goes to `to` (bytes), in the buffer given to wait()/test().
  void add_read(int64_t to, int64_t bytes) {
    reads_.push_back({to, bytes});
    done_.push_back(0);
  }
  /// An off-node receive into `buf`; an off-node send of the written area's [offset, offset
  /// + bytes). Before init().
  void add_recv(char* buf, int64_t bytes, int peer, int tag) { recvs_.add(false, buf, bytes, peer, tag); }
  void add_send(int64_t offset, int64_t bytes, int peer, int tag) { sends_out_.push_back({offset, bytes, peer, tag}); }
  /// After window.connect(): fixes the messages. `own`: the private area (used when this
  /// rank has no on-node readers).
  void init(MPI_Comm comm, bool persistent, const char* own) {
    const int sets = channel.has_readers() ? 2 : 1;
    for (int p = 0; p < sets; ++p) {
      const char* area = channel.has_readers() ? channel.buffer(p) : own;
      for (const Send& m : sends_out_) sends_[p].add(true, area + m.offset, m.bytes, m.peer, m.tag);
      sends_[p].init(comm, persistent);
    }
    recvs_.init(comm, persistent);
  }

  /// Begins the next exchange: posts the receives and returns the area to fill — the
  /// window's buffer (after waiting, only if this rank is two exchanges ahead of a reader)
  /// or nullptr: fill the private area.
  char* begin() {
    const uint64_t e = ++epoch_;
    recvs_.start();
    std::fill(done_.begin(), done_.end(), 0);
    return channel.has_readers() ? channel.begin_write(e, [&] { progress(); }) : nullptr;
  }
  /// Publishes the filled area (with `source`: ShmChannel::publish_source) and posts the
  /// off-node sends.
  void publish(const void* source = nullptr) {
    if (channel.has_readers()) {
      channel.publish_source(epoch_, source);
      channel.publish(epoch_);
    }
    sending_ = &sends_[channel.has_readers() ? epoch_ % 2 : 0];
    sending_->start();
  }
  /// Every on-node segment copied into `recv` and every off-node message complete.
  void wait(char* recv) {
    wait([&](size_t k, const char* data, const void*) { copy(k, recv, data); });
  }
  /// wait(), each on-node segment k copied by copy(k, its data in the window, the writer's
  /// published source) once published.
  template <class Copy>
  void wait(Copy copy) {
    for (size_t k = 0; k < reads_.size(); ++k)
      if (!done_[k]) {
        channel.wait_ready(k, epoch_, [&] { progress(); });
        read(k, copy);
      }
    recvs_.wait();
    sending_->wait();
  }
  /// wait() without blocking: copies what is published; true once everything is in.
  bool test(char* recv) {
    return test([&](size_t k, const char* data, const void*) { copy(k, recv, data); });
  }
  template <class Copy>
  bool test(Copy copy) {
    bool all = true;
    for (size_t k = 0; k < reads_.size(); ++k)
      if (!done_[k]) {
        if (channel.ready(k, epoch_)) read(k, copy);
        else all = false;
      }
    const bool msgs = recvs_.test();
    return sending_->test() && msgs && all;
  }
  /// The exchange under way (1, 2, ...).
  uint64_t epoch() const { return epoch_; }
  /// Reader: writer k's one-copy segment of this exchange, claimed but not read (the read
  /// failed), handed back: returns once the writer has copied it into the window, where
  /// copy's `data` finds it. Waits for the writer's wait() on this plan (it takes a segment
  /// back after ShmPlan::kTakeBack checks), with MPI progress and `meanwhile` (the caller's
  /// own take-backs: two ranks whose reads of each other both failed each wait here for the
  /// other's take-back, so each must take its own segments back while it waits).
  template <class Meanwhile>
  void give_back(size_t k, Meanwhile&& meanwhile) {
    channel.unclaim(k, epoch_);
    channel.wait_until([&] { return channel.in_window(k, epoch_); }, [&] {
      progress();
      meanwhile();
    });
  }
  /// Writer k's segment: (its place in the receive buffer, its bytes).
  int64_t read_to(size_t k) const { return reads_[k].to; }
  int64_t read_bytes(size_t k) const { return reads_[k].bytes; }

 private:
  // While spinning on the window: MPI progress for every message in flight, also where
  // this plan has none of its own (core/spin_wait.hpp).
  void progress() {
    recvs_.test();
    sending_->test();
    mpi_progress();
  }
  void copy(size_t k, char* recv, const char* data) const {
    if (reads_[k].bytes > 0)  // (an empty segment's ghost array may be null)
      std::memcpy(recv + reads_[k].to, data, static_cast<size_t>(reads_[k].bytes));
  }
  // Segment k copied, then marked done, also where the copy fails (its writer waits on it).
  template <class Copy>
  void read(size_t k, Copy& copy) {
    struct Done {
      ShmExchange* x;
      size_t k;
      ~Done() {
        x->channel.done(k, x->epoch_);
        x->done_[k] = 1;
      }
    } mark{this, k};
    copy(k, channel.data(k, epoch_), channel.source(k, epoch_));
  }
  struct Read {
    int64_t to, bytes;
  };
  struct Send {
    int64_t offset, bytes;
    int peer, tag;
  };
  std::vector<Read> reads_;
  std::vector<Send> sends_out_;
  std::vector<char> done_;
  Messages recvs_, sends_[2];
  Messages* sending_ = &sends_[0];
  uint64_t epoch_ = 0;
};

}  // namespace sparsecomm::detail
#endif  // SPARSECOMM_SMPI
