// The PetscSF type "sparsecomm" (include/sparsecomm/interop/petsc/petscsf_sparsecomm.h).
//
// A star forest (PETSc's communication graph: every leaf names one root, as (rank, index))
// becomes a halo Pattern the way PETSc's own MatMult builds its lvec: the distinct remote
// roots this rank's leaves reference, sorted by (rank, index), are its ghost slots;
// Pattern::from_ghosts finds, through our SDDE, which of its roots every rank needs. Then
//   Bcast  (root -> leaf): the plan carries roots into the ghost slots; each leaf takes its
//                          slot's value with the op;
//   Reduce (leaf -> root): the leaves combine into their slots (the op, first leaf copied),
//                          the reverse plan carries the slots back to their owners, which
//                          combine them into the roots.
// Leaves that reference this rank's own roots never leave it (a local loop). One pattern
// per star forest, set up once; plans per (direction, unit size), the scalar unit of a
// VecScatter built at set-up, others on first use (Bcast and Reduce are collective).
//
// What is not handled natively goes to an internal PetscSF of type basic with the same
// graph, through its own operation table, so PETSc's behaviour is kept exactly: that is the
// rule for interposition code (it never guesses). See is_native() for the exact set.
#include "sparsecomm/interop/petsc/petscsf_sparsecomm.h"

#include <petsc/private/sfimpl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/comm/sdde.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "sparsecomm/interop/environment.hpp"
#include "sparsecomm/interop/petsc/petsc_interop.hpp"
#include "guard.hpp"
#include "comm/plan/tune.hpp"
#include "interop/common/pipeline.hpp"
#include "core/mpi_datatype.hpp"

