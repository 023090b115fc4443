/* A plain MPI program (no sparsecomm anywhere): the SpMM kernel of the message-combining
 * papers, C = A x B with A sparse (a Matrix Market file) and B dense with K columns, rows
 * block-distributed. Each rank needs the B rows of the columns its A rows touch, so it
 * receives whole row blocks from the ranks owning them: MPI_Neighbor_allgather on the
 * distributed graph of those needs, one call per column of B (the small messages where
 * combining pays), or one call for all K columns (-mode block). Blocks are padded to
 * ceil(n/P) rows so every rank passes the same count. Every C value is checked against the
 * product computed from B's formula; then timed. The program issue 32's PMPI layer must
 * serve unchanged, run with and without LD_PRELOAD.
 *
 *   spmm_plain -matrix FILE.mtx [-cols 16] [-reps 20] [-mode column|block] [-fixed-counts 1]
 *              [-paired R]
 *
 * -paired R: then R rounds, each REPS products through MPI_Neighbor_allgather and REPS
 * through PMPI_Neighbor_allgather (MPI's own, past any profiling layer), in the order A B B A
 * (swapped every other round); prints the medians and the median of the per-round ratio (nbr_bench's
 * -paired, for this kernel).
 *
 * Prints "spmm_plain: <file> on <P> ranks, <K> columns, <mode>: <us> us/product (max over
 * ranks of the mean), in-degree max <d>, verified"; exit 1 on a wrong value, 2 on bad
 * input. Every rank reads the file (small matrices; a reader that fails says why). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paired.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overread" /* MPI_UNWEIGHTED is a zero-length array to GCC */
#endif

typedef struct {
  int n, nnz;
  int *ptr, *col;
  double *val;
} Csr;

/* What one product needs (set up in main). */
typedef struct {
  const Csr *a;
  int lo, hi, b, width, calls, K, me;
  const int *slot;
  double *mine, *got, *c;
  MPI_Comm g;
} Product;

static double b_of(int i, int j);

/* One product C = A x B: `calls` allgathers through MPI_ (pmpi = 0) or PMPI_. */
static void product(const Product *q, int pmpi) {
  const Csr *a = q->a;
  const int b = q->b, width = q->width, lo = q->lo, K = q->K;
  memset(q->c, 0, sizeof(double) * ((size_t)(q->hi - lo) + 1) * (size_t)K);
  for (int call = 0; call < q->calls; call++) {
    /* my block of B (padded rows are zero) for this call's columns */
    for (int i = 0; i < b; i++)
      for (int w = 0; w < width; w++) q->mine[i * width + w] = lo + i < q->hi ? b_of(lo + i, call + w) : 0.0;
    if (pmpi) PMPI_Neighbor_allgather(q->mine, b * width, MPI_DOUBLE, q->got, b * width, MPI_DOUBLE, q->g);
    else MPI_Neighbor_allgather(q->mine, b * width, MPI_DOUBLE, q->got, b * width, MPI_DOUBLE, q->g);
    for (int i = lo; i < q->hi; i++)
      for (int e = a->ptr[i]; e < a->ptr[i + 1]; e++) {
        const int col = a->col[e], owner = col / b;
        const double *row = owner == q->me ? &q->mine[(col - lo) * width]
                                           : &q->got[((size_t)q->slot[owner] * (size_t)b + (size_t)(col - owner * b)) *
                                                     (size_t)width];
        for (int w = 0; w < width; w++) q->c[(size_t)(i - lo) * (size_t)K + (size_t)(call + w)] += a->val[e] * row[w];
      }
  }
}

/* product() for paired_measure. */
static void run_product(void *ctx, int pmpi) { product(ctx, pmpi); }

static double b_of(int i, int j) { return 1.0 + (double)((i * 7 + j * 13) % 17) * 0.125; }

/* Reads a coordinate Matrix Market file (real, integer or pattern; general or symmetric),
 * square; 0 on success, else prints why. */
