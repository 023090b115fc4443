// Calibration of the performance model (model.hpp): measures this machine's (or emulated
// cluster's) parameters in a short collective run. `sparsecomm calibrate` writes them to a
// file; `auto` runs it once per machine and layout on first use and caches the result
// (machine_model below).
//   alpha/beta intra-region   ping-pong between two ranks of region 0 (8 B .. 256 KiB)
//   alpha/beta inter-region   ping-pong between region 0 and region 1
//   msg/byte intra, inter     every rank at once sends k messages of b bytes along rings
//                             (inside regions / across them; message j to the ring at
//                             distance j + 1, so to different peers as far as the class
//                             has them) and receives as many: per message, the slope from
//                             k = 1 to k = 8 (8 B); per byte, the slope from 4 KiB to
//                             256 KiB (k = 1)
//   region_rate               every rank of region 0 streams to region 1 at once
//   stage_intra/_inter        two dependent ring exchanges minus one, inside regions and
//                             across them (at least that class's latency)
//   copy                      memcpy bandwidth
//   msg/byte_shm              the shm backend's window (where it is built): every rank of
//                             the node at once exchanges with node neighbors through shm
//                             and through p2p plans of the same patterns; per segment, the
//                             slope from 1 to up to 8 neighbors (8 B); per byte, from 4 KiB
//                             to 256 KiB (one neighbor); the model's shm slope is set to
//                             its p2p slope times the measured ratio shm / p2p
//   stage_shm                 stage_intra times the measured ratio of back-to-back
//                             one-neighbor exchanges, shm / p2p
// Latency: the 8-byte round trip / 2; per byte: the slope between 4 KiB and 256 KiB.
// A class that cannot be measured (one region, or regions of one rank) keeps its default.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <tuple>
#include <utility>
#include <vector>

#include "sparsecomm/comm/plan/model.hpp"
#ifndef SPARSECOMM_SMPI
#include "comm/shm_channel.hpp"
#endif
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/core/error.hpp"
#include "sparsecomm/core/mpi_util.hpp"

namespace sparsecomm {

namespace {

// Half round-trip time in seconds between ranks a and b for `bytes` (median of reps);
// every rank calls it, the others just wait at the barrier.
double pingpong(MPI_Comm comm, int a, int b, int bytes, int reps) {
  const int me = comm_rank(comm);
  std::vector<char> buf(static_cast<size_t>(std::max(bytes, 1)));
  std::vector<double> t;
  for (int r = 0; r < reps + 2; ++r) {
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    if (me == a) {
      MPI_Send(buf.data(), bytes, MPI_BYTE, b, 7, comm);
      MPI_Recv(buf.data(), bytes, MPI_BYTE, b, 7, comm, MPI_STATUS_IGNORE);
    } else if (me == b) {
      MPI_Recv(buf.data(), bytes, MPI_BYTE, a, 7, comm, MPI_STATUS_IGNORE);
      MPI_Send(buf.data(), bytes, MPI_BYTE, a, 7, comm);
    }
    if (r >= 2) t.push_back((MPI_Wtime() - t0) / 2);
  }
  std::sort(t.begin(), t.end());
  double v = t[t.size() / 2];
  MPI_Bcast(&v, 1, MPI_DOUBLE, a, comm);
  return v;
}

/// Collective. alpha = the 8-byte ping-pong latency between a and b; beta = the per-byte
/// slope between 4 KiB and 256 KiB.
void fit(MPI_Comm comm, int a, int b, int reps, double& alpha, double& beta) {
  alpha = pingpong(comm, a, b, 8, reps);
  const double t4k = pingpong(comm, a, b, 4096, reps), t256k = pingpong(comm, a, b, 262144, reps);
  beta = std::max(0.0, (t256k - t4k) / (262144.0 - 4096.0));
}

/// Collective. Region injection: every rank of region 0 sends 256 KiB to a rank of region
/// 1 at once; bytes per second out of region 0.
double region_rate(MPI_Comm comm, const Locality& loc, int reps) {
  const int bytes = 262144;
  std::vector<char> buf(bytes);
  std::vector<double> t;
  for (int r = 0; r < std::max(3, reps / 4); ++r) {
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    if (loc.region() == 0) {
      MPI_Send(buf.data(), bytes, MPI_BYTE, loc.member(1, loc.local_rank() % loc.region_size(1)), 8, comm);
    } else if (loc.region() == 1) {
      for (int s = loc.local_rank(); s < loc.region_size(0); s += loc.region_size(1))
        MPI_Recv(buf.data(), bytes, MPI_BYTE, loc.member(0, s), 8, comm, MPI_STATUS_IGNORE);
    }
    t.push_back(allreduce_max(comm, MPI_Wtime() - t0));
  }
  std::sort(t.begin(), t.end());
  return static_cast<double>(bytes) * loc.region_size(0) / t[t.size() / 2];
}

// Rings per locality class, every rank at once:
//   intra: the ring inside each region (local rank + 1 + s);
//   inter: local rank i of region r sends to local rank i + e of region r + d, d and e
//   stepping with s (fit_rings; ranks whose local index exceeds the smallest region's
//   size only take part in the timing).
// peer(s, dir): the rank to send to (dir +1) or receive from (-1) in stage s, -1: idle.
using Peer = std::function<int(int, int)>;

struct RingShape {
  int stages, k, bytes;
};

class Rings {
 public:
  Rings(MPI_Comm comm, int reps) : comm_(comm), reps_(reps) {}

