#include "core/memory.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <climits>

#include "sparsecomm/core/error.hpp"
#include "core/parse.hpp"
#include "core/process_default.hpp"

namespace sparsecomm {
namespace {

// The first number of a one-line file ("max" and unreadable files: -1).
int64_t read_number(const char* path) {
  std::ifstream in(path);
  std::string tok;
  if (!(in >> tok)) return -1;
  int64_t v = -1;
  return parse_int(tok, v) ? v : -1;
}

// What the node's ranks together ask for, and whether it fits, computed on every rank;
// the verdict is then the same everywhere.
struct NodeDemand {
  int64_t per_rank_max = 0;  ///< the largest request of a rank sharing my node
  int64_t node_total = 0;    ///< the requests of my node's ranks, summed
  int node_ranks = 1;
  int64_t available = -1;
  bool fits = true;
};

// MemAvailable, within the cgroup's limit; -1 where neither is known.
int64_t machine_available_bytes() {
  int64_t avail = -1;
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream ls(line.substr(13));
    int64_t kb = 0;
    if (ls >> kb) avail = kb * 1024;
    break;
  }
  // cgroup v2: a container's limit can be far below the machine's free memory.
  const int64_t max = read_number("/sys/fs/cgroup/memory.max"), cur = read_number("/sys/fs/cgroup/memory.current");
  if (max > 0 && cur >= 0) {
    const int64_t room = std::max<int64_t>(max - cur, 0);
    avail = avail < 0 ? room : std::min(avail, room);
  }
  return avail;
}

NodeDemand node_demand(MPI_Comm comm, int64_t bytes) {
  NodeDemand d;
  const MemoryLimit limit = memory_limit();
  d.available = limit.bytes >= 0 ? limit.bytes : machine_available_bytes();
  int size = 1;
  MPI_Comm_size(comm, &size);
  // Saturated so that the node's sum cannot overflow (a request past what any machine
  // holds fails either way)
  bytes = std::min(bytes, INT64_MAX / std::max(size, 1));
  // One allreduce answers the common case: P times the largest request fits everywhere
  // (and whether some rank's limit is malformed: never read as "no limit" in silence).
  const std::string& bad = limit.error;
  const int64_t avail_or_max = d.available < 0 ? INT64_MAX : d.available;
  int64_t in[3] = {std::max<int64_t>(bytes, 0), -avail_or_max, bad.empty() ? 0 : 1}, out[3];
  SPC_MPI(MPI_Allreduce(in, out, 3, MPI_INT64_T, MPI_MAX, comm));
  if (out[2]) agree(comm, bad);
  const int64_t max_bytes = out[0], min_avail = -out[1];
  const bool surely = min_avail == INT64_MAX || max_bytes == 0 ||
                      (max_bytes <= min_avail / size);  // P * max <= the smallest availability
  if (surely) {
    d.per_rank_max = max_bytes, d.node_total = max_bytes, d.fits = true;
    return d;
  }
  // Otherwise sum per node. Under SimGrid's SMPI every simulated rank lives in this one
  // process: the "node" whose memory they share is the whole communicator.
  MPI_Comm node = MPI_COMM_NULL;
#ifdef SPARSECOMM_SMPI
  SPC_MPI(MPI_Comm_dup(comm, &node));
#else
  SPC_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
#endif
  const int64_t mine = std::max<int64_t>(bytes, 0);
  int64_t sum = 0, mx = 0;
  SPC_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_INT64_T, MPI_SUM, node));
  SPC_MPI(MPI_Allreduce(&mine, &mx, 1, MPI_INT64_T, MPI_MAX, node));
  MPI_Comm_size(node, &d.node_ranks);
  MPI_Comm_free(&node);
  d.node_total = sum, d.per_rank_max = mx;
  d.fits = d.available < 0 || d.node_total <= d.available;
  return d;
}

}  // namespace

void set_memory_limit(const MemoryLimit& limit) { detail::set_process_default(limit); }
MemoryLimit memory_limit() { return detail::process_default<MemoryLimit>(); }

std::string format_bytes(double b) {
  const char* unit[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (b >= 1000 && u < 5) b /= 1000, ++u;
  char buf[48];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, unit[u]);
  return buf;
}

bool memory_fits(MPI_Comm comm, int64_t bytes) {
  const NodeDemand d = node_demand(comm, bytes);
  int ok = d.fits ? 1 : 0, all = 0;
  SPC_MPI(MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm));
  return all == 1;
}

void require_memory(MPI_Comm comm, int64_t bytes, const std::string& what, const std::string& advice) {
  const NodeDemand d = node_demand(comm, bytes);
  std::string err;
  if (!d.fits)
    err = what + ": " + format_bytes(static_cast<double>(d.per_rank_max)) + " per rank, " +
          format_bytes(static_cast<double>(d.node_total)) + " on the " + std::to_string(d.node_ranks) +
          " ranks of this node, but only " + format_bytes(static_cast<double>(d.available)) +
          " are available (MemAvailable, cgroup limit, or $SPARSECOMM_MEMORY_LIMIT)" +
          (advice.empty() ? "" : "; " + advice);
  agree(comm, err);
}

void require_estimated_memory(MPI_Comm comm, double bytes, const std::string& what, const std::string& advice) {
  require_memory(comm, bytes >= 9.0e18 ? INT64_MAX : static_cast<int64_t>(std::max(bytes, 0.0)), what, advice);
}

}  // namespace sparsecomm
