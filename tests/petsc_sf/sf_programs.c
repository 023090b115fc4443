/* An ordinary PETSc program that knows nothing of sparsecomm: it is built against PETSc
 * only, and run twice by tests/petsc_sf/compare.py, once with -sf_type basic and once with
 *   -dll_append .../libsparsecomm_petsc.so -sf_type sparsecomm -sf_sparsecomm_backend B
 * and the two runs' RESULT lines must agree (integers exactly, reals to rounding).
 *
 *   -test sf         PetscSF unit test: Bcast and Reduce of every op (REPLACE, SUM, MPIU_SUM,
 *                    MAX, MIN, PROD) and unit (MPIU_SCALAR, MPIU_INT, MPI_DOUBLE, block of 3
 *                    scalars, MPI_FLOAT) on an irregular graph (leaves on every rank, self
 *                    included, repeated roots, non-contiguous leaf locations), compared
 *                    in-process with a basic SF of the same graph; then what the sparsecomm
 *                    type must delegate (FetchAndOp, MPI_BOR, a strided unit, MPI_DOUBLE_INT
 *                    with MPI_MAXLOC, a second Bcast in flight) with the delegation counted
 *   -test dmda2d     KSP on a DMDA 2D Laplacian (DM scatters + MatMult), and DMGlobalToLocal
 *   -test dmda3d     the same in 3D with 3 dof (block-3 scatter units)
 *   -test asm|gasm   KSP with PCASM / PCGASM (their own VecScatters)
 *   -test transpose  MatMultTranspose of an unsymmetric DMDA matrix
 *   -test ghost      VecGhost updates: insert forward, add reverse
 *   -test ltol       DMDA local-to-local (DMLocalToLocal) in 1D, 2D periodic with 3 dof and 3D,
 *                    and VecScatterCopy + VecScatterRemap of a parallel VecScatter: PETSc
 *                    remaps the copy's roots, which it allows on basic star forests only, so
 *                    the sparsecomm type hands such copies to basic (checked by type)
 *   -test all        every one of them
 *   -test badgraph   (not in all) a graph whose leaf 1 on rank 1 is bad (-bad index: a root
 *                    past the named rank's roots; -bad negative: root -1; -bad leaf: leaf
 *                    location -1; -bad rank: rank size + 3; -bad none: a good graph):
 *                    PetscSFSetUp, then a Bcast checked; prints "RESULT badgraph_wrong N"
 *                    when the set-up succeeded.
 *                    -rank1_backend B: -sf_sparsecomm_backend B on rank 1 only, as an MPMD
 *                    launch with a different command line gives it (PETSc reads
 *                    PETSC_OPTIONS and options files on rank 0 and broadcasts them)
 */
#include <petscdmda.h>
#include <petscksp.h>
#include <petscsf.h>
#include <string.h>

static PetscErrorCode result_int(const char *name, PetscInt v)
{
  PetscFunctionBeginUser;
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "RESULT %s %" PetscInt_FMT "\n", name, v));
  PetscFunctionReturn(0);
}

static PetscErrorCode result_real(const char *name, PetscReal v)
{
  PetscFunctionBeginUser;
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "RESULT %s %.15e\n", name, (double)v));
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------ PetscSF unit test */

/* The graph: rank r has 5 + r roots and 3 * size + 4 leaves; leaf i lives at 2 i + 1 and
   names root (i * 7 + r) % nroots(q) of rank q = (r + i) % size. */
static PetscErrorCode make_graph(PetscSF sf, PetscInt *nleafdata)
{
  PetscMPIInt rank, size;
  PetscInt    nroots, nleaves, i, *ilocal;
  PetscSFNode *iremote;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  nroots  = 5 + rank;
  nleaves = 3 * size + 4;
  PetscCall(PetscMalloc1(nleaves, &ilocal));
  PetscCall(PetscMalloc1(nleaves, &iremote));
  for (i = 0; i < nleaves; i++) {
    PetscInt q     = (rank + i) % size;
    ilocal[i]       = 2 * i + 1;
    iremote[i].rank  = q;
    iremote[i].index = (i * 7 + rank) % (5 + q);
  }
  PetscCall(PetscSFSetGraph(sf, nroots, nleaves, ilocal, PETSC_OWN_POINTER, iremote, PETSC_OWN_POINTER));
  *nleafdata = 2 * nleaves + 1;
  PetscFunctionReturn(0);
}

/* Values with exact sums and products in every type: 1 or 2, from a seed. */
static void fill(void *p, MPI_Datatype base, PetscInt n, PetscInt seed)
{
  for (PetscInt i = 0; i < n; i++) {
    PetscInt v = 1 + ((i * 5 + seed * 3) % 7 == 0) + ((i + seed) % 3 == 0);
    if (base == MPIU_INT) ((PetscInt *)p)[i] = v;
    else if (base == MPI_FLOAT) ((float *)p)[i] = (float)v;
    else ((double *)p)[i] = (double)v;
  }
}

/* Bcast or Reduce of (unit, op) on both star forests from the same data; the number of
   values that differ. */
