// libFuzzer target over a PetscSF graph as the sparsecomm SF type receives it, at several
// ranks (fuzz_ranks.hpp: rank 0 fuzzes, every rank runs each input). The input describes
// every rank's graph (roots, leaves, leaf locations, the (rank, index) each leaf names) and
// the backend; each rank sets its own part on a PetscSF of type sparsecomm and on one of
// type basic, and sets both up.
//
// The oracle, on every rank: set-up fails on every rank or on none (agreed: an error on
// some ranks only, or a hang, is a finding); a graph that names a rank or root that does
// not exist, or a leaf at a negative location, fails; a good graph succeeds, and then
// Bcast (MPI_REPLACE on PetscScalar, MPI_SUM on PetscInt) and Reduce (MPI_SUM on
// PetscScalar, MPI_MAX on PetscInt) leave exactly the values basic leaves (integer values:
// sums are exact in any order). A crash, a sanitizer report or a difference is a finding.
// Duplicate leaf locations are not generated: PETSc leaves their order open.
#include <mpi.h>
#include <petscsf.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fuzz_bytes.hpp"
#include "fuzz_ranks.hpp"
#include "sparsecomm/interop/petsc/petscsf_sparsecomm.h"

namespace {

using sparsecomm::fuzz::Bytes;

[[noreturn]] void finding(const char* what) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "fuzz_petsc_sf [rank %d]: %s\n", rank, what);
  std::abort();
}

const char* const kBackends[] = {"p2p", "neighbor", "aggregated_dedup", "aggregated_2step", "combined", "shm"};

struct Graph {
  PetscInt nroots = 0;
  std::vector<PetscInt> local;  // empty: contiguous leaves (ilocal NULL)
  std::vector<PetscSFNode> remote;
  PetscInt leaf_space() const {
    PetscInt n = static_cast<PetscInt>(remote.size());
    for (PetscInt l : local) n = std::max(n, l + 1);
    return n;
  }
};

// Every rank's graph from the same bytes (each rank keeps its own); `valid`: whether every
// leaf lies at a location >= 0 and names an existing rank and root.
std::vector<Graph> read_graphs(Bytes& in, int size, bool& valid) {
  std::vector<Graph> g(static_cast<size_t>(size));
  for (auto& x : g) x.nroots = in.range(0, 6);
  valid = true;
  for (int r = 0; r < size; ++r) {
    Graph& x = g[static_cast<size_t>(r)];
    const int nleaves = in.range(0, 8);
    const bool contiguous = in.byte() < 100;
    PetscInt at = in.range(0, 3), below = -1;
    for (int i = 0; i < nleaves; ++i) {
      if (!contiguous) {
        PetscInt loc = at;
        if (in.byte() >= 250) loc = below--, valid = false;  // (distinct: PETSc rejects duplicates itself)
        x.local.push_back(loc);
        at += in.range(1, 3);
      }
      PetscSFNode n;
      n.rank = in.byte() < 248 ? in.range(0, size - 1) : (in.byte() & 1 ? -1 : size);
      const bool rank_ok = n.rank >= 0 && n.rank < size;
      const PetscInt roots = rank_ok ? g[static_cast<size_t>(n.rank)].nroots : 0;
      n.index = in.byte() < 240 && roots > 0 ? in.range(0, static_cast<int>(roots) - 1) : in.range(-2, 8);
      valid = valid && rank_ok && n.index >= 0 && n.index < roots;
      x.remote.push_back(n);
    }
  }
  return g;
}

// (Leaf locations are distinct: PETSc's PetscSFSetGraph rejects duplicates itself, and
// leaves their order open where it does not check.)
PetscErrorCode make_sf(const Graph& x, const char* type, PetscSF* sf) {
  PetscFunctionBeginUser;
  PetscCall(PetscSFCreate(PETSC_COMM_WORLD, sf));
  PetscCall(PetscSFSetType(*sf, type));
  PetscCall(PetscSFSetFromOptions(*sf));
  PetscCall(PetscSFSetGraph(*sf, x.nroots, static_cast<PetscInt>(x.remote.size()),
                            x.local.empty() ? nullptr : const_cast<PetscInt*>(x.local.data()), PETSC_COPY_VALUES,
                            const_cast<PetscSFNode*>(x.remote.data()), PETSC_COPY_VALUES));
  PetscFunctionReturn(0);
}

