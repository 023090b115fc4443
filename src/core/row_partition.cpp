#include "sparsecomm/core/row_partition.hpp"

#include <algorithm>
#include <string>

#include "sparsecomm/core/error.hpp"
#include "sparsecomm/core/mpi_util.hpp"

namespace sparsecomm {

RowPartition RowPartition::balanced(int64_t n, int nparts) {
  if (n < 0) throw InputError("RowPartition: negative size " + std::to_string(n));
  if (nparts < 1) throw InputError("RowPartition: need at least one part");
  RowPartition r;
  r.offsets_.clear();
  r.n_ = n, r.parts_ = nparts, r.base_ = n / nparts, r.extra_ = n % nparts;
  return r;
}

RowPartition RowPartition::from_offsets(std::vector<int64_t> offsets) {
  if (offsets.size() < 2) throw InputError("RowPartition: offsets need at least two entries");
  if (offsets[0] != 0) throw InputError("RowPartition: offsets must start at 0");
  for (size_t i = 1; i < offsets.size(); ++i)
    if (offsets[i] < offsets[i - 1]) throw InputError("RowPartition: offsets must be non-decreasing");
  RowPartition r;
  r.offsets_ = std::move(offsets);
  return r;
}

RowPartition RowPartition::from_local_sizes(MPI_Comm comm, int64_t local_size) {
  const int p = comm_size(comm);
  // Equal sizes everywhere (the common case of a generated or evenly split problem): the
  // balanced form, from one allreduce, without a table of P sizes.
  int64_t mm[2] = {local_size, -local_size}, all[2];
  SPC_MPI(MPI_Allreduce(mm, all, 2, MPI_INT64_T, MPI_MAX, comm));
  if (all[0] == -all[1] && all[0] >= 0 && all[0] <= INT64_MAX / p) return balanced(all[0] * p, p);
  std::vector<int64_t> sizes(p);
  SPC_MPI(MPI_Allgather(&local_size, 1, MPI_INT64_T, sizes.data(), 1, MPI_INT64_T, comm));
  std::vector<int64_t> off(static_cast<size_t>(p) + 1, 0);
  std::string err;
  for (int i = 0; i < p; ++i) {
    if (sizes[i] < 0) err = "RowPartition: rank " + std::to_string(i) + " has a negative local size";
    off[i + 1] = off[i] + sizes[i];
  }
  if (!err.empty()) throw InputError(err);  // same data on every rank: all throw together
  return from_offsets(std::move(off));
}

int RowPartition::owner(int64_t gid) const {
  if (gid < 0 || gid >= global_size())
    throw InputError("RowPartition: global index " + std::to_string(gid) + " out of range [0, " +
                     std::to_string(global_size()) + ")");
  if (!explicit_()) {
    // The first extra_ parts hold base_ + 1 rows, the rest base_ (>= 1 past them, as gid < n).
    const int64_t big = extra_ * (base_ + 1);
    return static_cast<int>(gid < big ? gid / (base_ + 1) : extra_ + (gid - big) / base_);
  }
  // upper_bound finds the first offset > gid; empty parts are skipped naturally.
  auto it = std::upper_bound(offsets_.begin(), offsets_.end(), gid);
  return static_cast<int>(it - offsets_.begin()) - 1;
}

std::vector<int64_t> RowPartition::offsets() const {
  if (explicit_()) return offsets_;
  std::vector<int64_t> off(static_cast<size_t>(parts_) + 1);
  for (int q = 0; q <= parts_; ++q) off[static_cast<size_t>(q)] = begin(q);
  return off;
}

bool RowPartition::operator==(const RowPartition& o) const {
  if (!explicit_() && !o.explicit_()) return n_ == o.n_ && parts_ == o.parts_;
  if (num_parts() != o.num_parts() || global_size() != o.global_size()) return false;
  for (int q = 1; q < num_parts(); ++q)
    if (begin(q) != o.begin(q)) return false;
  return true;
}

}  // namespace sparsecomm
