#pragma once
// Contiguous block partition of a global index range [0, n) over P parts.
#include <mpi.h>

#include <cstdint>
#include <vector>

namespace sparsecomm {

class RowPartition {
 public:
  RowPartition() : offsets_{0} {}

  /// Balanced blocks: the first n % P parts get one extra row (like PETSc's PETSC_DECIDE).
  static RowPartition balanced(int64_t n, int nparts);
  /// Explicit offsets (size P+1, non-decreasing, starting at 0). Throws InputError otherwise.
  static RowPartition from_offsets(std::vector<int64_t> offsets);
  /// Collective: each rank passes its local size.
  static RowPartition from_local_sizes(MPI_Comm comm, int64_t local_size);

  int64_t global_size() const { return offsets_.back(); }
  int num_parts() const { return static_cast<int>(offsets_.size()) - 1; }
  int64_t begin(int part) const { return offsets_[part]; }
  int64_t end(int part) const { return offsets_[part + 1]; }
  int64_t local_size(int part) const { return offsets_[part + 1] - offsets_[part]; }
  /// The part owning global index `gid` (O(log P)); throws InputError if out of range.
  int owner(int64_t gid) const;
  const std::vector<int64_t>& offsets() const { return offsets_; }

  bool operator==(const RowPartition& o) const { return offsets_ == o.offsets_; }
  bool operator!=(const RowPartition& o) const { return !(*this == o); }

 private:
  std::vector<int64_t> offsets_;
};

}  // namespace sparsecomm
