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
//
// One copy (options one_copy, one_copy_min; comm/shm_one_copy.hpp): a segment of at least
// one_copy_min bytes whose values lie in a few runs on both ends is, in an exchange its owner
// starts with start(owned, ghost), read by its reader straight out of the owner's array
// (cross-memory attach) into its ghosts (start(owned, ghost)) or receive buffer (start(owned)),
// and the owner's wait() waits until such readers are done with its array, or, after
// kTakeBack checks without the reader claiming its segment, copies the segment into the
// window itself (ShmChannel::take_back), so that its wait never depends on a reader that is
// busy in another plan's wait. The other segments of that exchange go through the window as
// above; the owner packs only those. A read that fails although the set-up's probe passed
// (ShmExchange::give_back) hands its claim back: the owner, tired of waiting, takes the
// segment back into the window as for an unclaimed one and the reader reads it there, so
// no values are lost and no rank is left waiting for one that threw (the reader waits for
// the owner's wait() on this plan meanwhile).
#include "comm/virt/counting.hpp"
#ifndef SPARSECOMM_SMPI  // SimGrid's SMPI has no shared-memory windows
#include <algorithm>
#include <cstring>

#include "comm/shm_channel.hpp"
#include "comm/shm_one_copy.hpp"
#include "sparsecomm/comm/plan/plan.hpp"

namespace sparsecomm {
namespace {

// to[k] = from[idx[k]] (Scatter false) or to[idx[k]] = from[k], n units of `e` bytes.
template <bool Scatter>
void move(char* to, const char* from, const int32_t* idx, int64_t n, int64_t e) {
  const auto u = static_cast<size_t>(e);
  for (int64_t k = 0; k < n; ++k)
    std::memcpy(Scatter ? to + idx[k] * e : to + k * e, Scatter ? from + k * e : from + idx[k] * e, u);
}

class ShmPlan final : public Plan {
 public:
  ShmPlan(const Pattern& p, const Locality& loc, MPI_Comm comm, const PlanOptions& opt)
      : Plan("shm", p, loc, comm, opt), x_(this->comm(), comm) {
    const auto& s = p.send();
    const auto& r = p.recv();
    const int64_t eb = elem_bytes();
    std::vector<int> readers, writers;
    std::vector<int64_t> offsets;
    std::vector<detail::OneCopy::Side> to, from;
    const bool one_copy = opt.backend.get_bool("one_copy", true);
    const auto side = [&](const PatternSide& ps, int i) {
      return detail::OneCopy::Side{ps.ranks[i], ps.count(i) * eb,
                                   one_copy ? detail::runs_of(ps.indices.data() + ps.offsets[i], ps.count(i),
                                                              detail::OneCopy::kMaxRuns)
                                            : std::vector<detail::Run>{}};
    };
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
      to.push_back(side(s, i));
      reader_seg_.push_back(i);
    }
    for (int i = 0; i < r.num_neighbors(); ++i) {
      const int64_t bytes = r.count(i) * eb;
      if (x_.window.node_rank(r.ranks[i]) < 0) {
        count_recv("direct", r.ranks[i], bytes);
        x_.add_recv(recv_buf() + r.offsets[i] * eb, bytes, r.ranks[i], kTag);
        off_node_.push_back(i);
        continue;
      }
      count_transfer("direct", false, r.ranks[i], bytes, true);
      writers.push_back(r.ranks[i]);
      x_.add_read(r.offsets[i] * eb, bytes);
      from.push_back(side(r, i));
      writer_seg_.push_back(i);
    }
    x_.channel.declare(readers, offsets, readers.empty() ? 0 : send_bytes(), writers);
    x_.window.connect("shm");
    one_.setup(this->comm(), x_.window.node_comm(), one_copy, opt.backend.get_int("one_copy_min", kOneCopyMin), to,
               from);
    set_one_copy(s, from);
    x_.init(this->comm(), opt.persistent_requests, send_buf());
  }
  ~ShmPlan() override { finish_if_active(); }
  bool supports_test() const override { return true; }
  const detail::OneCopy& one_copy() const { return one_; }
  /// The default of option one_copy_min: a cross-memory read costs a system call and the
  /// kernel's page walk of both ranges, which a copy through the window of a small segment
  /// does not.
  static constexpr int64_t kOneCopyMin = 65536;