  /// `stages` dependent exchanges; in each a rank sends k messages of `bytes` to peer(s, +1)
  /// and receives k from peer(s, -1). Returns the time of the slowest rank.
  double ring(const Peer& peer, RingShape r) const {
    std::vector<char> sbuf(static_cast<size_t>(r.bytes)), rbuf(static_cast<size_t>(r.bytes) * r.k);
    std::vector<MPI_Request> q(2 * static_cast<size_t>(r.k));
    MPI_Barrier(comm_);
    const double t0 = MPI_Wtime();
    for (int s = 0; s < r.stages; ++s) {
      if (peer(s, +1) < 0) continue;
      // Message j goes to the peer of step s + j: as in an exchange, a rank's messages go
      // to different ranks (over TCP, different connections) as far as the class has them;
      // k messages to one peer would queue on one connection and overstate the cost per
      // message of a real exchange.
      for (int j = 0; j < r.k; ++j) {
        MPI_Irecv(rbuf.data() + static_cast<size_t>(j) * r.bytes, r.bytes, MPI_BYTE, peer(s + j, -1), 9, comm_,
                  &q[2 * j]);
        MPI_Isend(sbuf.data(), r.bytes, MPI_BYTE, peer(s + j, +1), 9, comm_, &q[2 * j + 1]);
      }
      wait_all(2 * r.k, q.data());
    }
    return allreduce_max(comm_, MPI_Wtime() - t0);
  }

  /// The extra time of ring shape b over a: both timed back to back in every repetition (a
  /// slow phase of the machine hits both), median of the differences.
  double extra(const Peer& peer, RingShape a, RingShape b) const {
    std::vector<double> d;
    for (int rep = 0; rep < reps_ + 2; ++rep) {
      const double ta = ring(peer, a), tb = ring(peer, b);
      if (rep >= 2) d.push_back(tb - ta);
    }
    std::sort(d.begin(), d.end());
    return d[d.size() / 2];
  }

  /// Loaded costs: the per-message slope (8 B, k = 1 -> 8), the per-byte slope (k = 1,
  /// 4 KiB -> 256 KiB), every rank of the ring at once; and a stage: one or two dependent
  /// 8-byte exchanges (the second waits for the first). The time beyond the second
  /// exchange's per-message cost is what a dependent stage costs here (on an oversubscribed
  /// node it includes waiting for the peer to be scheduled); never below the class's
  /// ping-pong latency.
  void loaded(const Peer& peer, double latency, double& msg, double& byte, double& stage) const {
    msg = std::max(0.0, extra(peer, {1, 1, 8}, {1, 8, 8}) / 7);
    byte = std::max(0.0, extra(peer, {1, 1, 4096}, {1, 1, 262144}) / (262144.0 - 4096.0));
    stage = std::max(latency, extra(peer, {1, 1, 8}, {2, 1, 8}) - msg);
  }

