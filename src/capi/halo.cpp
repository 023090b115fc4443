// SPC_Halo: a halo exchange from a ghost list (include/sparsecomm.h), on Pattern::from_ghosts
// and a Plan. The user's ghost order is kept: the pattern wants sorted ids, so the plan
// delivers in sorted order and wait() permutes when the user's order differs.
#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "capi_internal.hpp"
#include "comm/plan/tune.hpp"
#include "sparsecomm/comm/pattern.hpp"
#include "sparsecomm/core/row_partition.hpp"

struct SPC_Halo_s {
  std::unique_ptr<sparsecomm::Plan> plan;
  int unit = 1;                 // bytes per Plan value (esz = unit * width)
  int64_t esz = 0;              // bytes per element
  int nghost = 0;
  std::vector<int> sorted_pos;  // user ghost i is at sorted position sorted_pos[i]; empty: same order
  std::vector<unsigned char> staging;
  bool active = false;
};

namespace sparsecomm {
namespace capi {
namespace {

void halo_create(MPI_Comm comm, int nlocal, int nghost, const int64_t* gids, MPI_Datatype type, MPI_Info info,
                 SPC_Halo* out) {
  if (comm == MPI_COMM_NULL) fail(MPI_ERR_COMM, "the communicator is MPI_COMM_NULL");
  if (out) *out = SPC_HALO_NULL;
  const CommExclusive exclusive(comm, "SPC_Halo_create");
  apply_environment();  // this call's settings: a variable set since the last call applies
  Options opt;
  int64_t esz = 0;
  std::vector<int64_t> sorted;
  std::vector<int> order;  // order[k]: the user index of sorted position k
  agreed(comm, [&] {
    if (!out) fail(SPC_ERR_ARG, "SPC_Halo_create: halo is NULL");
    if (nlocal < 0 || nghost < 0) fail(SPC_ERR_ARG, "SPC_Halo_create: nlocal and nghost must be >= 0");
    if (nghost > 0 && !gids) fail(SPC_ERR_ARG, "SPC_Halo_create: ghost_gids is NULL");
    OptionSource os;
    os.info = info;
    opt = os.resolve();
    opt.complete("backend", backend_registered, backend_names);
    esz = contiguous_size(type, "type");
    order.resize(static_cast<size_t>(nghost));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return gids[a] < gids[b]; });
    for (int k = 0; k < nghost; ++k) sorted.push_back(gids[order[k]]);
    for (int k = 1; k < nghost; ++k)
      if (sorted[k] == sorted[k - 1])
        fail(SPC_ERR_ARG, "SPC_Halo_create: ghost id " + std::to_string(sorted[k]) + " is listed twice");
  });
  const RowPartition part = RowPartition::from_local_sizes(comm, nlocal);
  const Locality loc = make_locality(comm, opt.regions);
  Sdde sdde(comm, loc);
  Pattern pat;
  agreed(comm, [&] {
    try {
      pat = Pattern::from_ghosts(comm, part, sorted, sdde, opt.sdde);
    } catch (const InputError& e) {
      fail(SPC_ERR_ARG, std::string("SPC_Halo_create: ") + e.what());
    }
  });
  auto h = std::make_unique<SPC_Halo_s>();
  h->esz = esz;
  h->unit = unit_for(esz);
  h->nghost = nghost;
  PlanOptions po;
  po.value_bytes = h->unit;
  po.width = static_cast<int>(esz / h->unit);
  po.sdde = opt.sdde;
  po.backend = opt.backend_options_for(backend_names(), opt.backend, backend_option_specs);
  h->plan = make_plan(opt.backend, pat, loc, comm, po);
  bool identity = true;
  for (int k = 0; k < nghost; ++k) identity = identity && order[k] == k;
  if (!identity) {
    h->sorted_pos.resize(static_cast<size_t>(nghost));
    for (int k = 0; k < nghost; ++k) h->sorted_pos[static_cast<size_t>(order[k])] = k;
    h->staging.resize(static_cast<size_t>(nghost) * static_cast<size_t>(esz));
  }
  *out = h.release();
}

// Completes the active exchange into `ghosts` (user order), or into the staging buffer
// alone when ghosts is null (a free while active).
void halo_wait(SPC_Halo_s& h, void* ghosts) {
  if (!h.active) return;
  h.active = false;
  const bool direct = h.sorted_pos.empty() && ghosts;
  if (!direct && h.staging.empty()) h.staging.resize(std::max<size_t>(1, static_cast<size_t>(h.nghost) * h.esz));
  unsigned char* into = direct ? static_cast<unsigned char*>(ghosts) : h.staging.data();
  h.plan->wait(static_cast<void*>(into));  // as bytes: the plan's unit
  if (direct || !ghosts) return;
  auto* out = static_cast<unsigned char*>(ghosts);
  const size_t e = static_cast<size_t>(h.esz);
  for (size_t i = 0; i < h.sorted_pos.size(); ++i)
    std::memcpy(out + i * e, h.staging.data() + static_cast<size_t>(h.sorted_pos[i]) * e, e);
}

}  // namespace
}  // namespace capi
}  // namespace sparsecomm

