// Tests of the matrix and graph generators (include/sparsecomm/matrix/generators.hpp, src/matrix/generators.cpp).
//
// Oracles, in order of strength:
//  - rank independence: the matrix built over MPI_COMM_WORLD, gathered, equals the one
//    every rank builds alone over MPI_COMM_SELF (bit for bit);
//  - definitions: stencil and Moore matrices are compared entry by entry against a
//    brute-force construction over all pairs of grid points written from the definition;
//  - Hypre: the rotated anisotropic stencil against Hypre's own GenerateRotate7pt;
//  - statistics and graph invariants for the random generators.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sparsecomm/core/error.hpp"
#include "sparsecomm/matrix/generators.hpp"
#include "kernels/reference.hpp"
#include "test_util.hpp"

#if SPARSECOMM_HAVE_HYPRE
// Hypre's internal headers (needed for the ParCSR accessors) have inline functions with
// unused parameters; they are not our code, so silence that one warning around them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "HYPRE.h"
#include "HYPRE_parcsr_ls.h"
#include "_hypre_parcsr_ls.h"
#pragma GCC diagnostic pop
#endif

namespace {

using sparsecomm::DistCsr;
using sparsecomm::InputError;
using sparsecomm::Triplet;
namespace gen = sparsecomm::gen;
using Entries = std::vector<Triplet<double>>;

using sparsecomm::test::same_entries;
using sparsecomm::test::sorted;

/// Same pattern, values equal to a relative tolerance.
::testing::AssertionResult close_entries(const Entries& a, const Entries& b, double rtol) {
  if (a.size() != b.size())
    return ::testing::AssertionFailure() << "sizes differ: " << a.size() << " vs " << b.size();
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].row != b[k].row || a[k].col != b[k].col)
      return ::testing::AssertionFailure() << "pattern differs at entry " << k << ": (" << a[k].row << ", "
                                           << a[k].col << ") vs (" << b[k].row << ", " << b[k].col << ")";
    const double scale = std::max(std::fabs(a[k].val), std::fabs(b[k].val));
    if (std::fabs(a[k].val - b[k].val) > rtol * scale)
      return ::testing::AssertionFailure() << "value differs at (" << a[k].row << ", " << a[k].col
                                           << "): " << a[k].val << " vs " << b[k].val;
  }
  return ::testing::AssertionSuccess();
}

/// Symmetric in pattern and values (exactly). `e` must be sorted.
::testing::AssertionResult symmetric(const Entries& e) {
  auto less = [](const Triplet<double>& a, const Triplet<double>& b) {
    return a.row != b.row ? a.row < b.row : a.col < b.col;
  };
  for (const auto& t : e) {
    Triplet<double> key{t.col, t.row, 0.0};
    auto it = std::lower_bound(e.begin(), e.end(), key, less);
    if (it == e.end() || it->row != t.col || it->col != t.row)
      return ::testing::AssertionFailure() << "(" << t.row << ", " << t.col << ") has no transpose entry";
    if (it->val != t.val)
      return ::testing::AssertionFailure() << "A(" << t.row << ", " << t.col << ") = " << t.val << " but A("
                                           << t.col << ", " << t.row << ") = " << it->val;
  }
  return ::testing::AssertionSuccess();
}

std::map<int64_t, double> row_of(const Entries& e, int64_t row) {
  std::map<int64_t, double> r;
  for (const auto& t : e)
    if (t.row == row) r[t.col] = t.val;
  return r;
}

std::vector<int64_t> degrees(const Entries& e, int64_t n) {
  std::vector<int64_t> d(static_cast<size_t>(n), 0);
  for (const auto& t : e) ++d[static_cast<size_t>(t.row)];
  return d;
}

int world_rank() { return sparsecomm::test::rank(); }
int world_size() { return sparsecomm::test::size(); }

// ---------------------------------------------------------------------------------------
// Rank independence
// ---------------------------------------------------------------------------------------

struct Case {
  std::string name;
  std::function<DistCsr<double>(MPI_Comm)> make;
};

gen::RmatParams rmat_params(int scale, int edge_factor, uint64_t seed, bool sym = true, bool loops_removed = true,
                            bool permute = true) {
  gen::RmatParams p;
  p.scale = scale;
  p.edge_factor = edge_factor;
  p.seed = seed;
  p.symmetrize = sym;
  p.remove_self_loops = loops_removed;
  p.permute = permute;
  return p;
}

std::vector<Case> all_cases() {
  return {
      {"lap2d 5pt 13x7", [](MPI_Comm c) { return gen::laplacian_2d(c, 13, 7, 5); }},
      {"lap2d 9pt 9x11", [](MPI_Comm c) { return gen::laplacian_2d(c, 9, 11, 9); }},
      {"lap2d 1x3", [](MPI_Comm c) { return gen::laplacian_2d(c, 1, 3, 5); }},
      {"lap3d 7pt 5x4x3", [](MPI_Comm c) { return gen::laplacian_3d(c, 5, 4, 3, 7); }},
      {"lap3d 27pt 4x5x3", [](MPI_Comm c) { return gen::laplacian_3d(c, 4, 5, 3, 27); }},
      {"rotate 11x6 30deg", [](MPI_Comm c) { return gen::rotated_anisotropic_2d(c, 11, 6, 30.0, 0.01); }},
      {"rotate 8x9 default", [](MPI_Comm c) { return gen::rotated_anisotropic_2d(c, 8, 9); }},
      {"er 300 0.05", [](MPI_Comm c) { return gen::erdos_renyi(c, 300, 0.05, 7); }},
      {"er 5 0.5", [](MPI_Comm c) { return gen::erdos_renyi(c, 5, 0.5, 1); }},
      {"moore 2,1,9", [](MPI_Comm c) { return gen::moore(c, 2, 1, 9); }},
      {"moore 3,2,4 (wraps)", [](MPI_Comm c) { return gen::moore(c, 3, 2, 4); }},
      {"moore 1,3,5 (wraps)", [](MPI_Comm c) { return gen::moore(c, 1, 3, 5); }},
      {"rmat 8 permuted", [](MPI_Comm c) { return gen::rmat(c, rmat_params(8, 8, 5)); }},
      {"rmat 8 natural", [](MPI_Comm c) { return gen::rmat(c, rmat_params(8, 8, 5, true, true, false)); }},
      {"rmat 7 directed with loops",
       [](MPI_Comm c) { return gen::rmat(c, rmat_params(7, 4, 11, false, false, true)); }},
      {"spec er", [](MPI_Comm c) { return gen::from_spec(c, "er:100,0.1,3"); }},
      {"spec rmat", [](MPI_Comm c) { return gen::from_spec(c, "rmat:6,4,9"); }},
  };
}

