#include "bfs2d/bfs.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <memory>
#include <queue>

#include "sparsecomm/comm/plan/gather_plan.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "sparsecomm/comm/sdde.hpp"

namespace sparsecomm::bfs {

Grid::Grid(MPI_Comm comm) : comm_(comm) {
  const int p = comm_size(comm), me = comm_rank(comm);
  int q = static_cast<int>(std::lround(std::sqrt(static_cast<double>(p))));
  if (q * q != p)
    throw InputError("bfs: the 2D processor grid must be square (1, 4, 9, 16, ... ranks); got " + std::to_string(p) +
                     " ranks, and rectangular grids are not supported");
  pr_ = pc_ = q;
  row_ = me / q, col_ = me % q;
  MPI_Comm r = MPI_COMM_NULL, c = MPI_COMM_NULL;
  SPC_MPI(MPI_Comm_split(comm, row_, col_, &r));
  SPC_MPI(MPI_Comm_split(comm, col_, row_, &c));
  row_comm_ = Comm::adopt(r);
  col_comm_ = Comm::adopt(c);
}

namespace {
int piece_of(const std::vector<int64_t>& off, int64_t x) {
  return static_cast<int>(std::upper_bound(off.begin(), off.end(), x) - off.begin()) - 1;
}
}  // namespace

Graph2D Graph2D::build(const DistCsr<double>& g, const Grid& grid) {
  MPI_Comm comm = grid.comm();
  const int p = comm_size(comm), pc = grid.pc();
  Graph2D out;
  out.n = g.global_rows();
  out.piece_offsets = g.row_partition().offsets();
  agree(comm, g.row_partition() != RowPartition::balanced(out.n, p) || g.global_cols() != out.n
                  ? "bfs: the 1D graph must be square with balanced rows"
                  : "");
  const auto& off = out.piece_offsets;
  out.row_begin = off[grid.row() * pc], out.row_end = off[grid.row() * pc + pc];
  out.col_begin = off[grid.col() * pc], out.col_end = off[grid.col() * pc + pc];
  // Edge u -> v (row u of the 1D graph, column v) goes to block (block(v), block(u)).
  std::vector<int> counts(p, 0);
  std::vector<std::pair<int64_t, int64_t>> edges;  // (v, u)
  std::vector<int> dest;
  for (const auto& t : g.local_triplets()) {
    const int d = (piece_of(off, t.col) / pc) * pc + piece_of(off, t.row) / pc;
    edges.emplace_back(t.col, t.row);
    dest.push_back(d);
    ++counts[d];
  }
  std::vector<int> start(p + 1, 0);
  for (int r = 0; r < p; ++r) start[r + 1] = start[r] + counts[r];
  std::vector<std::pair<int64_t, int64_t>> sorted(edges.size());
  for (size_t i = 0; i < edges.size(); ++i) sorted[start[dest[i]]++] = edges[i];
  auto mine = alltoallv(comm, sorted, counts);
  std::sort(mine.begin(), mine.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second < b.second : a.first < b.first;
  });
  const int64_t ncols = out.col_end - out.col_begin;
  out.colptr.assign(static_cast<size_t>(ncols) + 1, 0);
  for (const auto& [v, u] : mine) ++out.colptr[u - out.col_begin + 1];
  for (int64_t c = 0; c < ncols; ++c) out.colptr[c + 1] += out.colptr[c];
  out.rowidx.reserve(mine.size());
  for (const auto& [v, u] : mine) out.rowidx.push_back(static_cast<int32_t>(v - out.row_begin));
  return out;
}

namespace {

constexpr int64_t kNone = INT64_MAX;

// Wall-clock accumulator for one phase.
struct Clock {
  double* acc;
  double t0;
  Clock(double* a) : acc(a), t0(MPI_Wtime()) {}
  ~Clock() { *acc += MPI_Wtime() - t0; }
};

// State shared by the variants within one BFS.
struct Ctx {
  const Graph2D& g;
  const Grid& grid;
  const BfsOptions& opt;
  BfsTimes t;
  int64_t pb, pe;                 // my piece
  std::vector<int64_t> parent;    // my piece
  std::vector<int64_t> best;      // per local row of my row block: min candidate parent
  std::vector<int32_t> touched;   // rows with a candidate in this chunk

  Ctx(const Graph2D& g_, const Grid& gr, const BfsOptions& o)
      : g(g_), grid(gr), opt(o), pb(g_.piece_begin(comm_rank(gr.comm()))), pe(g_.piece_end(comm_rank(gr.comm()))),
        parent(static_cast<size_t>(pe - pb), -1), best(static_cast<size_t>(g_.row_end - g_.row_begin), kNone) {}

  // Transpose the frontier piece to processor (col, row). Exact sizes: a count exchange,
  // then the data. With a bound (`buf` holds `bound` values, at least the partner's piece):
  // one message received at the bound, its size read from the status.
  std::vector<int64_t> transpose(const std::vector<int64_t>& f, int64_t* buf = nullptr, int bound = 0) {
    Clock c(&t.transpose), e(&t.exposed);
    const int partner = grid.rank_of(grid.col(), grid.row());
    if (partner == comm_rank(grid.comm())) return f;
    if (buf) {
      MPI_Status st;
      SPC_MPI(MPI_Sendrecv(f.data(), static_cast<int>(f.size()), MPI_INT64_T, partner, 93, buf, bound, MPI_INT64_T,
                           partner, 93, grid.comm(), &st));
      int n = 0;
      SPC_MPI(MPI_Get_count(&st, MPI_INT64_T, &n));
      return std::vector<int64_t>(buf, buf + n);
    }
    int64_t n_out = static_cast<int64_t>(f.size()), n_in = 0;
    SPC_MPI(MPI_Sendrecv(&n_out, 1, MPI_INT64_T, partner, 91, &n_in, 1, MPI_INT64_T, partner, 91, grid.comm(),
                         MPI_STATUS_IGNORE));
    std::vector<int64_t> in(static_cast<size_t>(n_in));
    SPC_MPI(MPI_Sendrecv(f.data(), static_cast<int>(n_out), MPI_INT64_T, partner, 92, in.data(), static_cast<int>(n_in),
                         MPI_INT64_T, partner, 92, grid.comm(), MPI_STATUS_IGNORE));
    return in;
  }