 protected:
  bool moves_in_place() const override { return one_.any(); }
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
  // start(owned, ghost) where some segment takes the one-copy path (moves_in_place()): the
  // others packed here, `owned` published for the one-copy readers.
  bool do_start_direct(const char* owned, char* ghost) override {
    if (!one_.any()) return false;  // (send_identity: Plan::start packs into the window)
    char* area = x_.begin();
    char* to = area ? area : send_buf();
    const auto& s = pattern().send();
    for (int i : pack_)
      move<false>(to + s.offsets[i] * elem_bytes(), owned, s.indices.data() + s.offsets[i], s.count(i), elem_bytes());
    direct_ = true, ghost_ = ghost, owned_ = owned, scattered_ = false, checks_ = 0;
    std::fill(released_.begin(), released_.end(), 0);
    x_.publish(owned);
    return true;
  }
  void do_wait() override {
    if (!direct_) return x_.wait([&](size_t k, const char* d, const void* src) { read_packed(k, d, src); });
    x_.wait([&](size_t k, const char* d, const void* src) { read_direct(k, d, src); });
    scatter_off_node();
    for (size_t j = 0; j < hold_.size(); ++j)  // my one-copy readers done with the caller's array
      x_.channel.wait_until([&] { return released(j, ++checks_ > kTakeBack); }, [] { detail::mpi_progress(); });
    direct_ = false;
  }
  bool do_test() override {
    if (!direct_) return x_.test([&](size_t k, const char* d, const void* src) { read_packed(k, d, src); });
    if (!x_.test([&](size_t k, const char* d, const void* src) { read_direct(k, d, src); })) return false;
    scatter_off_node();
    const bool tired = ++checks_ > kTakeBack;
    bool all = true;
    for (size_t j = 0; j < hold_.size(); ++j) all = released(j, tired) && all;
    if (!all) return false;
    direct_ = false;
    return true;
  }

 private:
  static constexpr int kTag = 12;
  static constexpr int kTakeBack = 1024;  // checks (or test() calls) before a writer takes a segment back