TEST(GeneratorRankIndependence, GatheredMatrixEqualsSingleRankBuild) {
  for (const auto& c : all_cases()) {
    SCOPED_TRACE(c.name);
    const auto dist = c.make(MPI_COMM_WORLD);
    const auto self = c.make(MPI_COMM_SELF);
    EXPECT_EQ(dist.global_rows(), self.global_rows());
    EXPECT_EQ(dist.global_cols(), self.global_cols());
    EXPECT_EQ(dist.global_nnz(), self.global_nnz());
    EXPECT_GT(self.global_nnz(), 0);
    // Rows are balanced over the communicator, as documented.
    EXPECT_EQ(dist.row_partition(), sparsecomm::RowPartition::balanced(dist.global_rows(), world_size()));
    EXPECT_TRUE(same_entries(sorted(dist.gather_all()), self.local_triplets()));
  }
}

TEST(GeneratorSpec, SpecsMatchDirectCalls) {
  const std::vector<std::pair<std::string, std::function<DistCsr<double>(MPI_Comm)>>> pairs = {
      {"lap2d:6,5", [](MPI_Comm c) { return gen::laplacian_2d(c, 6, 5, 5); }},
      {"lap2d9:6,5", [](MPI_Comm c) { return gen::laplacian_2d(c, 6, 5, 9); }},
      {"lap3d:3,4,5", [](MPI_Comm c) { return gen::laplacian_3d(c, 3, 4, 5, 7); }},
      {"lap3d27:3,4,5", [](MPI_Comm c) { return gen::laplacian_3d(c, 3, 4, 5, 27); }},
      {"rotate:7,6", [](MPI_Comm c) { return gen::rotated_anisotropic_2d(c, 7, 6, 45.0, 0.001); }},
      {"rotate:7,6,30", [](MPI_Comm c) { return gen::rotated_anisotropic_2d(c, 7, 6, 30.0, 0.001); }},
      {" rotate : 7 , 6 , 30 , 0.1 ", [](MPI_Comm c) { return gen::rotated_anisotropic_2d(c, 7, 6, 30.0, 0.1); }},
      {"er:200,0.02", [](MPI_Comm c) { return gen::erdos_renyi(c, 200, 0.02, 1); }},
      {"er:200,0.02,99", [](MPI_Comm c) { return gen::erdos_renyi(c, 200, 0.02, 99); }},
      {"moore:2,1,16", [](MPI_Comm c) { return gen::moore(c, 2, 1, 16); }},
      {"rmat:7", [](MPI_Comm c) { return gen::rmat(c, gen::RmatParams{7}); }},
      {"rmat:7,4,3", [](MPI_Comm c) { return gen::rmat(c, rmat_params(7, 4, 3)); }},
  };
  for (const auto& [spec, direct] : pairs) {
    SCOPED_TRACE(spec);
    const auto a = gen::from_spec(MPI_COMM_WORLD, spec);
    const auto b = direct(MPI_COMM_WORLD);
    EXPECT_GT(a.global_nnz(), 0);
    EXPECT_TRUE(same_entries(a.local_triplets(), b.local_triplets()));
  }
}

// ---------------------------------------------------------------------------------------
// Stencils
// ---------------------------------------------------------------------------------------

/// Brute force from the definition: every pair of grid points, kept if it is in the
/// stencil. `value(dx, dy, dz)` returns the coefficient, or nothing when the offset is not
/// in the stencil (a stencil point may well have the value 0, e.g. rotation angle 0).
Entries stencil_oracle(int64_t nx, int64_t ny, int64_t nz,
                       const std::function<std::optional<double>(int, int, int)>& value) {
  Entries e;
  const int64_t n = nx * ny * nz;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t ix = i % nx, iy = (i / nx) % ny, iz = i / (nx * ny);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t jx = j % nx, jy = (j / nx) % ny, jz = j / (nx * ny);
      const int64_t dx = jx - ix, dy = jy - iy, dz = jz - iz;
      if (std::abs(dx) > 1 || std::abs(dy) > 1 || std::abs(dz) > 1) continue;
      const auto v = value(static_cast<int>(dx), static_cast<int>(dy), static_cast<int>(dz));
      if (v) e.push_back({i, j, *v});
    }
  }
  return e;
}

TEST(GeneratorLaplacian, MatchesDefinition) {
  struct Grid {
    int64_t nx, ny, nz;
    int points;
  };
  const std::vector<Grid> grids = {{7, 5, 1, 5}, {6, 4, 1, 9}, {1, 1, 1, 5}, {2, 9, 1, 9},
                                   {4, 3, 5, 7}, {3, 4, 3, 27}, {1, 1, 4, 7}};
  for (const auto& g : grids) {
    SCOPED_TRACE(std::to_string(g.nx) + "x" + std::to_string(g.ny) + "x" + std::to_string(g.nz) + " " +
                 std::to_string(g.points) + "pt");
    const bool is3d = g.points == 7 || g.points == 27;
    const auto a = is3d ? gen::laplacian_3d(MPI_COMM_WORLD, g.nx, g.ny, g.nz, g.points)
                        : gen::laplacian_2d(MPI_COMM_WORLD, g.nx, g.ny, g.points);
    const bool full = g.points == 9 || g.points == 27;
    const double center = g.points - 1;
    const auto expect = stencil_oracle(g.nx, g.ny, g.nz, [&](int dx, int dy, int dz) -> std::optional<double> {
      const int manhattan = std::abs(dx) + std::abs(dy) + std::abs(dz);
      if (manhattan == 0) return center;
      if (full || manhattan == 1) return -1.0;
      return std::nullopt;
    });
    const auto all = sorted(a.gather_all());
    EXPECT_EQ(a.global_rows(), g.nx * g.ny * g.nz);
    EXPECT_TRUE(same_entries(all, expect));
    EXPECT_TRUE(symmetric(all));
  }
}