static PetscErrorCode compare_op(PetscSF ref, PetscSF sf, PetscInt nroots, PetscInt nleafdata, MPI_Datatype unit,
                                 MPI_Datatype base, PetscInt bs, MPI_Op op, PetscBool reduce, PetscInt *diff)
{
  int    ni, na, nd, combiner;
  int    strided;
  size_t esize = base == MPIU_INT ? sizeof(PetscInt) : base == MPI_FLOAT ? sizeof(float) : sizeof(double);
  char  *r1, *r2, *l1, *l2;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Type_get_envelope(unit, &ni, &na, &nd, &combiner));
  strided = combiner == MPI_COMBINER_VECTOR;
  {
    PetscBool verbose = PETSC_FALSE;
    PetscCall(PetscOptionsGetBool(NULL, NULL, "-test_verbose", &verbose, NULL));
    if (verbose) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "compare_op: bs %" PetscInt_FMT " esize %d op %d reduce %d\n", bs, (int)esize, (int)(op == MPI_REPLACE ? 0 : op == MPI_SUM ? 1 : op == MPI_MAX ? 3 : op == MPI_MIN ? 4 : op == MPI_PROD ? 5 : 9), (int)reduce));
  }
  PetscCall(PetscMalloc4(nroots * bs * esize, &r1, nroots * bs * esize, &r2, nleafdata * bs * esize, &l1, nleafdata * bs * esize, &l2));
  fill(r1, base, nroots * bs, 1);
  fill(r2, base, nroots * bs, 1);
  fill(l1, base, nleafdata * bs, 2);
  fill(l2, base, nleafdata * bs, 2);
  if (reduce) {
    PetscCall(PetscSFReduceBegin(ref, unit, l1, r1, op));
    PetscCall(PetscSFReduceEnd(ref, unit, l1, r1, op));
    PetscCall(PetscSFReduceBegin(sf, unit, l2, r2, op));
    PetscCall(PetscSFReduceEnd(sf, unit, l2, r2, op));
  } else {
    PetscCall(PetscSFBcastBegin(ref, unit, r1, l1, op));
    PetscCall(PetscSFBcastEnd(ref, unit, r1, l1, op));
    PetscCall(PetscSFBcastBegin(sf, unit, r2, l2, op));
    PetscCall(PetscSFBcastEnd(sf, unit, r2, l2, op));
  }
  /* Small integers in every type: the results are exact whatever the order of the terms. */
  /* Value by value; a strided unit (bs 3, the middle value a hole) is compared on the
     values it carries: what basic leaves in a hole is not defined. */
  for (PetscInt v = 0; v < (reduce ? nroots : nleafdata) * bs; v++) {
    if (strided && v % 3 == 1) continue;
    if (memcmp((reduce ? r1 : l1) + v * esize, (reduce ? r2 : l2) + v * esize, esize)) (*diff)++;
  }
  PetscCall(PetscFree4(r1, r2, l1, l2));
  PetscFunctionReturn(0);
}

static PetscErrorCode counts(PetscSF sf, PetscInt *native, PetscInt *delegated)
{
  PetscErrorCode (*f)(PetscSF, PetscInt *, PetscInt *) = NULL;

  PetscFunctionBeginUser;
  *native = *delegated = -1; /* not a sparsecomm SF: nothing to count */
  PetscCall(PetscObjectQueryFunction((PetscObject)sf, "SparsecommSFGetCounts_C", &f));
  if (f) PetscCall((*f)(sf, native, delegated));
  PetscFunctionReturn(0);
}

