// Column-by-column SpMM (Mirsadeghi, Träff, Balaji and Afsahi, HiPC 2017); see spmm.hpp.
#include "sparsecomm/kernels/spmm.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "sparsecomm/core/error.hpp"
#include "sparsecomm/core/mpi_util.hpp"

namespace sparsecomm {

namespace {

// c[i] += O(i,:) * ghosts, where ghost g sits at src[pos[g]] (the receive buffers of both
// variants hold whole source blocks, not the ghosts alone).
void offd_add_indirect(const DistCsr<double>& a, const double* src, const std::vector<int64_t>& pos, double* c) {
  const auto& o = a.offd();
  for (int32_t i = 0; i < o.nrows; ++i) {
    double s = 0;
    for (int64_t k = o.row_ptr[i]; k < o.row_ptr[i + 1]; ++k) s += o.val[k] * src[pos[o.col[k]]];
    c[i] += s;
  }
}

}  // namespace

ColumnSpmm::ColumnSpmm(const DistCsr<double>& a, const Topology& topo, std::shared_ptr<GatherPlan> plan)
    : a_(a), plan_(std::move(plan)) {
  if (!plan_ || plan_->recv_offsets().size() != topo.sources.size() + 1)
    throw InputError("ColumnSpmm: the plan is not a gather plan over this topology");
  const auto& part = a.col_partition();
  const auto& src = topo.sources;
  pos_.resize(static_cast<size_t>(a.num_ghosts()));
  // Ghost column g (global id gid) is row gid of B, owned by rank `owner`: it sits in the
  // receive buffer at that source's offset plus its place in the owner's block.
  for (int32_t g = 0; g < a.num_ghosts(); ++g) {
    const int64_t gid = a.ghost_ids()[g];
    const int owner = part.owner(gid);
    const auto it = std::lower_bound(src.begin(), src.end(), owner);
    if (it == src.end() || *it != owner)
      throw InputError("ColumnSpmm: rank " + std::to_string(owner) + " owns a ghost but is not a source of the topology");
    const size_t idx = static_cast<size_t>(it - src.begin());
    if (plan_->recv_counts()[idx] != part.local_size(owner))
      throw InputError("ColumnSpmm: the plan's block of rank " + std::to_string(owner) + " is not its rows of B");
    pos_[g] = plan_->recv_offsets()[idx] + (gid - part.begin(owner));
  }
  recv_.resize(static_cast<size_t>(plan_->recv_total()) + 1);
}

void ColumnSpmm::multiply(const double* b, int64_t n, double* c) {
  const int32_t lr = a_.local_rows(), lc = a_.local_cols();
  for (int64_t j = 0; j < n; ++j) {
    double* cj = c + j * lr;
    const double* bj = b + j * lc;
    plan_->start(bj);
    a_.multiply_diag(bj, cj);  // overlapped with the exchange
    plan_->wait(recv_.data());
    offd_add_indirect(a_, recv_.data(), pos_, cj);
  }
}

AllgatherSpmm::AllgatherSpmm(const DistCsr<double>& a, MPI_Comm comm) : a_(a), comm_(comm) {
  const auto& part = a.col_partition();
  const int p = comm_size(comm);
  counts_.resize(static_cast<size_t>(p));
  displs_.resize(static_cast<size_t>(p));
  if (part.global_size() > static_cast<int64_t>(INT32_MAX))
    throw InputError("AllgatherSpmm: " + std::to_string(part.global_size()) +
                     " rows of B do not fit MPI_Allgatherv's int displacements");
  for (int r = 0; r < p; ++r)
    counts_[r] = static_cast<int>(part.local_size(r)), displs_[r] = static_cast<int>(part.begin(r));
  full_.resize(static_cast<size_t>(part.global_size()) + 1);
}

void AllgatherSpmm::multiply(const double* b, int64_t n, double* c) {
  const int32_t lr = a_.local_rows(), lc = a_.local_cols();
  // Ghost column g is row ghost_ids()[g] of B: that is its place in the full column.
  for (int64_t j = 0; j < n; ++j) {
    double* cj = c + j * lr;
    const double* bj = b + j * lc;
    a_.multiply_diag(bj, cj);
    SPC_MPI(MPI_Allgatherv(bj, lc, MPI_DOUBLE, full_.data(), counts_.data(), displs_.data(), MPI_DOUBLE, comm_));
    offd_add_indirect(a_, full_.data(), a_.ghost_ids(), cj);
  }
}

}  // namespace sparsecomm