// The weak-scaled generators against the natural-order ones on the same global grid: the
// block numbering undone with a process grid from MPI_Dims_create (not the generator's own
// factorization) gives the same matrix entry for entry.
TEST(GeneratorBlocks, EqualNaturalOrderGridRenumbered) {
  struct Block {
    int dims;
    int64_t bx, by, bz;
    int points;  // 7, 27, or 0: the rotated stencil (30 degrees, eps 0.01)
  };
  const std::vector<Block> blocks = {{3, 3, 2, 2, 27}, {3, 2, 3, 1, 7}, {2, 4, 3, 1, 0}, {2, 1, 5, 1, 0}};
  const int P = world_size();
  for (const auto& b : blocks) {
    SCOPED_TRACE(std::to_string(b.bx) + "x" + std::to_string(b.by) + "x" + std::to_string(b.bz) + " per rank, " +
                 std::to_string(b.points) + "pt");
    int pg[3] = {0, 0, b.dims == 3 ? 0 : 1};  // (MPI_Dims_create fills the first b.dims)
    MPI_Dims_create(P, b.dims, pg);
    const int64_t nx = pg[0] * b.bx, ny = pg[1] * b.by, nz = pg[2] * b.bz, blk = b.bx * b.by * b.bz;
    const auto a = b.points ? gen::laplacian_3d_blocks(MPI_COMM_WORLD, b.bx, b.by, b.bz, b.points)
                            : gen::rotated_anisotropic_2d_blocks(MPI_COMM_WORLD, b.bx, b.by, 30.0, 0.01);
    const auto natural = b.points ? gen::laplacian_3d(MPI_COMM_SELF, nx, ny, nz, b.points)
                                  : gen::rotated_anisotropic_2d(MPI_COMM_SELF, nx, ny, 30.0, 0.01);
    EXPECT_EQ(a.global_rows(), nx * ny * nz);
    EXPECT_EQ(a.local_rows(), blk);
    auto to_natural = [&](int64_t g) {
      const int64_t r = g / blk, l = g % blk;
      const int64_t x = (r % pg[0]) * b.bx + l % b.bx, y = ((r / pg[0]) % pg[1]) * b.by + (l / b.bx) % b.by,
                    z = (r / (pg[0] * pg[1])) * b.bz + l / (b.bx * b.by);
      return x + nx * (y + ny * z);
    };
    Entries renumbered;
    for (const auto& t : a.gather_all()) renumbered.push_back({to_natural(t.row), to_natural(t.col), t.val});
    EXPECT_TRUE(same_entries(sorted(renumbered), sorted(natural.gather_all())));
  }
}

TEST(GeneratorBlocks, SpecsAndBadArguments) {
  const auto a = gen::from_spec(MPI_COMM_WORLD, "lap3d27w:2,3,2");
  const auto b = gen::laplacian_3d_blocks(MPI_COMM_WORLD, 2, 3, 2, 27);
  EXPECT_TRUE(same_entries(sorted(a.gather_all()), sorted(b.gather_all())));
  const auto c = gen::from_spec(MPI_COMM_WORLD, "rotatew:3,2,30,0.01");
  const auto d = gen::rotated_anisotropic_2d_blocks(MPI_COMM_WORLD, 3, 2, 30.0, 0.01);
  EXPECT_TRUE(same_entries(sorted(c.gather_all()), sorted(d.gather_all())));
  EXPECT_THROW(gen::from_spec(MPI_COMM_WORLD, "lap3d27w:2,0,2"), InputError);
  EXPECT_THROW(gen::laplacian_3d_blocks(MPI_COMM_WORLD, 2, 2, 2, 9), InputError);
  EXPECT_THROW(gen::rotated_anisotropic_2d_blocks(MPI_COMM_WORLD, 2, 2, std::nan(""), 0.1), InputError);
}

TEST(GeneratorLaplacian, InteriorAndCornerValues) {
  // 5-point, 7x5: interior point (3, 2) = row 17, corner (0, 0) = row 0, corner (6, 4) = row 34.
  const auto all = sorted(gen::laplacian_2d(MPI_COMM_WORLD, 7, 5, 5).gather_all());
  const std::map<int64_t, double> interior = {{10, -1}, {16, -1}, {17, 4}, {18, -1}, {24, -1}};
  const std::map<int64_t, double> corner0 = {{0, 4}, {1, -1}, {7, -1}};
  const std::map<int64_t, double> corner34 = {{27, -1}, {33, -1}, {34, 4}};
  EXPECT_EQ(row_of(all, 17), interior);
  EXPECT_EQ(row_of(all, 0), corner0);
  EXPECT_EQ(row_of(all, 34), corner34);
  // 9-point corner: itself, right, up, diagonal.
  const auto all9 = sorted(gen::laplacian_2d(MPI_COMM_WORLD, 7, 5, 9).gather_all());
  const std::map<int64_t, double> corner9 = {{0, 8}, {1, -1}, {7, -1}, {8, -1}};
  EXPECT_EQ(row_of(all9, 0), corner9);
  EXPECT_EQ(row_of(all9, 17).size(), 9u);
  // 3D: interior (1,1,1) of 3x3x3 is row 13; 27-point interior has all 27 points.
  const auto all7 = sorted(gen::laplacian_3d(MPI_COMM_WORLD, 3, 3, 3, 7).gather_all());
  const std::map<int64_t, double> interior7 = {{4, -1}, {10, -1}, {12, -1}, {13, 6}, {14, -1}, {16, -1}, {22, -1}};
  EXPECT_EQ(row_of(all7, 13), interior7);
  EXPECT_EQ(row_of(all7, 0).size(), 4u);
  const auto all27 = sorted(gen::laplacian_3d(MPI_COMM_WORLD, 3, 3, 3, 27).gather_all());
  EXPECT_EQ(row_of(all27, 13).size(), 27u);
  EXPECT_EQ(row_of(all27, 13).at(13), 26.0);
  EXPECT_EQ(row_of(all27, 0).size(), 8u);
}