static PetscErrorCode test_sf(void)
{
  PetscSF      ref, sf;
  PetscInt     nroots, nleafdata, diff = 0, n0, d0, n1, d1, i;
  MPI_Datatype block3, strided;
  MPI_Op       ops[]   = {MPI_REPLACE, MPI_SUM, MPIU_SUM, MPI_MAX, MPI_MIN, MPI_PROD};
  PetscSFType  type;

  PetscFunctionBeginUser;
  PetscCall(PetscSFCreate(PETSC_COMM_WORLD, &ref));
  PetscCall(PetscSFSetType(ref, PETSCSFBASIC));
  PetscCall(make_graph(ref, &nleafdata));
  PetscCall(PetscSFSetUp(ref));
  PetscCall(PetscSFCreate(PETSC_COMM_WORLD, &sf));
  PetscCall(PetscSFSetFromOptions(sf)); /* -sf_type */
  PetscCall(make_graph(sf, &nleafdata));
  PetscCall(PetscSFSetUp(sf));
  PetscCall(PetscSFGetGraph(sf, &nroots, NULL, NULL, NULL));
  PetscCall(PetscSFGetType(sf, &type));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "sf type %s\n", type));
  PetscCallMPI(MPI_Type_contiguous(3, MPIU_SCALAR, &block3));
  PetscCallMPI(MPI_Type_commit(&block3));

  /* Natively handled: every op on every unit, both directions. */
  PetscCall(counts(sf, &n0, &d0));
  for (i = 0; i < 6; i++) {
    for (PetscBool reduce = PETSC_FALSE;; reduce = PETSC_TRUE) {
      PetscCall(compare_op(ref, sf, nroots, nleafdata, MPIU_SCALAR, MPIU_SCALAR, 1, ops[i], reduce, &diff));
      PetscCall(compare_op(ref, sf, nroots, nleafdata, MPIU_INT, MPIU_INT, 1, ops[i], reduce, &diff));
      PetscCall(compare_op(ref, sf, nroots, nleafdata, MPI_DOUBLE, MPI_DOUBLE, 1, ops[i], reduce, &diff));
      /* PETSc's basic SF itself has no MPI_PROD on a derived unit (MPI_Reduce_local refuses it) */
      if (ops[i] != MPI_PROD) PetscCall(compare_op(ref, sf, nroots, nleafdata, block3, MPIU_SCALAR, 3, ops[i], reduce, &diff));
      PetscCall(compare_op(ref, sf, nroots, nleafdata, MPI_FLOAT, MPI_FLOAT, 1, ops[i], reduce, &diff));
      if (reduce) break;
    }
  }
  PetscCall(counts(sf, &n1, &d1));
  PetscCall(result_int("sf_native_mismatches", diff));
  if (n0 >= 0) {
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "CHECK sf_native_ops %" PetscInt_FMT " (expect 58) delegated %" PetscInt_FMT " (expect 0)\n", n1 - n0, d1 - d0));
    PetscCheck(n1 - n0 == 58 && d1 == d0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "native path: %" PetscInt_FMT " native, %" PetscInt_FMT " delegated", n1 - n0, d1 - d0);
  }

  /* Delegated: each must give basic's result and be counted as delegated. */
  diff = 0;
  PetscCall(counts(sf, &n0, &d0));
  PetscCall(compare_op(ref, sf, nroots, nleafdata, MPIU_INT, MPIU_INT, 1, MPI_BOR, PETSC_FALSE, &diff));
  PetscCall(compare_op(ref, sf, nroots, nleafdata, MPIU_INT, MPIU_INT, 1, MPI_BOR, PETSC_TRUE, &diff));
  PetscCall(PetscInfo(sf, "delegated: after MPI_BOR %" PetscInt_FMT " mismatches\n", diff));
  PetscCallMPI(MPI_Type_vector(2, 1, 2, MPIU_SCALAR, &strided)); /* 2 of every 3 scalars: not contiguous */
  PetscCallMPI(MPI_Type_commit(&strided));
  PetscCall(compare_op(ref, sf, nroots, nleafdata, strided, MPIU_SCALAR, 3, MPI_REPLACE, PETSC_FALSE, &diff));
  PetscCall(PetscInfo(sf, "delegated: after the strided Bcast %" PetscInt_FMT " mismatches\n", diff));
  PetscCall(compare_op(ref, sf, nroots, nleafdata, strided, MPIU_SCALAR, 3, MPI_REPLACE, PETSC_TRUE, &diff));
  PetscCall(PetscInfo(sf, "delegated: after the strided unit %" PetscInt_FMT " mismatches\n", diff));
  {
    struct {
      double v;
      int    i;
    } root[32], leaf[128], root2[32], leaf2[128];
    for (i = 0; i < 32; i++) root[i].v = root2[i].v = (double)(i % 5), root[i].i = root2[i].i = (int)i;
    for (i = 0; i < 128; i++) leaf[i].v = leaf2[i].v = (double)(i % 7), leaf[i].i = leaf2[i].i = (int)(100 + i);
    PetscCheck(nroots <= 32 && nleafdata <= 128, PETSC_COMM_SELF, PETSC_ERR_PLIB, "graph too large for the MAXLOC buffers");
    PetscCall(PetscSFReduceBegin(ref, MPI_DOUBLE_INT, leaf, root, MPI_MAXLOC));
    PetscCall(PetscSFReduceEnd(ref, MPI_DOUBLE_INT, leaf, root, MPI_MAXLOC));
    PetscCall(PetscSFReduceBegin(sf, MPI_DOUBLE_INT, leaf2, root2, MPI_MAXLOC));
    PetscCall(PetscSFReduceEnd(sf, MPI_DOUBLE_INT, leaf2, root2, MPI_MAXLOC));
    for (i = 0; i < nroots; i++) diff += root[i].v != root2[i].v || root[i].i != root2[i].i;
    PetscCall(PetscInfo(sf, "delegated: after MPI_MAXLOC %" PetscInt_FMT " mismatches\n", diff));
  }
  {
    PetscInt *rootf, *leafv, *upd1, *upd2, *rootg;
    PetscCall(PetscMalloc5(nroots, &rootf, nroots, &rootg, nleafdata, &leafv, nleafdata, &upd1, nleafdata, &upd2));
    for (i = 0; i < nroots; i++) rootf[i] = rootg[i] = 10 * i;
    for (i = 0; i < nleafdata; i++) leafv[i] = 1, upd1[i] = upd2[i] = -1;
    PetscCall(PetscSFFetchAndOpBegin(ref, MPIU_INT, rootf, leafv, upd1, MPI_SUM));
    PetscCall(PetscSFFetchAndOpEnd(ref, MPIU_INT, rootf, leafv, upd1, MPI_SUM));
    PetscCall(PetscSFFetchAndOpBegin(sf, MPIU_INT, rootg, leafv, upd2, MPI_SUM));
    PetscCall(PetscSFFetchAndOpEnd(sf, MPIU_INT, rootg, leafv, upd2, MPI_SUM));
    /* The fetched values depend on the order the roots serve the leaves; the final roots do not. */
    for (i = 0; i < nroots; i++) diff += rootf[i] != rootg[i];
    PetscCall(PetscInfo(sf, "delegated: after FetchAndOp %" PetscInt_FMT " mismatches\n", diff));
    PetscCall(PetscFree5(rootf, rootg, leafv, upd1, upd2));
  }
  {
    /* Two Bcasts in flight on one SF (PETSc allows it for different data): the second
       finds the plan busy and is delegated; both must be right. */
    PetscScalar *root, *la, *lb, *ra, *rb;
    PetscCall(PetscMalloc5(nroots, &root, nleafdata, &la, nleafdata, &lb, nleafdata, &ra, nleafdata, &rb));
    for (i = 0; i < nroots; i++) root[i] = (PetscScalar)(i + 1);
    for (i = 0; i < nleafdata; i++) la[i] = lb[i] = ra[i] = rb[i] = -1;
    PetscCall(PetscSFBcastBegin(sf, MPIU_SCALAR, root, la, MPI_REPLACE));
    PetscCall(PetscSFBcastBegin(sf, MPIU_SCALAR, root, lb, MPIU_SUM));
    PetscCall(PetscSFBcastEnd(sf, MPIU_SCALAR, root, la, MPI_REPLACE));
    PetscCall(PetscSFBcastEnd(sf, MPIU_SCALAR, root, lb, MPIU_SUM));
    PetscCall(PetscSFBcastBegin(ref, MPIU_SCALAR, root, ra, MPI_REPLACE));
    PetscCall(PetscSFBcastEnd(ref, MPIU_SCALAR, root, ra, MPI_REPLACE));
    PetscCall(PetscSFBcastBegin(ref, MPIU_SCALAR, root, rb, MPIU_SUM));
    PetscCall(PetscSFBcastEnd(ref, MPIU_SCALAR, root, rb, MPIU_SUM));
    for (i = 0; i < nleafdata; i++) diff += la[i] != ra[i] || lb[i] != rb[i];
    PetscCall(PetscFree5(root, la, lb, ra, rb));
  }
  PetscCall(counts(sf, &n1, &d1));
  PetscCall(result_int("sf_delegated_mismatches", diff));
  if (n0 >= 0) {
    /* BOR x2, strided x2, MAXLOC, FetchAndOp, and the second Bcast in flight: 7 delegated,
       the first Bcast native. On one rank nothing is ever in flight (every leaf is local,
       done in Begin): both Bcasts are native. */
    PetscMPIInt size;
    PetscInt    want_d, want_n;
    PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
    want_d = size > 1 ? 7 : 6, want_n = size > 1 ? 1 : 2;
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "CHECK sf_delegated_ops %" PetscInt_FMT " (expect %" PetscInt_FMT ") native %" PetscInt_FMT " (expect %" PetscInt_FMT ")\n", d1 - d0, want_d, n1 - n0, want_n));
    PetscCheck(d1 - d0 == want_d && n1 - n0 == want_n, PETSC_COMM_SELF, PETSC_ERR_PLIB, "delegation: %" PetscInt_FMT " delegated, %" PetscInt_FMT " native", d1 - d0, n1 - n0);
  }
  PetscCall(PetscSFViewFromOptions(sf, NULL, "-test_sf_view"));
  PetscCallMPI(MPI_Type_free(&block3));
  PetscCallMPI(MPI_Type_free(&strided));
  PetscCall(PetscSFDestroy(&ref));
  PetscCall(PetscSFDestroy(&sf));
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------- DMDA programs */