  // Local SpMSpV over (select, min): frontier vertices u of my column block -> candidate
  // parent u for every neighbor v in my row block. Results in best[] / touched.
  // `poll` (optional) is called every opt.poll_edges edges: without network offload, Open
  // MPI progresses non-blocking collectives only inside MPI calls, so the overlapped
  // variant tests its outstanding requests from inside the compute. (With
  // mpi_yield_when_idle, as oversubscribed runs use, a test that finds nothing yields the
  // core: polling often costs compute time there; experiments/bfs/README.md.)
  void spmspv(const int64_t* f, size_t n, const std::function<void()>& poll = {}) {
    Clock c(&t.compute);
    int64_t since = 0;
    for (size_t k = 0; k < n; ++k) {
      // A frontier id outside my column block came from a transport that delivered wrong
      // data: skipped and counted (BfsTimes::corrupt), so validation fails instead of an
      // out-of-bounds read.
      if (f[k] < g.col_begin || f[k] >= g.col_end) {
        ++t.corrupt;
        continue;
      }
      if (poll && since > opt.poll_edges) poll(), since = 0;
      since += g.colptr[f[k] - g.col_begin + 1] - g.colptr[f[k] - g.col_begin];
      const int64_t u = f[k], cu = u - g.col_begin;
      for (int64_t e = g.colptr[cu]; e < g.colptr[cu + 1]; ++e) {
        const int32_t v = g.rowidx[e];
        if (best[v] == kNone) touched.push_back(v), best[v] = u;
        else if (u < best[v]) best[v] = u;
      }
    }
  }

  // Candidates of this chunk as (v, u) pairs bucketed by owner column in my row
  // (sorted by v inside each bucket when `sorted`); resets best[].
  void bucket(std::vector<int64_t>& data, std::vector<int>& counts, bool sorted) {
    Clock c(&t.sort);
    const int pc = grid.pc();
    counts.assign(static_cast<size_t>(pc), 0);
    if (sorted) std::sort(touched.begin(), touched.end());
    std::vector<int> owner(touched.size());
    const int base = grid.row() * pc;
    for (size_t k = 0; k < touched.size(); ++k) {
      owner[k] = piece_of(g.piece_offsets, g.row_begin + touched[k]) - base;
      counts[owner[k]] += 2;
    }
    std::vector<int> pos(static_cast<size_t>(pc) + 1, 0);
    for (int j = 0; j < pc; ++j) pos[j + 1] = pos[j] + counts[j];
    data.assign(static_cast<size_t>(pos[pc]), 0);
    for (size_t k = 0; k < touched.size(); ++k) {
      const int32_t v = touched[k];
      data[pos[owner[k]]++] = g.row_begin + v;
      data[pos[owner[k]]++] = best[v];
      best[v] = kNone;
    }
    touched.clear();
  }

  // Apply received (v, u) pairs: unvisited v take the smallest u; returns the new frontier.
  std::vector<int64_t> update(const std::vector<int64_t>& pairs, std::vector<int64_t> frontier_new = {}) {
    Clock c(&t.sort);
    for (size_t k = 0; k + 1 < pairs.size(); k += 2) {
      const int64_t v = pairs[k], u = pairs[k + 1], i = v - pb;
      if (v < pb || v >= pe || u < 0 || u >= g.n) {  // wrong data delivered: see spmspv
        ++t.corrupt;
        continue;
      }
      if (parent[i] == -1) parent[i] = -2 - u, frontier_new.push_back(v);  // provisional this level
      else if (parent[i] <= -2 && u < -2 - parent[i]) parent[i] = -2 - u;
    }
    for (int64_t v : frontier_new) parent[v - pb] = -2 - parent[v - pb];
    std::sort(frontier_new.begin(), frontier_new.end());
    return frontier_new;
  }
};

std::vector<int64_t> level_blocking(Ctx& c, const std::vector<int64_t>& frontier) {
  std::vector<int64_t> L = c.transpose(frontier);
  // Expand: allgatherv along the processor column.
  std::vector<int64_t> F;
  {
    Clock a(&c.t.expand), e(&c.t.exposed);
    const int q = c.grid.pr();
    int n = static_cast<int>(L.size());
    std::vector<int> counts(q), displs(q + 1, 0);
    SPC_MPI(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, c.grid.col_comm()));
    for (int i = 0; i < q; ++i) displs[i + 1] = displs[i] + counts[i];
    F.resize(static_cast<size_t>(displs[q]));
    SPC_MPI(MPI_Allgatherv(L.data(), n, MPI_INT64_T, F.data(), counts.data(), displs.data(), MPI_INT64_T,
                           c.grid.col_comm()));
  }
  c.spmspv(F.data(), F.size());
  std::vector<int64_t> data;
  std::vector<int> counts;
  c.bucket(data, counts, false);
  std::vector<int64_t> got;
  {
    Clock a(&c.t.fold), e(&c.t.exposed);
    got = alltoallv(c.grid.row_comm(), data, counts);
  }
  return c.update(got);
}

