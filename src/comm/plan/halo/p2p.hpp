#pragma once
// The in-process options of the p2p backend (p2p.cpp declares them): what a caller that
// builds p2p plans itself sets so that setup runs no collective and the messages are the
// ones MPI's neighborhood alltoallv sends (one message per edge).
#include <cstdint>
#include <memory>
#include <vector>

#include "sparsecomm/core/mpi_util.hpp"

namespace sparsecomm {

/// Option "channel": run on `comm`, shared with other plans (a communicator's library
/// duplicate), with messages tagged `tag`, instead of on a duplicate of the plan's own.
struct P2pChannel {
  std::shared_ptr<const Comm> comm;
  int tag = 0;
};

/// Option "messages": the entry count of each message, per side in pattern order: each
/// neighbor's entries are cut into consecutive messages of these sizes (which add up to its
/// count). Both ends of an edge must cut alike, as MPI matches messages between two ranks in
/// order (one message per edge, repeated edges included).
struct P2pMessages {
  std::vector<int64_t> send, recv;
};

}  // namespace sparsecomm
