#pragma once
// The one-node exchange: a neighborhood exchange in MPI's three call shapes (one block to
// every neighbor, a block of one size per slot, a block of its own size per slot), any
// datatype, among ranks that share one node, with no agreement per call. Its user today is
// the PMPI layer (src/interop/pmpi: MPI_Neighbor_allgather(v) and _alltoall(v) under auto
// for programs that do not promise fixed counts), which decides when to use it and reads its
// sizes (one_node, shm_block_max, node_area); nothing here depends on that layer. Its MPI
// calls use the PMPI_ names, as core/spin_wait.hpp does: the PMPI layer interposes MPI's
// completion calls and must not see its own exchange's requests come back to it.
//
// Why it needs no agreement. A plan is built for one block size, so a call whose sizes may
// differ from the last one's must first learn, collectively, whether any rank's did (an
// allreduce, which can cost more than the exchange: experiments/pmpi/README.md). This
// exchange is not built for a size: every call, each writer publishes in its
// shared-memory segment a header with its call number and, per destination slot, where its
// block lies and how many bytes it has; each reader takes its blocks from its sources'
// segments after reading their headers. So a call is self-describing and any sizes and
// datatypes work from call to call — the "signature carried in the exchange itself" of
// issue 32. Pairing follows MPI's: destination slot i of a writer is matched to source
// slot s of a reader as MPI_Neighbor_alltoall pairs them (asked once, at set-up: duplicate
// edges, self edges and Cartesian borders as MPI defines them).
//
// Each block goes by one of two ways, chosen by the writer per slot and told in the
// header: into the writer's segment (one copy in, one copy out by each reader: the
// shared-memory path of Hoefler et al., "MPI+MPI", Computing 95, 2013), or, where it is
// larger than `edge_max` or the segment is full, as a message on a private duplicate
// communicator (Open MPI's single-copy path for large messages; the tag names the writer's
// slot, the kind and the call, node_exchange.cpp). A block above `edge_max` is a message
// whatever else happens, so both ends post it at the call's start, receives first.
//
// Synchronisation (shm_channel.hpp's epochs, double-buffered): a writer advances its epoch
// only in calls where it sends a non-empty block, and a reader consumes a writer's epoch
// only where it expects a non-empty block from it. In a correct program the two agree
// (MPI: every edge's send and receive type signatures match, and a writer's blocks of an
// allgather(v) or alltoall have one size), so no rank ever waits on a call its peer
// skipped; a call with nothing to send or receive on a rank is skipped there entirely, as
// MPI's own does. An alltoallv's blocks differ per edge, so there every writer publishes
// and every reader reads every call. The header's call number (calls on this communicator, counted alike on every
// rank since MPI orders them) and byte counts let a reader detect a peer whose counts
// disagree: the call returns MPI_ERR_TRUNCATE (an erroneous program).
//
// Calls in flight (MPI_Ineighbor_*): a call is staged at start() — its epoch and the epochs
// it reads are fixed then, in call order — and its write and reads are made as soon as they
// can be, by whichever start() or progress() of the exchange comes next: a writer publishes
// its epochs in order, each once its buffer's readers are done (a start() never waits for
// another rank, as MPI requires of a non-blocking call's initiation), and reads a writer's
// epochs in order. Any wait of the exchange advances every call in flight, so a rank waiting
// for a buffer to be freed is never waiting on a call its reader has started but cannot
// advance: the reader advances it in its own next wait or call on this exchange. The
// progress rule of the layer's requests (requests.hpp) applies: no progress in the
// background while the program is blocked outside the library.
#ifndef SPARSECOMM_SMPI
#include <mpi.h>

#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "comm/shm_channel.hpp"

namespace sparsecomm::detail {

class NodeExchange {
 public:
  /// Collective over `comm` (every rank on one node; the caller has agreed that). MPI's
  /// neighbor lists (MPI_PROC_NULL allowed). Null, alike on every rank, where the MPI cannot
  /// allocate a shared window. `area`: bytes of this rank's blocks in shared memory per call
  /// (the PMPI layer's node_area, bounded by the caller; a local choice: readers learn each
  /// writer's at set-up); larger blocks go by message.
  static std::unique_ptr<NodeExchange> create(MPI_Comm comm, const std::vector<int>& sources,
                                              const std::vector<int>& destinations, int64_t edge_max, int64_t area);
  ~NodeExchange();
  NodeExchange(const NodeExchange&) = delete;
  NodeExchange& operator=(const NodeExchange&) = delete;

