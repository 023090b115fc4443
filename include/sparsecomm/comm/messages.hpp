#pragma once
// The fixed messages of a plan, posted again at every execution (plan once, execute many).
//
// Two ways to post them:
//  - fresh (the default with Open MPI): MPI_Irecv / MPI_Isend at every start. Open MPI
//    4.1's ob1 sends a small message given to MPI_Isend through its inline fast path,
//    while MPI_Start of a persistent request takes the full request path, so small halos
//    exchanged faster fresh in the measurement that set this default (8 ranks on 2 cores:
//    experiments/README.md, "Measurements behind defaults");
//  - persistent: MPI_Send_init / MPI_Recv_init once, MPI_Startall at every start (what
//    Hypre's comm package and PETSc's basic star forest do). The SMPI build's default: its
//    per-message CPU cost (below) is calibrated on persistent starts.
//
// Under SMPI every started message is also charged a modelled CPU overhead: SMPI charges
// its smpi/ois send overhead to MPI_Isend but not to persistent starts, and with
// send-is-detached-thresh:0 its receive overhead not at all (../shared/simgrid/NOTES.md), so
// a simulated backend would otherwise get messages for free on the CPU side -- the cost
// message combining exists to save (the LogP "o", on both ends). Seconds per message:
// SmpiMessageCost (the entry points read $SPARSECOMM_SMPI_MSG_COST), default 0.4e-6 (the
// notes' smpi/ois); 0 turns it off.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sparsecomm {

/// SMPI build: the simulated CPU time charged per started message (above); ignored elsewhere.
struct SmpiMessageCost {
  double seconds = 0.4e-6;  ///< >= 0; 0: no charge
  std::string error;        ///< why the value given is no such time: thrown by every start (every rank alike)
};
/// Local: the cost of every later start in this process.
void set_smpi_message_cost(const SmpiMessageCost& cost);

#ifdef SPARSECOMM_SMPI
inline constexpr bool kPersistentRequestsDefault = true;
#else
inline constexpr bool kPersistentRequestsDefault = false;
#endif

class Messages {
 public:
  Messages() = default;
  ~Messages() { free(); }
  Messages(const Messages&) = delete;
  Messages& operator=(const Messages&) = delete;

  /// Room for n messages (before add()).
  void reserve(size_t n) { msgs_.reserve(n); }
  /// Adds a message (before init()); returns its index. `buf` must stay valid.
  size_t add(bool send, const void* buf, int64_t bytes, int peer, int tag);
  /// Fixes the set. persistent: the requests are created now.
  void init(MPI_Comm comm, bool persistent);
  /// Starts every message, in the order added (nothing when empty).
  void start();
  /// Starts message i.
  void start(size_t i);
  /// An address range [from, from + bytes) that start_relocated() moves to `to`.
  struct Relocation {
    const char* from = nullptr;
    int64_t bytes = 0;
    const char* to = nullptr;  ///< null: no relocation
  };
  /// Starts every message like start(), except that a send whose buffer lies in `send`'s
  /// range is sent from the same offset of `send.to`, and a receive in `recv`'s range lands
  /// at the same offset of `recv.to`. Fresh requests only (a persistent request is bound to
  /// its buffer): returns false, starting nothing, for a persistent set.
  bool start_relocated(const Relocation& send, const Relocation& recv);
  /// Waits for every started message (wait_all: MPI_Waitall).
  void wait();
  /// Whether every started message has completed (MPI_Testall: completes them all at once,
  /// or none); true again afterwards, until the next start.
  bool test();
  bool empty() const { return msgs_.empty(); }
  size_t size() const { return msgs_.size(); }
  /// Frees persistent requests (the messages must be complete); idempotent.
  void free() noexcept;

 private:
  struct Msg {
    bool send;
    char* buf;
    int bytes;
    int peer;
    int tag;
  };
  void post(size_t i);
  std::vector<Msg> msgs_;
  std::vector<MPI_Request> reqs_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool persistent_ = kPersistentRequestsDefault;
};

}  // namespace sparsecomm