 private:
  MPI_Comm comm_;
  int reps_;
};

/// v mod n in [0, n) for negative v too (a ring's step backwards).
int wrap(int v, int n) { return (v % n + n) % n; }

/// Collective. The loaded per-class costs from the rings, where the class exists.
void fit_rings(MPI_Comm comm, const Locality& loc, int reps, bool intra, bool inter, ModelParams& m) {
  const Rings rings(comm, reps);
  const int nreg = loc.num_regions(), r = loc.region(), i = loc.local_rank();
  int min_size = loc.region_size(0);
  for (int x = 1; x < nreg; ++x) min_size = std::min(min_size, loc.region_size(x));
  if (intra) {
    const int n = loc.region_size(r);
    auto peer = [&](int s, int dir) { return n < 2 ? -1 : loc.member(r, wrap(i + dir * (1 + s % (n - 1)), n)); };
    rings.loaded(peer, m.alpha_intra, m.msg_intra, m.byte_intra, m.stage_intra);
  }
  if (inter) {
    // Stage s: region r + d, local rank i + e, so a rank's 8 messages of the per-message
    // ring reach 8 different ranks where the other regions have them (at 4 nodes x 4: d
    // cycles 1, 2, 3 and e 0, 0, 0, 1, 1, 1, 2, 2). With e = 0 they reached 3 ranks, 2-3
    // messages queued on each connection, and an extra message measured cheaper than an
    // exchange's messages to different ranks are (git log -p -- experiments/auto/README.md).
    auto peer = [&](int s, int dir) {
      if (i >= min_size) return -1;
      const int d = 1 + s % (nreg - 1);
      const int e = (s / (nreg - 1)) % min_size;
      return loc.member(wrap(r + dir * d, nreg), wrap(i + dir * e, min_size));
    };
    rings.loaded(peer, m.alpha_inter, m.msg_inter, m.byte_inter, m.stage_inter);
  }
}

/// Collective. Seconds per byte of a 4 MiB memcpy, max over ranks.
double copy_cost(MPI_Comm comm) {
  std::vector<char> a(1 << 22, 1), b(1 << 22);
  const double t0 = MPI_Wtime();
  for (int r = 0; r < 8; ++r) std::memcpy(b.data(), a.data(), a.size()), a[r] = b[r + 1];
  return allreduce_max(comm, (MPI_Wtime() - t0) / (8.0 * a.size()));
}

/// The ring inside a node that fit_shm times: each rank sends to its next k node ranks
/// and receives from its previous k.
struct NodeRing {
  std::vector<int> member;  ///< world ranks of the node, in node order
  int i = 0;                ///< the caller's rank in its node
  int kmax = 0;             ///< the most neighbors a shape has (set by the caller)
};

/// Collective. The caller's node (MPI_COMM_TYPE_SHARED) as a ring.
NodeRing node_ring(MPI_Comm comm) {
  MPI_Comm node;
  SPC_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, comm_rank(comm), MPI_INFO_NULL, &node));
  const int n = comm_size(node), me = comm_rank(comm);
  NodeRing ring;
  ring.i = comm_rank(node);
  ring.member.resize(static_cast<size_t>(n));
  SPC_MPI(MPI_Allgather(&me, 1, MPI_INT, ring.member.data(), 1, MPI_INT, node));
  MPI_Comm_free(&node);
  return ring;
}

/// Collective. A `backend` plan in which every rank sends `values` doubles to each of the
/// next k ranks of its node ring (sides sorted by rank, as a Pattern needs).
std::unique_ptr<Plan> ring_plan(const std::string& backend, const NodeRing& ring, int k, int values,
                                const Locality& loc, MPI_Comm comm) {
  const int n = static_cast<int>(ring.member.size()), i = ring.i;
  PatternSide send, recv;
  std::vector<std::pair<int, int>> to, from;  // (rank, distance): sides sorted by rank
  for (int d = 1; d <= k; ++d)
    to.push_back({ring.member[(i + d) % n], d}), from.push_back({ring.member[(i - d + n) % n], d});
  std::sort(to.begin(), to.end()), std::sort(from.begin(), from.end());
  for (auto* side : {&send, &recv})
    for (const auto& [r, d] : side == &send ? to : from) {
      side->ranks.push_back(r);
      for (int v = 0; v < values; ++v) {
        side->indices.push_back(static_cast<int32_t>(side == &send ? v : side->indices.size()));
        side->global_ids.push_back(v);
      }
      side->offsets.push_back(static_cast<int64_t>(side->indices.size()));
    }
  const auto ghosts = static_cast<int32_t>(recv.indices.size());
  return make_plan(backend, Pattern(std::move(send), std::move(recv), values, ghosts), loc, comm);
}

