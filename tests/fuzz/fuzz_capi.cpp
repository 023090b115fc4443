// libFuzzer target over the C API's arguments (include/sparsecomm.h) on one rank
// (MPI_COMM_SELF): neighbor lists, counts, displacements (negative ones included),
// datatypes (contiguous, derived and non-contiguous), backend names and options, ghost
// lists. The input's bytes are read as those arguments.
//
// The oracle is the API's own contract:
//   - a call returns SPC_SUCCESS or a documented code, never crashes and never throws;
//   - a non-contiguous datatype is MPI_ERR_TYPE, a negative count an error;
//   - an accepted neighbor alltoallv/allgatherv on self-edges delivers, after each
//     SPC_Start/SPC_Wait, block j of the receive buffer equal to the block the j-th edge
//     sends (repeated edges matched in list order) and writes nothing outside the blocks;
//   - an accepted CRS exchange delivers the one message sent to this rank intact;
//   - a ghost list on one rank names only own or out-of-range ids: an error (SPC_ERR_ARG),
//     except the empty list.
// Any breach is a finding (std::abort). Buffers are sized so that every block the
// arguments name lies inside them (negative displacements too, from the buffer's middle):
// an out-of-bounds access is the library's, never the harness's.
#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_bytes.hpp"
#include "sparsecomm.h"

namespace {

std::string g_args;  // the current call's arguments, printed with a finding

[[noreturn]] void finding(const char* what, int code = 0) {
  char msg[1024] = "";
  int len = 0;
  if (code != 0) SPC_Error_string(code, msg, &len);
  std::fprintf(stderr, "fuzz_capi: %s (code %d: %s)\n  arguments: %s\n", what, code, msg, g_args.c_str());
  std::abort();
}

using sparsecomm::fuzz::Bytes;
using sparsecomm::fuzz::init_mpi_returning_errors;

constexpr int kMaxEdges = 6, kMaxCount = 12, kMaxDispl = 24;
// Elements on either side of a buffer's base: |displ| + count always fits.
constexpr int kHalf = kMaxDispl + kMaxCount + 1;

const char* const kBackends[] = {"p2p", "neighbor", "combined", "aggregated", "aggregated_dedup", "aggregated_2step",
                                 "shm", "auto", "no_such_backend"};

struct Type {
  MPI_Datatype t = MPI_INT;
  bool contiguous = true;
  bool derived = false;
};

Type pick_type(Bytes& in) {
  Type ty;
  switch (in.byte() % 5) {
    case 0: ty.t = MPI_INT; break;
    case 1: ty.t = MPI_DOUBLE; break;
    case 2: ty.t = MPI_BYTE; break;
    case 3:
      MPI_Type_contiguous(3, MPI_INT, &ty.t);
      MPI_Type_commit(&ty.t);
      ty.derived = true;
      break;
    default:  // every other int: not contiguous
      MPI_Type_vector(2, 1, 2, MPI_INT, &ty.t);
      MPI_Type_commit(&ty.t);
      ty.derived = true, ty.contiguous = false;
      break;
  }
  return ty;
}

void free_type(Type& ty) {
  if (ty.derived) MPI_Type_free(&ty.t);
}

MPI_Info pick_info(Bytes& in) {
  MPI_Info info = MPI_INFO_NULL;
  const int b = in.byte();
  if (b % 3 == 0) return info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "sparsecomm_backend", kBackends[b / 3 % (sizeof kBackends / sizeof *kBackends)]);
  if (b & 0x80) MPI_Info_set(info, "sparsecomm_regions", (b & 0x40) ? "ppn:1" : "ppn:0");
  if (b & 0x20) MPI_Info_set(info, "sparsecomm_k", (b & 0x10) ? "2" : "-1");
  return info;
}

void free_info(MPI_Info& info) {
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
}

bool is_documented(int code) {
  if (code == SPC_SUCCESS) return true;
  if (code > SPC_ERR_BASE && code <= SPC_ERR_INTERNAL) return code != SPC_ERR_INTERNAL;
  return code > 0 && code <= MPI_ERR_LASTCODE;
}

// A buffer of kHalf elements either side of its base, filled with a byte pattern.
struct Buffer {
  std::vector<unsigned char> bytes;
  int64_t esz;
  Buffer(int64_t esz_, unsigned char fill) : bytes(static_cast<size_t>(2 * kHalf * esz_), fill), esz(esz_) {}
  unsigned char* base() { return bytes.data() + kHalf * esz; }
};

