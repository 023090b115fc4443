// sparsecomm: one command-line tool for every job (its main() is main.cpp).
//   mpirun -np 8 sparsecomm info --matrix HB/bcsstk13 --regions ppn:4
//   mpirun -np 8 sparsecomm spmv --matrix HB/bcsstk13 --regions ppn:4 --backend all
//   sparsecomm <subcommand> --help
#include <cstring>
#include <iostream>
#include <map>
#include <string>

#include "cli/cli.hpp"
#include "common/app_main.hpp"

namespace sparsecomm::apps {
int info_main(int argc, char** argv);
int spmv_main(int argc, char** argv);
int plan_stats_main(int argc, char** argv);
int backends_main(int argc, char** argv);
}  // namespace sparsecomm::apps

namespace {

using namespace sparsecomm::apps;

struct Sub {
  AppFn fn;
  const char* help;
};

const std::map<std::string, Sub>& subcommands() {
  static const std::map<std::string, Sub> s = {
      {"backends", {backends_main, "the registered backends of both exchange shapes, their descriptions and options"}},
      {"info", {info_main, "pattern statistics on P ranks and a region layout; model predictions; auto's choice"}},
      {"sdde", {sdde_main, "compare the SDDE strategies on a matrix (pattern discovery)"}},
      {"spmv", {spmv_main, "SpMV with every backend (and auto), verified and timed"}},
#ifdef SPARSECOMM_CLI_AMG
      {"amg", {amg_main, "SpMV of every level of a BoomerAMG hierarchy vs Hypre's communication"}},
#endif
      {"bfs", {bfs_main, "2D BFS (blocking, overlapped, plan) with Graph500 validation"}},
      {"calibrate", {calibrate_main, "measure the performance-model parameters and write them"}},
      {"nbrbench", {nbrbench_main, "neighbor allgather microbenchmark: random / Moore topologies, combining"}},
      {"spmm", {spmm_main, "SpMM C = A x B via allgather-shaped exchanges, combining, halo"}},
      {"plan-stats", {plan_stats_main, "exact schedule counts of direct vs combined for P virtual ranks (one process)"}},
      {"autoeval", {autoeval_main, "auto's regret and the model's prediction error over matrices"}},
  };
  return s;
}

void usage(std::ostream& os) {
  os << "usage: mpirun -np P sparsecomm <subcommand> [options]   (sparsecomm <subcommand> --help)\n"
        "common options: --matrix NAME|PATH, --gen SPEC, --backend a,b|all, --sdde S, --regions ppn:k,\n"
        "                --option key=value (backend options), --reps N, --json FILE\nsubcommands:\n";
  for (const auto& [n, s] : subcommands()) os << "  " << n << std::string(11 - n.size(), ' ') << s.help << "\n";
}

// Usage and the unknown-subcommand error are printed by rank 0 only: under mpirun every
// rank runs this, and P copies of the same message help nobody.
int say_once(const std::string& error, int rc) {
  MPI_Init(nullptr, nullptr);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    if (!error.empty()) std::cerr << "sparsecomm: " << error << "\n";
    usage(rc == 0 ? std::cout : std::cerr);
  }
  MPI_Finalize();
  return rc;
}

}  // namespace

int sparsecomm::apps::cli_main(int argc, char** argv) {
  if (argc < 2) return say_once("", 2);
  if (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) return say_once("", 0);
  auto it = subcommands().find(argv[1]);
  if (it == subcommands().end()) return say_once("unknown subcommand '" + std::string(argv[1]) + "'", 2);
  const std::string name = std::string("sparsecomm ") + argv[1];
  return run_app(argc - 1, argv + 1, it->second.fn, name.c_str());
}