namespace sparsecomm::petsc {
namespace {

PetscLogEvent ev_setup = 0, ev_start = 0, ev_finish = 0, ev_local = 0;

enum class OpKind { replace, sum, prod, max, min };
enum class Base { bytes, f64, f32, i32, i64 };

// A unit PETSc passes, as the native path sees it: `count` values of a base type.
struct Unit {
  Base base = Base::bytes;
  int count = 1;
  size_t bytes = 0;    // size of one unit
  int carrier = 1;     // the plan's value_bytes: 8, 4 or 1, dividing `bytes` (its width: bytes / carrier)
};

bool op_kind(MPI_Op op, OpKind* k) {
  if (op == MPI_REPLACE) *k = OpKind::replace;
  else if (op == MPI_SUM || op == MPIU_SUM) *k = OpKind::sum;
  else if (op == MPI_PROD) *k = OpKind::prod;
  else if (op == MPI_MAX || op == MPIU_MAX) *k = OpKind::max;
  else if (op == MPI_MIN || op == MPIU_MIN) *k = OpKind::min;
  else return false;
  return true;
}

// Whether (unit, op, memory types) is handled natively; everything else is delegated.
bool is_native(MPI_Datatype unit, MPI_Op op, PetscMemType m1, PetscMemType m2, Unit* u, OpKind* k) {
  if (!PetscMemTypeHost(m1) || !PetscMemTypeHost(m2)) return false;
  if (!op_kind(op, k)) return false;
  // The common units (a VecScatter of scalars, PETSc's integers) without asking MPI.
  const std::pair<MPI_Datatype, Base> named[] = {{MPI_DOUBLE, Base::f64}, {MPI_INT, Base::i32}, {MPI_FLOAT, Base::f32}};
  for (const auto& [t, b] : named)
    if (unit == t) {
      u->base = b, u->count = 1, u->bytes = b == Base::f64 ? 8 : 4, u->carrier = static_cast<int>(u->bytes);
      return true;
    }
  MPI_Datatype base = MPI_DATATYPE_NULL;
  int count = 0;
  const int64_t bytes = detail::contiguous_run(unit, &base, &count);  // -1: strided, or a base with holes
  if (bytes < 0) return false;
  if (base == MPI_DOUBLE) u->base = Base::f64;
  else if (base == MPI_FLOAT) u->base = Base::f32;
  else if (base == MPI_INT || base == MPI_INT32_T) u->base = Base::i32;
  else if (base == MPI_LONG || base == MPI_LONG_LONG || base == MPI_INT64_T) u->base = Base::i64;
  else u->base = Base::bytes;
  if (u->base == Base::bytes && *k != OpKind::replace) return false;  // arithmetic on an unknown type
  u->count = count;
  u->bytes = static_cast<size_t>(bytes);
  u->carrier = u->bytes % 8 == 0 ? 8 : u->bytes % 4 == 0 ? 4 : 1;
  return true;
}

template <class T>
void combine_typed(T* dst, const T* src, int n, OpKind k) {
  switch (k) {
    case OpKind::replace:
      for (int j = 0; j < n; ++j) dst[j] = src[j];
      break;
    case OpKind::sum:
      for (int j = 0; j < n; ++j) dst[j] += src[j];
      break;
    case OpKind::prod:
      for (int j = 0; j < n; ++j) dst[j] *= src[j];
      break;
    case OpKind::max:
      for (int j = 0; j < n; ++j) dst[j] = std::max(dst[j], src[j]);
      break;
    case OpKind::min:
      for (int j = 0; j < n; ++j) dst[j] = std::min(dst[j], src[j]);
      break;
  }
}

// dst[loc_d[i]] (op)= src[loc_s[i]] for every i, units of `u`. Loops per type so the
// compiler sees plain typed loads and stores.
void apply(const Unit& u, OpKind k, char* dst, const PetscInt* loc_d, const char* src, const PetscInt* loc_s,
           size_t n) {
  const size_t B = u.bytes;
  if (k == OpKind::replace) {
    if (B == 8) {  // a constant size: one load and store per unit, no alignment assumed
      for (size_t i = 0; i < n; ++i) std::memcpy(dst + loc_d[i] * 8, src + loc_s[i] * 8, 8);
    } else {
      for (size_t i = 0; i < n; ++i) std::memcpy(dst + loc_d[i] * B, src + loc_s[i] * B, B);
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    char* d = dst + loc_d[i] * B;
    const char* s = src + loc_s[i] * B;
    switch (u.base) {
      case Base::f64: combine_typed(reinterpret_cast<double*>(d), reinterpret_cast<const double*>(s), u.count, k); break;
      case Base::f32: combine_typed(reinterpret_cast<float*>(d), reinterpret_cast<const float*>(s), u.count, k); break;
      case Base::i32: combine_typed(reinterpret_cast<int32_t*>(d), reinterpret_cast<const int32_t*>(s), u.count, k); break;
      case Base::i64: combine_typed(reinterpret_cast<int64_t*>(d), reinterpret_cast<const int64_t*>(s), u.count, k); break;
      case Base::bytes: break;  // is_native() admits bytes for replace only
    }
  }
}

struct PlanEntry {
  std::unique_ptr<Plan> plan;
  std::vector<char> scratch;  // slot values where the plan's own buffer cannot be used in place
};

struct Pending {
  bool reduce;
  MPI_Datatype unit;
  const void* root;
  const void* leaf;
  bool delegated;
  PlanEntry* entry;  // null: no remote leaf anywhere (local only)
  Unit u;
  OpKind k;
  char* into = nullptr;  // a Bcast received straight into the leaves (Plan::start(owned, ghost))
};

struct SfData : interop::PlanSettings {  // (the -sf_sparsecomm_* options)
  SfData() : PlanSettings(interop::EntryPoint::petsc_sf) {}
  // Built by SetUp, cleared by Reset.
  PetscSF inner = nullptr;  // type basic, same graph: every delegated operation
  bool built = false, any_remote = false;
  std::unique_ptr<Locality> loc;
  Pattern pattern;  // roots -> ghost slots
  std::vector<PetscInt> rleaf, rslot;  // leaves referencing other ranks: leaf location, ghost slot
  std::vector<char> first;             // whether leaf i is its slot's first (Reduce's pre-combination)
  std::vector<PetscInt> lleaf, lroot;  // leaves referencing this rank's roots
  // Slot i feeds leaf rleaf[0] + i and nothing else (PETSc's lvec: ghosts sorted, leaves
  // contiguous): copies become one memcpy, and a Reduce sends the leaves as they lie.
  bool remote_identity = false;
  interop::PlanCache<std::tuple<int, int, bool>, PlanEntry> plans;  // (carrier, width, reverse), until Reset
  std::vector<Pending> pending;
  PetscInt native = 0, delegated = 0;
};

constexpr interop::SettingNames kNames = {"-sf_sparsecomm_backend", "-sf_sparsecomm_regions", "-sf_sparsecomm_sdde",
                                          "-sf_sparsecomm_options"};

SfData* data(PetscSF sf) { return static_cast<SfData*>(sf->data); }
MPI_Comm comm_of(PetscSF sf) { return PetscObjectComm(reinterpret_cast<PetscObject>(sf)); }

// Collective over the SF's communicator (callers: SetUp, Bcast/Reduce Begin).
PlanEntry& plan_for(PetscSF sf, const Unit& u, bool reverse) {
  SfData* d = data(sf);
  return d->plans.get(std::make_tuple(u.carrier, static_cast<int>(u.bytes / u.carrier), reverse), [&] {
    PlanOptions po;
    po.value_bytes = u.carrier;
    po.width = static_cast<int>(u.bytes / u.carrier);
    po.sdde = d->sdde;
    po.backend.set_list(d->options);  // (checked at SetUp)
    PlanEntry e;
    e.plan = make_plan(d->backend, reverse ? d->pattern.reverse() : d->pattern, *d->loc, comm_of(sf), po);
    e.scratch.resize(static_cast<size_t>(d->pattern.ghost_size()) * u.bytes + 1);
    return e;
  });
}

// PETSc's -log_view counts messages in its own MPI wrappers; our plans send through ours,
// so each execution adds what it sends and receives (deterministic, set at plan set-up).
void log_messages(const Plan& p) {
#if defined(PETSC_USE_LOG)
  const CommCounters& t = p.iteration_counts().total();
  petsc_isend_ct += static_cast<PetscLogDouble>(t.sent_intra.msgs + t.sent_inter.msgs);
  petsc_isend_len += static_cast<PetscLogDouble>(t.sent_intra.bytes + t.sent_inter.bytes);
  petsc_irecv_ct += static_cast<PetscLogDouble>(t.recv_intra.msgs + t.recv_inter.msgs);
  petsc_irecv_len += static_cast<PetscLogDouble>(t.recv_intra.bytes + t.recv_inter.bytes);
#else
  (void)p;
#endif
}

// ----------------------------------------------------------------------------- set-up

PetscErrorCode build_inner(PetscSF sf, SfData* d) {
  PetscInt nroots, nleaves;
  const PetscInt* ilocal;
  const PetscSFNode* iremote;
  PetscFunctionBegin;
  PetscCall(PetscSFGetGraph(sf, &nroots, &nleaves, &ilocal, &iremote));
  PetscCall(PetscSFCreate(comm_of(sf), &d->inner));
  PetscCall(PetscSFSetType(d->inner, PETSCSFBASIC));
  d->inner->allow_multi_leaves = sf->allow_multi_leaves;
  PetscCall(PetscSFSetGraph(d->inner, nroots, nleaves, const_cast<PetscInt*>(ilocal), PETSC_COPY_VALUES,
                            const_cast<PetscSFNode*>(iremote), PETSC_COPY_VALUES));
  PetscCall(PetscSFSetUp(d->inner));
  PetscFunctionReturn(0);
}

// The ghost slots and leaf lists of the graph; true if this rank has a remote leaf.
// InputError for a leaf at a negative location or naming a root that does not exist
// (PETSc checks these only in its debugging builds; its basic type then reads or writes
// out of bounds, and a root index past its rank's roots would name another rank's root).
bool build_lists(PetscSF sf, SfData* d, const RowPartition& roots, std::vector<int64_t>& ghosts) {
  const int me = comm_rank(comm_of(sf));
  std::vector<int64_t> leaf_gid;
  for (PetscInt i = 0; i < sf->nleaves; ++i) {
    const PetscInt leaf = sf->mine ? sf->mine[i] : i;
    const PetscSFNode& r = sf->remote[i];
    const auto where = [&] {
      return "the PetscSF graph's leaf " + std::to_string(i) + " of " + std::to_string(sf->nleaves) + " (rank " +
             std::to_string(me) + ")";
    };
    if (leaf < 0) throw InputError(where() + " lies at location " + std::to_string(leaf) + " (negative)");
    if (r.rank < 0 || r.rank >= roots.num_parts())
      throw InputError(where() + " names rank " + std::to_string(r.rank) + ", outside [0, " +
                       std::to_string(roots.num_parts()) + ")");
    if (r.index < 0 || r.index >= roots.local_size(static_cast<int>(r.rank)))
      throw InputError(where() + " names root " + std::to_string(r.index) + " of rank " + std::to_string(r.rank) +
                       ", which has " + std::to_string(roots.local_size(static_cast<int>(r.rank))) + " roots");
    if (r.rank == me) {
      d->lleaf.push_back(leaf), d->lroot.push_back(r.index);
    } else {
      d->rleaf.push_back(leaf);
      leaf_gid.push_back(roots.begin(static_cast<int>(r.rank)) + r.index);
    }
  }
  ghosts = leaf_gid;
  std::sort(ghosts.begin(), ghosts.end());
  ghosts.erase(std::unique(ghosts.begin(), ghosts.end()), ghosts.end());
  std::vector<char> seen(ghosts.size(), 0);
  d->remote_identity = leaf_gid.size() == ghosts.size();
  for (int64_t g : leaf_gid) {
    const auto slot = static_cast<PetscInt>(std::lower_bound(ghosts.begin(), ghosts.end(), g) - ghosts.begin());
    const auto i = static_cast<PetscInt>(d->rslot.size());
    d->remote_identity = d->remote_identity && slot == i && d->rleaf[i] == d->rleaf[0] + i;
    d->rslot.push_back(slot);
    d->first.push_back(seen[slot] ? 0 : 1);
    seen[slot] = 1;
  }
  return !ghosts.empty();
}

PetscErrorCode SetUp_Sparsecomm(PetscSF sf) {
  SfData* d = data(sf);
  MPI_Comm comm = comm_of(sf);
  PetscFunctionBegin;
  PetscCall(PetscLogEventBegin(ev_setup, sf, 0, 0, 0));
  RowPartition roots;
  std::vector<int64_t> ghosts;
  int mine = 0;
  // This rank's checks, then one agreement: a bad value on one rank, or options that differ
  // between ranks (PETSc's options are per process), is the same error on every rank, none
  // left waiting in the set-up's collectives. Before PETSc's own set-up of the ranks, which
  // stops on the rank that names a rank out of range and leaves the others waiting.
  PetscCall(guard("PetscSFSetUp_Sparsecomm", [&]() -> PetscErrorCode {
    apply_environment();  // the library's variables, as the defaults of this SF's set-up
    roots = RowPartition::from_local_sizes(comm, sf->nroots);
    interop::agree_checked(comm, [&] {
      interop::validate(*d, kNames);
      mine = build_lists(sf, d, roots, ghosts) ? 1 : 0;
    }, interop::named(*d, kNames),
       "PETSc's options are per process: give every rank the same command line, PETSC_OPTIONS and options file");
    return 0;
  }));
  PetscCall(PetscSFSetUpRanks(sf, MPI_GROUP_EMPTY));  // the generic root-rank fields (PetscSFGetRootRanks)
  PetscCall(build_inner(sf, d));
  PetscCall(guard("PetscSFSetUp_Sparsecomm", [&]() -> PetscErrorCode {
    int any = 0;
    SPC_MPI(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm));
    d->any_remote = any != 0;
    if (d->any_remote) {  // an SF whose leaves are all local (PETSC_COMM_SELF scatters) needs no plan
      d->loc = std::make_unique<Locality>(Locality::parse(comm, d->regions));
      Sdde sdde(comm, *d->loc);
      d->pattern = Pattern::from_ghosts(comm, roots, ghosts, sdde, d->sdde);
      // A VecScatter's unit is known: its forward plan now, while every rank is here.
      Unit u;
      OpKind k;
      const MPI_Datatype unit = sf->vscat.unit != MPI_DATATYPE_NULL && sf->vscat.unit ? sf->vscat.unit : MPIU_SCALAR;
      if (is_native(unit, MPI_REPLACE, PETSC_MEMTYPE_HOST, PETSC_MEMTYPE_HOST, &u, &k)) plan_for(sf, u, false);
    }
    d->built = true;
    return 0;
  }));
  PetscCall(PetscLogEventEnd(ev_setup, sf, 0, 0, 0));
  PetscFunctionReturn(0);
}

PetscErrorCode Reset_Sparsecomm(PetscSF sf) {
  SfData* d = data(sf);
  PetscFunctionBegin;
  PetscCall(PetscSFDestroy(&d->inner));
  d->plans.clear();  // a plan still in flight completes in its destructor
  d->pending.clear();
  d->loc.reset();
  d->pattern = Pattern();
  d->rleaf.clear(), d->rslot.clear(), d->first.clear(), d->lleaf.clear(), d->lroot.clear();
  d->built = d->any_remote = d->remote_identity = false;
  PetscFunctionReturn(0);
}

PetscErrorCode Destroy_Sparsecomm(PetscSF sf) {
  PetscFunctionBegin;
  // Also when the star forest changes type (PetscSFSetType, Duplicate_Sparsecomm): the
  // query must not find a function that only serves this type.
  PetscCall(PetscObjectComposeFunction(reinterpret_cast<PetscObject>(sf), "SparsecommSFGetCounts_C", nullptr));
  delete data(sf);
  sf->data = nullptr;
  PetscFunctionReturn(0);
}

PetscErrorCode SetFromOptions_Sparsecomm(PetscSF sf, PetscOptionItems* PetscOptionsObject) {
  SfData* d = data(sf);
  char buf[256];
  PetscBool set = PETSC_FALSE;
  const std::tuple<const char*, const char*, std::string*> options[] = {
      {kNames.backend, "sparsecomm halo backend: auto, or one `sparsecomm backends` lists", &d->backend},
      {kNames.regions, "locality regions: node, ppn:k, ...", &d->regions},
      {kNames.sdde, "SDDE strategy that builds the pattern (nbx, personalized, rma, locality_*)", &d->sdde},
      {kNames.options, "the backend's own options, key=value,... (`sparsecomm backends` lists them; auto: race=N, ...)",
       &d->options}};
  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "PetscSF sparsecomm options");
  for (const auto& [name, help, value] : options) {
    PetscCall(PetscOptionsString(name, help, "SparsecommPetscInitialize", value->c_str(), buf, sizeof buf, &set));
    if (set) *value = buf;
  }
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

PetscErrorCode View_Sparsecomm(PetscSF sf, PetscViewer v) {
  SfData* d = data(sf);
  PetscBool ascii = PETSC_FALSE;
  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(v), PETSCVIEWERASCII, &ascii));
  if (!ascii) PetscFunctionReturn(0);
  PetscCall(PetscViewerASCIIPrintf(v, "  sparsecomm: backend %s, regions %s, SDDE %s\n", d->backend.c_str(),
                                   d->regions.c_str(), d->sdde.c_str()));
  if (!d->options.empty()) PetscCall(PetscViewerASCIIPrintf(v, "  sparsecomm: backend options %s\n", d->options.c_str()));
  if (!sf->setupcalled || !d->built) PetscFunctionReturn(0);
  if (!d->any_remote) PetscCall(PetscViewerASCIIPrintf(v, "  sparsecomm: every leaf is local (no plan)\n"));
  PetscCall(PetscViewerASCIIPushSynchronized(v));
  for (const auto& [key, slot] : d->plans.slots()) {
    const CommCounters& t = slot.entry.plan->iteration_counts().total();
    PetscCall(PetscViewerASCIISynchronizedPrintf(
        v, "  [%d] %s plan (%s, unit %d B): sends %lld intra-region + %lld inter-region messages (%lld B) per operation\n",
        comm_rank(comm_of(sf)), std::get<2>(key) ? "reduce" : "bcast", slot.entry.plan->name().c_str(),
        std::get<0>(key) * std::get<1>(key), static_cast<long long>(t.sent_intra.msgs),
        static_cast<long long>(t.sent_inter.msgs), static_cast<long long>(t.sent_intra.bytes + t.sent_inter.bytes)));
    // auto with tune=measure: what it tried, their medians and the winner (agreed figures).
    if (const std::string tune = detail::tune_summary(*slot.entry.plan); !tune.empty())
      PetscCall(PetscViewerASCIISynchronizedPrintf(v, "  [%d] %s plan %s\n", comm_rank(comm_of(sf)),
                                                   std::get<2>(key) ? "reduce" : "bcast", tune.c_str()));
  }
  PetscCall(PetscViewerASCIISynchronizedPrintf(v, "  [%d] operations: %" PetscInt_FMT " native, %" PetscInt_FMT " delegated to basic\n",
                                               comm_rank(comm_of(sf)), d->native, d->delegated));
  PetscCall(PetscViewerFlush(v));
  PetscCall(PetscViewerASCIIPopSynchronized(v));
  PetscFunctionReturn(0);
}

