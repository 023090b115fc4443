// sparsecomm_bfs_combblas: our 2D BFS side by side with CombBLAS's own top-down BFS on the
// same graph, the same roots and the same ranks (the issue "2D BFS on Graph500 R-MAT graphs
// ... side-by-side comparison with CombBLAS").
//
// The graph is ours (rmat_graph or file_graph: symmetric, no self-loops, no duplicates).
// It is handed to CombBLAS through its public API: every rank passes its 1D edges as two
// FullyDistVec<int64_t, int64_t> (rows, cols) to the "matlab sparse" constructor
// SpParMat(n, n, rows, cols, true), giving SpParMat<int64_t, bool, SpDCCols<int32_t, bool>>
// (64-bit global, 32-bit local indices, as in CombBLAS's TopDownBFS). Two CombBLAS BFS loops:
//   combblas/graph500   the loop of CombBLAS's Applications/TopDownBFS.cpp: OptimizeForGraph500
//                       buffers and the semiring-free BFS SpMV of BFSFriends.h (transpose the
//                       frontier, allgather along the processor column, local SpMSpV, alltoallv
//                       along the processor row, merge keeping the smallest-rank candidate),
//                       then EWiseMult(fringe, parents, exclude = true, -1) and parents.Set(fringe);
//   combblas/semiring   the same loop with the generic SpMV<SelectMaxSRing<bool, int64_t>>
//                       (ParFriends.h; index-is-value frontier, no preset buffers).
// Unlike TopDownBFS.cpp, parents(root) = root is set before the loop: without it the root's
// parent ends up being one of its neighbours (found back at level 2), which Graph500 rejects.
//
// Every BFS (ours and CombBLAS's) is timed alone: barrier before, max over ranks. Roots are
// interleaved (for each root: every implementation), after one untimed warm-up BFS each.
// CombBLAS's parents (its FullyDist layout: contiguous blocks over the grid in row-major
// order, sizes n / pr / pc with remainders on the last row / column) are moved to our 1D
// balanced layout with one MPI_Alltoallv and checked by OUR Graph500 validator, because
// CombBLAS's own tests print errors but exit 0. TEPS = traversed_edges / time for both.
//
// CombBLAS is built with OpenMP (THREADED). Our BFS uses one thread per rank, so unless
// OMP_NUM_THREADS is set we set CombBLAS's threads to 1 as well; with more threads the
// local matrix is row-split (ActivateThreading) as TopDownBFS.cpp does.
//
// Exit codes: 0 every BFS validated, 3 a BFS failed validation, 77 the --graph file was not
// found on the data search path (ctest reports a skip), 2 other errors.
//
//   mpirun -np 4 sparsecomm_bfs_combblas --scale 16 --roots 16
//   mpirun -np 9 sparsecomm_bfs_combblas --graph SNAP/roadNet-PA --variant blocking --json bfs.jsonl
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bfs.hpp"
#include "sparsecomm/core/error.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "sparsecomm/interop/environment.hpp"
#include "common/cli.hpp"
#include "common/load.hpp"
#include "common/options.hpp"
#include "common/provenance.hpp"
#include "common/table.hpp"
#include "common/timing.hpp"
#include "graph.hpp"
#include "graph_options.hpp"
#include "sparsecomm/matrix/data_path.hpp"

// CombBLAS last: its headers define macros and pull in a lot.
#include <CombBLAS/CombBLAS.h>
// CombBLAS's SequenceHeaps/util.h defines a function-like macro Error(s), which would swallow
// sparsecomm::Error(...) below.
#undef Error

// CombBLAS's headers declare these globals (timers and the thread count of its threaded SpMV)
// `extern` but libCombBLAS does not define them: every program using the BFS SpMV must.
int cblas_splits = 1;
double cblas_alltoalltime = 0;
double cblas_allgathertime = 0;
double cblas_localspmvtime = 0;
double cblas_mergeconttime = 0;
double cblas_transvectime = 0;

using namespace sparsecomm;

