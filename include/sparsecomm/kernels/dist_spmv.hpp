#pragma once
// Distributed SpMV on a Plan, with communication overlapped with the diagonal block:
//   start the halo exchange; y = D x; wait; y += O x_ghost.
// And the transpose product through the reverse plan (ghost partial sums travel back to
// their owners and are added).
//
//   Pattern pat = pattern_from_matrix(A, sdde, "nbx");
//   DistSpmv spmv(A, make_plan("p2p", pat, loc, comm));
//   spmv.apply(x.data(), y.data());
#include <algorithm>
#include <memory>
#include <vector>

#include "sparsecomm/kernels/halo_pattern.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/matrix/dist_csr.hpp"

namespace sparsecomm {

class DistSpmv {
 public:
  /// `plan` must be built from pattern_from_matrix(a, ...) (forward direction).
  DistSpmv(const DistCsr<double>& a, std::unique_ptr<Plan> plan)
      : a_(a), plan_(std::move(plan)), ghost_(static_cast<size_t>(a.num_ghosts()) * plan_->options().width) {
    if (plan_->pattern().owned_size() != a.local_cols() || plan_->pattern().ghost_size() != a.num_ghosts())
      throw InputError("DistSpmv: the plan's pattern does not belong to this matrix");
  }

  /// Collective. y = A x for `width` interleaved vectors (the plan's width).
  /// x: local_cols()*width owned values; y: local_rows()*width.
  void apply(const double* x, double* y) {
    const int w = plan_->options().width;
    plan_->start(x);
    {
      ScopedPhase t(&plan_->exec_timers(), ExecPhase::local);
      a_.multiply_diag(x, y, w);
    }
    const double* ghost = finish_exchange();
    ScopedPhase t(&plan_->exec_timers(), ExecPhase::ghost);
    a_.multiply_offd_add(ghost, y, w);
  }

  /// Collective. The halo exchange alone, as apply() does it; returns the ghost values
  /// (valid until the next exchange).
  const double* exchange(const double* x) {
    plan_->start(x);
    return finish_exchange();
  }

  Plan& plan() { return *plan_; }

 private:
  // Ghosts in arrival order (what pattern_from_matrix gives): the off-diagonal product
  // reads the plan's receive buffer, as Hypre's and PETSc's matvecs read theirs.
  const double* finish_exchange() {
    if (plan_->receives_in_ghost_order()) return plan_->wait<double>();
    plan_->wait(ghost_.data());
    return ghost_.data();
  }

  const DistCsr<double>& a_;
  std::unique_ptr<Plan> plan_;
  std::vector<double> ghost_;
};

/// Collective. y = A^T x using a plan built on pattern.reverse() (width 1): each rank
/// computes partial sums for its ghost columns, which travel back to their owners and are
/// added to the owners' part. x: local_rows() values; y: local_cols() values.
/// When the reverse plan sends in ghost order (the reverse of a pattern_from_matrix), the
/// partial sums are computed straight into its send buffer.
inline void spmv_transpose(const DistCsr<double>& a, Plan& reverse_plan, const double* x, double* y) {
  if (reverse_plan.options().width != 1 || reverse_plan.pattern().owned_size() != a.num_ghosts())
    throw InputError("spmv_transpose: needs a width-1 plan on the reverse of this matrix's pattern");
  const bool in_place = reverse_plan.sends_in_owned_order() && a.num_ghosts() > 0;
  std::vector<double> scratch(in_place ? 0 : static_cast<size_t>(a.num_ghosts()));
  double* partial = in_place ? reverse_plan.send_area<double>() : scratch.data();
  std::fill(partial, partial + a.num_ghosts(), 0.0);
  const auto& o = a.offd();
  for (int32_t i = 0; i < o.nrows; ++i)
    for (int64_t k = o.row_ptr[i]; k < o.row_ptr[i + 1]; ++k) partial[o.col[k]] += o.val[k] * x[i];
  if (in_place) reverse_plan.start();
  else reverse_plan.start(partial);
  const auto& d = a.diag();
  std::fill(y, y + a.local_cols(), 0.0);
  for (int32_t i = 0; i < d.nrows; ++i)
    for (int64_t k = d.row_ptr[i]; k < d.row_ptr[i + 1]; ++k) y[d.col[k]] += d.val[k] * x[i];
  reverse_plan.wait(y, Unpack::add);
}

}  // namespace sparsecomm
