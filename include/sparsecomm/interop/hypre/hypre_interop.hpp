#pragma once
// Conversion from Hypre's ParCSR matrices (built only when Hypre is found).
// Hypre's layout is the same idea as DistCsr's: diag block, offd block, sorted
// col_map_offd; we keep Hypre's row and column partitions.
#include <_hypre_parcsr_mv.h>

#include "sparsecomm/matrix/dist_csr.hpp"

namespace sparsecomm {

/// Collective over the matrix's communicator: a DistCsr with the same rows, partition and
/// entries as `a` (which must outlive nothing: the result owns its data; it refers to
/// `a`'s communicator, which must outlive the result).
DistCsr<double> from_hypre(hypre_ParCSRMatrix* a);

}  // namespace sparsecomm
