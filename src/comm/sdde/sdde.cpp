// The SDDE's front (sparsecomm/comm/sdde.hpp): the checks every exchange makes, and the
// choice of the strategy's implementation (one file each in this folder, sharing common.hpp).
#include <algorithm>
#include <climits>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/sdde/common.hpp"
#include "core/process_default.hpp"

namespace sparsecomm {

using detail::ByteMessages;
#ifndef SPARSECOMM_SMPI
using detail::RegionWindow;
#endif

namespace {
// A function-local static, not a namespace-scope one: tests instantiate parameters from
// Sdde::strategies() during static initialisation, whose order across files is unspecified.
const std::vector<std::string>& strategy_list() {
#ifdef SPARSECOMM_SMPI
  static const std::vector<std::string> s = {"personalized", "nbx", "rma", "locality_personalized", "locality_nbx"};
#else  // (shared-memory windows: not under SMPI)
  static const std::vector<std::string> s = {"personalized", "nbx", "rma", "locality_personalized", "locality_nbx",
                                             "node_window"};
#endif
  return s;
}
}  // namespace

SddeOptions SddeOptions::defaults() { return detail::process_default<SddeOptions>(); }
void SddeOptions::set_defaults(const SddeOptions& o) { detail::set_process_default(o); }

Sdde::Sdde(MPI_Comm comm, Locality loc, SddeOptions options)
    : comm_(comm), loc_(std::move(loc)), opt_(std::move(options)) {
  if (loc_.size() != comm_.size())
    throw InputError("Sdde: the locality describes " + std::to_string(loc_.size()) +
                     " ranks but the communicator has " + std::to_string(comm_.size()));
  local_comm_ = Comm(loc_.local_comm());
}

Sdde::Sdde(MPI_Comm comm, Locality loc) : Sdde(comm, std::move(loc), SddeOptions::defaults()) {}

Sdde::Sdde(MPI_Comm comm) : Sdde(comm, Locality::detect(comm)) {}

const std::vector<std::string>& Sdde::strategies() { return strategy_list(); }

Sdde& Sdde::over_nodes() {
  if (!nodes_) nodes_ = std::make_unique<Sdde>(comm_.get(), Locality::parse(comm_.get(), "node"), opt_);
  return *nodes_;
}

void Sdde::prepare(const std::string& strategy) {
  check_strategy(strategy);
  if (strategy == "node_window") return over_nodes().prepare("locality_personalized");
  if (group_checked_ || strategy.rfind("locality_", 0) != 0) return;
  group_checked_ = true;  // every rank decides alike, from the locality
  bool equal = loc_.num_regions() > 1;
  for (int r = 1; equal && r < loc_.num_regions(); ++r) equal = loc_.region_size(r) == loc_.region_size(0);
  if (!equal) return;
  MPI_Comm g = MPI_COMM_NULL;
  SPC_MPI(MPI_Comm_split(comm_.get(), loc_.local_rank(), loc_.region(), &g));
  group_comm_ = Comm::adopt(g);
}

bool Sdde::fixed_size_only(const std::string& s) { return s == "rma"; }

void Sdde::check_strategy(const std::string& s) {
  const auto& all = strategy_list();
  if (std::find(all.begin(), all.end(), s) != all.end()) return;
  std::string names;
  for (const auto& n : all) names += (names.empty() ? "" : ", ") + n;
  throw InputError("unknown SDDE strategy '" + s + "'; valid strategies: " + names);
}

bool Sdde::check_collective_args_default() { return SddeOptions::defaults().check_collective_args; }

std::string Sdde::check_messages(const detail::Outbox& send, size_t elem, int64_t fixed_count) const {
  const int p = comm_.size();
  try {
    if (send.ptr.size() != send.ranks.size() || send.len.size() != send.ranks.size())
      throw InputError("SDDE: the message list's ranks, pointers and lengths differ in number");
    // Repeated destinations through a sorted copy: O(k log k) for k messages, where a
    // table of P flags would cost every exchange P bytes whatever its k.
    std::vector<int> dests(send.ranks);
    std::sort(dests.begin(), dests.end());
    const auto repeated = std::adjacent_find(dests.begin(), dests.end());
    for (size_t i = 0; i < send.ranks.size(); ++i) {
      const int r = send.ranks[i];
      if (r < 0 || r >= p)
        throw InputError("SDDE: destination rank " + std::to_string(r) + " out of range [0, " + std::to_string(p) + ")");
      if (repeated != dests.end() && r == *repeated)
        throw InputError("SDDE: two messages to rank " + std::to_string(r) + " in one exchange");
      const int64_t n = send.len[i];
      if (n < 0) throw InputError("SDDE: a message of negative length (offsets must be non-decreasing)");
      if (n > 0 && !send.ptr[i]) throw InputError("SDDE: a message without data");
      if (n > INT_MAX) throw InputError("SDDE: a message of more than 2^31 bytes");
      if (fixed_count >= 0 && n != fixed_count * static_cast<int64_t>(elem))
        throw InputError("SDDE: fixed-size exchange of " + std::to_string(fixed_count) + " elements, but the message to rank " +
                         std::to_string(r) + " has " + std::to_string(n / static_cast<int64_t>(elem)));
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

ByteMessages Sdde::exchange_bytes(const ByteMessages& send, size_t elem, int64_t fixed_count,
                                  const std::string& strategy, Stats* stats, const std::string& caller_error) {
  // The layout first: Outbox::of reads the offsets. A bad one is this rank's failed check,
  // raised on every rank by the exchange.
  std::string err = caller_error;
  const bool layout_ok = send.offsets.size() == send.ranks.size() + 1 && send.offsets[0] == 0 &&
                         send.offsets.back() == static_cast<int64_t>(send.bytes.size());
  if (err.empty() && !layout_ok) err = "SDDE: offsets do not match the number of messages and the data size";
  const detail::Outbox out = layout_ok && err.empty() ? detail::Outbox::of(send) : detail::Outbox{};
  detail::IntoBytes got;
  exchange_into(out, elem, fixed_count, strategy, got.d, stats, err);
  return got.take();
}

void Sdde::exchange_into(const detail::Outbox& send, size_t elem, int64_t fixed_count, const std::string& strategy,
                         detail::Delivery& into, Stats* stats, const std::string& caller_error) {
  const CommExclusive exclusive(comm_.get(), "Sdde::exchange");
  // Collective arguments (the strategy, fixed or variable size) are the same on every rank,
  // as an MPI collective's op or root: checked locally here, which fails on every rank
  // alike. Whether ranks really passed the same costs one allreduce, made only when
  // check_collective_args() is on (docs/architecture.md, "SDDE agreement").
  check_strategy(strategy);
  if (fixed_count < 0 && fixed_size_only(strategy))
    throw InputError("SDDE strategy '" + strategy +
                     "' supports fixed-size messages only: use exchange_fixed(), or another strategy");
  // Per-rank input (destinations, sizes; the caller's own checks): a failure here travels
  // inside the strategy's own collective, and every rank raises it.
  std::string err = caller_error.empty() ? check_messages(send, elem, fixed_count) : caller_error;
  if (check_collective_args()) {
    uint64_t h = std::hash<std::string>{}(strategy) ^ (static_cast<uint64_t>(fixed_count + 1) * 0x9e3779b97f4a7c15ull);
    uint64_t local[3] = {err.empty() ? 0u : 1u, h, ~h}, mx[3];
    SPC_MPI(MPI_Allreduce(local, mx, 3, MPI_UINT64_T, MPI_MAX, comm_.get()));
    if (mx[1] != h || mx[2] != ~h) {
      if (err.empty()) err = "SDDE: ranks called the exchange with different strategies or sizes";
      mx[0] = 1;
    }
    if (mx[0]) agree(comm_.get(), err);  // some rank has a message: every rank throws it
  }

  // A fresh tag per call keeps consecutive exchanges apart (a fast rank may already be in
  // the next call while a slow one still probes in this one).
  const int tag = 1000 + (calls_++ % 2048);
  ScopedTimer timer(stats, "sdde." + strategy);
  detail::Channel global{comm_.get(), tag, stats, "direct", [this](int r) { return loc_.same_region(r); }};
  if (strategy == "personalized") {
#ifndef SPARSECOMM_SMPI
    // From the second call of an Sdde on: where the communicator lies within one node, the
    // counts (and sizes) are exchanged through its shared window (made then, collectively:
    // a one-shot Sdde does not pay for a window it would use once).
    // Across nodes (agents: few nodes), the table through every node's windows and one
    // message per pair of nodes (node_table).
    if (++personalized_calls_ >= 2) {
      const bool failed = !err.empty();
      if (RegionWindow* w = RegionWindow::of(comm_.get(), 0, opt_.window))
        return detail::personalized_by_table(global, send, err, into, [&](auto* from) { return w->table_messages(send, failed, from); });
      if (Sdde* nodes = by_agents())
        return detail::personalized_by_table(global, send, err, into,
                                     [&](auto* from) { return nodes->node_table(send, failed, tag, from); });
    }
#endif
    return detail::personalized(global, send, err, into);
  }
  if (strategy == "nbx") {
#ifndef SPARSECOMM_SMPI
    // As personalized: from the second call on, the barrier in the window within one node,
    // across nodes through the nodes' windows (node_barrier).
    if (++nbx_calls_ >= 2) {
      if (RegionWindow* w = RegionWindow::of(comm_.get(), 0, opt_.window)) {
        struct Flags : detail::NbxBarrier {
          RegionWindow* w;
          explicit Flags(RegionWindow* x) : w(x) {}
          void arrive(bool failed) override { w->arrive(failed); }
          bool test(bool* any_failed) override { return w->arrived(any_failed); }
          bool receipts(int) const override { return true; }
          void expect(size_t n) override { w->expect(n); }
          void received(int src) override { w->received(src); }
          bool all_received() const override { return w->all_received(); }
        } flags(w);
        return detail::nbx(global, send, err, into, nullptr, &flags);
      }
      if (Sdde* nodes = by_agents()) return detail::nbx(global, send, err, into, nullptr, nodes->node_barrier(tag).get());
    }
#endif
    return detail::nbx(global, send, err, into);
  }
  if (strategy == "rma") return detail::rma(global, send, fixed_count * static_cast<int64_t>(elem), err, into);
  // node_window: the locality-aware exchange with the real nodes as regions, whatever this
  // Sdde's regions, so that its redistribution runs through each node's window (on one
  // node: that step alone, one round of the window's flags and no message).
  if (strategy == "node_window") return over_nodes().node_window_exchange(send, err, tag, stats, into);
  locality_exchange(send, strategy == "locality_nbx", tag, stats, err, into);
}

}  // namespace sparsecomm