double median(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct ShmFit {
  double extra;      // the window terms' part of the model's shm slope a -> b
  double stage_shm;  // stage_intra scaled by the measured shm / p2p time of shape a
};

/// Collective. Shapes a -> b (ka neighbors of va values, kb of vb) through shm and p2p plans
/// of the same patterns, the four timed round-robin in every repetition (medians over
/// repetitions). The window terms are set so that the model's shm slope stands to its own
/// p2p slope as the measured ones do: shm's extra over what the model's other terms (the
/// pack's copy) predict of it. A ratio, not a difference: on an oversubscribed node the
/// measured per-message slopes are several times the ring fit's (which may be zero), so an
/// absolute window cost would price window reads above messages the model treats as free,
/// and a difference from p2p's measured slope comes out negative and leaves window reads
/// free where messages are not. `bare` is `m` without the window terms.
ShmFit shm_fit(MPI_Comm comm, const Locality& loc, const NodeRing& ring, int reps, const ModelParams& m,
               const ModelParams& bare, int ka, int va, int kb, int vb) {
  std::unique_ptr<Plan> p[4] = {ring_plan("shm", ring, ka, va, loc, comm), ring_plan("shm", ring, kb, vb, loc, comm),
                                ring_plan("p2p", ring, ka, va, loc, comm), ring_plan("p2p", ring, kb, vb, loc, comm)};
  std::vector<double> x(static_cast<size_t>(std::max(va, vb)), 1.0), g(static_cast<size_t>(ring.kmax) * x.size());
  // Each timing is a burst of exchanges (the differences sought are a few microseconds,
  // a barrier's jitter on an oversubscribed node is more), at least 30 repetitions.
  constexpr int kBurst = 8;
  std::vector<double> ds, dp, ta_shm, ta_p2p;
  for (int rep = 0; rep < std::max(reps, 30) + 2; ++rep) {
    double t[4];
    for (int j = 0; j < 4; ++j) {
      MPI_Barrier(comm);
      const double t0 = MPI_Wtime();
      for (int b = 0; b < kBurst; ++b) p[j]->exchange(x.data(), g.data());
      t[j] = allreduce_max(comm, MPI_Wtime() - t0) / kBurst;
    }
    if (rep >= 2) ds.push_back(t[1] - t[0]), dp.push_back(t[3] - t[2]), ta_shm.push_back(t[0]), ta_p2p.push_back(t[2]);
  }
  const double shm = median(ds), p2p = median(dp);
  const double model_p2p = predict_iteration(*p[3], m, comm) - predict_iteration(*p[2], m, comm);
  const double model_bare = predict_iteration(*p[1], bare, comm) - predict_iteration(*p[0], bare, comm);
  ShmFit f{0.0, m.stage_intra};
  // No measurable p2p slope: nothing to scale by (the window terms stay at zero).
  if (p2p > 0) f.extra = model_p2p * std::max(0.0, shm) / p2p - model_bare;
  // Back-to-back exchanges of one small message each wait for the neighbor's previous
  // one: their time is a dependent stage's, through the window and through MPI.
  const double a_shm = median(ta_shm), a_p2p = median(ta_p2p);
  if (a_p2p > 0) f.stage_shm = m.stage_intra * a_shm / a_p2p;
  return f;
}

/// Collective. The window costs (msg_shm, byte_shm) from rings inside each node: every
/// rank sends `values` doubles to each of the next k ranks of its node through shm plans and
/// p2p plans of the same pattern; the window terms make the model's shm slopes stand to its
/// p2p slopes (from the terms fitted before) as the measured ones do. Keeps the defaults
/// where the node has one rank or the backend is not built (SMPI).
void fit_shm(MPI_Comm comm, const Locality& loc, int reps, ModelParams& m) {
  const auto names = backend_names();
  if (std::find(names.begin(), names.end(), "shm") == names.end()) return;
  NodeRing ring = node_ring(comm);
  const int n = static_cast<int>(ring.member.size());
  const int nmin = static_cast<int>(-allreduce_max(comm, static_cast<int64_t>(-n)));
  if (nmin < 2) return;
  ring.kmax = std::min(8, nmin - 1);
  ModelParams bare = m;
  bare.msg_shm = bare.byte_shm = 0;
  // Per neighbor: one segment read; per value: 8 bytes read (the writer's copy is its pack).
  // The stage needs only shape a (one neighbor), so it is measured on nodes of two ranks too,
  // where there is no slope over neighbors to fit: left at its default there, a dependent
  // window stage was priced far below the measured stage_intra beside it, and auto
  // took the 3-step aggregations (two window stages) where they were not the fastest.
  const int kmax = ring.kmax;
  const ShmFit f = shm_fit(comm, loc, ring, reps, m, bare, 1, 1, kmax, 1);  // kmax 1: b is a, only the stage is used
  if (kmax > 1) m.msg_shm = std::max(0.0, f.extra / (kmax - 1));
  m.stage_shm = f.stage_shm;
  m.byte_shm = std::max(0.0, shm_fit(comm, loc, ring, reps, m, bare, 1, 512, 1, 32768).extra / (262144.0 - 4096.0));
}

}  // namespace

