#pragma once
// Sparse dynamic data exchange (SDDE): every rank knows what it sends to whom, nobody
// knows who sends to it. The strategy is chosen per call by name:
//
//   personalized           counts reduced with MPI_Reduce_scatter_block, then matched
//                          probes and receives straight into the result
//                          (the "personalized" exchange of Hoefler, Siebert and Lumsdaine,
//                          PPoPP'10; O(P) counts per rank). Within one node, from an Sdde's
//                          second call: the messages go out at once while the reduction's
//                          table (with the sizes) is read in a shared window, then each is
//                          received into place with no probe.
//   nbx                    non-blocking consensus: synchronous sends, probe-receive until the
//                          sends are matched, then a non-blocking barrier (same paper, NBX);
//                          within one node, from an Sdde's second call, the barrier as flags
//                          in a shared window, and plain sends whose receipts the receivers
//                          count there (also for the messages within a node across nodes).
//   rma                    one-sided puts into a window of one slot per rank, between two
//                          fences; fixed-size messages only (MPI Advance's RMA variant).
//   locality_personalized  locality-aware aggregation (Geyko, Collom, Schafer, Bridges and
//   locality_nbx           Bienz, "A more scalable sparse dynamic data exchange", 2023): all
//                          messages for one destination region travel in one bundle to the rank
//                          with my local index in that region, then are redistributed inside the
//                          region. Inter-region: at most one message per (rank, region) pair.
//                          Where a region lies within one node, the redistribution goes
//                          through a shared-memory window (no message inside the node, and
//                          flags in the window instead of the reduction).
//   node_window            the real nodes, whatever the regions given, and a shared window in
//                          each: on one node each message is copied once into the writer's
//                          segment and once out, one round of flags in all; across nodes one
//                          bundle per pair of nodes, gathered from and scattered to the node
//                          through the windows, sent by the pair's agents (a rank on each
//                          side both compute; no reduction: every pair exchanges one message)
//                          or, with many nodes, by one leader per node
//                          (SddeOptions::node_exchange = agents | leaders | auto).
//                          Not under SMPI, which has no shared windows.
//
// Every strategy delivers zero-length messages (a receiver learns "nothing from you"),
// self-messages, and returns received messages sorted by source rank, so results never
// depend on message timing. Messages are sent from where they lie (Outbox) and received
// into memory the caller chooses (Delivery): the typed exchange() copies nothing of its own,
// personalized receives in place, the others copy each received message once. Traffic runs on communicators duplicated at construction, with
// a tag that changes every call, so user messages and back-to-back calls never mix.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "sparsecomm/core/stats.hpp"

namespace sparsecomm {

/// A list of messages, one per peer, stored CSR-like: message i goes to (or came from)
/// ranks[i] and is data[offsets[i] .. offsets[i+1]).
template <class T>
struct SparseMessages {
  std::vector<int> ranks;
  std::vector<int64_t> offsets{0};
  std::vector<T> data;

