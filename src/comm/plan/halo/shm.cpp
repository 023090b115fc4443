// shm: neighbors on the same node through an MPI-3 shared-memory window, the others
// point-to-point (as p2p). MPI-3 shared memory as in Hoefler et al., "MPI+MPI: a new
// hybrid approach to parallel programming with MPI plus shared memory" (Computing 95,
// 2013): MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) gives the real node (Open MPI's notion
// of host, so the emulated cluster's namespaces are separate nodes), and
// MPI_Win_allocate_shared a segment every rank of the node can load from.
//
// Each rank's segment holds a header and two copies (double buffering) of the part of its
// packed send buffer that goes to ranks of its node:
//   header: its epoch (how many exchanges it has published) on one cache line, then one
//           cache line per reader (a rank of the node it sends to) holding the last epoch
//           that reader has finished copying.
// start()  (writer) waits until every reader has finished epoch e - 2 (the one that used
//          buffer e % 2 before), copies the on-node part of the packed send buffer into
//          buffer e % 2, then publishes epoch e. A writer waits for a slow reader only when
//          it is two exchanges ahead, never for a node-wide barrier.
// wait()   (reader) for each writer of its node: waits until the writer's epoch reaches e,
//          copies its own segment straight into the receive buffer, then records e in its
//          slot of that writer's header.
// Ordering (C++ memory model, across processes on the same physical memory): the writer's
// copy into the buffer happens-before its release store of the epoch; a reader's acquire
// load that sees e synchronizes with it, so its copy sees the data. The reader's copy
// happens-before its release store into its slot; the writer's acquire load of that slot
// before reusing the buffer synchronizes with it, so the writer never overwrites what a
// reader is still copying. The atomics are lock-free 64-bit (checked at compile time),
// which is what makes them address-free, i.e. valid through each process's own mapping of
// the segment. MPI's part: one passive-target epoch (MPI_Win_lock_all) for the plan's
// lifetime, the unified memory model of Open MPI's shared windows.
//
// Waiting spins on the flag, yields the core after a few hundred checks (ranks are often
// oversubscribed here), and drives MPI's progress for the point-to-point part meanwhile.
// Destroying the plan frees the window: collective over the node, like its creation.
#ifndef SPARSECOMM_SMPI  // SimGrid's SMPI has no shared-memory windows
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <new>

#include "sparsecomm/comm/messages.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/comm/virt/plan_stats.hpp"
#include "sparsecomm/core/mpi_util.hpp"