ModelParams calibrate_model(MPI_Comm comm, const Locality& loc, int reps) {
  ModelParams m;
  const bool intra = loc.region_size(0) >= 2, inter = loc.num_regions() >= 2;
  if (intra) fit(comm, loc.member(0, 0), loc.member(0, 1), reps, m.alpha_intra, m.beta_intra);
  if (inter) {
    fit(comm, loc.member(0, 0), loc.member(1, 0), reps, m.alpha_inter, m.beta_inter);
    m.region_rate = region_rate(comm, loc, reps);
  }
  fit_rings(comm, loc, reps, intra, inter, m);
  m.copy = copy_cost(comm);
  fit_shm(comm, loc, reps, m);
  return m;
}

namespace {
static_assert(sizeof(ModelParams) == ModelParams::kFields * sizeof(double), "ModelParams: kFields doubles");

#ifndef SPARSECOMM_SMPI
// ModelParams as its kFields doubles (declaration order: the cache's "# launch" lines and
// broadcasts), and back.
using Fields = std::array<double, ModelParams::kFields>;
Fields fields_of(const ModelParams& m) {
  Fields f;
  std::memcpy(f.data(), &m, sizeof m);
  return f;
}
ModelParams params_of(const double* f) {
  ModelParams m;
  std::memcpy(static_cast<void*>(&m), f, sizeof m);
  return m;
}

// What else decides the network a run measures, from the environment, as "NAME=value"
// words in name order (empty where none is set): the transports and waiting Open MPI is
// told to use (`mpirun --mca x y` reaches every rank as OMPI_MCA_x), MPICH's device choices,
// UCX's and libfabric's transport choices, and SPARSECOMM_MODEL_TAG, which names what the process cannot see
// (scripts/cluster.sh sets it to its emulated links' rate). Without them a model measured
// over one network is read back over another (the emulated cluster without its links' rate
// limit, then with it: auto priced the links far too fast; experiments/petsc/README.md).
std::string network_tag() {
  static const char* const kExact[] = {"SPARSECOMM_MODEL_TAG", "OMPI_MCA_mpi_yield_when_idle", "UCX_TLS",
                                       "UCX_NET_DEVICES", "FI_PROVIDER", "MPIR_CVAR_CH4_NETMOD",
                                       "MPIR_CVAR_CH4_SHM", "MPIR_CVAR_NOLOCAL"};
  static const char* const kPrefix[] = {"OMPI_MCA_btl", "OMPI_MCA_pml", "OMPI_MCA_mtl"};
  std::vector<std::string> words;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e, name = kv.substr(0, kv.find('='));
    bool take = false;
    for (const char* x : kExact) take = take || name == x;
    for (const char* p : kPrefix) take = take || name.rfind(p, 0) == 0;
    if (!take) continue;
    words.push_back(kv);
    std::replace(words.back().begin(), words.back().end(), '\n', ' ');  // the key is one line of the file
  }
  std::sort(words.begin(), words.end());
  std::string tag;
  for (const std::string& w : words) tag += (tag.empty() ? "" : " ") + w;
  return tag;
}

// Repetitions of each measurement when auto measures the machine on first use.
constexpr int kFirstUseReps = 30;
// Launches whose calibrations the cache keeps; the model is their per-parameter median. One
// launch's calibration describes the places its processes took on the cores, which hold for
// the whole launch where ranks outnumber cores, so calibrations differ far more between
// launches than within one (experiments/auto/README.md, "Where the model is wrong, and
// why"). So each of the first three launches (processes) that use a layout measures it once
// and adds its calibration; later ones only read. A rare launch is outvoted by the third.
constexpr size_t kCachedLaunches = 3;

// The first line of MPI_Get_library_version: which MPI (and which version of it) the
// measurements were made with. Two MPIs on one machine (Open MPI and MPICH side by side)
// price messages differently; neither may read the other's calibration.
std::string mpi_library() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING + 1] = {0};
  int len = 0;
  if (MPI_Get_library_version(v, &len) != MPI_SUCCESS) return "unknown";
  std::string s(v, static_cast<size_t>(std::max(0, std::min(len, MPI_MAX_LIBRARY_VERSION_STRING))));
  s = s.substr(0, s.find_first_of("\r\n"));
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == ',')) s.pop_back();
  return s.empty() ? "unknown" : s;
}

