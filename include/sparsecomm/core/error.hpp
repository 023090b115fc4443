#pragma once
// Errors in sparsecomm are exceptions. A check that may fail on some ranks only is
// agreed across the communicator first (see agree()), so that bad input on one rank
// never leaves the others waiting in a collective.
#include <mpi.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace sparsecomm {

/// Base class of every error thrown by the library.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bad user input: malformed file, out-of-range index, inconsistent sizes, unknown name.
class InputError : public Error {
 public:
  using Error::Error;
};

/// A feature that is planned but not implemented yet says so instead of pretending.
class NotImplementedError : public Error {
 public:
  using Error::Error;
};

/// An MPI call returned an error code; the message carries MPI's error string.
class MpiError : public Error {
 public:
  MpiError(int code, const std::string& what) : Error(what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

namespace detail {
[[noreturn]] void throw_mpi_error(int code, const char* call, const char* file, int line);
}  // namespace detail

/// Checks the return code of an MPI call and throws MpiError with MPI's error string.
/// Our duplicated communicators use MPI_ERRORS_RETURN so that this check is reached.
#define SPC_MPI(call)                                                              \
  do {                                                                             \
    int spc_mpi_rc_ = (call);                                                      \
    if (spc_mpi_rc_ != MPI_SUCCESS)                                                \
      ::sparsecomm::detail::throw_mpi_error(spc_mpi_rc_, #call, __FILE__, __LINE__); \
  } while (0)

/// Collective over `comm`. Every rank passes its local error message ("" = fine).
/// If any rank reports an error, every rank throws the same exception: the message
/// (and error kind) of the lowest failing rank, with the number of failing ranks.
/// Returns normally on every rank when nobody failed.
///
///   std::string err = local_ok ? "" : "index out of range";
///   agree(comm, err);   // throws everywhere or nowhere
void agree(MPI_Comm comm, const std::string& local_error);

namespace detail {
// Kind codes carried through agreement so every rank rethrows the same type.
enum class ErrorKind : int { generic = 0, input = 1, not_implemented = 2, mpi = 3 };
void agree_kind(MPI_Comm comm, ErrorKind kind, const std::string& local_error, int mpi_code = 0);
/// Runs `body`; an exception it throws becomes (kind, message, MPI code) and false.
bool capture(const std::function<void()>& body, ErrorKind& kind, std::string& err, int& code);
}  // namespace detail

/// Collective over `comm`: `f` runs on `root` only and fills `values`, whose size every rank
/// already has; one broadcast hands them to every rank together with root's outcome. If f
/// threw on root, every rank throws the same error (as agreed() would; a second broadcast,
/// on that path only). For work only one rank does, where agreed() would add a reduction.
void root_computed(MPI_Comm comm, int root, std::vector<double>& values, const std::function<void()>& f);

/// Collective. Runs `f` on every rank; if it throws on any rank (a std::exception),
/// every rank throws the same error after agreeing. Returns f's result otherwise.
/// Use around local work that may fail on some ranks only (parsing, validation).
///
///   auto part = agreed(comm, [&] { return parse_my_chunk(); });
template <class F>
auto agreed(MPI_Comm comm, F&& f) -> decltype(f()) {
  using R = decltype(f());
  std::string err;
  detail::ErrorKind kind = detail::ErrorKind::generic;
  int code = 0;
  auto run = [&](auto&& body) { detail::capture(body, kind, err, code); };
  if constexpr (std::is_void_v<R>) {
    bool threw = true;
    run([&] { f(); threw = false; });
    if (threw && err.empty()) err = "error with an empty message";
    detail::agree_kind(comm, kind, err, code);
  } else {
    R result{};
    bool threw = true;
    run([&] { result = f(); threw = false; });
    if (threw && err.empty()) err = "error with an empty message";
    detail::agree_kind(comm, kind, err, code);
    return result;
  }
}

}  // namespace sparsecomm
