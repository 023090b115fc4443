/* The -paired measurement of nbr_bench and spmm_plain (plain MPI, no sparsecomm): the same
 * work through the MPI_ names and through the PMPI_ names (MPI's own implementation,
 * reached past any profiling layer), timed in one process round by round. Header-only, for
 * the two single-file programs beside it. */
#ifndef MPI_NEIGHBOR_PAIRED_H
#define MPI_NEIGHBOR_PAIRED_H
#include <mpi.h>
#include <stdlib.h>

typedef struct {
  double mpi_s, pmpi_s;  /* medians over rounds of the time per run, max over ranks */
  double ratio, q1, q3;  /* median and quartiles over rounds of the round's MPI_ / PMPI_ */
} PairedResult;

static int paired_cmp(const void *x, const void *y) {
  const double u = *(const double *)x, v = *(const double *)y;
  return (u > v) - (u < v);
}

/* The q-quantile of v[0..n) (sorted in place), by the nearest rank. */
static double paired_quantile(double *v, int n, double q) {
  qsort(v, (size_t)n, sizeof *v, paired_cmp);
  int i = (int)(q * (n - 1) + 0.5);
  return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

/* Collective over MPI_COMM_WORLD. `rounds` rounds, each running run(ctx, pmpi) `reps`
 * times per slot in the order A B B A, with A and B (pmpi 0 and 1) swapped every other
 * round: a drift within the round and the cost of going first fall on both alike (with A B
 * alternating and an odd number of rounds, one side went first once more). */
static PairedResult paired_measure(int rounds, int reps, void (*run)(void *ctx, int pmpi), void *ctx) {
  double *tm = malloc(sizeof(double) * (size_t)rounds), *tp = malloc(sizeof(double) * (size_t)rounds),
         *ratio = malloc(sizeof(double) * (size_t)rounds);
  for (int round = 0; round < rounds; round++) {
    double mine[2] = {0, 0}, most[2];
    for (int k = 0; k < 4; k++) {
      const int pmpi = ((k == 1 || k == 2) + round) % 2;
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      for (int rep = 0; rep < reps; rep++) run(ctx, pmpi);
      mine[pmpi] += (MPI_Wtime() - t0) / (2.0 * reps);
    }
    MPI_Allreduce(mine, most, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    tm[round] = most[0], tp[round] = most[1], ratio[round] = most[0] / most[1];
  }
  PairedResult r;
  r.mpi_s = paired_quantile(tm, rounds, 0.5), r.pmpi_s = paired_quantile(tp, rounds, 0.5);
  r.q1 = paired_quantile(ratio, rounds, 0.25), r.q3 = paired_quantile(ratio, rounds, 0.75);
  r.ratio = paired_quantile(ratio, rounds, 0.5);
  free(tm), free(tp), free(ratio);
  return r;
}

#endif
