#pragma once
// sparsecomm's public C++ API in one include: matrices (DistCsr, readers, generators,
// orderings), locality and the SDDE, halo patterns and Plans with every registered backend,
// allgather-shaped GatherPlans, plan statistics, and the distributed SpMV kernel.
//
//   #include <sparsecomm/sparsecomm.hpp>
//   sparsecomm::apply_environment();  // after MPI_Init: the SPARSECOMM_* variables (docs/environment.md)
//   auto a = sparsecomm::read_matrix_market(comm, path);
//   sparsecomm::Locality loc = sparsecomm::Locality::parse(comm, "node");
//   sparsecomm::Sdde sdde(comm, loc);
//   sparsecomm::DistSpmv spmv(a, sparsecomm::make_plan("p2p", sparsecomm::pattern_from_matrix(a, sdde), loc, comm));
//
// The PETSc and Hypre adapters need those libraries' headers and are included on their own:
// <sparsecomm/interop/petsc/petsc_interop.hpp>, <sparsecomm/interop/hypre/hypre_interop.hpp>.
// The C API is <sparsecomm.h>.
#include "sparsecomm/version.hpp"
#include "sparsecomm/core/error.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "sparsecomm/core/row_partition.hpp"
#include "sparsecomm/core/stats.hpp"
#include "sparsecomm/core/triplet.hpp"
#include "sparsecomm/matrix/data_path.hpp"
#include "sparsecomm/matrix/dist_csr.hpp"
#include "sparsecomm/matrix/generators.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"
#include "sparsecomm/matrix/ordering.hpp"
#include "sparsecomm/comm/combining.hpp"
#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/comm/messages.hpp"
#include "sparsecomm/comm/pattern.hpp"
#include "sparsecomm/comm/sdde.hpp"
#include "sparsecomm/comm/topology.hpp"
#include "sparsecomm/comm/plan/backend_hooks.hpp"
#include "sparsecomm/comm/plan/backend_options.hpp"
#include "sparsecomm/comm/plan/combining_options.hpp"
#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/plan/model.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/comm/virt/plan_stats.hpp"
#include "sparsecomm/kernels/dist_spmv.hpp"
#include "sparsecomm/kernels/ghost.hpp"
#include "sparsecomm/kernels/halo_pattern.hpp"
#include "sparsecomm/kernels/spmm.hpp"
#include "sparsecomm/interop/environment.hpp"