namespace sparsecomm {
namespace {

using Epoch = std::atomic<uint64_t>;
static_assert(Epoch::is_always_lock_free, "shm needs lock-free 64-bit atomics (address-free across processes)");
constexpr int64_t kLine = 64;  // one cache line per flag

// Waits until ready() holds, yielding the core now and then and calling progress().
template <class Ready, class Progress>
void spin_until(Ready ready, Progress progress) {
  for (int i = 0; !ready(); ++i) {
    if (i % 64 == 63) progress();
    if (i >= 256) sched_yield();
  }
}

class ShmPlan final : public Plan {
 public:
  ShmPlan(const Pattern& p, const Locality& loc, MPI_Comm comm, const PlanOptions& opt)
      : Plan("shm", p, loc, comm, opt) {
    MPI_Comm node = MPI_COMM_NULL;
    SPC_MPI(MPI_Comm_split_type(this->comm(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    node_ = Comm::adopt(node);
    // The plan communicator's rank of every node rank, and back.
    MPI_Group g_node, g_all;
    SPC_MPI(MPI_Comm_group(node_.get(), &g_node));
    SPC_MPI(MPI_Comm_group(this->comm(), &g_all));
    const int nn = node_.size();
    std::vector<int> node_ranks(static_cast<size_t>(nn)), all_ranks(static_cast<size_t>(nn));
    for (int i = 0; i < nn; ++i) node_ranks[static_cast<size_t>(i)] = i;
    SPC_MPI(MPI_Group_translate_ranks(g_node, nn, node_ranks.data(), g_all, all_ranks.data()));
    MPI_Group_free(&g_node);
    MPI_Group_free(&g_all);
    std::map<int, int> node_rank_of;  // plan rank -> node rank, for ranks of my node
    for (int i = 0; i < nn; ++i) node_rank_of[all_ranks[static_cast<size_t>(i)]] = i;

    const auto& s = p.send();
    const auto& r = p.recv();
    const int64_t eb = elem_bytes();
    // Sends: on-node segments laid out one after another in my buffers; a reader's slot is
    // its position among my on-node receivers.
    struct Out {
      int node_rank;
      int64_t from, bytes, at;  // in send_buf(), size, offset in my buffers
    };
    std::vector<Out> out;
    int64_t at = 0;
    for (int i = 0; i < s.num_neighbors(); ++i) {
      const int64_t bytes = s.count(i) * eb;
      auto it = node_rank_of.find(s.ranks[i]);
      if (it == node_rank_of.end()) {
        p2p_.add(true, send_buf() + s.offsets[i] * eb, bytes, s.ranks[i], kTag);
        count_send("direct", s.ranks[i], bytes);
        continue;
      }
      out.push_back({it->second, s.offsets[i] * eb, bytes, at});
      at += bytes;
      count_send("direct", s.ranks[i], bytes);  // one transfer per neighbor, as p2p (virt::direct_halo_counts)
    }
    for (int i = 0; i < r.num_neighbors(); ++i) {
      const int64_t bytes = r.count(i) * eb;
      auto it = node_rank_of.find(r.ranks[i]);
      if (it == node_rank_of.end()) {
        p2p_.add(false, recv_buf() + r.offsets[i] * eb, bytes, r.ranks[i], kTag);
        count_recv("direct", r.ranks[i], bytes);
        continue;
      }
      in_.push_back({it->second, r.offsets[i] * eb, bytes, 0, 0, nullptr, nullptr, nullptr});
      count_recv("direct", r.ranks[i], bytes);
    }
    p2p_.init(this->comm(), opt.persistent_requests);
    area_ = (at + kLine - 1) / kLine * kLine;
    nreaders_ = static_cast<int64_t>(out.size());
    const int64_t header = kLine * (1 + nreaders_);

    // Every writer tells each of its readers where that reader's segment lies in its
    // buffers and which slot is the reader's (setup messages on the plan communicator).
    std::vector<int64_t> sent(2 * out.size()), got(2 * in_.size());
    std::vector<MPI_Request> reqs;
    for (size_t k = 0; k < in_.size(); ++k) {
      reqs.emplace_back();
      SPC_MPI(MPI_Irecv(&got[2 * k], 2, MPI_INT64_T, all_ranks[static_cast<size_t>(in_[k].node_rank)], kSetupTag,
                        this->comm(), &reqs.back()));
    }
    for (size_t k = 0; k < out.size(); ++k) {
      sent[2 * k] = out[k].at, sent[2 * k + 1] = static_cast<int64_t>(k);
      reqs.emplace_back();
      SPC_MPI(MPI_Isend(&sent[2 * k], 2, MPI_INT64_T, all_ranks[static_cast<size_t>(out[k].node_rank)], kSetupTag,
                        this->comm(), &reqs.back()));
    }
    wait_all(reqs);

    // The window: collective over the node. A failure (no shared memory) is agreed.
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    MPI_Comm_set_errhandler(node_.get(), MPI_ERRORS_RETURN);
    char* base = nullptr;
    const int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(header + 2 * area_), 1, info, node_.get(), &base,
                                           &win_);
    MPI_Info_free(&info);
    if (allreduce_max(this->comm(), static_cast<int64_t>(rc != MPI_SUCCESS)))
      throw NotImplementedError("shm: MPI_Win_allocate_shared failed on some rank (no shared memory here)");
    SPC_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_));
    epoch_flag_ = new (base) Epoch(0);
    for (int64_t k = 0; k < nreaders_; ++k) slots_.push_back(new (base + kLine * (1 + k)) Epoch(0));
    buffers_ = base + header;
    for (const Out& o : out) copies_.push_back({o.from, o.at, o.bytes});
    SPC_MPI(MPI_Win_sync(win_));
    SPC_MPI(MPI_Barrier(node_.get()));  // every header initialised before anyone reads one
    for (size_t k = 0; k < in_.size(); ++k) {
      MPI_Aint size = 0;
      int disp = 1;
      char* theirs = nullptr;
      SPC_MPI(MPI_Win_shared_query(win_, in_[k].node_rank, &size, &disp, &theirs));
      In& w = in_[k];
      w.at = got[2 * k];
      w.slot = got[2 * k + 1];
      w.epoch = reinterpret_cast<Epoch*>(theirs);
      w.my_slot = reinterpret_cast<Epoch*>(theirs + kLine * (1 + w.slot));
      w.buffers = theirs;  // + the writer's header size, exchanged below
    }
    // Each writer's header size and area, for its readers (a second setup exchange).
    std::vector<int64_t> layout_out{header, area_}, layout_in(2 * in_.size());
    reqs.clear();
    for (size_t k = 0; k < in_.size(); ++k) {
      reqs.emplace_back();
      SPC_MPI(MPI_Irecv(&layout_in[2 * k], 2, MPI_INT64_T, all_ranks[static_cast<size_t>(in_[k].node_rank)],
                        kSetupTag + 1, this->comm(), &reqs.back()));
    }
    for (const Out& o : out) {
      reqs.emplace_back();
      SPC_MPI(MPI_Isend(layout_out.data(), 2, MPI_INT64_T, all_ranks[static_cast<size_t>(o.node_rank)], kSetupTag + 1,
                        this->comm(), &reqs.back()));
    }
    wait_all(reqs);
    for (size_t k = 0; k < in_.size(); ++k) {
      in_[k].buffers += layout_in[2 * k];
      in_[k].area = layout_in[2 * k + 1];
    }
    done_.assign(in_.size(), 0);
  }