PetscErrorCode Duplicate_Sparsecomm(PetscSF sf, PetscSFDuplicateOption opt, PetscSF newsf) {
  PetscFunctionBegin;
  // A copy of a VecScatter with its graph is what VecScatterCopy makes, and PETSc makes
  // such copies to remap their roots: DMDA's local-to-local scatter (DMLocalToLocal) is a
  // copy of its global-to-local scatter whose roots VecScatterRemap moves into the ghosted
  // local vector; MatDuplicate copies a matrix's Mvctx the same way. VecScatterRemap
  // accepts basic and neighbor star forests only, by type name, and edits basic's own
  // data; any other type gets PETSC_ERR_SUP, and only on the ranks whose map is not the
  // identity (a DMDA rank without a ghost to its left has none): those leave, the others
  // enter the exchange and wait for them. A remap cannot be seen coming nor followed from
  // here, so the copy is PETSc's basic star forest, unchanged. The test (from_n is the
  // local size VecScatterCreate recorded, -1 on any other star forest) reads values that
  // PetscSFDuplicate already copied and that are alike on every rank, so every rank takes
  // the same type.
  if (opt == PETSCSF_DUPLICATE_GRAPH && sf->vscat.from_n >= 0) {
    PetscCall(PetscSFSetType(newsf, PETSCSFBASIC));
    PetscFunctionReturn(0);
  }
  SfData *d = data(sf), *n = data(newsf);
  static_cast<interop::PlanSettings&>(*n) = *d;
  PetscFunctionReturn(0);
}

