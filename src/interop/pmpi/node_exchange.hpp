#pragma once
// The one-node exchange of the PMPI layer (pmpi_neighbor.cpp): MPI_Neighbor_allgather and
// MPI_Neighbor_alltoall on a communicator whose ranks share one node, for programs that do
// not promise fixed counts, with no agreement per call.
//
// Why it needs none. A plan is built for one block size, so a call whose sizes may differ
// from the last one's must first learn, collectively, whether any rank's did (an
// allreduce: 0.3 ms at 32 ranks on this 2-core node, more than the exchange). This
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
// communicator, tag = the writer's slot (Open MPI's single-copy path for large messages).
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
#ifndef SPARSECOMM_SMPI
#include <mpi.h>

#include <memory>
#include <vector>

#include "comm/plan/shm_channel.hpp"

namespace sparsecomm::pmpi {

class NodeExchange {
 public:
  /// Collective over `comm` (every rank on one node; the caller has agreed that). MPI's
  /// neighbor lists (MPI_PROC_NULL allowed). Null, alike on every rank, where the MPI cannot
  /// allocate a shared window.
  static std::unique_ptr<NodeExchange> create(MPI_Comm comm, const std::vector<int>& sources,
                                              const std::vector<int>& destinations, int64_t edge_max);
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
  /// One blocking call: MPI_SUCCESS, MPI_ERR_TRUNCATE where a source's block differs from
  /// its receive count, MPI_ERR_BUFFER for MPI_IN_PLACE (not defined for neighborhood
  /// collectives; the readers see no block and report theirs).
  int call(Shape shape, const Side& send, const Side& recv);

 private:
  NodeExchange(MPI_Comm comm, MPI_Comm dup) : window_(dup, comm), channel_(window_.add_lane()), dup_(dup) {}
  void progress();

  detail::ShmWindow window_;
  detail::ShmChannel& channel_;
  MPI_Comm dup_;                   // the private duplicate: the window's set-up and the messages
  std::vector<int> src_, dst_;     // MPI's lists
  std::vector<int> pair_;          // source slot s: the slot of its writer that sends to it
  std::vector<int> writer_of_;     // source slot s: its writer's index in the channel (-1: MPI_PROC_NULL)
  std::vector<uint64_t> consumed_; // per writer: its epochs read
  int64_t header_ = 0, area_ = 0, edge_max_ = 0;
  uint64_t epoch_ = 0, calls_ = 0;
  int patience_ = 256;
  std::vector<MPI_Request> reqs_;
  std::vector<char> pending_;             // per writer, in a call: not yet read
  std::vector<std::vector<char>> spill_;  // receives of blocks larger than expected (erroneous)
};

}  // namespace sparsecomm::pmpi
#endif  // SPARSECOMM_SMPI
