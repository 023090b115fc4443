// Overlapped level (Kandalla, Buluç, Subramoni, Tomko, Vienne, Oliker and Panda, 2012):
// expand and fold split into phases of non-blocking exchanges, each overlapped with the
// compute on the previous phase's frontier pieces.
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
// Why MPI directly and not a Plan: what this variant measures is how MPI's own phased
// non-blocking collectives (or their point-to-point equivalent with receives at an upper
// bound) overlap with compute; a Plan fixes its counts at setup, and here they change every
// level and chunk. The requests live in RequestPools (core/mpi_util.hpp).
#include <algorithm>

#include "bfs2d/level.hpp"

namespace sparsecomm::bfs::detail {

namespace {

// The transport, set up once per BFS.
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
    make_phases(grid, std::max(1, phase_size));
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

  // The expand phases: phase_size column offsets each (and their graph communicators).
  void make_phases(const Grid& grid, int ps) {
    const int q = grid.pr(), me = grid.row();
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
  }
  size_t phases() const { return phase_src.size(); }
};

// One fold chunk in flight. neighbor: counts first, then the data (a small state machine);
// p2p: the data at once (state 1).
struct FoldChunk {
  std::vector<int64_t> send, recv;
  std::vector<int> scounts, sdispls, rcounts, rdispls;
  RequestPool step;
  int state = 0;  // 0 counts posted, 1 data posted, 2 done
  int index = 0;  // chunk number in this level (p2p: its tag and buffer)
  std::vector<Segment> got;  // once done: what each row peer sent
};

// One level in flight.
class LevelRun {
 public:
  LevelRun(Ctx& c, Overlap& ov, const std::vector<int64_t>& frontier)
      : c_(c), ov_(ov), sorted_(c.opt.merge == "merge"), nph_(ov.phases()), ebuf_(nph_), estep_(nph_), erc_(nph_),
        erd_(nph_), peers_(ov.row_peers.size()), fold_slot_(2 * static_cast<size_t>(ov.my_piece)) {
    // p2p: the transpose as one message (the partner's piece has at most max_piece vertices).
    L_ = ov.p2p ? c.transpose(frontier, ov.transpose_buf.get(), ov.max_piece) : c.transpose(frontier);
    counts_.resize(static_cast<size_t>(c.grid.pr()));
    if (!ov.p2p) {
      Clock a(&c.t.expand), e(&c.t.exposed);
      int n = static_cast<int>(L_.size());
      SPC_MPI(MPI_Allgather(&n, 1, MPI_INT, counts_.data(), 1, MPI_INT, c.grid.col_comm()));
    }
    folds_.reserve(nph_ + 1);
    // Polling from inside the compute: the expand phase in flight and the folds posted.
    if (c.opt.poll_edges > 0) poll_ = [this]() {
      if (inflight_ < nph_) estep_[inflight_].test();
      progress_all(false);
    };
  }

  // Phase k's transfer overlaps with the compute on phase k-1 (own data first). The
  // candidates of `fold_every` compute chunks go out as one fold chunk (0: one fold at the
  // end of the level); candidates of chunks not yet folded merge locally in best[].
  std::vector<int64_t> run() {
    if (nph_ > 0) post_expand(0);
    c_.spmspv(L_.data(), L_.size(), poll_);
    if (ends_fold(0)) post_fold();
    for (size_t k = 0; k < nph_; ++k) {
      {
        Clock a(&c_.t.expand), e(&c_.t.exposed);
        estep_[k].wait();
      }
      if (k + 1 < nph_) post_expand(k + 1);
      inflight_ = k + 1;
      progress_all(false);
      for (const Segment& s : expanded(k)) c_.spmspv(s.data, s.n, poll_);
      if (ends_fold(k + 1)) post_fold();
    }
    progress_all(true);
    std::vector<Segment> received;
    for (auto& f : folds_) received.insert(received.end(), f.got.begin(), f.got.end());
    return combine(c_, own_, received, sorted_);
  }

 private:
  // Compute chunk j (0: my own piece, j > 0: expand phase j - 1) ends a fold chunk.
  bool ends_fold(size_t j) const {
    const size_t every = c_.opt.fold_every > 0 ? static_cast<size_t>(c_.opt.fold_every) : nph_ + 1;
    return (j + 1) % every == 0 || j == nph_;
  }

  void post_expand(size_t k) {
    Clock a(&c_.t.expand);
    if (!ov_.p2p) {
      int tot = 0;
      for (int s : ov_.phase_src[k]) erc_[k].push_back(counts_[s]), erd_[k].push_back(tot), tot += counts_[s];
      ebuf_[k].resize(static_cast<size_t>(tot));
      SPC_MPI(MPI_Ineighbor_allgatherv(L_.data(), static_cast<int>(L_.size()), MPI_INT64_T, ebuf_[k].data(),
                                       erc_[k].data(), erd_[k].data(), MPI_INT64_T, ov_.col_phase[k].get(),
                                       estep_[k].add()));
      return;
    }
    const int tag = static_cast<int>(k);
    for (size_t i = 0; i < ov_.phase_src[k].size(); ++i)  // receives first: request i is source i
      SPC_MPI(MPI_Irecv(ov_.expand_buf[k].get() + i * static_cast<size_t>(ov_.max_piece), ov_.max_piece, MPI_INT64_T,
                        ov_.phase_src[k][i], tag, ov_.col_p2p.get(), estep_[k].add()));
    for (int d : ov_.phase_dst[k])
      SPC_MPI(MPI_Isend(L_.data(), static_cast<int>(L_.size()), MPI_INT64_T, d, tag, ov_.col_p2p.get(), estep_[k].add()));
  }

