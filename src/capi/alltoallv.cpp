// The persistent neighborhood alltoallv of the C API (SPC_Neighbor_alltoallv_init*,
// MPIL_Neighbor_alltoallv*). Its arguments are checked in three steps, each ending in an
// agreement so that bad input on one rank is an error on every rank and nobody hangs:
//   1. local checks (pointers, counts, ranks, datatypes, names, info keys);
//   2. one reduction (the Agreement) of their outcome, a hash of the options and the sums
//      of a hash of every edge from both of its ends (the neighbor lists);
//   3. one setup message per edge that tells the receiver the sender's counts (and the ids
//      of the values): every backend then delivers the same result, and a count mismatch
//      is an error instead of a truncation.
// Then make_plan does the work; its own errors are agreed there. With backend p2p (the
// direct path) step 3 and make_plan's collective are skipped: step 2 also compares every
// edge's count and ids, as sums, and settles at the first start (docs/architecture.md,
// "Deferred agreement"), and the request is built locally: one message per edge.
#include <algorithm>
#include <climits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "capi_internal.hpp"
#include "sparsecomm/comm/messages.hpp"
#include "sparsecomm/comm/plan/backend_options.hpp"
#include "core/hash.hpp"

namespace sparsecomm::capi {

using sparsecomm::detail::edge_hash;
using sparsecomm::detail::fmix64;

namespace {

constexpr int kTagSetup = kLibraryTagAlltoallvSetup;  // (on library_comm: core/mpi_util.hpp)

// Order-sensitive hash of a sequence of ids.
struct SeqHash {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  void add(int64_t v) { h = fmix64(h ^ fmix64(static_cast<uint64_t>(v) + 0x632be59bd9b4e019ull)) + 1; }
};

// What step 1 establishes about this rank's call.
struct Checked {
  Options opt;
  std::vector<int> srcs, dsts;
  int64_t esz = 0;
  // The direct path: backend p2p, unless SPARSECOMM_CHECK_COLLECTIVE_ARGS asks for the
  // setup messages that name a mismatched edge.
  bool direct = false;
  Agreement::Local mine;
  std::vector<int> self_out, self_in;  // positions of my self-loops in dsts / srcs
};

// The edges of each peer other than me, peers ascending, edges in list order.
struct PeerEdges {
  std::map<int, std::vector<int>> out, in;
};

}  // namespace

// The tag of the persistent request made by the `sequence`-th alltoallv init on a
// communicator (library_comm's count, the same on every rank): its direct messages and
// its agreement's failure message. Above every fixed tag on library_comm (core/mpi_util.hpp).
int request_tag(uint64_t sequence) { return library_request_tag(sequence); }

// Per edge, its position among the edges between the same two ranks (list order): the
// k-th edge i -> j of the sender is the k-th edge i -> j of the receiver (MPI's matching).
std::vector<int> repeat_index(const std::vector<int>& peers) {
  std::vector<int> k(peers.size(), 0);
  if (peers.size() < 2) return k;
  if (peers.size() <= 64) {  // a scan is cheaper than sorting at the degrees of a halo
    for (size_t i = 1; i < peers.size(); ++i)
      for (size_t j = i; j-- > 0;)
        if (peers[j] == peers[i]) {
          k[i] = k[j] + 1;
          break;
        }
    return k;
  }
  std::vector<int> order(peers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return peers[x] < peers[y]; });
  for (size_t i = 1; i < order.size(); ++i)
    if (peers[order[i]] == peers[order[i - 1]]) k[order[i]] = k[order[i - 1]] + 1;
  return k;
}

// One edge's term of the exact sums: its ends, repeat index, count and (ext) ids' hash.
uint64_t exact_edge(int from, int to, int k, int64_t count, uint64_t ids) {
  return fmix64(edge_hash(from, to, count) ^ fmix64(static_cast<uint64_t>(k) * 0xc2b2ae3d27d4eb4full + ids));
}

