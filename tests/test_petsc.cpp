// PETSc adapter: MatMult, MatMultAdd, MatMultTranspose(Add) through sparsecomm equal PETSc's
// own on generated and SuiteSparse matrices with every backend; KSP converges in the same
// number of iterations; the ghost helper matches VecScatter (duplicates, empty ranks);
// a non-MPIAIJ matrix and a bad backend name are clear errors; structure changes rebuild.
#include <gtest/gtest.h>
#include <petscksp.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "sparsecomm/kernels/ghost.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/matrix/generators.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"
#include "sparsecomm/interop/petsc/petsc_interop.hpp"
#include "test_util.hpp"
#include "core/compare.hpp"

using namespace sparsecomm;

namespace {

class PetscEnv : public ::testing::Environment {
 public:
  void SetUp() override { PetscInitializeNoArguments(); }
  void TearDown() override { PetscFinalize(); }
};
const auto* env = ::testing::AddGlobalTestEnvironment(new PetscEnv);

// A MATMPIAIJ copy of a DistCsr (same row partition; columns partitioned like the rows
// for square matrices, PETSc's default layout otherwise).
Mat to_petsc(const DistCsr<double>& a) {
  Mat A;
  MatCreate(PETSC_COMM_WORLD, &A);
  MatSetSizes(A, a.local_rows(), a.local_cols(), a.global_rows(), a.global_cols());
  MatSetType(A, MATMPIAIJ);
  MatMPIAIJSetPreallocation(A, 64, nullptr, 64, nullptr);
  MatSetOption(A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE);
  for (const auto& t : a.local_triplets()) {
    PetscInt i = static_cast<PetscInt>(t.row), j = static_cast<PetscInt>(t.col);
    MatSetValue(A, i, j, t.val, INSERT_VALUES);
  }
  MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY);
  MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY);
  return A;
}

// max|a - b| / max|b| over the ranks (core/compare.hpp): +inf where a and b differ in a
// non-finite entry. (VecNorm's NORM_INFINITY would skip a NaN: |NaN| > max is false.)
double max_diff(Vec a, Vec b) {
  PetscInt n = 0;
  VecGetLocalSize(a, &n);
  const PetscScalar *pa = nullptr, *pb = nullptr;
  VecGetArrayRead(a, &pa);
  VecGetArrayRead(b, &pb);
  const Comparison c = compare(pa, pb, n);
  VecRestoreArrayRead(a, &pa);
  VecRestoreArrayRead(b, &pb);
  return c.allreduce(PetscObjectComm(reinterpret_cast<PetscObject>(a))).rel_err();
}

void fill(Vec v, double phase) {
  PetscInt lo, hi;
  VecGetOwnershipRange(v, &lo, &hi);
  for (PetscInt i = lo; i < hi; ++i) VecSetValue(v, i, std::sin(0.3 * i + phase), INSERT_VALUES);
  VecAssemblyBegin(v);
  VecAssemblyEnd(v);
}

// Assembles `A` after MatSetValue calls and makes the vectors of one product: x (input,
// filled), y and r (outputs: sparsecomm's and PETSc's).
void assemble_with_vectors(Mat A, Vec* x, Vec* y, Vec* r) {
  MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY);
  MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY);
  MatCreateVecs(A, x, y);
  VecDuplicate(*y, r);
  fill(*x, 0.3);
}