// The cache key: what the parameters depend on, and a version (raised whenever the
// measurements change, so older caches are measured again). The MPI library (mpi_library());
// the host name of rank 0 stands for the machine; ranks per node for oversubscription; the layout for the locality classes; the
// network's selection (network_tag(), appended where not empty). Local: only rank 0 reads
// and writes the cache, so only its key matters (no broadcast of its host name: one
// collective fewer on auto's first use).
std::string cache_key(const std::vector<int>& node, const Locality& loc) {
  // Nodes, most and fewest ranks per node, from the node labels.
  std::map<int, int> per_node;
  for (int x : node) ++per_node[x];
  const size_t nodes = per_node.size();
  int most = 0, least = std::numeric_limits<int>::max();
  for (const auto& [node, n] : per_node) most = std::max(most, n), least = std::min(least, n);
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "unknown");
  host[sizeof host - 1] = 0;
  std::ostringstream k;
  k << "v10 mpi " << mpi_library() << " host " << host << " ranks " << node.size() << " nodes " << nodes << " per_node " << least << "-"
    << most << " regions";
  for (int r = 0; r < loc.num_regions(); ++r) k << " " << loc.region_size(r);
  for (int r = 0; r < loc.size(); ++r) k << (r ? "," : " ") << loc.region_of(r);  // placement
  if (const std::string net = network_tag(); !net.empty()) k << " net " << net;
  return k.str();
}
// From the node labels kept on the communicator (auto needs them too: one detection serves both).
std::string cache_key(MPI_Comm comm, const Locality& loc) { return cache_key(node_labels(comm), loc); }

std::string cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/sparsecomm";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/sparsecomm";
  return "";
}

// FNV-1a: a file name for the key (the key itself is the file's first line, checked on read).
std::string key_file(const std::string& key) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  char name[64];
  std::snprintf(name, sizeof name, "model-%016llx.txt", static_cast<unsigned long long>(h));
  return name;
}

// A cache file: the model (the median of the launches' calibrations, in ModelParams' file
// format, so that it reads as a parameter file too), then one comment line per launch,
// "# launch" and its kFields values in ModelParams' order.
constexpr char kLaunchLine[] = "# launch ";  // (read_cache and write_cache)
struct CacheEntry {
  ModelParams model;
  std::vector<ModelParams> launches;
};

// Each parameter's median over `all` (of two: their mean).
ModelParams median_of(const std::vector<ModelParams>& all) {
  std::vector<Fields> f;
  for (const ModelParams& m : all) f.push_back(fields_of(m));
  Fields med;
  std::vector<double> v(all.size());
  for (size_t k = 0; k < med.size(); ++k) {
    for (size_t t = 0; t < f.size(); ++t) v[t] = f[t][k];
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    med[k] = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  }
  return params_of(med.data());
}

// Rank 0's read of the cache: false for a missing, foreign or unreadable file.
bool read_cache(const std::string& path, const std::string& key, CacheEntry& e) {
  std::ifstream in(path);
  std::string first;
  if (!in || !std::getline(in, first) || first != "# key: " + key) return false;
  try {
    e.model = ModelParams::load(path);
  } catch (const InputError&) {
    return false;  // damaged: measured again and rewritten
  }
  e.launches.clear();
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(kLaunchLine, 0) != 0) continue;
    std::istringstream ss(line.substr(sizeof kLaunchLine - 1));
    Fields v;
    bool ok = true;
    for (double& x : v) ok = ok && (ss >> x) && x >= 0;
    if (!ok) return false;  // damaged
    e.launches.push_back(params_of(v.data()));
  }
  if (e.launches.empty()) e.launches.push_back(e.model);  // (a file with the model alone: one launch)
  return true;
}

void write_cache(const std::string& dir, const std::string& path, const std::string& key, const CacheEntry& e) {
  const std::string parent = dir.substr(0, dir.rfind('/'));
  ::mkdir(parent.c_str(), 0755);
  ::mkdir(dir.c_str(), 0755);
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  try {
    e.model.save(tmp, "key: " + key);
    std::ofstream out(tmp, std::ios::app);
    out.precision(17);
    for (const ModelParams& l : e.launches) {
      const char* sep = kLaunchLine;
      for (double x : fields_of(l)) {
        out << sep << x;
        sep = " ";
      }
      out << "\n";
    }
    if (!out) {
      std::remove(tmp.c_str());  // a partial file: no cache, measured again next time
      return;
    }
  } catch (const InputError&) {
    return;  // not writable: measured again next time
  }
  std::rename(tmp.c_str(), path.c_str());  // atomic: concurrent first uses write whole files
}

