#pragma once
// Requests of the PMPI layer: an operation the layer runs itself (a non-blocking or
// persistent neighborhood collective on a sparsecomm plan) behind an MPI_Request that the
// program may mix with its own in every completion and start call.
//
// The handle: an inactive persistent request of MPI's own (a zero-byte send to rank 0 of
// MPI_COMM_SELF, never started: placeholder_request()), so it is a valid MPI_Request wherever it
// goes; MPI treats it as inactive, which makes the mixing rule simple: the interposed
// MPI_Wait*/MPI_Test*/MPI_Start*/MPI_Request_free/MPI_Request_get_status (requests.cpp)
// first advance the layer's operations found in the array, and hand the whole array to
// PMPI_*, which ignores (or reports empty for) the layer's still-inactive handles.
//
// Progress rule (documented in docs/interposition.md): an operation advances its later
// stages (combining's stage 2) only inside a completion call on its request or a start of
// another operation on the same plan, not in the background while the rank is blocked in
// an unrelated call, unlike MPI's own non-blocking collectives.
#include <mpi.h>

#include <memory>

namespace sparsecomm::pmpi {

class Operation {
 public:
  virtual ~Operation() = default;
  /// Begins one execution (MPI_Start of a persistent request; at creation otherwise).
  virtual void start() = 0;
  /// Advances; true once the execution is complete (block: wait for it).
  virtual bool progress(bool block) = 0;
};

/// A new inactive persistent request of MPI's own that is never started (freed with
/// PMPI_Request_free): the layer's handle. Never one to MPI_PROC_NULL (see requests.cpp).
MPI_Request placeholder_request();

/// Registers `op`, already started when `active`; returns the handle for the program.
MPI_Request register_operation(std::unique_ptr<Operation> op, bool persistent, bool active);

/// Prints "sparsecomm mpi: error: ..." and ends the process (status 2): an error inside an
/// operation (an MPI error of a plan's messages) has no communicator to report it through.
[[noreturn]] void fail(const char* what);

/// Whether the layer has any request alive (false: every completion call is MPI's alone).
bool any_requests();
/// Whether `r` is one of the layer's requests.
bool is_ours(MPI_Request r);

}  // namespace sparsecomm::pmpi