TEST(GeneratorLaplacian, InteriorRowSumsAreZero) {
  struct Grid {
    int64_t nx, ny, nz;
    int points;
  };
  for (const Grid& g : {Grid{9, 8, 1, 5}, Grid{9, 8, 1, 9}, Grid{5, 6, 4, 7}, Grid{5, 6, 4, 27}}) {
    SCOPED_TRACE(std::to_string(g.points) + "pt");
    const bool is3d = g.points == 7 || g.points == 27;
    const auto a = is3d ? gen::laplacian_3d(MPI_COMM_WORLD, g.nx, g.ny, g.nz, g.points)
                        : gen::laplacian_2d(MPI_COMM_WORLD, g.nx, g.ny, g.points);
    // Local check on the rows this rank owns: the distributed blocks themselves.
    int64_t interior_rows = 0;
    for (int32_t i = 0; i < a.local_rows(); ++i) {
      const int64_t r = a.row_begin() + i;
      const int64_t x = r % g.nx, y = (r / g.nx) % g.ny, z = r / (g.nx * g.ny);
      const bool interior = x > 0 && x < g.nx - 1 && y > 0 && y < g.ny - 1 && (!is3d || (z > 0 && z < g.nz - 1));
      double sum = 0;
      for (int64_t k = a.diag().row_ptr[i]; k < a.diag().row_ptr[i + 1]; ++k) sum += a.diag().val[k];
      for (int64_t k = a.offd().row_ptr[i]; k < a.offd().row_ptr[i + 1]; ++k) sum += a.offd().val[k];
      if (interior) {
        EXPECT_EQ(sum, 0.0) << "row " << r;
        ++interior_rows;
      } else {
        EXPECT_GT(sum, 0.0) << "boundary row " << r;  // Dirichlet: diagonally dominant
      }
    }
    int64_t total = 0;
    MPI_Allreduce(&interior_rows, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    EXPECT_EQ(total, (g.nx - 2) * (g.ny - 2) * (is3d ? g.nz - 2 : 1));
  }
}

struct RotateValues {
  double center, east_west, north_south, diagonal;
};
RotateValues rotate_values(double angle, double eps) {
  const double x = 4.0 * std::atan(1.0) * angle / 180.0;
  const double s = std::sin(x), c = std::cos(x);
  const double ac = -(c * c + eps * s * s), bc = 2.0 * (1.0 - eps) * s * c, cc = -(s * s + eps * c * c);
  return {-2 * (2 * ac + bc + 2 * cc), 2 * ac + bc, bc + 2 * cc, -bc};
}

TEST(GeneratorRotate, MatchesDefinitionAndIsSymmetric) {
  for (double angle : {45.0, 30.0, 0.0, 60.0}) {
    for (double eps : {0.001, 0.1}) {
      SCOPED_TRACE("angle " + std::to_string(angle) + " eps " + std::to_string(eps));
      const int64_t nx = 9, ny = 6;
      const RotateValues v = rotate_values(angle, eps);
      const auto expect = stencil_oracle(nx, ny, 1, [&](int dx, int dy, int) -> std::optional<double> {
        if (dx == 0 && dy == 0) return v.center;
        if (dy == 0) return v.east_west;
        if (dx == 0) return v.north_south;
        if (dx == dy) return v.diagonal;  // only the (-1,-1)/(+1,+1) diagonal
        return std::nullopt;
      });
      const auto all = sorted(gen::rotated_anisotropic_2d(MPI_COMM_WORLD, nx, ny, angle, eps).gather_all());
      // Entries that are exactly zero (angle 0: the diagonal) are still stored, as Hypre does.
      EXPECT_TRUE(close_entries(all, expect, 1e-14));
      EXPECT_TRUE(symmetric(all));
      // Interior point (4, 3) = row 31: all seven points, summing to zero.
      const auto interior = row_of(all, 31);
      ASSERT_EQ(interior.size(), 7u);
      double sum = 0;
      for (const auto& kv : interior) sum += kv.second;
      EXPECT_NEAR(sum, 0.0, 1e-12);
      EXPECT_NEAR(interior.at(31), v.center, 1e-14 * std::fabs(v.center));
      EXPECT_NEAR(interior.at(31 - nx - 1), v.diagonal, 1e-14 * std::fabs(v.center));
      EXPECT_EQ(interior.count(31 - nx + 1), 0u);  // the other diagonal is not in the stencil
      // Corner (0, 0): itself, east, north, north-east.
      const auto corner = row_of(all, 0);
      ASSERT_EQ(corner.size(), 4u);
      EXPECT_NEAR(corner.at(1), v.east_west, 1e-14 * std::fabs(v.center));
      EXPECT_NEAR(corner.at(nx), v.north_south, 1e-14 * std::fabs(v.center));
      EXPECT_NEAR(corner.at(nx + 1), v.diagonal, 1e-14 * std::fabs(v.center));
      // Corner (nx-1, 0) has no (+1,+1) or (-1,-1) neighbor inside the grid.
      EXPECT_EQ(row_of(all, nx - 1).size(), 3u);
    }
  }
}

#if SPARSECOMM_HAVE_HYPRE
// HYPRE_Init / HYPRE_Finalize once per process, inside RUN_ALL_TESTS (after MPI_Init,
// before MPI_Finalize), via a global test environment registered before main.
class HypreEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { HYPRE_Init(); }
  void TearDown() override { HYPRE_Finalize(); }
};
[[maybe_unused]] ::testing::Environment* const hypre_env = ::testing::AddGlobalTestEnvironment(new HypreEnvironment);