namespace {

using CbMat = combblas::SpParMat<int64_t, bool, combblas::SpDCCols<int32_t, bool>>;
using CbBuildMat = combblas::SpParMat<int64_t, int64_t, combblas::SpDCCols<int64_t, int64_t>>;
using CbVec = combblas::FullyDistVec<int64_t, int64_t>;
using CbSpVec = combblas::FullyDistSpVec<int64_t, int64_t>;

/// CombBLAS's BFS on a copy of our graph.
class CombBlasBfs {
 public:
  /// Collective. Builds CombBLAS's 2D matrix from our 1D rows (its own redistribution).
  CombBlasBfs(const DistCsr<double>& g, int threads) : n_(g.global_rows()) {
    grid_ = std::make_shared<combblas::CommGrid>(g.comm(), 0, 0);  // 0, 0: square grid
    // Our edges, numbered in rank order, go into two FullyDistVec (rows, cols) of CombBLAS's
    // layout. Not through its FullyDistVec(std::vector, grid) constructor: when the local
    // sizes differ it sends from its still empty member array (segfault in MPI_Alltoallv).
    // So we send each edge to its owner in CombBLAS's layout (FullyDist::Owner) ourselves, over
    // CombBLAS's own communicator, and store the received ones with SetElement.
    MPI_Comm world = grid_->GetWorld();
    const int P = comm_size(world);
    const int64_t mine = g.local_nnz();
    int64_t before = 0;
    MPI_Exscan(&mine, &before, 1, MPI_INT64_T, MPI_SUM, world);
    if (comm_rank(world) == 0) before = 0;  // MPI_Exscan leaves rank 0's result undefined
    const int64_t total = allreduce_sum(world, mine);
    CbVec vrows(grid_, total, int64_t{0}), vcols(grid_, total, int64_t{0});
    {
      std::vector<int64_t> rows, cols;
      rows.reserve(static_cast<size_t>(mine));
      cols.reserve(static_cast<size_t>(mine));
      std::vector<int> counts(P, 0);
      int64_t k = before, lind = 0;
      for (const auto& t : g.local_triplets()) {  // consecutive ids: owners come in rank order
        ++counts[vrows.Owner(k++, lind)];
        rows.push_back(t.row);
        cols.push_back(t.col);
      }
      const auto rrows = alltoallv(world, rows, counts), rcols = alltoallv(world, cols, counts);
      if (static_cast<int64_t>(rrows.size()) != vrows.LocArrSize())
        throw sparsecomm::Error("CombBLAS edge layout: received " + std::to_string(rrows.size()) + " edges, expected " +
                                std::to_string(vrows.LocArrSize()));
      const int64_t first = vrows.LengthUntil();
      for (size_t i = 0; i < rrows.size(); ++i) {
        vrows.SetElement(first + static_cast<int64_t>(i), rrows[i]);
        vcols.SetElement(first + static_cast<int64_t>(i), rcols[i]);
      }
    }
    // Not straight to the BFS matrix: (1) with NT = bool, overload resolution between the
    // (..., const NT& value) and (..., const FullyDistVec<IT, NT>& values) constructors
    // instantiates FullyDistVec<int64_t, bool>, which CombBLAS forbids (disable_if on bool)
    // with a hard error; (2) these constructors only compile when the local index type equals
    // the global one (SparseCommon builds SpDCCols from SpTuples<IT, NT>). So build a 64/64-bit
    // integer matrix and convert it (type conversion operator), as TopDownBFS.cpp converts.
    {
      CbBuildMat ones(n_, n_, vrows, vcols, int64_t{1}, false);
      a_ = std::make_unique<CbMat>(static_cast<CbMat>(ones));
    }
    // Preset fold buffers of the semiring-free BFS SpMV; must precede ActivateThreading.
    a_->OptimizeForGraph500(optbuf_);
    if (threads > 1) {
      cblas_splits = threads;
      a_->ActivateThreading(threads);
    }
    nnz_ = a_->getnnz();
    // The generic SpMV with indexisvalue = true leaves TransposeVector's value pointer
    // uninitialised and, on a grid with one processor row, frees it (free(): invalid pointer
    // on 1 rank). The values are the ids anyway (setNumToInd), so send them there.
    index_is_value_ = grid_->GetGridRows() > 1;
  }

  int64_t nnz() const { return nnz_; }

  /// A parent vector for run() (CombBLAS's FullyDist layout).
  CbVec make_parents() const { return CbVec(grid_, n_, int64_t{-1}); }

  /// Collective. Top-down BFS from `root` into `parents` (made by make_parents(); reset here,
  /// so that the timed region holds no vector copy: FullyDistVec has no move assignment).
  void run(int64_t root, bool semiring, CbVec& parents) {
    parents = int64_t{-1};
    CbSpVec fringe(grid_, n_);
    parents.SetElement(root, root);  // Graph500: the root is its own parent
    fringe.SetElement(root, root);
    while (fringe.getnnz() > 0) {
      fringe.setNumToInd();  // the value of a frontier vertex is its id: the parent it offers
      if (semiring)
        fringe = combblas::SpMV<combblas::SelectMaxSRing<bool, int64_t>>(*a_, fringe, index_is_value_);
      else
        fringe = combblas::SpMV(*a_, fringe, optbuf_);
      fringe = combblas::EWiseMult(fringe, parents, true, int64_t{-1});  // keep the unvisited
      parents.Set(fringe);
    }
  }