PetscErrorCode GetLeafRanks_Sparsecomm(PetscSF sf, PetscInt* n, const PetscMPIInt** ranks, const PetscInt** offset,
                                       const PetscInt** loc) {
  PetscFunctionBegin;
  PetscCall(PetscSFGetLeafRanks(data(sf)->inner, n, ranks, offset, loc));
  PetscFunctionReturn(0);
}

// ------------------------------------------------------------------------ operations

// Begin of a Bcast (reduce = false) or Reduce: native or delegated, recorded for its End.
PetscErrorCode begin(PetscSF sf, bool reduce, MPI_Datatype unit, PetscMemType rm, const void* root, PetscMemType lm,
                     const void* leaf, MPI_Op op) {
  SfData* d = data(sf);
  Pending p{reduce, unit, root, leaf, true, nullptr, Unit{}, OpKind::replace};
  PetscFunctionBegin;
  if (is_native(unit, op, rm, lm, &p.u, &p.k)) {
    PetscCall(guard("PetscSF sparsecomm", [&]() -> PetscErrorCode {
      if (d->any_remote) p.entry = &plan_for(sf, p.u, reduce);
      p.delegated = p.entry && p.entry->plan->active();  // busy with an earlier operation
      return 0;
    }));
  }
  if (p.delegated) {
    ++d->delegated;
    if (reduce) PetscCall(d->inner->ops->ReduceBegin(d->inner, unit, lm, leaf, rm, const_cast<void*>(root), op));
    else PetscCall(d->inner->ops->BcastBegin(d->inner, unit, rm, root, lm, const_cast<void*>(leaf), op));
    d->pending.push_back(p);
    PetscFunctionReturn(0);
  }
  ++d->native;
  const size_t B = p.u.bytes;
  PetscCall(PetscLogEventBegin(ev_start, sf, 0, 0, 0));
  PetscCall(guard("PetscSF sparsecomm begin", [&]() -> PetscErrorCode {
    if (!p.entry) return 0;
    Plan& plan = *p.entry->plan;
    if (!reduce && p.k == OpKind::replace && d->remote_identity && plan.receives_in_ghost_order()) {
      // PETSc's lvec: the slots are the leaves [rleaf[0], rleaf[0] + n), received in place
      // where the backend can (no unpack at all), copied once otherwise.
      p.into = static_cast<char*>(const_cast<void*>(leaf)) + (d->rleaf.empty() ? 0 : d->rleaf[0]) * B;
      plan.start(root, static_cast<void*>(p.into));
    } else if (!reduce) {
      plan.start(root);
    } else {
      const char* src = static_cast<const char*>(leaf);
      if (d->remote_identity) {  // the slots are the leaves as they lie: the plan packs them
        plan.start(static_cast<const void*>(src + (d->rleaf.empty() ? 0 : d->rleaf[0]) * B));
        log_messages(plan);
        return 0;
      }
      // The leaves combine into their ghost slots, straight in the send buffer when the
      // reverse plan sends slots in order.
      const bool in_place = plan.sends_in_owned_order();
      char* area = in_place ? static_cast<char*>(plan.send_area()) : p.entry->scratch.data();
      for (size_t i = 0; i < d->rleaf.size(); ++i) {
        char* dst = area + d->rslot[i] * B;
        if (d->first[i]) std::memcpy(dst, src + d->rleaf[i] * B, B);
        else apply(p.u, p.k, area, &d->rslot[i], src, &d->rleaf[i], 1);
      }
      if (in_place) plan.start();
      else plan.start(static_cast<const void*>(area));
    }
    log_messages(plan);
    return 0;
  }));
  PetscCall(PetscLogEventEnd(ev_start, sf, 0, 0, 0));
  // The local leaves while the messages travel.
  if (d->lleaf.empty()) {
    p.delegated = false;
    d->pending.push_back(p);
    PetscFunctionReturn(0);
  }
  PetscCall(PetscLogEventBegin(ev_local, sf, 0, 0, 0));
  if (reduce) apply(p.u, p.k, static_cast<char*>(const_cast<void*>(root)), d->lroot.data(), static_cast<const char*>(leaf), d->lleaf.data(), d->lleaf.size());
  else apply(p.u, p.k, static_cast<char*>(const_cast<void*>(leaf)), d->lleaf.data(), static_cast<const char*>(root), d->lroot.data(), d->lleaf.size());
  PetscCall(PetscLogEventEnd(ev_local, sf, 0, 0, 0));
  p.delegated = false;
  d->pending.push_back(p);
  PetscFunctionReturn(0);
}