// The largest vector piece of any rank, checked against the int counts of the p2p-style
// transports' messages (a fold message carries up to 2 * max_piece values). The piece
// offsets are global, so every rank reaches the same verdict.
int max_piece_for_int_counts(const Graph2D& g, const std::string& transport) {
  int64_t mp = 0;
  for (size_t r = 0; r + 1 < g.piece_offsets.size(); ++r)
    mp = std::max(mp, g.piece_offsets[r + 1] - g.piece_offsets[r]);
  if (2 * mp > INT_MAX)
    throw NotImplementedError("bfs: overlapped " + transport + ": a piece of " + std::to_string(mp) +
                              " vertices is too large for int-counted messages");
  return static_cast<int>(mp);
}

// An uninitialized receive buffer of n values (at least one, so data() is never null).
std::unique_ptr<int64_t[]> bound_buffer(size_t n) {
  return std::unique_ptr<int64_t[]>(new int64_t[std::max<size_t>(n, 1)]);
}

// One fold chunk's bucketed candidates (c.bucket: `cnt[j]` values per processor column j,
// in column order) split into the candidates for my own column, appended to `own`, and the
// send buffer of the other columns, in row-peer order, with their counts and displacements.
void split_fold(const std::vector<int64_t>& data, const std::vector<int>& cnt, int mycol, std::vector<int64_t>& own,
                std::vector<int64_t>& send, std::vector<int>& scounts, std::vector<int>& sdispls) {
  int64_t pos = 0;
  for (size_t j = 0; j < cnt.size(); ++j) {
    const auto b = data.begin() + pos, e = b + cnt[j];
    if (static_cast<int>(j) == mycol) {
      own.insert(own.end(), b, e);
    } else {
      scounts.push_back(cnt[j]);
      sdispls.push_back(static_cast<int>(send.size()));
      send.insert(send.end(), b, e);
    }
    pos += cnt[j];
  }
}

// Overlapped: expand and fold split into phases of non-blocking exchanges.
// - Transport "neighbor" (the paper's design): MPI_Ineighbor_allgatherv and
//   MPI_Ineighbor_alltoall(v) on graph communicators made once. Collectives need exact
//   counts: the expand's counts come from an MPI_Allgather on the column, and every fold
//   chunk is two steps (counts, then data).
// - Transport "p2p": the same phases as MPI_Isend/Irecv, one message per peer and step.
//   Every receive is posted at an upper bound and its size read from its status, so there
//   are no count exchanges at all: a transposed frontier, an expand message or a fold
//   chunk is one message. The bounds: a frontier piece holds at most one piece's vertices
//   (at most max_piece); a fold chunk sends each of my vertices at most once, as a (v, u)
//   pair (2 * my_piece values). The bound-sized buffers are allocated once per BFS and
//   never cleared: the OS commits only the pages the data lands in. It also runs where MPI
//   has no neighborhood collectives (SimGrid SMPI).
struct Overlap {
  bool p2p = false;
  std::vector<Comm> col_phase;  // neighbor: graph communicators over the column, one per phase
  std::vector<std::vector<int>> phase_src, phase_dst;  // column ranks of each phase's sources, destinations
  Comm row_graph;               // neighbor: all other ranks of my row: fold counts
  Comm row_data;                // neighbor: the same graph: fold data (own communicator, see progress())
  std::vector<int> row_peers;
  Comm col_p2p, row_p2p;        // p2p: duplicates of the column and row communicators
  int max_piece = 0, my_piece = 0;                      // p2p: receive bounds (vertices)
  std::unique_ptr<int64_t[]> transpose_buf;             // p2p: max_piece values
  std::vector<std::unique_ptr<int64_t[]>> expand_buf;  // p2p: per phase, max_piece values per source
  std::vector<std::unique_ptr<int64_t[]>> fold_buf;    // p2p: per fold chunk, 2 * my_piece values per row peer

  Overlap(const Graph2D& g, const Grid& grid, int phase_size, const std::string& transport)
      : p2p(transport == "p2p") {
    const int q = grid.pr(), me = grid.row();
    const int ps = std::max(1, phase_size);
    for (int o0 = 1; o0 < q; o0 += ps) {
      std::vector<int> src, dst;
      for (int o = o0; o < std::min(q, o0 + ps); ++o) src.push_back((me - o + q) % q), dst.push_back((me + o) % q);
      if (!p2p) {
        MPI_Comm gcomm = MPI_COMM_NULL;
        SPC_MPI(MPI_Dist_graph_create_adjacent(grid.col_comm(), static_cast<int>(src.size()), src.data(),
                                               MPI_UNWEIGHTED, static_cast<int>(dst.size()), dst.data(), MPI_UNWEIGHTED,
                                               MPI_INFO_NULL, 0, &gcomm));
        col_phase.push_back(Comm::adopt(gcomm));
      }
      phase_src.push_back(src);
      phase_dst.push_back(dst);
    }
    for (int j = 0; j < grid.pc(); ++j)
      if (j != grid.col()) row_peers.push_back(j);
    if (!p2p) {
      MPI_Comm rcomm = MPI_COMM_NULL;
      SPC_MPI(MPI_Dist_graph_create_adjacent(grid.row_comm(), static_cast<int>(row_peers.size()), row_peers.data(),
                                             MPI_UNWEIGHTED, static_cast<int>(row_peers.size()), row_peers.data(),
                                             MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &rcomm));
      row_graph = Comm::adopt(rcomm);
      row_data = Comm(row_graph.get());
      return;
    }
    col_p2p = Comm(grid.col_comm());
    row_p2p = Comm(grid.row_comm());
    const int me_all = comm_rank(grid.comm());
    max_piece = max_piece_for_int_counts(g, "p2p");
    my_piece = static_cast<int>(g.piece_end(me_all) - g.piece_begin(me_all));
    transpose_buf = bound_buffer(static_cast<size_t>(max_piece));
    for (const auto& src : phase_src) expand_buf.push_back(bound_buffer(src.size() * static_cast<size_t>(max_piece)));
    for (size_t k = 0; k <= phase_src.size(); ++k)  // at most one fold chunk per compute chunk
      fold_buf.push_back(bound_buffer(row_peers.size() * 2 * static_cast<size_t>(my_piece)));
  }
  size_t phases() const { return phase_src.size(); }
};