// Neighbor alltoallv (or allgatherv) on self-edges through the _lists entry points.
void neighbor(Bytes& in, bool gather) {
  const int indeg = in.range(0, kMaxEdges), outdeg = in.range(0, kMaxEdges);
  std::vector<int> src(indeg), dst(outdeg);
  bool ranks_ok = true;
  for (auto& s : src) s = in.byte() < 240 ? 0 : in.range(-2, 3), ranks_ok &= s == 0;
  for (auto& d : dst) d = in.byte() < 240 ? 0 : in.range(-2, 3), ranks_ok &= d == 0;
  Type st = pick_type(in), rt = in.byte() < 200 ? st : pick_type(in);
  const bool own_rt = rt.t != st.t;
  std::vector<int> scount(outdeg), sdisp(outdeg), rcount(indeg), rdisp(indeg);
  auto count = [&] { return in.byte() < 250 ? in.range(0, kMaxCount) : in.range(-3, -1); };
  auto displ = [&] { return in.range(-kMaxDispl, kMaxDispl); };
  const int gcount = count();
  for (int i = 0; i < outdeg; ++i) scount[i] = count(), sdisp[i] = displ();
  for (int j = 0; j < indeg; ++j) rcount[j] = in.byte() < 200 ? (gather ? gcount : (j < outdeg ? scount[j] : 1)) : count(),
                                  rdisp[j] = displ();
  MPI_Info info = pick_info(in);
  auto list = [](const std::vector<int>& v) {
    std::string t;
    for (int x : v) t += std::to_string(x) + " ";
    return "[" + t + "]";
  };
  g_args = std::string(gather ? "allgatherv" : "alltoallv") + " sources " + list(src) + " destinations " + list(dst) +
           " sendcounts " + list(scount) + " sdispls " + list(sdisp) + " gcount " + std::to_string(gcount) +
           " recvcounts " + list(rcount) + " rdispls " + list(rdisp);
  if (info != MPI_INFO_NULL) {
    char v[64] = "";
    int flag = 0;
    MPI_Info_get(info, "sparsecomm_backend", 63, v, &flag);
    g_args += std::string(" backend ") + (flag ? v : "(default)");
  }
  int ssz = 0, rsz = 0;
  MPI_Type_size(st.t, &ssz);
  MPI_Type_size(rt.t, &rsz);
  MPI_Aint lb = 0, sext = 0, rext = 0;
  MPI_Type_get_extent(st.t, &lb, &sext);
  MPI_Type_get_extent(rt.t, &lb, &rext);
  Buffer sb(sext, 0), rb(rext, 0xAB);
  for (size_t i = 0; i < sb.bytes.size(); ++i) sb.bytes[i] = static_cast<unsigned char>(i * 131 + 7);
  SPC_Request req = SPC_REQUEST_NULL;
  int rc;
  if (gather)
    rc = SPC_Neighbor_allgatherv_init_lists(indeg, src.data(), outdeg, dst.data(), sb.base(), gcount, st.t, rb.base(),
                                            rcount.data(), rdisp.data(), rt.t, MPI_COMM_SELF, info, &req);
  else
    rc = SPC_Neighbor_alltoallv_init_lists(indeg, src.data(), outdeg, dst.data(), sb.base(), scount.data(),
                                           sdisp.data(), nullptr, st.t, rb.base(), rcount.data(), rdisp.data(),
                                           nullptr, rt.t, MPI_COMM_SELF, info, &req);
  if (!is_documented(rc)) finding("init: undocumented code", rc);
  for (int round = 0; round < 2 && rc == SPC_SUCCESS; ++round) {
    std::fill(rb.bytes.begin(), rb.bytes.end(), 0xAB);
    int rs = SPC_Start(&req);
    if (rs == SPC_SUCCESS) rs = SPC_Wait(&req, MPI_STATUS_IGNORE);
    if (!is_documented(rs)) finding("start/wait: undocumented code", rs);
    if (rs != SPC_SUCCESS) break;  // p2p reports its init's agreement at the first start
    // What must have been an error, at init or (p2p) at the first start
    if (!st.contiguous || !rt.contiguous) finding("accepted a non-contiguous datatype");
    if (!ranks_ok) finding("accepted a neighbor rank outside the communicator");
    if (indeg != outdeg) finding("accepted in- and out-lists that do not match on one rank");
    for (int i = 0; i < outdeg; ++i)
      if ((gather ? gcount : scount[i]) < 0 || rcount[i] < 0) finding("a negative count was accepted");
    // Block j comes from edge j; blocks that overlap another are left unchecked (MPI
    // leaves their result undefined), and so are bytes outside every block only when
    // blocks overlap.
    std::vector<char> covered(rb.bytes.size(), 0);
    bool overlap = false;
    for (int j = 0; j < indeg; ++j)
      for (int64_t b = 0; b < rcount[j] * rext; ++b) {
        char& c = covered[static_cast<size_t>((kHalf + rdisp[j]) * rext + b)];
        overlap |= c != 0;
        c = 1;
      }
    if (overlap) continue;
    for (int j = 0; j < indeg; ++j) {
      const int scnt = gather ? gcount : scount[j];
      const int64_t bytes = static_cast<int64_t>(scnt) * ssz;
      if (bytes != static_cast<int64_t>(rcount[j]) * rsz) finding("accepted counts whose byte sizes differ");
      const unsigned char* from = sb.base() + (gather ? 0 : static_cast<int64_t>(sdisp[j]) * sext);
      const unsigned char* to = rb.base() + static_cast<int64_t>(rdisp[j]) * rext;
      if (std::memcmp(from, to, static_cast<size_t>(bytes)) != 0) finding("a received block differs from the sent one");
    }
    for (size_t b = 0; b < rb.bytes.size(); ++b)
      if (!covered[b] && rb.bytes[b] != 0xAB) finding("a byte outside every receive block was written");
  }
  if (req != SPC_REQUEST_NULL) {
    const int rf = SPC_Request_free(&req);
    if (!is_documented(rf)) finding("request_free: undocumented code", rf);
    if (req != SPC_REQUEST_NULL) finding("request_free left the handle set");
  }
  free_info(info);
  free_type(st);
  if (own_rt) free_type(rt);
}

