// The persistent neighborhood allgather(v) of the C API (SPC_Neighbor_allgather(v)_init*):
// every rank sends one block to all its out-neighbors, on a GatherPlan. The arguments are
// checked locally, then in one collective (checked_and_cross_checked); the received
// block sizes are checked against recvcounts once the plan knows them.
#include <algorithm>
#include <climits>
#include <memory>
#include <string>
#include <vector>

#include "capi_internal.hpp"
#include "core/hash.hpp"

namespace sparsecomm::capi {
namespace {

using sparsecomm::detail::edge_hash;

// What the local checks establish about this rank's call.
struct Checked {
  Options opt;
  std::vector<int> srcs, dsts, rcounts, rdispls;
  int64_t esz = 0;
  uint64_t hash_out = 0, hash_in = 0;  // edge hashes of the neighbor lists
  Topology topo;                       // the peers other than me, ascending, each once
};

// The count and displacement of each in-edge's block: uniform (allgather) or given.
void receive_blocks(const AllgatherArgs& a, int indeg, Checked& c) {
  if (a.uniform) {
    if (a.recvcount < 0) fail(MPI_ERR_COUNT, "recvcount is negative");
    if (static_cast<int64_t>(a.recvcount) * indeg > INT_MAX) fail(SPC_ERR_ARG, "more than 2^31 elements received");
    for (int j = 0; j < indeg; ++j) c.rcounts.push_back(a.recvcount), c.rdispls.push_back(j * a.recvcount);
  } else {
    if (indeg > 0 && (!a.recvcounts || !a.displs)) fail(SPC_ERR_ARG, "recvcounts or displs is NULL");
    c.rcounts.assign(a.recvcounts, a.recvcounts + indeg);
    c.rdispls.assign(a.displs, a.displs + indeg);
  }
}

// Checks the received blocks (a self-loop receives what this rank sends); returns how many
// elements they hold.
int64_t check_receive_blocks(const AllgatherArgs& a, int me, const Checked& c) {
  const int indeg = static_cast<int>(c.srcs.size());
  int64_t recv_total = 0;
  for (int j = 0; j < indeg; ++j) {
    if (c.rcounts[j] < 0) fail(MPI_ERR_COUNT, "recvcounts[" + std::to_string(j) + "] is negative");
    if (c.rdispls[j] < 0) fail(SPC_ERR_ARG, "displs[" + std::to_string(j) + "] is negative");
    if (static_cast<int64_t>(c.rdispls[j]) + c.rcounts[j] > INT_MAX) fail(SPC_ERR_ARG, "a block beyond 2^31 elements");
    recv_total += c.rcounts[j];
    if (c.srcs[j] == me && c.rcounts[j] != a.sendcount)
      fail(SPC_ERR_MISMATCH, "self-loop of rank " + std::to_string(me) + ": sendcount " + std::to_string(a.sendcount) +
                                 " but recvcounts[" + std::to_string(j) + "] = " + std::to_string(c.rcounts[j]));
  }
  return recv_total;
}

// The edge hashes of the neighbor lists and the plan's topology.
void hash_and_topology(int me, Checked& c) {
  for (int d : c.dsts) {
    c.hash_out += edge_hash(me, d);
    if (d != me) c.topo.destinations.push_back(d);
  }
  for (int s : c.srcs) {
    c.hash_in += edge_hash(s, me);
    if (s != me) c.topo.sources.push_back(s);
  }
  for (auto* v : {&c.topo.sources, &c.topo.destinations}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
}

// The local checks (no communication).
void check_locally(const AllgatherArgs& a, const OptionSource& os, MPI_Comm comm, SPC_Request* out, int me,
                   Checked& c) {
  c.opt = resolve_neighborhood(a, os, comm, out, "gather backend", gather_backend_registered, gather_backend_names,
                               c.srcs, c.dsts, c.esz);
  const int indeg = static_cast<int>(c.srcs.size());
  if (a.sendcount < 0) fail(MPI_ERR_COUNT, "sendcount is negative");
  receive_blocks(a, indeg, c);
  const int64_t recv_total = check_receive_blocks(a, me, c);
  if (a.sendcount > 0 && !c.dsts.empty() && !a.sendbuf) fail(MPI_ERR_BUFFER, "sendbuf is NULL");
  if (recv_total > 0 && !a.recvbuf) fail(MPI_ERR_BUFFER, "recvbuf is NULL");
  hash_and_topology(me, c);
}

// Received block sizes against recvcounts; where every block goes: straight into recvbuf
// where the plan's layout is the user's (direct), else through the staging buffer.
// Collective (agreed).
void place_blocks(MPI_Comm comm, int me, const Checked& c, SPC_Request_s& req) {
  const GatherPlan& g = *req.gplan;
  agreed(comm, [&] {
    const int indeg = static_cast<int>(c.srcs.size());
    bool direct = true;
    for (int j = 0; j < indeg; ++j) {
      const int64_t to = static_cast<int64_t>(c.rdispls[j]) * c.esz;
      if (c.srcs[j] == me) {
        direct = false;
        if (c.rcounts[j] > 0) req.copies.push_back({0, to, c.rcounts[j] * c.esz, true});
        continue;
      }
      const size_t i = static_cast<size_t>(std::lower_bound(c.topo.sources.begin(), c.topo.sources.end(), c.srcs[j]) -
                                           c.topo.sources.begin());
      const int64_t bytes = g.recv_counts()[i];
      if (bytes != c.rcounts[j] * c.esz)
        fail(SPC_ERR_MISMATCH, "rank " + std::to_string(c.srcs[j]) + " -> rank " + std::to_string(me) +
                                   ": the sender's " + "sendcount is " + std::to_string(bytes / c.esz) +
                                   " but recvcounts[" + std::to_string(j) + "] = " + std::to_string(c.rcounts[j]));
      if (i != static_cast<size_t>(j) || to != g.recv_offsets()[i]) direct = false;
      if (bytes > 0) req.copies.push_back({g.recv_offsets()[i], to, bytes, false});
    }
    req.direct = direct;
    if (!direct) req.staging.assign(static_cast<size_t>(std::max<int64_t>(g.recv_total(), 1)), 0);
  });
  if (req.direct) req.copies.clear();
}

}  // namespace

void allgatherv_init(const AllgatherArgs& a, const OptionSource& os, MPI_Comm comm, SPC_Request* out) {
  const CommExclusive exclusive(comm, "SPC_Neighbor_allgather(v)_init");
  apply_environment();  // this call's settings: a variable set since the last call applies
  if (comm == MPI_COMM_NULL) fail(MPI_ERR_COMM, "the communicator is MPI_COMM_NULL");
  if (out) *out = SPC_REQUEST_NULL;
  const int me = comm_rank(comm);
  Checked c;
  checked_and_cross_checked(
      comm, [&] { check_locally(a, os, comm, out, me, c); },
      [&] { return c.opt.canonical() + "|allgather|esz=" + std::to_string(c.esz); }, c.hash_out, c.hash_in);

  const Locality loc = make_locality(comm, c.opt.regions);
  GatherOptions gopt;
  gopt.value_bytes = 1;  // blocks as bytes: any element size
  gopt.sdde = c.opt.sdde;
  gopt.backend = c.opt.backend_options_for(gather_backend_names(), c.opt.backend, gather_backend_option_specs);
  gopt.persistent_requests = c.opt.persistent;
  auto req = std::make_unique<SPC_Request_s>();
  req->gather = true;
  req->gplan = make_gather_plan(c.opt.backend, c.topo, loc, comm, a.sendcount * c.esz, gopt);
  place_blocks(comm, me, c, *req);
  req->sendbuf = a.sendbuf;
  req->recvbuf = a.recvbuf;
  req->esz = c.esz;
  *out = req.release();
}

}  // namespace sparsecomm::capi
