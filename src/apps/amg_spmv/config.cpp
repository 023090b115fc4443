#include "amg_spmv/config.hpp"

#include <HYPRE.h>

#include <limits>
#include <utility>

#include "amg_spmv/level_dump.hpp"
#include "common/backend_args.hpp"
#include "common/cli.hpp"
#include "common/options.hpp"
#include "core/memory.hpp"
#include "sparsecomm/comm/sdde.hpp"
#include "sparsecomm/core/error.hpp"
#include "sparsecomm/core/mpi_util.hpp"

namespace sparsecomm::apps::amg {

namespace {

const char* kUsage =
    "usage: mpirun -np P sparsecomm amg [options]\n"
    "Builds the rotated anisotropic diffusion problem (Hypre's GenerateRotate7pt, nx*ny rows), a BoomerAMG\n"
    "hierarchy with Hypre's default settings, and times every level's SpMV with every backend vs Hypre.\n"
    "example (per-level table, JSON for experiments/collom/plot_amg.py):\n"
    "  mpirun -np 8 sparsecomm amg --nx 256 --ny 256 --regions ppn:4 --backend p2p,aggregated_dedup,combined \\\n"
    "      --json amg.jsonl\n"
    "\n"
    "--dump-levels DIR writes each level's matrix A_l to DIR/level_L.mtx (L = 0 is the finest) and an index\n"
    "DIR/levels.tsv (level, rows, nnz, file). Format: '%%MatrixMarket matrix coordinate real general', '%'\n"
    "comment lines saying how the hierarchy was built (grid, angle, eps, the number of ranks Hypre ran on),\n"
    "then 'rows cols nnz' and one 'row col value' line per stored entry: 1-based global ids in Hypre's\n"
    "global row order, rows ascending (each rank writes its own rows in place with MPI-IO), columns\n"
    "ascending in a row, values with 17 significant digits (exact), explicit zeros kept. The files are\n"
    "the same at any rank count for the same hierarchy. (Hypre's global order depends on its processor\n"
    "grid: with 1 rank or a prime number of ranks (grid 1 x P) level 0 is in natural lexicographic order.)\n"
    "Every file is read back with the library's Matrix Market reader and checked: identical entries and\n"
    "nnz as Hypre's level matrix, and its SpMV equal to hypre_ParCSRMatrixMatvec (exit 3 otherwise).\n"
    "--dump-only skips the benchmarks. Re-run a level elsewhere, e.g. on simulated ranks (experiments/collom/run.sh\n"
    "does this for every level, with SMPI options that keep 2,048 ranks affordable):\n"
    "  mpirun -np 2 sparsecomm amg --nx 1024 --ny 512 --dump-levels lv --dump-only\n"
    "  scripts/smpi.sh run 2048 --ppn 16 -- build-smpi/src/apps/cli/sparsecomm spmv --matrix lv/level_3.mtx \\\n"
    "      --regions node --reference rows --backend p2p,aggregated_dedup";

}  // namespace

std::string Config::plan_options(const std::string& entry, PlanOptions& popt) const {
  popt.sdde = sdde;
  return apps::split_backend_entry(entry, popt.backend);
}

std::unique_ptr<Plan> Config::plan(const std::string& entry, const Pattern& pat, MPI_Comm comm) const {
  PlanOptions popt;
  const std::string name = plan_options(entry, popt);
  return make_plan(name, pat, loc, comm, popt);
}

bool parse_config(MPI_Comm comm, int argc, char** argv, Config& cfg) {
  apps::Options opt(apps::with_common({"reps", "backend", "sdde", "regions", "json"},
                                      {{"nx", {"512", "grid points in x"}},
                                       {"ny", {"512", "grid points in y"}},
                                       {"angle", {"45", "rotation angle in degrees"}},
                                       {"eps", {"0.001", "anisotropy"}},
                                       {"max-levels", {"25", "BoomerAMG max levels"}},
                                       {"dump-levels", {"", "write each level to DIR/level_L.mtx and DIR/levels.tsv, "
                                                            "read back and checked (format above)"}},
                                       {"dump-only", {"", "[flag] with --dump-levels: only build, write and check the levels"}},
                                       {"interp", {"", "[flag] also the exchanges along each level's interpolation P "
                                                       "(P x and P^T x), Hypre's and every backend's, checked and timed"}}},
                                      {{"reps", "1000"}}),
                    kUsage);
  if (!apps::parse_or_help(comm, opt, argc, argv)) return false;
  cfg.nx = opt.get_count64("nx"), cfg.ny = opt.get_count64("ny");
  cfg.angle = opt.get_double("angle"), cfg.eps = opt.get_double("eps");
  cfg.reps = opt.get_count("reps");
  cfg.max_levels = opt.get_count("max-levels");
  cfg.backends = apps::backend_entries(opt);
  std::vector<std::string> names = cfg.backends;
  (void)apps::backend_options_for("", names);  // every entry's name and own options checked here
  cfg.sdde = opt.get("sdde");
  Sdde::check_strategy(cfg.sdde);
  // (get_count already refused values below 1; a 1-point side has no neighbor to couple)
  for (const auto& [name, v] : {std::pair<const char*, int64_t>{"--nx", cfg.nx}, {"--ny", cfg.ny}})
    if (v < 2) throw InputError(std::string("option ") + name + " must be at least 2 (grid points per side), got " + std::to_string(v));
  // Hypre numbers rows with HYPRE_BigInt (32 bits in a default build, as Debian's) and does
  // not check the grid it is asked for: too many points crash inside it. Bounded here, and
  // the memory of the matrix and its hierarchy asked for before Hypre allocates any.
  constexpr int64_t kIdMax = std::numeric_limits<HYPRE_BigInt>::max();
  if (cfg.nx > kIdMax / cfg.ny)
    throw InputError("--nx " + std::to_string(cfg.nx) + " x --ny " + std::to_string(cfg.ny) +
                     " grid points: more rows than Hypre's ids hold (HYPRE_BigInt of " +
                     std::to_string(8 * sizeof(HYPRE_BigInt)) + " bits: at most " + std::to_string(kIdMax) + ")");
  // (9-point stencil: 9 values and column ids per row; BoomerAMG's levels and interpolation
  // about three times the fine matrix: a lower bound, so that no feasible run is refused)
  const int64_t rows = (cfg.nx * cfg.ny + comm_size(comm) - 1) / comm_size(comm);
  require_memory(comm, rows * 9 * static_cast<int64_t>(sizeof(HYPRE_Complex) + sizeof(HYPRE_Int)) * 3,
                 "amg_spmv: the " + std::to_string(cfg.nx) + " x " + std::to_string(cfg.ny) +
                     " grid's matrix and its BoomerAMG hierarchy",
                 "fewer grid points (--nx, --ny) or more nodes");
  cfg.loc = Locality::parse(comm, opt.get("regions"));
  cfg.dump_dir = opt.get("dump-levels");
  cfg.dump_only = opt.flag("dump-only");
  cfg.interp = opt.flag("interp");
  if (cfg.dump_only && cfg.dump_dir.empty()) throw InputError("--dump-only needs --dump-levels DIR");
  opt.only_if(!cfg.dump_only, {"json", "interp", "backend", "reps", "sdde"},
              "has no effect with --dump-only (which builds, writes and checks the levels and runs no exchange)");
  if (!cfg.dump_dir.empty()) apps::make_directory(comm, cfg.dump_dir);
  cfg.json = opt.get("json");
  cfg.nranks = comm_size(comm);
  return true;
}

}  // namespace sparsecomm::apps::amg
