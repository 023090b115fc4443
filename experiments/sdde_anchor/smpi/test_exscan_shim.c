/* Harness check of ibarrier_shim.c's recursive-doubling MPI_Exscan (smpi.sh check-shim):
 * against SMPI's own MPI_Exscan (MPI_SUM on two longs), in place, and with a
 * non-commutative operation (2x2 integer matrix products, mod a prime) against the
 * product of every lower rank's matrix taken in rank order. Exit code 1 when wrong. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int shim_exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);

static void matmul(void* in, void* inout, int* n, MPI_Datatype* type) {
  (void)type;
  const long* a = in;
  long* b = inout;
  for (int i = 0; i < *n; ++i, a += 4, b += 4) {
    const long c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                       a[2] * b[1] + a[3] * b[3]};
    for (int k = 0; k < 4; ++k) b[k] = c[k] % 1000003;
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int r, p, bad = 0, one = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  long v[2] = {r + 1, 3L * r * r + 7}, mine[2] = {-1, -1}, smpi[2] = {-1, -1};
  shim_exscan(v, mine, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Exscan(v, smpi, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (r > 0 && (mine[0] != smpi[0] || mine[1] != smpi[1])) bad = 1;
  long w[2] = {r + 1, 0};
  shim_exscan(MPI_IN_PLACE, w, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (r > 0 && w[0] != (long)r * (r + 1) / 2) bad = 1;
  MPI_Op op;
  MPI_Op_create(matmul, 0, &op);
  MPI_Datatype m;
  MPI_Type_contiguous(4, MPI_LONG, &m);
  MPI_Type_commit(&m);
  long x[4] = {r + 1, 1, r % 3, 2}, y[4], z[4] = {1, 0, 0, 1};
  shim_exscan(x, y, 1, m, op, MPI_COMM_WORLD);
  long* all = malloc(sizeof(long) * 4 * (size_t)p);
  MPI_Allgather(x, 4, MPI_LONG, all, 4, MPI_LONG, MPI_COMM_WORLD);
  for (int q = r - 1; q >= 0; --q) matmul(&all[4 * q], z, &one, &m); /* z = x_0 * ... * x_{r-1} */
  if (r > 0)
    for (int k = 0; k < 4; ++k) bad |= y[k] != z[k];
  free(all);
  int any;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (r == 0) printf("exscan shim %s at %d ranks\n", any ? "WRONG" : "ok", p);
  MPI_Type_free(&m);
  MPI_Op_free(&op);
  MPI_Finalize();
  return any;
}
