#pragma once
// A Hypre matvec comm package as a sparsecomm Pattern, shared by the hook
// (libsparsecomm_hypre_hook.so) and `sparsecomm amg --interp`. Header only: it reads the
// package's and the matrix's fields through Hypre's header macros and calls nothing in
// libHYPRE (the hook does not link it).
#include <_hypre_parcsr_mv.h>

#include <utility>

#include "sparsecomm/comm/pattern.hpp"

namespace sparsecomm::hypre_pkg {

inline bool starts_ok(const HYPRE_Int* starts, HYPRE_Int n) {
  if (n == 0) return true;
  if (starts[0] != 0) return false;
  for (HYPRE_Int i = 0; i < n; ++i)
    if (starts[i + 1] < starts[i]) return false;
  return true;
}

inline bool sorted_unique(const HYPRE_Int* v, HYPRE_Int n) {
  for (HYPRE_Int i = 1; i < n; ++i)
    if (v[i] <= v[i - 1]) return false;
  return true;
}

/// Local. `pkg` (A's package) as a Pattern over Hypre's packed buffers: the send side is the
/// packed send buffer in order (Hypre packs it itself; global ids first_col_diag +
/// send_map_elmts, for duplicate removal), the receive side the package's receive buffer
/// (global ids col_map_offd). False if it cannot be one (several components, unsorted or
/// out-of-range neighbor lists, starts that do not rise from 0, a receive side other than A's
/// off-diagonal columns): the answer of this rank only, the caller agrees.
inline bool package_pattern(hypre_ParCSRMatrix* A, const hypre_ParCSRCommPkg* pkg, Pattern* out) {
  if (pkg->num_components != 1 || pkg->num_sends < 0 || pkg->num_recvs < 0) return false;
  if (!sorted_unique(pkg->send_procs, pkg->num_sends) || !sorted_unique(pkg->recv_procs, pkg->num_recvs)) return false;
  // Starts from 0, never decreasing; neighbors inside the communicator (what Hypre builds;
  // anything else is left to Hypre's own exchange, not turned into a plan)
  if (!starts_ok(pkg->send_map_starts, pkg->num_sends) || !starts_ok(pkg->recv_vec_starts, pkg->num_recvs)) return false;
  int p = 0;
  if (MPI_Comm_size(pkg->comm, &p) != MPI_SUCCESS) return false;
  if ((pkg->num_sends && (pkg->send_procs[0] < 0 || pkg->send_procs[pkg->num_sends - 1] >= p)) ||
      (pkg->num_recvs && (pkg->recv_procs[0] < 0 || pkg->recv_procs[pkg->num_recvs - 1] >= p)))
    return false;
  const HYPRE_BigInt first = hypre_ParCSRMatrixFirstColDiag(A);
  const HYPRE_BigInt* cmap = hypre_ParCSRMatrixColMapOffd(A);
  PatternSide send, recv;
  const HYPRE_Int nsend = pkg->num_sends ? pkg->send_map_starts[pkg->num_sends] : 0;
  const HYPRE_Int nrecv = pkg->num_recvs ? pkg->recv_vec_starts[pkg->num_recvs] : 0;
  if (nrecv != hypre_CSRMatrixNumCols(hypre_ParCSRMatrixOffd(A))) return false;
  for (HYPRE_Int i = 0; i < pkg->num_sends; ++i) {
    send.ranks.push_back(pkg->send_procs[i]);
    send.offsets.push_back(pkg->send_map_starts[i + 1]);
  }
  for (HYPRE_Int k = 0; k < nsend; ++k) {
    send.indices.push_back(k);
    send.global_ids.push_back(static_cast<int64_t>(first) + pkg->send_map_elmts[k]);
  }
  for (HYPRE_Int i = 0; i < pkg->num_recvs; ++i) {
    recv.ranks.push_back(pkg->recv_procs[i]);
    recv.offsets.push_back(pkg->recv_vec_starts[i + 1]);
  }
  for (HYPRE_Int k = 0; k < nrecv; ++k) {
    recv.indices.push_back(k);
    recv.global_ids.push_back(static_cast<int64_t>(cmap[k]));
  }
  *out = Pattern(std::move(send), std::move(recv), nsend, nrecv);
  return true;
}

}  // namespace sparsecomm::hypre_pkg
