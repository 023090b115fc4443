#include "sparsecomm/core/row_partition.hpp"

#include <algorithm>
#include <string>

#include "sparsecomm/core/error.hpp"
#include "sparsecomm/core/mpi_util.hpp"

namespace sparsecomm {

RowPartition RowPartition::balanced(int64_t n, int nparts) {
  if (n < 0) throw InputError("RowPartition: negative size " + std::to_string(n));
  if (nparts < 1) throw InputError("RowPartition: need at least one part");
  std::vector<int64_t> off(static_cast<size_t>(nparts) + 1);
  const int64_t base = n / nparts, extra = n % nparts;
  off[0] = 0;
  for (int p = 0; p < nparts; ++p) off[p + 1] = off[p] + base + (p < extra ? 1 : 0);
  RowPartition r;
  r.offsets_ = std::move(off);
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
  // upper_bound finds the first offset > gid; empty parts are skipped naturally.
  auto it = std::upper_bound(offsets_.begin(), offsets_.end(), gid);
  return static_cast<int>(it - offsets_.begin()) - 1;
}

}  // namespace sparsecomm
