// The peers sparsecomm is compared with (variant.hpp): PETSc's MatMult with its own
// scatters and Hypre's matvec, each on its own copy of the same matrix with the same rows.
#include <cmath>
#include <string>

#include "compare/variant.hpp"
#include "sparsecomm/core/error.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#ifdef SPARSECOMM_COMPARE_PETSC
#include <petscmat.h>

#include "sparsecomm/interop/petsc/petsc_interop.hpp"
#endif
#ifdef SPARSECOMM_COMPARE_HYPRE
#include <HYPRE.h>
#include <HYPRE_IJ_mv.h>
#include <_hypre_parcsr_mv.h>
#endif

namespace sparsecomm::apps::comparison {

#if defined(SPARSECOMM_COMPARE_PETSC) || defined(SPARSECOMM_COMPARE_HYPRE)
namespace {

// A peer library's calls return an error code (0: success); a failed one is an Error that
// names the library and the call.
struct PeerCheck {
  const char* library;
  void operator()(long long code, const char* what) const {
    if (code) throw Error(std::string(library) + ": " + what + " failed (error " + std::to_string(code) + ")");
  }
};

}  // namespace
#endif

#ifdef SPARSECOMM_COMPARE_PETSC
namespace {

constexpr PeerCheck petsc_ok{"PETSc"};

class PetscVariant : public Variant {
 public:
  // sf: PETSc's scatter type; ours: a sparsecomm backend that replaces the scatter in
  // MatMult through the adapter (petsc::attach), "" for PETSc's own.
  PetscVariant(const DistCsr<double>& a, const std::string& sf, const std::string& ours) : sf_(sf), ours_(ours) {
    // The scatter is set up at assembly: the copy is assembled under this -sf_type.
    petsc_ok(PetscOptionsSetValue(nullptr, "-sf_type", sf.c_str()), "PetscOptionsSetValue");
    petsc_ok(petsc::create_mpiaij(a, &A_), "create_mpiaij");
    petsc_ok(PetscOptionsClearValue(nullptr, "-sf_type"), "PetscOptionsClearValue");
    if (!ours.empty()) {
      petsc_ok(PetscOptionsSetValue(nullptr, "-sparsecomm_backend", ours.c_str()), "PetscOptionsSetValue");
      petsc_ok(petsc::attach(A_), "sparsecomm::petsc::attach");
      petsc_ok(PetscOptionsClearValue(nullptr, "-sparsecomm_backend"), "PetscOptionsClearValue");
      PetscBool on = PETSC_FALSE;
      const char* backend = "";
      petsc_ok(petsc::attached(A_, &on, &backend), "sparsecomm::petsc::attached");
      chosen_ = on ? backend : "(PETSc's own: not MATMPIAIJ)";
    }
    petsc_ok(MatCreateVecs(A_, &x_, &y_), "MatCreateVecs");
    PetscInt lo = 0, hi = 0;
    petsc_ok(VecGetOwnershipRange(x_, &lo, &hi), "VecGetOwnershipRange");
    PetscScalar* px = nullptr;
    petsc_ok(VecGetArray(x_, &px), "VecGetArray");
    for (PetscInt i = lo; i < hi; ++i) px[i - lo] = std::sin(static_cast<double>(i));
    petsc_ok(VecRestoreArray(x_, &px), "VecRestoreArray");
  }
  ~PetscVariant() override {
    VecDestroy(&x_);
    VecDestroy(&y_);
    MatDestroy(&A_);
  }
  std::string name() const override {
    if (ours_.empty()) return "petsc -sf_type " + sf_;
    return "petsc MatMult, sparsecomm " + ours_ + (chosen_ == ours_ ? "" : " -> " + chosen_) + " exchange";
  }
  void apply() override { petsc_ok(MatMult(A_, x_, y_), "MatMult"); }
  std::vector<double> local_y() override {
    PetscInt n = 0;
    const PetscScalar* py = nullptr;
    petsc_ok(VecGetLocalSize(y_, &n), "VecGetLocalSize");
    petsc_ok(VecGetArrayRead(y_, &py), "VecGetArrayRead");
    std::vector<double> y(py, py + n);
    petsc_ok(VecRestoreArrayRead(y_, &py), "VecRestoreArrayRead");
    return y;
  }