  ~ShmPlan() override {
    finish_if_active();
    if (win_ != MPI_WIN_NULL) {
      MPI_Win_unlock_all(win_);
      MPI_Win_free(&win_);
    }
  }

  bool supports_test() const override { return true; }

 protected:
  void do_start() override {
    const uint64_t e = ++epoch_;
    p2p_.start();
    if (nreaders_ > 0) {
      // Buffer e % 2 was last read in epoch e - 2: every reader must be past it.
      if (e > 2)
        spin_until(
            [&] {
              for (Epoch* s : slots_)
                if (s->load(std::memory_order_acquire) < e - 2) return false;
              return true;
            },
            [&] { p2p_.test(); });
      char* buf = buffers_ + static_cast<int64_t>(e % 2) * area_;
      for (const Copy& c : copies_) std::memcpy(buf + c.at, send_buf() + c.from, static_cast<size_t>(c.bytes));
      epoch_flag_->store(e, std::memory_order_release);
    }
    std::fill(done_.begin(), done_.end(), 0);
  }

  void do_wait() override {
    for (size_t k = 0; k < in_.size(); ++k)
      if (!done_[k]) {
        spin_until([&] { return in_[k].epoch->load(std::memory_order_acquire) >= epoch_; }, [&] { p2p_.test(); });
        read(k);
      }
    p2p_.wait();
  }

  bool do_test() override {
    bool all = true;
    for (size_t k = 0; k < in_.size(); ++k)
      if (!done_[k]) {
        if (in_[k].epoch->load(std::memory_order_acquire) >= epoch_) read(k);
        else all = false;
      }
    return p2p_.test() && all;
  }

 private:
  // Copies writer k's segment of this epoch into the receive buffer and releases it.
  void read(size_t k) {
    In& w = in_[k];
    const char* buf = w.buffers + static_cast<int64_t>(epoch_ % 2) * w.area;
    std::memcpy(recv_buf() + w.to, buf + w.at, static_cast<size_t>(w.bytes));
    w.my_slot->store(epoch_, std::memory_order_release);
    done_[k] = 1;
  }

  static constexpr int kTag = 12, kSetupTag = 13;
  struct In {
    int node_rank;
    int64_t to, bytes;     // in recv_buf(), size
    int64_t at, slot;      // offset in the writer's buffers, my slot in its header
    Epoch* epoch;          // the writer's epoch
    Epoch* my_slot;        // my slot in the writer's header
    const char* buffers;   // the writer's first buffer
    int64_t area = 0;      // the writer's buffer size (the second buffer follows)
  };
  struct Copy {
    int64_t from, at, bytes;
  };
  Comm node_;
  MPI_Win win_ = MPI_WIN_NULL;
  Messages p2p_;
  std::vector<In> in_;
  std::vector<Copy> copies_;
  std::vector<Epoch*> slots_;
  std::vector<char> done_;
  Epoch* epoch_flag_ = nullptr;
  char* buffers_ = nullptr;
  int64_t area_ = 0, nreaders_ = 0;
  uint64_t epoch_ = 0;
};

}  // namespace

namespace detail {
void register_shm() {
  register_backend("shm",
                   "on-node neighbors through an MPI-3 shared-memory window (one copy in, one out), the others "
                   "point-to-point",
                   [](const Pattern& p, const Locality& l, MPI_Comm c, const PlanOptions& o) {
                     return std::unique_ptr<Plan>(new ShmPlan(p, l, c, o));
                   },
                   BackendHooks{virt::direct_halo_counts, {}, 1});
}
}  // namespace detail

}  // namespace sparsecomm
#endif  // SPARSECOMM_SMPI
