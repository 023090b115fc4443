// shm: neighbors on the same node through an MPI-3 shared-memory window, the others
// point-to-point (as p2p). The protocol (per-writer epoch, per-reader slots, double
// buffering) and its memory-model argument: comm/shm_channel.hpp.
//
// The window holds this rank's whole send buffer (twice: double buffering) when it has
// on-node readers, and start() packs straight into it: each value is copied once by its
// owner (the pack, which every backend does) and once by the rank that needs it, out of
// the window into the receive buffer (which wait() hands out as the ghost array).
// The off-node messages are sent from the window too (comm/shm_channel.hpp).
// Against Open MPI's shared-memory transport for the same on-node message: no copy into
// and out of its segment per message (or, above 4 KiB, no single-copy CMA read through the
// kernel), no matching.
#include "comm/virt/counting.hpp"
#ifndef SPARSECOMM_SMPI  // SimGrid's SMPI has no shared-memory windows
#include <cstring>

#include "comm/shm_channel.hpp"
#include "sparsecomm/comm/plan/plan.hpp"

namespace sparsecomm {
namespace {

class ShmPlan final : public Plan {
 public:
  ShmPlan(const Pattern& p, const Locality& loc, MPI_Comm comm, const PlanOptions& opt)
      : Plan("shm", p, loc, comm, opt), x_(this->comm(), comm) {
    const auto& s = p.send();
    const auto& r = p.recv();
    const int64_t eb = elem_bytes();
    std::vector<int> readers, writers;
    std::vector<int64_t> offsets;
    // One transfer per neighbor, as p2p (the counts below).
    for (int i = 0; i < s.num_neighbors(); ++i) {
      const int64_t bytes = s.count(i) * eb;
      if (x_.window.node_rank(s.ranks[i]) < 0) {
        count_send("direct", s.ranks[i], bytes);
        x_.add_send(s.offsets[i] * eb, bytes, s.ranks[i], kTag);
        continue;
      }
      count_transfer("direct", true, s.ranks[i], bytes, true);  // the pack writes it: no copy of its own
      readers.push_back(s.ranks[i]);
      offsets.push_back(s.offsets[i] * eb);
    }
    for (int i = 0; i < r.num_neighbors(); ++i) {
      const int64_t bytes = r.count(i) * eb;
      if (x_.window.node_rank(r.ranks[i]) < 0) {
        count_recv("direct", r.ranks[i], bytes);
        x_.add_recv(recv_buf() + r.offsets[i] * eb, bytes, r.ranks[i], kTag);
        continue;
      }
      count_transfer("direct", false, r.ranks[i], bytes, true);
      writers.push_back(r.ranks[i]);
      x_.add_read(r.offsets[i] * eb, bytes);
    }
    x_.channel.declare(readers, offsets, readers.empty() ? 0 : send_bytes(), writers);
    x_.window.connect("shm");
    x_.init(this->comm(), opt.persistent_requests, send_buf());
  }
  ~ShmPlan() override { finish_if_active(); }
  bool supports_test() const override { return true; }

 protected:
  char* do_pack_target() override {
    begun_ = true;
    return x_.begin();
  }
  void do_start() override {
    if (!begun_) {  // start(): the caller filled send_buf()
      char* area = x_.begin();
      if (area && send_bytes() > 0) std::memcpy(area, send_buf(), static_cast<size_t>(send_bytes()));
    }
    begun_ = false;
    x_.publish();
  }
  void do_wait() override { x_.wait(recv_buf()); }
  bool do_test() override { return x_.test(recv_buf()); }

 private:
  static constexpr int kTag = 12;
  detail::ShmExchange x_;
  bool begun_ = false;  ///< do_pack_target() began the exchange
};

}  // namespace

namespace detail {
void register_shm() {
  register_backend("shm",
                   "on-node neighbors through an MPI-3 shared-memory window (one copy in, one out), the others "
                   "point-to-point",
                   plan_factory<ShmPlan>(),
                   [] {
                     BackendHooks h{virt::shm_halo_counts, {}, 1};
                     h.node_window = true;
                     return h;
                   }());
}
}  // namespace detail

}  // namespace sparsecomm
#else   // SimGrid's SMPI has no shared-memory windows: no such backend there
namespace sparsecomm::detail {
void register_shm() {}
}  // namespace sparsecomm::detail
#endif  // SPARSECOMM_SMPI

// Plan statistics (virt::halo_counts): one transfer per segment, as p2p, those between ranks
// of one node (HaloPattern::node) through the window, as ShmPlan counts them.
namespace sparsecomm::virt {
std::vector<RankCounts> shm_halo_counts(const HaloPattern& pat, const std::vector<int>& region, const PlanOptions& opt) {
  return direct_counts(pat, region, opt, true);
}
}  // namespace sparsecomm::virt
