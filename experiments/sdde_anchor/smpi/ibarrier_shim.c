/* The dissemination barrier of ibarrier_shim.h (harness only). A barrier's handle is the
 * address of its state cast to MPI_Request: SMPI's requests are pointers to its own
 * objects, so a handle is recognised by being one of the states in use. */
#define SDDE_ANCHOR_IBARRIER_SHIM_IMPL
#include "ibarrier_shim.h"

#include <simgrid/actor.h>
#include <stdlib.h>
#include <string.h>

enum { SHIM_MAX = 16, SHIM_TAG = 32760, SHIM_SCAN_TAG = 32750 };

struct shim_barrier {
  int used, round, rounds, rank, size;
  MPI_Comm comm;
  MPI_Request reqs[2];
  char out, in;
};
static struct shim_barrier shim_state[SHIM_MAX]; /* per rank: the program's globals are privatized by SMPI */

static struct shim_barrier* shim_find(MPI_Request r) {
  for (int i = 0; i < SHIM_MAX; ++i)
    if (shim_state[i].used && (MPI_Request)(void*)&shim_state[i] == r) return &shim_state[i];
  return NULL;
}

static void shim_post(struct shim_barrier* b) {
  const int d = 1 << b->round;
  MPI_Irecv(&b->in, 1, MPI_CHAR, (b->rank - d % b->size + b->size) % b->size, SHIM_TAG + b->round, b->comm,
            &b->reqs[0]);
  MPI_Isend(&b->out, 1, MPI_CHAR, (b->rank + d) % b->size, SHIM_TAG + b->round, b->comm, &b->reqs[1]);
}

int shim_ibarrier(MPI_Comm comm, MPI_Request* request) {
  struct shim_barrier* b = NULL;
  for (int i = 0; i < SHIM_MAX && !b; ++i)
    if (!shim_state[i].used) b = &shim_state[i];
  if (!b) return MPI_ERR_INTERN;
  b->used = 1, b->round = 0, b->rounds = 0, b->comm = comm, b->out = 1;
  MPI_Comm_rank(comm, &b->rank);
  MPI_Comm_size(comm, &b->size);
  while ((1 << b->rounds) < b->size) ++b->rounds;
  if (b->rounds > 0) shim_post(b);
  *request = (MPI_Request)(void*)b;
  return MPI_SUCCESS;
}

/* Completes what has arrived; 1 when the last round is done. */
static int shim_progress(struct shim_barrier* b) {
  while (b->round < b->rounds) {
    int done = 0; /* each request on its own: completed ones become MPI_REQUEST_NULL */
    for (int i = 0; i < 2; ++i) {
      int f = 1;
      if (b->reqs[i] != MPI_REQUEST_NULL) MPI_Test(&b->reqs[i], &f, MPI_STATUS_IGNORE);
      done += f;
    }
    if (done < 2) return 0;
    if (++b->round < b->rounds) shim_post(b);
  }
  return 1;
}

static void shim_empty_status(MPI_Status* status) {
  if (status == MPI_STATUS_IGNORE) return;
  status->MPI_SOURCE = MPI_ANY_SOURCE, status->MPI_TAG = MPI_ANY_TAG, status->MPI_ERROR = MPI_SUCCESS;
}

int shim_test(MPI_Request* request, int* flag, MPI_Status* status) {
  struct shim_barrier* b = shim_find(*request);
  if (!b) return MPI_Test(request, flag, status);
  *flag = shim_progress(b);
  if (*flag) {
    b->used = 0, *request = MPI_REQUEST_NULL;
    shim_empty_status(status);
  }
  return MPI_SUCCESS;
}

int shim_wait(MPI_Request* request, MPI_Status* status) {
  struct shim_barrier* b = shim_find(*request);
  if (!b) return MPI_Wait(request, status);
  while (b->round < b->rounds) {
    MPI_Waitall(2, b->reqs, MPI_STATUSES_IGNORE);
    if (++b->round < b->rounds) shim_post(b);
  }
  b->used = 0, *request = MPI_REQUEST_NULL;
  shim_empty_status(status);
  return MPI_SUCCESS;
}

/* The per-message CPU charge of persistent starts (see ibarrier_shim.h). */
static void shim_charge(int n) {
  static double cost = -1.0;
  if (cost < 0) {
    const char* e = getenv("MA_SMPI_MSG_COST");
    cost = e ? atof(e) : 0.4e-6;
  }
  if (cost > 0 && n > 0) sg_actor_sleep_for(cost * n);
}

int shim_start(MPI_Request* request) {
  shim_charge(1);
  return MPI_Start(request);
}

int shim_startall(int count, MPI_Request* requests) {
  shim_charge(count);
  return MPI_Startall(count, requests);
}

/* Recursive-doubling exclusive scan (see ibarrier_shim.h). In step k rank r exchanges with
 * r XOR 2^k its partial reduction of the 2^k-block it lies in; what comes from below is
 * folded into the result too. Operands keep rank order (in op inout, MPI_Reduce_local), so
 * non-commutative operations are correct. Rank 0's recvbuf is left as it was (undefined by
 * the standard). Needs a contiguous datatype (MPI Advance passes MPI_LONG). */
int shim_exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  int rank, size, have = 0, rc = MPI_SUCCESS;
  MPI_Aint lb, extent;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Type_get_extent(type, &lb, &extent);
  const size_t bytes = (size_t)count * (size_t)extent;
  char* partial = malloc(bytes ? bytes : 1);
  char* tmp = malloc(bytes ? bytes : 1);
  if (!partial || !tmp) {
    free(partial), free(tmp);
    return MPI_ERR_NO_MEM;
  }
  memcpy(partial, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, bytes);
  for (int mask = 1; mask < size && rc == MPI_SUCCESS; mask <<= 1) {
    const int peer = rank ^ mask;
    if (peer >= size) continue;
    rc = MPI_Sendrecv(partial, count, type, peer, SHIM_SCAN_TAG, tmp, count, type, peer, SHIM_SCAN_TAG, comm,
                      MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) break;
    if (peer < rank) { /* tmp reduces ranks below ours: it goes in front */
      MPI_Reduce_local(tmp, partial, count, type, op);
      if (have) MPI_Reduce_local(tmp, recvbuf, count, type, op);
      else memcpy(recvbuf, tmp, bytes), have = 1;
    } else { /* ranks above: behind our partial */
      MPI_Reduce_local(partial, tmp, count, type, op);
      memcpy(partial, tmp, bytes);
    }
  }
  free(partial), free(tmp);
  return rc;
}