// The requests of one step (an expand phase, or one state of a fold chunk) and their
// statuses (the p2p receives read their sizes there). Tested with MPI_Testsome, which
// hands each completed request's status over once: SimGrid SMPI 3.32's MPI_Testall
// completes (and nulls) some requests while returning flag = false, so their statuses
// would be lost (a later test of a null request returns an empty status).
struct Step {
  std::vector<MPI_Request> reqs;
  std::vector<MPI_Status> st;
  size_t left = 0;  // requests not completed yet
  MPI_Request* add() {  // a new request slot; use it before the next add()
    reqs.push_back(MPI_REQUEST_NULL);
    st.emplace_back();
    ++left;
    return &reqs.back();
  }
  bool test() {
    if (left == 0) return true;
    int n = 0;
    idx.resize(reqs.size());
    tmp.resize(reqs.size());
    SPC_MPI(MPI_Testsome(static_cast<int>(reqs.size()), reqs.data(), &n, idx.data(), tmp.data()));
    if (n == MPI_UNDEFINED) n = 0;  // (no active request: cannot happen while left > 0)
    for (int i = 0; i < n; ++i) st[static_cast<size_t>(idx[i])] = tmp[i];
    left -= static_cast<size_t>(n);
    return left == 0;
  }
  void wait() {
    for (size_t i = 0; i < reqs.size() && left > 0; ++i)
      if (reqs[i] != MPI_REQUEST_NULL) {
        SPC_MPI(MPI_Wait(&reqs[i], &st[i]));
        --left;
      }
  }
  void wait_some() {  // blocks until at least one more request completes
    if (left == 0) return;
    int n = 0;
    idx.resize(reqs.size());
    tmp.resize(reqs.size());
    SPC_MPI(MPI_Waitsome(static_cast<int>(reqs.size()), reqs.data(), &n, idx.data(), tmp.data()));
    if (n == MPI_UNDEFINED) n = 0;
    for (int i = 0; i < n; ++i) st[static_cast<size_t>(idx[i])] = tmp[i];
    left -= static_cast<size_t>(n);
  }
  void reset() { reqs.clear(), st.clear(), left = 0; }
  int count(size_t i) const {  // elements received by request i (a receive)
    int n = 0;
    SPC_MPI(MPI_Get_count(&st[i], MPI_INT64_T, &n));
    return n;
  }

 private:
  std::vector<int> idx;
  std::vector<MPI_Status> tmp;
};

// A piece of received (v, u) pairs or frontier vertices.
struct Segment {
  const int64_t* data;
  size_t n;
};

// One fold chunk in flight. neighbor: counts first, then the data (a small state machine);
// p2p: the data at once (state 1).
struct FoldChunk {
  std::vector<int64_t> send, recv;
  std::vector<int> scounts, sdispls, rcounts, rdispls;
  Step step;
  int state = 0;  // 0 counts posted, 1 data posted, 2 done
  int index = 0;  // chunk number in this level (p2p: its tag and buffer)
  std::vector<Segment> got;  // once done: what each row peer sent
};

// The end of an overlapped level: merge every chunk's candidates, my own ("own", several
// runs) and the received lists [rb[i], re[i]) of (v, u) pairs, then update. `sorted`
// (merge "merge"): the lists are sorted by v and k-way merged; else a counting sort by v.
std::vector<int64_t> combine(Ctx& c, std::vector<int64_t>& own, const std::vector<const int64_t*>& rb,
                             const std::vector<const int64_t*>& re, bool sorted) {
  std::vector<const int64_t*> lists_b, lists_e;
  auto add_list = [&](const int64_t* b, const int64_t* e) {
    if (b != e) lists_b.push_back(b), lists_e.push_back(e);
  };
  // "own" holds one sorted run per chunk: sorted as a whole, it is one more list.
  {
    Clock s(&c.t.sort);
    if (sorted) {
      std::vector<std::pair<int64_t, int64_t>> pr;
      for (size_t k = 0; k + 1 < own.size(); k += 2) pr.emplace_back(own[k], own[k + 1]);
      std::sort(pr.begin(), pr.end());
      own.clear();
      for (auto& [v, u] : pr) own.insert(own.end(), {v, u});
    }
  }
  add_list(own.data(), own.data() + own.size());
  for (size_t i = 0; i < rb.size(); ++i) add_list(rb[i], re[i]);
  std::vector<int64_t> merged;
  {
    Clock s(&c.t.sort);
    if (sorted) {
      // k-way merge of (v, u) runs sorted by v; the min u wins in update().
      using Item = std::pair<int64_t, size_t>;  // (v, list)
      std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
      std::vector<const int64_t*> at = lists_b;
      for (size_t i = 0; i < at.size(); ++i) heap.emplace(at[i][0], i);
      while (!heap.empty()) {
        auto [v, i] = heap.top();
        heap.pop();
        merged.insert(merged.end(), {v, at[i][1]});
        at[i] += 2;
        if (at[i] != lists_e[i]) heap.emplace(at[i][0], i);
      }
    } else {
      // Counting sort by local vertex index.
      const int64_t np = c.pe - c.pb;
      std::vector<int64_t> cnt(static_cast<size_t>(np) + 1, 0);
      for (size_t i = 0; i < lists_b.size(); ++i)
        for (const int64_t* p = lists_b[i]; p != lists_e[i]; p += 2) ++cnt[p[0] - c.pb + 1];
      for (int64_t i = 0; i < np; ++i) cnt[i + 1] += cnt[i];
      merged.resize(static_cast<size_t>(cnt[np]) * 2);
      for (size_t i = 0; i < lists_b.size(); ++i)
        for (const int64_t* p = lists_b[i]; p != lists_e[i]; p += 2) {
          const int64_t at = cnt[p[0] - c.pb]++;
          merged[at * 2] = p[0], merged[at * 2 + 1] = p[1];
        }
    }
  }
  return c.update(merged);
}

