// The shared-memory window of the shm backends and of the aggregation steps between ranks
// of one node (shm_channel.hpp: the protocol and its memory-model argument).
#ifndef SPARSECOMM_SMPI
#include "comm/shm_channel.hpp"

#include <unistd.h>

#include <algorithm>
#include <new>

#include "core/process_default.hpp"
#include "sparsecomm/core/error.hpp"

namespace sparsecomm::detail {

namespace {
// NodeComm::patience, from what this process can see without communicating.
int patience(int node_size) {
  const ShmSettings s = shm_settings();
  if (s.patience >= 0) return s.patience;
  if (s.yield_when_idle) return 0;
  const long local = s.local_ranks > 0 ? s.local_ranks : node_size;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);  // the machine's, whatever a rank is bound to
  return cpus > 0 && local > cpus ? 0 : 256;
}
}  // namespace

void set_shm_settings(const ShmSettings& s) { set_process_default(s); }
ShmSettings shm_settings() { return process_default<ShmSettings>(); }

std::shared_ptr<const NodeComm> node_of(MPI_Comm comm) {
  auto& kept = comm_attached<std::shared_ptr<const NodeComm>>(comm);
  if (kept) return kept;
  auto n = std::make_shared<NodeComm>();
  MPI_Comm node = MPI_COMM_NULL;
  SPC_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  n->node = Comm::adopt(node);
  MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);  // a failed window allocation is agreed
  MPI_Group g_node, g_all;
  SPC_MPI(MPI_Comm_group(node, &g_node));
  SPC_MPI(MPI_Comm_group(comm, &g_all));
  const int nn = n->node.size();
  std::vector<int> node_ranks(static_cast<size_t>(nn)), ranks(static_cast<size_t>(nn), MPI_UNDEFINED);
  for (int i = 0; i < nn; ++i) node_ranks[static_cast<size_t>(i)] = i;
  SPC_MPI(MPI_Group_translate_ranks(g_node, nn, node_ranks.data(), g_all, ranks.data()));
  MPI_Group_free(&g_node);
  MPI_Group_free(&g_all);
  for (int i = 0; i < nn; ++i) n->node_rank_of[ranks[static_cast<size_t>(i)]] = i;
  n->patience = patience(nn);
  kept = std::move(n);
  return kept;
}

ShmWindow::ShmWindow(MPI_Comm comm, MPI_Comm parent) : comm_(comm), node_(node_of(parent)) {}

ShmWindow::~ShmWindow() {
  if (win_ != MPI_WIN_NULL && !mpi_finalized()) {
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
  }
}

void ShmWindow::connect(const char* who) {
  if (allreduce_max(comm_, static_cast<int64_t>(!try_connect())))
    throw NotImplementedError(std::string(who) + ": MPI_Win_allocate_shared failed on some rank (no shared memory here)");
}

bool ShmWindow::try_connect() {
  for (auto& lane : lanes_) lane->patience_ = node_->patience;
  constexpr int kMeta = 5;
  // Where each lane starts in my segment.
  std::vector<int64_t> base(lanes_.size() + 1, 0);
  for (size_t l = 0; l < lanes_.size(); ++l) base[l + 1] = base[l] + lanes_[l]->bytes();

  // The window: collective over the node; a failure is agreed there (one reduction, which
  // also orders the allocation before anyone's setup messages below).
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  char* mine = nullptr;
  const MPI_Comm node = node_->node.get();
  const int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(base.back()), 1, info, node, &mine, &win_);
  MPI_Info_free(&info);
  if (allreduce_max(node, static_cast<int64_t>(rc != MPI_SUCCESS))) {
    if (rc == MPI_SUCCESS) MPI_Win_free(&win_);
    win_ = MPI_WIN_NULL;
    return false;
  }
  SPC_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_));
  // My lanes' headers, initialised before the setup messages that let readers find them
  // (a reader touches a header only after the message; MPI_Win_sync on both sides makes
  // the stores visible in the unified model): no barrier over the node.
  for (size_t l = 0; l < lanes_.size(); ++l) {
    ShmChannel& c = *lanes_[l];
    char* at = mine + base[l];
    c.epoch_ = new (at) ShmChannel::Epoch(0);
    for (int j = 1; j <= 2; ++j) new (at + j * static_cast<int64_t>(sizeof(ShmChannel::Epoch))) ShmChannel::Epoch(0);
    for (size_t k = 0; k < c.readers_.size(); ++k) {
      char* line = at + ShmChannel::kLine * (1 + static_cast<int64_t>(k));
      c.slots_.push_back(new (line) ShmChannel::Epoch(0));
      c.claims_.push_back(new (line + sizeof(ShmChannel::Epoch)) ShmChannel::Epoch(0));
    }
    c.buffers_ = at + c.header();
  }
  SPC_MPI(MPI_Win_sync(win_));
  // Every writer tells each reader, per lane: its slot, its segment's offset, where the
  // lane starts in the writer's segment, the lane's header size and its area (setup
  // messages on the plan's communicator; a (writer, reader) pair meets once per lane).
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
  SPC_MPI(MPI_Win_sync(win_));
  ig = 0;
  for (auto& lane : lanes_) {
    ShmChannel& c = *lane;
    for (size_t k = 0; k < c.writers_.size(); ++k, ++ig) {
      MPI_Aint size = 0;
      int disp = 1;
      char* theirs = nullptr;
      SPC_MPI(MPI_Win_shared_query(win_, node_rank(c.writers_[k]), &size, &disp, &theirs));
      const int64_t* g = &got[kMeta * ig];
      char* lane_at = theirs + g[2];
      ShmChannel::In w;
      w.epoch = reinterpret_cast<ShmChannel::Epoch*>(lane_at);
      w.slot = reinterpret_cast<ShmChannel::Epoch*>(lane_at + ShmChannel::kLine * (1 + g[0]));
      w.buffers = lane_at + g[3];
      w.offset = g[1];
      w.area = g[4];
      c.in_.push_back(w);
    }
  }
  return true;
}

}  // namespace sparsecomm::detail
#endif  // SPARSECOMM_SMPI