static_assert(sizeof(HYPRE_Int) == sizeof(int), "this test assumes Hypre was built with 32-bit HYPRE_Int");
#endif

TEST(GeneratorRotate, MatchesHypreGenerateRotate7pt) {
#if SPARSECOMM_HAVE_HYPRE
  const int64_t nx = 10, ny = 7;
  for (double angle : {45.0, 30.0}) {
    for (double eps : {0.001, 0.1}) {
      SCOPED_TRACE("angle " + std::to_string(angle) + " eps " + std::to_string(eps));
      // Hypre on one process (1x1 processor grid): its numbering is then the natural one.
      HYPRE_ParCSRMatrix h = GenerateRotate7pt(MPI_COMM_SELF, nx, ny, 1, 1, 0, 0, angle, eps);
      ASSERT_NE(h, nullptr);
      auto* par = reinterpret_cast<hypre_ParCSRMatrix*>(h);
      hypre_CSRMatrix* diag = hypre_ParCSRMatrixDiag(par);
      hypre_CSRMatrix* offd = hypre_ParCSRMatrixOffd(par);
      EXPECT_EQ(hypre_CSRMatrixNumNonzeros(offd), 0);
      Entries theirs;
      const HYPRE_Int nrows = hypre_CSRMatrixNumRows(diag);
      const HYPRE_Int* ia = hypre_CSRMatrixI(diag);
      const HYPRE_Int* ja = hypre_CSRMatrixJ(diag);
      const HYPRE_Real* va = hypre_CSRMatrixData(diag);
      for (HYPRE_Int i = 0; i < nrows; ++i)
        for (HYPRE_Int k = ia[i]; k < ia[i + 1]; ++k) theirs.push_back({i, ja[k], va[k]});
      HYPRE_ParCSRMatrixDestroy(h);

      const auto ours = gen::rotated_anisotropic_2d(MPI_COMM_WORLD, nx, ny, angle, eps);
      EXPECT_EQ(nrows, nx * ny);
      EXPECT_EQ(ours.global_rows(), nx * ny);
      EXPECT_TRUE(close_entries(sorted(ours.gather_all()), sorted(theirs), 1e-14));
    }
  }
#else
  GTEST_SKIP() << "sparsecomm was built without Hypre; the comparison with GenerateRotate7pt is skipped";
#endif
}

// ---------------------------------------------------------------------------------------
// Moore neighborhoods
// ---------------------------------------------------------------------------------------

/// Brute force: all pairs of torus points within Chebyshev distance `radius`, wrapping.
Entries moore_oracle(int dims, int radius, int64_t side) {
  int64_t n = 1;
  for (int d = 0; d < dims; ++d) n *= side;
  Entries e;
  for (int64_t u = 0; u < n; ++u) {
    for (int64_t v = 0; v < n; ++v) {
      if (u == v) continue;
      bool near = true;
      int64_t a = u, b = v;
      for (int d = 0; d < dims; ++d, a /= side, b /= side) {
        const int64_t diff = std::abs(a % side - b % side);
        if (std::min(diff, side - diff) > radius) near = false;
      }
      if (near) e.push_back({u, v, 1.0});
    }
  }
  return e;
}

TEST(GeneratorMoore, MatchesBruteForceOnSmallTori) {
  struct M {
    int dims, radius;
    int64_t side;
  };
  for (const M& m : {M{1, 1, 7}, M{1, 3, 5}, M{1, 2, 5}, M{1, 1, 2}, M{2, 1, 6}, M{2, 2, 4}, M{2, 1, 1},
                     M{2, 1, 2}, M{3, 1, 3}, M{3, 1, 4}, M{4, 1, 3}, M{6, 1, 2}}) {
    SCOPED_TRACE("moore " + std::to_string(m.dims) + "," + std::to_string(m.radius) + "," + std::to_string(m.side));
    const auto a = gen::moore(MPI_COMM_WORLD, m.dims, m.radius, m.side);
    const auto all = sorted(a.gather_all());
    EXPECT_TRUE(same_entries(all, moore_oracle(m.dims, m.radius, m.side)));
    EXPECT_TRUE(symmetric(all));
  }
}

TEST(GeneratorMoore, DegreesAreWindowPowerMinusOne) {
  struct M {
    int dims, radius;
    int64_t side;
  };
  for (const M& m : {M{2, 2, 20}, M{3, 1, 10}, M{2, 3, 5}, M{1, 4, 30}, M{6, 1, 3}, M{3, 2, 5}, M{2, 1, 1}}) {
    SCOPED_TRACE("moore " + std::to_string(m.dims) + "," + std::to_string(m.radius) + "," + std::to_string(m.side));
    const auto a = gen::moore(MPI_COMM_WORLD, m.dims, m.radius, m.side);
    // A torus has no boundary: every vertex is interior, with min(2r+1, side)^D - 1
    // neighbors (the window covers the whole ring once it is wider than the ring).
    const int64_t w = std::min<int64_t>(2 * m.radius + 1, m.side);
    int64_t expect = 1, n = 1;
    for (int d = 0; d < m.dims; ++d) expect *= w, n *= m.side;
    expect -= 1;
    EXPECT_EQ(a.global_rows(), n);
    // Count rather than ASSERT: a local early return would leave the other ranks alone in
    // the next collective.
    int64_t wrong = 0, first_wrong = -1;
    for (int32_t i = 0; i < a.local_rows(); ++i) {
      const int64_t deg = (a.diag().row_ptr[i + 1] - a.diag().row_ptr[i]) + (a.offd().row_ptr[i + 1] - a.offd().row_ptr[i]);
      if (deg != expect && wrong++ == 0) first_wrong = a.row_begin() + i;
    }
    EXPECT_EQ(wrong, 0) << "first row with a wrong degree: " << first_wrong;
    EXPECT_EQ(a.global_nnz(), n * expect);
  }
}

