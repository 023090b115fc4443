#pragma once
// The one comparison every oracle in sparsecomm uses (apps, tests, the PETSc check), so
// that a wrong result can never pass. Two traps it closes:
//   - NaN compares false: `max(err, |NaN|)` keeps err, and `err <= tol` with err = NaN is
//     false but `!(err > tol)` is true. Here non-finite values are never folded into an
//     error magnitude; they are counted separately.
//   - A non-finite value can be right: a matrix built from the user's own arrays (C API,
//     Hypre, PETSc) may hold inf or NaN. A result entry matches its reference when both are
//     finite and close, or both are the *same* non-finite value (NaN and NaN, +inf and +inf).
//     Any other pairing (NaN vs a number, +inf vs -inf, a number vs inf) is a mismatch,
//     whatever the tolerance.
//
//   Comparison c;
//   for (i ...) c.add(y[i], y_ref[i], i);
//   const bool good = c.allreduce(comm).ok(1e-12);   // collective
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

namespace sparsecomm {

struct Comparison {
  double max_err = 0;           ///< max |got - want| over entries where both are finite
  double scale = 0;             ///< max |want| over finite reference entries
  int64_t compared = 0;         ///< entries compared
  int64_t nonfinite_mismatches = 0;  ///< entries whose non-finite status or value differs
  int64_t first_mismatch = -1;  ///< index (as given to add) of the first non-finite mismatch; -1: none

  /// True when `got` and `want` are both NaN, or the same infinity.
  static bool same_nonfinite(double got, double want) {
    if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
    return got == want;  // both infinite here: the same sign
  }

  void add(double got, double want, int64_t index = -1) {
    ++compared;
    if (std::isfinite(got) && std::isfinite(want)) {
      max_err = std::max(max_err, std::abs(got - want));  // finite - finite: finite or +inf, never NaN
      scale = std::max(scale, std::abs(want));
      return;
    }
    if (std::isfinite(want)) scale = std::max(scale, std::abs(want));
    if (!same_nonfinite(got, want)) {
      if (nonfinite_mismatches == 0) first_mismatch = index;
      ++nonfinite_mismatches;
    }
  }

  /// max_err / scale (scale floored at the smallest normal double); +inf when any entry
  /// differs in its non-finite status. Never NaN.
  double rel_err() const {
    if (nonfinite_mismatches > 0) return std::numeric_limits<double>::infinity();
    return max_err / std::max(scale, std::numeric_limits<double>::min());
  }

  /// Every entry matches: no non-finite mismatch and max_err <= rtol * scale.
  bool ok(double rtol) const { return nonfinite_mismatches == 0 && max_err <= rtol * scale; }

  /// Collective over `comm`: the comparison of every rank's entries together (max of the
  /// errors and scales, sums of the counts; first_mismatch is the lowest failing rank's).
  Comparison allreduce(MPI_Comm comm) const {
    double d[2] = {max_err, scale}, dmax[2];
    int64_t n[2] = {compared, nonfinite_mismatches}, nsum[2];
    MPI_Allreduce(d, dmax, 2, MPI_DOUBLE, MPI_MAX, comm);
    MPI_Allreduce(n, nsum, 2, MPI_INT64_T, MPI_SUM, comm);
    int rank = 0, first = 0;
    MPI_Comm_rank(comm, &rank);
    const int mine = nonfinite_mismatches > 0 ? rank : std::numeric_limits<int>::max();
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    int64_t idx = rank == first ? first_mismatch : -1;
    if (first != std::numeric_limits<int>::max()) MPI_Bcast(&idx, 1, MPI_INT64_T, first, comm);
    Comparison r;
    r.max_err = dmax[0], r.scale = dmax[1], r.compared = nsum[0], r.nonfinite_mismatches = nsum[1];
    r.first_mismatch = idx;
    return r;
  }

  /// "rel err 1.2e-16" or "3 non-finite mismatches (first at 17)": for tables and messages.
  std::string describe() const {
    if (nonfinite_mismatches > 0)
      return std::to_string(nonfinite_mismatches) + " non-finite mismatch" + (nonfinite_mismatches > 1 ? "es" : "") +
             (first_mismatch >= 0 ? " (first at " + std::to_string(first_mismatch) + ")" : "");
    char buf[32];
    std::snprintf(buf, sizeof buf, "rel err %.1e", rel_err());
    return buf;
  }
};

/// Compares n values.
inline Comparison compare(const double* got, const double* want, int64_t n) {
  Comparison c;
  for (int64_t i = 0; i < n; ++i) c.add(got[i], want[i], i);
  return c;
}

}  // namespace sparsecomm
