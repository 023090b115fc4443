#pragma once
// Template implementation of reference_exchange (sdde.hpp).
#include <numeric>

namespace sparsecomm {

template <class T>
SparseMessages<T> reference_exchange(MPI_Comm comm, const SparseMessages<T>& send) {
  const int p = comm_size(comm);
  // Element counts per destination, plus a "has a message" flag so that zero-length
  // messages are told apart from no message.
  std::vector<int> counts(p, 0), flags(p, 0);
  std::vector<std::vector<T>> per(p);
  for (size_t i = 0; i < send.size(); ++i) {
    const int r = send.ranks[i];
    flags[r] = 1;
    per[r].assign(send.begin(i), send.begin(i) + send.count(i));
    counts[r] = static_cast<int>(send.count(i));
  }
  std::vector<int> rflags(p);
  SPC_MPI(MPI_Alltoall(flags.data(), 1, MPI_INT, rflags.data(), 1, MPI_INT, comm));
  std::vector<T> flat;
  for (int r = 0; r < p; ++r) flat.insert(flat.end(), per[r].begin(), per[r].end());
  std::vector<int> rcounts;
  auto recv = alltoallv(comm, flat, counts, &rcounts);
  SparseMessages<T> out;
  int64_t pos = 0;
  for (int r = 0; r < p; ++r) {
    if (rflags[r]) out.add(r, recv.data() + pos, static_cast<size_t>(rcounts[r]));
    pos += rcounts[r];
  }
  return out;
}

}  // namespace sparsecomm
