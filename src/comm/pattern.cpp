#include "sparsecomm/comm/pattern.hpp"

#include <algorithm>

namespace sparsecomm {

Pattern::Pattern(PatternSide send, PatternSide recv, int32_t owned_size, int32_t ghost_size)
    : send_(std::move(send)), recv_(std::move(recv)), owned_size_(owned_size), ghost_size_(ghost_size) {}

namespace {

std::string side_error(const PatternSide& s, const char* name, int p, int32_t buffer, const char* buffer_name) {
  const std::string side = std::string("pattern: ") + name + " side: ";
  const size_t n = s.ranks.size();
  if (s.offsets.size() != n + 1)
    return side + std::to_string(n) + " neighbors need " + std::to_string(n + 1) + " offsets, not " +
           std::to_string(s.offsets.size());
  if (s.offsets[0] != 0) return side + "offsets start at " + std::to_string(s.offsets[0]) + ", not 0";
  for (size_t i = 0; i < n; ++i) {
    if (s.ranks[i] < 0 || s.ranks[i] >= p)
      return side + "neighbor rank " + std::to_string(s.ranks[i]) + " outside the communicator's " + std::to_string(p) +
             " ranks";
    if (s.offsets[i + 1] < s.offsets[i])
      return side + "offsets decrease at neighbor " + std::to_string(i) + " (" + std::to_string(s.offsets[i]) + " then " +
             std::to_string(s.offsets[i + 1]) + ")";
  }
  if (s.offsets[n] != s.size())
    return side + "offsets end at " + std::to_string(s.offsets[n]) + " but there are " + std::to_string(s.size()) +
           " entries";
  if (!s.global_ids.empty() && s.global_ids.size() != s.indices.size())
    return side + std::to_string(s.global_ids.size()) + " global ids for " + std::to_string(s.size()) + " entries";
  for (size_t k = 0; k < s.indices.size(); ++k)
    if (s.indices[k] < 0 || s.indices[k] >= buffer)
      return side + "entry " + std::to_string(k) + " at position " + std::to_string(s.indices[k]) + ", outside the " +
             buffer_name + " buffer of " + std::to_string(buffer);
  return "";
}

// Receive side: the ghost map is sorted and partitions are contiguous, so the ghosts of
// one owner are one contiguous run.
PatternSide recv_side(const std::vector<int64_t>& g, const RowPartition& cols) {
  PatternSide r;
  for (size_t i = 0; i < g.size(); ++i) {
    const int owner = cols.owner(g[i]);
    if (r.ranks.empty() || r.ranks.back() != owner) {
      if (!r.ranks.empty()) r.offsets.push_back(static_cast<int64_t>(i));
      r.ranks.push_back(owner);
    }
    r.indices.push_back(static_cast<int32_t>(i));
    r.global_ids.push_back(g[i]);
  }
  if (!r.ranks.empty()) r.offsets.push_back(static_cast<int64_t>(g.size()));
  return r;
}

SparseMessages<int64_t> requests(const PatternSide& r) {
  SparseMessages<int64_t> req;
  for (int i = 0; i < r.num_neighbors(); ++i)
    req.add(r.ranks[i], r.global_ids.data() + r.offsets[i], static_cast<size_t>(r.count(i)));
  return req;
}

// Send side from the requests I received (sorted by source rank).
PatternSide send_side(int me, int64_t cb, int64_t ce, const SparseMessages<int64_t>& got) {
  PatternSide s;
  s.ranks = got.ranks;
  s.offsets = got.offsets;
  s.global_ids = got.data;
  s.indices.reserve(got.data.size());
  for (size_t i = 0; i < got.size(); ++i)
    for (int64_t k = got.offsets[i]; k < got.offsets[i + 1]; ++k) {
      const int64_t gid = got.data[k];
      if (gid < cb || gid >= ce)
        throw InputError("Pattern: rank " + std::to_string(got.ranks[i]) + " asked rank " + std::to_string(me) +
                         " for column " + std::to_string(gid) + ", which it does not own");
      s.indices.push_back(static_cast<int32_t>(gid - cb));
    }
  return s;
}

}  // namespace

Pattern Pattern::from_ghosts(MPI_Comm comm, const RowPartition& owned, const std::vector<int64_t>& ghost_ids, Sdde& sdde,
                             const std::string& strategy, Stats* stats) {
  const int me = comm_rank(comm);
  const int64_t cb = owned.begin(me), ce = owned.end(me);
  std::string err;
  if (owned.num_parts() != comm_size(comm)) err = "Pattern: the partition has the wrong number of parts";
  for (size_t i = 0; i < ghost_ids.size() && err.empty(); ++i) {
    if (ghost_ids[i] < 0 || ghost_ids[i] >= owned.global_size())
      err = "Pattern: ghost index " + std::to_string(ghost_ids[i]) + " out of range [0, " + std::to_string(owned.global_size()) + ")";
    else if (ghost_ids[i] >= cb && ghost_ids[i] < ce)
      err = "Pattern: ghost index " + std::to_string(ghost_ids[i]) + " is owned by this rank";
    else if (i > 0 && ghost_ids[i] <= ghost_ids[i - 1])
      err = "Pattern: ghost indices must be sorted and unique";
  }
  agree(comm, err);
  PatternSide recv = recv_side(ghost_ids, owned);
  SparseMessages<int64_t> req = requests(recv);
  SparseMessages<int64_t> got;
  if (Sdde::fixed_size_only(strategy)) {
    // Fixed-size SDDE for the counts, then the id lists point to point with known sizes
    // (how MPI Advance pairs Alltoall_crs with a variable payload).
    SparseMessages<int64_t> counts;
    for (size_t i = 0; i < req.size(); ++i) counts.add(req.ranks[i], std::vector<int64_t>{req.count(i)});
    SparseMessages<int64_t> rc = sdde.exchange_fixed(counts, 1, strategy, stats);
    ScopedTimer t(stats, "sdde.rma.payload");
    got.ranks = rc.ranks;
    for (size_t i = 0; i < rc.size(); ++i) got.offsets.push_back(got.offsets.back() + rc.data[i]);
    got.data.resize(static_cast<size_t>(got.offsets.back()));
    const int tag = 77;
    MPI_Comm c = sdde.comm();
    std::vector<MPI_Request> reqs(got.size() + req.size(), MPI_REQUEST_NULL);
    for (size_t i = 0; i < got.size(); ++i)
      SPC_MPI(MPI_Irecv(got.data.data() + got.offsets[i], static_cast<int>(got.count(i)), MPI_INT64_T, got.ranks[i], tag,
                        c, &reqs[i]));
    for (size_t i = 0; i < req.size(); ++i) {
      SPC_MPI(MPI_Isend(req.begin(i), static_cast<int>(req.count(i)), MPI_INT64_T, req.ranks[i], tag, c,
                        &reqs[got.size() + i]));
      if (stats) stats->record_send("payload", sdde.locality().same_region(req.ranks[i]), req.count(i) * 8);
    }
    for (size_t i = 0; i < got.size(); ++i)
      if (stats) stats->record_recv("payload", sdde.locality().same_region(got.ranks[i]), got.count(i) * 8);
    // No barrier needed after this: a rank can only reach the payload step of a later call
    // after that call's RMA fences, which every rank must enter first.
    wait_all(reqs);
  } else {
    got = sdde.exchange(req, strategy, stats);
  }
  PatternSide send = agreed(comm, [&] { return send_side(me, cb, ce, got); });
  return Pattern(std::move(send), std::move(recv), static_cast<int32_t>(ce - cb), static_cast<int32_t>(ghost_ids.size()));
}

Pattern Pattern::from_ghosts_reference(MPI_Comm comm, const RowPartition& owned, const std::vector<int64_t>& ghost_ids) {
  const int me = comm_rank(comm);
  const int64_t cb = owned.begin(me), ce = owned.end(me);
  PatternSide recv = recv_side(ghost_ids, owned);
  auto got = reference_exchange(comm, requests(recv));
  PatternSide send = agreed(comm, [&] { return send_side(me, cb, ce, got); });
  return Pattern(std::move(send), std::move(recv), static_cast<int32_t>(ce - cb), static_cast<int32_t>(ghost_ids.size()));
}

std::string Pattern::error(int comm_size) const {
  if (owned_size_ < 0 || ghost_size_ < 0) return "pattern: negative buffer size";
  std::string e = side_error(send_, "send", comm_size, owned_size_, "owned");
  return e.empty() ? side_error(recv_, "receive", comm_size, ghost_size_, "ghost") : e;
}

}  // namespace sparsecomm
