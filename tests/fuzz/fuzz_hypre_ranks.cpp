// libFuzzer target over the Hypre hook's path at several ranks (fuzz_ranks.hpp): every
// rank's matvec comm package as Hypre builds it -- each rank owns a block of rows; for each
// ordered pair of ranks the input picks which of the sender's rows the receiver needs; the
// sender's send map lists them, the receiver's off-diagonal column map holds their global
// ids, both sorted as Hypre keeps them -- and sometimes one field of one rank's package
// corrupted (a count, a neighbor, an element, a column id, the component count). Each rank
// takes the hook's path on its own package: hypre_pkg::package_pattern, agreed (one rank
// declining declines it everywhere), then make_plan with the backend the input picks on
// 2-rank regions, forward and transpose, and two exchanges each.
//
// The oracle, on every rank: declining, and make_plan's InputError, happen on every rank or
// on none (else a finding; a hang is libFuzzer's timeout); a package left intact is never
// declined nor refused, and its exchanges deliver exactly: receive slot j gets the value of
// global id col_map_offd[j] (every value is a function of its global id, as in a matvec);
// the transpose brings each received slot back to the entry it came from. A corrupted
// package that is still accepted delivers only values somebody sent. (The single-rank
// target fuzz_hypre_pkg feeds arbitrary arrays instead.)
#include <mpi.h>

#include <_hypre_parcsr_mv.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <vector>

#include "fuzz_bytes.hpp"
#include "fuzz_ranks.hpp"
#include "interop/hypre/package_pattern.hpp"
#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/core/error.hpp"

namespace {

using namespace sparsecomm;
using fuzz::Bytes;

const Locality* g_loc = nullptr;  // 2-rank regions, built once (a split per input would dominate)

[[noreturn]] void finding(const char* what) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "fuzz_hypre_ranks [rank %d]: %s\n", rank, what);
  std::abort();
}

const char* const kBackends[] = {"p2p",          "neighbor", "aggregated", "aggregated_dedup",
                                 "aggregated_2step", "combined", "shm"};

double value_of(int64_t gid) { return 0.5 + static_cast<double>(gid); }

// One rank's package and the matrix fields the hook reads, as Hypre would hold them.
struct Package {
  std::vector<HYPRE_Int> send_procs, send_starts{0}, send_elmts, recv_procs, recv_starts{0};
  std::vector<HYPRE_BigInt> col_map;
  HYPRE_BigInt first = 0;
  HYPRE_Int offd_cols = 0, components = 1;
};

// Every rank's package from the same bytes; `corrupted`: whether one field was changed.
std::vector<Package> read_packages(Bytes& in, int size, bool& corrupted) {
  std::vector<int> rows(static_cast<size_t>(size));
  std::vector<Package> pk(static_cast<size_t>(size));
  HYPRE_BigInt first = 0;
  for (int r = 0; r < size; ++r) rows[r] = in.range(1, 6), pk[r].first = first, first += rows[r];
  // need[s][r]: the rows of s (local numbers, sorted, distinct) that r receives
  std::vector<std::vector<std::vector<HYPRE_Int>>> need(size, std::vector<std::vector<HYPRE_Int>>(size));
  for (int s = 0; s < size; ++s)
    for (int r = 0; r < size; ++r) {
      if (r == s || in.byte() < 90) continue;
      for (HYPRE_Int i = 0; i < rows[s]; ++i)
        if (in.byte() < 110) need[s][r].push_back(i);
    }
  for (int s = 0; s < size; ++s)
    for (int r = 0; r < size; ++r) {
      if (need[s][r].empty()) continue;
      Package& snd = pk[s];
      snd.send_procs.push_back(r);
      snd.send_elmts.insert(snd.send_elmts.end(), need[s][r].begin(), need[s][r].end());
      snd.send_starts.push_back(static_cast<HYPRE_Int>(snd.send_elmts.size()));
      Package& rcv = pk[r];  // (s ascending: the column map stays sorted, as Hypre's is)
      rcv.recv_procs.push_back(s);
      for (HYPRE_Int i : need[s][r]) rcv.col_map.push_back(pk[s].first + i);
      rcv.recv_starts.push_back(static_cast<HYPRE_Int>(rcv.col_map.size()));
    }
  for (auto& p : pk) p.offd_cols = static_cast<HYPRE_Int>(p.col_map.size());
  corrupted = in.byte() >= 200;
  if (corrupted) {
    Package& p = pk[static_cast<size_t>(in.range(0, size - 1))];
    const int delta = in.range(1, 3) * (in.byte() & 1 ? 1 : -1);
    auto poke = [&](auto& v) {
      if (!v.empty()) v[static_cast<size_t>(in.byte()) % v.size()] += delta;
    };
    switch (in.range(0, 6)) {
      case 0: poke(p.send_starts); break;
      case 1: poke(p.recv_starts); break;
      case 2: poke(p.send_procs); break;
      case 3: poke(p.recv_procs); break;
      case 4: poke(p.send_elmts); break;
      case 5: poke(p.col_map); break;
      default: p.components = 2; break;
    }
    // (Hypre's arrays are as long as their starts say: a changed start keeps that true)
    if (p.send_starts.back() > static_cast<HYPRE_Int>(p.send_elmts.size())) p.send_elmts.resize(p.send_starts.back(), 0);
    if (p.recv_starts.back() > static_cast<HYPRE_Int>(p.col_map.size())) p.col_map.resize(p.recv_starts.back(), 0);
  }
  return pk;
}