PetscErrorCode end(PetscSF sf, bool reduce, MPI_Datatype unit, const void* root, const void* leaf, MPI_Op op) {
  SfData* d = data(sf);
  PetscFunctionBegin;
  auto it = std::find_if(d->pending.begin(), d->pending.end(), [&](const Pending& q) {
    return q.reduce == reduce && q.unit == unit && q.root == root && q.leaf == leaf;
  });
  PetscCheck(it != d->pending.end(), PETSC_COMM_SELF, PETSC_ERR_ARG_WRONGSTATE,
             "PetscSF sparsecomm: %s end without a matching begin (same unit, root and leaf data)", reduce ? "Reduce" : "Bcast");
  const Pending p = *it;
  d->pending.erase(it);
  if (p.delegated) {
    if (reduce) PetscCall(d->inner->ops->ReduceEnd(d->inner, unit, leaf, const_cast<void*>(root), op));
    else PetscCall(d->inner->ops->BcastEnd(d->inner, unit, root, const_cast<void*>(leaf), op));
    PetscFunctionReturn(0);
  }
  if (!p.entry) PetscFunctionReturn(0);
  PetscCall(PetscLogEventBegin(ev_finish, sf, 0, 0, 0));
  PetscCall(guard("PetscSF sparsecomm end", [&]() -> PetscErrorCode {
    Plan& plan = *p.entry->plan;
    if (p.into) {
      plan.wait(static_cast<void*>(p.into));
      return 0;
    }
    const auto* buf = static_cast<const char*>(plan.wait());  // in the plan's receive order
    if (!reduce) {
      // Receive order is slot order (the ghosts were numbered in arrival order).
      char* dst = static_cast<char*>(const_cast<void*>(leaf));
      if (plan.receives_in_ghost_order() && d->remote_identity && p.k == OpKind::replace) {
        if (!d->rleaf.empty()) std::memcpy(dst + d->rleaf[0] * p.u.bytes, buf, d->rleaf.size() * p.u.bytes);
      } else if (plan.receives_in_ghost_order()) {
        apply(p.u, p.k, dst, d->rleaf.data(), buf, d->rslot.data(), d->rleaf.size());
      } else {
        // Not the case for from_ghosts patterns; kept correct should a backend reorder.
        const auto& idx = plan.pattern().recv().indices;
        char* slots = p.entry->scratch.data();
        for (size_t k = 0; k < idx.size(); ++k) std::memcpy(slots + idx[k] * p.u.bytes, buf + k * p.u.bytes, p.u.bytes);
        apply(p.u, p.k, dst, d->rleaf.data(), slots, d->rslot.data(), d->rleaf.size());
      }
    } else {
      const auto& idx = plan.pattern().recv().indices;  // root index of each received value
      char* dst = static_cast<char*>(const_cast<void*>(root));
      for (size_t k = 0; k < idx.size(); ++k) {
        const PetscInt r = idx[k], s = static_cast<PetscInt>(k);
        apply(p.u, p.k, dst, &r, buf, &s, 1);
      }
    }
    return 0;
  }));
  PetscCall(PetscLogEventEnd(ev_finish, sf, 0, 0, 0));
  PetscFunctionReturn(0);
}