 private:
  int64_t n_ = 0, nnz_ = 0;
  bool index_is_value_ = true;
  std::shared_ptr<combblas::CommGrid> grid_;
  std::unique_ptr<CbMat> a_;
  combblas::OptBuf<int32_t, int64_t> optbuf_;
};

/// Collective over `comm` (every rank of CombBLAS's grid). Moves a CombBLAS vector to the
/// 1D blocks of `part`. CombBLAS's blocks are contiguous in global index order, but we do
/// not assume that its grid numbers ranks like `comm`: each rank's block start is exchanged.
std::vector<int64_t> to_row_partition(const CbVec& v, const RowPartition& part, MPI_Comm comm) {
  const int P = comm_size(comm), me = comm_rank(comm);
  const int64_t begin = v.LengthUntil(), len = v.LocArrSize();
  const int64_t* a = v.GetLocArr();
  std::vector<int64_t> starts(P);
  MPI_Allgather(&begin, 1, MPI_INT64_T, starts.data(), 1, MPI_INT64_T, comm);
  std::vector<int> counts(P, 0);
  if (len > 0) {
    const int first = part.owner(begin), last = part.owner(begin + len - 1);
    for (int q = first; q <= last; ++q)
      counts[q] = static_cast<int>(std::min(part.end(q), begin + len) - std::max(part.begin(q), begin));
  }
  std::vector<int> rcounts;
  const auto recv = alltoallv(comm, std::vector<int64_t>(a, a + len), counts, &rcounts);
  std::vector<int64_t> out(static_cast<size_t>(part.local_size(me)), -2);
  size_t off = 0;
  for (int s = 0; s < P; ++s) {
    if (rcounts[s] == 0) continue;
    const int64_t at = std::max(starts[s], part.begin(me)) - part.begin(me);
    std::copy(recv.begin() + off, recv.begin() + off + rcounts[s], out.begin() + at);
    off += rcounts[s];
  }
  return out;
}

struct Impl {
  std::string name, variant;  // name: "ours" or "combblas"
  bool combblas = false;
  std::vector<double> times, edges;
  int validated = 0;
  std::string first_error;
  double setup = 0;
  double hmean_teps() const {  // Graph500: harmonic mean of the TEPS over roots
    double inv = 0;
    for (size_t i = 0; i < times.size(); ++i) inv += times[i] / std::max(edges[i], 1.0);
    return inv > 0 ? static_cast<double>(times.size()) / inv : 0.0;
  }
  double mean_time() const {
    double s = 0;
    for (double t : times) s += t;
    return times.empty() ? 0.0 : s / static_cast<double>(times.size());
  }
};

struct Settings {
  int scale = 16, ef = 16, nroots = 16, seed = 1, threads = 1;
  std::vector<std::string> ours, cbl;  // our variants, CombBLAS's loops
  std::string graph, json;
};

/// Every rank parses the same options: a bad value throws on every rank alike.
Settings parse_settings(const apps::Options& opt, int P) {
  Settings st;
  st.scale = opt.get_count("scale"), st.ef = opt.get_count("edge-factor"), st.nroots = opt.get_count("roots");
  st.seed = opt.get_int("seed");
  if (st.scale < 1 || st.scale > 40 || st.ef < 1 || st.nroots < 1)
    throw InputError("--scale must be in [1, 40], --edge-factor and --roots >= 1");
  const int side = static_cast<int>(std::lround(std::sqrt(static_cast<double>(P))));
  if (side * side != P)
    throw InputError("CombBLAS and our 2D BFS need a square process grid; " + std::to_string(P) +
                     " ranks is not a perfect square");
  for (const auto& v : apps::split_list(opt.get("variant"))) {
    if (v == "all") st.ours = {"blocking", "overlapped", "plan"};
    else if (v == "blocking" || v == "overlapped" || v == "plan") {
      if (std::find(st.ours.begin(), st.ours.end(), v) == st.ours.end()) st.ours.push_back(v);
    } else
      throw InputError("--variant: unknown '" + v + "'; valid: blocking, overlapped, plan, all");
  }
  for (const auto& v : apps::split_list(opt.get("combblas"))) {
    if (v != "graph500" && v != "semiring") throw InputError("--combblas: unknown '" + v + "'; valid: graph500, semiring");
    if (std::find(st.cbl.begin(), st.cbl.end(), v) == st.cbl.end()) st.cbl.push_back(v);
  }
  if (st.cbl.empty()) throw InputError("--combblas needs at least one of graph500, semiring");
#ifdef _OPENMP
  if (!std::getenv("OMP_NUM_THREADS")) omp_set_num_threads(1);
  st.threads = omp_get_max_threads();
#endif
  st.graph = opt.get("graph"), st.json = opt.get("json");
  return st;
}

/// Collective. The graph shared by every implementation: the file's pattern (A + A^T) or
/// R-MAT. False (and a message on rank 0) when the file is not on the data search path.
bool load_graph(MPI_Comm comm, const Settings& st, std::string& name, DistCsr<double>& g) {
  if (st.graph.empty()) {
    name = "rmat-s" + std::to_string(st.scale) + "-ef" + std::to_string(st.ef);
    g = bfs::rmat_graph(comm, st.scale, st.ef, static_cast<uint64_t>(st.seed));
    return true;
  }
  const auto found = apps::find_matrices_or_skip(
      comm, {st.graph}, "sparsecomm_bfs_combblas: skipped (exit 77): graph not found on the data search path:\n");
  if (!found) return false;
  const std::string& path = found->front();
  name = path.substr(path.find_last_of('/') + 1);
  g = bfs::file_graph(comm, path);
  return true;
}

// Both sides set up on one graph, every implementation run from the same roots.
class Comparison {
 public:
  Comparison(MPI_Comm comm, const Settings& st, const DistCsr<double>& g) : comm_(comm), g_(g), grid_(comm) {
    // Setup of both sides, timed (barrier before, max over ranks).
    const double setup_ours = apps::timed(comm, [&] { g2d_ = bfs::Graph2D::build(g, grid_); });
    const double setup_cb = apps::timed(comm, [&] { cb_ = std::make_unique<CombBlasBfs>(g, st.threads); });
    if (cb_->nnz() != g.global_nnz())
      throw Error("CombBLAS's matrix has " + std::to_string(cb_->nnz()) + " nonzeros, ours " +
                  std::to_string(g.global_nnz()));
    for (const auto& v : st.ours) impls.push_back({"ours", v, false, {}, {}, 0, "", setup_ours});
    for (const auto& v : st.cbl) impls.push_back({"combblas", v, true, {}, {}, 0, "", setup_cb});
    if (comm_rank(comm) == 0)
      std::cout << "setup: ours Graph2D::build " << apps::num("%.3f", setup_ours) << " s, CombBLAS SpParMat "
                << apps::num("%.3f", setup_cb) << " s\n";
  }