  /// What a writer sends per destination slot: one block to every slot (allgather,
  /// allgatherv), a block of one size per slot (alltoall), or of its own size (alltoallv).
  enum Shape { kOneBlock, kBlocks, kBlocksV };
  /// One side of a call as MPI's arguments give it: `counts`/`displs` per slot (v-calls;
  /// displacements in extents of `type`), else `count` per slot, slot i at i * count.
  struct Side {
    const void* buf;
    int count;
    const int* counts;
    const int* displs;
    MPI_Datatype type;
    int n(size_t i) const { return counts ? counts[i] : count; }
    MPI_Aint at(size_t i) const { return displs ? displs[i] : static_cast<MPI_Aint>(i) * count; }
  };
  /// One call in flight (non-blocking calls may overlap; they complete in any order).
  struct Op {
    uint64_t call = 0;
    Shape shape = kOneBlock;
    Side send{}, recv{};
    bool in_place = false;
    struct Type {        // a side's datatype, read once per call: its size and extent, and
      int64_t size = 0;  // whether its elements are dense (memcpy) or need Pack/Unpack
      MPI_Aint extent = 0;
      bool dense = false;
    } send_type, recv_type;                     // (send: all 0 under MPI_IN_PLACE)
    uint64_t write = 0;                         // my epoch to publish (0: none, or published)
    std::vector<std::pair<size_t, uint64_t>> reads;  // (writer, epoch) still to read
    std::vector<MPI_Request> reqs;              // its messages
    std::vector<int> posted;                    // source slot: its receive in reqs, posted at start (-1: none)
    std::vector<std::vector<char>> spill;       // receives of blocks larger than expected (erroneous)
    bool mismatch = false;
    bool staged() const { return write == 0 && reads.empty(); }  // everything published and read
  };
  /// Begins a call; never waits for another rank (a non-blocking call's initiation is
  /// local in MPI): where this rank's buffer is still being read (it is two calls ahead of
  /// a reader), the write waits in the queue and progress() makes it.
  std::shared_ptr<Op> start(Shape shape, const Side& send, const Side& recv);
  /// Advances every call in flight, in order (so no rank waits on a call another has begun
  /// but not advanced); true once `op` is complete (block: wait for it). Then op_code().
  bool progress(Op& op, bool block);
  /// A completed call's code: MPI_SUCCESS, MPI_ERR_TRUNCATE where a source's block differs
  /// from its receive count, MPI_ERR_BUFFER for MPI_IN_PLACE (not defined for neighborhood
  /// collectives; the readers see no block and report theirs).
  static int op_code(const Op& op) {
    return op.in_place ? MPI_ERR_BUFFER : op.mismatch ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
  }
  /// One blocking call: start() and progress() to completion.
  int call(Shape shape, const Side& send, const Side& recv) {
    const std::shared_ptr<Op> op = start(shape, send, recv);
    progress(*op, true);
    return op_code(*op);
  }

 private:
  NodeExchange(MPI_Comm comm, MPI_Comm dup) : window_(dup, comm), channel_(window_.add_lane()), dup_(dup) {}
  void advance();                       // every staged step that can be made now, in call order
  void write(Op& op);                   // op's header and blocks, its large blocks sent; published
  void read(Op& op, size_t w, uint64_t e);  // op's blocks from writer w's epoch e
  void mpi_progress();

  ShmWindow window_;
  ShmChannel& channel_;
  MPI_Comm dup_;                   // the private duplicate: the window's set-up and the messages
  std::vector<int> src_, dst_;     // MPI's lists
  std::vector<int> pair_;          // source slot s: the slot of its writer that sends to it
  std::vector<int> writer_of_;     // source slot s: its writer's index in the channel (-1: MPI_PROC_NULL)
  std::vector<uint64_t> assigned_, consumed_;  // per writer: epochs given to calls, epochs read
  int64_t header_ = 0, area_ = 0, edge_max_ = 0;
  int call_bits_ = 10;             // the tag's layout (tag() in node_exchange.cpp), from MPI_TAG_UB
  int tag(uint64_t call, int64_t slot, bool big) const;
  uint64_t epoch_ = 0, published_ = 0, calls_ = 0;  // my epochs given to calls, published
  int patience_ = 256;
  std::deque<std::shared_ptr<Op>> staging_;  // calls with a write or reads to make, in call order
  std::vector<char> pending_;                // per writer, at start(): read in this call
};

}  // namespace sparsecomm::detail
#endif  // SPARSECOMM_SMPI