// Two exchanges of `plan` from `out` into `got` (sized by the caller).
void exchange(Plan& plan, const std::vector<double>& out, std::vector<double>& got) {
  for (int round = 0; round < 2; ++round) {
    std::fill(got.begin(), got.end(), -1.0);
    plan.start(out.data());
    plan.wait(got.data());
  }
}

void body(const uint8_t* data, size_t size) {
  Bytes in{data, size};
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const char* backend = kBackends[in.byte() % (sizeof kBackends / sizeof *kBackends)];
  bool corrupted = false;
  std::vector<Package> all = read_packages(in, nranks, corrupted);
  Package& me = all[static_cast<size_t>(rank)];
  std::set<double> sent_anywhere;  // every value some rank sends
  for (const auto& p : all)
    for (HYPRE_Int e : p.send_elmts) sent_anywhere.insert(value_of(p.first + e));

  hypre_ParCSRCommPkg pkg{};
  pkg.comm = MPI_COMM_WORLD;
  pkg.num_components = me.components;
  pkg.num_sends = static_cast<HYPRE_Int>(me.send_procs.size());
  pkg.send_procs = me.send_procs.data(), pkg.send_map_starts = me.send_starts.data();
  pkg.send_map_elmts = me.send_elmts.data();
  pkg.num_recvs = static_cast<HYPRE_Int>(me.recv_procs.size());
  pkg.recv_procs = me.recv_procs.data(), pkg.recv_vec_starts = me.recv_starts.data();
  hypre_CSRMatrix offd{};
  hypre_CSRMatrixNumCols(&offd) = me.offd_cols;
  hypre_ParCSRMatrix A{};
  hypre_ParCSRMatrixFirstColDiag(&A) = me.first;
  hypre_ParCSRMatrixColMapOffd(&A) = me.col_map.data();
  hypre_ParCSRMatrixOffd(&A) = &offd;

  // The hook's agreement on declining (build_plans): MIN of "described".
  Pattern pat;
  int ok = hypre_pkg::package_pattern(&A, &pkg, &pat) ? 1 : 0, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ok) {
    if (!corrupted) finding("an intact package was declined");
    return;
  }
  const Locality& loc = *g_loc;
  std::unique_ptr<Plan> fwd, rev;
  int refused = 0;
  try {
    PlanOptions po;
    fwd = make_plan(backend, pat, loc, MPI_COMM_WORLD, po);
    rev = make_plan(fwd->name(), pat.reverse(), loc, MPI_COMM_WORLD, po);
  } catch (const InputError&) {
    refused = 1;
  }
  int refused_min = 0, refused_max = 0;
  MPI_Allreduce(&refused, &refused_min, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&refused, &refused_max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (refused_min != refused_max) finding("make_plan refused the package on some ranks only");
  if (refused) {
    if (!corrupted) finding("an intact package was refused");
    return;
  }
  // Forward: the packed send buffer (Hypre's order) to the receive buffer.
  const size_t nsend = static_cast<size_t>(pat.send().size()), nrecv = static_cast<size_t>(pat.recv().size());
  std::vector<double> out(std::max<size_t>(nsend, 1)), got(nrecv + 1);
  for (size_t k = 0; k < nsend; ++k) out[k] = value_of(me.first + me.send_elmts[k]);
  exchange(*fwd, out, got);
  for (size_t j = 0; j < nrecv; ++j) {
    if (!corrupted && got[j] != value_of(me.col_map[j])) finding("a receive slot got another global id's value");
    if (corrupted && !sent_anywhere.count(got[j])) finding("a received value that nobody sent");
  }
  // Transpose: each receive slot's value back to the sender's packed entry.
  std::vector<double> back(nsend + 1), slots(std::max<size_t>(nrecv, 1));
  for (size_t j = 0; j < nrecv; ++j) slots[j] = got[j];
  exchange(*rev, slots, back);
  for (size_t k = 0; k < nsend && !corrupted; ++k)
    if (back[k] != out[k]) finding("the transpose brought back another value than the entry sent");
}

void finalize() {
  delete g_loc;  // (its communicators freed before MPI is)
  MPI_Finalize();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  MPI_Init(nullptr, nullptr);
  g_loc = new sparsecomm::Locality(sparsecomm::Locality::parse(MPI_COMM_WORLD, "ppn:2"));
  sparsecomm::fuzz::serve_from_rank0(body, finalize);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sparsecomm::fuzz::run_on_every_rank(body, data, size);
  return 0;
}
