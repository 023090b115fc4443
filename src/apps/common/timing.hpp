#pragma once
// Benchmark timing as DESIGN.md asks: a barrier before, the max over ranks, the median of
// repetitions after warm-up. Repetitions are grouped in batches (one barrier per batch)
// so that short operations are not dominated by the barrier.
#include <mpi.h>

#include <algorithm>
#include <vector>

namespace sparsecomm::apps {

inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Collective. Seconds per call of f(): `reps` calls in up to 10 batches after a warm-up;
/// per batch the max over ranks of (batch time / calls); the median over batches.
template <class F>
double time_per_call(MPI_Comm comm, int reps, F&& f) {
  const int batches = std::max(1, std::min(reps, 10));
  const int per = std::max(1, reps / batches);
  for (int i = 0; i < std::min(per, 10); ++i) f();
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

}  // namespace sparsecomm::apps
