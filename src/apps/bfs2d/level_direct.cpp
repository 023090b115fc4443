// Overlapped level, transport "direct": no transpose and no phase chain. A rank's new
// frontier piece goes straight to every rank that gathers it (rank (a, b)'s piece is part of
// column block a: the ranks (k, a) of processor column a), so the transpose and the column
// allgather become one step of q messages, all posted at the start of the level. Every
// receive of the level (the q pieces of my column block, every fold chunk from every row
// peer) is posted first, at an upper bound (as the p2p transport), so no transfer waits for
// its receiver to reach a later point of its compute. The local compute takes the pieces
// in the order they arrive (MPI_Testsome / MPI_Waitsome), not in a fixed phase order, and
// the candidates of every `fold_every` pieces go out as one fold chunk (0: one per level).
// The message count equals the blocking version's (transpose + q - 1 allgather messages
// per rank, one fold message per row peer and chunk), with no count exchanges.
// Why MPI directly and not a Plan: receives posted at an upper bound whose sizes are read
// from their statuses, taken in arrival order; a Plan's counts are fixed at setup and the
// frontier changes every level. The requests live in RequestPools (core/mpi_util.hpp).
#include "bfs2d/level.hpp"

namespace sparsecomm::bfs::detail {

namespace {

// The peers and bound-sized buffers, set up once per BFS.
struct Direct {
  Comm comm, row;              // duplicates of the grid and row communicators
  std::vector<int> src, dst;   // grid ranks: the owners of my column block's pieces, the gatherers of my piece
  bool self = false;           // my own piece is part of my column block (a diagonal rank)
  std::vector<int> row_peers;  // row ranks of the other ranks of my processor row
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

// One level in flight.
class DirectRun {
 public:
  DirectRun(Ctx& c, Direct& d, const std::vector<int64_t>& frontier)
      : c_(c), d_(d), frontier_(frontier), peers_(d.row_peers.size()), slot_(2 * static_cast<size_t>(d.my_piece)) {
    if (c.opt.poll_edges > 0) poll_ = [this]() { expand_.test(), fold_recv_.test(); };
  }

  std::vector<int64_t> run() {
    post_receives_and_pieces(frontier_);
    if (d_.self) c_.spmspv(frontier_.data(), frontier_.size(), poll_), computed();
    compute_in_arrival_order();
    {
      Clock a(&c_.t.fold), e(&c_.t.exposed);
      fold_recv_.wait();
      expand_.wait();
      fold_send_req_.wait();
    }
    std::vector<Segment> received;
    for (size_t k = 0; k < fold_recv_.size(); ++k)
      received.push_back({d_.fold_buf.get() + k * slot_, static_cast<size_t>(fold_recv_.count(k, MPI_INT64_T))});
    return combine(c_, own_, received, c_.opt.merge == "merge");
  }

 private:
  // Every fold receive of the level (request t * peers + j: chunk t from peer j), then the
  // column block's pieces (request i: the piece of src[i]) and my piece to its gatherers.
  void post_receives_and_pieces(const std::vector<int64_t>& frontier) {
    {
      Clock a(&c_.t.fold);
      for (int t = 0; t < d_.chunks; ++t)
        for (size_t j = 0; j < peers_; ++j)
          SPC_MPI(MPI_Irecv(d_.fold_buf.get() + (static_cast<size_t>(t) * peers_ + j) * slot_, static_cast<int>(slot_),
                            MPI_INT64_T, d_.row_peers[j], 1 + t, d_.row.get(), fold_recv_.add()));
    }
    Clock a(&c_.t.expand);
    for (size_t i = 0; i < d_.src.size(); ++i)
      SPC_MPI(MPI_Irecv(d_.expand_buf.get() + i * static_cast<size_t>(d_.max_piece), d_.max_piece, MPI_INT64_T,
                        d_.src[i], 0, d_.comm.get(), expand_.add()));
    for (int r : d_.dst)
      SPC_MPI(MPI_Isend(frontier.data(), static_cast<int>(frontier.size()), MPI_INT64_T, r, 0, d_.comm.get(),
                        expand_.add()));
  }

  // The pieces of my column block in the order they arrive.
  void compute_in_arrival_order() {
    std::vector<char> used(d_.src.size(), 0);
    for (size_t left = d_.src.size(); left > 0;) {
      const size_t before = left;
      for (size_t i = 0; i < d_.src.size(); ++i)
        if (!used[i] && expand_.completed(i)) {
          used[i] = 1, --left;
          c_.spmspv(d_.expand_buf.get() + i * static_cast<size_t>(d_.max_piece),
                    static_cast<size_t>(expand_.count(i, MPI_INT64_T)), poll_);
          computed();
        }
      if (left > 0 && left == before) {
        Clock a(&c_.t.expand), e(&c_.t.exposed);
        expand_.wait_some();
      }
    }
  }

  // A compute chunk done: every `fold_every` of them (and the last) end a fold chunk.
  void computed() {
    const int q = c_.grid.pr(), every = c_.opt.fold_every > 0 ? c_.opt.fold_every : q;
    ++pieces_;
    if (pieces_ % every == 0 || pieces_ == q) post_fold();
  }

  void post_fold() {
    std::vector<int64_t> data;
    std::vector<int> cnt;
    c_.bucket(data, cnt, c_.opt.merge == "merge");
    Clock a(&c_.t.fold);
    fold_send_.emplace_back();
    std::vector<int64_t>& buf = fold_send_.back();
    std::vector<int> n, at;
    split_fold(data, cnt, c_.grid.col(), own_, buf, n, at);
    for (size_t j = 0; j < peers_; ++j)
      SPC_MPI(MPI_Isend(buf.data() + at[j], n[j], MPI_INT64_T, d_.row_peers[j], 1 + chunk_, d_.row.get(),
                        fold_send_req_.add()));
    ++chunk_;
  }

  Ctx& c_;
  Direct& d_;
  const std::vector<int64_t>& frontier_;  // the level's frontier piece, which outlives the run
  const size_t peers_, slot_;
  std::vector<std::vector<int64_t>> fold_send_;  // one buffer per fold chunk (declared before the pools:
                                                // they complete their requests before it goes)
  RequestPool fold_recv_, expand_, fold_send_req_;
  std::vector<int64_t> own_;
  int chunk_ = 0, pieces_ = 0;
  std::function<void()> poll_;
};

}  // namespace

std::unique_ptr<LevelVariant> make_direct(const Graph2D& g, const Grid& grid, const BfsOptions& opt) {
  return std::make_unique<StatefulVariant<Direct, DirectRun>>(g, grid, opt.fold_every);
}

}  // namespace sparsecomm::bfs::detail
