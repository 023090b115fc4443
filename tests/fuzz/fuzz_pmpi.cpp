// libFuzzer target over the PMPI layer's (src/interop/pmpi) neighborhood collectives, as a
// differential test: every call goes once through the layer (MPI_Neighbor_*, linked into
// this program ahead of MPI) and once straight to MPI's own (PMPI_Neighbor_*) with the
// same arguments, and the two must agree -- both succeed with the same bytes in the
// receive buffer (every byte, inside and outside the blocks), or both fail. The input's
// bytes are read as the arguments: the topology (a distributed graph with repeated
// self-edges, a Cartesian grid whose non-periodic neighbors are MPI_PROC_NULL, a graph
// communicator), the call (blocking, nonblocking, persistent; alltoallv, alltoall,
// allgatherv, allgather), counts (negative ones included), displacements (negative ones
// from the buffer's middle), datatypes (basic, contiguous, vector, resized) and the
// backend the communicator's info asks for.
//
// One process: the communicators are made from MPI_COMM_SELF (errors return, never
// abort). Settings stay valid: a bad setting ends the job with status 2 by design
// (tested by the MPI suite), which libFuzzer would report as a crash.
#include <mpi.h>
#if !defined(SPARSECOMM_HAVE_MPI4_NEIGHBOR_INIT)  // Open MPI 4.1: the pcollreq extension
#include <mpi-ext.h>
#define SPC_NEIGHBOR_ALLTOALLV_INIT MPIX_Neighbor_alltoallv_init
#define SPC_PNEIGHBOR_ALLTOALLV_INIT PMPIX_Neighbor_alltoallv_init
#else
#define SPC_NEIGHBOR_ALLTOALLV_INIT MPI_Neighbor_alltoallv_init
#define SPC_PNEIGHBOR_ALLTOALLV_INIT PMPI_Neighbor_alltoallv_init
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_bytes.hpp"

