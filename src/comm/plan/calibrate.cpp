// Calibration of the performance model (model.hpp): measures this machine's (or emulated
// cluster's) parameters in a short collective run. `sparsecomm calibrate` writes them to a
// file; `auto` runs it once per machine and layout on first use and caches the result
// (machine_model.cpp).
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

#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include "sparsecomm/comm/plan/model.hpp"
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

}  // namespace sparsecomm
