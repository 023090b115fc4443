#pragma once
// Allgather-shaped neighborhood exchange (MPI_Neighbor_allgather(v) semantics): every
// rank sends the same block to each of its out-neighbors and receives one block from each
// in-neighbor, over a distributed graph Topology. Plan once, execute many:
//
//   Topology t = Topology::moore(comm, 2, 2);
//   auto plan = make_gather_plan("combined", t, loc, comm, count);   // collective
//   plan->start(my_block);  ...  plan->wait(recv);   // recv: sources' blocks, sorted by source
//
// Backends register under names like the halo-exchange Plans; they only move bytes.
#include <mpi.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sparsecomm/comm/plan/backend_hooks.hpp"
#include "sparsecomm/comm/plan/backend_options.hpp"
#include "sparsecomm/comm/plan/plan_base.hpp"
#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/comm/messages.hpp"
#include "sparsecomm/core/stats.hpp"
#include "sparsecomm/comm/topology.hpp"

namespace sparsecomm {

struct GatherOptions {
  int value_bytes = 8;         ///< bytes of one value
  std::string sdde = kDefaultSdde;  ///< SDDE strategy for setup exchanges
  /// Persistent requests built once, or Isend/Irecv at every start (as PlanOptions).
  bool persistent_requests = kPersistentRequestsDefault;
  /// Every rank passes the same block size (MPI_Neighbor_allgather rather than ...v): the
  /// sizes are checked with the options' allreduce instead of one message per edge. Ranks
  /// that pass different sizes get an InputError on every rank.
  bool same_count = false;
  /// Options only some backends read (as PlanOptions::backend): "combined" takes k, theta,
  /// aware, rounds and schedule. Validated by make_gather_plan.
  BackendOptions backend;
};

class GatherPlan : public PlanBase {
 public:

  // Execution: start / wait / test / exchange, as a halo Plan's: the byte-level core over
  // untyped blocks (my_count() values of value_bytes bytes each), and a typed convenience
  // over T of value_bytes bytes (checked) that calls it.

  /// Starts sending my block (my_count() values).
  void start(const void* block);
  /// Completes; recv receives the sources' blocks in source order at recv_offsets().
  void wait(void* recv);
  /// Like wait(), without blocking: false while messages are outstanding (call again), true
  /// once complete, with recv filled as wait() fills it. Later stages of a multi-stage plan
  /// advance inside test() and wait() calls only. NotImplementedError for a backend without
  /// it.
  bool test(void* recv);
  void exchange(const void* block, void* recv) {
    start(block);
    wait(recv);
  }
  template <class T>
  void start(const T* block) {
    check(sizeof(T));
    start(static_cast<const void*>(block));
  }
  template <class T>
  void wait(T* recv) {
    check(sizeof(T));
    wait(static_cast<void*>(recv));
  }
  template <class T>
  bool test(T* recv) {
    check(sizeof(T));
    return test(static_cast<void*>(recv));
  }
  template <class T>
  void exchange(const T* block, T* recv) {
    start(block);
    wait(recv);
  }

  const Topology& topology() const { return topo_; }
  int64_t my_count() const { return my_count_; }
  /// Values received from each source, and where they start in the receive buffer.
  const std::vector<int64_t>& recv_counts() const { return recv_counts_; }
  const std::vector<int64_t>& recv_offsets() const { return recv_offsets_; }
  int64_t recv_total() const { return recv_offsets_.back(); }
  /// Bytes of one counted value (GatherOptions::value_bytes).
  int64_t value_bytes_per_count() const { return opt_.value_bytes; }
  /// For combining backends: groups this rank leads, rounds run; 0 for others.
  int groups_led() const { return groups_led_; }

 protected:
  /// Collective: learns the block sizes of the sources (one message per edge; none with
  /// opt.same_count).
  GatherPlan(std::string name, const Topology& topo, const Locality& loc, MPI_Comm comm, int64_t my_count,
             const GatherOptions& opt);
  // do_start() sends block_buf() (or what do_block_target() returned); do_wait() and
  // do_test() fill recv_buf() (PlanBase).
  /// Where start() copies the caller's block, or nullptr: block_buf(). Called right before
  /// that copy; do_start() follows (the shm backend writes straight into its window).
  virtual char* do_block_target() { return nullptr; }

  const char* block_buf() const { return block_.data(); }
  char* recv_buf() { return recv_.data(); }
  int64_t value_bytes() const { return opt_.value_bytes; }
  const GatherOptions& options() const { return opt_; }
  /// Index of `source` in topology().sources (it must be one).
  size_t source_index(int source) const;
  void set_groups_led(int g) { groups_led_ = g; }

 private:
  friend std::unique_ptr<GatherPlan> make_gather_plan(const std::string&, const Topology&, const Locality&, MPI_Comm,
                                                      int64_t, const GatherOptions&);
  void check(size_t value_size) const;
  Topology topo_;
  GatherOptions opt_;
  int64_t my_count_;
  std::vector<int64_t> recv_counts_, recv_offsets_{0};
  std::vector<char> block_, recv_;
  int groups_led_ = 0;
};

using GatherFactory = std::function<std::unique_ptr<GatherPlan>(const Topology&, const Locality&, MPI_Comm, int64_t,
                                                                const GatherOptions&)>;
namespace virt {
struct Graph;
struct RankCounts;
}  // namespace virt

/// The allgather shape of exchange (GatherPlan) as a backend sees it (as HaloShape).
struct GatherShape {
  static constexpr const char* name = "gather";
  using Factory = GatherFactory;
  /// The counts hook: every virtual rank's counts of one execution on `graph`, ranks in
  /// `region`s, `count` values of opt.value_bytes bytes per block.
  using Counts = std::vector<virt::RankCounts>(const virt::Graph& graph, const std::vector<int>& region,
                                               const GatherOptions& opt, int64_t count);
};
/// What the rest of the library needs from a gather backend besides its plans (as
/// BackendHooks for halo backends; auto's terms unused).
using GatherBackendHooks = BackendHooksFor<GatherShape>;

void register_gather_backend(const std::string& name, const std::string& description, GatherFactory f,
                             GatherBackendHooks hooks = {});
/// The hooks registered with gather backend `name`; InputError (listing the names) if unknown.
const GatherBackendHooks& gather_backend_hooks(const std::string& name);
std::vector<std::string> gather_backend_names();
/// Whether `name` is a registered gather backend (no list built).
bool gather_backend_registered(const std::string& name);
/// The options make_gather_plan accepts for `name`; InputError if unknown.
std::vector<OptionSpec> gather_backend_option_specs(const std::string& name);
/// One-line description of a gather backend.
std::string gather_backend_description(const std::string& name);
/// The baseline to compare against: MPI's own neighborhood collective ("neighbor"), or
/// "p2p" where it is not registered (the SimGrid SMPI build).
std::string gather_baseline_backend();

/// Collective. `my_count`: values in this rank's block (may differ between ranks:
/// allgatherv). Unknown names or disagreeing ranks: InputError on every rank.
std::unique_ptr<GatherPlan> make_gather_plan(const std::string& backend, const Topology& topo, const Locality& loc,
                                             MPI_Comm comm, int64_t my_count, const GatherOptions& opt = {});

}  // namespace sparsecomm
