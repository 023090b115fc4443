#pragma once
// The communication pattern of a halo exchange, as an immutable value.
//
// send side: for each neighbor I send to, the local indices (into my owned entries) whose
//            values I pack, and their global ids;
// recv side: for each neighbor I receive from, the positions (into my ghost buffer) where
//            the values go, and their global ids.
// Neighbors are sorted by rank; a neighbor appears at most once per side.
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sparsecomm/comm/sdde.hpp"
#include "sparsecomm/core/row_partition.hpp"

namespace sparsecomm {

struct PatternSide {
  std::vector<int> ranks;
  std::vector<int64_t> offsets{0};   ///< entries of neighbor i: [offsets[i], offsets[i+1])
  std::vector<int32_t> indices;      ///< local positions (pack from / unpack into)
  std::vector<int64_t> global_ids;   ///< global id of each entry
  int num_neighbors() const { return static_cast<int>(ranks.size()); }
  int64_t size() const { return static_cast<int64_t>(indices.size()); }
  int64_t count(int i) const { return offsets[i + 1] - offsets[i]; }
  bool operator==(const PatternSide& o) const {
    return ranks == o.ranks && offsets == o.offsets && indices == o.indices && global_ids == o.global_ids;
  }
};

class Pattern {
 public:
  Pattern() = default;
  Pattern(PatternSide send, PatternSide recv, int32_t owned_size, int32_t ghost_size);

  /// Collective. The halo pattern for arbitrary ghost indices: `ghost_ids` (sorted, unique,
  /// none owned by this rank) are fetched from their owners under `owned` (the partition of
  /// the values). Bad indices are an InputError on every rank.
  static Pattern from_ghosts(MPI_Comm comm, const RowPartition& owned, const std::vector<int64_t>& ghost_ids, Sdde& sdde,
                             const std::string& strategy, Stats* stats = nullptr);
  /// Collective. The same pattern as from_ghosts through a dense MPI_Alltoall(v) (the
  /// direct answer, used to verify the SDDE strategies).
  static Pattern from_ghosts_reference(MPI_Comm comm, const RowPartition& owned, const std::vector<int64_t>& ghost_ids);
  // A matrix's halo pattern (its ghost columns): pattern_from_matrix() in kernels/halo_pattern.hpp.

  const PatternSide& send() const { return send_; }
  const PatternSide& recv() const { return recv_; }
  /// Length of the buffer packed from (owned entries) and unpacked into (ghosts).
  int32_t owned_size() const { return owned_size_; }
  int32_t ghost_size() const { return ghost_size_; }
  /// Local. Why this is not a well-formed pattern on a communicator of `comm_size` ranks, or
  /// "": per side, offsets that start at 0, never decrease and end at the entry count,
  /// neighbor ranks inside the communicator, local positions inside the buffer (owned_size
  /// for sends, ghost_size for receives), one global id per entry or none. make_plan checks
  /// it (a pattern built by hand, or from a Hypre package or a PETSc SF, reaches no
  /// backend malformed).
  std::string error(int comm_size) const;
  /// The transpose exchange: ghosts travel back to their owners (e.g. y += A^T x).
  Pattern reverse() const { return Pattern(recv_, send_, ghost_size_, owned_size_); }

  bool operator==(const Pattern& o) const {
    return send_ == o.send_ && recv_ == o.recv_ && owned_size_ == o.owned_size_ && ghost_size_ == o.ghost_size_;
  }
  bool operator!=(const Pattern& o) const { return !(*this == o); }

 private:
  PatternSide send_, recv_;
  int32_t owned_size_ = 0, ghost_size_ = 0;
};

}  // namespace sparsecomm