PetscErrorCode BcastBegin_Sparsecomm(PetscSF sf, MPI_Datatype unit, PetscMemType rm, const void* root, PetscMemType lm,
                                     void* leaf, MPI_Op op) {
  return begin(sf, false, unit, rm, root, lm, leaf, op);
}
PetscErrorCode BcastEnd_Sparsecomm(PetscSF sf, MPI_Datatype unit, const void* root, void* leaf, MPI_Op op) {
  return end(sf, false, unit, root, leaf, op);
}
PetscErrorCode ReduceBegin_Sparsecomm(PetscSF sf, MPI_Datatype unit, PetscMemType lm, const void* leaf, PetscMemType rm,
                                      void* root, MPI_Op op) {
  return begin(sf, true, unit, rm, root, lm, leaf, op);
}
PetscErrorCode ReduceEnd_Sparsecomm(PetscSF sf, MPI_Datatype unit, const void* leaf, void* root, MPI_Op op) {
  return end(sf, true, unit, root, leaf, op);
}
// FetchAndOp: always PETSc's basic implementation.
PetscErrorCode FetchAndOpBegin_Sparsecomm(PetscSF sf, MPI_Datatype unit, PetscMemType rm, void* root, PetscMemType lm,
                                          const void* leaf, void* leafupdate, MPI_Op op) {
  SfData* d = data(sf);
  ++d->delegated;
  return d->inner->ops->FetchAndOpBegin(d->inner, unit, rm, root, lm, leaf, leafupdate, op);
}
PetscErrorCode FetchAndOpEnd_Sparsecomm(PetscSF sf, MPI_Datatype unit, void* root, const void* leaf, void* leafupdate,
                                        MPI_Op op) {
  SfData* d = data(sf);
  return d->inner->ops->FetchAndOpEnd(d->inner, unit, root, leaf, leafupdate, op);
}

