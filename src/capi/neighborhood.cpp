// The argument checks that the C API's collective calls share: neighbor lists, datatypes,
// the options with their defaults, and the one-collective check that every rank passed
// the same options and consistent neighbor lists.
#include <algorithm>
#include <string>
#include <vector>

#include "capi_internal.hpp"

namespace sparsecomm::capi {
namespace {

// Neighbors of a distributed graph communicator; MPI_ERR_TOPOLOGY for any other.
void graph_neighbors(MPI_Comm comm, std::vector<int>& sources, std::vector<int>& destinations) {
#ifdef SPARSECOMM_SMPI
  // SimGrid SMPI 3.32 aborts on MPI's distributed graph calls: no graph communicator exists.
  (void)comm, (void)sources, (void)destinations;
  fail(SPC_ERR_NOT_IMPLEMENTED,
       "not supported under SMPI: SimGrid has no distributed graph communicators; use the _lists form");
#endif
  int status = MPI_UNDEFINED;
  SPC_MPI(MPI_Topo_test(comm, &status));
  if (status != MPI_DIST_GRAPH)
    fail(MPI_ERR_TOPOLOGY,
         "the communicator is not a distributed graph communicator (MPI_Dist_graph_create_adjacent); "
         "use the _lists form for explicit neighbor lists");
  dist_graph_neighbors(comm, sources, destinations);
}

// Neighbor lists from the graph or from the arguments, checked.
void neighbor_lists(MPI_Comm comm, bool from_graph, int indegree, const int* sources, int outdegree,
                    const int* destinations, std::vector<int>& srcs, std::vector<int>& dsts) {
  if (from_graph) {
    graph_neighbors(comm, srcs, dsts);
  } else {
    if (indegree < 0 || outdegree < 0) fail(SPC_ERR_ARG, "negative indegree or outdegree");
    if ((indegree > 0 && !sources) || (outdegree > 0 && !destinations))
      fail(SPC_ERR_ARG, "sources or destinations is NULL");
    srcs.assign(sources, sources + indegree);
    dsts.assign(destinations, destinations + outdegree);
  }
  const int p = comm_size(comm);
  for (int r : srcs)
    if (r < 0 || r >= p) fail(MPI_ERR_RANK, "source rank " + std::to_string(r) + " out of range [0, " + std::to_string(p) + ")");
  for (int r : dsts)
    if (r < 0 || r >= p)
      fail(MPI_ERR_RANK, "destination rank " + std::to_string(r) + " out of range [0, " + std::to_string(p) + ")");
}

}  // namespace

void dist_graph_neighbors(MPI_Comm comm, std::vector<int>& sources, std::vector<int>& destinations) {
#ifdef SPARSECOMM_SMPI
  (void)comm, (void)sources, (void)destinations;
  fail(SPC_ERR_NOT_IMPLEMENTED, "not supported under SMPI: SimGrid has no distributed graph communicators");
#endif
  int indeg = 0, outdeg = 0, weighted = 0;
  SPC_MPI(MPI_Dist_graph_neighbors_count(comm, &indeg, &outdeg, &weighted));
  // Room for at least one entry each: MPI may write through the pointers even for degree 0.
  sources.resize(static_cast<size_t>(std::max(indeg, 1)));
  destinations.resize(static_cast<size_t>(std::max(outdeg, 1)));
  if (weighted) {
    std::vector<int> sw(sources.size()), dw(destinations.size());
    SPC_MPI(MPI_Dist_graph_neighbors(comm, indeg, sources.data(), sw.data(), outdeg, destinations.data(), dw.data()));
  } else {
    SPC_MPI(MPI_Dist_graph_neighbors(comm, indeg, sources.data(), MPI_UNWEIGHTED, outdeg, destinations.data(),
                                     MPI_UNWEIGHTED));
  }
  sources.resize(static_cast<size_t>(indeg));
  destinations.resize(static_cast<size_t>(outdeg));
}

// The body's failure flag, the hash of the options and both edge-hash sums travel in one
// allreduce_max_sum; only when something is wrong do the ranks agree on the message (the
// failure path's own collectives).
void checked_and_cross_checked(MPI_Comm comm, const std::function<void()>& body,
                               const std::function<std::string()>& canonical, const uint64_t& out,
                               const uint64_t& in) {
  std::string err;
  detail::ErrorKind kind = detail::ErrorKind::input;
  try {
    body();
  } catch (const NotImplementedError& e) {
    err = e.what(), kind = detail::ErrorKind::not_implemented;
  } catch (const InputError& e) {
    err = e.what();
  } catch (const std::exception& e) {
    err = e.what(), kind = detail::ErrorKind::generic;
  }
  const std::string canon = err.empty() ? canonical() : "";
  const uint64_t h = fnv(canon);
  MaxSum mine;
  mine.max[0] = err.empty() ? 0 : 1, mine.max[1] = h, mine.max[2] = ~h;
  mine.sum[0] = err.empty() ? out : 0, mine.sum[1] = err.empty() ? in : 0;
  const MaxSum all = allreduce_max_sum(comm, mine);
  if (all.max[0] != 0) {  // someone failed in the body: its message, everywhere (the others' checks moot)
    detail::agree_kind(comm, kind, err);
    return;
  }
  // Alike on every rank (see make_plan): options differ somewhere iff max(h) != h or
  // max(~h) != ~h here; the sums are the same everywhere.
  const bool differ = all.max[1] != h || all.max[2] != ~h, lists = all.sum[0] != all.sum[1];
  if (!differ && !lists) return;
  if (differ)
    err = coded(SPC_ERR_MISMATCH, "ranks passed different sparsecomm_* options or datatype sizes (rank " +
                                      std::to_string(comm_rank(comm)) + ": " + canon + ")");
  else
    err = coded(SPC_ERR_MISMATCH, kListsMismatch);
  agree(comm, err);
}

Options resolve_neighborhood(const NeighborhoodArgs& a, const OptionSource& os, MPI_Comm comm, SPC_Request* out,
                             const char* backend_kind, bool (*registered)(const std::string&),
                             std::vector<std::string> (*names)(), std::vector<int>& srcs, std::vector<int>& dsts,
                             int64_t& esz) {
  if (!out) fail(SPC_ERR_REQUEST, "request is NULL");
  Options opt = os.resolve();
  opt.complete(backend_kind, registered, names);
  neighbor_lists(comm, a.from_graph, a.indegree, a.sources, a.outdegree, a.destinations, srcs, dsts);
  const int64_t ssz = contiguous_size(a.sendtype, "sendtype"), rsz = contiguous_size(a.recvtype, "recvtype");
  if (ssz != rsz)
    fail(MPI_ERR_TYPE, "sendtype (" + std::to_string(ssz) + " bytes) and recvtype (" + std::to_string(rsz) +
                           " bytes) must have the same size");
  esz = ssz;
  return opt;
}

// Bytes of a contiguous datatype; MPI_ERR_TYPE for anything else.
int64_t contiguous_size(MPI_Datatype t, const char* what) {
  if (t == MPI_DATATYPE_NULL) fail(MPI_ERR_TYPE, std::string(what) + " is MPI_DATATYPE_NULL");
  int size = 0;
  MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
  SPC_MPI(MPI_Type_size(t, &size));
  SPC_MPI(MPI_Type_get_extent(t, &lb, &extent));
  SPC_MPI(MPI_Type_get_true_extent(t, &tlb, &textent));
  if (size <= 0) fail(MPI_ERR_TYPE, std::string(what) + " has size 0");
  if (lb != 0 || tlb != 0 || extent != size || textent != size)
    fail(MPI_ERR_TYPE, std::string(what) + " is not contiguous (size " + std::to_string(size) + ", extent " +
                           std::to_string(extent) + ", true extent " + std::to_string(textent) +
                           "); sparsecomm supports contiguous datatypes only");
  return size;
}

// Largest Plan value size (8, 4, 2 or 1 bytes) that divides the element size.
int unit_for(int64_t esz) {
  for (int u : {8, 4, 2})
    if (esz % u == 0) return u;
  return 1;
}

}  // namespace sparsecomm::capi
