#pragma once
// The environment, read into the values the library takes (internal; the public entry is
// sparsecomm/interop/environment.hpp's apply_environment()).
#include "comm/shm_channel.hpp"
#include "core/memory.hpp"
#include "sparsecomm/comm/messages.hpp"
#include "sparsecomm/comm/plan/model.hpp"
#include "sparsecomm/comm/sdde.hpp"
#include "sparsecomm/interop/environment.hpp"

namespace sparsecomm::detail {

/// Every library-wide setting the environment gives, as the values the layers take.
struct Environment {
  MemoryLimit memory;    ///< SPARSECOMM_MEMORY_LIMIT
  SddeOptions sdde;      ///< SPARSECOMM_SDDE_WINDOW, _SDDE_NODE_EXCHANGE, _CHECK_COLLECTIVE_ARGS
  ModelSettings model;   ///< SPARSECOMM_MODEL, XDG_CACHE_HOME / HOME, SPARSECOMM_MODEL_TAG and transports, SPARSECOMM_TUNE_CACHE
  SmpiMessageCost smpi;  ///< SPARSECOMM_SMPI_MSG_COST
#ifndef SPARSECOMM_SMPI
  ShmSettings shm;  ///< SPARSECOMM_SHM_PATIENCE, OMPI_MCA_mpi_yield_when_idle, the local rank count
#endif
};

/// Local: the environment as it is now (a bad value carried as its setting's error).
Environment read_environment();
/// Local: makes `env` the process's defaults (what apply_environment() does with the
/// environment read).
void apply(const Environment& env);

}  // namespace sparsecomm::detail
