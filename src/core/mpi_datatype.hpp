#pragma once
// What code handed an MPI datatype by a foreign caller (the PetscSF type, the PMPI library,
// the one-node exchange, comm/node_exchange.hpp) needs to know of it: whether it is a run of
// one named type. Header-only.
#include <mpi.h>

#include <cstdint>
#include <vector>

namespace sparsecomm::detail {

/// A named datatype, or a contiguous or dup derived type over one (recursively): true, with
/// the named base type and how many of it; false for any other constructor (vector,
/// indexed, struct, resized, ...). Frees the handles MPI_Type_get_contents returns.
inline bool flatten_contiguous(MPI_Datatype t, MPI_Datatype* base, int* count) {
  int ni = 0, na = 0, nd = 0, comb = 0;
  MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
  if (comb == MPI_COMBINER_NAMED) {
    *base = t, *count = 1;
    return true;
  }
  if (comb != MPI_COMBINER_CONTIGUOUS && comb != MPI_COMBINER_DUP) return false;
  std::vector<int> ints(static_cast<size_t>(ni) + 1);
  std::vector<MPI_Aint> addrs(static_cast<size_t>(na) + 1);
  std::vector<MPI_Datatype> types(static_cast<size_t>(nd) + 1);
  MPI_Type_get_contents(t, ni, na, nd, ints.data(), addrs.data(), types.data());
  MPI_Datatype inner = types[0];
  int inner_count = 0;
  const bool ok = flatten_contiguous(inner, base, &inner_count);
  int ni2 = 0, na2 = 0, nd2 = 0, comb2 = 0;
  MPI_Type_get_envelope(inner, &ni2, &na2, &nd2, &comb2);
  if (comb2 != MPI_COMBINER_NAMED) MPI_Type_free(&inner);  // get_contents returned a new handle
  *count = (comb == MPI_COMBINER_CONTIGUOUS ? ints[0] : 1) * inner_count;
  return ok;
}

/// flatten_contiguous() whose named base has no holes either (MPI_DOUBLE_INT has): a run
/// of count values of `base` with nothing between them. The bytes of one `t`, or -1.
inline int64_t contiguous_run(MPI_Datatype t, MPI_Datatype* base, int* count) {
  if (!flatten_contiguous(t, base, count) || *count < 1) return -1;
  int size = 0;
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_size(*base, &size);
  MPI_Type_get_true_extent(*base, &lb, &extent);
  if (size <= 0 || lb != 0 || extent != size) return -1;
  return static_cast<int64_t>(size) * *count;
}

}  // namespace sparsecomm::detail
