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
  // Ship as bytes so that any trivially copyable T works.
  std::vector<T> recv(static_cast<size_t>(rdispl[p]));
  std::vector<int> sc(p), sd(p), rc(p), rd(p);
  for (int i = 0; i < p; ++i) {
    sc[i] = send_counts[i] * static_cast<int>(sizeof(T));
    sd[i] = sdispl[i] * static_cast<int>(sizeof(T));
    rc[i] = recv_counts[i] * static_cast<int>(sizeof(T));
    rd[i] = rdispl[i] * static_cast<int>(sizeof(T));
  }
  SPC_MPI(MPI_Alltoallv(send.data(), sc.data(), sd.data(), MPI_BYTE, recv.data(), rc.data(), rd.data(), MPI_BYTE,
                        comm));
  if (recv_counts_out) *recv_counts_out = std::move(recv_counts);
  return recv;
}

}  // namespace sparsecomm