// Reachable without linking this library (PetscObjectQueryFunction(sf,
// "SparsecommSFGetCounts_C", ...)): how a program loaded with -dll_append, or a test, sees
// which operations ran natively.
PetscErrorCode GetCounts_Sparsecomm(PetscSF sf, PetscInt* native, PetscInt* delegated) {
  PetscBool is = PETSC_FALSE;
  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(sf), PETSCSFSPARSECOMM, &is));
  PetscCheck(is, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "SparsecommSFGetCounts: the PetscSF is not of type sparsecomm");
  if (native) *native = data(sf)->native;
  if (delegated) *delegated = data(sf)->delegated;
  PetscFunctionReturn(0);
}

PetscErrorCode Create_Sparsecomm(PetscSF sf) {
  PetscFunctionBegin;
  PetscCall(PetscObjectComposeFunction(reinterpret_cast<PetscObject>(sf), "SparsecommSFGetCounts_C", GetCounts_Sparsecomm));
  sf->ops->SetUp = SetUp_Sparsecomm;
  sf->ops->Reset = Reset_Sparsecomm;
  sf->ops->Destroy = Destroy_Sparsecomm;
  sf->ops->SetFromOptions = SetFromOptions_Sparsecomm;
  sf->ops->View = View_Sparsecomm;
  sf->ops->Duplicate = Duplicate_Sparsecomm;
  sf->ops->BcastBegin = BcastBegin_Sparsecomm;
  sf->ops->BcastEnd = BcastEnd_Sparsecomm;
  sf->ops->ReduceBegin = ReduceBegin_Sparsecomm;
  sf->ops->ReduceEnd = ReduceEnd_Sparsecomm;
  sf->ops->FetchAndOpBegin = FetchAndOpBegin_Sparsecomm;
  sf->ops->FetchAndOpEnd = FetchAndOpEnd_Sparsecomm;
  sf->ops->GetLeafRanks = GetLeafRanks_Sparsecomm;
  // GetRootRanks, GetGraph, CreateLocalSF, CreateEmbedded*SF: PETSc's generic versions,
  // which read the graph and the root-rank fields SetUp fills (PetscSFSetUpRanks).
  sf->data = new SfData();
  PetscFunctionReturn(0);
}

}  // namespace
}  // namespace sparsecomm::petsc

