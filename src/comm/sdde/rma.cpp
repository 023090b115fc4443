#include "comm/sdde/common.hpp"

namespace sparsecomm {
namespace detail {

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

}  // namespace detail
}  // namespace sparsecomm