// ---------------------------------------------------------------------------------------
// Erdős–Rényi
// ---------------------------------------------------------------------------------------

TEST(GeneratorErdosRenyi, StatisticsAndNoSelfLoops) {
  const int64_t n = 2000;
  const double p = 0.01;
  const auto a = gen::erdos_renyi(MPI_COMM_WORLD, n, p, 42);
  const auto all = sorted(a.gather_all());
  int64_t self_loops = 0, upper = 0;
  for (const auto& t : all) {
    if (t.row == t.col) ++self_loops;
    if (t.col > t.row) ++upper;
    ASSERT_EQ(t.val, 1.0);
  }
  EXPECT_EQ(self_loops, 0);
  // Edge count ~ Binomial(n(n-1), p): the mean out-degree is within 5 sigma of p(n-1).
  const double pairs = static_cast<double>(n) * static_cast<double>(n - 1);
  const double mean = static_cast<double>(all.size()) / n;
  const double sigma_mean = std::sqrt(pairs * p * (1 - p)) / n;
  EXPECT_NEAR(mean, p * (n - 1), 5 * sigma_mean);
  // Columns are not biased to one side of the diagonal: Binomial(E, 1/2).
  const double e = static_cast<double>(all.size());
  EXPECT_NEAR(static_cast<double>(upper), e / 2, 5 * std::sqrt(e / 4));
  // Out-degrees are Binomial(n-1, p): their variance, too, is close to (n-1)p(1-p).
  double var = 0;
  for (int64_t d : degrees(all, n)) var += (d - mean) * (d - mean);
  var /= (n - 1);
  const double var_expect = (n - 1) * p * (1 - p);
  EXPECT_NEAR(var, var_expect, 0.25 * var_expect);
  // Another seed, another graph.
  const auto b = sorted(gen::erdos_renyi(MPI_COMM_WORLD, n, p, 43).gather_all());
  EXPECT_FALSE(same_entries(all, b));
}

TEST(GeneratorErdosRenyi, ExtremeDensitiesAndSizes) {
  EXPECT_EQ(gen::erdos_renyi(MPI_COMM_WORLD, 50, 0.0, 1).global_nnz(), 0);
  const auto full = gen::erdos_renyi(MPI_COMM_WORLD, 40, 1.0, 1);
  EXPECT_EQ(full.global_nnz(), 40 * 39);
  for (const auto& t : full.local_triplets()) EXPECT_NE(t.row, t.col);
  const auto empty = gen::erdos_renyi(MPI_COMM_WORLD, 0, 0.5, 1);
  EXPECT_EQ(empty.global_rows(), 0);
  EXPECT_EQ(empty.global_nnz(), 0);
  EXPECT_EQ(gen::erdos_renyi(MPI_COMM_WORLD, 1, 1.0, 1).global_nnz(), 0);
  // Very sparse and large: geometric skipping costs O(edges + rows); O(n^2) would take
  // minutes here (4e10 pairs) and hit the test's time limit.
  const int64_t n = 200000;
  const auto sparse = gen::erdos_renyi(MPI_COMM_WORLD, n, 1e-5, 5);
  const double expect = 1e-5 * static_cast<double>(n) * (n - 1);
  EXPECT_NEAR(static_cast<double>(sparse.global_nnz()), expect, 5 * std::sqrt(expect));
}

// ---------------------------------------------------------------------------------------
// R-MAT
// ---------------------------------------------------------------------------------------

TEST(GeneratorRmat, Graph500Invariants) {
  const auto p = rmat_params(10, 8, 3);
  const auto a = gen::rmat(MPI_COMM_WORLD, p);
  EXPECT_EQ(a.global_rows(), 1024);
  EXPECT_EQ(a.global_cols(), 1024);
  const auto all = a.gather_all();
  // gather_all comes in row order, each row sorted by column: check that directly.
  for (size_t k = 1; k < all.size(); ++k) {
    const bool increasing = all[k - 1].row < all[k].row || (all[k - 1].row == all[k].row && all[k - 1].col < all[k].col);
    ASSERT_TRUE(increasing) << "duplicate or unsorted entry at " << k;
  }
  for (const auto& t : all) {
    ASSERT_NE(t.row, t.col) << "self loop";
    ASSERT_EQ(t.val, 1.0);
  }
  EXPECT_TRUE(symmetric(all));
  // At most 2 entries per generated edge; a good share survive deduplication.
  EXPECT_LE(a.global_nnz(), 2 * 8 * 1024);
  EXPECT_GT(a.global_nnz(), 8 * 1024);
  // Skewed degrees: R-MAT's point is a heavy tail.
  const auto deg = degrees(all, 1024);
  const double mean = static_cast<double>(all.size()) / 1024;
  EXPECT_GT(static_cast<double>(*std::max_element(deg.begin(), deg.end())), 8 * mean);

  // Another seed, another graph.
  const auto b = sorted(gen::rmat(MPI_COMM_WORLD, rmat_params(10, 8, 4)).gather_all());
  EXPECT_FALSE(same_entries(all, b));
}

TEST(GeneratorRmat, PermutationKeepsTheDegreeMultiset) {
  const auto natural = sorted(gen::rmat(MPI_COMM_WORLD, rmat_params(9, 8, 21, true, true, false)).gather_all());
  const auto permuted = sorted(gen::rmat(MPI_COMM_WORLD, rmat_params(9, 8, 21, true, true, true)).gather_all());
  EXPECT_EQ(natural.size(), permuted.size());
  EXPECT_FALSE(same_entries(natural, permuted));  // labels really moved
  auto dn = degrees(natural, 512), dp = degrees(permuted, 512);
  // Without permutation vertex 0 is the hub (quadrant a = top-left at every level).
  EXPECT_EQ(std::max_element(dn.begin(), dn.end()) - dn.begin(), 0);
  std::sort(dn.begin(), dn.end());
  std::sort(dp.begin(), dp.end());
  EXPECT_EQ(dn, dp);
}