  // Phase k's frontier pieces, once its step completed.
  std::vector<Segment> expanded(size_t k) const {
    std::vector<Segment> seg;
    if (!ov_.p2p) seg.push_back({ebuf_[k].data(), ebuf_[k].size()});
    else
      for (size_t i = 0; i < ov_.phase_src[k].size(); ++i)
        seg.push_back({ov_.expand_buf[k].get() + i * static_cast<size_t>(ov_.max_piece),
                       static_cast<size_t>(estep_[k].count(i, MPI_INT64_T))});
    return seg;
  }

  // My own column's bucket stays here; the others go to the row peers.
  void post_fold() {
    std::vector<int64_t> data;
    std::vector<int> cnt;
    c_.bucket(data, cnt, sorted_);
    Clock a(&c_.t.fold);
    folds_.emplace_back();
    FoldChunk& f = folds_.back();
    f.index = static_cast<int>(folds_.size() - 1);
    split_fold(data, cnt, c_.grid.col(), own_, f.send, f.scounts, f.sdispls);
    f.rcounts.assign(peers_, 0);
    if (f.scounts.empty()) {
      f.state = 2;  // a 1x1 grid: nothing to fold
    } else if (!ov_.p2p) {
      SPC_MPI(MPI_Ineighbor_alltoall(f.scounts.data(), 1, MPI_INT, f.rcounts.data(), 1, MPI_INT, ov_.row_graph.get(),
                                     f.step.add()));
    } else {
      // One message to every row peer, empty ones too (the receiver cannot tell otherwise).
      int64_t* base = ov_.fold_buf[static_cast<size_t>(f.index)].get();
      for (size_t j = 0; j < peers_; ++j)  // receives first: request j is peer j
        SPC_MPI(MPI_Irecv(base + j * fold_slot_, static_cast<int>(fold_slot_), MPI_INT64_T, ov_.row_peers[j], f.index,
                          ov_.row_p2p.get(), f.step.add()));
      for (size_t j = 0; j < peers_; ++j)
        SPC_MPI(MPI_Isend(f.send.data() + f.sdispls[j], f.scounts[j], MPI_INT64_T, ov_.row_peers[j], f.index,
                          ov_.row_p2p.get(), f.step.add()));
      f.state = 1;
    }
  }

  // Non-blocking collectives must be posted in the same order on every rank of a
  // communicator: counts go on row_graph in chunk order (at post_fold), data on row_data in
  // chunk order (a chunk's data is posted only after every earlier chunk's data).
  // Returns false while the chunk's data is not posted yet.
  bool progress(FoldChunk& f, bool block) {
    Clock a(&c_.t.fold);
    while (f.state < 2) {
      if (block) {
        Clock e(&c_.t.exposed);
        f.step.wait();
      } else if (!f.step.test()) {
        return f.state >= 1;
      }
      if (f.state == 0) post_fold_data(f);
      else collect_fold(f);
      ++f.state;
    }
    return true;
  }

  // neighbor: the counts arrived, post the data.
  void post_fold_data(FoldChunk& f) {
    int tot = 0;
    for (int r : f.rcounts) f.rdispls.push_back(tot), tot += r;
    f.recv.resize(static_cast<size_t>(tot));
    f.step.reset();
    SPC_MPI(MPI_Ineighbor_alltoallv(f.send.data(), f.scounts.data(), f.sdispls.data(), MPI_INT64_T, f.recv.data(),
                                    f.rcounts.data(), f.rdispls.data(), MPI_INT64_T, ov_.row_data.get(), f.step.add()));
  }

  // The data arrived: what each row peer sent.
  void collect_fold(FoldChunk& f) {
    if (!ov_.p2p) {
      for (size_t j = 0; j < peers_; ++j) f.got.push_back({f.recv.data() + f.rdispls[j], static_cast<size_t>(f.rcounts[j])});
      return;
    }
    const int64_t* base = ov_.fold_buf[static_cast<size_t>(f.index)].get();
    for (size_t j = 0; j < peers_; ++j)
      f.got.push_back({base + j * fold_slot_, static_cast<size_t>(f.step.count(j, MPI_INT64_T))});
  }

  void progress_all(bool block) {
    for (auto& f : folds_)
      if (!progress(f, block)) break;  // data not posted yet: later chunks must wait
  }

  Ctx& c_;
  Overlap& ov_;
  const bool sorted_;
  const size_t nph_;
  std::vector<int64_t> L_;
  std::vector<int> counts_;
  std::vector<std::vector<int64_t>> ebuf_;
  std::vector<RequestPool> estep_;
  std::vector<std::vector<int>> erc_, erd_;
  std::vector<FoldChunk> folds_;
  std::vector<int64_t> own_;  // candidates for my own piece, kept locally
  const size_t peers_, fold_slot_;  // p2p: values per peer and chunk
  size_t inflight_ = 0;
  std::function<void()> poll_;
};

}  // namespace

std::unique_ptr<LevelVariant> make_overlapped(const Graph2D& g, const Grid& grid, const BfsOptions& opt) {
  return std::make_unique<StatefulVariant<Overlap, LevelRun>>(g, grid, opt.phase_size, opt.transport);
}

}  // namespace sparsecomm::bfs::detail