  size_t size() const { return ranks.size(); }
  int64_t count(size_t i) const { return offsets[i + 1] - offsets[i]; }
  const T* begin(size_t i) const { return data.data() + offsets[i]; }
  std::vector<T> message(size_t i) const { return std::vector<T>(begin(i), begin(i) + count(i)); }
  void add(int rank, const T* p, size_t n) {
    ranks.push_back(rank);
    data.insert(data.end(), p, p + n);
    offsets.push_back(static_cast<int64_t>(data.size()));
  }
  void add(int rank, const std::vector<T>& v) { add(rank, v.data(), v.size()); }
  bool operator==(const SparseMessages& o) const {
    return ranks == o.ranks && offsets == o.offsets && data == o.data;
  }
};

namespace detail {
struct ByteMessages {
  std::vector<int> ranks;
  std::vector<int64_t> offsets{0};
  std::vector<char> bytes;
};

/// Messages to send where they already lie (no payload copied to build it): message i is
/// len[i] bytes at ptr[i], for ranks[i].
struct Outbox {
  std::vector<int> ranks;
  std::vector<const char*> ptr;
  std::vector<int64_t> len;
  size_t size() const { return ranks.size(); }
  void reserve(size_t n) {
    ranks.reserve(n), ptr.reserve(n), len.reserve(n);
  }
  void add(int rank, const void* p, int64_t n) {
    ranks.push_back(rank), ptr.push_back(static_cast<const char*>(p)), len.push_back(n);
  }
  /// The messages of `m`, pointing into m.bytes.
  static Outbox of(const ByteMessages& m) {
    Outbox o;
    o.reserve(m.ranks.size());
    for (size_t i = 0; i < m.ranks.size(); ++i)
      o.add(m.ranks[i], m.bytes.data() + m.offsets[i], m.offsets[i + 1] - m.offsets[i]);
    return o;
  }
};

/// What an exchange received, ordered by source: message i came from ranks[i] and is bytes
/// [offsets[i], offsets[i + 1]) of the memory that allocate(total) returned. The exchange
/// calls allocate exactly once, with the total, before writing any byte there (so the
/// caller decides where the result lives: a vector, or malloc'd memory for a C caller, with
/// no copy in between).
struct Delivery {
  std::vector<int> ranks;
  std::vector<int64_t> offsets{0};
  std::function<char*(int64_t)> allocate;
  /// Empties the list, with room for n messages.
  void restart(size_t n) {
    ranks.clear(), offsets.assign(1, 0);
    ranks.reserve(n), offsets.reserve(n + 1);
  }
  /// Appends the next message (in source order): `bytes` from `src`.
  void add(int src, int64_t bytes) { ranks.push_back(src), offsets.push_back(offsets.back() + bytes); }
};
struct NbxBarrier;  // NBX's barrier (src/comm/sdde/common.hpp)
}  // namespace detail

/// The SDDE strategy of setup steps (plans, combining, topologies) when the caller does not
/// choose one: NBX normally. In the SMPI build "personalized": NBX's probe loop costs the
/// simulator host time that grows faster than linearly with the polls made in one run
/// (SimGrid 3.32; measured in experiments/README.md, "Measurements behind defaults"). Simulated setup times
/// are then those of the personalized exchange; ask for "nbx" explicitly to simulate it.
#ifdef SPARSECOMM_SMPI
inline constexpr const char* kDefaultSdde = "personalized";
#else
inline constexpr const char* kDefaultSdde = "nbx";
#endif

/// What an Sdde takes besides each call's strategy, fixed at its construction. The fields
/// are the values of the environment variables that stand for them (docs/environment.md);
/// the entry points read those (sparsecomm/interop/environment.hpp) and make them the
/// defaults() of every Sdde the process constructs without options, its own or the ones
/// plans, topologies and combining build inside. The errors name those variables.
struct SddeOptions {
  /// SPARSECOMM_SDDE_WINDOW: the shared-memory windows inside nodes (the locality-aware
  /// redistribution, node_window, the tables and barriers from an Sdde's second call): a
  /// switch, off ("0", "off", "false", "no") for messages instead; "" is on. Another value is
  /// an InputError on every rank of a region at its first window.
  std::string window;
  /// SPARSECOMM_SDDE_NODE_EXCHANGE: how node_window crosses nodes, "agents", "leaders" or
  /// "auto" ("": auto); alike on every rank, else an InputError on every rank.
  std::string node_exchange;
  /// SPARSECOMM_CHECK_COLLECTIVE_ARGS: Sdde::check_collective_args().
  bool check_collective_args = false;

  /// Local: the options of an Sdde constructed without any (the library's, above, until
  /// set_defaults()).
  static SddeOptions defaults();
  static void set_defaults(const SddeOptions& o);
};

/// A reusable SDDE context. Construct once (collective: duplicates communicators), then
/// call exchange() as often as needed, each call choosing its strategy.
///
///   Sdde sdde(MPI_COMM_WORLD, Locality::ppn(MPI_COMM_WORLD, 4));
///   SparseMessages<int64_t> req;  req.add(owner, wanted_ids);
///   auto got = sdde.exchange(req, "locality_nbx");   // got.ranks: who asked me
class Sdde {
 public:
  /// Collective over `comm` (and over each region of `loc`, which must describe `comm`).
  Sdde(MPI_Comm comm, Locality loc, SddeOptions options);
  /// The same with SddeOptions::defaults().
  Sdde(MPI_Comm comm, Locality loc);
  /// Collective; regions detected with MPI_COMM_TYPE_SHARED.
  explicit Sdde(MPI_Comm comm);

  /// Names of every strategy, in a stable order.
  static const std::vector<std::string>& strategies();
  /// True for strategies that only handle fixed-size messages ("rma").
  static bool fixed_size_only(const std::string& strategy);
  /// Throws InputError listing the valid names when `strategy` is unknown.
  static void check_strategy(const std::string& strategy);
  /// Collective. Creates now what the first exchange with `strategy` would create (the
  /// locality-aware strategies: the communicator of the ranks with one local index, when
  /// the regions have equal sizes), so that a timed first exchange measures the exchange
  /// alone. Optional; idempotent.
  void prepare(const std::string& strategy);

