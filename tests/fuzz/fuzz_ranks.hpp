#pragma once
// libFuzzer at several ranks. libFuzzer lives in one process; a collective code path needs
// every rank of the job. So rank 0 runs libFuzzer and every other rank serves it: each input
// rank 0 is given is broadcast (its length, then its bytes) and every rank runs the target's
// body on it, together, each taking its own part of what the bytes describe. The coverage
// that guides libFuzzer is rank 0's.
//
//   extern "C" int LLVMFuzzerInitialize(int*, char***) {
//     MPI_Init(nullptr, nullptr);
//     fuzz::serve_from_rank0(body, finalize);     // ranks > 0 stay in here until the end
//     return 0;
//   }
//   extern "C" int LLVMFuzzerTestOneInput(const uint8_t* d, size_t n) {
//     fuzz::run_on_every_rank(body, d, n);         // rank 0: hands the input on, runs body
//     return 0;
//   }
//
// Run under mpirun (scripts/fuzz.sh, RANKS). When libFuzzer ends normally, rank 0 tells the
// others (length -1) from an atexit handler and every rank finalizes. A crash on rank 0 is
// libFuzzer's (its artifact); on another rank the launcher ends the job, and that rank's
// input is the file $FUZZ_RANK_INPUT.rank<r> (written before each input is run).
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace sparsecomm::fuzz {

using RankBody = void (*)(const uint8_t* data, size_t size);
using Finalize = void (*)();

namespace detail {
inline Finalize& finalize_fn() {
  static Finalize f = nullptr;
  return f;
}
inline void end_from_rank0() {
  long long end = -1;
  MPI_Bcast(&end, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  if (finalize_fn()) finalize_fn()();
}
inline void keep_input(int rank, const uint8_t* data, size_t size) {
  const char* prefix = std::getenv("FUZZ_RANK_INPUT");
  if (!prefix || !*prefix) return;
  const std::string path = std::string(prefix) + ".rank" + std::to_string(rank);
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    if (size) std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
}
}  // namespace detail

/// Collective over MPI_COMM_WORLD, after MPI is initialized. Rank 0 returns (libFuzzer goes
/// on); every other rank runs `body` on each input rank 0 hands out, then `finalize` and
/// exits when rank 0 is done. `finalize` (MPI_Finalize, or PetscFinalize) runs on every rank.
inline void serve_from_rank0(RankBody body, Finalize finalize) {
  detail::finalize_fn() = finalize;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    std::atexit(detail::end_from_rank0);
    return;
  }
  std::vector<uint8_t> in;
  for (;;) {
    long long n = 0;
    MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (n < 0) break;
    in.resize(static_cast<size_t>(n));
    if (n > 0) MPI_Bcast(in.data(), static_cast<int>(n), MPI_BYTE, 0, MPI_COMM_WORLD);
    detail::keep_input(rank, in.data(), in.size());
    body(in.data(), in.size());
  }
  if (finalize) finalize();
  std::exit(0);
}

/// Rank 0, for each input: hands it to the other ranks, then runs `body` on it itself.
inline void run_on_every_rank(RankBody body, const uint8_t* data, size_t size) {
  long long n = static_cast<long long>(size);
  MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  if (n > 0) MPI_Bcast(const_cast<uint8_t*>(data), static_cast<int>(n), MPI_BYTE, 0, MPI_COMM_WORLD);
  body(data, size);
}

}  // namespace sparsecomm::fuzz
