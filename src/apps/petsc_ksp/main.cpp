// sparsecomm_petsc_ksp: a PETSc program that solves a SuiteSparse system or the rotated
// anisotropic diffusion problem with KSP, switching MatMult to sparsecomm with ONE call.
// With -bench N it also times N MatMults with PETSc's default star forest (-sf_type basic),
// PETSc's neighborhood star forest (-sf_type neighbor) and every sparsecomm backend, all in
// the same run, and prints the ratios.
//
//   mpirun -np 4 sparsecomm_petsc_ksp -gen rotate:256,256 -ksp_type cg -use_sparsecomm -sparsecomm_backend aggregated_dedup
//   mpirun -np 8 sparsecomm_petsc_ksp -matrix HB/bcsstk13 -ksp_type gmres -bench 500 -sparsecomm_regions ppn:4
#include <petscksp.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "comm/plan.hpp"
#include "matrix/data_path.hpp"
#include "matrix/generators.hpp"
#include "matrix/mtx_reader.hpp"
#include "matrix/petsc_interop.hpp"

namespace {

using namespace sparsecomm;

// Median over batches of the max over ranks of the time per MatMult.
double time_matmult(Mat A, Vec x, Vec y, int reps) {
  MPI_Comm comm;
  PetscObjectGetComm((PetscObject)A, &comm);
  const int batches = std::max(1, std::min(reps, 10)), per = std::max(1, reps / batches);
  for (int i = 0; i < std::min(per, 10); ++i) MatMult(A, x, y);
  std::vector<double> t;
  for (int b = 0; b < batches; ++b) {
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < per; ++i) MatMult(A, x, y);
    double local = (MPI_Wtime() - t0) / per, mx = 0;
    MPI_Allreduce(&local, &mx, 1, MPI_DOUBLE, MPI_MAX, comm);
    t.push_back(mx);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

PetscErrorCode run() {
  PetscFunctionBeginUser;
  char buf[256] = "";
  PetscBool has_matrix = PETSC_FALSE, use = PETSC_FALSE;
  PetscInt bench = 0;
  std::string gen_spec = "rotate:128,128";
  PetscCall(PetscOptionsGetString(nullptr, nullptr, "-matrix", buf, sizeof buf, &has_matrix));
  std::string matrix = buf;
  PetscBool has_gen = PETSC_FALSE;
  PetscCall(PetscOptionsGetString(nullptr, nullptr, "-gen", buf, sizeof buf, &has_gen));
  if (has_gen) gen_spec = buf;
  PetscCall(PetscOptionsGetBool(nullptr, nullptr, "-use_sparsecomm", &use, nullptr));
  PetscCall(PetscOptionsGetInt(nullptr, nullptr, "-bench", &bench, nullptr));

  // Build the matrix (our reader / generator), then hand it to PETSc as MATMPIAIJ.
  DistCsr<double> a;
  std::string label;
  try {
    if (has_matrix) a = read_matrix_market(PETSC_COMM_WORLD, find_matrix(matrix)), label = matrix;
    else a = gen::from_spec(PETSC_COMM_WORLD, gen_spec), label = gen_spec;
  } catch (const std::exception& e) {
    SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_USER, "%s", e.what());
  }
  Mat A;
  PetscCall(petsc::create_mpiaij(a, &A));
  PetscCall(PetscObjectSetName((PetscObject)A, label.c_str()));

  // The one line that switches MatMult (and KSP through it) to sparsecomm:
  if (use) PetscCall(petsc::attach(A));

  Vec x, b;
  PetscCall(MatCreateVecs(A, &x, &b));
  PetscCall(VecSet(x, 1.0));
  PetscCall(MatMult(A, x, b));  // right-hand side of the exact solution 1
  PetscCall(VecSet(x, 0.0));
  KSP ksp;
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetTolerances(ksp, 1e-8, PETSC_DEFAULT, PETSC_DEFAULT, 10000));
  PetscCall(KSPSetFromOptions(ksp));
  const double t0 = MPI_Wtime();
  PetscCall(KSPSolve(ksp, b, x));
  const double tsolve = MPI_Wtime() - t0;
  PetscInt its;
  KSPConvergedReason reason;
  PetscCall(KSPGetIterationNumber(ksp, &its));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscBool on;
  const char* backend;
  PetscCall(petsc::attached(A, &on, &backend));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s: %lld x %lld, %lld nonzeros; MatMult by %s; KSP %s in %d iterations, %.3f s\n",
                        label.c_str(), (long long)a.global_rows(), (long long)a.global_cols(),
                        (long long)a.global_nnz(), on ? (std::string("sparsecomm/") + backend).c_str() : "PETSc",
                        KSPConvergedReasons[reason], (int)its, tsolve));
  PetscCall(KSPDestroy(&ksp));

  if (bench > 0) {
    // PETSc's two star-forest types: the scatter is set up at assembly, so each gets its
    // own copy of the matrix assembled under that -sf_type.
    struct R {
      std::string name;
      double t;
    };
    std::vector<R> rs;
    Vec y;
    PetscCall(VecDuplicate(b, &y));
    PetscCall(VecSet(x, 1.0));
    for (const char* sf : {"basic", "neighbor"}) {
      PetscCall(PetscOptionsSetValue(nullptr, "-sf_type", sf));
      Mat B;
      PetscCall(petsc::create_mpiaij(a, &B));
      rs.push_back({std::string("petsc -sf_type ") + sf, time_matmult(B, x, y, (int)bench)});
      PetscCall(MatDestroy(&B));
    }
    PetscCall(PetscOptionsClearValue(nullptr, "-sf_type"));
    for (const auto& name : backend_names()) {
      Mat B;
      PetscCall(petsc::create_mpiaij(a, &B));
      PetscCall(PetscOptionsSetValue(nullptr, "-sparsecomm_backend", name.c_str()));
      PetscCall(petsc::attach(B));
      rs.push_back({"sparsecomm " + name, time_matmult(B, x, y, (int)bench)});
      PetscCall(MatDestroy(&B));
    }
    double best_petsc = std::min(rs[0].t, rs[1].t), best_ours = 1e300;
    std::string best_name;
    for (size_t i = 2; i < rs.size(); ++i)
      if (rs[i].t < best_ours) best_ours = rs[i].t, best_name = rs[i].name;
    int np;
    MPI_Comm_size(PETSC_COMM_WORLD, &np);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "\nMatMult on %d ranks, %d repetitions (median of batches, max over ranks)\n",
                          np, (int)bench));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-30s %12s %18s\n", "scatter", "us/MatMult", "vs best PETSc"));
    for (const auto& r : rs)
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-30s %12.1f %18.3f\n", r.name.c_str(), r.t * 1e6, r.t / best_petsc));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "best sparsecomm (%s) / best PETSc = %.3f\n", best_name.c_str(),
                          best_ours / best_petsc));
    PetscCall(VecDestroy(&y));
  }
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(reason > 0 ? 0 : 1);
}

}  // namespace

int main(int argc, char** argv) {
  PetscCall(PetscInitialize(&argc, &argv, nullptr,
                            "sparsecomm_petsc_ksp: KSP with MatMult through sparsecomm.\n"
                            "  -matrix NAME | -gen SPEC, -use_sparsecomm, -sparsecomm_backend NAME, -bench N\n"));
  PetscErrorCode ierr = run();
  PetscCall(PetscFinalize());
  return ierr ? 1 : 0;
}