  /// Collective. Variable-size exchange (like MPI Advance's Alltoallv_crs). At most one
  /// message per destination. Invalid input on any rank (rank out of range, repeated
  /// destination, inconsistent offsets) throws the same error on every rank, carried by the
  /// strategy's own collectives (no collective of its own on the success path). The
  /// strategy is a collective argument, the same on every rank (an unknown name fails
  /// everywhere alike); ranks that pass different ones are detected (an InputError on every
  /// rank, one allreduce per call) only with check_collective_args().
  template <class T>
  SparseMessages<T> exchange(const SparseMessages<T>& send, const std::string& strategy, Stats* stats = nullptr) {
    return typed_exchange(send, -1, strategy, stats);
  }

  /// Collective. Fixed-size exchange (like Alltoall_crs): every message has `count`
  /// elements (checked on every rank).
  template <class T>
  SparseMessages<T> exchange_fixed(const SparseMessages<T>& send, int64_t count, const std::string& strategy,
                                   Stats* stats = nullptr) {
    return typed_exchange(send, count, strategy, stats);
  }

  MPI_Comm comm() const { return comm_.get(); }
  const Locality& locality() const { return loc_; }

  const SddeOptions& options() const { return opt_; }

  /// Whether each call checks that every rank passed the same strategy and fixed/variable
  /// size (one allreduce): SddeOptions::check_collective_args, from the construction
  /// (SPARSECOMM_CHECK_COLLECTIVE_ARGS where the process read the environment) or
  /// set_check_collective_args() — for debugging a program that may pass different ones.
  /// Default: off.
  bool check_collective_args() const { return opt_.check_collective_args; }
  void set_check_collective_args(bool on) { opt_.check_collective_args = on; }
  /// SddeOptions::defaults().check_collective_args: what an Sdde constructed now would check.
  static bool check_collective_args_default();

  /// Collective. exchange() on raw bytes (`elem`: bytes per element; fixed_count >= 0: a
  /// fixed-size exchange of that many elements per message), for callers that check their
  /// own arguments: a non-empty `caller_error` is this rank's failed check, raised on every
  /// rank through the exchange's own collectives, as the exchange's own checks are.
  detail::ByteMessages exchange_bytes(const detail::ByteMessages& send, size_t elem, int64_t fixed_count,
                                      const std::string& strategy, Stats* stats = nullptr,
                                      const std::string& caller_error = "");
  /// Collective. exchange_bytes() without copies of its own: sends straight from where the
  /// messages lie (`send`), and the received bytes, ordered by source, land in the memory
  /// `into.allocate` returns (the personalized strategy receives them there directly; the
  /// others copy each once from where they arrived). If allocate throws, this rank still
  /// completes its part of the exchange, then rethrows (its own error, after the exchange).
  void exchange_into(const detail::Outbox& send, size_t elem, int64_t fixed_count, const std::string& strategy,
                     detail::Delivery& into, Stats* stats = nullptr, const std::string& caller_error = "");

 private:
  /// The per-rank checks of `send`: "" or the error.
  std::string check_messages(const detail::Outbox& send, size_t elem, int64_t fixed_count) const;
  void locality_exchange(const detail::Outbox& send, bool nbx, int tag, Stats* stats, const std::string& err,
                         detail::Delivery& into);
  void node_window_exchange(const detail::Outbox& send, const std::string& err, int tag, Stats* stats,
                            detail::Delivery& into);
  void redistribute(const std::vector<std::vector<char>>& to_region, const detail::ByteMessages& inter_recv,
                    bool failed_here, const std::string& err, bool carry, int tag, Stats* stats,
                    detail::Delivery& into);