std::vector<int64_t> level_overlapped(Ctx& c, Overlap& ov, const std::vector<int64_t>& frontier) {
  const bool sorted = c.opt.merge == "merge";
  const int q = c.grid.pr(), mycol = c.grid.col();
  // p2p: the transpose as one message (the partner's piece has at most max_piece vertices).
  const std::vector<int64_t> L =
      ov.p2p ? c.transpose(frontier, ov.transpose_buf.get(), ov.max_piece) : c.transpose(frontier);
  std::vector<int> counts(q);
  if (!ov.p2p) {
    Clock a(&c.t.expand), e(&c.t.exposed);
    int n = static_cast<int>(L.size());
    SPC_MPI(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, c.grid.col_comm()));
  }
  const size_t nph = ov.phases();
  std::vector<std::vector<int64_t>> ebuf(nph);
  std::vector<Step> estep(nph);
  std::vector<std::vector<int>> erc(nph), erd(nph);
  auto post_expand = [&](size_t k) {
    Clock a(&c.t.expand);
    if (!ov.p2p) {
      int tot = 0;
      for (int s : ov.phase_src[k]) erc[k].push_back(counts[s]), erd[k].push_back(tot), tot += counts[s];
      ebuf[k].resize(static_cast<size_t>(tot));
      SPC_MPI(MPI_Ineighbor_allgatherv(L.data(), static_cast<int>(L.size()), MPI_INT64_T, ebuf[k].data(),
                                       erc[k].data(), erd[k].data(), MPI_INT64_T, ov.col_phase[k].get(),
                                       estep[k].add()));
      return;
    }
    const int tag = static_cast<int>(k);
    for (size_t i = 0; i < ov.phase_src[k].size(); ++i)  // receives first: request i is source i
      SPC_MPI(MPI_Irecv(ov.expand_buf[k].get() + i * static_cast<size_t>(ov.max_piece), ov.max_piece, MPI_INT64_T,
                        ov.phase_src[k][i], tag, ov.col_p2p.get(), estep[k].add()));
    for (int d : ov.phase_dst[k])
      SPC_MPI(MPI_Isend(L.data(), static_cast<int>(L.size()), MPI_INT64_T, d, tag, ov.col_p2p.get(), estep[k].add()));
  };
  auto expanded = [&](size_t k) {  // phase k's frontier pieces, once its step completed
    std::vector<Segment> seg;
    if (!ov.p2p) seg.push_back({ebuf[k].data(), ebuf[k].size()});
    else
      for (size_t i = 0; i < ov.phase_src[k].size(); ++i)
        seg.push_back({ov.expand_buf[k].get() + i * static_cast<size_t>(ov.max_piece),
                       static_cast<size_t>(estep[k].count(i))});
    return seg;
  };
  std::vector<FoldChunk> folds;
  folds.reserve(nph + 1);
  std::vector<int64_t> own;  // candidates for my own piece, kept locally
  const size_t peers = ov.row_peers.size();
  const size_t fold_slot = 2 * static_cast<size_t>(ov.my_piece);  // p2p: values per peer and chunk
  auto post_fold = [&]() {
    std::vector<int64_t> data;
    std::vector<int> cnt;
    c.bucket(data, cnt, sorted);
    Clock a(&c.t.fold);
    // My own column's bucket stays here; the others go to the row peers.
    folds.emplace_back();
    FoldChunk& f = folds.back();
    f.index = static_cast<int>(folds.size() - 1);
    split_fold(data, cnt, mycol, own, f.send, f.scounts, f.sdispls);
    f.rcounts.assign(peers, 0);
    if (f.scounts.empty()) {
      f.state = 2;  // a 1x1 grid: nothing to fold
    } else if (!ov.p2p) {
      SPC_MPI(MPI_Ineighbor_alltoall(f.scounts.data(), 1, MPI_INT, f.rcounts.data(), 1, MPI_INT, ov.row_graph.get(),
                                     f.step.add()));
    } else {
      // One message to every row peer, empty ones too (the receiver cannot tell otherwise).
      int64_t* base = ov.fold_buf[static_cast<size_t>(f.index)].get();
      for (size_t j = 0; j < peers; ++j)  // receives first: request j is peer j
        SPC_MPI(MPI_Irecv(base + j * fold_slot, static_cast<int>(fold_slot), MPI_INT64_T, ov.row_peers[j], f.index,
                          ov.row_p2p.get(), f.step.add()));
      for (size_t j = 0; j < peers; ++j)
        SPC_MPI(MPI_Isend(f.send.data() + f.sdispls[j], f.scounts[j], MPI_INT64_T, ov.row_peers[j], f.index,
                          ov.row_p2p.get(), f.step.add()));
      f.state = 1;
    }
  };
  // Non-blocking collectives must be posted in the same order on every rank of a
  // communicator: counts go on row_graph in chunk order (at post_fold), data on row_data in
  // chunk order (a chunk's data is posted only after every earlier chunk's data).
  auto progress = [&](FoldChunk& f, bool block) -> bool {
    Clock a(&c.t.fold);
    while (f.state < 2) {
      if (block) {
        Clock e(&c.t.exposed);
        f.step.wait();
      } else if (!f.step.test()) {
        return f.state >= 1;
      }
      if (f.state == 0) {  // neighbor: counts arrived, post the data
        int tot = 0;
        for (int r : f.rcounts) f.rdispls.push_back(tot), tot += r;
        f.recv.resize(static_cast<size_t>(tot));
        f.step.reset();
        SPC_MPI(MPI_Ineighbor_alltoallv(f.send.data(), f.scounts.data(), f.sdispls.data(), MPI_INT64_T, f.recv.data(),
                                        f.rcounts.data(), f.rdispls.data(), MPI_INT64_T, ov.row_data.get(),
                                        f.step.add()));
      } else if (!ov.p2p) {
        for (size_t j = 0; j < peers; ++j)
          f.got.push_back({f.recv.data() + f.rdispls[j], static_cast<size_t>(f.rcounts[j])});
      } else {
        const int64_t* base = ov.fold_buf[static_cast<size_t>(f.index)].get();
        for (size_t j = 0; j < peers; ++j)
          f.got.push_back({base + j * fold_slot, static_cast<size_t>(f.step.count(j))});
      }
      ++f.state;
    }
    return true;
  };
  auto progress_all = [&](bool block) {
    for (auto& f : folds)
      if (!progress(f, block)) break;  // data not posted yet: later chunks must wait
  };
  // Phase k's transfer overlaps with the compute on phase k-1 (own data first).
  // Polling from inside the compute: the expand phase in flight and the folds posted.
  size_t inflight = 0;
  std::function<void()> poll;
  if (c.opt.poll_edges > 0) poll = [&]() {
    if (inflight < nph) estep[inflight].test();
    progress_all(false);
  };
  // The candidates of `fold_every` compute chunks go out as one fold chunk (0: one fold at
  // the end of the level); candidates of chunks not yet folded merge locally in best[].
  // Compute chunk j (0: my own piece, j > 0: expand phase j - 1) ends a fold chunk when:
  const size_t every = c.opt.fold_every > 0 ? static_cast<size_t>(c.opt.fold_every) : nph + 1;
  auto ends_fold = [&](size_t j) { return (j + 1) % every == 0 || j == nph; };
  if (nph > 0) post_expand(0);
  c.spmspv(L.data(), L.size(), poll);
  if (ends_fold(0)) post_fold();
  for (size_t k = 0; k < nph; ++k) {
    {
      Clock a(&c.t.expand), e(&c.t.exposed);
      estep[k].wait();
    }
    if (k + 1 < nph) post_expand(k + 1);
    inflight = k + 1;
    progress_all(false);
    for (const Segment& s : expanded(k)) c.spmspv(s.data, s.n, poll);
    if (ends_fold(k + 1)) post_fold();
  }
  progress_all(true);
  std::vector<const int64_t*> lists_b, lists_e;
  for (auto& f : folds)
    for (const Segment& g : f.got) lists_b.push_back(g.data), lists_e.push_back(g.data + g.n);
  return combine(c, own, lists_b, lists_e, sorted);
}

