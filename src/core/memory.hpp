#pragma once
// Memory requests as clear errors. A size read from a file or received from another rank
// can ask for more than the machine has; allocating it blindly gets every rank of a node
// killed by the kernel's OOM killer with no message. Before such an allocation, ask here:
//
//   require_memory(comm, bytes_this_rank_needs, "DistCsr: the CSR row pointers of 7e8 rows",
//                  "inherent to CSR storage: run on more nodes");    // collective
//
// The question is per node: the ranks that share a machine share its memory. The common
// case costs one allreduce: when even P times the largest request fits, nobody asks further.
#include <mpi.h>

#include <cstdint>
#include <string>

namespace sparsecomm {

/// The memory the checks below take as available instead of what the machine reports
/// (SPARSECOMM_MEMORY_LIMIT where an entry point read the environment,
/// src/interop/environment.cpp; tests use it to exercise the errors).
struct MemoryLimit {
  int64_t bytes = -1;  ///< >= 0: the bytes available; -1: none (ask the machine)
  std::string error;   ///< why the value given is no number of bytes: the next check's InputError, on every rank
};
/// Local: the limit of this process's later checks (default: none).
void set_memory_limit(const MemoryLimit& limit);
MemoryLimit memory_limit();

/// "12.3 GB", "512 B": for messages.
std::string format_bytes(double bytes);

/// Collective over `comm`: true on every rank when every node can hold what its ranks ask
/// for (`bytes` on this rank), false on every rank otherwise. Unknown memory: true.
bool memory_fits(MPI_Comm comm, int64_t bytes);

/// Collective over `comm`: like memory_fits(), but throws the same InputError on every rank
/// when some node cannot hold it. The message names `what`, the bytes per rank and per node,
/// the memory available, and `advice` (say whether the limit is inherent and what helps).
void require_memory(MPI_Comm comm, int64_t bytes, const std::string& what, const std::string& advice);

/// The same for a size computed in floating point (an estimate whose product may exceed
/// int64_t: rows x width x bytes of a user's request), saturated before the check.
void require_estimated_memory(MPI_Comm comm, double bytes, const std::string& what, const std::string& advice);

}  // namespace sparsecomm