/* -Laplacian (+ convection c * d/dx when c != 0: unsymmetric) on a DMDA, every dof alike. */
static PetscErrorCode assemble(DM da, PetscReal c, Mat *A)
{
  PetscInt    dim, xs, ys, zs, xm, ym, zm, mx, my, mz, dof, i, j, k, d;
  MatStencil  row, col[7];
  PetscScalar v[7];

  PetscFunctionBeginUser;
  PetscCall(DMCreateMatrix(da, A));
  PetscCall(DMDAGetInfo(da, &dim, &mx, &my, &mz, NULL, NULL, NULL, &dof, NULL, NULL, NULL, NULL, NULL));
  PetscCall(DMDAGetCorners(da, &xs, &ys, &zs, &xm, &ym, &zm));
  for (k = zs; k < zs + zm; k++)
    for (j = ys; j < ys + ym; j++)
      for (i = xs; i < xs + xm; i++)
        for (d = 0; d < dof; d++) {
          PetscInt n = 0;
          row.i = i, row.j = j, row.k = k, row.c = d;
          col[n] = row, v[n++] = 2.0 * dim + 0.1 * d;
          if (i > 0) col[n] = row, col[n].i = i - 1, v[n++] = -1.0 - c;
          if (i < mx - 1) col[n] = row, col[n].i = i + 1, v[n++] = -1.0 + c;
          if (j > 0) col[n] = row, col[n].j = j - 1, v[n++] = -1.0;
          if (j < my - 1) col[n] = row, col[n].j = j + 1, v[n++] = -1.0;
          if (dim == 3 && k > 0) col[n] = row, col[n].k = k - 1, v[n++] = -1.0;
          if (dim == 3 && k < mz - 1) col[n] = row, col[n].k = k + 1, v[n++] = -1.0;
          PetscCall(MatSetValuesStencil(*A, 1, &row, n, col, v, INSERT_VALUES));
        }
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

static PetscErrorCode make_da(PetscInt dim, PetscInt dof, DM *da)
{
  PetscFunctionBeginUser;
  if (dim == 2) PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, 33, 29, PETSC_DECIDE, PETSC_DECIDE, dof, 1, NULL, NULL, da));
  else PetscCall(DMDACreate3d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, 11, 9, 10, PETSC_DECIDE, PETSC_DECIDE, PETSC_DECIDE, dof, 1, NULL, NULL, NULL, da));
  PetscCall(DMSetFromOptions(*da));
  PetscCall(DMSetUp(*da));
  PetscFunctionReturn(0);
}

