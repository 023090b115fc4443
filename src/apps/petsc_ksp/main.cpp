// sparsecomm_petsc_ksp: a PETSc program that solves a SuiteSparse system or the rotated
// anisotropic diffusion problem with KSP, switching MatMult to sparsecomm with ONE call.
// With -bench N it also times N MatMults with PETSc's default star forest (-sf_type basic),
// PETSc's neighborhood star forest (-sf_type neighbor) and every sparsecomm backend, all in
// the same run and interleaved (-bench_rounds R, default 5), and prints the ratios;
// -bench_only skips the solve, -bench_json FILE appends JSON lines (-bench_label names the
// setting). experiments/petsc/run.sh runs it over the shared matrices, node and cluster.
//
//   mpirun -np 4 sparsecomm_petsc_ksp -gen rotate:256,256 -ksp_type cg -use_sparsecomm -sparsecomm_backend aggregated_dedup
//   mpirun -np 8 sparsecomm_petsc_ksp -matrix HB/bcsstk13 -ksp_type gmres -bench 500 -sparsecomm_regions ppn:4
#include <petscksp.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "sparsecomm/comm/plan/plan.hpp"
#include "common/cli.hpp"
#include "common/provenance.hpp"
#include "common/timing.hpp"
#include "core/compare.hpp"
#include "sparsecomm/matrix/data_path.hpp"
#include "sparsecomm/matrix/generators.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"
#include "sparsecomm/interop/petsc/petsc_interop.hpp"
#include "sparsecomm/interop/petsc/petscsf_sparsecomm.h"

namespace {

using namespace sparsecomm;

// Time per MatMult of one batch of `reps` products (after 3 warm-up ones), max over ranks.
double time_matmult(Mat A, Vec x, Vec y, int reps) {
  MPI_Comm comm;
  PetscObjectGetComm((PetscObject)A, &comm);
  for (int i = 0; i < 3; ++i) MatMult(A, x, y);
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < reps; ++i) MatMult(A, x, y);
  double local = (MPI_Wtime() - t0) / reps, mx = 0;
  MPI_Allreduce(&local, &mx, 1, MPI_DOUBLE, MPI_MAX, comm);
  return mx;
}

struct Settings {
  PetscBool has_matrix = PETSC_FALSE, use = PETSC_FALSE, bench_only = PETSC_FALSE;
  PetscInt bench = 0, rounds = 5;
  std::string matrix, gen_spec = "rotate:128,128";
  char json[PETSC_MAX_PATH_LEN] = "";
  char json_label[64] = "";
};

PetscErrorCode read_settings(Settings& st) {
  PetscFunctionBeginUser;
  char buf[256] = "";
  PetscCall(PetscOptionsGetString(nullptr, nullptr, "-matrix", buf, sizeof buf, &st.has_matrix));
  st.matrix = buf;
  PetscBool has_gen = PETSC_FALSE;
  PetscCall(PetscOptionsGetString(nullptr, nullptr, "-gen", buf, sizeof buf, &has_gen));
  if (has_gen) st.gen_spec = buf;
  PetscCall(PetscOptionsGetBool(nullptr, nullptr, "-use_sparsecomm", &st.use, nullptr));
  PetscCall(PetscOptionsGetInt(nullptr, nullptr, "-bench", &st.bench, nullptr));
  PetscCall(PetscOptionsGetInt(nullptr, nullptr, "-bench_rounds", &st.rounds, nullptr));
  PetscCall(PetscOptionsGetBool(nullptr, nullptr, "-bench_only", &st.bench_only, nullptr));
  PetscCall(PetscOptionsGetString(nullptr, nullptr, "-bench_json", st.json, sizeof st.json, nullptr));
  PetscCall(PetscOptionsGetString(nullptr, nullptr, "-bench_label", st.json_label, sizeof st.json_label, nullptr));
  if (st.bench > 0 && (st.rounds < 1 || st.bench < st.rounds))
    SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_USER, "-bench N needs -bench_rounds R with 1 <= R <= N");
  PetscFunctionReturn(0);
}

/// MatMult through sparsecomm (A is attached) against PETSc's own product bref = A x.
PetscErrorCode verify_matmult(Mat A, Vec x, Vec b, Vec bref, bool* verified) {
  PetscFunctionBeginUser;
  PetscCall(MatMult(A, x, b));
  PetscInt n = 0;
  const PetscScalar *pb = nullptr, *pr = nullptr;
  PetscCall(VecGetLocalSize(b, &n));
  PetscCall(VecGetArrayRead(b, &pb));
  PetscCall(VecGetArrayRead(bref, &pr));
  const Comparison c = compare(pb, pr, n).allreduce(PETSC_COMM_WORLD);
  PetscCall(VecRestoreArrayRead(b, &pb));
  PetscCall(VecRestoreArrayRead(bref, &pr));
  *verified = c.ok(1e-12);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "MatMult through sparsecomm vs PETSc's: %s (%s)\n",
                        *verified ? "verified" : "VERIFICATION FAILED", c.describe().c_str()));
  PetscFunctionReturn(0);
}

