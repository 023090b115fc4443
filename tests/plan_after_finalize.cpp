// A plan that outlives MPI_Finalize, as a static cache does (the Hypre hook's, the PMPI
// layer's, a user's static plan): its destructor runs after MPI is gone and must not call
// MPI (Open MPI aborts the process: "MPI_Win_unlock_all() called after MPI_FINALIZE").
// Every backend named on the command line is built, run once (values checked) and left
// for the static destructors. Exit 0 on every rank, or the test fails.
//   plan_after_finalize BACKEND...
#include <mpi.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/comm/pattern.hpp"
#include "sparsecomm/comm/plan/plan.hpp"

namespace {
std::vector<std::unique_ptr<sparsecomm::Plan>> g_plans;  // destroyed after main returns
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  int wrong = 0;
  {
    using namespace sparsecomm;
    const int64_t n = 4;  // values per rank; each rank needs the first value of the next
    const RowPartition rows = RowPartition::balanced(n * p, p);
    const std::vector<int64_t> ghosts = p > 1 ? std::vector<int64_t>{((me + 1) % p) * n} : std::vector<int64_t>{};
    const Pattern pat = Pattern::from_ghosts_reference(MPI_COMM_WORLD, rows, ghosts);
    const Locality loc = Locality::parse(MPI_COMM_WORLD, "ppn:2");
    for (int i = 1; i < argc; ++i) {
      PlanOptions o;
      o.persistent_requests = true;
      g_plans.push_back(make_plan(argv[i], pat, loc, MPI_COMM_WORLD, o));
      std::vector<double> owned(n), ghost(ghosts.size(), -1);
      for (int64_t k = 0; k < n; ++k) owned[k] = static_cast<double>(me * n + k);
      g_plans.back()->start(owned.data());
      g_plans.back()->wait(ghost.data());
      for (size_t k = 0; k < ghosts.size(); ++k) wrong += ghost[k] != static_cast<double>(ghosts[k]);
    }
  }
  int all = 0;
  MPI_Allreduce(&wrong, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  std::printf("plan_after_finalize: %d plans kept past MPI_Finalize, %d wrong values\n", argc - 1, all);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
