#pragma once
// Contiguous block partition of a global index range [0, n) over P parts.
//
// Memory per rank: a balanced partition (balanced(), or from_local_sizes() when every rank
// passes the same size) is stored as (n, P) and answers begin/end/owner arithmetically, in
// O(1) bytes whatever P; an explicit one holds its P+1 offsets (8 (P+1) bytes: 800 KB at
// 100,000 ranks, per partition).
#include <mpi.h>

#include <algorithm>
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
  /// Collective: each rank passes its local size. Equal sizes on every rank (one allreduce
  /// finds out) give the balanced form; otherwise the sizes are allgathered (O(P)).
  static RowPartition from_local_sizes(MPI_Comm comm, int64_t local_size);

  int64_t global_size() const { return explicit_() ? offsets_.back() : n_; }
  int num_parts() const { return explicit_() ? static_cast<int>(offsets_.size()) - 1 : parts_; }
  int64_t begin(int part) const {
    return explicit_() ? offsets_[part] : base_ * part + std::min<int64_t>(part, extra_);
  }
  int64_t end(int part) const { return begin(part + 1); }
  int64_t local_size(int part) const { return end(part) - begin(part); }
  /// The part owning global index `gid` (O(log P), O(1) when balanced); throws InputError if out of range.
  int owner(int64_t gid) const;
  /// The P+1 offsets (built on demand for a balanced partition: O(P)).
  std::vector<int64_t> offsets() const;
  /// Whether this partition is stored as (n, P) (no per-part table).
  bool is_balanced_form() const { return !explicit_(); }

  bool operator==(const RowPartition& o) const;
  bool operator!=(const RowPartition& o) const { return !(*this == o); }

 private:
  bool explicit_() const { return !offsets_.empty(); }
  std::vector<int64_t> offsets_;  ///< explicit form; empty in the balanced form
  int64_t n_ = 0, base_ = 0, extra_ = 0;  ///< balanced form: n rows, n / P per part, n % P parts one more
  int parts_ = 0;
};

}  // namespace sparsecomm