static int read_mtx(const char *path, Csr *a) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "spmm_plain: cannot open %s\n", path);
    return 1;
  }
  char line[1024], field[64] = "", sym[64] = "";
  if (!fgets(line, sizeof line, f) || sscanf(line, "%%%%MatrixMarket matrix coordinate %63s %63s", field, sym) != 2) {
    fprintf(stderr, "spmm_plain: %s: not a coordinate Matrix Market file\n", path);
    fclose(f);
    return 1;
  }
  const int pattern = !strcmp(field, "pattern"), symmetric = !strcmp(sym, "symmetric");
  if (!pattern && strcmp(field, "real") && strcmp(field, "integer")) {
    fprintf(stderr, "spmm_plain: %s: field %s not supported\n", path, field);
    fclose(f);
    return 1;
  }
  do {
    if (!fgets(line, sizeof line, f)) line[0] = 0;
  } while (line[0] == '%');
  int rows = 0, cols = 0, entries = 0;
  if (sscanf(line, "%d %d %d", &rows, &cols, &entries) != 3 || rows != cols || rows <= 0 || entries < 0) {
    fprintf(stderr, "spmm_plain: %s: bad size line (square matrices only)\n", path);
    fclose(f);
    return 1;
  }
  const int cap = symmetric ? 2 * entries : entries;
  int *ri = malloc(sizeof(int) * (size_t)(cap + 1)), *ci = malloc(sizeof(int) * (size_t)(cap + 1)), m = 0;
  double *v = malloc(sizeof(double) * (size_t)(cap + 1));
  for (int e = 0; e < entries; e++) {
    int i, j;
    double x = 1.0;
    if (fscanf(f, "%d %d", &i, &j) != 2 || (!pattern && fscanf(f, "%lf", &x) != 1) || i < 1 || j < 1 || i > rows ||
        j > cols) {
      fprintf(stderr, "spmm_plain: %s: bad entry %d\n", path, e + 1);
      free(ri), free(ci), free(v), fclose(f);
      return 1;
    }
    ri[m] = i - 1, ci[m] = j - 1, v[m++] = x;
    if (symmetric && i != j) ri[m] = j - 1, ci[m] = i - 1, v[m++] = x;
  }
  fclose(f);
  a->n = rows, a->nnz = m;
  a->ptr = calloc((size_t)rows + 1, sizeof(int));
  a->col = malloc(sizeof(int) * (size_t)(m + 1));
  a->val = malloc(sizeof(double) * (size_t)(m + 1));
  for (int e = 0; e < m; e++) a->ptr[ri[e] + 1]++;
  for (int i = 0; i < rows; i++) a->ptr[i + 1] += a->ptr[i];
  int *fill = calloc((size_t)rows, sizeof(int));
  for (int e = 0; e < m; e++) {
    const int at = a->ptr[ri[e]] + fill[ri[e]]++;
    a->col[at] = ci[e], a->val[at] = v[e];
  }
  free(fill), free(ri), free(ci), free(v);
  return 0;
}