// Overlapped, transport "direct": no transpose and no phase chain. A rank's new frontier
// piece goes straight to every rank that gathers it (rank (a, b)'s piece is part of column
// block a: the ranks (k, a) of processor column a), so the transpose and the column
// allgather become one step of q messages, all posted at the start of the level. Every
// receive of the level (the q pieces of my column block, every fold chunk from every row
// peer) is posted first, at an upper bound (as the p2p transport), so no transfer waits for
// its receiver to reach a later point of its compute. The local compute takes the pieces
// in the order they arrive (MPI_Testsome / MPI_Waitsome), not in a fixed phase order, and
// the candidates of every `fold_every` pieces go out as one fold chunk (0: one per level).
// The message count equals the blocking version's (transpose + q - 1 allgather messages
// per rank, one fold message per row peer and chunk), with no count exchanges.
struct Direct {
  Comm comm, row;                // duplicates of the grid and row communicators
  std::vector<int> src, dst;     // grid ranks: the owners of my column block's pieces, the gatherers of my piece
  bool self = false;             // my own piece is part of my column block (a diagonal rank)
  std::vector<int> row_peers;    // row ranks of the other ranks of my processor row
  int max_piece = 0, my_piece = 0, chunks = 1;
  std::unique_ptr<int64_t[]> expand_buf, fold_buf;

  Direct(const Graph2D& g, const Grid& grid, int fold_every) : comm(grid.comm()), row(grid.row_comm()) {
    const int q = grid.pr(), me = comm_rank(grid.comm());
    for (int k = 0; k < q; ++k) {
      const int s = grid.rank_of(grid.col(), k), d = grid.rank_of(k, grid.row());
      if (s == me) self = true;
      else src.push_back(s);
      if (d != me) dst.push_back(d);
    }
    for (int j = 0; j < grid.pc(); ++j)
      if (j != grid.col()) row_peers.push_back(j);
    max_piece = max_piece_for_int_counts(g, "direct");
    my_piece = static_cast<int>(g.piece_end(me) - g.piece_begin(me));
    chunks = fold_every > 0 ? (q + fold_every - 1) / fold_every : 1;
    expand_buf = bound_buffer(src.size() * static_cast<size_t>(max_piece));
    fold_buf = bound_buffer(static_cast<size_t>(chunks) * row_peers.size() * 2 * static_cast<size_t>(my_piece));
  }
};