namespace {

// The counts and displacements of both sides, the buffers and (ext) the id arrays.
void check_blocks(const AlltoallvArgs& a, int indeg, int outdeg, int64_t esz) {
  if (outdeg > 0 && (!a.sendcounts || !a.sdispls)) fail(SPC_ERR_ARG, "sendcounts or sdispls is NULL");
  if (indeg > 0 && (!a.recvcounts || !a.rdispls)) fail(SPC_ERR_ARG, "recvcounts or rdispls is NULL");
  int64_t send_total = 0, recv_total = 0;
  auto check_block = [&](const char* counts, const char* displs, int i, int64_t c, int64_t d) {
    if (c < 0) fail(MPI_ERR_COUNT, std::string(counts) + "[" + std::to_string(i) + "] is negative");
    if (d < 0) fail(SPC_ERR_ARG, std::string(displs) + "[" + std::to_string(i) + "] is negative");
    if (d + c > INT_MAX) fail(SPC_ERR_ARG, std::string("a block beyond 2^31 elements (") + displs + ")");
    if (c * esz > INT_MAX) fail(SPC_ERR_ARG, std::string("a message of more than 2^31 bytes (") + counts + ")");
  };
  for (int i = 0; i < outdeg; ++i) {
    check_block("sendcounts", "sdispls", i, a.sendcounts[i], a.sdispls[i]);
    send_total += a.sendcounts[i];
  }
  for (int j = 0; j < indeg; ++j) {
    check_block("recvcounts", "rdispls", j, a.recvcounts[j], a.rdispls[j]);
    recv_total += a.recvcounts[j];
  }
  if (send_total > 0 && !a.sendbuf) fail(MPI_ERR_BUFFER, "sendbuf is NULL");
  if (recv_total > 0 && !a.recvbuf) fail(MPI_ERR_BUFFER, "recvbuf is NULL");
  if (a.ext && ((send_total > 0 && !a.gsend) || (recv_total > 0 && !a.grecv)))
    fail(SPC_ERR_ARG, "global_sindices or global_rindices is NULL");
}

// Self-loops: the k-th to myself is the k-th from myself (MPI's matching order); each
// pair must send what it receives.
void pair_self_loops(const AlltoallvArgs& a, int me, Checked& c) {
  const int indeg = static_cast<int>(c.srcs.size()), outdeg = static_cast<int>(c.dsts.size());
  for (int i = 0; i < outdeg; ++i)
    if (c.dsts[i] == me) c.self_out.push_back(i);
  for (int j = 0; j < indeg; ++j)
    if (c.srcs[j] == me) c.self_in.push_back(j);
  if (c.self_out.size() != c.self_in.size())
    fail(SPC_ERR_MISMATCH, "rank " + std::to_string(me) + " lists itself " + std::to_string(c.self_out.size()) +
                               " times as a destination but " + std::to_string(c.self_in.size()) + " times as a source");
  for (size_t k = 0; k < c.self_out.size(); ++k) {
    const int i = c.self_out[k], j = c.self_in[k];
    if (a.sendcounts[i] != a.recvcounts[j])
      fail(SPC_ERR_MISMATCH, "self-loop " + std::to_string(k) + " of rank " + std::to_string(me) + ": sends " +
                                 std::to_string(a.sendcounts[i]) + " values, receives " +
                                 std::to_string(a.recvcounts[j]));
    if (a.ext)
      for (int e = 0; e < a.sendcounts[i]; ++e)
        if (a.gsend[a.sdispls[i] + e] != a.grecv[a.rdispls[j] + e])
          fail(SPC_ERR_MISMATCH, "self-loop of rank " + std::to_string(me) +
                                     ": global_sindices and global_rindices differ");
  }
}

// The direct path's exact sums: what the setup messages would check, every edge's count
// (and ids), as sums from both ends.
void add_exact_sums(const AlltoallvArgs& a, int me, Checked& c) {
  const int indeg = static_cast<int>(c.srcs.size()), outdeg = static_cast<int>(c.dsts.size());
  const std::vector<int> kout = repeat_index(c.dsts), kin = repeat_index(c.srcs);
  auto ids = [&](const int64_t* g, int64_t from, int64_t n) {
    SeqHash h;
    if (a.ext)
      for (int64_t e = 0; e < n; ++e) h.add(g[from + e]);
    return h.h;
  };
  for (int i = 0; i < outdeg; ++i)
    c.mine.exact_out += exact_edge(me, c.dsts[i], kout[i], a.sendcounts[i], ids(a.gsend, a.sdispls[i], a.sendcounts[i]));
  for (int j = 0; j < indeg; ++j)
    c.mine.exact_in += exact_edge(c.srcs[j], me, kin[j], a.recvcounts[j], ids(a.grecv, a.rdispls[j], a.recvcounts[j]));
}

// Step 1: the local checks (no communication). Their outcome, the options' hash and the
// edge hashes go into c.mine for the agreement; a failure is recorded there (as its coded
// message), not thrown, and never takes the direct path.
void check_locally(const AlltoallvArgs& a, const OptionSource& os, MPI_Comm comm, SPC_Request* out, int me,
                   Checked& c) {
  try {
    c.opt = resolve_neighborhood(a, os, comm, out, "backend", backend_registered, backend_names, c.srcs, c.dsts,
                                 c.esz);
    c.direct = c.opt.backend == "p2p" && !Sdde::check_collective_args_default();
    // (checked here for every path: the direct one builds no locality, and a bad value
    // must not be an error or not depending on the backend)
    if (const std::string e = region_spec_error(c.opt.regions, comm_size(comm)); !e.empty())
      fail(SPC_ERR_INFO_VALUE, "sparsecomm_regions: " + e);
    check_blocks(a, static_cast<int>(c.srcs.size()), static_cast<int>(c.dsts.size()), c.esz);
    pair_self_loops(a, me, c);
    for (int d : c.dsts) c.mine.lists_out += edge_hash(me, d);
    for (int s : c.srcs) c.mine.lists_in += edge_hash(s, me);
    if (c.direct) add_exact_sums(a, me, c);
    // The path too: it follows SPARSECOMM_CHECK_COLLECTIVE_ARGS, a per-process setting, and
    // ranks on different paths would not meet in the same collectives.
    c.mine.options = options_hash(c.opt, "|alltoallv|esz=", c.esz,
                                  a.ext ? (c.direct ? "|ext|direct" : "|ext") : (c.direct ? "|positions|direct" : "|positions"));
  } catch (...) {
    c.mine.error = current_exception_coded();
    c.direct = false;
  }
}

// Edges per peer (other than me); self-loops are copied locally (paired in step 1).
PeerEdges edges_per_peer(const Checked& c, int me) {
  PeerEdges pe;
  for (size_t i = 0; i < c.dsts.size(); ++i)
    if (c.dsts[i] != me) pe.out[c.dsts[i]].push_back(static_cast<int>(i));
  for (size_t j = 0; j < c.srcs.size(); ++j)
    if (c.srcs[j] != me) pe.in[c.srcs[j]].push_back(static_cast<int>(j));
  return pe;
}

std::vector<SPC_Request_s::Copy> self_copies(const AlltoallvArgs& a, const Checked& c) {
  std::vector<SPC_Request_s::Copy> copies;
  for (size_t k = 0; k < c.self_out.size(); ++k) {
    const int i = c.self_out[k], j = c.self_in[k];
    if (a.sendcounts[i] > 0) copies.push_back({a.sdispls[i] * c.esz, a.rdispls[j] * c.esz, a.sendcounts[i] * c.esz, true});
  }
  return copies;
}

// The plan's options: the element as units of the largest value size that divides it.
PlanOptions plan_options(const Checked& c) {
  PlanOptions popt;
  popt.value_bytes = unit_for(c.esz);
  popt.width = static_cast<int>(c.esz / popt.value_bytes);
  popt.sdde = c.opt.sdde;
  popt.backend = c.opt.backend_options_for(backend_names(), c.opt.backend, backend_option_specs);
  return popt;
}

// One side of a pattern: per peer (ascending), its edges with data in list order at their
// positions (how MPI matches repeated edges), peers with nothing left out, with the global
// ids as the receivers expect them (`gids` per position, else the positions).
void side_of(const std::map<int, std::vector<int>>& peers, const int* counts, const int* displs,
             const int64_t* gids, PatternSide& side, int32_t& extent) {
  int64_t total = 0;
  for (const auto& pe : peers)
    for (int i : pe.second) total += counts[i];
  side.indices.reserve(static_cast<size_t>(total));
  side.global_ids.reserve(static_cast<size_t>(total));
  for (const auto& [peer, edges] : peers) {
    const int64_t before = side.size();
    for (int i : edges) {
      for (int e = 0; e < counts[i]; ++e) {
        const int32_t pos = displs[i] + e;
        side.indices.push_back(pos);
        side.global_ids.push_back(gids ? gids[pos] : pos);
        extent = std::max(extent, pos + 1);
      }
    }
    if (side.size() == before) continue;
    side.ranks.push_back(peer);
    side.offsets.push_back(side.size());
  }
}

// The direct path's request: one message per edge with data, sent straight from sendbuf
// and received into recvbuf at the edge's displacement (MPI's neighborhood alltoallv), on
// the communicator's library duplicate with the request's own tag; self-loops are local
// copies. Built locally, in time and memory linear in the degree, not in the values: the
// deferred agreement checks what make_plan would, and an edge is a message, so no pattern of
// values is needed. Receives first, then sends, each in list order: the k-th edge i -> j of
// the sender meets the k-th of the receiver (MPI's matching order between two ranks).
std::unique_ptr<SPC_Request_s> direct_request(const AlltoallvArgs& a, const Checked& c, int me,
                                              const std::shared_ptr<const Comm>& lib_ref, int tag) {
  if (const std::string e = validate_backend_options(
          "p2p", backend_option_specs("p2p"), c.opt.backend_options_for(backend_names(), "p2p", backend_option_specs));
      !e.empty())
    fail(SPC_ERR_INFO_VALUE, e);
  auto msgs = std::make_unique<Messages>();
  msgs->reserve(c.srcs.size() + c.dsts.size());
  auto* recv = static_cast<char*>(a.recvbuf);
  const auto* send = static_cast<const char*>(a.sendbuf);
  for (size_t j = 0; j < c.srcs.size(); ++j)
    if (c.srcs[j] != me && a.recvcounts[j] > 0)
      msgs->add(false, recv + a.rdispls[j] * c.esz, a.recvcounts[j] * c.esz, c.srcs[j], tag);
  for (size_t i = 0; i < c.dsts.size(); ++i)
    if (c.dsts[i] != me && a.sendcounts[i] > 0)
      msgs->add(true, send + a.sdispls[i] * c.esz, a.sendcounts[i] * c.esz, c.dsts[i], tag);
  msgs->init(lib_ref->get(), kPersistentRequestsDefault);
  auto req = std::make_unique<SPC_Request_s>();
  req->lib = lib_ref;
  req->msgs = std::move(msgs);
  req->sendbuf = a.sendbuf;
  req->recvbuf = a.recvbuf;
  req->esz = c.esz;
  req->copies = self_copies(a, c);
  return req;
}

// The setup message to one peer: the number of edges, each edge's count, then the ids of
// the values (ext: a hash of them; else their positions in the sender's buffer, which
// become the ids).
std::vector<int64_t> setup_message(const AlltoallvArgs& a, const std::vector<int>& edges) {
  std::vector<int64_t> m{static_cast<int64_t>(edges.size())};
  for (int i : edges) m.push_back(a.sendcounts[i]);
  SeqHash h;
  for (int i : edges)
    for (int e = 0; e < a.sendcounts[i]; ++e) {
      const int64_t pos = static_cast<int64_t>(a.sdispls[i]) + e;
      if (a.ext) h.add(a.gsend[pos]);
      else m.push_back(pos);
    }
  if (a.ext) m.push_back(static_cast<int64_t>(h.h));
  return m;
}

// Step 3: the setup messages, on a duplicate (never matches user traffic); returns what
// each in-peer sent.
std::map<int, std::vector<int64_t>> exchange_setup(const AlltoallvArgs& a, MPI_Comm comm, const PeerEdges& pe) {
  std::map<int, std::vector<int64_t>> inbox;
  const MPI_Comm setup = library_comm(comm);  // duplicated once per communicator
  std::vector<std::vector<int64_t>> outbox;
  std::vector<MPI_Request> reqs;
  outbox.reserve(pe.out.size());
  for (const auto& [d, edges] : pe.out) {
    outbox.push_back(setup_message(a, edges));
    reqs.emplace_back(MPI_REQUEST_NULL);
    SPC_MPI(MPI_Isend(outbox.back().data(), static_cast<int>(outbox.back().size()), MPI_INT64_T, d, kTagSetup, setup,
                      &reqs.back()));
  }
  for (const auto& [s, edges] : pe.in) {
    MPI_Status st;
    SPC_MPI(MPI_Probe(s, kTagSetup, setup, &st));
    int n = 0;
    SPC_MPI(MPI_Get_count(&st, MPI_INT64_T, &n));
    auto& m = inbox[s];
    m.resize(static_cast<size_t>(n));
    SPC_MPI(MPI_Recv(m.data(), n, MPI_INT64_T, s, kTagSetup, setup, MPI_STATUS_IGNORE));
  }
  wait_all(reqs);
  return inbox;
}

// Checks peer s's setup message `m` against this rank's in-edges from s; returns the
// number of values s sends.
int64_t check_setup_message(const AlltoallvArgs& a, const std::vector<int64_t>& m, const std::vector<int>& edges,
                            const std::string& who) {
  if (m.empty() || m[0] != static_cast<int64_t>(edges.size()))
    fail(SPC_ERR_MISMATCH, who + "the sender lists the receiver " + (m.empty() ? "?" : std::to_string(m[0])) +
                               " times as a destination, the receiver lists the sender " +
                               std::to_string(edges.size()) + " times as a source");
  int64_t total = 0;
  for (size_t k = 0; k < edges.size(); ++k) {
    if (m[1 + k] != a.recvcounts[edges[k]])
      fail(SPC_ERR_MISMATCH, who + "edge " + std::to_string(k) + " sends " + std::to_string(m[1 + k]) +
                                 " values but recvcounts[" + std::to_string(edges[k]) + "] = " +
                                 std::to_string(a.recvcounts[edges[k]]));
    total += m[1 + k];
  }
  if (m.size() != 1 + edges.size() + (a.ext ? 1 : static_cast<size_t>(total)))
    fail(SPC_ERR_INTERNAL, who + "malformed setup message");
  return total;
}

// The receive side of the pattern: recvbuf positions, with the ids the senders name.
void add_receive_side(const AlltoallvArgs& a, int me, const PeerEdges& pe,
                      std::map<int, std::vector<int64_t>>& inbox, PatternSide& recv, int32_t& ghost) {
  for (const auto& [s, edges] : pe.in) {
    const auto& m = inbox[s];
    const std::string who = "rank " + std::to_string(s) + " -> rank " + std::to_string(me) + ": ";
    if (check_setup_message(a, m, edges, who) == 0) continue;
    const size_t head = 1 + edges.size();
    SeqHash h;
    recv.ranks.push_back(s);
    size_t next = head;
    for (int j : edges)
      for (int e = 0; e < a.recvcounts[j]; ++e) {
        const int32_t q = a.rdispls[j] + e;
        recv.indices.push_back(q);
        ghost = std::max(ghost, q + 1);
        if (a.ext) {
          h.add(a.grecv[q]);
          recv.global_ids.push_back(a.grecv[q]);
        } else {
          recv.global_ids.push_back(m[next++]);
        }
      }
    recv.offsets.push_back(static_cast<int64_t>(recv.indices.size()));
    if (a.ext && static_cast<int64_t>(h.h) != m[head])
      fail(SPC_ERR_MISMATCH, who + "the global ids the sender sends (global_sindices) differ from those the "
                                   "receiver expects (global_rindices), in value or order");
  }
}

// Step 4: the pattern. The send side packs from sendbuf positions, the receive side
// unpacks into recvbuf positions; peers ascending, edges of one peer concatenated in list
// order (how MPI matches repeated edges). Peers with nothing to exchange are left out on
// both sides (their counts are known to agree). A failed check leaves the pattern empty
// and its message in `error`, to ride make_plan's own collective (its caller_error).
Pattern build_pattern(const AlltoallvArgs& a, int me, const PeerEdges& pe, std::map<int, std::vector<int64_t>>& inbox,
                      std::string& error) {
  PatternSide send, recv;
  int32_t owned = 0, ghost = 0;
  try {
    add_receive_side(a, me, pe, inbox, recv, ghost);
    side_of(pe.out, a.sendcounts, a.sdispls, a.ext ? a.gsend : nullptr, send, owned);
  } catch (const std::exception& e) {
    error = e.what();
    send = recv = PatternSide{};
    owned = ghost = 0;
  }
  return Pattern(std::move(send), std::move(recv), owned, ghost);
}

// Step 5: the plan (collective; its errors are agreed by make_plan) and the request.
SPC_Request plan_request(const AlltoallvArgs& a, const Checked& c, MPI_Comm comm, const Locality* cached,
                         const std::string& cached_regions, const Pattern& pattern, const std::string& pattern_error,
                         std::vector<SPC_Request_s::Copy> copies) {
  const Locality loc = (cached && cached_regions == c.opt.regions) ? *cached : make_locality(comm, c.opt.regions);
  const PlanOptions popt = plan_options(c);
  auto req = std::make_unique<SPC_Request_s>();
  req->plan = make_plan(c.opt.backend, pattern, loc, comm, popt, pattern_error);
  req->sendbuf = a.sendbuf;
  req->recvbuf = a.recvbuf;
  req->esz = c.esz;
  req->copies = std::move(copies);
  return req.release();
}

}  // namespace

