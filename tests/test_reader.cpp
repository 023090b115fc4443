// Tests of the Matrix Market reader (parse_mtx, read_mtx_header, read_matrix_market) and of
// the data search path (find_matrix, list_matrices, largest_matrix).
//
// Every rank writes the same small files into its own temporary directory, so local
// parses can be checked on every rank and collective reads see identical input.
// Suites whose name contains "SuiteSparse" need real files from the data search path;
// they are registered separately and skip visibly when a file is absent.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <mpi.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sparsecomm/core/error.hpp"
#include "sparsecomm/matrix/data_path.hpp"
#include "sparsecomm/matrix/dist_csr.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"
#include "sparsecomm/matrix/ordering.hpp"
#include "test_util.hpp"

namespace sparsecomm {
namespace {

namespace fs = std::filesystem;
using Entries = std::vector<Triplet<double>>;
using Dense = std::vector<std::vector<double>>;

std::string write_mtx(const std::string& name, const std::string& text) {
  return test::write_file(test::temp_dir(), name, text);
}

std::string write_gz(const std::string& name, const std::string& text) {
  const std::string path = test::temp_dir() + "/" + name;
  gzFile f = gzopen(path.c_str(), "wb");
  if (!f) return "";
  const int n = gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  return n == static_cast<int>(text.size()) ? path : "";
}

// Sorted by (row, col), repeated positions summed: the form a DistCsr stores.
Entries canonical(Entries e) {
  std::sort(e.begin(), e.end(), [](const auto& a, const auto& b) { return a.row != b.row ? a.row < b.row : a.col < b.col; });
  Entries out;
  for (const auto& t : e) {
    if (!out.empty() && out.back().row == t.row && out.back().col == t.col) out.back().val += t.val;
    else out.push_back(t);
  }
  return out;
}

Dense to_dense(const Entries& e, int64_t rows, int64_t cols) {
  Dense d(static_cast<size_t>(rows), std::vector<double>(static_cast<size_t>(cols), 0.0));
  for (const auto& t : e) d.at(static_cast<size_t>(t.row)).at(static_cast<size_t>(t.col)) += t.val;
  return d;
}

bool same_entries(const Entries& a, const Entries& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].row != b[i].row || a[i].col != b[i].col || a[i].val != b[i].val) return false;
  return true;
}