  /// Collective. A warm-up (untimed, unchecked), then every root through every
  /// implementation, each BFS checked by our Graph500 validator.
  void run(const std::vector<int64_t>& roots) {
    for (auto& im : impls) {
      double t = 0;
      bfs_once(im, roots[0], &t);
    }
    for (int64_t root : roots)
      for (auto& im : impls) {
        double t = 0;
        const auto parent = bfs_once(im, root, &t);
        const std::string err = bfs::validate(g_, root, parent);
        im.times.push_back(t);
        im.edges.push_back(static_cast<double>(bfs::traversed_edges(g_, parent)));
        if (err.empty()) ++im.validated;
        else if (im.first_error.empty()) im.first_error = "root " + std::to_string(root) + ": " + err;
      }
  }

  std::vector<Impl> impls;

 private:
  std::vector<int64_t> bfs_once(const Impl& im, int64_t root, double* t) {
    std::vector<int64_t> parent;
    if (im.combblas) {
      CbVec p = cb_->make_parents();
      *t = apps::timed(comm_, [&] { cb_->run(root, im.variant == "semiring", p); });
      return to_row_partition(p, g_.row_partition(), comm_);
    }
    bfs::BfsOptions o;
    o.variant = im.variant;
    *t = apps::timed(comm_, [&] { parent = bfs::run_bfs(g2d_, grid_, root, o); });
    return parent;
  }