std::vector<int64_t> level_direct(Ctx& c, Direct& d, const std::vector<int64_t>& frontier) {
  const bool sorted = c.opt.merge == "merge";
  const int mycol = c.grid.col(), q = c.grid.pr();
  const size_t peers = d.row_peers.size(), slot = 2 * static_cast<size_t>(d.my_piece);
  Step fold_recv, expand;
  {
    Clock a(&c.t.fold);
    for (int t = 0; t < d.chunks; ++t)  // request t * peers + j: chunk t from peer j
      for (size_t j = 0; j < peers; ++j)
        SPC_MPI(MPI_Irecv(d.fold_buf.get() + (static_cast<size_t>(t) * peers + j) * slot, static_cast<int>(slot),
                          MPI_INT64_T, d.row_peers[j], 1 + t, d.row.get(), fold_recv.add()));
  }
  {
    Clock a(&c.t.expand);
    for (size_t i = 0; i < d.src.size(); ++i)  // request i: the piece of src[i]
      SPC_MPI(MPI_Irecv(d.expand_buf.get() + i * static_cast<size_t>(d.max_piece), d.max_piece, MPI_INT64_T, d.src[i],
                        0, d.comm.get(), expand.add()));
    for (int r : d.dst)
      SPC_MPI(MPI_Isend(frontier.data(), static_cast<int>(frontier.size()), MPI_INT64_T, r, 0, d.comm.get(),
                        expand.add()));
  }
  std::vector<std::vector<int64_t>> fold_send;
  std::vector<MPI_Request> fold_sreq;
  std::vector<int64_t> own;
  int chunk = 0;
  auto post_fold = [&]() {
    std::vector<int64_t> data;
    std::vector<int> cnt;
    c.bucket(data, cnt, sorted);
    Clock a(&c.t.fold);
    fold_send.emplace_back();
    std::vector<int64_t>& buf = fold_send.back();
    std::vector<int> n, at;
    split_fold(data, cnt, mycol, own, buf, n, at);
    for (size_t j = 0; j < peers; ++j) {
      fold_sreq.push_back(MPI_REQUEST_NULL);
      SPC_MPI(MPI_Isend(buf.data() + at[j], n[j], MPI_INT64_T, d.row_peers[j], 1 + chunk, d.row.get(), &fold_sreq.back()));
    }
    ++chunk;
  };
  std::function<void()> poll;
  if (c.opt.poll_edges > 0) poll = [&]() { expand.test(), fold_recv.test(); };
  const int every = c.opt.fold_every > 0 ? c.opt.fold_every : q;
  int pieces = 0;  // compute chunks done
  auto computed = [&]() {
    ++pieces;
    if (pieces % every == 0 || pieces == q) post_fold();
  };
  if (d.self) c.spmspv(frontier.data(), frontier.size(), poll), computed();
  std::vector<char> used(d.src.size(), 0);
  for (size_t left = d.src.size(); left > 0;) {
    size_t before = left;
    for (size_t i = 0; i < d.src.size(); ++i)
      if (!used[i] && expand.reqs[i] == MPI_REQUEST_NULL) {
        used[i] = 1, --left;
        c.spmspv(d.expand_buf.get() + i * static_cast<size_t>(d.max_piece), static_cast<size_t>(expand.count(i)), poll);
        computed();
      }
    if (left > 0 && left == before) {
      Clock a(&c.t.expand), e(&c.t.exposed);
      expand.wait_some();
    }
  }
  {
    Clock a(&c.t.fold), e(&c.t.exposed);
    fold_recv.wait();
    expand.wait();
    SPC_MPI(MPI_Waitall(static_cast<int>(fold_sreq.size()), fold_sreq.data(), MPI_STATUSES_IGNORE));
  }
  std::vector<const int64_t*> rb, re;
  for (size_t k = 0; k < fold_recv.reqs.size(); ++k) {
    const int64_t* b = d.fold_buf.get() + k * slot;
    rb.push_back(b), re.push_back(b + fold_recv.count(k));
  }
  return combine(c, own, rb, re, sorted);
}

// Plan variant: the expand through an allgather-shaped GatherPlan over the column and the
// fold through a halo-exchange Plan whose Pattern is discovered by the SDDE every level.
std::vector<int64_t> level_plan(Ctx& c, Sdde& sdde, const Locality& loc, const std::vector<int64_t>& frontier) {
  std::vector<int64_t> L = c.transpose(frontier);
  const int q = c.grid.pr(), me = comm_rank(c.grid.comm());
  std::vector<int64_t> F = L;
  {
    Clock a(&c.t.expand), e(&c.t.exposed);
    Topology col;
    for (int i = 0; i < q; ++i)
      if (i != c.grid.row()) col.sources.push_back(c.grid.rank_of(i, c.grid.col()));
    col.destinations = col.sources;
    GatherOptions go;
    auto plan = make_gather_plan(c.opt.gather_backend, col, loc, c.grid.comm(), static_cast<int64_t>(L.size()), go);
    std::vector<int64_t> recv(static_cast<size_t>(plan->recv_total()));
    plan->exchange(L.data(), recv.data());
    F.insert(F.end(), recv.begin(), recv.end());
  }
  c.spmspv(F.data(), F.size());
  std::vector<int64_t> data;
  std::vector<int> counts;
  c.bucket(data, counts, false);
  std::vector<int64_t> pairs;
  {
    Clock a(&c.t.fold), e(&c.t.exposed);
    // Send side: candidate parents u, one segment per owner; the SDDE carries the vertex
    // ids v so the owners learn who sends them what (the pattern changes every level).
    PatternSide send, recv;
    SparseMessages<int64_t> ids;
    std::vector<int64_t> u;
    int64_t pos = 0;
    for (int j = 0; j < c.grid.pc(); ++j) {
      const int owner = c.grid.rank_of(c.grid.row(), j);
      std::vector<int64_t> v;
      for (int k = 0; k < counts[j]; k += 2) v.push_back(data[pos + k]), u.push_back(data[pos + k + 1]);
      pos += counts[j];
      if (owner == me) {
        for (size_t k = 0; k < v.size(); ++k) pairs.insert(pairs.end(), {v[k], u[u.size() - v.size() + k]});
        u.resize(u.size() - v.size());
        continue;
      }
      if (v.empty()) continue;
      send.ranks.push_back(owner);
      for (size_t k = 0; k < v.size(); ++k) {
        send.indices.push_back(static_cast<int32_t>(u.size() - v.size() + k));
        send.global_ids.push_back(v[k]);
      }
      send.offsets.push_back(static_cast<int64_t>(send.indices.size()));
      ids.add(owner, v);
    }
    auto got = sdde.exchange(ids, c.opt.sdde);
    recv.ranks = got.ranks;
    recv.offsets = got.offsets;
    recv.global_ids = got.data;
    for (size_t k = 0; k < got.data.size(); ++k) recv.indices.push_back(static_cast<int32_t>(k));
    Pattern pat(send, recv, static_cast<int32_t>(u.size()), static_cast<int32_t>(got.data.size()));
    auto plan = make_plan(c.opt.backend, pat, loc, c.grid.comm());
    std::vector<int64_t> ghost(got.data.size());
    plan->exchange(u.data(), ghost.data());
    for (size_t k = 0; k < ghost.size(); ++k) pairs.insert(pairs.end(), {got.data[k], ghost[k]});
  }
  return c.update(pairs);
}

}  // namespace