/// KSP on A x = b (the options database chooses the solver); prints its outcome.
PetscErrorCode solve(Mat A, Vec b, Vec x, const DistCsr<double>& a, const std::string& label,
                     KSPConvergedReason* reason) {
  PetscFunctionBeginUser;
  KSP ksp;
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetTolerances(ksp, 1e-8, PETSC_DEFAULT, PETSC_DEFAULT, 10000));
  PetscCall(KSPSetFromOptions(ksp));
  const double t0 = MPI_Wtime();
  PetscCall(KSPSolve(ksp, b, x));
  const double tsolve = MPI_Wtime() - t0;
  PetscInt its;
  PetscCall(KSPGetIterationNumber(ksp, &its));
  PetscCall(KSPGetConvergedReason(ksp, reason));
  PetscBool on;
  const char* backend;
  PetscCall(petsc::attached(A, &on, &backend));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s: %lld x %lld, %lld nonzeros; MatMult by %s; KSP %s in %d iterations, %.3f s\n",
                        label.c_str(), (long long)a.global_rows(), (long long)a.global_cols(), (long long)a.global_nnz(),
                        on ? (std::string("sparsecomm/") + backend).c_str() : "PETSc", KSPConvergedReasons[*reason],
                        (int)its, tsolve));
  PetscCall(KSPDestroy(&ksp));
  PetscFunctionReturn(0);
}

struct Variant {
  std::string name;
  Mat m;
};

/// Every variant's matrix: PETSc's two star-forest types (the scatter is set up at
/// assembly, so each gets its own copy assembled under that -sf_type) and every sparsecomm
/// backend.
PetscErrorCode make_variants(const DistCsr<double>& a, std::vector<Variant>& rs) {
  PetscFunctionBeginUser;
  for (const char* sf : {"basic", "neighbor"}) {
    PetscCall(PetscOptionsSetValue(nullptr, "-sf_type", sf));
    Mat B;
    PetscCall(petsc::create_mpiaij(a, &B));
    rs.push_back({std::string("petsc -sf_type ") + sf, B});
  }
  // The PetscSF type "sparsecomm" (what -dll_append gives an unmodified program): every
  // scatter of the copy goes through it, with its own options (-sf_sparsecomm_regions,
  // default node: what a user who sets nothing gets; -sparsecomm_regions is the adapter's).
  for (const char* b : {"auto", "p2p", "aggregated_dedup"}) {
    PetscCall(PetscOptionsSetValue(nullptr, "-sf_type", "sparsecomm"));
    PetscCall(PetscOptionsSetValue(nullptr, "-sf_sparsecomm_backend", b));
    Mat B;
    PetscCall(petsc::create_mpiaij(a, &B));
    rs.push_back({std::string("petsc -sf_type sparsecomm/") + b, B});
  }
  PetscCall(PetscOptionsClearValue(nullptr, "-sf_sparsecomm_backend"));
  PetscCall(PetscOptionsClearValue(nullptr, "-sf_type"));
  for (const auto& name : backend_names()) {
    Mat B;
    PetscCall(petsc::create_mpiaij(a, &B));
    PetscCall(PetscOptionsSetValue(nullptr, "-sparsecomm_backend", name.c_str()));
    PetscCall(petsc::attach(B));
    rs.push_back({"sparsecomm " + name, B});
  }
  PetscFunctionReturn(0);
}

PetscErrorCode report_bench(const Settings& st, const std::string& label, const std::vector<Variant>& rs,
                            const std::vector<apps::RoundStats>& times) {
  PetscFunctionBeginUser;
  const size_t best_petsc = times[0].median <= times[1].median ? 0 : 1;
  size_t best_ours = 2;
  for (size_t i = 2; i < rs.size(); ++i)
    if (times[i].median < times[best_ours].median) best_ours = i;
  int np, rank;
  MPI_Comm_size(PETSC_COMM_WORLD, &np);
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "\nMatMult on %d ranks, %d products per variant in %d interleaved rounds (median over "
                        "rounds of the max over ranks)\n",
                        np, (int)st.bench, (int)st.rounds));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-42s %12s %18s %8s\n", "scatter", "us/MatMult", "vs best PETSc", "spread"));
  for (size_t i = 0; i < rs.size(); ++i)
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-42s %12.1f %18.3f %7.0f%%\n", rs[i].name.c_str(), times[i].median * 1e6,
                          times[i].median / times[best_petsc].median, times[i].spread * 100));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "best sparsecomm (%s) / best PETSc (%s) = %.3f\n", rs[best_ours].name.c_str(),
                        rs[best_petsc].name.c_str(), times[best_ours].median / times[best_petsc].median));
  for (size_t i = 0; i < rs.size(); ++i)  // the zero-source-change path, as -dll_append gives it
    if (rs[i].name == "petsc -sf_type sparsecomm/auto")
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "-sf_type sparsecomm (auto) / best PETSc (%s) = %.3f\n",
                            rs[best_petsc].name.c_str(), times[i].median / times[best_petsc].median));
  if (rank == 0 && st.json[0]) {
    try {
      apps::JsonLines js(st.json);
      for (size_t i = 0; i < rs.size(); ++i) {
        apps::Json j = apps::json_record("petsc_matmult");
        j["label"] = st.json_label;
        j["matrix"] = label;
        j["ranks"] = np;
        j["scatter"] = rs[i].name;
        j["us"] = times[i].median * 1e6;
        j["spread"] = times[i].spread;
        js.write(j);
      }
    } catch (const std::exception& e) {
      SETERRQ(PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "%s", e.what());
    }
  }
  PetscFunctionReturn(0);
}

