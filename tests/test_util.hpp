#pragma once
// Helpers shared by the tests.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cctype>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "sparsecomm/interop/environment.hpp"
#include "sparsecomm/matrix/dist_csr.hpp"

namespace sparsecomm::test {

int rank();
int size();

/// Resolves a SuiteSparse matrix by name via the data search path; "" if absent
/// (the caller then GTEST_SKIPs, visibly).
std::string find_suitesparse(const std::string& name);

/// A fresh temporary directory (rank-local, removed at exit).
std::string temp_dir();

/// Entries sorted by (row, column).
std::vector<Triplet<double>> sorted(std::vector<Triplet<double>> e);

/// Exact equality of two sorted entry lists, reporting the first difference.
::testing::AssertionResult same_entries(const std::vector<Triplet<double>>& a, const std::vector<Triplet<double>>& b);

/// Every entry of `got` matches `want` (core/compare.hpp): finite entries within
/// rtol * max(1, max|want|), non-finite ones only by the same non-finite value; the first
/// difference is reported. Local (this rank's entries); a NaN can never pass.
::testing::AssertionResult close_values(const std::vector<double>& got, const std::vector<double>& want, double rtol);

/// Writes `text` into `dir`/`name` and returns the path.
std::string write_file(const std::string& dir, const std::string& name, const std::string& text);

/// A gtest parameter name from a string (e.g. a SuiteSparse "Group/name"): gtest accepts only
/// letters, digits and '_', so every other character becomes '_'.
inline std::string param_name(std::string n) {
  for (auto& c : n)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}
/// INSTANTIATE_TEST_SUITE_P's name generator for string parameters (param_name of each).
struct StringParamName {
  template <class Info>
  std::string operator()(const Info& info) const {
    return param_name(info.param);
  }
};

/// INSTANTIATE_TEST_SUITE_P's name generator for pairs of strings (e.g. a matrix and a
/// backend): param_name of each, joined by "__".
struct StringPairParamName {
  template <class Info>
  std::string operator()(const Info& info) const {
    return param_name(std::get<0>(info.param)) + "__" + param_name(std::get<1>(info.param));
  }
};

/// The message of the exception of type E that `f` throws, or a description of what happened
/// instead (never a message a test expects: "<no exception>", "<wrong exception type: ...>").
template <class E>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<wrong exception type: ") + e.what() + ">";
  }
  return "<no exception>";
}

/// Sets `name` to `value` (nullopt: unsets it), then reads the environment again as an
/// entry point does (apply_environment()): what the library's variables mean to the calls
/// that follow, for the tests of those variables.
inline void set_env(const char* name, const std::optional<std::string>& value) {
  if (value) setenv(name, value->c_str(), 1);
  else unsetenv(name);
  apply_environment();
}

/// Sets (or unsets) an environment variable for a scope (set_env()), then restores it.
class EnvGuard {
 public:
  EnvGuard(const char* name, const std::optional<std::string>& value) : EnvGuard(name) { set_env(name, value); }
  /// Changes nothing now: puts `name` back as it is, whatever the scope sets it to.
  explicit EnvGuard(const char* name) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
  }
  ~EnvGuard() { set_env(name_, old_); }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace sparsecomm::test

/// A value-parameterised suite `suite` over a registry's backend names (`names`: e.g.
/// backend_names()), each backend a gtest case of its own named after it, so a new backend is
/// tested with no list to edit and one failing backend neither hides the others nor goes
/// unnamed. (The list is read when gtest registers the tests, the same on every rank, so every
/// rank runs the same cases in the same order, as the verdicts' agreement in
/// mpi_gtest_main.cpp needs.) GetParam() is the backend's name.
#define SPC_BACKEND_SUITE(suite, names)                          \
  class suite : public ::testing::TestWithParam<std::string> {}; \
  INSTANTIATE_TEST_SUITE_P(Registry, suite, ::testing::ValuesIn(names), ::sparsecomm::test::StringParamName())

/// Skips the current test on every rank (visibly) when a SuiteSparse matrix is absent.
#define SPC_REQUIRE_MATRIX(var, name)                                                   \
  std::string var = ::sparsecomm::test::find_suitesparse(name);                          \
  if (var.empty()) GTEST_SKIP() << "SuiteSparse matrix " << name << " not found on the data search path"