// Bcast and Reduce on `sf`, into the arrays (sized by the caller).
PetscErrorCode exchanges(PetscSF sf, std::vector<PetscScalar>& leaf_s, std::vector<PetscInt>& leaf_i,
                         std::vector<PetscScalar>& root_s, std::vector<PetscInt>& root_i, int rank) {
  PetscFunctionBeginUser;
  std::vector<PetscScalar> rs(root_s.size());
  std::vector<PetscInt> ri(root_i.size());
  for (size_t i = 0; i < rs.size(); ++i) rs[i] = 1000.0 * rank + static_cast<double>(i), ri[i] = 100 * rank + static_cast<PetscInt>(i);
  PetscCall(PetscSFBcastBegin(sf, MPIU_SCALAR, rs.data(), leaf_s.data(), MPI_REPLACE));
  PetscCall(PetscSFBcastEnd(sf, MPIU_SCALAR, rs.data(), leaf_s.data(), MPI_REPLACE));
  PetscCall(PetscSFBcastBegin(sf, MPIU_INT, ri.data(), leaf_i.data(), MPI_SUM));
  PetscCall(PetscSFBcastEnd(sf, MPIU_INT, ri.data(), leaf_i.data(), MPI_SUM));
  std::vector<PetscScalar> ls(leaf_s.size());
  std::vector<PetscInt> li(leaf_i.size());
  for (size_t i = 0; i < ls.size(); ++i) ls[i] = 3.0 * rank + static_cast<double>(i % 5), li[i] = 7 * rank + static_cast<PetscInt>(i);
  PetscCall(PetscSFReduceBegin(sf, MPIU_SCALAR, ls.data(), root_s.data(), MPI_SUM));
  PetscCall(PetscSFReduceEnd(sf, MPIU_SCALAR, ls.data(), root_s.data(), MPI_SUM));
  PetscCall(PetscSFReduceBegin(sf, MPIU_INT, li.data(), root_i.data(), MPI_MAX));
  PetscCall(PetscSFReduceEnd(sf, MPIU_INT, li.data(), root_i.data(), MPI_MAX));
  PetscFunctionReturn(0);
}

void body(const uint8_t* data, size_t size) {
  Bytes in{data, size};
  int rank = 0, nranks = 1;
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  MPI_Comm_size(PETSC_COMM_WORLD, &nranks);
  const char* backend = kBackends[in.range(0, static_cast<int>(sizeof kBackends / sizeof kBackends[0]) - 1)];
  bool valid = true;
  const std::vector<Graph> graphs = read_graphs(in, nranks, valid);
  const Graph& mine = graphs[static_cast<size_t>(rank)];
  PetscOptionsSetValue(nullptr, "-sf_sparsecomm_backend", backend);

  PetscSF sf = nullptr;
  // PETSc's own checks in PetscSFSetGraph are local (a rank that fails them would end its
  // program): agreed here, so that no rank enters the set-up's collectives alone.
  const int graph_failed = make_sf(mine, PETSCSFSPARSECOMM, &sf) ? 1 : 0;
  int any_graph_failed = 0;
  MPI_Allreduce(&graph_failed, &any_graph_failed, 1, MPI_INT, MPI_MAX, PETSC_COMM_WORLD);
  if (any_graph_failed) {
    if (valid) finding("PetscSFSetGraph failed on a good graph");
    PetscSFDestroy(&sf);
    return;
  }
  const PetscErrorCode rc = PetscSFSetUp(sf);
  const int f = rc != 0 ? 1 : 0;
  int mine_f[2] = {f, -f}, most[2] = {0, 0};
  MPI_Allreduce(mine_f, most, 2, MPI_INT, MPI_MAX, PETSC_COMM_WORLD);
  const bool any_failed = most[0] == 1, all_failed = most[1] == -1;
  if (any_failed != all_failed) finding("set-up failed on some ranks only");
  if (!valid && !any_failed) finding("a graph naming a missing rank or root, or a negative leaf, was set up");
  if (valid && any_failed) finding("a good graph failed to set up");
  if (!any_failed) {
    const auto leaves = static_cast<size_t>(mine.leaf_space()), roots = static_cast<size_t>(mine.nroots);
    std::vector<PetscScalar> ls(leaves, -7), rs(roots, 5);
    std::vector<PetscInt> li(leaves, -7), ri(roots, 5);
    std::vector<PetscScalar> ls_ref = ls, rs_ref = rs;
    std::vector<PetscInt> li_ref = li, ri_ref = ri;
    PetscSF ref = nullptr;
    if (make_sf(mine, PETSCSFBASIC, &ref) || PetscSFSetUp(ref)) finding("basic failed on a good graph");
    if (exchanges(sf, ls, li, rs, ri, rank)) finding("an exchange failed on a good graph");
    if (exchanges(ref, ls_ref, li_ref, rs_ref, ri_ref, rank)) finding("basic's exchange failed");
    if (ls != ls_ref || li != li_ref) finding("Bcast left other leaf values than basic");
    if (rs != rs_ref || ri != ri_ref) finding("Reduce left other root values than basic");
    PetscSFDestroy(&ref);
  }
  PetscSFDestroy(&sf);
}

void finalize() { PetscFinalize(); }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // PETSc reads no libFuzzer flags as options; its signal handler would catch the crashes
  // the sanitizers and libFuzzer report.
  static char name[] = "fuzz_petsc_sf", nosig[] = "-no_signal_handler";
  static char* args[] = {name, nosig, nullptr};
  int argc = 2;
  char** argv = args;
  if (PetscInitialize(&argc, &argv, nullptr, nullptr)) std::abort();
  if (SparsecommPetscInitialize()) std::abort();
  // Errors are results here, not output ($FUZZ_VERBOSE: PETSc prints them, to read a finding).
  if (!std::getenv("FUZZ_VERBOSE")) PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
  sparsecomm::fuzz::serve_from_rank0(body, finalize);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sparsecomm::fuzz::run_on_every_rank(body, data, size);
  return 0;
}
