#pragma once
// The communication patterns a distributed matrix implies: where comm/ (which knows nothing
// of matrices) meets matrix/. The halo of y = A x comes from A's ghost columns; the
// block-row graph of A is what the message-combining SpMM exchanges over.
//
//   Sdde sdde(comm, loc);
//   Pattern p = pattern_from_matrix(a, sdde, "nbx");          // collective
//   auto plan = make_plan("aggregated_dedup", p, loc, comm);
#include <string>

#include "sparsecomm/comm/pattern.hpp"
#include "sparsecomm/comm/topology.hpp"
#include "sparsecomm/matrix/dist_csr.hpp"

namespace sparsecomm {

/// Collective. The SpMV halo pattern of `a`: the receive side comes from the ghost map,
/// the send side is learned through the SDDE with `strategy` (any of Sdde::strategies();
/// "rma" sends fixed-size counts first, then the id lists point to point). Ghost ids
/// requested from a rank that does not own them are an InputError on every rank.
Pattern pattern_from_matrix(const DistCsr<double>& a, Sdde& sdde, const std::string& strategy,
                            Stats* stats = nullptr);

/// Collective. The same pattern through a dense MPI_Alltoall(v) (the direct answer, used to
/// verify the SDDE strategies).
Pattern pattern_from_matrix_reference(const DistCsr<double>& a);

/// Collective. The block-row graph of a matrix as in the message-combining SpMM papers:
/// P_j -> P_i when block (i, j) of `a` has a nonzero (rank i needs rank j's rows of B).
Topology topology_from_matrix_blocks(const DistCsr<double>& a, const std::string& strategy = kDefaultSdde);

}  // namespace sparsecomm
