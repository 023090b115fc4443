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

#include "sparsecomm/comm/locality.hpp"
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
// With `makespan`, from the first rank's start to the last rank's end instead: for
// products that do not communicate, whose ranks, sharing cores, would otherwise each be
// timed while running alone. It reads every rank's MPI_Wtime on one scale, which holds
// where the ranks share one host's clock (this machine, and the emulated cluster on it).
double time_matmult(Mat A, Vec x, Vec y, int reps, bool makespan = false) {
  MPI_Comm comm;
  PetscObjectGetComm((PetscObject)A, &comm);
  for (int i = 0; i < 3; ++i) MatMult(A, x, y);
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < reps; ++i) MatMult(A, x, y);
  const double t1 = MPI_Wtime();
  double local[2] = {makespan ? -t0 : 0.0, makespan ? t1 : t1 - t0}, mx[2] = {0, 0};
  MPI_Allreduce(local, mx, 2, MPI_DOUBLE, MPI_MAX, comm);
  return (mx[0] + mx[1]) / reps;  // makespan: max t1 - min t0
}

struct Settings {
  PetscBool has_matrix = PETSC_FALSE, use = PETSC_FALSE, bench_only = PETSC_FALSE;
  PetscInt bench = 0, rounds = 5, round_ms = 0;
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
  PetscCheck(!(has_gen && st.has_matrix), PETSC_COMM_WORLD, PETSC_ERR_ARG_INCOMP,
             "-matrix and -gen: give one of them (a file or a generated matrix), not both");
  PetscCall(PetscOptionsGetBool(nullptr, nullptr, "-use_sparsecomm", &st.use, nullptr));
  PetscCall(PetscOptionsGetInt(nullptr, nullptr, "-bench", &st.bench, nullptr));
  PetscCall(PetscOptionsGetInt(nullptr, nullptr, "-bench_rounds", &st.rounds, nullptr));
  PetscCall(PetscOptionsGetInt(nullptr, nullptr, "-bench_round_ms", &st.round_ms, nullptr));
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

// The compute floor: MatMult_MPIAIJ without its scatter. Each rank multiplies its diagonal
// block by its part of x and adds its off-diagonal block times a ghost vector that is never
// updated (values wrong, time right): the two local products and the load imbalance
// between ranks that share this machine's cores. Close to a bound, not a strict one: timed
// from the first rank's start it includes the ranks' skew in leaving the barrier (at 16
// ranks on this node a scatter has measured below it), so experiments/petsc/table.py
// prints it for comparison and decides "out of reach" by the wire floor alone.
//
// The one-message reference adds the least a point-to-point scatter waits for: every rank
// with ghosts receives one 8-byte message per product, from the owner of its first ghost
// on another node (else of its first ghost), started before the diagonal product and
// completed after it, as MatMult_MPIAIJ overlaps its scatter. It is a reference, not a
// bound: a scatter that sends fewer messages into a node (aggregation) or none within it
// (the window) can beat it, and on 4 ranks per core it has (see experiments/petsc).
//
// Both are timed like the other variants; report_bench never counts them as results.
const char* const FLOOR_NAME = "floor: products without the exchange";
const char* const REFERENCE_NAME = "reference: products + one message per rank";

// The floor and the reference: yardsticks timed beside the results, never results.
bool is_yardstick(const std::string& name) { return name == FLOOR_NAME || name == REFERENCE_NAME; }

struct FloorCtx {
  Mat ad = nullptr, ao = nullptr;  // borrowed from the basic variant's matrix
  Vec xl = nullptr, yl = nullptr, ghosts = nullptr;
  MPI_Comm comm = MPI_COMM_NULL;   // the reference's own duplicate
  std::vector<int> to, from;       // the reference's: ranks I send to, the one I receive from
  std::vector<MPI_Request> reqs;
  std::vector<double> in, out;
};

PetscErrorCode floor_mult(Mat S, Vec x, Vec y) {
  FloorCtx* c;
  const PetscScalar* px;
  PetscScalar* py;
  PetscFunctionBeginUser;
  PetscCall(MatShellGetContext(S, &c));
  PetscCall(VecGetArrayRead(x, &px));
  PetscCall(VecGetArray(y, &py));
  PetscCall(VecPlaceArray(c->xl, px));
  PetscCall(VecPlaceArray(c->yl, py));
  size_t n = 0;
  for (size_t i = 0; i < c->from.size(); ++i)
    PetscCallMPI(MPI_Irecv(&c->in[i], 1, MPI_DOUBLE, c->from[i], 0, c->comm, &c->reqs[n++]));
  for (size_t i = 0; i < c->to.size(); ++i)
    PetscCallMPI(MPI_Isend(&c->out[i], 1, MPI_DOUBLE, c->to[i], 0, c->comm, &c->reqs[n++]));
  PetscCall(MatMult(c->ad, c->xl, c->yl));
  if (n) PetscCallMPI(MPI_Waitall(static_cast<int>(n), c->reqs.data(), MPI_STATUSES_IGNORE));
  PetscCall(MatMultAdd(c->ao, c->ghosts, c->yl, c->yl));
  PetscCall(VecResetArray(c->xl));
  PetscCall(VecResetArray(c->yl));
  PetscCall(VecRestoreArray(y, &py));
  PetscCall(VecRestoreArrayRead(x, &px));
  PetscFunctionReturn(0);
}

PetscErrorCode floor_destroy(Mat S) {
  FloorCtx* c;
  PetscFunctionBeginUser;
  PetscCall(MatShellGetContext(S, &c));
  PetscCall(VecDestroy(&c->xl));
  PetscCall(VecDestroy(&c->yl));
  PetscCall(VecDestroy(&c->ghosts));
  if (c->comm != MPI_COMM_NULL) PetscCallMPI(MPI_Comm_free(&c->comm));
  delete c;
  PetscFunctionReturn(0);
}

/// The one-message reference's partners: mine (the owner of my first ghost on another
/// node under the adapter's -sparsecomm_regions, default node; else of my first ghost) and
/// the ranks that chose me.
PetscErrorCode reference_partners(Mat base, const PetscInt* garray, PetscInt nghost, FloorCtx* c) {
  PetscFunctionBeginUser;
  MPI_Comm comm;
  PetscCall(PetscObjectGetComm((PetscObject)base, &comm));
  char buf[256] = "node";
  PetscCall(PetscOptionsGetString(nullptr, nullptr, "-sparsecomm_regions", buf, sizeof buf, nullptr));
  try {
    const Locality loc = Locality::parse(comm, buf);
    const PetscInt* ranges;
    PetscCall(MatGetOwnershipRangesColumn(base, &ranges));
    int pick = -1;
    for (PetscInt g = 0; g < nghost; ++g) {
      const int owner = static_cast<int>(std::upper_bound(ranges, ranges + loc.size() + 1, garray[g]) - ranges) - 1;
      if (pick < 0) pick = owner;
      if (!loc.same_region(owner)) {
        pick = owner;
        break;
      }
    }
    std::vector<int> picks(static_cast<size_t>(loc.size()));
    PetscCallMPI(MPI_Allgather(&pick, 1, MPI_INT, picks.data(), 1, MPI_INT, comm));
    PetscCallMPI(MPI_Comm_dup(comm, &c->comm));
    if (pick >= 0) c->from.push_back(pick);
    for (int r = 0; r < loc.size(); ++r)
      if (picks[static_cast<size_t>(r)] == loc.rank()) c->to.push_back(r);
  } catch (const std::exception& e) {
    SETERRQ(comm, PETSC_ERR_USER, "%s", e.what());
  }
  c->reqs.resize(c->to.size() + c->from.size());
  c->in.assign(c->from.size(), 0.0), c->out.assign(c->to.size(), 1.0);
  PetscFunctionReturn(0);
}

/// The floor over an assembled MATMPIAIJ `base` (which must outlive it); with `messages`,
/// the one-message reference.
PetscErrorCode make_floor(Mat base, bool messages, Mat* S) {
  PetscFunctionBeginUser;
  auto* c = new FloorCtx();
  const PetscInt* garray;
  PetscCall(MatMPIAIJGetSeqAIJ(base, &c->ad, &c->ao, &garray));
  PetscInt m, n, mo, no;
  PetscCall(MatGetLocalSize(base, &m, &n));
  PetscCall(MatGetSize(c->ao, &mo, &no));
  if (messages) PetscCall(reference_partners(base, garray, no, c));
  PetscCall(VecCreateSeqWithArray(PETSC_COMM_SELF, 1, n, nullptr, &c->xl));
  PetscCall(VecCreateSeqWithArray(PETSC_COMM_SELF, 1, m, nullptr, &c->yl));
  PetscCall(VecCreateSeq(PETSC_COMM_SELF, no, &c->ghosts));
  PetscCall(VecSet(c->ghosts, 1.0));
  MPI_Comm comm;
  PetscCall(PetscObjectGetComm((PetscObject)base, &comm));
  PetscInt M, N;
  PetscCall(MatGetSize(base, &M, &N));
  PetscCall(MatCreateShell(comm, m, n, M, N, c, S));
  PetscCall(MatShellSetOperation(*S, MATOP_MULT, (void (*)(void))floor_mult));
  PetscCall(MatShellSetOperation(*S, MATOP_DESTROY, (void (*)(void))floor_destroy));
  PetscFunctionReturn(0);
}

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
  // auto also with its race (-sf_sparsecomm_options race=30: the close candidates timed).
  for (const auto& [b, options] : std::vector<std::pair<const char*, const char*>>{
           {"auto", ""}, {"auto", "race=30"}, {"p2p", ""}, {"aggregated_dedup", ""}}) {
    PetscCall(PetscOptionsSetValue(nullptr, "-sf_type", "sparsecomm"));
    PetscCall(PetscOptionsSetValue(nullptr, "-sf_sparsecomm_backend", b));
    if (*options) PetscCall(PetscOptionsSetValue(nullptr, "-sf_sparsecomm_options", options));
    Mat B;
    PetscCall(petsc::create_mpiaij(a, &B));
    PetscCall(PetscOptionsClearValue(nullptr, "-sf_sparsecomm_options"));
    rs.push_back({std::string("petsc -sf_type sparsecomm/") + b + (*options ? std::string(" ") + options : ""), B});
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
  for (bool messages : {false, true}) {  // destroyed before rs[0] (bench_scatters frees from the back)
    Mat S;
    PetscCall(make_floor(rs[0].m, messages, &S));
    rs.push_back({messages ? REFERENCE_NAME : FLOOR_NAME, S});
  }
  PetscFunctionReturn(0);
}

PetscErrorCode report_bench(const Settings& st, const std::string& label, const std::vector<Variant>& rs,
                            const std::vector<apps::RoundStats>& times, int per_round) {
  PetscFunctionBeginUser;
  // Ratios are paired (apps::paired_ratio: per round against the best PETSc type's time in
  // the same round, median over rounds); the best PETSc type is the one of lower median.
  const size_t best_petsc = times[0].median <= times[1].median ? 0 : 1;
  std::vector<double> ratio(rs.size());
  for (size_t i = 0; i < rs.size(); ++i) ratio[i] = apps::paired_ratio(times[i], times[best_petsc]);
  size_t best_ours = 2;
  for (size_t i = 2; i < rs.size(); ++i)
    if (!is_yardstick(rs[i].name) && ratio[i] < ratio[best_ours]) best_ours = i;
  int np, rank;
  MPI_Comm_size(PETSC_COMM_WORLD, &np);
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "\nMatMult on %d ranks, %d products per variant in %d interleaved rounds (median over "
                        "rounds of the max over ranks; ratios: median over rounds of the round's ratio)\n",
                        np, per_round * (int)st.rounds, (int)st.rounds));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-42s %12s %18s %8s\n", "scatter", "us/MatMult", "vs best PETSc", "spread"));
  for (size_t i = 0; i < rs.size(); ++i)
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-42s %12.1f %18.3f %7.0f%%\n", rs[i].name.c_str(), times[i].median * 1e6,
                          ratio[i], times[i].spread * 100));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "best sparsecomm (%s) / best PETSc (%s) = %.3f\n", rs[best_ours].name.c_str(),
                        rs[best_petsc].name.c_str(), ratio[best_ours]));
  for (size_t i = 0; i < rs.size(); ++i)
    if (is_yardstick(rs[i].name))
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s / best PETSc (%s) = %.3f\n", rs[i].name.c_str(),
                            rs[best_petsc].name.c_str(), ratio[i]));
  for (size_t i = 0; i < rs.size(); ++i)  // the zero-source-change path, as -dll_append gives it
    if (rs[i].name == "petsc -sf_type sparsecomm/auto")
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "-sf_type sparsecomm (auto) / best PETSc (%s) = %.3f\n",
                            rs[best_petsc].name.c_str(), ratio[i]));
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
        j["ratio_paired"] = ratio[i];  // against best_petsc, as printed
        j["rounds"] = static_cast<int>(st.rounds);
        j["products_per_round"] = per_round;
        std::vector<double> us;
        for (double t : times[i].rounds) us.push_back(t * 1e6);
        j["rounds_us"] = us;
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
  // -bench_round_ms T: at least T ms per variant and round (more products than -bench
  // gives where one product is short), sized by PETSc's own product. A round of a few ms is
  // as long as one time slice of the ranks sharing a core, and its time is then mostly
  // whom the scheduler ran; longer rounds average that out.
  int per_round = static_cast<int>(st.bench / st.rounds);
  if (st.round_ms > 0) {
    const double one = time_matmult(rs[0].m, x, y, 20);  // max over ranks: alike everywhere
    per_round = std::max(per_round, static_cast<int>(std::min(1e7, st.round_ms * 1e-3 / std::max(one, 1e-9))));
  }
  const auto times = apps::interleaved_rounds(rs.size(), static_cast<int>(st.rounds), [&](size_t i) {
    return time_matmult(rs[i].m, x, y, per_round, is_yardstick(rs[i].name));
  });
  for (auto r = rs.rbegin(); r != rs.rend(); ++r) PetscCall(MatDestroy(&r->m));  // the floor borrows from rs[0]
  PetscCall(report_bench(st, label, rs, times, per_round));
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
                            "  -bench_round_ms T, -bench_only, -bench_json FILE, -bench_label NAME\n"));
  PetscCall(SparsecommPetscInitialize());  // -sf_type sparsecomm, as the plugin would register it
  PetscErrorCode ierr = run();
  PetscCall(PetscFinalize());
  return ierr == 3 ? 3 : ierr ? 1 : 0;
}
