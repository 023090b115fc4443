#pragma once
// The library's environment variables (docs/environment.md, "The library"), read in one
// place. Inside, the library takes every setting as a value — SddeOptions, ModelSettings,
// the memory limit, the shared-memory waits' patience, SMPI's message cost — with its own
// constant as the default; no code under core/ or comm/ reads the environment. The entry
// points read it here and make what they read the process's defaults: the programs (at
// start), the C API (at each call that creates or exchanges: a variable set between two
// calls applies to the second), the PMPI layer, the Hypre hook and the PETSc plugin.
//
// A C++ program that calls the library directly reads its variables by calling
// apply_environment() once after MPI_Init (and again after changing one); without that it
// gets the library's defaults — no cache of the measured model on disk among them — or
// what it passes itself (Sdde's options, a model file, ...).
namespace sparsecomm {

/// Local (no communication; every rank calls it). Reads SPARSECOMM_MEMORY_LIMIT,
/// SPARSECOMM_SDDE_WINDOW, SPARSECOMM_SDDE_NODE_EXCHANGE, SPARSECOMM_CHECK_COLLECTIVE_ARGS,
/// SPARSECOMM_MODEL, the model cache's directory ($XDG_CACHE_HOME or $HOME) and network tag,
/// SPARSECOMM_SHM_PATIENCE with the launcher's word on the node (Open MPI's
/// mpi_yield_when_idle, the local rank count) and SPARSECOMM_SMPI_MSG_COST, and makes them
/// the defaults of every later call. Never throws for a bad value: the collective call that
/// uses it raises it, on every rank alike.
void apply_environment();

}  // namespace sparsecomm
