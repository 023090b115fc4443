// The shared-memory window of the shm backends and of the aggregation steps between ranks
// of one node (shm_channel.hpp: the protocol and its memory-model argument).
#ifndef SPARSECOMM_SMPI
#include "comm/plan/shm_channel.hpp"

#include <new>

#include "sparsecomm/core/error.hpp"

namespace sparsecomm::detail {

ShmWindow::ShmWindow(MPI_Comm comm) : comm_(comm) {
  MPI_Comm node = MPI_COMM_NULL;
  SPC_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  node_ = Comm::adopt(node);
  MPI_Group g_node, g_all;
  SPC_MPI(MPI_Comm_group(node_.get(), &g_node));
  SPC_MPI(MPI_Comm_group(comm, &g_all));
  const int nn = node_.size();
  std::vector<int> node_ranks(static_cast<size_t>(nn)), ranks(static_cast<size_t>(nn), MPI_UNDEFINED);
  for (int i = 0; i < nn; ++i) node_ranks[static_cast<size_t>(i)] = i;
  SPC_MPI(MPI_Group_translate_ranks(g_node, nn, node_ranks.data(), g_all, ranks.data()));
  MPI_Group_free(&g_node);
  MPI_Group_free(&g_all);
  for (int i = 0; i < nn; ++i) node_rank_of_[ranks[static_cast<size_t>(i)]] = i;
}

ShmWindow::~ShmWindow() {
  if (win_ != MPI_WIN_NULL) {
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
  }
}

void ShmWindow::connect(const char* who) {
  if (!try_connect())
    throw NotImplementedError(std::string(who) + ": MPI_Win_allocate_shared failed on some rank (no shared memory here)");
}

bool ShmWindow::try_connect() {
  constexpr int kMeta = 5;
  // Where each lane starts in my segment.
  std::vector<int64_t> base(lanes_.size() + 1, 0);
  for (size_t l = 0; l < lanes_.size(); ++l) base[l + 1] = base[l] + lanes_[l]->bytes();
  // Every writer tells each reader, per lane: its slot, its segment's offset, where the
  // lane starts in the writer's segment, the lane's header size and its area (setup messages on
  // the plan's communicator; a (writer, reader) pair meets at most once per lane).
  size_t nsent = 0, ngot = 0;
  for (const auto& c : lanes_) nsent += c->readers_.size(), ngot += c->writers_.size();
  std::vector<int64_t> sent(kMeta * nsent), got(kMeta * ngot);
  std::vector<MPI_Request> reqs;
  reqs.reserve(nsent + ngot);
  size_t is = 0, ig = 0;
  for (size_t l = 0; l < lanes_.size(); ++l) {
    const ShmChannel& c = *lanes_[l];
    for (size_t k = 0; k < c.writers_.size(); ++k, ++ig) {
      reqs.emplace_back();
      SPC_MPI(MPI_Irecv(&got[kMeta * ig], kMeta, MPI_INT64_T, c.writers_[k], kTag + static_cast<int>(l), comm_, &reqs.back()));
    }
    for (size_t k = 0; k < c.readers_.size(); ++k, ++is) {
      int64_t* m = &sent[kMeta * is];
      m[0] = static_cast<int64_t>(k), m[1] = c.offsets_[k], m[2] = base[l], m[3] = c.header(), m[4] = c.area_;
      reqs.emplace_back();
      SPC_MPI(MPI_Isend(m, kMeta, MPI_INT64_T, c.readers_[k], kTag + static_cast<int>(l), comm_, &reqs.back()));
    }
  }
  wait_all(reqs);

  // The window: collective over the node. A failure (no shared memory) is agreed.
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  MPI_Comm_set_errhandler(node_.get(), MPI_ERRORS_RETURN);
  char* mine = nullptr;
  const int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(base.back()), 1, info, node_.get(), &mine, &win_);
  MPI_Info_free(&info);
  if (allreduce_max(comm_, static_cast<int64_t>(rc != MPI_SUCCESS))) {
    if (rc == MPI_SUCCESS) MPI_Win_free(&win_);
    win_ = MPI_WIN_NULL;
    return false;
  }
  SPC_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_));
  for (size_t l = 0; l < lanes_.size(); ++l) {
    ShmChannel& c = *lanes_[l];
    char* at = mine + base[l];
    c.epoch_ = new (at) ShmChannel::Epoch(0);
    for (size_t k = 0; k < c.readers_.size(); ++k)
      c.slots_.push_back(new (at + ShmChannel::kLine * (1 + static_cast<int64_t>(k))) ShmChannel::Epoch(0));
    c.buffers_ = at + c.header();
  }
  SPC_MPI(MPI_Win_sync(win_));
  SPC_MPI(MPI_Barrier(node_.get()));  // every header initialised before anyone reads one
  ig = 0;
  for (auto& lane : lanes_) {
    ShmChannel& c = *lane;
    for (size_t k = 0; k < c.writers_.size(); ++k, ++ig) {
      MPI_Aint size = 0;
      int disp = 1;
      char* theirs = nullptr;
      SPC_MPI(MPI_Win_shared_query(win_, node_rank(c.writers_[k]), &size, &disp, &theirs));
      const int64_t* g = &got[kMeta * ig];
      char* lane = theirs + g[2];
      ShmChannel::In w;
      w.epoch = reinterpret_cast<ShmChannel::Epoch*>(lane);
      w.slot = reinterpret_cast<ShmChannel::Epoch*>(lane + ShmChannel::kLine * (1 + g[0]));
      w.buffers = lane + g[3];
      w.offset = g[1];
      w.area = g[4];
      c.in_.push_back(w);
    }
  }
  return true;
}

}  // namespace sparsecomm::detail
#endif  // SPARSECOMM_SMPI
