/* libsparsecomm_test_yield.so: preloaded into every rank of the tests where this build's MPI
 * progresses through UCX (MPICH's ch4:ucx device; cmake/SparsecommTesting.cmake decides).
 *
 * Why: the test machine has 2 cores and the tests run 3-8 ranks. MPICH's progress loop polls
 * UCX without ever giving up the core, so a rank waiting for a message holds its core for a
 * whole scheduler time slice while the rank that would send it waits for a core: one barrier
 * of 8 ranks took 35 ms here instead of microseconds. Open MPI's `mpi_yield_when_idle` exists
 * for this; MPICH's ch4 has no such setting (MPIR_CVAR_POLLS_BEFORE_YIELD is ch3's). This
 * gives UCX's progress call the same rule: a poll that found nothing yields the core.
 * Test infrastructure only, never part of the library: a real machine runs a rank per core. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>

typedef unsigned (*progress_fn)(void*);

unsigned ucp_worker_progress(void* worker) {
  static progress_fn real = 0;
  if (!real) real = (progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
  if (!real) return 0; /* (not reached: only UCX's own users call it) */
  const unsigned events = real(worker);
  if (events == 0) sched_yield();
  return events;
}
