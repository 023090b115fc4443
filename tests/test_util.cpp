#include "test_util.hpp"

#include <algorithm>

#include "core/compare.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "sparsecomm/matrix/data_path.hpp"

namespace sparsecomm::test {

int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

std::string find_suitesparse(const std::string& name) {
  try {
    return find_matrix(name);
  } catch (const std::exception&) {
    return "";
  }
}

namespace {
struct TempDir {
  std::string path;
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};
}  // namespace

std::string temp_dir() {
  static TempDir dir;
  if (dir.path.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sparsecomm_test_XXXXXX").string();
    if (!mkdtemp(tmpl.data())) std::abort();
    dir.path = tmpl;
  }
  return dir.path;
}

std::vector<Triplet<double>> sorted(std::vector<Triplet<double>> e) {
  std::sort(e.begin(), e.end(), [](const Triplet<double>& a, const Triplet<double>& b) {
    return a.row != b.row ? a.row < b.row : a.col < b.col;
  });
  return e;
}

::testing::AssertionResult same_entries(const std::vector<Triplet<double>>& a, const std::vector<Triplet<double>>& b) {
  if (a.size() != b.size())
    return ::testing::AssertionFailure() << "sizes differ: " << a.size() << " vs " << b.size();
  for (size_t k = 0; k < a.size(); ++k)
    if (a[k].row != b[k].row || a[k].col != b[k].col || a[k].val != b[k].val)
      return ::testing::AssertionFailure() << "entry " << k << " differs: (" << a[k].row << ", " << a[k].col << ", "
                                           << a[k].val << ") vs (" << b[k].row << ", " << b[k].col << ", "
                                           << b[k].val << ")";
  return ::testing::AssertionSuccess();
}

std::string write_file(const std::string& dir, const std::string& name, const std::string& text) {
  std::string p = dir + "/" + name;
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

}  // namespace sparsecomm::test

namespace sparsecomm::test {

::testing::AssertionResult close_values(const std::vector<double>& got, const std::vector<double>& want, double rtol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << got.size() << " values, expected " << want.size();
  Comparison c = compare(got.data(), want.data(), static_cast<int64_t>(got.size()));
  const double tol = rtol * std::max(1.0, c.scale);
  if (c.nonfinite_mismatches == 0 && c.max_err <= tol) return ::testing::AssertionSuccess();
  for (size_t i = 0; i < got.size(); ++i) {
    Comparison one;
    one.add(got[i], want[i]);
    if (one.nonfinite_mismatches > 0 || one.max_err > tol)
      return ::testing::AssertionFailure() << "at local index " << i << ": " << got[i] << ", expected " << want[i]
                                           << " (" << c.describe() << ", tolerance " << tol << ")";
  }
  return ::testing::AssertionFailure() << c.describe();
}

}  // namespace sparsecomm::test
