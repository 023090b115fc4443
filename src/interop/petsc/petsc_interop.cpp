#include "sparsecomm/interop/petsc/petsc_interop.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/interop/environment.hpp"
#include "guard.hpp"
#include "interop/common/pipeline.hpp"

namespace sparsecomm::petsc {
namespace {

using MultOp = PetscErrorCode (*)(Mat, Vec, Vec);
using MultAddOp = PetscErrorCode (*)(Mat, Vec, Vec, Vec);
constexpr const char* kKey = "sparsecomm_ctx";

struct Ctx : interop::PlanSettings {  // (the -sparsecomm_* options; `options` unused: they are read per key)
  Ctx() : PlanSettings(interop::EntryPoint::petsc_mat) {}
  bool view = false;
  PlanOptions plan;  // options of both plans (-sparsecomm_persistent)
  PetscObjectState nz_state = -1;
  Mat Ad = nullptr, Ao = nullptr;
  std::unique_ptr<Locality> loc;
  std::unique_ptr<Plan> fwd, rev;
  Vec xl = nullptr, yl = nullptr, zl = nullptr, gv = nullptr;  // sequential views (arrays placed per call)
  std::vector<double> ghost;  // the ghost values, where the plans' buffers cannot be used in place
  bool in_place = false;      // ghosts in arrival order: Ao reads / writes the plans' buffers
  void (*orig[4])(void) = {nullptr, nullptr, nullptr, nullptr};
  void destroy_vecs() {
    for (Vec* v : {&xl, &yl, &zl, &gv})
      if (*v) VecDestroy(v);
  }
  ~Ctx() { destroy_vecs(); }
};

const MatOperation kOps[4] = {MATOP_MULT, MATOP_MULT_ADD, MATOP_MULT_TRANSPOSE, MATOP_MULT_TRANSPOSE_ADD};


PetscErrorCode get_ctx(Mat A, Ctx** c) {
  PetscContainer cont = nullptr;
  PetscFunctionBeginUser;
  PetscCall(PetscObjectQuery((PetscObject)A, kKey, (PetscObject*)&cont));
  *c = nullptr;
  if (cont) PetscCall(PetscContainerGetPointer(cont, (void**)c));
  PetscFunctionReturn(0);
}

PetscErrorCode destroy_ctx(void* p) {
  delete static_cast<Ctx*>(p);
  return 0;
}

// (Re)builds the pattern and plans from the current structure of A.
PetscErrorCode build(Mat A, Ctx* c) {
  MPI_Comm comm;
  PetscFunctionBeginUser;
  PetscCall(PetscObjectGetComm((PetscObject)A, &comm));
  const PetscInt* garray = nullptr;
  PetscCall(MatMPIAIJGetSeqAIJ(A, &c->Ad, &c->Ao, &garray));
  PetscInt nghost = 0, nloc = 0, mloc = 0;
  PetscCall(MatGetSize(c->Ao, nullptr, &nghost));
  PetscCall(MatGetLocalSize(A, &mloc, &nloc));
  const PetscInt* ranges = nullptr;
  PetscCall(MatGetOwnershipRangesColumn(A, &ranges));
  PetscCall(MatGetNonzeroState(A, &c->nz_state));
  PetscCall(guard("sparsecomm::petsc::build", [&]() -> PetscErrorCode {
    const int p = comm_size(comm);
    std::vector<int64_t> off(ranges, ranges + p + 1);
    RowPartition cols = RowPartition::from_offsets(off);
    std::vector<int64_t> ghosts(garray, garray + nghost);
    c->loc = std::make_unique<Locality>(Locality::parse(comm, c->regions));
    Sdde sdde(comm, *c->loc);
    Pattern pat = Pattern::from_ghosts(comm, cols, ghosts, sdde, c->sdde);
    c->fwd = make_plan(c->backend, pat, *c->loc, comm, c->plan);
    c->rev = make_plan(c->backend, pat.reverse(), *c->loc, comm, c->plan);
    c->ghost.assign(static_cast<size_t>(nghost) + 1, 0.0);
    c->in_place = nghost > 0 && c->fwd->receives_in_ghost_order() && c->rev->sends_in_owned_order();
    return 0;
  }));
  c->destroy_vecs();
  PetscCall(VecCreateSeqWithArray(PETSC_COMM_SELF, 1, nloc, nullptr, &c->xl));
  PetscCall(VecCreateSeqWithArray(PETSC_COMM_SELF, 1, mloc, nullptr, &c->yl));
  PetscCall(VecCreateSeqWithArray(PETSC_COMM_SELF, 1, mloc, nullptr, &c->zl));
  PetscCall(VecCreateSeqWithArray(PETSC_COMM_SELF, 1, nghost, c->ghost.data(), &c->gv));
  if (c->view) {
    const auto& it = c->fwd->iteration_counts().total();
    const char* name = nullptr;
    PetscCall(PetscObjectGetName((PetscObject)A, &name));
    PetscCall(PetscPrintf(comm, "sparsecomm: MatMult of %s through backend %s (pattern by SDDE %s, regions %s, %s requests)\n",
                          name ? name : "Mat", c->backend.c_str(), c->sdde.c_str(), c->loc->describe().c_str(),
                          c->plan.persistent_requests ? "persistent" : "fresh"));
    PetscCall(PetscSynchronizedPrintf(comm, "  [%d] sends %lld intra-region + %lld inter-region messages per MatMult\n",
                                      comm_rank(comm), static_cast<long long>(it.sent_intra.msgs),
                                      static_cast<long long>(it.sent_inter.msgs)));
    PetscCall(PetscSynchronizedFlush(comm, PETSC_STDOUT));
  }
  PetscFunctionReturn(0);
}

// Rebuilds when the nonzero structure changed since the last build (collective: every
// product is collective, so all ranks see the same state).
PetscErrorCode refresh(Mat A, Ctx* c) {
  PetscObjectState s;
  PetscFunctionBeginUser;
  PetscCall(MatGetNonzeroState(A, &s));
  if (s != c->nz_state) PetscCall(build(A, c));
  PetscFunctionReturn(0);
}

// The start both products share: the context (rebuilt if the structure changed), z = y
// for the adding forms, and x's array (restored by the caller).
PetscErrorCode begin_product(Mat A, Vec x, Vec y, Vec z, Ctx** c, const PetscScalar** xa) {
  PetscFunctionBeginUser;
  PetscCall(get_ctx(A, c));
  PetscCall(refresh(A, *c));
  if (y && y != z) PetscCall(VecCopy(y, z));
  PetscCall(VecGetArrayRead(x, xa));
  PetscFunctionReturn(0);
}

// z = (y +) A x, overlapping the exchange with the diagonal block.
PetscErrorCode mult_impl(Mat A, Vec x, Vec y, Vec z) {
  Ctx* c;
  const PetscScalar* xa;
  PetscScalar* za;
  PetscFunctionBeginUser;
  PetscCall(begin_product(A, x, y, z, &c, &xa));
  PetscCall(VecGetArray(z, &za));
  PetscCall(guard("sparsecomm MatMult", [&]() -> PetscErrorCode {
    c->fwd->start(xa);
    return 0;
  }));
  PetscCall(VecPlaceArray(c->xl, xa));
  PetscCall(VecPlaceArray(c->zl, za));
  if (y) PetscCall(MatMultAdd(c->Ad, c->xl, c->zl, c->zl));
  else PetscCall(MatMult(c->Ad, c->xl, c->zl));
  // Ghosts in arrival order (always, for PETSc's sorted garray): the Ao product reads the
  // plan's receive buffer directly, as PETSc's own scatter receives into its lvec.
  double* ghost = nullptr;
  PetscCall(guard("sparsecomm MatMult", [&]() -> PetscErrorCode {
    if (c->in_place) ghost = c->fwd->wait<double>();
    else c->fwd->wait(c->ghost.data());
    return 0;
  }));
  if (ghost) PetscCall(VecPlaceArray(c->gv, ghost));
  PetscCall(MatMultAdd(c->Ao, c->gv, c->zl, c->zl));
  if (ghost) PetscCall(VecResetArray(c->gv));
  PetscCall(VecResetArray(c->xl));
  PetscCall(VecResetArray(c->zl));
  PetscCall(VecRestoreArrayRead(x, &xa));
  PetscCall(VecRestoreArray(z, &za));
  PetscFunctionReturn(0);
}

// z = (y +) A^T x: off-diagonal partial sums travel back to their owners and are added.
PetscErrorCode mult_transpose_impl(Mat A, Vec x, Vec y, Vec z) {
  Ctx* c;
  const PetscScalar* xa;
  PetscFunctionBeginUser;
  PetscCall(begin_product(A, x, y, z, &c, &xa));
  PetscCall(VecPlaceArray(c->yl, xa));  // yl has the row layout: x of A^T
  // The partial sums for other ranks go straight into the reverse plan's send buffer
  // when its send order is the ghost order (no pack copy).
  double* partial = nullptr;
  PetscCall(guard("sparsecomm MatMultTranspose", [&]() -> PetscErrorCode {
    if (c->in_place) partial = c->rev->send_area<double>();
    return 0;
  }));
  if (partial) PetscCall(VecPlaceArray(c->gv, partial));
  PetscCall(MatMultTranspose(c->Ao, c->yl, c->gv));
  if (partial) PetscCall(VecResetArray(c->gv));
  PetscCall(guard("sparsecomm MatMultTranspose", [&]() -> PetscErrorCode {
    if (partial) c->rev->start();
    else c->rev->start(c->ghost.data());
    return 0;
  }));
  PetscScalar* za;
  PetscCall(VecGetArray(z, &za));
  PetscCall(VecPlaceArray(c->xl, za));  // xl has the column layout: y of A^T
  if (y) PetscCall(MatMultTransposeAdd(c->Ad, c->yl, c->xl, c->xl));
  else PetscCall(MatMultTranspose(c->Ad, c->yl, c->xl));
  PetscCall(guard("sparsecomm MatMultTranspose", [&]() -> PetscErrorCode {
    c->rev->wait(za, Unpack::add);
    return 0;
  }));
  PetscCall(VecResetArray(c->xl));
  PetscCall(VecResetArray(c->yl));
  PetscCall(VecRestoreArrayRead(x, &xa));
  PetscCall(VecRestoreArray(z, &za));
  PetscFunctionReturn(0);
}

PetscErrorCode op_mult(Mat A, Vec x, Vec y) { return mult_impl(A, x, nullptr, y); }
PetscErrorCode op_mult_add(Mat A, Vec x, Vec y, Vec z) { return mult_impl(A, x, y, z); }
PetscErrorCode op_mult_t(Mat A, Vec x, Vec y) { return mult_transpose_impl(A, x, nullptr, y); }
PetscErrorCode op_mult_t_add(Mat A, Vec x, Vec y, Vec z) { return mult_transpose_impl(A, x, y, z); }

}  // namespace

PetscErrorCode create_mpiaij(const DistCsr<double>& a, Mat* A) {
  PetscFunctionBeginUser;
  const int32_t m = a.local_rows();
  std::vector<PetscInt> dnz(static_cast<size_t>(m) + 1), onz(static_cast<size_t>(m) + 1);
  for (int32_t i = 0; i < m; ++i) {
    dnz[i] = static_cast<PetscInt>(a.diag().row_ptr[i + 1] - a.diag().row_ptr[i]);
    onz[i] = static_cast<PetscInt>(a.offd().row_ptr[i + 1] - a.offd().row_ptr[i]);
  }
  PetscCall(MatCreate(a.comm(), A));
  PetscCall(MatSetSizes(*A, m, a.local_cols(), a.global_rows(), a.global_cols()));
  PetscCall(MatSetType(*A, MATMPIAIJ));
  PetscCall(MatMPIAIJSetPreallocation(*A, 0, dnz.data(), 0, onz.data()));
  for (const auto& t : a.local_triplets()) {
    const PetscInt i = static_cast<PetscInt>(t.row), j = static_cast<PetscInt>(t.col);
    PetscCall(MatSetValues(*A, 1, &i, 1, &j, &t.val, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

namespace {

// A's context; on the first attach a new one, owned by A (destroyed with it or by detach),
// which keeps PETSc's own products for detach to restore.
PetscErrorCode get_or_create_ctx(Mat A, Ctx** out) {
  Ctx* c;
  PetscFunctionBeginUser;
  PetscCall(get_ctx(A, &c));
  if (c == nullptr) {
    c = new Ctx();
    PetscContainer cont;
    PetscCall(PetscContainerCreate(PETSC_COMM_SELF, &cont));
    PetscCall(PetscContainerSetPointer(cont, c));
    PetscCall(PetscContainerSetUserDestroy(cont, destroy_ctx));
    PetscCall(PetscObjectCompose((PetscObject)A, kKey, (PetscObject)cont));
    PetscCall(PetscContainerDestroy(&cont));
    for (int i = 0; i < 4; ++i) PetscCall(MatGetOperation(A, kOps[i], &c->orig[i]));
  }
  *out = c;
  PetscFunctionReturn(0);
}

// The -sparsecomm_* options under A's prefix into the context.
PetscErrorCode read_options(Mat A, Ctx* c) {
  const char* prefix = nullptr;
  char buf[256];
  PetscBool set = PETSC_FALSE;
  PetscFunctionBeginUser;
  PetscCall(MatGetOptionsPrefix(A, &prefix));
  PetscCall(PetscOptionsGetString(nullptr, prefix, "-sparsecomm_backend", buf, sizeof buf, &set));
  if (set) c->backend = buf;
  PetscCall(PetscOptionsGetString(nullptr, prefix, "-sparsecomm_sdde", buf, sizeof buf, &set));
  if (set) c->sdde = buf;
  PetscCall(PetscOptionsGetString(nullptr, prefix, "-sparsecomm_regions", buf, sizeof buf, &set));
  if (set) c->regions = buf;
  PetscBool view = PETSC_FALSE;
  PetscCall(PetscOptionsHasName(nullptr, prefix, "-sparsecomm_view", &view));
  c->view = view;
  PetscBool persistent = c->plan.persistent_requests ? PETSC_TRUE : PETSC_FALSE;
  PetscCall(PetscOptionsGetBool(nullptr, prefix, "-sparsecomm_persistent", &persistent, nullptr));
  c->plan.persistent_requests = persistent;
  // The chosen backend's own options (BackendHooks::options), as -sparsecomm_<key> VALUE:
  // -sparsecomm_k 4 for combined, -sparsecomm_model FILE for auto, and whatever a backend
  // registered later declares. make_plan validates them (an error on every rank). An
  // unknown backend reads none: build() reports the name.
  c->plan.backend = BackendOptions();
  const auto names = backend_names();
  if (std::find(names.begin(), names.end(), c->backend) != names.end())
    for (const auto& spec : backend_option_specs(c->backend)) {
      if (spec.kind == OptionSpec::Kind::object) continue;
      PetscCall(PetscOptionsGetString(nullptr, prefix, ("-sparsecomm_" + spec.key).c_str(), buf, sizeof buf, &set));
      if (set) c->plan.backend.set(spec.key, std::string(buf));
    }
  PetscFunctionReturn(0);
}

}  // namespace

PetscErrorCode attach(Mat A) {
  MPI_Comm comm;
  MatType type;
  PetscBool is_mpiaij = PETSC_FALSE;
  PetscFunctionBeginUser;
  PetscCall(PetscObjectGetComm((PetscObject)A, &comm));
  PetscCall(MatGetType(A, &type));
  PetscCall(PetscObjectTypeCompare((PetscObject)A, MATMPIAIJ, &is_mpiaij));
  if (!is_mpiaij) {
    // Another type (on one rank MATAIJ is MATSEQAIJ: no communication to replace): PETSc's
    // own operations stay, as if attach had not been called (-info says so). The type is
    // the same on every rank, so every rank steps aside alike.
    PetscCall(PetscInfo(A, "sparsecomm::petsc::attach: %s is not MATMPIAIJ; PETSc's own MatMult stays\n", type));
    PetscFunctionReturn(0);
  }
  PetscMPIInt size = 1;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  if (size == 1) {  // a MATMPIAIJ on one rank: nothing travels, nothing to replace
    Ctx one;  // but a bad name is still an error, as it would be on more ranks
    PetscCall(read_options(A, &one));
    PetscCall(guard("sparsecomm::petsc::attach", [&]() -> PetscErrorCode {
      interop::validate(one, {"-sparsecomm_backend", "-sparsecomm_regions", "-sparsecomm_sdde", "-sparsecomm_options"});
      return 0;
    }));
    PetscCall(PetscInfo(A, "sparsecomm::petsc::attach: one rank; PETSc's own MatMult stays\n"));
    PetscFunctionReturn(0);
  }
  PetscBool assembled = PETSC_FALSE;
  PetscCall(MatAssembled(A, &assembled));
  PetscCheck(assembled, comm, PETSC_ERR_ARG_WRONGSTATE, "sparsecomm::petsc::attach: assemble the matrix first");
  Ctx* c = nullptr;  // (set by get_or_create_ctx unless it fails)
  PetscCall(get_or_create_ctx(A, &c));
  PetscCall(read_options(A, c));
  PetscCall(guard("sparsecomm::petsc::attach", [&]() -> PetscErrorCode {
    apply_environment();  // the library's variables, as the defaults of this matrix's set-up
    Sdde::check_strategy(c->sdde);  // same text on every rank: all fail together
    return 0;
  }));
  PetscCall(build(A, c));
  PetscCall(MatSetOperation(A, MATOP_MULT, (void (*)(void))op_mult));
  PetscCall(MatSetOperation(A, MATOP_MULT_ADD, (void (*)(void))op_mult_add));
  PetscCall(MatSetOperation(A, MATOP_MULT_TRANSPOSE, (void (*)(void))op_mult_t));
  PetscCall(MatSetOperation(A, MATOP_MULT_TRANSPOSE_ADD, (void (*)(void))op_mult_t_add));
  PetscFunctionReturn(0);
}

PetscErrorCode detach(Mat A) {
  Ctx* c;
  PetscFunctionBeginUser;
  PetscCall(get_ctx(A, &c));
  if (!c) PetscFunctionReturn(0);
  for (int i = 0; i < 4; ++i) PetscCall(MatSetOperation(A, kOps[i], c->orig[i]));
  PetscCall(PetscObjectCompose((PetscObject)A, kKey, nullptr));  // destroys the context
  PetscFunctionReturn(0);
}

PetscErrorCode attached(Mat A, PetscBool* flag, const char** backend) {
  Ctx* c;
  PetscFunctionBeginUser;
  PetscCall(get_ctx(A, &c));
  *flag = c ? PETSC_TRUE : PETSC_FALSE;
  if (backend) *backend = c ? c->backend.c_str() : "";
  PetscFunctionReturn(0);
}

}  // namespace sparsecomm::petsc
