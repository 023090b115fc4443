// sparsecomm_amg_spmv: the SpMV of every level of a Hypre BoomerAMG hierarchy through
// every backend, against Hypre's own communication, as in Collom, Li and Bienz
// (EuroMPI'23). The problem is the 2D rotated anisotropic diffusion built by Hypre's
// GenerateRotate7pt (45 degrees, anisotropy 0.001 by default).
//
// Per level and backend: the pattern through the SDDE, the Plan, then the time of the
// halo exchange alone (start+wait, packing included) and of the whole SpMV; the baseline
// is Hypre's comm package (hypre_ParCSRCommHandleCreate/Destroy, packing included) and
// hypre_ParCSRMatrixMatvec, measured in the same run, in interleaved rounds (time_level)
// with ratios paired per round. Every level's SpMV is checked against
// hypre_ParCSRMatrixMatvec. A V-cycle also exchanges along each level's interpolation P
// (P x, and P^T x for the restriction): --interp times those too (run_interp), on Hypre's
// packed buffers as the Hypre hook runs them; experiments/hypre_hook/packages.sh times every
// package of a real solve.
//
//   mpirun -np 16 sparsecomm_amg_spmv --nx 512 --ny 512 --regions node --json amg.jsonl
//   mpirun -np 8 sparsecomm_amg_spmv --nx 128 --ny 128 --regions ppn:4 --reps 200
//
// --dump-levels DIR writes every level's matrix to DIR/level_L.mtx (see level_dump.hpp)
// and reads each file back to check it against Hypre's matrix, so that the hierarchy can
// be re-run elsewhere: at simulated scale under SimGrid SMPI, where Hypre is not built
// (experiments/collom/run.sh: Collom, Li, Bienz, EuroMPI'23, at 2,048 simulated ranks).
//
// The pieces: config (the options), hierarchy (Hypre's problem, hierarchy and reference
// vectors), level_timing (one level's variants built, checked and timed), level_dump
// (--dump-levels), report (the tables and JSON records).
#include <mpi.h>

#include <iostream>
#include <string>
#include <vector>

#include "amg_spmv/config.hpp"
#include "amg_spmv/hierarchy.hpp"
#include "amg_spmv/level_dump.hpp"
#include "amg_spmv/level_timing.hpp"
#include "amg_spmv/report.hpp"
#include "common/provenance.hpp"
#include "common/table.hpp"
#include "sparsecomm/core/mpi_util.hpp"

namespace sparsecomm::apps {

int amg_main(int argc, char** argv) {
  using namespace amg;
  MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = comm_rank(comm);
  Config cfg;
  if (!parse_config(comm, argc, argv, cfg)) return 0;
  Hierarchy h(comm, cfg);
  const int nlevels = h.levels();
  if (rank == 0)
    std::cerr << "amg_spmv: " << cfg.nx << "x" << cfg.ny << " rotated diffusion, " << nlevels
              << " levels (BoomerAMG setup " << apps::num("%.2f", h.setup_seconds) << " s), "
              << (cfg.dump_only ? std::string("dump only")
                                : std::to_string(cfg.backends.size()) + " backends, " + std::to_string(cfg.reps) + " reps")
              << "\n";
  std::vector<Level> out;
  for (int l = 0; l < nlevels; ++l) out.push_back(run_level(comm, cfg, h, l));
  bool ok = true;
  if (rank == 0 && !cfg.dump_dir.empty()) ok = report_dump(cfg, nlevels, out) && ok;
  const auto js = apps::open_json_lines(comm, cfg.dump_only ? "" : cfg.json);
  if (rank == 0 && !cfg.dump_only) ok = report(cfg, nlevels, out, js.get()) && ok;
  int okall = ok ? 1 : 0;
  MPI_Bcast(&okall, 1, MPI_INT, 0, comm);
  return okall ? 0 : 3;
}

}  // namespace sparsecomm::apps
