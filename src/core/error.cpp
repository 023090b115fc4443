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

// The exception of `kind` (the one every rank rethrows after an agreement).
[[noreturn]] void throw_kind(ErrorKind kind, const std::string& msg, int mpi_code) {
  switch (kind) {
    case ErrorKind::input: throw InputError(msg);
    case ErrorKind::not_implemented: throw NotImplementedError(msg);
    case ErrorKind::mpi: throw MpiError(mpi_code != 0 ? mpi_code : MPI_ERR_OTHER, msg);
    default: throw Error(msg);
  }
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
  // Every rank failed with a message an earlier agreement already annotated (an error
  // agreed inside a step, agreed again by the caller): the same error everywhere, said once.
  const bool agreed_before = sums[0] == size && msg.find(" [reported by rank ") != std::string::npos;
  if (size > 1 && !agreed_before) {
    msg += " [reported by rank " + std::to_string(root);
    if (sums[0] > 1) msg += "; " + std::to_string(sums[0]) + " ranks failed";
    msg += "]";
  }
  throw_kind(static_cast<ErrorKind>(header[1]), msg, static_cast<int>(header[2]));
}

bool capture(const std::function<void()>& body, ErrorKind& kind, std::string& err, int& code) {
  try {
    body();
    return true;
  } catch (const NotImplementedError& e) {
    err = e.what(), kind = ErrorKind::not_implemented;
  } catch (const InputError& e) {
    err = e.what(), kind = ErrorKind::input;
  } catch (const MpiError& e) {
    err = e.what(), kind = ErrorKind::mpi, code = e.code();
  } catch (const std::exception& e) {
    err = e.what(), kind = ErrorKind::generic;
  } catch (...) {
    err = "unknown exception (not derived from std::exception)";
  }
  if (err.empty()) err = "error with an empty message";
  return false;
}

}  // namespace detail

void root_computed(MPI_Comm comm, int root, std::vector<double>& values, const std::function<void()>& f) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  detail::ErrorKind kind = detail::ErrorKind::generic;
  std::string err;
  int code = 0;
  const size_t n = values.size();
  const bool ok = rank != root || detail::capture(f, kind, err, code);
  if (values.size() != n) throw std::logic_error("root_computed: f changed the number of values");
  // values, then root's outcome: message length (0: fine), kind, MPI code (exact as doubles).
  values.insert(values.end(), {ok ? 0.0 : static_cast<double>(err.size()), static_cast<double>(kind), static_cast<double>(code)});
  const int rc = MPI_Bcast(values.data(), static_cast<int>(values.size()), MPI_DOUBLE, root, comm);
  const double len = values[n], k = values[n + 1], c = values[n + 2];
  values.resize(n);
  if (rc != MPI_SUCCESS) detail::throw_mpi_error(rc, "MPI_Bcast", __FILE__, __LINE__);
  if (len == 0) return;
  std::vector<char> text(static_cast<size_t>(len));
  if (rank == root) text.assign(err.begin(), err.end());
  SPC_MPI(MPI_Bcast(text.data(), static_cast<int>(text.size()), MPI_CHAR, root, comm));
  std::string msg(text.begin(), text.end());
  int size = 1;
  MPI_Comm_size(comm, &size);
  if (size > 1) msg += " [reported by rank " + std::to_string(root) + "]";
  detail::throw_kind(static_cast<detail::ErrorKind>(static_cast<int>(k)), msg, static_cast<int>(c));
}

void agree(MPI_Comm comm, const std::string& local_error) {
  detail::agree_kind(comm, detail::ErrorKind::input, local_error);
}

}  // namespace sparsecomm