PetscErrorCode SparsecommPetscInitialize(void) {
  static bool done = false;
  PetscFunctionBegin;
  if (done) PetscFunctionReturn(0);
  PetscCall(PetscSFRegister(PETSCSFSPARSECOMM, sparsecomm::petsc::Create_Sparsecomm));
  PetscCall(PetscLogEventRegister("SFscSetUp", PETSCSF_CLASSID, &sparsecomm::petsc::ev_setup));
  PetscCall(PetscLogEventRegister("SFscStart", PETSCSF_CLASSID, &sparsecomm::petsc::ev_start));
  PetscCall(PetscLogEventRegister("SFscLocal", PETSCSF_CLASSID, &sparsecomm::petsc::ev_local));
  PetscCall(PetscLogEventRegister("SFscFinish", PETSCSF_CLASSID, &sparsecomm::petsc::ev_finish));
  done = true;
  PetscFunctionReturn(0);
}

PetscErrorCode PetscDLLibraryRegister_sparsecomm_petsc(void) { return SparsecommPetscInitialize(); }

PetscErrorCode SparsecommSFGetCounts(PetscSF sf, PetscInt* native, PetscInt* delegated) {
  return sparsecomm::petsc::GetCounts_Sparsecomm(sf, native, delegated);
}

PetscErrorCode SparsecommMatAttach(Mat A) { return sparsecomm::petsc::attach(A); }