std::string options_error(const BfsOptions& opt) {
  if (opt.variant != "blocking" && opt.variant != "overlapped" && opt.variant != "plan")
    return "bfs: unknown variant '" + opt.variant + "'; valid: blocking, overlapped, plan";
  if (opt.merge != "merge" && opt.merge != "sort") return "bfs: unknown merge '" + opt.merge + "'; valid: merge, sort";
  if (opt.transport != "neighbor" && opt.transport != "p2p" && opt.transport != "direct")
    return "bfs: unknown transport '" + opt.transport + "'; valid: neighbor, p2p, direct";
  if (opt.phase_size < 1) return "bfs: phase_size must be >= 1, got " + std::to_string(opt.phase_size);
  if (opt.fold_every < 0) return "bfs: fold_every must be >= 0, got " + std::to_string(opt.fold_every);
  if (opt.poll_edges < 0) return "bfs: poll_edges must be >= 0, got " + std::to_string(opt.poll_edges);
  return "";
}

std::vector<int64_t> run_bfs(const Graph2D& g, const Grid& grid, int64_t root, const BfsOptions& opt,
                             BfsTimes* times) {
  MPI_Comm comm = grid.comm();
  std::string err = options_error(opt);
  if (err.empty() && (root < 0 || root >= g.n))
    err = "bfs: root " + std::to_string(root) + " out of range [0, " + std::to_string(g.n) + ")";
  agree(comm, err);
  Ctx c(g, grid, opt);
  // Variant setup (graph communicators, SDDE context) happens before the clock starts.
  std::unique_ptr<Overlap> ov;
  std::unique_ptr<Sdde> sdde;
  Locality loc;
#ifdef SPARSECOMM_SMPI
  if (opt.variant == "overlapped" && opt.transport == "neighbor")
    throw NotImplementedError("bfs: the overlapped variant's neighbor transport needs MPI neighborhood collectives, "
                              "which SimGrid SMPI 3.32 does not implement; use transport p2p");
#endif
  std::unique_ptr<Direct> dir;
  if (opt.variant == "overlapped" && opt.transport == "direct") dir = std::make_unique<Direct>(g, grid, opt.fold_every);
  else if (opt.variant == "overlapped") ov = std::make_unique<Overlap>(g, grid, opt.phase_size, opt.transport);
  if (opt.variant == "plan") {
    loc = Locality::detect(comm);
    sdde = std::make_unique<Sdde>(comm, loc);
  }
  SPC_MPI(MPI_Barrier(comm));
  const double t0 = MPI_Wtime();
  std::vector<int64_t> frontier;
  if (root >= c.pb && root < c.pe) c.parent[root - c.pb] = root, frontier.push_back(root);
  while (true) {
    if (opt.variant == "blocking") frontier = level_blocking(c, frontier);
    else if (dir) frontier = level_direct(c, *dir, frontier);
    else if (opt.variant == "overlapped") frontier = level_overlapped(c, *ov, frontier);
    else frontier = level_plan(c, *sdde, loc, frontier);
    ++c.t.levels;
    if (allreduce_sum(comm, static_cast<int64_t>(frontier.size())) == 0) break;
  }
  c.t.total = MPI_Wtime() - t0;
  if (times) {
    auto red = reduce_all(comm, {c.t.total, c.t.transpose, c.t.expand, c.t.fold, c.t.compute, c.t.sort, c.t.exposed,
                                 static_cast<double>(c.t.corrupt)});
    *times = c.t;
    times->corrupt = static_cast<int64_t>(red[7].sum);
    times->total = red[0].max, times->transpose = red[1].max, times->expand = red[2].max, times->fold = red[3].max;
    times->compute = red[4].max, times->sort = red[5].max, times->exposed = red[6].max;
  }
  return c.parent;
}

int64_t traversed_edges(const DistCsr<double>& g, const std::vector<int64_t>& parent) {
  int64_t deg = 0;
  for (int32_t i = 0; i < g.local_rows(); ++i)
    if (parent[i] >= 0)
      deg += g.diag().row_ptr[i + 1] - g.diag().row_ptr[i] + g.offd().row_ptr[i + 1] - g.offd().row_ptr[i];
  return allreduce_sum(g.comm(), deg) / 2;
}

}  // namespace sparsecomm::bfs