/* KSP with preconditioner `pc` (NULL: PETSc's default) on the DMDA matrix; iterations and
   the solution's norm; plus a DMGlobalToLocal of a vector whose entries are their indices. */
static PetscErrorCode solve(const char *tag, PetscInt dim, PetscInt dof, PCType pctype)
{
  DM        da;
  Mat       A;
  Vec       x, b, g, l;
  KSP       ksp;
  PC        pc;
  PetscInt  its, lo, hi, i;
  PetscReal norm;
  char      name[64];

  PetscFunctionBeginUser;
  PetscCall(make_da(dim, dof, &da));
  PetscCall(assemble(da, 0.0, &A));
  PetscCall(DMCreateGlobalVector(da, &x));
  PetscCall(VecDuplicate(x, &b));
  PetscCall(VecSet(b, 1.0));
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, pctype ? KSPGMRES : KSPCG)); /* ASM/GASM's default restriction is not symmetric */
  PetscCall(KSPSetTolerances(ksp, 1e-10, PETSC_DEFAULT, PETSC_DEFAULT, 500));
  PetscCall(KSPGetPC(ksp, &pc));
  if (pctype) PetscCall(PCSetType(pc, pctype));
  else PetscCall(PCSetType(pc, PCJACOBI));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(KSPGetIterationNumber(ksp, &its));
  PetscCall(VecNorm(x, NORM_2, &norm));
  PetscCall(PetscSNPrintf(name, sizeof name, "%s_iterations", tag));
  PetscCall(result_int(name, its));
  PetscCall(PetscSNPrintf(name, sizeof name, "%s_solution_norm", tag));
  PetscCall(result_real(name, norm));

  PetscCall(DMCreateGlobalVector(da, &g));
  PetscCall(DMCreateLocalVector(da, &l));
  PetscCall(VecGetOwnershipRange(g, &lo, &hi));
  for (i = lo; i < hi; i++) PetscCall(VecSetValue(g, i, (PetscScalar)(i % 97), INSERT_VALUES));
  PetscCall(VecAssemblyBegin(g));
  PetscCall(VecAssemblyEnd(g));
  PetscCall(DMGlobalToLocalBegin(da, g, INSERT_VALUES, l));
  PetscCall(DMGlobalToLocalEnd(da, g, INSERT_VALUES, l));
  {
    PetscScalar s;
    PetscReal   all;
    PetscCall(VecSum(l, &s));
    PetscCallMPI(MPI_Allreduce(&s, &all, 1, MPIU_REAL, MPIU_SUM, PETSC_COMM_WORLD));
    PetscCall(PetscSNPrintf(name, sizeof name, "%s_local_sum", tag));
    PetscCall(result_real(name, all));
  }
  /* And back: local to global with ADD (the reverse scatter). */
  PetscCall(VecSet(g, 0.0));
  PetscCall(DMLocalToGlobalBegin(da, l, ADD_VALUES, g));
  PetscCall(DMLocalToGlobalEnd(da, l, ADD_VALUES, g));
  PetscCall(VecNorm(g, NORM_2, &norm));
  PetscCall(PetscSNPrintf(name, sizeof name, "%s_local_to_global_norm", tag));
  PetscCall(result_real(name, norm));
  PetscCall(VecDestroy(&g));
  PetscCall(VecDestroy(&l));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