// Every product with every backend equals PETSc's own.
void check_products(const DistCsr<double>& a, const std::string& label) {
  Mat A = to_petsc(a);
  Vec x, y, w, xt, yt, wt, r0, r1, r2, r3, o;
  MatCreateVecs(A, &x, &y);
  MatCreateVecs(A, &yt, &xt);  // xt: row layout (input of A^T), yt: column layout
  VecDuplicate(y, &w), VecDuplicate(y, &r0), VecDuplicate(y, &r1), VecDuplicate(yt, &wt), VecDuplicate(yt, &r2);
  VecDuplicate(yt, &r3), VecDuplicate(y, &o);
  fill(x, 0.1), fill(w, 0.7), fill(xt, 0.4), fill(wt, 1.1);
  MatMult(A, x, r0);
  MatMultAdd(A, x, w, r1);
  MatMultTranspose(A, xt, r2);
  MatMultTransposeAdd(A, xt, wt, r3);
  for (const auto& backend : backend_names()) {
    for (const char* persistent : {"false", "true"}) {  // fresh or persistent requests
      const std::string what = label + " backend " + backend + " persistent " + persistent;
      PetscOptionsSetValue(nullptr, "-sparsecomm_backend", backend.c_str());
      PetscOptionsSetValue(nullptr, "-sparsecomm_regions", "ppn:2");
      PetscOptionsSetValue(nullptr, "-sparsecomm_persistent", persistent);
      ASSERT_EQ(petsc::attach(A), 0) << what;
      PetscBool on;
      const char* name;
      petsc::attached(A, &on, &name);
      if (comm_size(MPI_COMM_WORLD) == 1) {  // one rank: nothing travels, attach steps aside
        EXPECT_FALSE(on);
      } else {
        EXPECT_TRUE(on);
        EXPECT_EQ(std::string(name), backend);
      }
      for (int rep = 0; rep < 2; ++rep) {
        MatMult(A, x, o);
        EXPECT_LT(max_diff(o, r0), 1e-14) << what << " MatMult";
        MatMultAdd(A, x, w, o);
        EXPECT_LT(max_diff(o, r1), 1e-14) << what << " MatMultAdd";
        VecCopy(w, o);
        MatMultAdd(A, x, o, o);  // in place
        EXPECT_LT(max_diff(o, r1), 1e-14) << what << " MatMultAdd in place";
      }
      Vec ot;
      VecDuplicate(yt, &ot);
      MatMultTranspose(A, xt, ot);
      EXPECT_LT(max_diff(ot, r2), 1e-13) << what << " MatMultTranspose";
      MatMultTransposeAdd(A, xt, wt, ot);
      EXPECT_LT(max_diff(ot, r3), 1e-13) << what << " MatMultTransposeAdd";
      VecDestroy(&ot);
      ASSERT_EQ(petsc::detach(A), 0);
      petsc::attached(A, &on, nullptr);
      EXPECT_FALSE(on);
      MatMult(A, x, o);
      EXPECT_LT(max_diff(o, r0), 1e-14) << what << " after detach";
    }
  }
  PetscOptionsClearValue(nullptr, "-sparsecomm_backend");
  PetscOptionsClearValue(nullptr, "-sparsecomm_regions");
  PetscOptionsClearValue(nullptr, "-sparsecomm_persistent");
  for (Vec* v : {&x, &y, &w, &xt, &yt, &wt, &r0, &r1, &r2, &r3, &o}) VecDestroy(v);
  MatDestroy(&A);
}

TEST(Petsc, ProductsOnGeneratedMatrices) {
  check_products(gen::from_spec(MPI_COMM_WORLD, "rotate:23,19"), "rotate");
  check_products(gen::from_spec(MPI_COMM_WORLD, "er:150,0.05,2"), "er");
  // Rectangular: 11 x 31.
  const int p = test::size(), me = test::rank();
  auto rows = RowPartition::balanced(11, p), cols = RowPartition::balanced(31, p);
  std::vector<Triplet<double>> t;
  for (int64_t i = rows.begin(me); i < rows.end(me); ++i)
    for (int64_t j = i % 3; j < 31; j += 3) t.push_back({i, j, 1.0 + 0.1 * j});
  check_products(DistCsr<double>::from_triplets(MPI_COMM_WORLD, rows, cols, t), "rectangular");
}

class PetscSuiteSparse : public ::testing::TestWithParam<std::string> {};
TEST_P(PetscSuiteSparse, Products) {
  SPC_REQUIRE_MATRIX(path, GetParam());
  check_products(read_matrix_market(MPI_COMM_WORLD, path), GetParam());
}
INSTANTIATE_TEST_SUITE_P(Real, PetscSuiteSparse, ::testing::Values("HB/bcsstk13", "HB/west0132", "Pajek/Journals"),
                         test::StringParamName());

