// Records the sparsecomm_* MPI_Info keys of communicators as they are created (comm_info.hpp:
// why). Each entry passes the call to MPI's own first, unchanged, and records only after MPI
// succeeded; the record is an attribute of the new communicator, so it dies with it and is
// never copied to a duplicate that MPI_Comm_dup makes (a duplicate's info is MPI's business).
#include "interop/pmpi/comm_info.hpp"

#include <memory>

#include "interop/common/pipeline.hpp"

#define SPC_EXPORT extern "C" __attribute__((visibility("default")))

namespace sparsecomm::pmpi {
namespace {

using Keys = std::map<std::string, std::string>;

int delete_keys(MPI_Comm, int, void* value, void*) {
  delete static_cast<Keys*>(value);
  return MPI_SUCCESS;
}

int keyval() {
  static const int k = [] {
    int v = MPI_KEYVAL_INVALID;
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_keys, &v, nullptr);
    return v;
  }();
  return k;
}

// The info's sparsecomm_* keys, merged into what `comm` has recorded already.
void record(MPI_Comm comm, MPI_Info info) {
  if (comm == MPI_COMM_NULL || info == MPI_INFO_NULL) return;
  const auto read = interop::sparsecomm_keys(info);
  if (read.empty()) return;
  Keys found(read.begin(), read.end());
  void* v = nullptr;
  int has = 0;
  PMPI_Comm_get_attr(comm, keyval(), &v, &has);
  if (has) {
    for (auto& [k, value] : found) (*static_cast<Keys*>(v))[k] = value;
    return;
  }
  auto keys = std::make_unique<Keys>(std::move(found));
  if (PMPI_Comm_set_attr(comm, keyval(), keys.get()) == MPI_SUCCESS) keys.release();
}

}  // namespace

bool recorded_info(MPI_Comm comm, std::map<std::string, std::string>* keys) {
  void* v = nullptr;
  int has = 0;
  PMPI_Comm_get_attr(comm, keyval(), &v, &has);
  if (!has) return false;
  *keys = *static_cast<Keys*>(v);
  return true;
}

}  // namespace sparsecomm::pmpi

using sparsecomm::pmpi::record;

SPC_EXPORT int MPI_Dist_graph_create_adjacent(MPI_Comm old, int indegree, const int sources[],
                                              const int sourceweights[], int outdegree, const int destinations[],
                                              const int destweights[], MPI_Info info, int reorder, MPI_Comm* out) {
  const int rc = PMPI_Dist_graph_create_adjacent(old, indegree, sources, sourceweights, outdegree, destinations,
                                                 destweights, info, reorder, out);
  if (rc == MPI_SUCCESS) record(*out, info);
  return rc;
}

SPC_EXPORT int MPI_Dist_graph_create(MPI_Comm old, int n, const int sources[], const int degrees[],
                                     const int destinations[], const int weights[], MPI_Info info, int reorder,
                                     MPI_Comm* out) {
  const int rc = PMPI_Dist_graph_create(old, n, sources, degrees, destinations, weights, info, reorder, out);
  if (rc == MPI_SUCCESS) record(*out, info);
  return rc;
}

SPC_EXPORT int MPI_Comm_dup_with_info(MPI_Comm old, MPI_Info info, MPI_Comm* out) {
  const int rc = PMPI_Comm_dup_with_info(old, info, out);
  if (rc == MPI_SUCCESS) record(*out, info);
  return rc;
}

SPC_EXPORT int MPI_Comm_set_info(MPI_Comm comm, MPI_Info info) {
  const int rc = PMPI_Comm_set_info(comm, info);
  if (rc == MPI_SUCCESS) record(comm, info);
  return rc;
}