static PetscErrorCode test_transpose(void)
{
  DM        da;
  Mat       A;
  Vec       x, y, z;
  PetscReal n1, n2;

  PetscFunctionBeginUser;
  PetscCall(make_da(2, 1, &da));
  PetscCall(assemble(da, 0.4, &A));
  PetscCall(MatCreateVecs(A, &x, &y));
  PetscCall(VecDuplicate(y, &z));
  {
    PetscInt lo, hi, i;
    PetscCall(VecGetOwnershipRange(x, &lo, &hi));
    for (i = lo; i < hi; i++) PetscCall(VecSetValue(x, i, (PetscScalar)((i * 13) % 11) - 5.0, INSERT_VALUES));
    PetscCall(VecAssemblyBegin(x));
    PetscCall(VecAssemblyEnd(x));
  }
  PetscCall(MatMultTranspose(A, x, y));
  PetscCall(MatMult(A, x, z));
  PetscCall(VecNorm(y, NORM_2, &n1));
  PetscCall(VecNorm(z, NORM_2, &n2));
  PetscCall(result_real("transpose_AT_x_norm", n1));
  PetscCall(result_real("transpose_A_x_norm", n2));
  PetscCall(MatMultTransposeAdd(A, x, y, y));
  PetscCall(VecNorm(y, NORM_2, &n1));
  PetscCall(result_real("transpose_add_norm", n1));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscCall(VecDestroy(&z));
  PetscCall(MatDestroy(&A));
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

static PetscErrorCode test_ghost(void)
{
  PetscMPIInt rank, size;
  PetscInt    n = 6, nghost, ghosts[4], lo, i;
  Vec         v, lv;
  PetscReal   norm;
  PetscScalar sum;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  /* Ghosts: the first and last entries of both neighbors (ring), none when alone. */
  nghost = 0;
  if (size > 1) {
    PetscInt next = (rank + 1) % size, prev = (rank + size - 1) % size;
    ghosts[nghost++] = next * n;
    ghosts[nghost++] = next * n + n - 1;
    if (prev != next) {
      ghosts[nghost++] = prev * n;
      ghosts[nghost++] = prev * n + n - 1;
    }
  }
  PetscCall(VecCreateGhost(PETSC_COMM_WORLD, n, PETSC_DECIDE, nghost, ghosts, &v));
  PetscCall(VecGetOwnershipRange(v, &lo, NULL));
  for (i = 0; i < n; i++) PetscCall(VecSetValue(v, lo + i, (PetscScalar)(lo + i + 1), INSERT_VALUES));
  PetscCall(VecAssemblyBegin(v));
  PetscCall(VecAssemblyEnd(v));
  PetscCall(VecGhostUpdateBegin(v, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecGhostUpdateEnd(v, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecGhostGetLocalForm(v, &lv));
  {
    const PetscScalar *a;
    PetscInt           bad = 0, allbad = 0;
    PetscCall(VecGetArrayRead(lv, &a));
    for (i = 0; i < nghost; i++) bad += a[n + i] != (PetscScalar)(ghosts[i] + 1);
    PetscCall(VecRestoreArrayRead(lv, &a));
    PetscCallMPI(MPI_Allreduce(&bad, &allbad, 1, MPIU_INT, MPI_SUM, PETSC_COMM_WORLD));
    PetscCall(result_int("ghost_insert_wrong", allbad));
  }
  PetscCall(VecSum(lv, &sum));
  PetscCall(VecGhostRestoreLocalForm(v, &lv));
  {
    PetscReal all;
    PetscCallMPI(MPI_Allreduce(&sum, &all, 1, MPIU_REAL, MPIU_SUM, PETSC_COMM_WORLD));
    PetscCall(result_real("ghost_local_form_sum", all));
  }
  /* Reverse with ADD: every ghost adds itself to its owner. */
  PetscCall(VecGhostUpdateBegin(v, ADD_VALUES, SCATTER_REVERSE));
  PetscCall(VecGhostUpdateEnd(v, ADD_VALUES, SCATTER_REVERSE));
  PetscCall(VecNorm(v, NORM_2, &norm));
  PetscCall(result_real("ghost_add_reverse_norm", norm));
  PetscCall(VecDestroy(&v));
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------- local to local, remapped copies */

/* Mismatches between the ghosted local vectors that DMGlobalToLocal and DMLocalToLocal
   fill, and the sum of the latter, on a DMDA of dimension dim. ex7 of PETSc's own DM tests
   (src/dm/tests/ex7.c) does this; at 2 ranks in 1D only rank 1 has a ghost to its left, so
   only rank 1's remap is not the identity. */
static PetscErrorCode ltol_dmda(PetscInt dim, PetscInt dof, PetscInt sw, DMBoundaryType bx, PetscInt *bad, PetscReal *sum)
{
  DM                 da;
  Vec                g, l, l2;
  VecScatter         gtol, ltol;
  PetscInt           lo, hi, i, n, nat, nbasic;
  const PetscScalar *a, *b;
  PetscScalar        s;
  PetscBool          is;

  PetscFunctionBeginUser;
  if (dim == 1) PetscCall(DMDACreate1d(PETSC_COMM_WORLD, bx, 8, dof, sw, NULL, &da));
  else if (dim == 2) PetscCall(DMDACreate2d(PETSC_COMM_WORLD, bx, bx, DMDA_STENCIL_BOX, 12, 10, PETSC_DECIDE, PETSC_DECIDE, dof, sw, NULL, NULL, &da));
  else PetscCall(DMDACreate3d(PETSC_COMM_WORLD, bx, bx, bx, DMDA_STENCIL_STAR, 6, 5, 7, PETSC_DECIDE, PETSC_DECIDE, PETSC_DECIDE, dof, sw, NULL, NULL, NULL, &da));
  PetscCall(DMSetFromOptions(da));
  PetscCall(DMSetUp(da));
  PetscCall(DMCreateGlobalVector(da, &g));
  PetscCall(DMCreateLocalVector(da, &l));
  PetscCall(VecDuplicate(l, &l2));
  PetscCall(VecSet(l, 0.0));
  PetscCall(VecSet(l2, 0.0));
  PetscCall(VecGetOwnershipRange(g, &lo, &hi));
  for (i = lo; i < hi; i++) PetscCall(VecSetValue(g, i, (PetscScalar)(i + 1), INSERT_VALUES));
  PetscCall(VecAssemblyBegin(g));
  PetscCall(VecAssemblyEnd(g));
  PetscCall(DMGlobalToLocalBegin(da, g, INSERT_VALUES, l));
  PetscCall(DMGlobalToLocalEnd(da, g, INSERT_VALUES, l));
  PetscCall(DMLocalToLocalBegin(da, l, INSERT_VALUES, l2));
  PetscCall(DMLocalToLocalEnd(da, l, INSERT_VALUES, l2));
  PetscCall(VecGetLocalSize(l, &n));
  PetscCall(VecGetArrayRead(l, &a));
  PetscCall(VecGetArrayRead(l2, &b));
  for (i = 0; i < n; i++) *bad += a[i] != b[i];
  PetscCall(VecRestoreArrayRead(l, &a));
  PetscCall(VecRestoreArrayRead(l2, &b));
  PetscCall(VecSum(l2, &s));
  *sum += PetscRealPart(s);
  /* Through the plugin the global-to-local scatter is sparsecomm and stays native; its
     remapped copy must be PETSc's basic. */
  PetscCall(DMDAGetScatter(da, &gtol, &ltol));
  PetscCall(counts(gtol, &nat, &nbasic));
  if (nat >= 0) {
    PetscCall(PetscObjectTypeCompare((PetscObject)ltol, PETSCSFBASIC, &is));
    PetscCheck(is && nat > 0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "DMDA %" PetscInt_FMT "D: local-to-local basic %d, global-to-local native operations %" PetscInt_FMT, dim, (int)is, nat);
  }
  PetscCall(VecDestroy(&g));
  PetscCall(VecDestroy(&l));
  PetscCall(VecDestroy(&l2));
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

/* A parallel VecScatter (y[j] = x[(j + 3) mod N], across ranks; its type from -sf_type),
   copied and remapped on every rank to read each rank's x in reverse order; the copy's
   result checked value by value against what the remap means. */
static PetscErrorCode ltol_remap(PetscInt *bad)
{
  const PetscInt nloc = 5;
  PetscMPIInt    rank, size;
  PetscInt       N, lo, i, *from, *to, tomap[5], nat, nbasic;
  Vec            x, y;
  IS             isx, isy;
  VecScatter     sc, copy;
  PetscSFType    t0, t1;
  PetscBool      is;
  const PetscScalar *ya;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  N  = nloc * size;
  lo = nloc * rank;
  PetscCall(VecCreateMPI(PETSC_COMM_WORLD, nloc, N, &x));
  PetscCall(VecDuplicate(x, &y));
  for (i = 0; i < nloc; i++) PetscCall(VecSetValue(x, lo + i, (PetscScalar)(lo + i + 1), INSERT_VALUES));
  PetscCall(VecAssemblyBegin(x));
  PetscCall(VecAssemblyEnd(x));
  PetscCall(PetscMalloc2(nloc, &from, nloc, &to));
  for (i = 0; i < nloc; i++) from[i] = (lo + i + 3) % N, to[i] = lo + i;
  PetscCall(ISCreateGeneral(PETSC_COMM_SELF, nloc, from, PETSC_COPY_VALUES, &isx));
  PetscCall(ISCreateGeneral(PETSC_COMM_SELF, nloc, to, PETSC_COPY_VALUES, &isy));
  PetscCall(VecScatterCreate(x, isx, y, isy, &sc));
  PetscCall(VecScatterCopy(sc, &copy));
  for (i = 0; i < nloc; i++) tomap[i] = nloc - 1 - i;
  PetscCall(VecScatterRemap(copy, tomap, NULL));
  PetscCall(VecSet(y, -1.0));
  PetscCall(VecScatterBegin(copy, x, y, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(copy, x, y, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecGetArrayRead(y, &ya));
  for (i = 0; i < nloc; i++) {
    PetscInt src = from[i], owner = src / nloc, k = src % nloc; /* x's local entry k of owner, remapped */
    *bad += ya[i] != (PetscScalar)(owner * nloc + (nloc - 1 - k) + 1);
  }
  PetscCall(VecRestoreArrayRead(y, &ya));
  /* The original still scatters as created. */
  PetscCall(VecScatterBegin(sc, x, y, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(sc, x, y, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecGetArrayRead(y, &ya));
  for (i = 0; i < nloc; i++) *bad += ya[i] != (PetscScalar)(from[i] + 1);
  PetscCall(VecRestoreArrayRead(y, &ya));
  /* Through the plugin: the scatter is sparsecomm, its remapped copy PETSc's basic. */
  PetscCall(PetscSFGetType(sc, &t0));
  PetscCall(PetscSFGetType(copy, &t1));
  PetscCall(PetscInfo(copy, "VecScatter of type %s, its copy of type %s\n", t0, t1));
  PetscCall(counts(sc, &nat, &nbasic));
  PetscCall(PetscObjectTypeCompare((PetscObject)copy, PETSCSFBASIC, &is));
  PetscCheck(nat < 0 || is, PETSC_COMM_SELF, PETSC_ERR_PLIB, "the copy of a sparsecomm VecScatter is of type %s, not basic", t1);
  PetscCall(PetscFree2(from, to));
  PetscCall(ISDestroy(&isx));
  PetscCall(ISDestroy(&isy));
  PetscCall(VecScatterDestroy(&sc));
  PetscCall(VecScatterDestroy(&copy));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscFunctionReturn(0);
}

static PetscErrorCode test_ltol(void)
{
  PetscInt  bad = 0;
  PetscReal sum = 0;

  PetscFunctionBeginUser;
  PetscCall(ltol_dmda(1, 1, 1, DM_BOUNDARY_NONE, &bad, &sum)); /* ex7 -dof 1 -stencil_width 1 */
  PetscCall(ltol_dmda(2, 3, 2, DM_BOUNDARY_PERIODIC, &bad, &sum));
  PetscCall(ltol_dmda(3, 2, 1, DM_BOUNDARY_NONE, &bad, &sum));
  {
    PetscInt  all = 0;
    PetscReal allsum = 0;
    PetscCallMPI(MPI_Allreduce(&sum, &allsum, 1, MPIU_REAL, MPIU_SUM, PETSC_COMM_WORLD));
    PetscCall(result_real("ltol_dmda_local_sum", allsum));
    PetscCallMPI(MPI_Allreduce(&bad, &all, 1, MPIU_INT, MPI_SUM, PETSC_COMM_WORLD));
    PetscCall(result_int("ltol_dmda_mismatches", all));
  }
  bad = 0;
  PetscCall(ltol_remap(&bad));
  {
    PetscInt all = 0;
    PetscCallMPI(MPI_Allreduce(&bad, &all, 1, MPIU_INT, MPI_SUM, PETSC_COMM_WORLD));
    PetscCall(result_int("ltol_remap_mismatches", all));
  }
  PetscFunctionReturn(0);
}

/* Each rank: 4 roots and 2 leaves, at locations 0 and 1, naming roots 1 and 2 of the next
   rank; rank 1's second leaf made bad as -bad says. */
static PetscErrorCode test_badgraph(void)
{
  PetscMPIInt  rank, size;
  PetscSF      sf;
  PetscSFNode  remote[2];
  PetscInt     local[2] = {0, 1}, wrong = 0, all = 0, i;
  PetscScalar  root[4], leaf[2] = {-1, -1};
  char         bad[16] = "none";
  PetscBool    is;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-bad", bad, sizeof bad, NULL));
  if (rank == 1) {
    char      other[64];
    PetscBool set = PETSC_FALSE;
    PetscCall(PetscOptionsGetString(NULL, NULL, "-rank1_backend", other, sizeof other, &set));
    if (set) PetscCall(PetscOptionsSetValue(NULL, "-sf_sparsecomm_backend", other));
  }
  for (i = 0; i < 2; i++) remote[i].rank = (rank + 1) % size, remote[i].index = i + 1;
  if (rank == 1 % size) {
    PetscCall(PetscStrcmp(bad, "index", &is));
    if (is) remote[1].index = 4 + 100;
    PetscCall(PetscStrcmp(bad, "negative", &is));
    if (is) remote[1].index = -1;
    PetscCall(PetscStrcmp(bad, "leaf", &is));
    if (is) local[1] = -1;
    PetscCall(PetscStrcmp(bad, "rank", &is));
    if (is) remote[1].rank = size + 3;
  }
  for (i = 0; i < 4; i++) root[i] = 10 * rank + i;
  PetscCall(PetscSFCreate(PETSC_COMM_WORLD, &sf));
  PetscCall(PetscSFSetFromOptions(sf));
  PetscCall(PetscSFSetGraph(sf, 4, 2, local, PETSC_COPY_VALUES, remote, PETSC_COPY_VALUES));
  PetscCall(PetscSFSetUp(sf));
  PetscCall(PetscSFBcastBegin(sf, MPIU_SCALAR, root, leaf, MPI_REPLACE));
  PetscCall(PetscSFBcastEnd(sf, MPIU_SCALAR, root, leaf, MPI_REPLACE));
  for (i = 0; i < 2; i++) wrong += leaf[i] != (PetscScalar)(10 * ((rank + 1) % size) + i + 1);
  PetscCallMPI(MPI_Allreduce(&wrong, &all, 1, MPIU_INT, MPI_SUM, PETSC_COMM_WORLD));
  PetscCall(PetscSFDestroy(&sf));
  PetscCall(result_int("badgraph_wrong", all));
  PetscFunctionReturn(0);
}

static PetscErrorCode run_tests(const char *test)
{
  PetscBool all;

  PetscFunctionBeginUser;
  PetscCall(PetscStrcmp(test, "all", &all));
#define RUN(name, call) \
  do { \
    PetscBool is; \
    PetscCall(PetscStrcmp(test, name, &is)); \
    if (all || is) PetscCall(call); \
  } while (0)
  RUN("sf", test_sf());
  RUN("dmda2d", solve("dmda2d", 2, 1, NULL));
  RUN("dmda3d", solve("dmda3d", 3, 3, NULL));
  RUN("asm", solve("asm", 2, 1, PCASM));
  RUN("gasm", solve("gasm", 2, 1, PCGASM));
  RUN("transpose", test_transpose());
  RUN("ghost", test_ghost());
  RUN("ltol", test_ltol());
#undef RUN
  PetscCall(PetscStrcmp(test, "badgraph", &all));
  if (all) PetscCall(test_badgraph());
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  char           test[32] = "all";
  PetscErrorCode failed;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-test", test, sizeof test, NULL));
  /* An error returned here (PETSc has printed it) ends the program as an application would:
   * finalize and exit non-zero. PETSc's PetscCall in main would MPI_Abort on MPI_COMM_SELF,
   * and the launcher would kill the other ranks before they report: the error tests need every
   * rank's own exit to show that the plugin raised the error on every rank. An error raised on
   * some ranks only leaves the others in a collective, and the test's time limit fails it. */
  failed = run_tests(test);
  PetscCall(PetscFinalize());
  return failed ? 1 : 0;
}