TEST(Petsc, KspSameIterations) {
  Mat A = to_petsc(gen::from_spec(MPI_COMM_WORLD, "lap2d:40,40"));
  Vec b, x;
  MatCreateVecs(A, &x, &b);
  fill(b, 0.2);
  auto solve = [&]() {
    KSP ksp;
    KSPCreate(PETSC_COMM_WORLD, &ksp);
    KSPSetOperators(ksp, A, A);
    KSPSetType(ksp, KSPCG);
    PC pc;
    KSPGetPC(ksp, &pc);
    PCSetType(pc, PCJACOBI);
    KSPSetTolerances(ksp, 1e-10, PETSC_DEFAULT, PETSC_DEFAULT, 2000);
    VecSet(x, 0.0);
    KSPSolve(ksp, b, x);
    PetscInt its;
    KSPGetIterationNumber(ksp, &its);
    KSPConvergedReason reason;
    KSPGetConvergedReason(ksp, &reason);
    EXPECT_GT(reason, 0);
    KSPDestroy(&ksp);
    return its;
  };
  const PetscInt its_petsc = solve();
  for (const char* backend : {"p2p", "aggregated_dedup", "aggregated_2step", "combined"}) {
    PetscOptionsSetValue(nullptr, "-sparsecomm_backend", backend);
    ASSERT_EQ(petsc::attach(A), 0);
    EXPECT_EQ(solve(), its_petsc) << backend;
    petsc::detach(A);
  }
  PetscOptionsClearValue(nullptr, "-sparsecomm_backend");
  VecDestroy(&b), VecDestroy(&x);
  MatDestroy(&A);
}

TEST(Petsc, StructureChangeRebuilds) {
  Mat A = to_petsc(gen::from_spec(MPI_COMM_WORLD, "lap2d:12,12"));
  ASSERT_EQ(petsc::attach(A), 0);
  // A new far-away nonzero in every rank's first row: new ghost columns.
  PetscInt lo, hi, M;
  MatGetOwnershipRange(A, &lo, &hi);
  MatGetSize(A, &M, nullptr);
  if (hi > lo) MatSetValue(A, lo, (lo + M / 2) % M, 0.5, ADD_VALUES);
  Vec x, y, r;
  assemble_with_vectors(A, &x, &y, &r);
  MatMult(A, x, y);  // sparsecomm, rebuilt for the new structure
  petsc::detach(A);
  MatMult(A, x, r);  // PETSc
  EXPECT_LT(max_diff(y, r), 1e-14);
  VecDestroy(&x), VecDestroy(&y), VecDestroy(&r);
  MatDestroy(&A);
}

// A matrix attach does not handle (dense; MATSEQAIJ on one rank) keeps PETSc's operations:
// attach returns success, attached() says no, and MatMult gives PETSc's product.
TEST(Petsc, AttachStepsAsideOnOtherTypes) {
  Mat D;
  MatCreateDense(PETSC_COMM_WORLD, PETSC_DECIDE, PETSC_DECIDE, 8, 8, nullptr, &D);
  PetscInt lo = 0, hi = 0;
  MatGetOwnershipRange(D, &lo, &hi);
  for (PetscInt i = lo; i < hi; ++i)
    for (PetscInt j = 0; j < 8; ++j) MatSetValue(D, i, j, 1.0 + i + 0.5 * j, INSERT_VALUES);
  Vec x, y, r;
  assemble_with_vectors(D, &x, &y, &r);
  MatMult(D, x, r);
  EXPECT_EQ(petsc::attach(D), 0);
  PetscBool on = PETSC_TRUE;
  const char* backend = nullptr;
  petsc::attached(D, &on, &backend);
  EXPECT_FALSE(on);
  MatMult(D, x, y);
  EXPECT_EQ(max_diff(y, r), 0.0);
  VecDestroy(&x), VecDestroy(&y), VecDestroy(&r);
  MatDestroy(&D);
}

