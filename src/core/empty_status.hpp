#pragma once
// MPI's empty status (internal), shared by the C API's SPC_Wait and the PMPI layer's
// completion calls.
#include <mpi.h>

namespace sparsecomm::detail {

/// Sets *st to MPI's empty status (what completing an inactive or null request returns):
/// any source, any tag, no error, no elements, not cancelled. MPI_STATUS_IGNORE: nothing.
/// `set_elements` / `set_cancelled` are MPI_Status_set_elements / _set_cancelled, or their
/// PMPI_ names for the PMPI layer, which must not go through the interposed MPI_ names.
inline void set_empty_status(MPI_Status* st, int (*set_elements)(MPI_Status*, MPI_Datatype, int),
                             int (*set_cancelled)(MPI_Status*, int)) {
  if (st == MPI_STATUS_IGNORE) return;
  st->MPI_SOURCE = MPI_ANY_SOURCE;
  st->MPI_TAG = MPI_ANY_TAG;
  st->MPI_ERROR = MPI_SUCCESS;
  set_elements(st, MPI_BYTE, 0);
  set_cancelled(st, 0);
}

}  // namespace sparsecomm::detail
