// libFuzzer target over a Hypre matvec comm package as the Hypre hook receives it: the
// package's arrays (sends, receives, their starts and element maps, components) and the
// matrix fields the hook reads (first column, off-diagonal column map and count) are read
// from the input, on one rank (MPI_COMM_SELF; neighbor ranks other than 0 are out of range
// there). The hook's path is then taken: hypre_pkg::package_pattern (the shared header the
// hook and `sparsecomm amg --interp` use), make_plan with a backend the input picks, and
// two exchanges.
//
// The oracle: package_pattern declines, or make_plan raises InputError, or the exchanges
// complete and every received value is a value that was sent (ids are positions in the
// packed send buffer, each sent value its own id). A crash, a sanitizer report, another
// exception type or a value from nowhere is a finding. Hypre itself is not linked: the
// package and matrix are plain structs read through Hypre's header macros, as the hook reads
// them.
#include <mpi.h>

#include <_hypre_parcsr_mv.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <vector>

#include "interop/hypre/package_pattern.hpp"
#include "fuzz_bytes.hpp"
#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/core/error.hpp"

namespace {

using namespace sparsecomm;

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz_hypre_pkg: %s\n", what);
  std::abort();
}

using fuzz::Bytes;
// A neighbor rank: mostly 0 (the only rank), sometimes out of range
int rank_of(Bytes& in) { return in.byte() < 230 ? 0 : in.range(-2, 3); }

const char* const kBackends[] = {"p2p", "neighbor", "aggregated_dedup", "combined", "shm"};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  MPI_Init(argc, argv);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in{data, size};
  // The package
  const int nsends = in.range(0, 3), nrecvs = in.range(0, 3);
  std::vector<HYPRE_Int> send_procs(nsends + 1), send_starts(nsends + 1), recv_procs(nrecvs + 1),
      recv_starts(nrecvs + 1);
  for (int i = 0; i < nsends; ++i) send_procs[i] = rank_of(in);
  for (int i = 0; i < nrecvs; ++i) recv_procs[i] = rank_of(in);
  // Starts: mostly increasing from 0, sometimes anything in [-2, 12]
  for (int i = 0; i <= nsends; ++i)
    send_starts[i] = in.byte() < 235 ? (i ? send_starts[i - 1] + in.range(0, 4) : 0) : in.range(-2, 12);
  for (int i = 0; i <= nrecvs; ++i)
    recv_starts[i] = in.byte() < 235 ? (i ? recv_starts[i - 1] + in.range(0, 4) : 0) : in.range(-2, 12);
  const int nsend_elems = nsends ? std::max<int>(send_starts[nsends], 0) : 0;
  const int nlocal = in.range(1, 16);  // the rank's own rows (the element map's range)
  std::vector<HYPRE_Int> send_elmts(static_cast<size_t>(nsend_elems) + 1);
  for (auto& e : send_elmts) e = in.byte() < 240 ? in.range(0, nlocal - 1) : in.range(-3, nlocal + 3);
  hypre_ParCSRCommPkg pkg{};
  pkg.comm = MPI_COMM_SELF;
  pkg.num_components = in.byte() < 245 ? 1 : 2;
  pkg.num_sends = nsends, pkg.send_procs = send_procs.data(), pkg.send_map_starts = send_starts.data();
  pkg.send_map_elmts = send_elmts.data();
  pkg.num_recvs = nrecvs, pkg.recv_procs = recv_procs.data(), pkg.recv_vec_starts = recv_starts.data();
  // The matrix fields the hook reads
  const int nrecv_elems = nrecvs ? std::max<int>(recv_starts[nrecvs], 0) : 0;
  std::vector<HYPRE_BigInt> col_map(static_cast<size_t>(nrecv_elems) + 1);
  for (auto& c : col_map) c = in.range(0, 40);
  hypre_CSRMatrix offd{};
  hypre_CSRMatrixNumCols(&offd) = in.byte() < 240 ? nrecv_elems : in.range(0, 8);
  hypre_ParCSRMatrix A{};
  hypre_ParCSRMatrixFirstColDiag(&A) = in.range(0, 20);
  hypre_ParCSRMatrixColMapOffd(&A) = col_map.data();
  hypre_ParCSRMatrixOffd(&A) = &offd;
  const char* backend = kBackends[in.byte() % (sizeof kBackends / sizeof *kBackends)];

  Pattern pat;
  if (!hypre_pkg::package_pattern(&A, &pkg, &pat)) return 0;  // declined: Hypre's own exchange runs
  try {
    const Locality loc = Locality::parse(MPI_COMM_SELF, "flat");
    auto plan = make_plan(backend, pat, loc, MPI_COMM_SELF);
    const int64_t nsend = pat.send().size(), nrecv = pat.recv().size();
    std::vector<double> sent(static_cast<size_t>(std::max<int64_t>(nsend, 1))), got(static_cast<size_t>(nrecv) + 1);
    std::set<double> values;
    for (int64_t k = 0; k < nsend; ++k) values.insert(sent[k] = 1000.0 + static_cast<double>(k));
    for (int round = 0; round < 2; ++round) {
      std::fill(got.begin(), got.end(), -1.0);
      plan->start(sent.data());
      plan->wait(got.data());
      for (int64_t k = 0; k < nrecv; ++k)
        if (!values.count(got[k])) finding("a received value that nobody sent");
    }
  } catch (const InputError&) {
    // the package is not a consistent exchange: every rank is told, Hypre's runs instead
  }
  return 0;
}