using sparsecomm::capi::fail;
using sparsecomm::capi::guarded;

extern "C" {

int SPC_Halo_create(MPI_Comm comm, int nlocal, int nghost, const int64_t ghost_gids[], MPI_Datatype type,
                    MPI_Info info, SPC_Halo* halo) {
  return guarded([&] { sparsecomm::capi::halo_create(comm, nlocal, nghost, ghost_gids, type, info, halo); });
}

int SPC_Halo_start(SPC_Halo halo, const void* owned) {
  return guarded([&] {
    if (!halo) fail(SPC_ERR_REQUEST, "SPC_Halo_start: the halo is null");
    if (halo->active) fail(SPC_ERR_REQUEST, "SPC_Halo_start: an exchange is active (SPC_Halo_wait for it first)");
    if (!owned && halo->plan->pattern().owned_size() > 0)
      fail(MPI_ERR_BUFFER, "SPC_Halo_start: owned is NULL but other ranks need this rank's values");
    static const unsigned char nothing = 0;
    halo->plan->start(owned ? owned : static_cast<const void*>(&nothing));  // as bytes: the plan's unit
    halo->active = true;
  });
}

int SPC_Halo_wait(SPC_Halo halo, void* ghosts) {
  return guarded([&] {
    if (!halo) fail(SPC_ERR_REQUEST, "SPC_Halo_wait: the halo is null");
    if (halo->active && halo->nghost > 0 && !ghosts) fail(MPI_ERR_BUFFER, "SPC_Halo_wait: ghosts is NULL");
    sparsecomm::capi::halo_wait(*halo, ghosts);
  });
}

int SPC_Halo_free(SPC_Halo* halo) {
  return guarded([&] {
    if (!halo || !*halo) fail(SPC_ERR_REQUEST, "SPC_Halo_free: the halo is null");
    std::unique_ptr<SPC_Halo_s> h(*halo);
    *halo = SPC_HALO_NULL;
    sparsecomm::capi::halo_wait(*h, nullptr);
  });
}

int SPC_Halo_backend(SPC_Halo halo, char* name, int* resultlen) {
  return guarded([&] {
    if (!halo) fail(SPC_ERR_REQUEST, "SPC_Halo_backend: the halo is null");
    if (!name || !resultlen) fail(SPC_ERR_ARG, "SPC_Halo_backend: name or resultlen is NULL");
    // (a tuned auto plan: auto while it measures, then the backend it settled on)
    const std::string won = sparsecomm::detail::tuned_winner(*halo->plan);
    const std::string n = (won.empty() ? halo->plan->name() : won).substr(0, 63);
    std::memcpy(name, n.c_str(), n.size() + 1);
    *resultlen = static_cast<int>(n.size());
  });
}

}  // extern "C"