// What every rank must hold: exactly the rows of its part, and a ghost map that is sorted
// and equal to the off-rank columns its entries really use.
void check_layout(const DistCsr<double>& a, const RowPartition& rows, const RowPartition& cols) {
  const int rank = test::rank();
  EXPECT_EQ(a.row_partition(), rows);
  EXPECT_EQ(a.col_partition(), cols);
  EXPECT_EQ(a.row_begin(), rows.begin(rank));
  EXPECT_EQ(a.local_rows(), rows.local_size(rank));
  EXPECT_EQ(a.local_cols(), cols.local_size(rank));
  const int64_t rb = rows.begin(rank), re = rows.end(rank), cb = cols.begin(rank), ce = cols.end(rank);
  std::set<int64_t> used_ghosts;
  const Entries mine = a.local_triplets();
  for (const auto& t : mine) {
    EXPECT_GE(t.row, rb);
    EXPECT_LT(t.row, re);
    if (t.col < cb || t.col >= ce) used_ghosts.insert(t.col);
  }
  const auto& g = a.ghost_ids();
  EXPECT_TRUE(std::adjacent_find(g.begin(), g.end(), [](int64_t x, int64_t y) { return x >= y; }) == g.end())
      << "ghost map not strictly increasing";
  EXPECT_EQ(std::vector<int64_t>(used_ghosts.begin(), used_ghosts.end()), g);
  int64_t local = static_cast<int64_t>(mine.size()), sum = 0;
  MPI_Allreduce(&local, &sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(a.global_nnz(), sum);
}

// Gathers `a` and compares it with a dense matrix; also checks the default layout and
// that every nonzero of `expected` is one stored entry (the files below store no zeros).
void expect_matrix(const DistCsr<double>& a, int64_t rows, int64_t cols, const Dense& expected) {
  const int p = test::size();
  EXPECT_EQ(a.global_rows(), rows);
  EXPECT_EQ(a.global_cols(), cols);
  const RowPartition rp = RowPartition::balanced(rows, p);
  check_layout(a, rp, rows == cols ? rp : RowPartition::balanced(cols, p));
  const Entries all = a.gather_all();
  EXPECT_EQ(canonical(all).size(), all.size()) << "a position is stored twice";
  EXPECT_EQ(to_dense(all, rows, cols), expected);
  int64_t nonzeros = 0;
  for (const auto& r : expected)
    for (double v : r) nonzeros += v != 0.0;
  EXPECT_EQ(a.global_nnz(), nonzeros);
}

DistCsr<double> read_text(const std::string& name, const std::string& text, const MtxReadOptions& opt = {}) {
  return read_matrix_market(MPI_COMM_WORLD, write_mtx(name, text), opt);
}

bool is_symmetric(const Entries& all, double sign = 1.0) {
  std::map<std::pair<int64_t, int64_t>, double> m;
  for (const auto& t : all) m[{t.row, t.col}] += t.val;
  for (const auto& [rc, v] : m) {
    auto it = m.find({rc.second, rc.first});
    if (it == m.end() || it->second != sign * v) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------
// Well-formed files

// Files read into the matrix they mean: one test body over a table of cases (the name, the
// file, the dense matrix; skew-symmetric ones also checked as A^T = -A).
struct ReadCase {
  const char* name;
  const char* file;
  std::string text;
  int64_t rows, cols;
  Dense expected;
  double transpose_sign = 0;  // nonzero: A^T == sign * A
};

class ReaderCase : public testing::TestWithParam<ReadCase> {};

TEST_P(ReaderCase, ReadsTheMatrixItMeans) {
  const ReadCase& c = GetParam();
  auto a = read_text(c.file, c.text);
  expect_matrix(a, c.rows, c.cols, c.expected);
  if (c.transpose_sign != 0) {
    EXPECT_TRUE(is_symmetric(a.gather_all(), c.transpose_sign));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Reader, ReaderCase,
    testing::Values(
        ReadCase{"CoordinateRealGeneral", "real_general.mtx",
                 "%%MatrixMarket matrix coordinate real general\n"
                 "4 4 6\n"
                 "1 1 1.5\n"
                 "2 1 -2\n"
                 "4 2 3.25e1\n"
                 "3 3 4\n"
                 "1 4 -0.5\n"
                 "4 4 1e-3\n",
                 4, 4, {{1.5, 0, 0, -0.5}, {-2, 0, 0, 0}, {0, 0, 4, 0}, {0, 32.5, 0, 1e-3}}},
        ReadCase{"CoordinateInteger", "integer.mtx",
                 "%%MatrixMarket matrix coordinate integer general\n"
                 "3 3 4\n"
                 "1 1 7\n"
                 "2 3 -4\n"
                 "3 1 +12\n"
                 "3 2 100000\n",
                 3, 3, {{7, 0, 0}, {0, 0, -4}, {12, 100000, 0}}},
        ReadCase{"CoordinatePattern", "pattern.mtx",
                 "%%MatrixMarket matrix coordinate pattern general\n"
                 "3 4 4\n"
                 "1 2\n"
                 "2 4\n"
                 "3 1\n"
                 "3 3\n",
                 3, 4, {{0, 1, 0, 0}, {0, 0, 0, 1}, {1, 0, 1, 0}}},
        ReadCase{"CoordinatePatternSymmetric", "pattern_sym.mtx",
                 "%%MatrixMarket matrix coordinate pattern symmetric\n"
                 "3 3 3\n"
                 "1 1\n"
                 "3 1\n"
                 "3 2\n",
                 3, 3, {{1, 0, 1}, {0, 0, 1}, {1, 1, 0}}},
        ReadCase{"CoordinateSkewSymmetric", "skew.mtx",
                 "%%MatrixMarket matrix coordinate real skew-symmetric\n"
                 "3 3 3\n"
                 "2 1 1.5\n"
                 "3 1 -2\n"
                 "3 2 4\n",
                 3, 3, {{0, -1.5, 2}, {1.5, 0, -4}, {-2, 4, 0}}, -1},
        ReadCase{"ArrayGeneralIsColumnMajorAndSkipsZeros", "array_general.mtx",
                 "%%MatrixMarket matrix array real general\n"
                 "% 3 x 2, column by column\n"
                 "3 2\n"
                 "1\n0\n2\n"
                 "0.0\n3\n-4\n",
                 3, 2, {{1, 0}, {0, 3}, {2, -4}}},
        ReadCase{"ArrayInteger", "array_integer.mtx",
                 "%%MatrixMarket matrix array integer general\n"
                 "2 2\n"
                 "1\n-2\n0\n4\n",
                 2, 2, {{1, 0}, {-2, 4}}},
        // Lower triangle with the diagonal, column by column: (1,1) (2,1) (3,1) (2,2) (3,2) (3,3).
        ReadCase{"ArraySymmetricStoresLowerTriangle", "array_symmetric.mtx",
                 "%%MatrixMarket matrix array real symmetric\n"
                 "3 3\n"
                 "1\n2\n0\n3\n4\n5\n",
                 3, 3, {{1, 2, 0}, {2, 3, 4}, {0, 4, 5}}},
        ReadCase{"ArraySkewSymmetricStoresStrictlyLowerTriangle", "array_skew.mtx",
                 "%%MatrixMarket matrix array real skew-symmetric\n"
                 "3 3\n"
                 "1\n2\n3\n",
                 3, 3, {{0, -1, -2}, {1, 0, -3}, {2, 3, 0}}}),
    [](const testing::TestParamInfo<ReadCase>& i) { return std::string(i.param.name); });

const char* kSymmetricBody =
    "4 4 5\n"
    "1 1 4\n"
    "2 1 -1\n"
    "3 2 -1.5\n"
    "4 1 2\n"
    "4 4 5\n";
const Dense kSymmetricDense = {{4, -1, 0, 2}, {-1, 0, -1.5, 0}, {0, -1.5, 0, 0}, {2, 0, 0, 5}};

TEST(Reader, CoordinateSymmetricIsExpanded) {
  auto a = read_text("symmetric.mtx", std::string("%%MatrixMarket matrix coordinate real symmetric\n") + kSymmetricBody);
  expect_matrix(a, 4, 4, kSymmetricDense);
  EXPECT_EQ(a.global_nnz(), 8);  // 2 diagonal entries kept once, 3 off-diagonal ones mirrored
  EXPECT_TRUE(is_symmetric(a.gather_all()));
}

TEST(Reader, CoordinateHermitianRealIsSymmetric) {
  auto a = read_text("hermitian.mtx", std::string("%%MatrixMarket matrix coordinate real hermitian\n") + kSymmetricBody);
  expect_matrix(a, 4, 4, kSymmetricDense);
}

TEST(Reader, CommentsBlankLinesCaseAndLineEndings) {
  // Upper-case banner, CRLF line ends, tabs, indented comments, blank lines everywhere
  // after the banner, no final newline.
  auto a = read_text("comments.mtx",
                     "%%MATRIXMARKET Matrix COORDINATE Real GENERAL\r\n"
                     "% a comment\r\n"
                     "\r\n"
                     "   % an indented comment\r\n"
                     "  3\t3   3  \r\n"
                     "\r\n"
                     "% between entries\r\n"
                     "1\t1   2.0\r\n"
                     "   \t \r\n"
                     "2 2 3.0   \r\n"
                     "%\r\n"
                     "3 1 -1\r\n"
                     "% trailing comment");
  expect_matrix(a, 3, 3, {{2, 0, 0}, {0, 3, 0}, {-1, 0, 0}});
}

TEST(Reader, NumberFormats) {
  const std::string path = write_mtx("numbers.mtx",
                                     "%%MatrixMarket matrix coordinate real general\n"
                                     "1 8 8\n"
                                     "1 1 1.5e-3\n"
                                     "1 2 -2E+2\n"
                                     "1 3 +3.0\n"
                                     "1 4 .5\n"
                                     "1 5 5.\n"
                                     "1 6 -0.125\n"
                                     "1 7 1e-400\n"
                                     "1 8 12345678901234567890\n");
  const MtxData d = parse_mtx(path);
  ASSERT_EQ(d.entries.size(), 8u);
  const double want[] = {1.5e-3, -200, 3, 0.5, 5, -0.125, 0.0, 12345678901234567890.0};
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(d.entries[i].row, 0);
    EXPECT_EQ(d.entries[i].col, static_cast<int64_t>(i));
    EXPECT_EQ(d.entries[i].val, want[i]) << "entry " << i;
  }
}

TEST(Reader, Rectangular) {
  // 3 x 5 and its transpose 5 x 3: rows and columns get different balanced partitions
  // (with 8 ranks some parts are empty).
  const std::string body_t[] = {"1 1 1", "1 5 2", "2 3 3", "3 2 4", "3 5 5"};
  std::string wide = "%%MatrixMarket matrix coordinate real general\n3 5 5\n";
  std::string tall = "%%MatrixMarket matrix coordinate real general\n5 3 5\n";
  for (const auto& l : body_t) {
    wide += l + "\n";
    tall += l.substr(2, 1) + " " + l.substr(0, 1) + l.substr(3) + "\n";
  }
  auto a = read_text("wide.mtx", wide);
  expect_matrix(a, 3, 5, {{1, 0, 0, 0, 2}, {0, 0, 3, 0, 0}, {0, 4, 0, 0, 5}});
  auto b = read_text("tall.mtx", tall);
  expect_matrix(b, 5, 3, {{1, 0, 0}, {0, 0, 4}, {0, 3, 0}, {0, 0, 0}, {2, 0, 5}});
}

TEST(Reader, GzipFileEqualsPlainFile) {
  const std::string text = std::string("%%MatrixMarket matrix coordinate real symmetric\n") + kSymmetricBody;
  const std::string gz = write_gz("compressed.mtx.gz", text);
  ASSERT_FALSE(gz.empty());
  // The file really is compressed (gzip magic bytes), so zlib is doing the work.
  std::FILE* f = std::fopen(gz.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  unsigned char magic[2] = {0, 0};
  EXPECT_EQ(std::fread(magic, 1, 2, f), 2u);
  std::fclose(f);
  EXPECT_EQ(magic[0], 0x1f);
  EXPECT_EQ(magic[1], 0x8b);

  auto a = read_matrix_market(MPI_COMM_WORLD, gz);
  expect_matrix(a, 4, 4, kSymmetricDense);
  const MtxHeader h = read_mtx_header(gz);
  EXPECT_EQ(h.symmetry, "symmetric");
  EXPECT_EQ(h.stored, 5);
  EXPECT_TRUE(same_entries(parse_mtx(gz).entries, parse_mtx(write_mtx("plain.mtx", text)).entries));
}

TEST(Reader, EmptyMatrices) {
  auto a = read_text("no_entries.mtx", "%%MatrixMarket matrix coordinate real general\n4 4 0\n");
  expect_matrix(a, 4, 4, Dense(4, std::vector<double>(4, 0.0)));
  EXPECT_EQ(a.global_nnz(), 0);
  EXPECT_EQ(a.num_ghosts(), 0);

  auto b = read_text("zero_by_zero.mtx", "%%MatrixMarket matrix coordinate real general\n0 0 0\n");
  EXPECT_EQ(b.global_rows(), 0);
  EXPECT_EQ(b.global_cols(), 0);
  EXPECT_EQ(b.global_nnz(), 0);
  EXPECT_EQ(b.local_rows(), 0);

  auto c = read_text("array_empty.mtx", "%%MatrixMarket matrix array real symmetric\n0 0\n");
  EXPECT_EQ(c.global_rows(), 0);
  EXPECT_EQ(c.global_nnz(), 0);

  auto d = read_text("array_zeros.mtx", "%%MatrixMarket matrix array real general\n2 1\n0\n-0.0\n");
  expect_matrix(d, 2, 1, {{0}, {0}});
}

TEST(Reader, DuplicatesAreSummed) {
  const std::string path = write_mtx("duplicates.mtx",
                                     "%%MatrixMarket matrix coordinate real general\n"
                                     "2 2 4\n"
                                     "1 1 1\n"
                                     "2 1 5\n"
                                     "1 1 2.5\n"
                                     "1 1 -0.5\n");
  EXPECT_EQ(parse_mtx(path).entries.size(), 4u);  // the parser keeps what the file says
  auto a = read_matrix_market(MPI_COMM_WORLD, path);
  EXPECT_EQ(a.global_nnz(), 2);
  EXPECT_EQ(a.global_duplicates(), 2);  // two repeats of (1, 1) folded into it
  EXPECT_EQ(to_dense(a.gather_all(), 2, 2), (Dense{{3, 0}, {5, 0}}));
}

TEST(Reader, ParseMtxReturnsZeroBasedExpandedTriplets) {
  const std::string path = write_mtx("parse.mtx",
                                     "%%MatrixMarket matrix coordinate integer skew-symmetric\n"
                                     "% comment\n"
                                     "3 3 2\n"
                                     "2 1 7\n"
                                     "3 2 -1\n");
  const MtxData d = parse_mtx(path);
  EXPECT_EQ(d.header.format, "coordinate");
  EXPECT_EQ(d.header.field, "integer");
  EXPECT_EQ(d.header.symmetry, "skew-symmetric");
  EXPECT_EQ(d.header.rows, 3);
  EXPECT_EQ(d.header.cols, 3);
  EXPECT_EQ(d.header.stored, 2);
  const Entries want = {{0, 1, -7}, {1, 0, 7}, {1, 2, 1}, {2, 1, -1}};
  EXPECT_TRUE(same_entries(canonical(d.entries), want));
}

TEST(Reader, ReadHeaderOnly) {
  // The header reader must not look at the entries: the body here is garbage.
  const std::string coord = write_mtx("header_coord.mtx",
                                      "%%MatrixMarket matrix coordinate pattern symmetric\n"
                                      "%\n"
                                      "10 10 17\n"
                                      "this is not an entry\n");
  const MtxHeader h = read_mtx_header(coord);
  EXPECT_EQ(h.format, "coordinate");
  EXPECT_EQ(h.field, "pattern");
  EXPECT_EQ(h.symmetry, "symmetric");
  EXPECT_EQ(h.rows, 10);
  EXPECT_EQ(h.cols, 10);
  EXPECT_EQ(h.stored, 17);
  const MtxHeader g = read_mtx_header(write_mtx("header_array.mtx", "%%MatrixMarket MATRIX Array Integer General\n3 4\n"));
  EXPECT_EQ(g.format, "array");
  EXPECT_EQ(g.field, "integer");
  EXPECT_EQ(g.symmetry, "general");
  EXPECT_EQ(g.stored, 12);
}

// A random sparse matrix big enough to give every rank ghosts and to span many read
// buffers when parsed. Same seed on every rank, so every rank writes the same file.
std::string random_mtx(int64_t n, int64_t entries, bool symmetric, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> idx(1, n);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  std::string s = std::string("%%MatrixMarket matrix coordinate real ") + (symmetric ? "symmetric" : "general") + "\n";
  s += std::to_string(n) + " " + std::to_string(n) + " " + std::to_string(entries) + "\n";
  char buf[96];
  for (int64_t k = 0; k < entries; ++k) {
    int64_t i = idx(rng), j = idx(rng);
    if (symmetric && i < j) std::swap(i, j);
    std::snprintf(buf, sizeof buf, "%lld %lld %.17g\n", static_cast<long long>(i), static_cast<long long>(j), val(rng));
    s += buf;
  }
  return s;
}

TEST(Reader, RandomMatrixMatchesSerialParse) {
  const std::string path = write_mtx("random_sym.mtx", random_mtx(3000, 60000, true, 42));
  auto a = read_matrix_market(MPI_COMM_WORLD, path);
  const RowPartition rp = RowPartition::balanced(3000, test::size());
  check_layout(a, rp, rp);
  const Entries ref = canonical(parse_mtx(path).entries);
  EXPECT_EQ(a.global_nnz(), static_cast<int64_t>(ref.size()));
  const Entries all = canonical(a.gather_all());
  EXPECT_EQ(all.size(), ref.size());
  // Repeated positions are summed in a different order than in `ref`: compare with a tolerance.
  bool same = all.size() == ref.size();
  for (size_t i = 0; same && i < all.size(); ++i)
    same = all[i].row == ref[i].row && all[i].col == ref[i].col && std::abs(all[i].val - ref[i].val) <= 1e-14;
  EXPECT_TRUE(same);
  EXPECT_TRUE(is_symmetric(all));
  if (test::size() > 1) {
    // Balanced rows of a random matrix: every rank needs columns of other ranks.
    EXPECT_GT(a.num_ghosts(), 0);
  }
}

TEST(Reader, ChunkedScatterGivesTheSameMatrix) {
  // Windows of 1 and of 5 entries (and a size that is not a multiple of an entry)
  // force thousands of scatter rounds; the result must not change.
  const std::string path = write_mtx("random_chunks.mtx", random_mtx(200, 1500, false, 7));
  const Entries ref = canonical(read_matrix_market(MPI_COMM_WORLD, path).gather_all());
  for (int64_t chunk : {int64_t{1}, int64_t{24}, int64_t{130}}) {
    SCOPED_TRACE("scatter_chunk_bytes=" + std::to_string(chunk));
    MtxReadOptions opt;
    opt.scatter_chunk_bytes = chunk;
    auto a = read_matrix_market(MPI_COMM_WORLD, path, opt);
    const RowPartition rp = RowPartition::balanced(200, test::size());
    check_layout(a, rp, rp);
    EXPECT_TRUE(same_entries(canonical(a.gather_all()), ref));
  }
}

// A partition in which rank 0 owns nothing and the last rank owns the most rows.
RowPartition skewed_partition(int64_t n, int p) {
  // Ranks 1..p-2 share half of the rows, the last rank takes the rest.
  std::vector<int64_t> off(static_cast<size_t>(p) + 1, 0);
  if (p > 2) {
    const RowPartition half = RowPartition::balanced(n / 2, p - 2);
    for (int q = 1; q <= p - 2; ++q) off[q + 1] = half.end(q - 1);
  }
  off[p] = n;
  return RowPartition::from_offsets(off);
}

TEST(Reader, UserRowPartition) {
  const int p = test::size();
  MtxReadOptions opt;
  opt.has_row_partition = true;
  opt.rows = skewed_partition(4, p);
  auto a = read_text("user_part.mtx", std::string("%%MatrixMarket matrix coordinate real symmetric\n") + kSymmetricBody, opt);
  check_layout(a, opt.rows, opt.rows);  // square: columns follow the rows
  EXPECT_EQ(to_dense(a.gather_all(), 4, 4), kSymmetricDense);
  if (p > 1) {
    EXPECT_EQ(a.row_partition().local_size(0), 0);
  }

  // Rectangular: the given rows, balanced columns.
  opt.rows = skewed_partition(3, p);
  auto b = read_text("user_part_wide.mtx",
                     "%%MatrixMarket matrix coordinate real general\n3 5 3\n1 5 1\n2 1 2\n3 3 3\n", opt);
  check_layout(b, opt.rows, RowPartition::balanced(5, p));
  EXPECT_EQ(to_dense(b.gather_all(), 3, 5), (Dense{{0, 0, 0, 0, 1}, {2, 0, 0, 0, 0}, {0, 0, 3, 0, 0}}));
}

// The message of the InputError `f` throws, or a description of what happened instead.
std::string input_error_of(const std::function<void()>& f) { return test::message_of<InputError>(f); }

TEST(Reader, BadUserRowPartition) {
  const int p = test::size();
  const std::string path = write_mtx("bad_part.mtx", std::string("%%MatrixMarket matrix coordinate real symmetric\n") + kSymmetricBody);
  MtxReadOptions opt;
  opt.has_row_partition = true;

  opt.rows = RowPartition::balanced(4, p + 1);
  std::string msg = input_error_of([&] { read_matrix_market(MPI_COMM_WORLD, path, opt); });
  EXPECT_NE(msg.find(std::to_string(p + 1) + " parts"), std::string::npos) << msg;

  opt.rows = RowPartition::balanced(5, p);
  msg = input_error_of([&] { read_matrix_market(MPI_COMM_WORLD, path, opt); });
  EXPECT_NE(msg.find("covers 5 rows but the matrix has 4"), std::string::npos) << msg;

  if (p > 1) {
    // Each rank passes a different (valid) partition: rejected on every rank.
    opt.rows = test::rank() == 0 ? RowPartition::balanced(4, p) : skewed_partition(4, p);
    msg = input_error_of([&] { read_matrix_market(MPI_COMM_WORLD, path, opt); });
    EXPECT_NE(msg.find("differs between ranks"), std::string::npos) << msg;
  }
}

// ---------------------------------------------------------------------------------------
// Malformed files: each must raise InputError "<path>:<line>: <what>" from the local
// parser, and the same error on every rank from the collective reader.

struct BadCase {
  const char* name;
  std::string text;
  int line;            ///< expected line number in the message
  const char* what;    ///< expected part of the message
  bool header = false; ///< the error is in the banner or size line (read_mtx_header sees it)
};

const char* kBanner = "%%MatrixMarket matrix coordinate real general\n";

std::vector<BadCase> bad_cases() {
  const std::string b = kBanner;
  return {
      {"empty", "", 1, "empty file", true},
      {"no_banner", "3 3 1\n1 1 1\n", 1, "%%MatrixMarket matrix coordinate real general", true},
      {"blank_first_line", "\n" + b + "1 1 0\n", 1, "missing Matrix Market banner", true},
      {"banner_short", "%%MatrixMarket matrix coordinate real\n1 1 0\n", 1, "malformed banner", true},
      {"banner_long", "%%MatrixMarket matrix coordinate real general x\n1 1 0\n", 1, "malformed banner", true},
      {"object", "%%MatrixMarket vector coordinate real general\n1 1 0\n", 1, "'vector'", true},
      {"format", "%%MatrixMarket matrix sparse real general\n1 1 0\n", 1, "unknown format 'sparse'", true},
      {"field", "%%MatrixMarket matrix coordinate double general\n1 1 0\n", 1, "unknown field 'double'", true},
      {"complex", "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 2\n", 1,
       "complex matrices are not supported", true},
      {"symmetry", "%%MatrixMarket matrix coordinate real upper\n1 1 0\n", 1, "unknown symmetry 'upper'", true},
      {"pattern_array", "%%MatrixMarket matrix array pattern general\n2 2\n", 1, "pattern", true},
      {"size_too_few", b + "% comment\n3 3\n", 3, "size line must have 3 numbers", true},
      {"size_too_many", b + "3 3 1 1\n1 1 1\n", 2, "size line must have 3 numbers", true},
      {"array_size_tokens", "%%MatrixMarket matrix array real general\n3 3 9\n", 2, "size line must have 2 numbers",
       true},
      {"size_not_numeric", b + "3 x 1\n", 2, "'x' is not an integer", true},
      {"size_float", b + "3 3 1.5\n1 1 1\n", 2, "'1.5' is not an integer", true},
      {"negative_rows", b + "-3 3 1\n1 1 1\n", 2, "negative number of rows", true},
      {"negative_entries", b + "3 3 -1\n", 2, "negative number of entries", true},
      {"missing_size", b + "% only comments\n\n", 3, "missing size line", true},
      {"nonsquare_symmetric", "%%MatrixMarket matrix coordinate real symmetric\n3 4 1\n1 1 1\n", 2, "must be square",
       true},
      {"nonsquare_skew_array", "%%MatrixMarket matrix array real skew-symmetric\n2 3\n1\n", 2, "must be square", true},
      {"too_few", b + "3 3 3\n1 1 1\n2 2 2\n", 4, "expected 3 entries, found 2"},
      {"too_few_comment_at_end", b + "3 3 3\n1 1 1\n% the end\n", 4, "expected 3 entries, found 1"},
      {"too_many", b + "3 3 1\n1 1 1\n2 2 2\n", 4, "more entries than announced"},
      {"row_zero", b + "3 3 1\n0 1 1\n", 3, "row index 0 out of range"},
      {"col_out_of_range", b + "3 3 2\n1 1 1\n\n2 4 1\n", 5, "column index 4 out of range"},
      {"row_negative", b + "3 3 1\n-1 1 1\n", 3, "row index -1 out of range"},
      {"row_not_numeric", b + "3 3 1\na 1 1\n", 3, "row index 'a' is not an integer"},
      {"col_float", b + "3 3 1\n1 1.0 1\n", 3, "column index '1.0' is not an integer"},
      {"value_not_numeric", b + "3 3 1\n1 1 abc\n", 3, "value 'abc' is not a number"},
      {"value_trailing_junk", b + "3 3 1\n1 1 1.5x\n", 3, "value '1.5x' is not a number"},
      {"value_overflow", b + "3 3 1\n1 1 1e999\n", 3, "out of range"},
      {"missing_value", b + "3 3 2\n1 1 1\n2 2\n", 4, "missing value"},
      {"extra_token", b + "3 3 1\n1 1 1.0 7\n", 3, "extra token '7'"},
      {"pattern_with_value", "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 1 1.0\n", 3,
       "extra token '1.0'"},
      {"integer_with_fraction", "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 1.5\n", 3,
       "'1.5' is not an integer"},
      {"one_token", b + "3 3 1\n1\n", 3, "row and a column"},
      {"skew_diagonal", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1\n2 2 1\n", 4, "diagonal"},
      {"array_too_few", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n", 5, "expected 4 entries, found 3"},
      {"array_too_many", "%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\n3\n4\n", 6,
       "more entries than announced"},
      {"array_extra_token", "%%MatrixMarket matrix array real general\n1 2\n1 2\n", 3, "extra token '2'"},
      {"array_bad_value", "%%MatrixMarket matrix array real general\n1 1\nx\n", 3, "value 'x' is not a number"},
      {"binary", std::string("\x01\x02\x00\x7fgarbage\n", 12), 1, "missing Matrix Market banner", true},
      // Non-finite values are rejected in files (mtx_reader.hpp): an oracle could not check them.
      {"value_nan", b + "3 3 2\n1 1 1\n2 2 nan\n", 4, "value 'nan' is not finite"},
      {"value_inf", b + "3 3 1\n1 1 -inf\n", 3, "value '-inf' is not finite"},
      {"value_infinity", b + "3 3 1\n1 1 Infinity\n", 3, "is not finite"},
      {"array_nan", "%%MatrixMarket matrix array real general\n1 2\n1\nNaN\n", 4, "value 'NaN' is not finite"},
      // Symmetric storage is the lower triangle: an entry above it names its line.
      {"symmetric_upper", "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n1 1 1\n1 3 2\n", 4,
       "entry (1, 3) is above the diagonal, but a symmetric file stores only the lower triangle"},
      {"hermitian_upper", "%%MatrixMarket matrix coordinate real hermitian\n3 3 1\n2 3 2\n", 3, "above the diagonal"},
      {"skew_upper", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 1\n1 2 2\n", 3,
       "above the diagonal"},
      {"pattern_symmetric_upper", "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 1\n1 2\n", 3,
       "above the diagonal"},
      // Numbers beyond 64 bits are "too large", not "not an integer".
      {"entries_overflow", b + "3 3 99999999999999999999\n", 2,
       "number of entries '99999999999999999999' is too large (more than 2^63 - 1)", true},
      {"rows_overflow", b + "99999999999999999999 3 1\n", 2, "number of rows '99999999999999999999' is too large", true},
      {"index_overflow", b + "3 3 1\n99999999999999999999 1 1\n", 3, "row index '99999999999999999999' is too large"},
      {"integer_value_overflow", "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 99999999999999999999\n",
       3, "too large for a 64-bit integer"},
  };
}

TEST(ReaderErrors, LocalParseNamesFileAndLine) {
  for (const auto& c : bad_cases()) {
    SCOPED_TRACE(c.name);
    const std::string path = write_mtx(std::string("bad_") + c.name + ".mtx", c.text);
    const std::string prefix = path + ":" + std::to_string(c.line) + ": ";
    const std::string msg = input_error_of([&] { parse_mtx(path); });
    EXPECT_EQ(msg.rfind(prefix, 0), 0u) << "message: " << msg << "\nexpected prefix: " << prefix;
    EXPECT_NE(msg.find(c.what), std::string::npos) << "message: " << msg << "\nexpected: " << c.what;
    if (c.header) {
      const std::string hmsg = input_error_of([&] { read_mtx_header(path); });
      EXPECT_EQ(hmsg, msg);
    }
  }
}

TEST(ReaderErrors, CollectiveReadThrowsOnEveryRank) {
  for (const auto& c : bad_cases()) {
    SCOPED_TRACE(c.name);
    const std::string file = std::string("bad_coll_") + c.name + ".mtx";
    const std::string path = write_mtx(file, c.text);
    const std::string msg = input_error_of([&] { read_matrix_market(MPI_COMM_WORLD, path); });
    // Rank 0 read the file (in its own temp dir): every rank sees rank 0's path, which
    // ends with the same file name.
    const std::string where = "/" + file + ":" + std::to_string(c.line) + ": ";
    EXPECT_NE(msg.find(where), std::string::npos) << "message: " << msg << "\nexpected: " << where;
    EXPECT_NE(msg.find(c.what), std::string::npos) << "message: " << msg << "\nexpected: " << c.what;
  }
}

// Every malformed file above, parsed from memory (the fuzz target's entry point), gives the
// same message as from the file, with the given name in place of the path.
TEST(ReaderErrors, InMemoryParseMatchesFileParse) {
  for (const auto& c : bad_cases()) {
    SCOPED_TRACE(c.name);
    const std::string path = write_mtx(std::string("mem_") + c.name + ".mtx", c.text);
    std::string file_msg = input_error_of([&] { parse_mtx(path); });
    const std::string mem_msg = input_error_of([&] { parse_mtx_text(c.text, "buffer"); });
    ASSERT_EQ(file_msg.rfind(path, 0), 0u) << file_msg;
    EXPECT_EQ("buffer" + file_msg.substr(path.size()), mem_msg);
  }
  const auto d = parse_mtx_text("%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 1 4\n2 1 -1");  // no final \n
  EXPECT_EQ(d.header.rows, 2);
  EXPECT_EQ(d.entries.size(), 3u);
}

TEST(ReaderErrors, MissingFileAndDirectory) {
  const std::string missing = test::temp_dir() + "/does_not_exist.mtx";
  std::string msg = input_error_of([&] { parse_mtx(missing); });
  EXPECT_EQ(msg.rfind(missing + ": ", 0), 0u) << msg;
  EXPECT_NE(msg.find("cannot open"), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file"), std::string::npos) << msg;
  EXPECT_EQ(input_error_of([&] { read_mtx_header(missing); }), msg);

  msg = input_error_of([&] { parse_mtx(test::temp_dir()); });
  EXPECT_NE(msg.find(test::temp_dir()), std::string::npos) << msg;
  EXPECT_NE(msg.find("directory"), std::string::npos) << msg;

  msg = input_error_of([&] { read_matrix_market(MPI_COMM_WORLD, missing); });
  EXPECT_NE(msg.find("does_not_exist.mtx"), std::string::npos) << msg;

  // Through the search path (what --matrix does): "is a directory", not "not found".
  msg = input_error_of([&] { find_matrix(test::temp_dir()); });
  EXPECT_NE(msg.find("'" + test::temp_dir() + "' is a directory, not a Matrix Market file"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("not found"), std::string::npos) << msg;

  // A special file, a symbolic link loop and a dangling link: each said as what it is.
  const std::string fifo = test::temp_dir() + "/a_fifo.mtx", loop = test::temp_dir() + "/loop.mtx",
                    dangling = test::temp_dir() + "/dangling.mtx";
  std::remove(fifo.c_str()), std::remove(loop.c_str()), std::remove(dangling.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(symlink(loop.c_str(), loop.c_str()), 0);
  ASSERT_EQ(symlink((test::temp_dir() + "/nothing_here.mtx").c_str(), dangling.c_str()), 0);
  msg = input_error_of([&] { find_matrix(fifo); });
  EXPECT_NE(msg.find("'" + fifo + "' is a special file (a FIFO, device or socket)"), std::string::npos) << msg;
  msg = input_error_of([&] { find_matrix(loop); });
  EXPECT_NE(msg.find("'" + loop + "' is a symbolic link that cannot be followed: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("levels of symbolic links"), std::string::npos) << msg;  // (ELOOP's words)
  msg = input_error_of([&] { find_matrix(dangling); });
  EXPECT_NE(msg.find("'" + dangling + "' is a symbolic link that cannot be followed: No such file"), std::string::npos)
      << msg;
}

// A file that declares far more rows than it stores: the CSR row pointers alone exceed the
// machine, and every rank gets a message naming the bytes (not the OOM killer's SIGKILL).
// 2e9 rows per rank (just under the 2^31 local limit) need 32 GB of row pointers per rank.
TEST(ReaderErrors, DeclaredSizeBeyondMemoryIsAClearError) {
  const int64_t rows = 2000000000LL * test::size();
  const std::string path = write_mtx("huge_rows.mtx", "%%MatrixMarket matrix coordinate real general\n" +
                                                          std::to_string(rows) + " 3 3\n1 1 1\n2 2 1\n3 3 1\n");
  const std::string msg = input_error_of([&] { read_matrix_market(MPI_COMM_WORLD, path); });
  EXPECT_NE(msg.find("CSR row pointers of 2000000000 local rows"), std::string::npos) << msg;
  EXPECT_NE(msg.find("32.0 GB per rank"), std::string::npos) << msg;
  EXPECT_NE(msg.find("are available"), std::string::npos) << msg;
  EXPECT_NE(msg.find("inherent to CSR storage"), std::string::npos) << msg;
}

// The same check under an explicit limit ($SPARSECOMM_MEMORY_LIMIT, set on every rank): a
// modest matrix passes without it and fails with it; the gathering reference says to use
// the non-gathering one.
TEST(ReaderErrors, MemoryLimitIsEnforcedCollectively) {
  const std::string path = write_mtx("limit_rows.mtx", "%%MatrixMarket matrix coordinate real general\n"
                                                       "200000 200000 2\n1 1 1\n200000 1 2\n");
  auto a = read_matrix_market(MPI_COMM_WORLD, path);
  EXPECT_EQ(a.global_duplicates(), 0);
  test::set_env("SPARSECOMM_MEMORY_LIMIT", "100000");
  std::string msg = input_error_of([&] { read_matrix_market(MPI_COMM_WORLD, path); });
  EXPECT_NE(msg.find("100.0 KB are available"), std::string::npos) << msg;
  test::set_env("SPARSECOMM_MEMORY_LIMIT", "10");
  msg = input_error_of([&] { a.gather_all(); });
  EXPECT_NE(msg.find("gather_all"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--reference rows"), std::string::npos) << msg;
  // A limit that is not a number of bytes (here on the last rank only) is an error on every
  // rank, not "no limit" in silence.
  test::set_env("SPARSECOMM_MEMORY_LIMIT", test::rank() == test::size() - 1 ? std::optional<std::string>("100MB")
                                                                           : std::nullopt);
  msg = input_error_of([&] { read_matrix_market(MPI_COMM_WORLD, path); });
  EXPECT_NE(msg.find("SPARSECOMM_MEMORY_LIMIT='100MB' is not a number of bytes"), std::string::npos) << msg;
  test::set_env("SPARSECOMM_MEMORY_LIMIT", std::nullopt);
  EXPECT_EQ(a.gather_all().size(), 2u);
}

// What rank 0 holds while it parses is checked against the size line before any entry is
// parsed: a file that announces 5e6 symmetric entries (up to 1e7 triplets, 240 MB) under a
// 100 MB limit is refused with those numbers on every rank, though it stores only one
// entry (a parse would have said "expected 5000000 entries, found 1"). The same file with
// an honest count reads; and the bound grows with a permutation every rank receives.
TEST(ReaderErrors, RankZerosEntriesAreBoundedBeforeParsing) {
  const std::string head = "%%MatrixMarket matrix coordinate real symmetric\n3000 3000 ";
  const std::string liar = write_mtx("announces_many.mtx", head + "5000000\n1 1 1\n");
  test::set_env("SPARSECOMM_MEMORY_LIMIT", "100000000");
  std::string msg = input_error_of([&] { read_matrix_market(MPI_COMM_WORLD, liar); });
  EXPECT_NE(msg.find("rank 0 holds the file's entries before distributing them (up to 10000000 from its size line, "
                     "3000 x 3000)"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("240.0 MB per rank"), std::string::npos) << msg;
  EXPECT_NE(msg.find("100.0 MB are available"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("expected 5000000 entries"), std::string::npos) << msg;
  const std::string honest = write_mtx("announces_one.mtx", head + "1\n1 1 1\n");
  EXPECT_EQ(read_matrix_market(MPI_COMM_WORLD, honest).global_nnz(), 1);
  // 3e7 rows of permutation (240 MB) on every rank, whatever the entries
  const std::string tall = write_mtx("tall.mtx", "%%MatrixMarket matrix coordinate real general\n30000000 1 1\n1 1 1\n");
  std::vector<int64_t> perm;
  MtxReadOptions opt;
  opt.permutation = &perm;
  msg = input_error_of([&] { read_matrix_market(MPI_COMM_WORLD, tall, opt); });
  EXPECT_NE(msg.find("and every rank the 30000000-row permutation"), std::string::npos) << msg;
  test::set_env("SPARSECOMM_MEMORY_LIMIT", std::nullopt);
}

// A line longer than any Matrix Market line (here a 3 MiB comment, in a gzip of a few KB) is
// an error naming its line, before the line buffer grows with it.
TEST(ReaderErrors, OverlongLineIsBounded) {
  const std::string text = "%%MatrixMarket matrix coordinate real general\n%" + std::string(3 << 20, 'x') +
                           "\n2 2 1\n1 1 1\n";
  for (const std::string& path : {write_mtx("long_line.mtx", text), write_gz("long_line.mtx.gz", text)}) {
    ASSERT_FALSE(path.empty());
    const std::string msg = input_error_of([&] { parse_mtx(path); });
    EXPECT_EQ(msg.rfind(path + ":2: a line longer than 1048576 bytes", 0), 0u) << msg;
  }
}

TEST(ReaderErrors, TruncatedGzip) {
  std::string text = random_mtx(500, 5000, false, 3);
  const std::string gz = write_gz("truncated.mtx.gz", text);
  ASSERT_FALSE(gz.empty());
  const auto full = fs::file_size(gz);
  fs::resize_file(gz, full / 2);
  const std::string msg = input_error_of([&] { parse_mtx(gz); });
  EXPECT_EQ(msg.rfind(gz + ":", 0), 0u) << msg;
}

uint64_t hash_of(const std::string& s) { return static_cast<uint64_t>(std::hash<std::string>{}(s)); }

TEST(ReaderErrors, AllRanksAgreeOnTheMessage) {
  // Malformed at line 5. Every rank must throw (nobody left waiting in a collective) and
  // the messages must be identical: compare min and max of their hashes.
  const std::string path = write_mtx("agree.mtx", std::string(kBanner) + "3 3 3\n1 1 1\n2 2 2\n3 9 3\n");
  int threw = 0;
  uint64_t h = 0;
  try {
    read_matrix_market(MPI_COMM_WORLD, path);
  } catch (const InputError& e) {
    threw = 1;
    h = hash_of(e.what());
    EXPECT_NE(std::string(e.what()).find("agree.mtx:5: column index 9 out of range"), std::string::npos) << e.what();
  }
  int nthrew = 0;
  uint64_t hmin = 0, hmax = 0;
  MPI_Allreduce(&threw, &nthrew, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &hmin, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &hmax, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(nthrew, test::size());
  EXPECT_EQ(hmin, hmax);
}

TEST(ReaderErrors, OnlyRankZeroReadsTheFile) {
  // Other ranks pass a path that does not exist: only rank 0's file matters, both when it
  // is good (no error anywhere) and when it is missing (an error everywhere).
  const std::string good = write_mtx("rank0_only.mtx", std::string(kBanner) + "2 2 1\n2 1 3\n");
  const std::string nowhere = test::temp_dir() + "/nowhere.mtx";
  auto a = read_matrix_market(MPI_COMM_WORLD, test::rank() == 0 ? good : nowhere);
  EXPECT_EQ(to_dense(a.gather_all(), 2, 2), (Dense{{0, 0}, {3, 0}}));

  const std::string msg = input_error_of([&] { read_matrix_market(MPI_COMM_WORLD, test::rank() == 0 ? nowhere : good); });
  EXPECT_NE(msg.find("nowhere.mtx: cannot open file"), std::string::npos) << msg;
}

// ---------------------------------------------------------------------------------------
// Data search path

using test::EnvGuard;

const char* kTinyMtx = "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n";

// A fresh directory under the rank's temp dir.
std::string make_dir(const std::string& name) {
  const std::string d = test::temp_dir() + "/" + name;
  fs::create_directories(d);
  return d;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec);
}

TEST(DataPath, ExistingPathIsReturnedAsIs) {
  const std::string path = write_mtx("as_is.mtx", kTinyMtx);
  EXPECT_EQ(find_matrix(path), path);
}

TEST(DataPath, UnknownNameListsSearchedDirectories) {
  const std::string msg = input_error_of([] { find_matrix("no_such_matrix_xyz"); });
  EXPECT_NE(msg.find("matrix 'no_such_matrix_xyz' not found; looked in: "), std::string::npos) << msg;
  const auto dirs = data_search_path();
  ASSERT_FALSE(dirs.empty());
  for (const auto& d : dirs) EXPECT_NE(msg.find(d), std::string::npos) << d << " missing from: " << msg;
  EXPECT_NE(msg.find("SPARSECOMM_DATA"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ssget"), std::string::npos) << msg;
  EXPECT_NE(input_error_of([] { find_matrix("NoGroup/no_such_matrix_xyz"); }).find("not found"), std::string::npos);
  EXPECT_NE(input_error_of([] { find_matrix(""); }), "<no exception>");
}

TEST(DataPath, EnvironmentDirectoriesComeFirst) {
  const std::string d1 = make_dir("env1"), d2 = make_dir("env2");
  const std::string mine = test::write_file(d2, "Grp_mymat.mtx", kTinyMtx);
  test::write_file(d2, "Grp_gzonly.mtx.gz", "not really compressed");
  EnvGuard env("SPARSECOMM_DATA", d1 + "::" + d2 + ":" + d1 + "/../env2:");
  const auto dirs = data_search_path();
  ASSERT_GE(dirs.size(), 2u);
  EXPECT_TRUE(same_file(dirs[0], d1));
  EXPECT_TRUE(same_file(dirs[1], d2));
  // Listed once even though given twice (once through "..").
  EXPECT_EQ(std::count_if(dirs.begin(), dirs.end(), [&](const std::string& d) { return same_file(d, d2); }), 1);

  for (const char* name : {"Grp/mymat", "Grp_mymat", "Grp_mymat.mtx", "mymat", "Grp/mymat.mtx"}) {
    SCOPED_TRACE(name);
    std::string found;
    EXPECT_NO_THROW(found = find_matrix(name));
    EXPECT_TRUE(same_file(found, mine)) << found;
  }
  for (const char* name : {"Grp/gzonly", "gzonly", "Grp_gzonly.mtx.gz"}) {
    SCOPED_TRACE(name);
    std::string found;
    EXPECT_NO_THROW(found = find_matrix(name));
    EXPECT_TRUE(same_file(found, d2 + "/Grp_gzonly.mtx.gz")) << found;
  }
  // The first directory wins.
  const std::string first = test::write_file(d1, "Other_mymat.mtx", kTinyMtx);
  EXPECT_TRUE(same_file(find_matrix("mymat"), first));
  EXPECT_TRUE(same_file(find_matrix("Grp/mymat"), mine));  // the group still picks its file
  fs::remove(first);
}

TEST(DataPath, SsgetCacheAndGroupDirectories) {
  const std::string cache = make_dir("ssget_cache");
  const std::string dir = make_dir("ssget_cache/MM/Grp2/other");
  const std::string other = test::write_file(dir, "other.mtx", kTinyMtx);
  const std::string data = make_dir("grouped");
  const std::string sub = test::write_file(make_dir("grouped/Grp3"), "sub.mtx", kTinyMtx);
  EnvGuard env("SPARSECOMM_DATA", data);
  EnvGuard archive("SSGET_ARCHIVE", cache);
  const auto dirs = data_search_path();
  ASSERT_FALSE(dirs.empty());
  EXPECT_TRUE(same_file(dirs.back(), cache));
  EXPECT_TRUE(same_file(find_matrix("Grp2/other"), other));
  EXPECT_TRUE(same_file(find_matrix("other"), other));
  EXPECT_TRUE(same_file(find_matrix("Grp3/sub"), sub));
  const auto all = list_matrices();
  EXPECT_EQ(std::count_if(all.begin(), all.end(), [&](const std::string& p) { return same_file(p, other); }), 1);
  EXPECT_EQ(std::count_if(all.begin(), all.end(), [&](const std::string& p) { return same_file(p, sub); }), 1);
}

// On an online machine a missing Group/Name is fetched with ssget. A stand-in ssget with the
// real one's interface (-s CONDITION prints matching ids, -e -i ID extracts the archive
// into <archive>/MM/<Group>/<Name>/ and prints the .mtx path; --custom-archive DIR) knows
// one matrix, Fake/tiny, id 7.
// The directories' names hold a single quote and a space: ssget runs with an argument
// vector, no shell between us and it, so neither can break the command.
TEST(DataPath, MissingNamesAreFetchedWithSsget) {
  const std::string bin = make_dir("fake bin'q"), archive = make_dir("fake archive 'a b'");
  const std::string script = test::write_file(bin, "ssget",
      "#!/bin/sh\n"
      "A=''; while [ $# -gt 0 ]; do case \"$1\" in\n"
      "  --custom-archive) A=$2; shift 2 ;;\n"
      "  -s) case \"$2\" in *'@group = Fake ] && [ @name = tiny ]'*) echo 7 ;; esac; exit 0 ;;\n"
      "  -e) shift ;;\n"
      "  -i) [ \"$2\" = 7 ] || exit 1; mkdir -p \"$A/MM/Fake/tiny\"; echo \"$A\" > \"$A/archive_used\";\n"
      "      printf '%%%%MatrixMarket matrix coordinate real general\\n2 2 1\\n1 1 1\\n' > \"$A/MM/Fake/tiny/tiny.mtx\";\n"
      "      echo \"$A/MM/Fake/tiny/tiny.mtx\"; exit 0 ;;\n"
      "  *) shift ;;\n"
      "esac; done\n");
  fs::permissions(script, fs::perms::owner_all);
  EnvGuard path("PATH", bin + ":" + std::getenv("PATH"));
  EnvGuard arch("SSGET_ARCHIVE", archive);
  EnvGuard nofetch("SPARSECOMM_NO_FETCH", std::nullopt);
  const std::string got = find_matrix("Fake/tiny");
  EXPECT_TRUE(same_file(got, archive + "/MM/Fake/tiny/tiny.mtx")) << got;
  EXPECT_TRUE(fs::exists(archive + "/archive_used"));  // told where to put it
  EXPECT_EQ(read_matrix_market(MPI_COMM_SELF, got).global_nnz(), 1);
  // Not in the collection: the error says so, and lists the directories as before.
  const std::string msg = input_error_of([] { find_matrix("Fake/absent"); });
  EXPECT_NE(msg.find("not found; looked in: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("ssget found no matrix Fake/absent"), std::string::npos) << msg;
  // Names that are not Group/Name are not fetched; nor anything when fetching is off.
  EXPECT_NE(input_error_of([] { find_matrix("absent_alone"); }).find("only Group/Name"), std::string::npos);
  {
    EnvGuard off("SPARSECOMM_NO_FETCH", "1");
    EXPECT_NE(input_error_of([] { find_matrix("Fake/other"); }).find("SPARSECOMM_NO_FETCH"), std::string::npos);
  }
  // Without ssget on PATH the error says that too.
  EnvGuard nopath("PATH", "/nonexistent");
  EXPECT_NE(input_error_of([] { find_matrix("Fake/other"); }).find("ssget is not on PATH"), std::string::npos);
}

TEST(DataPath, ListAndLargest) {
  const std::string d1 = make_dir("list1"), d2 = make_dir("list2");
  // A header announcing more entries than any real file; its body is absent, which
  // largest_matrix does not care about (it reads headers only).
  const std::string huge = test::write_file(
      d1, "Big_huge.mtx", "%%MatrixMarket matrix coordinate real general\n1000000 1000000 999999999\n");
  const std::string garbage = test::write_file(d1, "Bad_garbage.mtx", "not a matrix market file\n");
  const std::string small = test::write_file(d1, "Small_tiny.mtx", kTinyMtx);
  const std::string shadowed = test::write_file(d2, "Small_tiny.mtx", kTinyMtx);
  const std::string gz = write_gz("list2/Zip_zipped.mtx.gz", kTinyMtx);
  EnvGuard env("SPARSECOMM_DATA", d1 + ":" + d2);
  const auto all = list_matrices();
  auto count = [&](const std::string& p) {
    return std::count_if(all.begin(), all.end(), [&](const std::string& q) { return same_file(p, q); });
  };
  EXPECT_EQ(count(huge), 1);
  EXPECT_EQ(count(garbage), 1);
  EXPECT_EQ(count(small), 1);
  EXPECT_EQ(count(shadowed), 0);  // same name in a later directory
  EXPECT_EQ(count(gz), 1);
  std::string largest;
  EXPECT_NO_THROW(largest = largest_matrix());  // the garbage file is skipped, not fatal
  EXPECT_TRUE(same_file(largest, huge)) << largest;
}

// ---------------------------------------------------------------------------------------
// Reading with an ordering (MtxReadOptions::ordering): the result is P A P^T for the
// permutation handed back, the same on every rank.

/// Checks that `a` (read with `opt.ordering`) is the natural read of `path` relabelled by
/// the permutation the reader returned (identical on every rank), and returns that bandwidth.
int64_t check_reordered(const std::string& path, Ordering ordering) {
  std::vector<int64_t> perm;
  MtxReadOptions opt;
  opt.ordering = ordering;
  opt.permutation = &perm;
  opt.scatter_chunk_bytes = 4096;  // the chunked scatter too
  auto a = read_matrix_market(MPI_COMM_WORLD, path, opt);
  const int64_t n = a.global_rows();
  EXPECT_EQ(static_cast<int64_t>(perm.size()), n);
  EXPECT_NO_THROW(invert_permutation(perm));
  // Every rank got rank 0's permutation.
  std::vector<int64_t> root = perm;
  MPI_Bcast(root.data(), static_cast<int>(root.size()), MPI_INT64_T, 0, MPI_COMM_WORLD);
  EXPECT_EQ(root, perm);
  if (ordering == Ordering::natural) {
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(perm[i], i);
  }
  Entries expect = read_matrix_market(MPI_COMM_WORLD, path).gather_all();
  permute_symmetric(expect, invert_permutation(perm));
  const Entries got = canonical(a.gather_all());
  EXPECT_TRUE(same_entries(got, canonical(expect)));
  const RowPartition rp = RowPartition::balanced(n, test::size());
  check_layout(a, rp, rp);
  return bandwidth(got);
}

TEST(ReaderOrdering, RcmOfAShuffledPathIsP_A_Pt) {
  // A path 1-2-...-40 written under a scrambled numbering (vertex i -> (i * 17) mod 41, a
  // bijection of 1..40): bandwidth 1 after RCM.
  const int n = 40;
  std::string text = std::string("%%MatrixMarket matrix coordinate real symmetric\n") + std::to_string(n) + " " +
                     std::to_string(n) + " " + std::to_string(2 * n - 1) + "\n";
  auto label = [](int i) { return (i * 17) % 41; };
  for (int i = 1; i <= n; ++i) text += std::to_string(label(i)) + " " + std::to_string(label(i)) + " 2\n";
  for (int i = 1; i < n; ++i) {  // stored in the lower triangle, as the format requires
    const int64_t r = label(i + 1), c = label(i);
    text += std::to_string(std::max(r, c)) + " " + std::to_string(std::min(r, c)) + " -1\n";
  }
  const std::string path = write_mtx("scrambled_path.mtx", text);
  EXPECT_GT(check_reordered(path, Ordering::natural), 10);
  EXPECT_EQ(check_reordered(path, Ordering::rcm), 1);
}

TEST(ReaderOrdering, RcmOfANonSquareMatrixIsAnErrorOnEveryRank) {
  const std::string path = write_mtx("rect_rcm.mtx", std::string(kBanner) + "2 3 2\n1 1 1\n2 3 2\n");
  MtxReadOptions opt;
  opt.ordering = Ordering::rcm;
  const std::string msg = input_error_of([&] { read_matrix_market(MPI_COMM_WORLD, path, opt); });
  EXPECT_NE(msg.find("the rcm ordering needs a square matrix, not 2 x 3"), std::string::npos) << msg;
  // The natural ordering reads it.
  EXPECT_EQ(read_matrix_market(MPI_COMM_WORLD, path).global_nnz(), 2);
}

// ---------------------------------------------------------------------------------------
// Real SuiteSparse files (registered separately, skipped when absent)

void check_real_matrix(const std::string& path, int64_t rows, int64_t nnz, bool symmetric) {
  auto a = read_matrix_market(MPI_COMM_WORLD, path);
  EXPECT_EQ(a.global_rows(), rows);
  EXPECT_EQ(a.global_cols(), rows);
  EXPECT_EQ(a.global_nnz(), nnz);
  const RowPartition rp = RowPartition::balanced(rows, test::size());
  check_layout(a, rp, rp);
  const Entries all = canonical(a.gather_all());
  // Whatever the rank count, the distributed matrix is the serially parsed one.
  const Entries ref = canonical(parse_mtx(path).entries);
  EXPECT_EQ(static_cast<int64_t>(ref.size()), nnz);
  EXPECT_TRUE(same_entries(all, ref));
  if (symmetric) {
    EXPECT_TRUE(is_symmetric(all));
  }
}

TEST(ReaderSuiteSparse, Bcsstk01RealSymmetric) {
  SPC_REQUIRE_MATRIX(path, "HB/bcsstk01");
  const MtxHeader h = read_mtx_header(path);
  EXPECT_EQ(h.field, "real");
  EXPECT_EQ(h.symmetry, "symmetric");
  EXPECT_EQ(h.stored, 224);
  check_real_matrix(path, 48, 400, true);
}

TEST(ReaderSuiteSparse, West0132RealGeneral) {
  SPC_REQUIRE_MATRIX(path, "HB/west0132");
  EXPECT_EQ(read_mtx_header(path).symmetry, "general");
  check_real_matrix(path, 132, 414, false);
  EXPECT_FALSE(is_symmetric(parse_mtx(path).entries));
}

TEST(ReaderSuiteSparse, Dwt162PatternSymmetric) {
  SPC_REQUIRE_MATRIX(path, "HB/dwt_162");
  EXPECT_EQ(read_mtx_header(path).field, "pattern");
  check_real_matrix(path, 162, 1182, true);
  for (const auto& t : parse_mtx(path).entries) ASSERT_EQ(t.val, 1.0);
}

TEST(ReaderSuiteSparse, JournalsIntegerSymmetric) {
  SPC_REQUIRE_MATRIX(path, "Pajek/Journals");
  EXPECT_EQ(read_mtx_header(path).field, "integer");
  check_real_matrix(path, 124, 12068, true);
  for (const auto& t : parse_mtx(path).entries) ASSERT_EQ(t.val, std::round(t.val));
}

TEST(ReaderSuiteSparse, UserPartitionAndChunksOnRealFile) {
  SPC_REQUIRE_MATRIX(path, "HB/bcsstk01");
  const Entries ref = canonical(parse_mtx(path).entries);
  MtxReadOptions opt;
  opt.has_row_partition = true;
  opt.rows = skewed_partition(48, test::size());
  opt.scatter_chunk_bytes = 1000;
  auto a = read_matrix_market(MPI_COMM_WORLD, path, opt);
  check_layout(a, opt.rows, opt.rows);
  EXPECT_TRUE(same_entries(canonical(a.gather_all()), ref));
}

TEST(ReaderSuiteSparse, RcmOrderingOfRealFiles) {
  // Real files whose natural numbering is not banded: RCM is P A P^T and cuts the bandwidth.
  SPC_REQUIRE_MATRIX(can, "HB/can_1054");
  SPC_REQUIRE_MATRIX(west, "HB/west0132");  // unsymmetric: ordered on the pattern of A + A^T
  for (const auto& path : {can, west}) {
    const int64_t natural = check_reordered(path, Ordering::natural);
    const int64_t rcm = check_reordered(path, Ordering::rcm);
    EXPECT_LT(rcm, natural) << path;
  }
}

TEST(ReaderSuiteSparse, G2CircuitLargeFile) {
  SPC_REQUIRE_MATRIX(path, "AMD/G2_circuit");
  // Order-independent checksums: positions exactly (wrapping unsigned sum), values with a
  // tolerance (the summation order differs).
  auto position_hash = [](const Triplet<double>& t) {
    return static_cast<uint64_t>(t.row) * 1000003u + static_cast<uint64_t>(t.col) * 7919u + 1u;
  };
  uint64_t ref_pos = 0;
  double ref_val = 0, ref_abs = 0;
  int64_t ref_count = 0;
  if (test::rank() == 0) {
    const MtxData d = parse_mtx(path);
    EXPECT_EQ(d.header.stored, 438388);
    ref_count = static_cast<int64_t>(d.entries.size());
    for (const auto& t : d.entries) ref_pos += position_hash(t), ref_val += t.val, ref_abs += std::abs(t.val);
  }
  MPI_Bcast(&ref_pos, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  MPI_Bcast(&ref_val, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Bcast(&ref_abs, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Bcast(&ref_count, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);

  auto a = read_matrix_market(MPI_COMM_WORLD, path);
  EXPECT_EQ(a.global_rows(), 150102);
  EXPECT_EQ(a.global_nnz(), 726674);
  EXPECT_EQ(ref_count, 726674);
  const RowPartition rp = RowPartition::balanced(150102, test::size());
  check_layout(a, rp, rp);
  uint64_t pos = 0;
  double val = 0, abs_val = 0;
  for (const auto& t : a.local_triplets()) pos += position_hash(t), val += t.val, abs_val += std::abs(t.val);
  uint64_t pos_sum = 0;
  double val_sum = 0;
  MPI_Allreduce(&pos, &pos_sum, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&val, &val_sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(pos_sum, ref_pos);
  EXPECT_NEAR(val_sum, ref_val, 1e-10 * ref_abs);
}

TEST(DataPathSuiteSparse, NamesResolveToTheSameFile) {
  SPC_REQUIRE_MATRIX(path, "HB/bcsstk01");
  for (const char* name : {"HB_bcsstk01", "HB_bcsstk01.mtx", "bcsstk01"}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(same_file(find_matrix(name), path));
  }
  const auto all = list_matrices();
  EXPECT_EQ(std::count_if(all.begin(), all.end(), [&](const std::string& p) { return same_file(p, path); }), 1);
  const std::string largest = largest_matrix();
  ASSERT_FALSE(largest.empty());
  const int64_t best = read_mtx_header(largest).stored;
  for (const auto& p : all) {
    try {
      EXPECT_LE(read_mtx_header(p).stored, best) << p;
    } catch (const InputError&) {
    }
  }
}

// Every file of the fuzz target's seed corpus and every input a fuzz run ever crashed on
// (tests/fuzz/regressions/mtx, e.g. the empty file: a null-pointer memchr) parses, from disk
// and from memory, into entries inside the declared size, or raises InputError.
TEST(ReaderFuzzRegressions, CorpusAndCrashersParseOrRaiseInputError) {
  int files = 0;
  for (const char* sub : {"/tests/fuzz/corpus/mtx", "/tests/fuzz/regressions/mtx"}) {
    for (const auto& f : fs::directory_iterator(std::string(SPARSECOMM_SOURCE_DIR) + sub)) {
      SCOPED_TRACE(f.path().string());
      std::ifstream in(f.path(), std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      ++files;
      for (int from_memory = 0; from_memory < 2; ++from_memory) {
        try {
          const auto d = from_memory ? parse_mtx_text(text) : parse_mtx(f.path().string());
          for (const auto& e : d.entries) {
            ASSERT_TRUE(e.row >= 0 && e.row < d.header.rows && e.col >= 0 && e.col < d.header.cols);
          }
        } catch (const InputError&) {
          // the expected answer to a malformed file
        }
      }
    }
  }
  EXPECT_GE(files, 20);
}

}  // namespace
}  // namespace sparsecomm