void alltoallv_init(const AlltoallvArgs& a, const OptionSource& os, MPI_Comm comm, const Locality* cached,
                    const std::string& cached_regions, SPC_Request* out) {
  const CommExclusive exclusive(comm, "SPC_Neighbor_alltoallv_init");
  apply_environment();  // this call's settings: a variable set since the last call applies
  if (comm == MPI_COMM_NULL) fail(MPI_ERR_COMM, "the communicator is MPI_COMM_NULL");
  if (out) *out = SPC_REQUEST_NULL;
  const int me = comm_rank(comm);
  // Collective on the first init per communicator only (the duplicate is kept on it).
  uint64_t sequence = 0;
  const std::shared_ptr<const Comm> lib_ref = library_comm_shared(comm, sequence);
  const int tag = request_tag(sequence);
  Checked c;
  check_locally(a, os, comm, out, me, c);

  // 2. The agreement: posted by every rank; settled now unless this rank takes the direct
  //    path and passed its checks (then at the first start).
  std::unique_ptr<SPC_Request_s> direct;
  if (c.direct) {
    try {
      direct = direct_request(a, c, me, lib_ref, tag);
    } catch (...) {
      c.mine.error = current_exception_coded();
      c.direct = false;
    }
  }
  auto agreement = std::make_unique<Agreement>(lib_ref->get(), tag, std::move(c.mine),
                                               comm_agreement_slots(comm, lib_ref), sequence);
  if (!c.direct) agreement->settle();
  if (c.direct) {
    direct->agreement = std::move(agreement);
    *out = direct.release();
    return;
  }

  const PeerEdges pe = edges_per_peer(c, me);
  std::vector<SPC_Request_s::Copy> copies = self_copies(a, c);
  std::map<int, std::vector<int64_t>> inbox = exchange_setup(a, comm, pe);  // 3.
  std::string pattern_error;
  const Pattern pattern = build_pattern(a, me, pe, inbox, pattern_error);  // 4.
  *out = plan_request(a, c, comm, cached, cached_regions, pattern, pattern_error, std::move(copies));  // 5.
}

}  // namespace sparsecomm::capi
