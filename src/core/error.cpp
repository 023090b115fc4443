#include "sparsecomm/core/error.hpp"

#include <climits>
#include <string>
#include <vector>

namespace sparsecomm {
namespace detail {

void throw_mpi_error(int code, const char* call, const char* file, int line) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS) len = 0;
  std::string msg = std::string("MPI error in ") + call + " (" + file + ":" + std::to_string(line) +
                    "): " + std::string(buf, static_cast<size_t>(len));
  throw MpiError(code, msg);
}

void agree_kind(MPI_Comm comm, ErrorKind kind, const std::string& local_error, int mpi_code) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const bool failed = !local_error.empty();
  // One allreduce answers both "did anyone fail" (count) and "who is first" (min rank).
  int local[2] = {failed ? rank : INT_MAX, failed ? 1 : 0};
  int mins[1], sums[1];
  SPC_MPI(MPI_Allreduce(&local[0], mins, 1, MPI_INT, MPI_MIN, comm));
  if (mins[0] == INT_MAX) return;  // nobody failed: the common path costs one allreduce
  SPC_MPI(MPI_Allreduce(&local[1], sums, 1, MPI_INT, MPI_SUM, comm));
  const int root = mins[0];
  long long header[3] = {static_cast<long long>(local_error.size()), static_cast<long long>(kind), mpi_code};
  SPC_MPI(MPI_Bcast(header, 3, MPI_LONG_LONG, root, comm));
  std::vector<char> text(static_cast<size_t>(header[0]));
  if (rank == root) text.assign(local_error.begin(), local_error.end());
  if (header[0] > 0) SPC_MPI(MPI_Bcast(text.data(), static_cast<int>(header[0]), MPI_CHAR, root, comm));
  std::string msg(text.begin(), text.end());
  if (size > 1) {
    msg += " [reported by rank " + std::to_string(root);
    if (sums[0] > 1) msg += "; " + std::to_string(sums[0]) + " ranks failed";
    msg += "]";
  }
  switch (static_cast<ErrorKind>(header[1])) {
    case ErrorKind::input: throw InputError(msg);
    case ErrorKind::not_implemented: throw NotImplementedError(msg);
    case ErrorKind::mpi: throw MpiError(header[2] != 0 ? static_cast<int>(header[2]) : MPI_ERR_OTHER, msg);
    default: throw Error(msg);
  }
}

}  // namespace detail

void agree(MPI_Comm comm, const std::string& local_error) {
  detail::agree_kind(comm, detail::ErrorKind::input, local_error);
}

}  // namespace sparsecomm