  MPI_Comm comm_;
  const DistCsr<double>& g_;
  bfs::Grid grid_;
  bfs::Graph2D g2d_;
  std::unique_ptr<CombBlasBfs> cb_;
};

void append_json(apps::JsonLines& js, const Settings& st, const std::string& graph_name, const DistCsr<double>& g,
                 int P, const std::vector<Impl>& impls, const Impl& ref) {
  const int side = static_cast<int>(std::lround(std::sqrt(static_cast<double>(P))));
  const double ref_teps = ref.hmean_teps();
  for (const auto& im : impls) {
    apps::Json j = apps::json_record("bfs_combblas");
    j["graph"] = graph_name;
    j["vertices"] = g.global_rows();
    j["undirected_edges"] = g.global_nnz() / 2;
    j["ranks"] = P;
    j["grid"] = std::to_string(side) + "x" + std::to_string(side);
    j["impl"] = im.name;
    j["variant"] = im.variant;
    j["omp_threads"] = im.combblas ? st.threads : 1;
    j["roots"] = im.times.size();
    j["validated"] = im.validated;
    j["hmean_teps"] = im.hmean_teps();
    j["mean_time"] = im.mean_time();
    j["setup"] = im.setup;
    j["ratio_reference"] = "combblas/" + ref.variant;
    j["teps_ratio"] = ref_teps > 0 ? im.hmean_teps() / ref_teps : 0.0;
    j["times"] = im.times;
    js.write(j);
  }
  std::cout << "JSON lines appended to " << st.json << "\n";
}

/// Rank 0. The table: TEPS against the first CombBLAS loop.
void print_table(const std::vector<Impl>& impls, const Impl& ref) {
  const double ref_teps = ref.hmean_teps();
  apps::Table tab({"implementation", "variant", "hmean TEPS", "mean time/BFS [ms]", "validated",
                   "TEPS / combblas-" + ref.variant});
  for (const auto& im : impls)
    tab.add({im.name, im.variant, apps::num("%.4g", im.hmean_teps()), apps::num("%.3f", 1e3 * im.mean_time()),
             std::to_string(im.validated) + "/" + std::to_string(im.times.size()),
             apps::num("%.2f", ref_teps > 0 ? im.hmean_teps() / ref_teps : 0.0)});
  std::cout << "\n" << tab.str();
}

int run(int argc, char** argv) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = comm_rank(comm), P = comm_size(comm);
  apps::Options opt(
      bfs::with_graph_options(
          {{"variant", {"all", "our variants, comma-separated: blocking, overlapped, plan, all"}},
           {"combblas", {"graph500,semiring", "CombBLAS loops, comma-separated: graph500, semiring"}},
           {"json", {"", "append one JSON line per implementation to this file"}}}),
      "usage: mpirun -np P sparsecomm_bfs_combblas [options]   (P a perfect square)\n"
      "Our 2D BFS against CombBLAS's top-down BFS on the same graph, roots (R-MAT seed + 1) and\n"
      "ranks, each root run by every implementation; every BFS is checked by our Graph500 validator.");
  if (!apps::parse_or_help(comm, opt, argc, argv)) return 0;
  const Settings st = parse_settings(opt, P);
  std::string graph_name;
  DistCsr<double> g;
  if (!load_graph(comm, st, graph_name, g)) return 77;
  const auto roots = bfs::pick_roots(g, st.nroots, static_cast<uint64_t>(st.seed) + 1);
  if (roots.empty()) throw InputError("the graph has no vertex with an edge: nothing to search");
  const int side = static_cast<int>(std::lround(std::sqrt(static_cast<double>(P))));
  if (rank == 0)
    std::cout << "graph " << graph_name << ": " << g.global_rows() << " vertices, " << g.global_nnz() / 2
              << " undirected edges; " << P << " ranks (" << side << "x" << side << " grid), " << roots.size()
              << " roots; CombBLAS OpenMP threads per rank: " << st.threads << std::endl;
  Comparison cmp(comm, st, g);
  cmp.run(roots);
  const Impl* ref = nullptr;  // the first CombBLAS loop (there is at least one)
  for (const auto& im : cmp.impls)
    if (im.combblas && !ref) ref = &im;
  if (rank == 0) print_table(cmp.impls, *ref);
  bool ok = true;
  for (const auto& im : cmp.impls)
    if (im.validated != static_cast<int>(im.times.size())) {
      ok = false;
      if (rank == 0) std::cerr << "VALIDATION FAILED: " << im.name << "/" << im.variant << ": " << im.first_error << "\n";
    }
  const auto js = apps::open_json_lines(comm, st.json);
  if (js) append_json(*js, st, graph_name, g, P, cmp.impls, *ref);
  if (rank == 0) std::cout << (ok ? "every BFS validated (Graph500 rules)\n" : "VALIDATION FAILED\n");
  return ok ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);  // CombBLAS is OpenMP-threaded
  sparsecomm::apply_environment();
  int rc = 0;
  try {
    rc = run(argc, argv);
  } catch (const std::exception& e) {
    // Our errors are agreed across ranks (or raised on every rank alike), so all ranks get here.
    if (comm_rank(MPI_COMM_WORLD) == 0) std::cerr << "sparsecomm_bfs_combblas: error: " << e.what() << "\n";
    rc = 2;
  }
  MPI_Finalize();
  return rc;
}
