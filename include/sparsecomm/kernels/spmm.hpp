#pragma once
// Sparse x dense products C = A B, column by column, the kernel of the message-combining
// papers (Mirsadeghi, Träff, Balaji and Afsahi, HiPC 2017, and the k-group follow-up): B is
// dense with A's column distribution (rank i holds rows [col_begin, col_end) of B, n
// columns), and for each column of B rank i needs the whole local block of that column from
// every rank j whose columns appear in A's off-diagonal block on rank i. That is an
// allgather-shaped neighborhood exchange over topology_from_matrix_blocks(A), one per column.
//
// B and C are column-major with leading dimension local_cols() and local_rows():
// b[j * A.local_cols() + i], c[j * A.local_rows() + i].
//
//   Topology t = topology_from_matrix_blocks(A);                                // collective
//   GatherOptions go; go.value_bytes = 8;
//   ColumnSpmm mm(A, t, make_gather_plan("combined", t, loc, comm, A.local_cols(), go));
//   mm.multiply(b.data(), n, c.data());                                          // collective
//
// (All n columns at once through one width-n halo exchange of only the rows of B that are
// needed is DistSpmv with PlanOptions::width = n and row-major B and C.)
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/topology.hpp"
#include "sparsecomm/matrix/dist_csr.hpp"

namespace sparsecomm {

/// C = A B through an allgather-shaped GatherPlan per column, the exchange of a column
/// overlapped with the diagonal block's product. One multiply at a time per object.
class ColumnSpmm {
 public:
  /// Not collective. `plan` must be a GatherPlan over `topo` =
  /// topology_from_matrix_blocks(a) with a.local_cols() values of 8 bytes per rank.
  /// InputError otherwise. `a` must outlive this object.
  ColumnSpmm(const DistCsr<double>& a, const Topology& topo, std::shared_ptr<GatherPlan> plan);
  /// Collective. c = A b for n columns (column-major, see the file comment).
  void multiply(const double* b, int64_t n, double* c);
  GatherPlan& plan() { return *plan_; }

 private:
  const DistCsr<double>& a_;
  std::shared_ptr<GatherPlan> plan_;
  std::vector<int64_t> pos_;   // ghost g of A is at recv_[pos_[g]]
  std::vector<double> recv_;   // the sources' blocks of one column
};

/// The global baseline of the papers: every rank receives every column of B whole
/// (MPI_Allgatherv per column), then the same local products.
class AllgatherSpmm {
 public:
  /// Collective (the counts of every rank). `a` must outlive this object.
  AllgatherSpmm(const DistCsr<double>& a, MPI_Comm comm);
  /// Collective. c = A b for n columns (column-major).
  void multiply(const double* b, int64_t n, double* c);

 private:
  const DistCsr<double>& a_;
  MPI_Comm comm_;
  std::vector<int> counts_, displs_;
  std::vector<double> full_;
};

}  // namespace sparsecomm