TEST(Petsc, ClearErrors) {
  PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
  Mat A = to_petsc(gen::from_spec(MPI_COMM_WORLD, "lap2d:8,8"));
  PetscOptionsSetValue(nullptr, "-sparsecomm_backend", "carrier_pigeon");
  EXPECT_NE(petsc::attach(A), 0);
  PetscOptionsSetValue(nullptr, "-sparsecomm_backend", "p2p");
  PetscOptionsSetValue(nullptr, "-sparsecomm_sdde", "smoke");
  EXPECT_NE(petsc::attach(A), 0);
  PetscOptionsClearValue(nullptr, "-sparsecomm_backend");
  PetscOptionsClearValue(nullptr, "-sparsecomm_sdde");
  petsc::detach(A);
  MatDestroy(&A);
  PetscPopErrorHandler();
}

// The ghost helper against PETSc's VecScatter: random index lists with duplicates, own
// indices, and ranks that want nothing.
TEST(Petsc, GhostHelperMatchesVecScatter) {
  const int me = test::rank(), p = test::size();
  const PetscInt nloc = 5 + (me % 3) * 4;
  Vec x;
  VecCreateMPI(PETSC_COMM_WORLD, nloc, PETSC_DETERMINE, &x);
  fill(x, 0.5);
  PetscInt N;
  VecGetSize(x, &N);
  std::mt19937 rng(17 + me);
  std::vector<int64_t> want;
  if (me % 4 != 1)  // some ranks want nothing
    for (int k = 0; k < 25; ++k) want.push_back(static_cast<int64_t>(rng() % static_cast<unsigned>(N)));
  if (!want.empty()) want.push_back(want.front());  // a duplicate
  std::vector<PetscInt> idx(want.begin(), want.end());
  IS is;
  ISCreateGeneral(PETSC_COMM_SELF, static_cast<PetscInt>(idx.size()), idx.data(), PETSC_COPY_VALUES, &is);
  Vec g;
  VecCreateSeq(PETSC_COMM_SELF, static_cast<PetscInt>(idx.size()), &g);
  VecScatter sc;
  VecScatterCreate(x, is, g, nullptr, &sc);
  VecScatterBegin(sc, x, g, INSERT_VALUES, SCATTER_FORWARD);
  VecScatterEnd(sc, x, g, INSERT_VALUES, SCATTER_FORWARD);
  for (const auto& backend : backend_names()) {
    GhostScatter gs(MPI_COMM_WORLD, nloc, want, backend, "nbx", "ppn:2");
    const PetscScalar* xa;
    VecGetArrayRead(x, &xa);
    std::vector<double> mine(want.size() + 1);
    gs.forward(xa, mine.data());
    VecRestoreArrayRead(x, &xa);
    const PetscScalar* ga;
    VecGetArrayRead(g, &ga);
    for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(mine[k], ga[k]) << backend << " index " << want[k];
    VecRestoreArrayRead(g, &ga);
    // Reverse with ADD: contributions k + 1 (PETSc reference through SCATTER_REVERSE).
    Vec xr, xp;
    VecDuplicate(x, &xr), VecDuplicate(x, &xp);
    VecSet(xr, 1.0), VecSet(xp, 1.0);
    Vec c;
    VecDuplicate(g, &c);
    std::vector<double> contrib(want.size() + 1);
    for (size_t k = 0; k < want.size(); ++k) {
      contrib[k] = 1.0 + static_cast<double>(k) + 100.0 * me;
      VecSetValue(c, static_cast<PetscInt>(k), contrib[k], INSERT_VALUES);
    }
    VecAssemblyBegin(c), VecAssemblyEnd(c);
    VecScatterBegin(sc, c, xp, ADD_VALUES, SCATTER_REVERSE);
    VecScatterEnd(sc, c, xp, ADD_VALUES, SCATTER_REVERSE);
    PetscScalar* xra;
    VecGetArray(xr, &xra);
    gs.reverse_add(contrib.data(), xra);
    VecRestoreArray(xr, &xra);
    EXPECT_LT(max_diff(xr, xp), 1e-15) << backend << " reverse add";
    VecDestroy(&xr), VecDestroy(&xp), VecDestroy(&c);
  }
  (void)p;
  VecScatterDestroy(&sc);
  VecDestroy(&g), VecDestroy(&x);
  ISDestroy(&is);
}

}  // namespace
