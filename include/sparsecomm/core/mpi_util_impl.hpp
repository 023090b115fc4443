#pragma once
// Template implementations for mpi_util.hpp.
#include <numeric>

namespace sparsecomm {

template <class T>
std::vector<T> alltoallv(MPI_Comm comm, const std::vector<T>& send, const std::vector<int>& send_counts,
                         std::vector<int>* recv_counts_out) {
  const int p = comm_size(comm);
  if (static_cast<int>(send_counts.size()) != p) throw Error("alltoallv: send_counts must have one entry per rank");
  std::vector<int> recv_counts(p);
  SPC_MPI(MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm));
  std::vector<int> sdispl(p + 1, 0), rdispl(p + 1, 0);
  for (int i = 0; i < p; ++i) {
    const long long s = static_cast<long long>(sdispl[i]) + send_counts[i];
    const long long r = static_cast<long long>(rdispl[i]) + recv_counts[i];
    if (s > INT32_MAX || r > INT32_MAX) throw Error("alltoallv: more than 2^31 elements per rank");
    sdispl[i + 1] = static_cast<int>(s);
    rdispl[i + 1] = static_cast<int>(r);
  }
  if (static_cast<size_t>(sdispl[p]) != send.size()) throw Error("alltoallv: counts do not add up to the buffer");
  // Ship as a contiguous type of sizeof(T) bytes: any trivially copyable T works and the
  // int counts stay element counts (bytes would overflow first).
  std::vector<T> recv(static_cast<size_t>(rdispl[p]));
  MPI_Datatype elem;
  SPC_MPI(MPI_Type_contiguous(static_cast<int>(sizeof(T)), MPI_BYTE, &elem));
  SPC_MPI(MPI_Type_commit(&elem));
  int rc = MPI_Alltoallv(send.data(), send_counts.data(), sdispl.data(), elem, recv.data(), recv_counts.data(),
                         rdispl.data(), elem, comm);
  MPI_Type_free(&elem);
  SPC_MPI(rc);
  if (recv_counts_out) *recv_counts_out = std::move(recv_counts);
  return recv;
}

}  // namespace sparsecomm