// The variable-size CRS exchange with messages to fuzzed destinations.
void crs(Bytes& in) {
  const int nnz = in.range(0, 3);
  std::vector<int> dest(nnz), counts(nnz), displs(nnz);
  int to_self = 0;
  bool ok = true;
  for (int i = 0; i < nnz; ++i) {
    dest[i] = in.byte() < 230 ? 0 : in.range(-2, 3);
    counts[i] = in.byte() < 250 ? in.range(0, kMaxCount) : -1;
    displs[i] = in.range(0, kMaxDispl);
    ok &= dest[i] == 0 && counts[i] >= 0;
    to_self += dest[i] == 0;
  }
  const int send_size = in.range(0, kMaxDispl + kMaxCount);
  for (int i = 0; i < nnz; ++i) ok &= displs[i] + std::max(counts[i], 0) <= send_size;
  std::vector<int> vals(static_cast<size_t>(kMaxDispl + kMaxCount + 1));
  for (size_t i = 0; i < vals.size(); ++i) vals[i] = static_cast<int>(i * 7919 + 1);
  MPI_Info info = MPI_INFO_NULL;
  int recv_nnz = -1, recv_size = -1, *src = nullptr, *rcounts = nullptr, *rdispls = nullptr;
  void* rvals = nullptr;
  const int rc = SPC_Alltoallv_crs(nnz, send_size, dest.data(), counts.data(), displs.data(), MPI_INT, vals.data(),
                                   &recv_nnz, &recv_size, &src, &rcounts, &rdispls, MPI_INT, &rvals, info,
                                   MPI_COMM_SELF);
  if (!is_documented(rc)) finding("crs: undocumented code", rc);
  if (rc == SPC_SUCCESS) {
    if (!ok) finding("crs accepted a bad destination, count or displacement");
    if (to_self > 1) finding("crs accepted two messages to one destination");
    if (recv_nnz != to_self) finding("crs: wrong number of messages");
    if (recv_nnz == 1) {
      if (src[0] != 0 || rcounts[0] != counts[0] || recv_size != counts[0]) finding("crs: wrong message shape");
      if (counts[0] > 0 && std::memcmp(static_cast<int*>(rvals) + rdispls[0], vals.data() + displs[0],
                                       sizeof(int) * static_cast<size_t>(counts[0])) != 0)
        finding("crs: message changed in transit");
    }
  } else if (src || rcounts || rdispls || rvals || recv_nnz != 0) {
    finding("crs: outputs not reset on error");
  }
  SPC_Free(src), SPC_Free(rcounts), SPC_Free(rdispls), SPC_Free(rvals);
}

// A halo from a ghost list on one rank: every id is either its own or out of range.
void halo(Bytes& in) {
  const int nlocal = in.byte() < 240 ? in.range(0, 20) : in.range(-3, -1);
  const int nghost = in.byte() < 240 ? in.range(0, 5) : in.range(-2, -1);
  std::vector<int64_t> gids(static_cast<size_t>(std::max(nghost, 0)) + 1);
  for (auto& g : gids) g = static_cast<int64_t>(in.range(-3, 30));
  Type ty = pick_type(in);
  MPI_Info info = pick_info(in);
  SPC_Halo h = SPC_HALO_NULL;
  const int rc = SPC_Halo_create(MPI_COMM_SELF, nlocal, nghost, gids.data(), ty.t, info, &h);
  if (!is_documented(rc)) finding("halo_create: undocumented code", rc);
  if (rc == SPC_SUCCESS) {
    if (nghost != 0 || nlocal < 0) finding("halo_create accepted ghosts on one rank, or a negative size");
    if (!ty.contiguous) finding("halo_create accepted a non-contiguous datatype");
    std::vector<unsigned char> owned(static_cast<size_t>(std::max(nlocal, 1)) * 24, 1), ghosts(24, 0);
    int r = SPC_Halo_start(h, owned.data());
    if (r == SPC_SUCCESS) r = SPC_Halo_wait(h, ghosts.data());
    if (!is_documented(r)) finding("halo start/wait: undocumented code", r);
    if (SPC_Halo_free(&h) != SPC_SUCCESS || h != SPC_HALO_NULL) finding("halo_free failed");
  } else if (h != SPC_HALO_NULL) {
    finding("halo_create failed but set the handle");
  }
  free_info(info);
  free_type(ty);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) { return init_mpi_returning_errors(argc, argv); }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in{data, size};
  switch (in.byte() % 4) {
    case 0: neighbor(in, false); break;
    case 1: neighbor(in, true); break;
    case 2: crs(in); break;
    default: halo(in); break;
  }
  return 0;
}