TEST(GeneratorRmat, DirectedWithSelfLoops) {
  const auto all = sorted(gen::rmat(MPI_COMM_WORLD, rmat_params(8, 16, 2, false, false, true)).gather_all());
  int64_t loops = 0;
  for (const auto& t : all) loops += t.row == t.col ? 1 : 0;
  EXPECT_GT(loops, 0);  // (a+d)^scale of the edges land on the diagonal
  EXPECT_FALSE(symmetric(all));
  EXPECT_LE(static_cast<int64_t>(all.size()), 16 * 256);
}

TEST(GeneratorRmat, QuadrantConvention) {
  // A degenerate initiator puts every edge into the same corner of the matrix:
  // a = top-left (0, 0), b = top-right (0, n-1), c = bottom-left (n-1, 0), d = bottom-right.
  const int64_t n = 64;
  struct Q {
    double a, b, c, d;
    int64_t row, col;
  };
  for (const Q& q : {Q{1, 0, 0, 0, 0, 0}, Q{0, 1, 0, 0, 0, n - 1}, Q{0, 0, 1, 0, n - 1, 0}, Q{0, 0, 0, 1, n - 1, n - 1}}) {
    auto p = rmat_params(6, 4, 1, false, false, false);
    p.a = q.a, p.b = q.b, p.c = q.c, p.d = q.d;
    const auto all = gen::rmat(MPI_COMM_WORLD, p).gather_all();
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].row, q.row);
    EXPECT_EQ(all[0].col, q.col);
  }
}

// ---------------------------------------------------------------------------------------
// SpMV through the distributed blocks against the serial reference
// ---------------------------------------------------------------------------------------

double x_value(int64_t g, int k) { return std::sin(0.37 * static_cast<double>(g) + 1.3 * k) + 0.1 * k; }

/// y = diag * x_local + offd * x_ghost, where the ghosts come straight from a gathered x.
void check_spmv(const DistCsr<double>& a, int width) {
  const int p = world_size(), me = world_rank();
  const auto& cp = a.col_partition();
  const auto& rp = a.row_partition();
  std::vector<int> xc(p), xd(p + 1, 0), yc(p), yd(p + 1, 0);
  for (int r = 0; r < p; ++r) {
    xc[r] = static_cast<int>(cp.local_size(r)) * width;
    xd[r + 1] = xd[r] + xc[r];
    yc[r] = static_cast<int>(rp.local_size(r)) * width;
    yd[r + 1] = yd[r] + yc[r];
  }
  std::vector<double> x_local(static_cast<size_t>(a.local_cols()) * width);
  for (int32_t i = 0; i < a.local_cols(); ++i)
    for (int k = 0; k < width; ++k) x_local[static_cast<size_t>(i) * width + k] = x_value(a.col_begin() + i, k);
  std::vector<double> x_full(static_cast<size_t>(xd[p]));
  MPI_Allgatherv(x_local.data(), xc[me], MPI_DOUBLE, x_full.data(), xc.data(), xd.data(), MPI_DOUBLE, MPI_COMM_WORLD);
  std::vector<double> x_ghost(static_cast<size_t>(a.num_ghosts()) * width);
  for (int32_t t = 0; t < a.num_ghosts(); ++t)
    for (int k = 0; k < width; ++k)
      x_ghost[static_cast<size_t>(t) * width + k] = x_full[static_cast<size_t>(a.ghost_ids()[t]) * width + k];

  std::vector<double> y_local(static_cast<size_t>(a.local_rows()) * width, -99.0);  // must be overwritten
  a.multiply_diag(x_local.data(), y_local.data(), width);
  a.multiply_offd_add(x_ghost.data(), y_local.data(), width);
  std::vector<double> y_full(static_cast<size_t>(yd[p]));
  MPI_Allgatherv(y_local.data(), yc[me], MPI_DOUBLE, y_full.data(), yc.data(), yd.data(), MPI_DOUBLE, MPI_COMM_WORLD);

  const auto ref = sparsecomm::reference::gather_eigen(a);
  for (int k = 0; k < width; ++k) {
    std::vector<double> xk(static_cast<size_t>(a.global_cols()));
    for (int64_t g = 0; g < a.global_cols(); ++g) {
      xk[g] = x_full[static_cast<size_t>(g) * width + k];
      ASSERT_EQ(xk[g], x_value(g, k));
    }
    const auto yk = sparsecomm::reference::spmv(ref, xk);
    for (int64_t i = 0; i < a.global_rows(); ++i)
      ASSERT_NEAR(y_full[static_cast<size_t>(i) * width + k], yk[i], 1e-12 * (1 + std::fabs(yk[i])))
          << "row " << i << " vector " << k;
  }
}

