// Micro-benchmarks of sparsecomm's hot paths (Google Benchmark), MPI-aware:
//   BM_LocalSpmv/<n>        the diagonal block's SpMV kernel (DistCsr::multiply_diag) of an
//                           n x n 5-point Laplacian on this rank alone: bytes of matrix per second
//   BM_Parse/<entries>      the Matrix Market parser on an in-memory text: MB/s
//   BM_Exchange/<backend>/<n>/<width>  one halo exchange (start + wait, pack and unpack
//                           included) of the rotated anisotropic diffusion on an n x n grid over
//                           every rank, width values per ghost; manual time = the max over ranks
//                           of each exchange (MPI_Allreduce), a fixed iteration count on every
//                           rank (a dynamic one would differ between ranks and deadlock);
//                           counters pack_us and unpack_us per exchange (the plan's timers)
// Only rank 0 reports; every rank runs the same benchmarks in the same order.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sparsecomm/comm/locality.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/comm/sdde.hpp"
#include "sparsecomm/kernels/halo_pattern.hpp"
#include "sparsecomm/matrix/generators.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"

namespace {

using namespace sparsecomm;

void BM_LocalSpmv(benchmark::State& state) {
  const int64_t n = state.range(0);
  const DistCsr<double> a = gen::from_spec(MPI_COMM_SELF, "lap2d:" + std::to_string(n) + "," + std::to_string(n));
  std::vector<double> x(static_cast<size_t>(a.local_cols()), 1.0), y(static_cast<size_t>(a.local_rows()));
  for (auto _ : state) {
    a.multiply_diag(x.data(), y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  // Bytes streamed per product: values and column indices, row pointers, x and y.
  const int64_t bytes = a.diag().nnz() * (8 + 4) + (a.local_rows() + 1) * 8 + (a.local_cols() + a.local_rows()) * 8;
  state.SetBytesProcessed(state.iterations() * bytes);
}
BENCHMARK(BM_LocalSpmv)->Arg(64)->Arg(512);

// A general Matrix Market text of about `entries` entries (a banded pattern).
std::string mtx_text(int64_t entries) {
  const int64_t n = entries / 5 + 1;
  std::ostringstream os;
  os.precision(17);
  os << "%%MatrixMarket matrix coordinate real general\n" << n << " " << n << " " << 5 * n << "\n";
  for (int64_t i = 1; i <= n; ++i)
    for (int64_t d = 0; d < 5; ++d) os << i << " " << (i + d * 7) % n + 1 << " " << std::sin(0.1 * i * (d + 1)) << "\n";
  return os.str();
}

void BM_Parse(benchmark::State& state) {
  const std::string text = mtx_text(state.range(0));
  for (auto _ : state) {
    MtxData d = parse_mtx_text(text, "bench");
    benchmark::DoNotOptimize(d.entries.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_Parse)->Arg(10000)->Arg(200000);

void BM_Exchange(benchmark::State& state, const std::string& backend) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int64_t n = state.range(0);
  const int w = static_cast<int>(state.range(1));
  const DistCsr<double> a = gen::from_spec(comm, "rotate:" + std::to_string(n) + "," + std::to_string(n));
  const Locality loc = Locality::parse(comm, comm_size(comm) >= 4 ? "ppn:2" : "flat");
  Sdde sdde(comm, loc);
  PlanOptions po;
  po.width = w;
  auto plan = make_plan(backend, pattern_from_matrix(a, sdde, "nbx"), loc, comm, po);
  std::vector<double> x(static_cast<size_t>(a.local_cols()) * w + 1, 1.0), g(static_cast<size_t>(a.num_ghosts()) * w + 1);
  for (auto _ : state) {
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    plan->start(x.data());
    plan->wait(g.data());
    double dt = MPI_Wtime() - t0, mx = 0;
    MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, comm);
    state.SetIterationTime(mx);
  }
  const double calls = static_cast<double>(state.iterations());
  state.counters["pack_us"] = plan->exec_stats().time("pack") / calls * 1e6;
  state.counters["unpack_us"] = plan->exec_stats().time("unpack") / calls * 1e6;
  state.counters["msgs"] = static_cast<double>(plan->iteration_counts().total().sent().msgs);
}

// Every registered halo backend (auto apart: it is one of the others once set up), at two
// grid sizes and three widths; fixed iterations (see the file comment).
void register_exchanges() {
  for (const auto& b : backend_names()) {
    if (backend_hooks(b).chooses_among_others) continue;
    for (int64_t n : {64, 256})
      for (int64_t w : {1, 4, 16})
        benchmark::RegisterBenchmark(("BM_Exchange/" + b).c_str(),  // + "/<n>/<width>" from Args
                                     [b](benchmark::State& s) { BM_Exchange(s, b); })
            ->Args({n, w})
            ->Iterations(200)
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
  }
}

// Rank 0 reports; the other ranks run the same benchmarks silently.
class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // Only rank 0 writes --benchmark_out (the others would truncate the same file).
  std::vector<char*> args(argv, argv + argc);
  if (rank != 0)
    args.erase(std::remove_if(args.begin() + 1, args.end(),
                              [](const char* a) { return std::string(a).rfind("--benchmark_out", 0) == 0; }),
               args.end());
  int nargs = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&nargs, args.data());
  register_exchanges();
  if (rank == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    NullReporter null;
    benchmark::RunSpecifiedBenchmarks(&null);
  }
  benchmark::Shutdown();
  MPI_Finalize();
  return 0;
}