// The cache keys this process has measured (rank 0's: it alone reads and decides).
std::mutex measured_lock;
std::set<std::string> measured_here;

// Whether this launch should measure and add its calibration to the entry read.
bool wants_launch(const CacheEntry& e, const std::string& key) {
  std::lock_guard<std::mutex> g(measured_lock);
  return e.launches.size() < kCachedLaunches && !measured_here.count(key);
}
#endif  // SPARSECOMM_SMPI
}  // namespace

namespace {
// What machine_model() and node_labels() learned about a communicator, kept on it as an
// MPI attribute (freed with it, not copied to duplicates): a program that builds many
// plans on one communicator (every level of an AMG hierarchy) pays the collectives once.
// Every rank stores the same entries, since both calls are collective.
struct CommFacts {
  std::map<std::vector<int>, ModelParams> model_by_layout;  // region of every rank -> model
  std::vector<int> node;                                     // node label of every rank
};

CommFacts& facts(MPI_Comm comm) { return comm_attached<CommFacts>(comm); }

}  // namespace

const std::vector<int>& node_labels(MPI_Comm comm) {
  CommFacts& f = facts(comm);
  if (f.node.empty()) {
#ifdef SPARSECOMM_SMPI
    f.node = Locality::detect(comm).regions();
#else
    // From the node communicator kept on `comm` (the one every window plan on it uses):
    // each rank knows its node's lowest rank locally; one allgather spreads them. Numbered
    // by lowest rank, as Locality::detect numbers its regions.
    const int lowest = detail::node_of(comm)->node_rank_of.begin()->first;
    std::vector<int> low(static_cast<size_t>(comm_size(comm)));
    SPC_MPI(MPI_Allgather(&lowest, 1, MPI_INT, low.data(), 1, MPI_INT, comm));
    f.node = node_labels_from_lowest(low);
#endif
  }
  return f.node;
}

std::vector<int> node_labels_from_lowest(const std::vector<int>& lowest) {
  std::vector<int> sorted(lowest);
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<int> label(lowest.size());
  for (size_t r = 0; r < lowest.size(); ++r)
    label[r] = static_cast<int>(std::lower_bound(sorted.begin(), sorted.end(), lowest[r]) - sorted.begin());
  return label;
}

ModelParams machine_model(MPI_Comm comm, const Locality& loc) {
  CommFacts& f = facts(comm);
  const auto known = f.model_by_layout.find(loc.regions());
  if (known != f.model_by_layout.end()) return known->second;
  const ModelParams m = machine_model_uncached(comm, loc);
  f.model_by_layout[loc.regions()] = m;
  return m;
}

ModelParams machine_model_uncached(MPI_Comm comm, const Locality& loc) {
#ifdef SPARSECOMM_SMPI
  (void)comm, (void)loc;
  return ModelParams{};  // the simulated platform: measuring it would cost simulated minutes
#else
  const std::string key = cache_key(comm, loc), dir = cache_dir();
  const std::string path = dir.empty() ? "" : dir + "/" + key_file(key);
  ModelParams m;
  const bool root = comm_rank(comm) == 0;
  // Rank 0's cache entry and whether it is the model (no measurement in this launch), in
  // one broadcast.
  double cached[ModelParams::kFields + 1] = {0};
  CacheEntry e;
  if (root && !path.empty() && read_cache(path, key, e) && !wants_launch(e, key)) {
    const Fields f = fields_of(e.model);
    std::copy(f.begin(), f.end(), cached);
    cached[ModelParams::kFields] = 1;
  }
  SPC_MPI(MPI_Bcast(cached, ModelParams::kFields + 1, MPI_DOUBLE, 0, comm));
  if (cached[ModelParams::kFields] != 0) return params_of(cached);
  {
    Comm own(comm);  // a duplicate: the measurements' messages stay off the caller's communicator
    // (kFirstUseReps: the stage and per-message fits are medians of differences of ring
    // times, which on oversubscribed cores need more samples than the byte slopes; the
    // spread with 10 and 40: git log -p -- experiments/auto/README.md)
    m = calibrate_model(own.get(), loc, kFirstUseReps);
  }
  // Rank 0's calibration joins the launches on file (read again: another process may have
  // written meanwhile). Before the broadcast the others wait in: whatever fails here leaves
  // this launch's calibration as the model, never an exception on rank 0 alone.
  if (root) try {
      {
        std::lock_guard<std::mutex> g(measured_lock);
        measured_here.insert(key);
      }
      CacheEntry now;
      if (path.empty() || !read_cache(path, key, now)) now.launches.clear();
      if (now.launches.size() < kCachedLaunches) now.launches.push_back(m);
      now.model = median_of(now.launches);
      if (!path.empty()) write_cache(dir, path, key, now);
      m = now.model;
    } catch (...) {
    }
  SPC_MPI(MPI_Bcast(&m, ModelParams::kFields, MPI_DOUBLE, 0, comm));  // rank 0's model, everywhere
  return m;
#endif
}

