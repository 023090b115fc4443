// Two threads of one process making collective sparsecomm calls on one communicator at the
// same time: MPI cannot order them alike on every rank, so the second must get a clear
// "not supported" error before it sends anything (CommExclusive, core/mpi_util.hpp), never
// a truncation abort or a hang, and the first must complete correctly.
//
// Deterministic: thread A creates a plan with a test backend whose factory holds it inside
// make_plan (after make_plan's own collective) until thread B has made every call below on
// the same communicator; each must fail on this rank with the message. Then A completes,
// and B, now alone, creates and runs plans on the communicator, values checked.
// Prints "threads_one_comm: R refusals, W wrong" (agreed over ranks); exit 0 when every
// refusal happened and nothing was wrong, on every rank. Exits 77 without
// MPI_THREAD_MULTIPLE.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sparsecomm.h"
#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/comm/pattern.hpp"
#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/comm/sdde.hpp"
#include "sparsecomm/comm/topology.hpp"

namespace {
using namespace sparsecomm;

std::promise<void> inside;    // thread A is inside make_plan
std::promise<void> tried;     // thread B has made its calls
const int64_t kOwned = 4;     // values per rank; each rank needs the first of the next

bool says_not_supported(const std::string& msg) {
  return msg.find("another thread of this process") != std::string::npos &&
         msg.find("not supported") != std::string::npos;
}

// Each call on `comm` while A holds it: must throw (or return) the clear error.
int refusals(MPI_Comm comm, const Pattern& pat, const Topology& ring, const Locality& loc, int me, int p,
             bool verbose) {
  int ok = 0;
  auto expect_throw = [&](const char* what, auto&& call) {
    try {
      call();
      std::printf("rank %d: %s was not refused\n", me, what);
    } catch (const InputError& e) {
      if (says_not_supported(e.what())) ++ok;
      else std::printf("rank %d: %s: unexpected message: %s\n", me, what, e.what());
    }
  };
  expect_throw("make_plan", [&] { make_plan("p2p", pat, loc, comm); });
  expect_throw("make_gather_plan", [&] { make_gather_plan("p2p", ring, loc, comm, 1); });
  const int64_t gid[1] = {((me + 1) % p) * kOwned};
  SPC_Halo h = SPC_HALO_NULL;
  const int rc = SPC_Halo_create(comm, static_cast<int>(kOwned), p > 1 ? 1 : 0, gid, MPI_DOUBLE, MPI_INFO_NULL, &h);
  char msg[SPC_MAX_ERROR_STRING];
  int len = 0;
  SPC_Error_string(rc, msg, &len);
  if (rc == SPC_ERR_ARG && says_not_supported(msg) && h == SPC_HALO_NULL) ++ok;
  else std::printf("rank %d: SPC_Halo_create: code %d, message: %s\n", me, rc, msg);
  if (verbose && me == 0) std::printf("rank 0 refusal: %s\n", msg);
  return ok;
}

int check_ring(Plan& plan, const std::vector<int64_t>& ghosts, int me) {
  std::vector<double> owned(kOwned), ghost(ghosts.size(), -1);
  for (int64_t k = 0; k < kOwned; ++k) owned[k] = static_cast<double>(me * kOwned + k);
  plan.start(owned.data());
  plan.wait(ghost.data());
  int wrong = 0;
  for (size_t k = 0; k < ghosts.size(); ++k) wrong += ghost[k] != static_cast<double>(ghosts[k]);
  return wrong;
}
}  // namespace

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int me = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (me == 0) std::printf("threads_one_comm: MPI_THREAD_MULTIPLE not provided: skipped\n");
    MPI_Finalize();
    return 77;
  }
  int refused = 0, wrong = 0;
  const int expected = 3;
  {
    const RowPartition rows = RowPartition::balanced(kOwned * p, p);
    const std::vector<int64_t> ghosts = p > 1 ? std::vector<int64_t>{((me + 1) % p) * kOwned} : std::vector<int64_t>{};
    const Pattern pat = Pattern::from_ghosts_reference(MPI_COMM_WORLD, rows, ghosts);
    const Locality loc = Locality::parse(MPI_COMM_WORLD, "ppn:2");
    // (built before the threads: building it is collective on the communicator)
    const Topology ring = Topology::from_destinations(MPI_COMM_WORLD, {(me + 1) % p}, true);
    register_backend("holds_until_tried", "p2p, created after a second thread has tried the communicator",
                     [](const Pattern& pt, const Locality& lc, MPI_Comm c, const PlanOptions& o) {
                       inside.set_value();
                       tried.get_future().wait();
                       return make_plan("p2p", pt, lc, c, o);  // the holding thread re-enters
                     });
    std::unique_ptr<Plan> first;
    std::thread a([&] { first = make_plan("holds_until_tried", pat, loc, MPI_COMM_WORLD); });
    std::thread b([&] {
      inside.get_future().wait();
      refused = refusals(MPI_COMM_WORLD, pat, ring, loc, me, p, argc > 1);
      tried.set_value();
    });
    a.join();
    b.join();
    wrong += check_ring(*first, ghosts, me);
    // A is done: the communicator is free again, for any thread.
    std::thread c([&] {
      wrong += check_ring(*make_plan("p2p", pat, loc, MPI_COMM_WORLD), ghosts, me);
      SPC_Halo h = SPC_HALO_NULL;
      const int64_t* gid = ghosts.empty() ? nullptr : ghosts.data();
      if (SPC_Halo_create(MPI_COMM_WORLD, static_cast<int>(kOwned), static_cast<int>(ghosts.size()), gid, MPI_DOUBLE,
                          MPI_INFO_NULL, &h) != SPC_SUCCESS) {
        ++wrong;
        return;
      }
      std::vector<double> owned(kOwned), ghost(ghosts.size(), -1);
      for (int64_t k = 0; k < kOwned; ++k) owned[k] = static_cast<double>(me * kOwned + k);
      if (SPC_Halo_start(h, owned.data()) != SPC_SUCCESS || SPC_Halo_wait(h, ghost.data()) != SPC_SUCCESS) ++wrong;
      for (size_t k = 0; k < ghosts.size(); ++k) wrong += ghost[k] != static_cast<double>(ghosts[k]);
      if (SPC_Halo_free(&h) != SPC_SUCCESS) ++wrong;
    });
    c.join();
  }
  int mine[2] = {refused == expected ? 0 : 1, wrong}, all[2] = {0, 0};
  MPI_Allreduce(mine, all, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  std::printf("threads_one_comm: rank %d: %d of %d calls refused; %d ranks missed a refusal, %d wrong\n", me, refused,
              expected, all[0], all[1]);
  MPI_Finalize();
  return all[0] == 0 && all[1] == 0 ? 0 : 1;
}