 private:
  std::string sf_, ours_, chosen_;
  Mat A_ = nullptr;
  Vec x_ = nullptr, y_ = nullptr;
};

}  // namespace

bool have_petsc() { return true; }
std::unique_ptr<Variant> petsc_variant(const DistCsr<double>& a, const std::string& sf, const std::string& ours) {
  return std::make_unique<PetscVariant>(a, sf, ours);
}
#else
bool have_petsc() { return false; }
std::unique_ptr<Variant> petsc_variant(const DistCsr<double>&, const std::string&, const std::string&) {
  throw NotImplementedError("compare: this build has no PETSc (apt-get install petsc-dev, then rebuild)");
}
#endif

#ifdef SPARSECOMM_COMPARE_HYPRE
namespace {

constexpr PeerCheck hypre_ok{"Hypre"};

class HypreVariant : public Variant {
 public:
  explicit HypreVariant(const DistCsr<double>& a) {
    MPI_Comm comm = a.comm();
    const HYPRE_BigInt r0 = a.row_begin(), r1 = a.row_begin() + a.local_rows() - 1;
    const HYPRE_BigInt c0 = a.col_begin(), c1 = a.col_begin() + a.local_cols() - 1;
    hypre_ok(HYPRE_IJMatrixCreate(comm, r0, r1, c0, c1, &ij_), "HYPRE_IJMatrixCreate");
    hypre_ok(HYPRE_IJMatrixSetObjectType(ij_, HYPRE_PARCSR), "HYPRE_IJMatrixSetObjectType");
    hypre_ok(HYPRE_IJMatrixInitialize(ij_), "HYPRE_IJMatrixInitialize");
    // Row by row with global column ids (the diagonal block's, then the ghosts').
    std::vector<HYPRE_BigInt> cols;
    std::vector<HYPRE_Complex> vals;
    for (int32_t i = 0; i < a.local_rows(); ++i) {
      cols.clear(), vals.clear();
      for (int64_t k = a.diag().row_ptr[i]; k < a.diag().row_ptr[i + 1]; ++k)
        cols.push_back(a.col_begin() + a.diag().col[k]), vals.push_back(a.diag().val[k]);
      for (int64_t k = a.offd().row_ptr[i]; k < a.offd().row_ptr[i + 1]; ++k)
        cols.push_back(a.ghost_ids()[a.offd().col[k]]), vals.push_back(a.offd().val[k]);
      HYPRE_Int n = static_cast<HYPRE_Int>(cols.size());
      HYPRE_BigInt row = r0 + i;
      if (n > 0) hypre_ok(HYPRE_IJMatrixSetValues(ij_, 1, &n, &row, cols.data(), vals.data()), "HYPRE_IJMatrixSetValues");
    }
    hypre_ok(HYPRE_IJMatrixAssemble(ij_), "HYPRE_IJMatrixAssemble");
    void* obj = nullptr;
    hypre_ok(HYPRE_IJMatrixGetObject(ij_, &obj), "HYPRE_IJMatrixGetObject");
    A_ = static_cast<hypre_ParCSRMatrix*>(obj);
    x_ = hypre_ParVectorCreate(comm, hypre_ParCSRMatrixGlobalNumCols(A_), hypre_ParCSRMatrixColStarts(A_));
    hypre_ParVectorInitialize(x_);
    y_ = hypre_ParVectorCreate(comm, hypre_ParCSRMatrixGlobalNumRows(A_), hypre_ParCSRMatrixRowStarts(A_));
    hypre_ParVectorInitialize(y_);
    double* xd = hypre_VectorData(hypre_ParVectorLocalVector(x_));
    for (int32_t i = 0; i < a.local_cols(); ++i) xd[i] = std::sin(static_cast<double>(a.col_begin() + i));
    nrows_ = a.local_rows();
  }
  ~HypreVariant() override {
    hypre_ParVectorDestroy(x_);
    hypre_ParVectorDestroy(y_);
    HYPRE_IJMatrixDestroy(ij_);
  }
  std::string name() const override { return "hypre matvec"; }
  void apply() override { hypre_ParCSRMatrixMatvec(1.0, A_, x_, 0.0, y_); }
  std::vector<double> local_y() override {
    const double* yd = hypre_VectorData(hypre_ParVectorLocalVector(y_));
    return std::vector<double>(yd, yd + nrows_);
  }
  double messages() override {
    if (!hypre_ParCSRMatrixCommPkg(A_)) return -1;
    return static_cast<double>(
        allreduce_max(hypre_ParCSRMatrixComm(A_), static_cast<int64_t>(hypre_ParCSRCommPkgNumSends(hypre_ParCSRMatrixCommPkg(A_)))));
  }

 private:
  HYPRE_IJMatrix ij_ = nullptr;
  hypre_ParCSRMatrix* A_ = nullptr;
  hypre_ParVector *x_ = nullptr, *y_ = nullptr;
  int32_t nrows_ = 0;
};

}  // namespace

bool have_hypre() { return true; }
std::unique_ptr<Variant> hypre_variant(const DistCsr<double>& a) { return std::make_unique<HypreVariant>(a); }
#else
bool have_hypre() { return false; }
std::unique_ptr<Variant> hypre_variant(const DistCsr<double>&) {
  throw NotImplementedError("compare: this build has no Hypre (apt-get install libhypre-dev, then rebuild)");
}
#endif

Peers::Peers() {
#ifdef SPARSECOMM_COMPARE_PETSC
  if (PetscInitializeNoArguments()) throw Error("PETSc: PetscInitializeNoArguments failed");
#endif
#ifdef SPARSECOMM_COMPARE_HYPRE
  HYPRE_Init();
#endif
}

Peers::~Peers() {
#ifdef SPARSECOMM_COMPARE_HYPRE
  HYPRE_Finalize();
#endif
#ifdef SPARSECOMM_COMPARE_PETSC
  PetscFinalize();
#endif
}

}  // namespace sparsecomm::apps::comparison