ModelParams machine_model_remembered(MPI_Comm comm, const Locality& loc) {
  const ModelParams m = machine_model_uncached(comm, loc);
  remember_machine_model(comm, loc, m);
  return m;
}

bool read_machine_model_cache(const std::vector<int>& node, const Locality& loc, ModelParams& m) {
#ifdef SPARSECOMM_SMPI
  (void)node, (void)loc, (void)m;
  return false;
#else
  if (node.size() != static_cast<size_t>(loc.size())) return false;
  const std::string key = cache_key(node, loc), dir = cache_dir();
  if (dir.empty()) return false;
  // What this process read before (every new communicator of the same shape would read the
  // same file again: auto's first plan on it). Only rank 0 reads, and broadcasts what it
  // has, so the ranks agree whatever the file holds later.
  static std::mutex lock;
  static std::map<std::string, ModelParams> seen;
  const std::string path = dir + "/" + key_file(key), memo = path + "\n" + key;  // (the file name is a hash of the key)
  std::lock_guard<std::mutex> g(lock);
  if (const auto it = seen.find(memo); it != seen.end()) {
    m = it->second;
    return true;
  }
  CacheEntry e;
  if (!read_cache(path, key, e) || wants_launch(e, key)) return false;  // (then measured collectively)
  m = e.model;
  seen[memo] = m;
  return true;
#endif
}

void remember_machine_model(MPI_Comm comm, const Locality& loc, const ModelParams& m) {
  facts(comm).model_by_layout[loc.regions()] = m;
}

namespace {
// The source resolve() reads: `source`, else $SPARSECOMM_MODEL; its kind (0 measured,
// 1 builtin, 2 file).
std::pair<std::string, int> model_source(const std::string& source) {
  std::string src = source;
  if (src.empty())
    if (const char* e = std::getenv("SPARSECOMM_MODEL")) src = e;
  return {src, src.empty() ? 0 : src == "builtin" ? 1 : 2};
}
}  // namespace

LocalModel local_model(MPI_Comm comm, const Locality& loc, const std::string& source) {
  LocalModel l;
  std::tie(l.source, l.kind) = model_source(source);
  if (l.kind == 2) {
    try {
      l.params = ModelParams::load(l.source);
    } catch (const std::exception& e) {
      l.error = e.what();
    }
  } else if (l.kind == 0) {
    const CommFacts& f = facts(comm);
    const auto known = f.model_by_layout.find(loc.regions());
    l.measure = known == f.model_by_layout.end();
    if (!l.measure) l.params = known->second;
  }
  return l;
}

ModelParams ModelParams::resolve(MPI_Comm comm, const Locality& loc, const std::string& source) {
  // Every rank reads its own file (paths may be node-local); all must agree on the values.
  std::string src;
  int kind = 0;
  std::tie(src, kind) = model_source(source);
  int k[2] = {kind, -kind}, mx[2];
  SPC_MPI(MPI_Allreduce(k, mx, 2, MPI_INT, MPI_MAX, comm));
  if (mx[0] != -mx[1]) throw InputError("model: ranks disagree on the parameter source (file, builtin or measured)");
  if (kind == 0) return machine_model(comm, loc);
  if (kind == 1) return ModelParams{};
  const ModelParams m = agreed(comm, [&] { return ModelParams::load(src); });
  double lo[kFields], hi[kFields];
  SPC_MPI(MPI_Allreduce(&m, lo, kFields, MPI_DOUBLE, MPI_MIN, comm));
  SPC_MPI(MPI_Allreduce(&m, hi, kFields, MPI_DOUBLE, MPI_MAX, comm));
  for (int i = 0; i < kFields; ++i)
    if (lo[i] != hi[i]) throw InputError("model: ranks loaded different performance model parameters from " + src);
  return m;
}

}  // namespace sparsecomm