  // What start(owned, ghost) packs (every segment not read by one copy) and waits for.
  void set_one_copy(const PatternSide& s, const std::vector<detail::OneCopy::Side>& from) {
    std::vector<char> skip(static_cast<size_t>(s.num_neighbors()), 0);
    for (size_t k = 0; k < reader_seg_.size(); ++k)
      if (one_.to_reader(k)) {
        skip[static_cast<size_t>(reader_seg_[k])] = 1;
        hold_.push_back(k), released_.push_back(0);
      }
    for (int i = 0; i < s.num_neighbors(); ++i)
      if (!skip[static_cast<size_t>(i)]) pack_.push_back(i);
    for (size_t k = 0; k < from.size(); ++k)
      ghost_runs_.push_back(one_.from_writer(k) ? from[k].runs : std::vector<detail::Run>{});
  }
  // Writer k's segment into the receive buffer: by one copy where its writer published its
  // array; where that read fails, from the window, where the writer puts it back (give_back).
  void read_packed(size_t k, const char* data, const void* src) {
    char* at = recv_buf() + x_.read_to(k);
    if (one_.from_writer(k) && src && x_.channel.claim(k, x_.epoch())) {
      if (one_.read(k, src, at, nullptr, elem_bytes())) return;
      x_.give_back(k, [&] { take_back_own(); });
    }
    if (x_.read_bytes(k) > 0) std::memcpy(at, data, static_cast<size_t>(x_.read_bytes(k)));
  }
  // ... into the ghost array of start(owned, ghost).
  void read_direct(size_t k, const char* data, const void* src) {
    if (!ghost_) return read_packed(k, data, src);  // (no ghost array: the receive buffer)
    if (one_.from_writer(k) && src && x_.channel.claim(k, x_.epoch())) {
      if (one_.read(k, src, ghost_, &ghost_runs_[k], elem_bytes())) return;
      x_.give_back(k, [&] { take_back_own(); });
    }
    const auto& r = pattern().recv();
    const int i = writer_seg_[k];
    move<true>(ghost_, data, r.indices.data() + r.offsets[i], r.count(i), elem_bytes());
  }
  // While this rank waits for a writer to take back a segment whose one-copy read failed:
  // its own segments that no reader holds go into the window now (a reader that failed
  // too has handed its claim back), so two such ranks never wait on each other.
  void take_back_own() {
    if (!direct_) return;  // (only start(owned, ghost) lets readers read the caller's array)
    for (size_t j = 0; j < hold_.size(); ++j) released(j, true);
  }
  // Whether one-copy reader hold_[j] is done with the caller's array this exchange; when
  // `tired` and it has not claimed its segment, it is taken back: copied into the window
  // (ShmChannel::take_back: the wait no longer depends on that reader's progress).
  bool released(size_t j, bool tired) {
    if (released_[j]) return true;
    const size_t k = hold_[j];
    const uint64_t e = x_.epoch();
    if (!x_.channel.reader_done(k, e)) {
      if (!tired || !x_.channel.take_back(k, e)) return false;
      const auto& s = pattern().send();
      const int i = reader_seg_[k];
      move<false>(x_.channel.buffer(static_cast<int>(e % 2)) + s.offsets[i] * elem_bytes(), owned_,
                  s.indices.data() + s.offsets[i], s.count(i), elem_bytes());
      x_.channel.taken_back(k, e);
    }
    released_[j] = 1;
    return true;
  }
  void scatter_off_node() {
    if (!ghost_ || scattered_) return;
    const auto& r = pattern().recv();
    for (int i : off_node_)
      move<true>(ghost_, recv_buf() + r.offsets[i] * elem_bytes(), r.indices.data() + r.offsets[i], r.count(i),
                 elem_bytes());
    scattered_ = true;
  }

  detail::ShmExchange x_;
  detail::OneCopy one_;
  bool begun_ = false;  ///< do_pack_target() began the exchange
  std::vector<int> reader_seg_, writer_seg_, off_node_;  ///< send / recv neighbor of reader k, writer k; off-node recvs
  std::vector<int> pack_;                                ///< send neighbors start(owned, ghost) packs
  std::vector<size_t> hold_;                             ///< readers that read my array
  std::vector<std::vector<detail::Run>> ghost_runs_;     ///< writer k's runs in my ghosts (one copy)
  bool direct_ = false, scattered_ = false;              ///< the active exchange began with do_start_direct
  char* ghost_ = nullptr;
  const char* owned_ = nullptr;                          ///< ... from this array
  std::vector<char> released_;                           ///< per hold_: done, or taken back
  int checks_ = 0;
};

}  // namespace

namespace detail {
void register_shm() {
  register_backend("shm",
                   "on-node neighbors through an MPI-3 shared-memory window (one copy in, one out; large segments read "
                   "straight from the owner's array), the others point-to-point",
                   plan_factory<ShmPlan>(),
                   [] {
                     using K = OptionSpec::Kind;
                     std::vector<OptionSpec> options{
                         {"one_copy", K::boolean, "true",
                          "on-node segments of at least one_copy_min bytes in a few runs on both ends: read "
                          "straight from the owner's array (Linux cross-memory attach, probed and agreed over "
                          "the node) in exchanges started with start(owned, ghost)"},
                         {"one_copy_min", K::integer, std::to_string(ShmPlan::kOneCopyMin),
                          "smallest segment (bytes) that takes the one-copy path", 0}};
                     BackendHooks h{virt::shm_halo_counts, std::move(options), 1};
                     h.node_window = true;
                     h.counts_by_region = true;
                     return h;
                   }());
}
int64_t shm_one_copy_segments(const Plan& plan) {
  const auto* shm = dynamic_cast<const ShmPlan*>(&plan);
  return shm ? shm->one_copy().segments() : -1;
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
