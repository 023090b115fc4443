// p2p: one message per neighbor, what Hypre's comm package and PETSc's basic star forest do
// by hand: receives posted first, then the sends, then one wait for all. The messages are
// fixed at setup and posted again at every execution (comm/messages.hpp: MPI_Irecv/Isend,
// or persistent requests with PlanOptions::persistent_requests).
//
// Its options (p2p.hpp) make it an MPI neighborhood alltoallv as well: the messages cut per
// edge ("messages"), sent from and received into the caller's arrays at their positions
// ("in_place"), on a shared communicator with a tag of the caller's own ("channel"), so
// that setup is local.
#include "comm/plan/halo/p2p.hpp"

#include <memory>
#include <string>

#include "comm/virt/counting.hpp"
#include "sparsecomm/comm/messages.hpp"
#include "sparsecomm/comm/plan/plan.hpp"

namespace sparsecomm {
namespace {

// One message: `entries` entries of a side from entry `first` on, with `peer`.
struct Msg {
  bool send;
  int peer;
  int64_t first, entries;
};

// The messages of one side: a segment each, or cut by `cuts` (P2pMessages).
void add_messages(const PatternSide& s, bool send, const std::vector<int64_t>* cuts, std::vector<Msg>& out) {
  size_t c = 0;
  for (int i = 0; i < s.num_neighbors(); ++i) {
    if (!cuts) {
      out.push_back({send, s.ranks[i], s.offsets[i], s.count(i)});
      continue;
    }
    for (int64_t at = s.offsets[i]; at < s.offsets[i + 1]; at += out.back().entries) {
      if (c == cuts->size() || (*cuts)[c] <= 0 || at + (*cuts)[c] > s.offsets[i + 1])
        throw InputError("p2p: option messages does not cut the entries with rank " + std::to_string(s.ranks[i]) +
                         " into positive sizes that add up to their count");
      out.push_back({send, s.ranks[i], at, (*cuts)[c++]});
    }
  }
  if (cuts && c != cuts->size()) throw InputError("p2p: option messages lists more messages than there are entries");
}

class P2pPlan final : public Plan {
 public:
  P2pPlan(const Pattern& p, const Locality& loc, MPI_Comm comm, const PlanOptions& opt)
      : P2pPlan(p, loc, comm, opt, opt.backend.object<P2pChannel>("channel")) {}
  ~P2pPlan() override { finish_if_active(); }

 protected:
  void do_start() override {
    placing_ = false;
    packed().start();
  }
  void do_wait() override { active_msgs().wait(); }
  bool do_test() override { return active_msgs().test(); }
  bool supports_test() const override { return true; }
  bool moves_in_place() const override { return in_place_; }
  bool do_start_direct(const char* send, char* recv) override {
    placing_ = in_place_;
    if (!in_place_)
      return packed().start_relocated({send_buf(), send_bytes(), send}, {recv_buf(), recv_bytes(), recv});
    if (!placed_ || send != placed_send_ || recv != placed_recv_) place(send, recv);
    placed_->start();
    return true;
  }

 private:
  static constexpr int kTag = 11;

  P2pPlan(const Pattern& p, const Locality& loc, MPI_Comm comm, const PlanOptions& opt,
          const std::shared_ptr<const P2pChannel>& channel)
      : Plan("p2p", p, loc, channel ? channel->comm : std::make_shared<const Comm>(comm), opt),
        tag_(channel ? channel->tag : kTag),
        in_place_(opt.backend.get_bool("in_place", false)) {
    const auto cuts = opt.backend.object<P2pMessages>("messages");
    // Receives first, so that they are posted before the sends.
    add_messages(p.recv(), false, cuts ? &cuts->recv : nullptr, list_);
    add_messages(p.send(), true, cuts ? &cuts->send : nullptr, list_);
    for (const Msg& m : list_) {
      count_transfer("direct", m.send, m.peer, m.entries * elem_bytes());
      if (in_place_) check_consecutive(m.send ? p.send() : p.recv(), m);
    }
    if (!in_place_) packed();  // (in place, the plan's buffers are made only if ever used)
  }

  static void check_consecutive(const PatternSide& s, const Msg& m) {
    for (int64_t k = m.first + 1; k < m.first + m.entries; ++k)
      if (s.indices[k] != s.indices[k - 1] + 1)
        throw InputError("p2p: in_place needs each message's positions consecutive; those " +
                         std::string(m.send ? "to" : "from") + " rank " + std::to_string(m.peer) + " are not");
  }

  // The messages between the plan's buffers, made once.
  Messages& packed() {
    if (!msgs_) msgs_ = messages(send_buf(), recv_buf(), false);
    return *msgs_;
  }
  // The messages between the caller's arrays (fixed, or persistent requests bound to them,
  // while the same arrays come back).
  void place(const char* send, char* recv) {
    placed_ = messages(send, recv, true);
    placed_send_ = send, placed_recv_ = recv;
  }
  // Every message from `send` and into `recv`: at its first entry (laid out like the plan's
  // buffers), or in place at its first entry's position.
  std::unique_ptr<Messages> messages(const char* send, char* recv, bool in_place) {
    auto out = std::make_unique<Messages>();
    out->reserve(list_.size());
    const int64_t eb = elem_bytes();
    for (const Msg& m : list_) {
      const PatternSide& s = m.send ? pattern().send() : pattern().recv();
      const int64_t at = !in_place ? m.first : m.entries > 0 ? int64_t{s.indices[m.first]} : 0;
      out->add(m.send, (m.send ? send : recv) + at * eb, m.entries * eb, m.peer, tag_);
    }
    out->init(comm(), options().persistent_requests);
    return out;
  }
  Messages& active_msgs() { return placing_ ? *placed_ : *msgs_; }

  int tag_;
  bool in_place_;
  std::vector<Msg> list_;
  std::unique_ptr<Messages> msgs_, placed_;
  const char* placed_send_ = nullptr;
  char* placed_recv_ = nullptr;
  bool placing_ = false;  // the active exchange runs placed_
};

}  // namespace

// Plan statistics (virt::halo_counts): one message per segment, what every backend with a
// direct schedule reports (neighbor too; an outside backend may register these counts).
namespace virt {
std::vector<RankCounts> direct_halo_counts(const HaloPattern& pat, const std::vector<int>& region,
                                           const PlanOptions& opt) {
  return direct_counts(pat, region, opt, false);
}
}  // namespace virt

namespace detail {
void register_p2p() {
  using K = OptionSpec::Kind;
  std::vector<OptionSpec> options{
      {"in_place", K::boolean, "false",
       "start(owned, ghost) sends each message straight from owned and receives it into ghost at its pattern "
       "positions (consecutive in each message), without pack or unpack"},
      {"messages", K::object, "",
       "P2pMessages: cut each neighbor's entries into several messages, alike at both ends (one per edge)"},
      {"channel", K::object, "",
       "P2pChannel: run on that shared communicator with that tag instead of a duplicate of its own (a local setup)"},
  };
  register_backend("p2p", "point-to-point, one message per neighbor (Irecv/Isend, or persistent requests)",
                   plan_factory<P2pPlan>(),
                   [&options] {
                     BackendHooks h{virt::direct_halo_counts, std::move(options), 0};
                     h.counts_by_region = true;  // one message per segment: a rank's own
                     return h;
                   }());
}
}  // namespace detail

}  // namespace sparsecomm