/// Every variant's matrix first, then the timings in interleaved rounds
/// (apps::interleaved_rounds); a variant's time is its median over the rounds.
PetscErrorCode bench_scatters(const Settings& st, const DistCsr<double>& a, const std::string& label, Vec b, Vec x) {
  PetscFunctionBeginUser;
  std::vector<Variant> rs;
  Vec y;
  PetscCall(VecDuplicate(b, &y));
  PetscCall(VecSet(x, 1.0));
  PetscCall(make_variants(a, rs));
  const int per_round = static_cast<int>(st.bench / st.rounds);
  const auto times = apps::interleaved_rounds(rs.size(), static_cast<int>(st.rounds),
                                              [&](size_t i) { return time_matmult(rs[i].m, x, y, per_round); });
  for (auto& r : rs) PetscCall(MatDestroy(&r.m));
  PetscCall(report_bench(st, label, rs, times));
  PetscCall(VecDestroy(&y));
  PetscFunctionReturn(0);
}

PetscErrorCode run() {
  PetscFunctionBeginUser;
  Settings st;
  PetscCall(read_settings(st));
  // Build the matrix (our reader / generator), then hand it to PETSc as MATMPIAIJ.
  DistCsr<double> a;
  std::string label;
  try {
    if (st.has_matrix) a = read_matrix_market(PETSC_COMM_WORLD, find_matrix(st.matrix)), label = st.matrix;
    else a = gen::from_spec(PETSC_COMM_WORLD, st.gen_spec), label = st.gen_spec;
  } catch (const std::exception& e) {
    SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_USER, "%s", e.what());
  }
  Mat A;
  PetscCall(petsc::create_mpiaij(a, &A));
  PetscCall(PetscObjectSetName((PetscObject)A, label.c_str()));
  Vec x, b, bref;
  PetscCall(MatCreateVecs(A, &x, &b));
  PetscCall(VecDuplicate(b, &bref));
  PetscCall(VecSetRandom(x, nullptr));
  PetscCall(MatMult(A, x, bref));  // PETSc's own product: the oracle of sparsecomm's
  // The one line that switches MatMult (and KSP through it) to sparsecomm:
  if (st.use) PetscCall(petsc::attach(A));
  bool verified = true;
  if (st.use) PetscCall(verify_matmult(A, x, b, bref, &verified));
  PetscCall(VecDestroy(&bref));
  PetscCall(VecSet(x, 1.0));
  PetscCall(MatMult(A, x, b));  // right-hand side of the exact solution 1
  PetscCall(VecSet(x, 0.0));
  KSPConvergedReason reason = KSP_CONVERGED_ITS;
  // -bench_only: the MatMult benchmark alone (any matrix, solvable or not).
  if (!st.bench_only) PetscCall(solve(A, b, x, a, label, &reason));
  if (st.bench > 0) PetscCall(bench_scatters(st, a, label, b, x));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  // 3: the product was wrong (every program's "verification failed"); 1: KSP did not converge.
  PetscFunctionReturn(!verified ? 3 : reason > 0 ? 0 : 1);
}

}  // namespace

int main(int argc, char** argv) {
  PetscCall(PetscInitialize(&argc, &argv, nullptr,
                            "sparsecomm_petsc_ksp: KSP with MatMult through sparsecomm.\n"
                            "  -matrix NAME | -gen SPEC, -use_sparsecomm, -sparsecomm_backend NAME, -bench N, -bench_rounds R,\n"
                            "  -bench_only, -bench_json FILE, -bench_label NAME\n"));
  PetscCall(SparsecommPetscInitialize());  // -sf_type sparsecomm, as the plugin would register it
  PetscErrorCode ierr = run();
  PetscCall(PetscFinalize());
  return ierr == 3 ? 3 : ierr ? 1 : 0;
}
