// The shared-memory channel of the shm backends (shm_channel.hpp: the protocol and its
// memory-model argument).
#ifndef SPARSECOMM_SMPI
#include "comm/plan/shm_channel.hpp"

#include <new>

#include "sparsecomm/core/error.hpp"

namespace sparsecomm::detail {

ShmChannel::ShmChannel(MPI_Comm comm) : comm_(comm) {
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

ShmChannel::~ShmChannel() {
  if (win_ != MPI_WIN_NULL) {
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
  }
}

void ShmChannel::connect(const std::vector<int>& readers, const std::vector<int64_t>& offsets, int64_t area,
                         const std::vector<int>& writers) {
  area_ = (area + kLine - 1) / kLine * kLine;
  const int64_t header = kLine * (1 + static_cast<int64_t>(readers.size()));
  // Every writer tells each reader its slot, its segment's offset, its header size and its
  // area (setup messages on the plan's communicator).
  std::vector<int64_t> sent(4 * readers.size()), got(4 * writers.size());
  std::vector<MPI_Request> reqs;
  for (size_t k = 0; k < writers.size(); ++k) {
    reqs.emplace_back();
    SPC_MPI(MPI_Irecv(&got[4 * k], 4, MPI_INT64_T, writers[k], kTag, comm_, &reqs.back()));
  }
  for (size_t k = 0; k < readers.size(); ++k) {
    sent[4 * k] = static_cast<int64_t>(k), sent[4 * k + 1] = offsets[k], sent[4 * k + 2] = header,
    sent[4 * k + 3] = area_;
    reqs.emplace_back();
    SPC_MPI(MPI_Isend(&sent[4 * k], 4, MPI_INT64_T, readers[k], kTag, comm_, &reqs.back()));
  }
  wait_all(reqs);

  // The window: collective over the node. A failure (no shared memory) is agreed.
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  MPI_Comm_set_errhandler(node_.get(), MPI_ERRORS_RETURN);
  char* base = nullptr;
  const int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(header + 2 * area_), 1, info, node_.get(), &base, &win_);
  MPI_Info_free(&info);
  if (allreduce_max(comm_, static_cast<int64_t>(rc != MPI_SUCCESS)))
    throw NotImplementedError("shm: MPI_Win_allocate_shared failed on some rank (no shared memory here)");
  SPC_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_));
  epoch_ = new (base) Epoch(0);
  for (size_t k = 0; k < readers.size(); ++k)
    slots_.push_back(new (base + kLine * (1 + static_cast<int64_t>(k))) Epoch(0));
  buffers_ = base + header;
  SPC_MPI(MPI_Win_sync(win_));
  SPC_MPI(MPI_Barrier(node_.get()));  // every header initialised before anyone reads one
  for (size_t k = 0; k < writers.size(); ++k) {
    MPI_Aint size = 0;
    int disp = 1;
    char* theirs = nullptr;
    SPC_MPI(MPI_Win_shared_query(win_, node_rank(writers[k]), &size, &disp, &theirs));
    In w;
    w.epoch = reinterpret_cast<Epoch*>(theirs);
    w.slot = reinterpret_cast<Epoch*>(theirs + kLine * (1 + got[4 * k]));
    w.offset = got[4 * k + 1];
    w.buffers = theirs + got[4 * k + 2];
    w.area = got[4 * k + 3];
    in_.push_back(w);
  }
}

}  // namespace sparsecomm::detail
#endif  // SPARSECOMM_SMPI