int main(int argc, char **argv) {
  const char *path = NULL, *mode = "column";
  int K = 16, reps = 20, fixed = 0, paired = 0, me, P;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-matrix")) path = argv[i + 1];
    else if (!strcmp(argv[i], "-cols")) K = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-reps")) reps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-mode")) mode = argv[i + 1];
    else if (!strcmp(argv[i], "-fixed-counts")) fixed = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-paired")) paired = atoi(argv[i + 1]);
  }
  Csr a;
  int bad = !path || K < 1 || reps < 0 || (strcmp(mode, "column") && strcmp(mode, "block"));
  if (bad && me == 0) fprintf(stderr, "usage: spmm_plain -matrix F.mtx [-cols K] [-reps N] [-mode column|block]\n");
  if (!bad) bad = read_mtx(path, &a);
  int anybad = 0;
  MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (anybad) {
    MPI_Finalize();
    return 2;
  }
  const int n = a.n, b = (n + P - 1) / P, lo = me * b < n ? me * b : n, hi = (me + 1) * b < n ? (me + 1) * b : n;
  /* Who needs whose block: rank r needs owner(c) for every column c of its rows. */
  char *need = calloc((size_t)P * (size_t)P, 1); /* need[r * P + s]: r needs s's block */
  for (int r = 0; r < P; r++)
    for (int i = r * b; i < (r + 1) * b && i < n; i++)
      for (int e = a.ptr[i]; e < a.ptr[i + 1]; e++)
        if (a.col[e] / b != r) need[r * P + a.col[e] / b] = 1;
  int *src = malloc(sizeof(int) * (size_t)P), *dst = malloc(sizeof(int) * (size_t)P), ns = 0, nd = 0;
  int *slot = malloc(sizeof(int) * (size_t)P); /* owner -> index among my sources */
  for (int s = 0; s < P; s++) {
    slot[s] = -1;
    if (need[me * P + s]) slot[s] = ns, src[ns++] = s;
    if (need[s * P + me]) dst[nd++] = s;
  }
  MPI_Info info = MPI_INFO_NULL;
  if (fixed) {
    MPI_Info_create(&info);
    MPI_Info_set(info, "sparsecomm_fixed_counts", "true");
  }
  MPI_Comm g;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, ns, src, MPI_UNWEIGHTED, nd, dst, MPI_UNWEIGHTED, info, 0, &g);
  if (fixed) MPI_Info_free(&info);
  const int block = !strcmp(mode, "block");
  const int width = block ? K : 1, calls = block ? 1 : K; /* values per row and call; calls per product */
  double *mine = malloc(sizeof(double) * (size_t)b * (size_t)width);
  double *got = malloc(sizeof(double) * ((size_t)ns + 1) * (size_t)b * (size_t)width);
  double *c = malloc(sizeof(double) * ((size_t)(hi - lo) + 1) * (size_t)K);
  long wrong = 0;
  double t = 0;
  const Product q = {&a, lo, hi, b, width, calls, K, me, slot, mine, got, c, g};
  for (int rep = -1; rep < reps; rep++) { /* rep -1: checked, then timed */
    const double t0 = MPI_Wtime();
    product(&q, 0);
    if (rep >= 0) t += MPI_Wtime() - t0;
    if (rep == -1)
      for (int i = lo; i < hi; i++)
        for (int j = 0; j < K; j++) {
          double x = 0;
          for (int e = a.ptr[i]; e < a.ptr[i + 1]; e++) x += a.val[e] * b_of(a.col[e], j);
          wrong += c[(size_t)(i - lo) * (size_t)K + (size_t)j] != x;
        }
  }
  t = reps > 0 ? t / reps : 0;
  double tmax = 0;
  long allwrong = 0;
  int indeg = 0;
  MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&wrong, &allwrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&ns, &indeg, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  if (me == 0)
    printf("spmm_plain: %s on %d ranks, %d columns, %s: %.2f us/product, in-degree max %d, %s\n", base, P, K, mode,
           tmax * 1e6, indeg, allwrong ? "WRONG VALUES" : "verified");
  if (paired > 0 && reps > 0) {
    const PairedResult r = paired_measure(paired, reps, run_product, (void *)&q);
    if (me == 0)
      printf("spmm_plain: paired %s on %d ranks, %d columns, %s: MPI_ %.2f us/product, PMPI_ %.2f us/product, "
             "MPI_/PMPI_ %.3f [%.3f-%.3f] over %d rounds\n",
             base, P, K, mode, r.mpi_s * 1e6, r.pmpi_s * 1e6, r.ratio, r.q1, r.q3, paired);
  }
  MPI_Comm_free(&g);
  free(need), free(src), free(dst), free(slot), free(mine), free(got), free(c);
  free(a.ptr), free(a.col), free(a.val);
  MPI_Finalize();
  return allwrong ? 1 : 0;
}
