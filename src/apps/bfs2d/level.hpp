#pragma once
// The inside of one 2D BFS (bfs.hpp): the state the level variants share (Ctx: the local
// SpMSpV, the candidates' bucketing, the parent update) and the variants themselves, each
// in its own file behind one interface, chosen once per BFS by make_level_variant:
//   level_blocking.cpp    CombBLAS-style dense collectives on the processor row and column
//   level_overlapped.cpp  phased non-blocking exchanges, transports neighbor and p2p
//   level_direct.cpp      overlapped without the transpose: pieces straight to their gatherers
//   level_plan.cpp        expand and fold through sparsecomm Plans
#include <mpi.h>

#include <climits>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bfs2d/bfs.hpp"

namespace sparsecomm::bfs::detail {

constexpr int64_t kNone = INT64_MAX;

/// The piece (rank) holding global vertex x, for piece offsets `off`.
int piece_of(const std::vector<int64_t>& off, int64_t x);

/// Wall-clock accumulator for one phase.
struct Clock {
  double* acc;
  double t0;
  explicit Clock(double* a) : acc(a), t0(MPI_Wtime()) {}
  ~Clock() { *acc += MPI_Wtime() - t0; }
};

/// State shared by the variants within one BFS.
struct Ctx {
  const Graph2D& g;
  const Grid& grid;
  const BfsOptions& opt;
  BfsTimes t;
  int64_t pb, pe;                // my piece
  std::vector<int64_t> parent;   // my piece
  std::vector<int64_t> best;     // per local row of my row block: min candidate parent
  std::vector<int32_t> touched;  // rows with a candidate in this chunk

  Ctx(const Graph2D& g_, const Grid& gr, const BfsOptions& o);

  /// Transposes the frontier piece to processor (col, row). Exact sizes: a count exchange,
  /// then the data. With a bound (`buf` holds `bound` values, at least the partner's
  /// piece): one message received at the bound, its size read from the status.
  std::vector<int64_t> transpose(const std::vector<int64_t>& f, int64_t* buf = nullptr, int bound = 0);

  /// Local SpMSpV over (select, min): frontier vertices u of my column block -> candidate
  /// parent u for every neighbor v in my row block. Results in best[] / touched.
  /// `poll` (optional) is called every opt.poll_edges edges: without network offload, Open
  /// MPI progresses non-blocking collectives only inside MPI calls, so the overlapped
  /// variants test their outstanding requests from inside the compute. (With
  /// mpi_yield_when_idle, as oversubscribed runs use, a test that finds nothing yields the
  /// core: polling often costs compute time there; experiments/bfs/README.md.)
  void spmspv(const int64_t* f, size_t n, const std::function<void()>& poll = {});

  /// Candidates of this chunk as (v, u) pairs bucketed by owner column in my row (sorted by
  /// v inside each bucket when `sorted`); `counts[j]` values for column j. Resets best[].
  void bucket(std::vector<int64_t>& data, std::vector<int>& counts, bool sorted);

  /// Applies received (v, u) pairs: unvisited v take the smallest u; returns the new frontier.
  std::vector<int64_t> update(const std::vector<int64_t>& pairs, std::vector<int64_t> frontier_new = {});

  /// The rest of a level whose expand gathered the whole column's frontier `F`: the local
  /// SpMSpV, the candidates bucketed by owner column, fold(data, counts) sending them and
  /// returning the (v, u) pairs I own (timed as fold and exposed), the update.
  template <class Fold>
  std::vector<int64_t> compute_and_fold(const std::vector<int64_t>& F, Fold&& fold) {
    spmspv(F.data(), F.size());
    std::vector<int64_t> data;
    std::vector<int> counts;
    bucket(data, counts, false);
    std::vector<int64_t> pairs;
    {
      Clock a(&t.fold), e(&t.exposed);
      pairs = fold(data, counts);
    }
    return update(pairs);
  }
};

/// One BFS level of a variant: the frontier piece in, the next frontier piece out.
/// Made once per BFS, so what a variant sets up (graph communicators, receive buffers, an
/// SDDE context) happens before the BFS's clock starts.
class LevelVariant {
 public:
  virtual ~LevelVariant() = default;
  /// Collective over the grid.
  virtual std::vector<int64_t> level(Ctx& c, const std::vector<int64_t>& frontier) = 0;
};

/// A variant with state of its own: `State` (the peers, the bound-sized buffers) is made
/// once per BFS from the constructor's arguments, and every level is a `Run` in flight,
/// Run(c, state, frontier).run().
template <class State, class Run>
class StatefulVariant : public LevelVariant {
 public:
  template <class... Args>
  explicit StatefulVariant(Args&&... args) : state_(std::forward<Args>(args)...) {}
  std::vector<int64_t> level(Ctx& c, const std::vector<int64_t>& frontier) override {
    return Run(c, state_, frontier).run();
  }

 private:
  State state_;
};

/// Collective. The variant `opt` names (checked by options_error).
std::unique_ptr<LevelVariant> make_level_variant(const Graph2D& g, const Grid& grid, const BfsOptions& opt);

std::unique_ptr<LevelVariant> make_blocking();
std::unique_ptr<LevelVariant> make_overlapped(const Graph2D& g, const Grid& grid, const BfsOptions& opt);
std::unique_ptr<LevelVariant> make_direct(const Graph2D& g, const Grid& grid, const BfsOptions& opt);
std::unique_ptr<LevelVariant> make_plan_variant(const Grid& grid);

// Helpers of the overlapped variants (level_common.cpp).

/// A piece of received (v, u) pairs or frontier vertices.
struct Segment {
  const int64_t* data;
  size_t n;
};

/// The largest vector piece of any rank, checked against the int counts of the p2p-style
/// transports' messages (a fold message carries up to 2 * max_piece values). The piece
/// offsets are global, so every rank reaches the same verdict.
int max_piece_for_int_counts(const Graph2D& g, const std::string& transport);

/// An uninitialized receive buffer of n values (at least one, so data() is never null).
std::unique_ptr<int64_t[]> bound_buffer(size_t n);

/// One fold chunk's bucketed candidates (Ctx::bucket: `cnt[j]` values per processor column
/// j, in column order) split into the candidates for my own column, appended to `own`, and
/// the send buffer of the other columns, in row-peer order, with their counts and
/// displacements.
void split_fold(const std::vector<int64_t>& data, const std::vector<int>& cnt, int mycol, std::vector<int64_t>& own,
                std::vector<int64_t>& send, std::vector<int>& scounts, std::vector<int>& sdispls);

/// The end of an overlapped level: merges every chunk's candidates, my own ("own", one
/// sorted run per chunk) and the received segments of (v, u) pairs, then updates. `sorted`
/// (merge "merge"): the lists are sorted by v and k-way merged; else a counting sort by v.
std::vector<int64_t> combine(Ctx& c, std::vector<int64_t>& own, const std::vector<Segment>& received, bool sorted);

}  // namespace sparsecomm::bfs::detail
