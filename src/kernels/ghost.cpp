#include "sparsecomm/kernels/ghost.hpp"

#include <algorithm>

namespace sparsecomm {

GhostScatter::GhostScatter(MPI_Comm comm, int64_t local_size, std::vector<int64_t> indices, const std::string& backend,
                           const std::string& sdde, const std::string& regions)
    : indices_(std::move(indices)), local_(local_size) {
  RowPartition owned = RowPartition::from_local_sizes(comm, local_size);
  begin_ = owned.begin(comm_rank(comm));
  std::string err;
  for (int64_t g : indices_)
    if (g < 0 || g >= owned.global_size())
      err = "GhostScatter: index " + std::to_string(g) + " out of range [0, " + std::to_string(owned.global_size()) + ")";
  agree(comm, err);
  std::vector<int64_t> remote;
  for (int64_t g : indices_)
    if (g < begin_ || g >= begin_ + local_) remote.push_back(g);
  std::sort(remote.begin(), remote.end());
  remote.erase(std::unique(remote.begin(), remote.end()), remote.end());
  for (int64_t g : indices_) {
    if (g >= begin_ && g < begin_ + local_) slot_.push_back(static_cast<int32_t>(-1 - (g - begin_)));
    else slot_.push_back(static_cast<int32_t>(std::lower_bound(remote.begin(), remote.end(), g) - remote.begin()));
  }
  remote_.assign(remote.size(), 0.0);
  Locality loc = Locality::parse(comm, regions);
  Sdde s(comm, loc);
  Pattern pat = Pattern::from_ghosts(comm, owned, remote, s, sdde);
  fwd_ = make_plan(backend, pat, loc, comm);
  rev_ = make_plan(backend, pat.reverse(), loc, comm);
}

void GhostScatter::forward(const double* owned, double* ghost) {
  fwd_->start(owned);
  for (size_t k = 0; k < slot_.size(); ++k)
    if (slot_[k] < 0) ghost[k] = owned[-1 - slot_[k]];
  fwd_->wait(remote_.data());
  for (size_t k = 0; k < slot_.size(); ++k)
    if (slot_[k] >= 0) ghost[k] = remote_[slot_[k]];
}

void GhostScatter::reverse_add(const double* contrib, double* owned) {
  std::fill(remote_.begin(), remote_.end(), 0.0);
  for (size_t k = 0; k < slot_.size(); ++k)
    if (slot_[k] >= 0) remote_[slot_[k]] += contrib[k];
  rev_->start(remote_.data());
  for (size_t k = 0; k < slot_.size(); ++k)
    if (slot_[k] < 0) owned[-1 - slot_[k]] += contrib[k];
  rev_->wait(owned, Unpack::add);
}

}  // namespace sparsecomm