namespace {

std::string g_args;  // the current call, printed with a finding

[[noreturn]] void finding(const char* what, int layer_rc, int mpi_rc) {
  std::fprintf(stderr, "fuzz_pmpi: %s (layer returned %d, MPI %d)\n  arguments: %s\n", what, layer_rc, mpi_rc,
               g_args.c_str());
  std::abort();
}

using sparsecomm::fuzz::Bytes;
using sparsecomm::fuzz::init_mpi_returning_errors;

constexpr int kMaxEdges = 6, kMaxCount = 10, kMaxDispl = 20;
constexpr int kHalf = kMaxDispl + kMaxCount + 1;  // elements either side of a buffer's base
const char* const kBackends[] = {"auto", "mpi", "p2p", "combined"};

struct Type {
  MPI_Datatype t = MPI_INT;
  bool derived = false;
  int base = 0, n = 1;  // type signature: n elements of basic type `base`
};

Type pick_type(Bytes& in) {
  Type ty;
  switch (in.byte() % 5) {
    case 0: ty.t = MPI_INT; break;
    case 1: ty.t = MPI_DOUBLE, ty.base = 1; break;
    case 2: ty.t = MPI_BYTE, ty.base = 2; break;
    case 3:
      MPI_Type_vector(2, 1, 2, MPI_INT, &ty.t);  // not contiguous
      MPI_Type_commit(&ty.t);
      ty.derived = true, ty.n = 2;
      break;
    default: {  // contiguous bytes with a larger extent (gaps between elements)
      MPI_Datatype c;
      MPI_Type_contiguous(3, MPI_BYTE, &c);
      MPI_Type_create_resized(c, 0, 4, &ty.t);
      MPI_Type_free(&c);
      MPI_Type_commit(&ty.t);
      ty.derived = true, ty.base = 2, ty.n = 3;
      break;
    }
  }
  return ty;
}

// A topology from MPI_COMM_SELF; its neighbor counts in *in / *out.
MPI_Comm make_comm(Bytes& in, int* indeg, int* outdeg) {
  MPI_Info info;
  MPI_Info_create(&info);
  const int b = in.byte();
  if (b & 1) MPI_Info_set(info, "sparsecomm_backend", kBackends[(b >> 1) % 4]);
  if (b & 8) MPI_Info_set(info, "sparsecomm_fixed_counts", "false");
  MPI_Comm c = MPI_COMM_NULL;
  switch (in.byte() % 3) {
    case 0: {  // distributed graph: repeated self-edges (lists must match on one rank)
      const int n = in.range(0, kMaxEdges);
      std::vector<int> nb(static_cast<size_t>(n) + 1, 0);
      MPI_Dist_graph_create_adjacent(MPI_COMM_SELF, n, nb.data(), MPI_UNWEIGHTED, n, nb.data(), MPI_UNWEIGHTED, info,
                                     0, &c);
      break;
    }
    case 1: {  // Cartesian: 1-3 dimensions of size 1, each periodic (self twice) or not
      const int nd = in.range(1, 3);
      int dims[3] = {1, 1, 1}, periods[3];
      for (int d = 0; d < nd; ++d) periods[d] = in.byte() & 1;
      MPI_Cart_create(MPI_COMM_SELF, nd, dims, periods, 0, &c);
      if (c != MPI_COMM_NULL) MPI_Comm_set_info(c, info);
      break;
    }
    default: {  // graph communicator: node 0 with k self-edges
      const int k = in.range(0, kMaxEdges);
      int index[1] = {k};
      std::vector<int> edges(static_cast<size_t>(k) + 1, 0);
      MPI_Graph_create(MPI_COMM_SELF, 1, index, edges.data(), 0, &c);
      if (c != MPI_COMM_NULL) MPI_Comm_set_info(c, info);
      break;
    }
  }
  MPI_Info_free(&info);
  if (c == MPI_COMM_NULL) return c;
  int status = 0;
  MPI_Topo_test(c, &status);
  if (status == MPI_DIST_GRAPH) {
    int w = 0;
    MPI_Dist_graph_neighbors_count(c, indeg, outdeg, &w);
  } else if (status == MPI_CART) {
    int nd = 0;
    MPI_Cartdim_get(c, &nd);
    *indeg = *outdeg = 2 * nd;
  } else {
    int k = 0;
    MPI_Graph_neighbors_count(c, 0, &k);
    *indeg = *outdeg = k;
  }
  return c;
}

enum class Call { alltoallv, alltoall, allgatherv, allgather };
enum class Mode { blocking, nonblocking, persistent };

struct Args {
  Call call;
  Mode mode;
  int count = 0;  // alltoall / allgather: the one send count; allgather(v): the send count
  int rcount = 0;
  std::vector<int> sc, sd, rc, rd;
  Type st, rt;
};

// MPI_<fn> (the layer) or PMPI_<fn> (MPI's own) with the same arguments, written once so that
// the two sides of the comparison cannot be called differently.
#define LAYER_OR_MPI(fn, ...) (layer ? MPI_##fn(__VA_ARGS__) : PMPI_##fn(__VA_ARGS__))

// One call through the layer (layer = true) or MPI's own, into `recv`.
int run(const Args& a, MPI_Comm c, const unsigned char* send, unsigned char* recv, bool layer) {
  MPI_Request r = MPI_REQUEST_NULL;
  int rc = MPI_SUCCESS;
  const bool nb = a.mode == Mode::nonblocking, pers = a.mode == Mode::persistent;
  switch (a.call) {
    case Call::alltoallv:
      if (pers)
        rc = layer ? SPC_NEIGHBOR_ALLTOALLV_INIT(send, a.sc.data(), a.sd.data(), a.st.t, recv, a.rc.data(),
                                                 a.rd.data(), a.rt.t, c, MPI_INFO_NULL, &r)
                   : SPC_PNEIGHBOR_ALLTOALLV_INIT(send, a.sc.data(), a.sd.data(), a.st.t, recv, a.rc.data(),
                                                  a.rd.data(), a.rt.t, c, MPI_INFO_NULL, &r);
      else if (nb)
        rc = LAYER_OR_MPI(Ineighbor_alltoallv, send, a.sc.data(), a.sd.data(), a.st.t, recv, a.rc.data(), a.rd.data(),
                          a.rt.t, c, &r);
      else
        rc = LAYER_OR_MPI(Neighbor_alltoallv, send, a.sc.data(), a.sd.data(), a.st.t, recv, a.rc.data(), a.rd.data(),
                          a.rt.t, c);
      break;
    case Call::alltoall:
      rc = nb ? LAYER_OR_MPI(Ineighbor_alltoall, send, a.count, a.st.t, recv, a.rcount, a.rt.t, c, &r)
              : LAYER_OR_MPI(Neighbor_alltoall, send, a.count, a.st.t, recv, a.rcount, a.rt.t, c);
      break;
    case Call::allgatherv:
      rc = nb ? LAYER_OR_MPI(Ineighbor_allgatherv, send, a.count, a.st.t, recv, a.rc.data(), a.rd.data(), a.rt.t, c, &r)
              : LAYER_OR_MPI(Neighbor_allgatherv, send, a.count, a.st.t, recv, a.rc.data(), a.rd.data(), a.rt.t, c);
      break;
    case Call::allgather:
      rc = nb ? LAYER_OR_MPI(Ineighbor_allgather, send, a.count, a.st.t, recv, a.rcount, a.rt.t, c, &r)
              : LAYER_OR_MPI(Neighbor_allgather, send, a.count, a.st.t, recv, a.rcount, a.rt.t, c);
      break;
  }
  if (rc != MPI_SUCCESS) return rc;
  if (pers) {
    for (int round = 0; round < 2 && rc == MPI_SUCCESS; ++round) {
      rc = LAYER_OR_MPI(Start, &r);
      if (rc == MPI_SUCCESS) rc = LAYER_OR_MPI(Wait, &r, MPI_STATUS_IGNORE);
    }
    if (r != MPI_REQUEST_NULL) LAYER_OR_MPI(Request_free, &r);
  } else if (nb) {
    rc = LAYER_OR_MPI(Wait, &r, MPI_STATUS_IGNORE);
  }
  return rc;
}
#undef LAYER_OR_MPI

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) { return init_mpi_returning_errors(argc, argv); }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in{data, size};
  int indeg = 0, outdeg = 0;
  MPI_Comm c = make_comm(in, &indeg, &outdeg);
  if (c == MPI_COMM_NULL) return 0;
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  Args a;
  a.call = static_cast<Call>(in.byte() % 4);
  a.mode = static_cast<Mode>(in.byte() % 3);
  if (a.mode == Mode::persistent) a.call = Call::alltoallv;  // the persistent form fuzzed here
  a.st = pick_type(in);
  a.rt = in.byte() < 200 ? a.st : pick_type(in);
  auto count = [&] { return in.byte() < 248 ? in.range(0, kMaxCount) : -1; };
  a.count = count();
  a.rcount = in.byte() < 200 ? a.count : count();
  a.sc.resize(static_cast<size_t>(outdeg) + 1), a.sd.resize(static_cast<size_t>(outdeg) + 1);
  a.rc.resize(static_cast<size_t>(indeg) + 1), a.rd.resize(static_cast<size_t>(indeg) + 1);
  for (int i = 0; i < outdeg; ++i) a.sc[i] = count(), a.sd[i] = in.range(-kMaxDispl, kMaxDispl);
  for (int j = 0; j < indeg; ++j) {
    const bool gather = a.call == Call::allgatherv;
    a.rc[j] = in.byte() < 200 ? (gather ? a.count : (j < outdeg ? a.sc[j] : 0)) : count();
    a.rd[j] = in.range(-kMaxDispl, kMaxDispl);
  }
  // alltoall / allgather place block j at j * count: buffers hold every neighbor's block
  MPI_Aint lb = 0, sext = 0, rext = 0;
  MPI_Type_get_extent(a.st.t, &lb, &sext);
  MPI_Type_get_extent(a.rt.t, &lb, &rext);
  const size_t elems = 2 * kHalf + static_cast<size_t>(kMaxEdges + 1) * (kMaxCount + 1);
  std::vector<unsigned char> send(elems * static_cast<size_t>(sext)), via_layer(elems * static_cast<size_t>(rext), 0xAB),
      via_mpi(via_layer);
  for (size_t i = 0; i < send.size(); ++i) send[i] = static_cast<unsigned char>(i * 131 + 7);
  const size_t base_s = static_cast<size_t>(kHalf * sext), base_r = static_cast<size_t>(kHalf * rext);
  auto list = [](const std::vector<int>& v, int n) {
    std::string t;
    for (int i = 0; i < n; ++i) t += std::to_string(v[static_cast<size_t>(i)]) + " ";
    return "[" + t + "]";
  };
  const char* calls[] = {"alltoallv", "alltoall", "allgatherv", "allgather"};
  const char* modes[] = {"blocking", "nonblocking", "persistent"};
  int topo = 0;
  MPI_Topo_test(c, &topo);
  g_args = std::string(calls[static_cast<int>(a.call)]) + " " + modes[static_cast<int>(a.mode)] + " topology " +
           (topo == MPI_DIST_GRAPH ? "dist_graph" : topo == MPI_CART ? "cart" : "graph") + " in " +
           std::to_string(indeg) + " out " + std::to_string(outdeg) + " count " + std::to_string(a.count) +
           " rcount " + std::to_string(a.rcount) + " sc " + list(a.sc, outdeg) + " sd " + list(a.sd, outdeg) + " rc " +
           list(a.rc, indeg) + " rd " + list(a.rd, indeg) + " types " + std::to_string(a.st.base) + "x" +
           std::to_string(a.st.n) + "/" + std::to_string(a.rt.base) + "x" + std::to_string(a.rt.n);
  const int mine = run(a, c, send.data() + base_s, via_layer.data() + base_r, true);
  const int ref = run(a, c, send.data() + base_s, via_mpi.data() + base_r, false);
  // A program MPI calls erroneous (block signatures that differ, receive blocks that
  // overlap) has no defined result: there the layer must only not crash. Every other
  // call, negative counts included, must end as MPI's own does.
  bool erroneous = a.st.base != a.rt.base;
  std::vector<int> scount(static_cast<size_t>(indeg), a.count), rcount(static_cast<size_t>(indeg), a.rcount),
      rdispl(static_cast<size_t>(indeg));
  for (int j = 0; j < indeg; ++j) {
    if (a.call == Call::alltoallv) scount[j] = j < outdeg ? a.sc[j] : 0;
    if (a.call == Call::alltoallv || a.call == Call::allgatherv) rcount[j] = a.rc[j], rdispl[j] = a.rd[j];
    else rdispl[j] = j * a.rcount;
    erroneous |= static_cast<int64_t>(scount[j]) * a.st.n != static_cast<int64_t>(rcount[j]) * a.rt.n;
    for (int i = 0; i < j; ++i)
      erroneous |= rcount[i] > 0 && rcount[j] > 0 && rdispl[i] < rdispl[j] + rcount[j] && rdispl[j] < rdispl[i] + rcount[i];
  }
  if (!erroneous) {
    if ((mine == MPI_SUCCESS) != (ref == MPI_SUCCESS)) finding("the layer and MPI disagree on success", mine, ref);
    if (mine == MPI_SUCCESS && via_layer != via_mpi) finding("the layer's receive buffer differs from MPI's", mine, ref);
  }
  const bool same_type = a.rt.t == a.st.t;
  if (a.st.derived) MPI_Type_free(&a.st.t);
  if (a.rt.derived && !same_type) MPI_Type_free(&a.rt.t);
  MPI_Comm_free(&c);
  return 0;
}
