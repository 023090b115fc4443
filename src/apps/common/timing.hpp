#pragma once
// Benchmark timing as DESIGN.md asks: a barrier before, the max over ranks, the median of
// repetitions after warm-up. Repetitions are grouped in batches (one barrier per batch)
// so that short operations are not dominated by the barrier.
#include <mpi.h>

#include <algorithm>
#include <vector>

namespace sparsecomm::apps {

/// Collective. Seconds of one call of f(): a barrier before, the max over ranks after.
template <class F>
double timed(MPI_Comm comm, F&& f) {
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  f();
  double local = MPI_Wtime() - t0, mx = 0;
  MPI_Allreduce(&local, &mx, 1, MPI_DOUBLE, MPI_MAX, comm);
  return mx;
}

inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Collective. Seconds per call of f(): `reps` calls in up to 10 batches after a warm-up
/// (`warmup` calls; default: one batch, at most 10); per batch the max over ranks of
/// (batch time / calls); the median over batches.
template <class F>
double time_per_call(MPI_Comm comm, int reps, F&& f, int warmup = -1) {
  const int batches = std::max(1, std::min(reps, 10));
  const int per = std::max(1, reps / batches);
  for (int i = 0; i < (warmup < 0 ? std::min(per, 10) : warmup); ++i) f();
  std::vector<double> t;
  for (int b = 0; b < batches; ++b) {
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < per; ++i) f();
    double local = (MPI_Wtime() - t0) / per, mx = 0;
    MPI_Allreduce(&local, &mx, 1, MPI_DOUBLE, MPI_MAX, comm);
    t.push_back(mx);
  }
  return median_of(t);
}

/// Median over rounds and spread ((max - min) / median) of one variant's times.
struct RoundStats {
  double median = 0, spread = 0;
  std::vector<double> rounds;  // the time of every round, in round order
};

/// The paired ratio of variant a to variant b of one interleaved_rounds() run: the median
/// over rounds of a's time over b's in the same round. A slow phase of the machine that
/// spans a round hits both and cancels, where a ratio of the two medians keeps it (the
/// measured effect: git log -p -- experiments/petsc/README.md, "Issue 30 with paired ratios").
inline double paired_ratio(const RoundStats& a, const RoundStats& b) {
  std::vector<double> q;
  for (size_t r = 0; r < a.rounds.size() && r < b.rounds.size(); ++r) q.push_back(a.rounds[r] / b.rounds[r]);
  return q.empty() ? a.median / b.median : median_of(q);
}

/// Times `n` variants in `rounds` interleaved rounds: each round calls time(i) once for
/// every variant i (seconds), round r starting with variant r mod n, so that a slow phase
/// of a noisy machine hits every variant alike and none always runs first or last.
template <class F>
std::vector<RoundStats> interleaved_rounds(size_t n, int rounds, F&& time) {
  std::vector<std::vector<double>> t(n);
  for (int r = 0; r < rounds; ++r)
    for (size_t j = 0; j < n; ++j) {
      const size_t i = (j + static_cast<size_t>(r)) % n;
      t[i].push_back(time(i));
    }
  std::vector<RoundStats> out(n);
  for (size_t i = 0; i < n; ++i) {
    if (t[i].empty()) continue;
    out[i].median = median_of(t[i]);
    const auto [lo, hi] = std::minmax_element(t[i].begin(), t[i].end());
    out[i].spread = (*hi - *lo) / out[i].median;
    out[i].rounds = t[i];
  }
  return out;
}

}  // namespace sparsecomm::apps