TEST(GeneratorSpmv, DistributedBlocksMatchSerialReference) {
  const std::vector<Case> cases = {
      {"rotate 23x17", [](MPI_Comm c) { return gen::rotated_anisotropic_2d(c, 23, 17, 30.0, 0.01); }},
      {"lap3d27 6x5x4", [](MPI_Comm c) { return gen::laplacian_3d(c, 6, 5, 4, 27); }},
      {"moore 2,2,12", [](MPI_Comm c) { return gen::moore(c, 2, 2, 12); }},
      {"er 400", [](MPI_Comm c) { return gen::erdos_renyi(c, 400, 0.02, 8); }},
      {"rmat 9", [](MPI_Comm c) { return gen::rmat(c, rmat_params(9, 8, 1)); }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto a = c.make(MPI_COMM_WORLD);
    // Ghost map: sorted, unique, all outside the owned columns.
    const auto& g = a.ghost_ids();
    EXPECT_TRUE(std::is_sorted(g.begin(), g.end()));
    EXPECT_EQ(std::adjacent_find(g.begin(), g.end()), g.end());
    for (int64_t id : g) EXPECT_TRUE(id < a.col_begin() || id >= a.col_begin() + a.local_cols());
    for (int width : {1, 3}) {
      SCOPED_TRACE("width " + std::to_string(width));
      check_spmv(a, width);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------

/// Runs `f` and expects an InputError whose message contains `needle`; must be called on
/// every rank (the generators are collective).
template <class F>
void expect_input_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected an InputError mentioning '" << needle << "'";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

TEST(GeneratorErrors, BadSpecsListTheValidForms) {
  const std::vector<std::string> bad = {
      "",          "lap2d",       "lap2d:",       "lap2d:10",        "lap2d:10,x",   "lap2d:10,10,5",
      "lap2d:1e3,4", "lap2d:-3,4", "lap2d:0,4",   "lap3d:4,4",       "lap3d27:2,2,2,2", "foo:1",
      "rotate:10", "rotate:10,10,abc", "rotate:10,10,45,0.1,7", "er:100",  "er:100,1.5",  "er:100,-0.1",
      "er:100,0.1,abc", "er:100,0.1,-1", "moore:7,1,4", "moore:2,0,4", "moore:2,1,0", "moore:2,1",
      "rmat:0",    "rmat:41",     "rmat:8,0",     "rmat:8,4,5,6",    "rmat:",        "RMAT:8",
      "lap2d:99999999999999999999,2", "er:10,nan", "rotate:4,4,inf"};
  for (const auto& s : bad) {
    SCOPED_TRACE("spec '" + s + "'");
    expect_input_error([&] { gen::from_spec(MPI_COMM_WORLD, s); }, "valid forms");
  }
}

// Sizes no machine holds: the bytes and what is available, on every rank, before any entry
// is allocated (not std::bad_alloc as the whole message, nor the OOM killer).
TEST(GeneratorErrors, OversizedMatricesAreRefusedWithTheirBytes) {
  expect_input_error([] { gen::from_spec(MPI_COMM_WORLD, "lap2d:1000000,1000000"); },
                     "a 1000000 x 1000000 x 1 grid's 5-point stencil matrix: ");
  expect_input_error([] { gen::from_spec(MPI_COMM_WORLD, "lap2d:1000000,1000000"); }, " are available");
  expect_input_error([] { gen::erdos_renyi(MPI_COMM_WORLD, int64_t{1} << 32, 0.5, 1); }, "erdos_renyi: 4294967296 vertices");
  expect_input_error([] { gen::moore(MPI_COMM_WORLD, 3, 40, 100000); }, "moore: 3-d grid of side 100000, radius 40");
  expect_input_error([&] { gen::rmat(MPI_COMM_WORLD, rmat_params(40, 16, 1)); }, "rmat: scale 40, edge factor 16");
}

TEST(GeneratorErrors, BadArgumentsThrowOnEveryRank) {
  expect_input_error([] { gen::laplacian_2d(MPI_COMM_WORLD, 4, 4, 7); }, "5 or 9");
  expect_input_error([] { gen::laplacian_2d(MPI_COMM_WORLD, 0, 4, 5); }, "positive");
  expect_input_error([] { gen::laplacian_3d(MPI_COMM_WORLD, 4, 4, 4, 9); }, "7 or 27");
  expect_input_error([] { gen::laplacian_3d(MPI_COMM_WORLD, int64_t{1} << 30, int64_t{1} << 30, 8, 7); }, "2^62");
  expect_input_error([] { gen::erdos_renyi(MPI_COMM_WORLD, 10, 2.0, 1); }, "density");
  expect_input_error([] { gen::erdos_renyi(MPI_COMM_WORLD, 10, std::nan(""), 1); }, "density");
  expect_input_error([] { gen::erdos_renyi(MPI_COMM_WORLD, -1, 0.5, 1); }, "negative");
  expect_input_error([] { gen::moore(MPI_COMM_WORLD, 0, 1, 4); }, "dims");
  expect_input_error([] { gen::moore(MPI_COMM_WORLD, 7, 1, 4); }, "dims");
  expect_input_error([] { gen::moore(MPI_COMM_WORLD, 2, 0, 4); }, "radius");
  expect_input_error([] { gen::moore(MPI_COMM_WORLD, 2, 1, 0); }, "side");
  auto p = rmat_params(8, 4, 1);
  p.d = 0.15;  // sums to 1.1
  expect_input_error([&] { gen::rmat(MPI_COMM_WORLD, p); }, "1.1");
  p = rmat_params(8, 4, 1);
  p.a = 0.67, p.d = -0.05;
  expect_input_error([&] { gen::rmat(MPI_COMM_WORLD, p); }, "non-negative");
  p = rmat_params(0, 4, 1);
  expect_input_error([&] { gen::rmat(MPI_COMM_WORLD, p); }, "scale");
  p = rmat_params(41, 4, 1);
  expect_input_error([&] { gen::rmat(MPI_COMM_WORLD, p); }, "scale");
  p = rmat_params(8, 0, 1);
  expect_input_error([&] { gen::rmat(MPI_COMM_WORLD, p); }, "edge_factor");
}

TEST(GeneratorErrors, OneBadRankMakesEveryRankThrow) {
  // Only the last rank passes a bad argument; nobody may hang, everybody throws.
  const bool last = world_rank() == world_size() - 1;
  expect_input_error([&] { gen::laplacian_2d(MPI_COMM_WORLD, 4, 4, last ? 6 : 5); }, "5 or 9");
  expect_input_error([&] { gen::from_spec(MPI_COMM_WORLD, last ? "lap2d:4" : "lap2d:4,4"); }, "valid forms");
  // Valid but different arguments on different ranks are caught too.
  if (world_size() > 1) {
    expect_input_error([&] { gen::erdos_renyi(MPI_COMM_WORLD, 100, 0.1, last ? 2 : 1); }, "differ across ranks");
  }
  // And the communicator still works afterwards.
  EXPECT_EQ(gen::laplacian_2d(MPI_COMM_WORLD, 4, 4, 5).global_nnz(), 16 * 5 - 16);
}

}  // namespace