  // Typed exchanges: the messages are sent from send.data and received into the result's
  // data (no conversion copies).
  template <class T>
  SparseMessages<T> typed_exchange(const SparseMessages<T>& send, int64_t fixed_count, const std::string& strategy,
                                   Stats* stats) {
    detail::Outbox out;
    out.reserve(send.ranks.size());
    const int64_t n = std::min<int64_t>(static_cast<int64_t>(send.ranks.size()),
                                        static_cast<int64_t>(send.offsets.size()) - 1);
    std::string err;
    if (n != static_cast<int64_t>(send.ranks.size()) || send.offsets.empty() || send.offsets[0] != 0 ||
        send.offsets.back() != static_cast<int64_t>(send.data.size()))
      err = "SDDE: offsets do not match the number of messages and the data size";
    for (int64_t i = 0; err.empty() && i < n; ++i) {
      const int64_t c = send.offsets[static_cast<size_t>(i) + 1] - send.offsets[static_cast<size_t>(i)];
      if (c < 0) err = "SDDE: offsets must be non-decreasing";
      else out.add(send.ranks[static_cast<size_t>(i)], send.data.data() + send.offsets[static_cast<size_t>(i)],
                   c * static_cast<int64_t>(sizeof(T)));
    }
    if (!err.empty()) out = detail::Outbox{};
    SparseMessages<T> got;
    detail::Delivery into;
    into.allocate = [&got](int64_t bytes) {
      got.data.resize((static_cast<size_t>(bytes) + sizeof(T) - 1) / sizeof(T));  // whole T's by contract
      return reinterpret_cast<char*>(got.data.data());
    };
    exchange_into(out, sizeof(T), fixed_count, strategy, into, stats, err);
    got.ranks = std::move(into.ranks);
    got.offsets.resize(into.offsets.size());
    for (size_t i = 0; i < into.offsets.size(); ++i) got.offsets[i] = into.offsets[i] / static_cast<int64_t>(sizeof(T));
    return got;
  }

  /// The exchange over the real nodes ("node_window"): an Sdde on the same communicator with
  /// one region per node, made at its first use (collective).
  Sdde& over_nodes();
  /// On over_nodes(), collective at its first call (then alike on every rank without
  /// communication): whether every node has its two windows (node_window across nodes),
  /// and agents_ set (agents or leaders).
  bool node_windows();
  /// On over_nodes(), when node_windows() and agents_: the personalized exchange's table
  /// across nodes. *from: (source, bytes) of every message this rank is sent, in source
  /// order (also when a rank failed: its row is empty). True if some rank reported `failed`.
  bool node_table(const detail::Outbox& send, bool failed, int tag, std::vector<std::pair<int, int64_t>>* from);
  /// On over_nodes(), when node_windows() and agents_: NBX's barrier across nodes.
  std::unique_ptr<detail::NbxBarrier> node_barrier(int tag);
  /// Collective at its first call: over_nodes() where the exchange spans several nodes that
  /// have their windows and talk by agents (node_table, node_barrier apply), else null —
  /// alike on every rank.
  Sdde* by_agents();
  /// On over_nodes(), agents: one message each way per pair of nodes this rank is the agent
  /// of, [failure flag][fill(node, buffer)]; the received ones, *flagged if one was flagged.
  std::vector<std::vector<char>> swap_by_agents(int tag, Stats* stats, bool failed,
                                                const std::function<void(int, std::vector<char>&)>& fill,
                                                bool* flagged);
  /// On over_nodes(), agents: the member of node a that talks to node b, (a + b) modulo a's
  /// size — both sides compute both ends of every pair.
  int agent(int a, int b) const { return loc_.member(a, (a + b) % loc_.region_size(a)); }

  Comm comm_;
  Comm local_comm_;
  Comm group_comm_;  ///< the ranks with my local index, one per region (equal regions only; made on first use)
  bool group_checked_ = false;
  Locality loc_;
  int calls_ = 0;
  int personalized_calls_ = 0;  ///< personalized exchanges made (from the second, counts through a node window)
  int nbx_calls_ = 0;           ///< nbx exchanges made (from the second, the barrier through a node window)
  int locality_calls_ = 0;      ///< locality-aware exchanges made (from the second, step 2 across the nodes' windows)
  SddeOptions opt_;
  std::unique_ptr<Sdde> nodes_;
  Comm leaders_comm_;        ///< node_window across nodes by leaders: local index 0 of every region (made on first use)
  bool agents_ = false;      ///< node_window across nodes: every pair of nodes through its two agents (not leaders)
  int leader_windows_ = -1;  ///< node_window across nodes: every region has its windows (-1: not yet asked)
};

/// The direct answer, for verification only: a dense MPI_Alltoall of counts and an
/// MPI_Alltoallv of the payloads (collective, O(P) memory). Same output format.
template <class T>
SparseMessages<T> reference_exchange(MPI_Comm comm, const SparseMessages<T>& send);

}  // namespace sparsecomm

#include "sparsecomm/comm/sdde_impl.hpp"
