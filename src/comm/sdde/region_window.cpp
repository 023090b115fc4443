// A node's shared-memory window for the SDDE (RegionWindow, common.hpp): how it is made,
// grown and freed, and whether a region gets one at all. Not under SMPI (no shared windows).
#include "comm/sdde/common.hpp"

#ifndef SPARSECOMM_SMPI
#include <new>

#include "comm/shm_channel.hpp"  // detail::node_of: the node's patience for flag waits
#include "core/parse.hpp"

namespace sparsecomm {
namespace detail {

int RegionWindow::window_switch(const std::string& window) {
  bool on = true;
  if (!window.empty() && !parse_bool(window, on)) return -1;
  return on ? 1 : 0;
}

RegionWindow* RegionWindow::of(MPI_Comm region, int slot, const std::string& window_setting) {
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
  // A malformed SddeOptions::window is -1, which the minimum carries to every member as
  // the error.
  const int window = window_switch(window_setting);
  if (window <= 0) within = window;
  int all = 0;
  SPC_MPI(MPI_Allreduce(&within, &all, 1, MPI_INT, MPI_MIN, region));
  if (all < 0)  // (the failing member's words on every member: agree's error path)
    agree(region, within >= 0 ? "" : "SPARSECOMM_SDDE_WINDOW='" + window_setting +
                                         "': valid values: 0, off, false, no (messages instead of the "
                                         "shared-memory windows) or 1, on, true, yes (the default)");
  RegionWindow* w = all ? new RegionWindow(region) : nullptr;
  SPC_MPI(MPI_Comm_set_attr(region, keyval, w));
  return w;
}

RegionWindow::RegionWindow(MPI_Comm region)
    : comm_(region), size_(comm_size(region)), me_(comm_rank(region)), patience_(node_of(region)->patience) {
  resize(std::max<int64_t>(kFirst, 8 * static_cast<int64_t>(size_)));  // (a table row fits: table_messages)
}

RegionWindow::~RegionWindow() {
  if (win_ != MPI_WIN_NULL && !mpi_finalized()) {
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
  }
}

int RegionWindow::release(MPI_Comm, int, void* v, void*) {
  delete static_cast<RegionWindow*>(v);
  return MPI_SUCCESS;
}

// Collective over the region: a window of a header line and two buffers of `cap` bytes
// per rank. My line says this round (nothing of the old window is read again), and the
// caller meets the region before anyone reads the new one (the constructor here; a
// growth in publish() after its rewrite).
void RegionWindow::resize(int64_t cap) {
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

}  // namespace detail
}  // namespace sparsecomm
#endif
