// sparsecomm_calibrate: measures the performance-model parameters of this machine (or
// emulated cluster) in a short run (calibrate_model, src/comm/plan/calibrate.cpp: what is
// measured and how) and writes them for the "auto" backend:
//
//   scripts/cluster.sh run 4 4 --rate 1gbit -- sparsecomm_calibrate --out model.txt
//   SPARSECOMM_MODEL=model.txt mpirun -np 16 sparsecomm_amg_spmv --backends auto,p2p
//
// Without a file, auto calibrates on first use and caches the result (machine_model).
#include <mpi.h>

#include <iostream>

#include "sparsecomm/comm/plan/model.hpp"
#include "common/app_main.hpp"
#include "common/cli.hpp"
#include "common/options.hpp"

using namespace sparsecomm;

namespace sparsecomm::apps {

int calibrate_main(int argc, char** argv) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = comm_rank(comm);
  apps::Options o(apps::with_common({"regions", "reps"},
                                    {{"out", {"sparsecomm_model.txt", "file to write the parameters to"}}},
                                    {{"reps", "50"}}),
                  "usage: mpirun -np P sparsecomm calibrate [options]\n"
                  "example: mpirun -np 8 sparsecomm calibrate --regions ppn:4 --out model.txt");
  if (!apps::parse_or_help(comm, o, argc, argv)) return 0;
  const int reps = o.get_count("reps");
  Locality loc = Locality::parse(comm, o.get("regions"));
  const ModelParams m = calibrate_model(comm, loc, reps);
  const bool intra = loc.region_size(0) >= 2, inter = loc.num_regions() >= 2;
  if (rank == 0) {
    m.save(o.get("out"));
    std::cout << "sparsecomm_calibrate: " << comm_size(comm) << " ranks, regions " << loc.describe() << "\n"
              << "  " << m.describe() << "\n"
              << (intra ? "" : "  (intra-region: regions of one rank, defaults kept)\n")
              << (inter ? "" : "  (inter-region: one region, defaults kept)\n") << "written to " << o.get("out")
              << "\n";
  }
  return 0;
}

}  // namespace sparsecomm::apps
