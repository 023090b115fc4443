#pragma once
// The sparsecomm_* MPI_Info keys a program gave a communicator, as the PMPI layer recorded
// them when it was created (MPI_Dist_graph_create(_adjacent), MPI_Comm_dup_with_info) or
// given later (MPI_Comm_set_info).
//
// Why a record of our own: MPI_Comm_get_info need not return keys the implementation does
// not use (MPI-4 section 7.4.4 lets it drop them), and MPICH 4.0 drops every user key, so
// reading them back would lose a program's settings there silently.
#include <mpi.h>

#include <map>
#include <string>

namespace sparsecomm::pmpi {

/// The keys starting with "sparsecomm_" recorded for `comm`; false if none was recorded
/// (then MPI_Comm_get_info is the only source).
bool recorded_info(MPI_Comm comm, std::map<std::string, std::string>* keys);

}  // namespace sparsecomm::pmpi
