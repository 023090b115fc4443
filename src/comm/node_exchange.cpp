// The one-node exchange (node_exchange.hpp: why it needs no agreement,
// the header and the synchronisation rule).
#ifndef SPARSECOMM_SMPI
#include "comm/node_exchange.hpp"

#include <algorithm>
#include <cstring>

#include "core/mpi_datatype.hpp"
#include "core/spin_wait.hpp"

namespace sparsecomm::detail {

namespace {
constexpr int64_t kLine = 64;
// Header of a writer's buffer: the call number, then (offset, bytes) per destination slot;
// offset -1: by message; bytes -1: MPI_IN_PLACE (no block).
int64_t header_bytes(size_t slots) { return ((2 + 2 * static_cast<int64_t>(slots)) * 8 + kLine - 1) / kLine * kLine; }

// The tag of writer slot i's message in call `call`: 2i + big in the low kSlotBits, so that
// blocks above the limit (sent and received at the calls' starts) and blocks that did not fit
// the area (sent at the write, received after the header) are in separate tag spaces and each
// kind is matched in call order even where a queued write is made after a later call's
// start; the call's low bits above them (as many as MPI_TAG_UB leaves: 10 where tags have 31
// bits, 7 with MPICH's 28), so that a receive an erroneous peer never answers (withdrawn when
// its header shows it) cannot meet a later call's message first. Slots below 2^20 (create()).
constexpr int kSlotBits = 21;

}  // namespace

int NodeExchange::tag(uint64_t call, int64_t i, bool big) const {
  const uint64_t low = call & ((uint64_t{1} << call_bits_) - 1);
  return static_cast<int>((low << kSlotBits) | static_cast<uint64_t>(2 * i + (big ? 1 : 0)));
}

namespace {
int64_t type_size(MPI_Datatype t) {
  int s = 0;
  PMPI_Type_size(t, &s);
  return s;
}
MPI_Aint type_extent(MPI_Datatype t) {
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_get_extent(t, &lb, &extent);
  return extent;
}
// A buffer and type for MPI_Pack / MPI_Unpack that reach the same bytes as (buf, type), with a
// buffer that is never null. MPI_BOTTOM (null) with a type of absolute addresses is valid MPI,
// but MPICH 4.0.2's MPI_Pack and MPI_Unpack reject a null buffer ("Null pointer in parameter
// inbuf"); so a null buffer becomes a non-null base and the type a struct holding it that far
// back (MPI_Type_create_struct with the displacement -base). Frees what it made.
class NonNullView {
 public:
  NonNullView(const void* buf, MPI_Datatype t) : buf_(const_cast<void*>(buf)), type_(t) {
    if (buf_ != nullptr) return;
    static char base;
    buf_ = &base;
    MPI_Aint back = 0;
    PMPI_Get_address(&base, &back);
    const int one = 1;
    const MPI_Aint disp = -back;
    PMPI_Type_create_struct(1, &one, &disp, &t, &made_);
    PMPI_Type_commit(&made_);
    type_ = made_;
  }
  ~NonNullView() {
    if (made_ != MPI_DATATYPE_NULL) PMPI_Type_free(&made_);
  }
  NonNullView(const NonNullView&) = delete;
  NonNullView& operator=(const NonNullView&) = delete;
  void* buf() const { return buf_; }
  MPI_Datatype type() const { return type_; }

 private:
  void* buf_;
  MPI_Datatype type_, made_ = MPI_DATATYPE_NULL;
};

// Whether `count` of `t` lie one after the other with no holes (a memcpy moves them; Pack
// and Unpack everything else).
bool dense(MPI_Datatype t) {
  MPI_Datatype base = MPI_DATATYPE_NULL;
  int n = 0;
  return contiguous_run(t, &base, &n) >= 0;
}
}  // namespace

std::unique_ptr<NodeExchange> NodeExchange::create(MPI_Comm comm, const std::vector<int>& sources,
                                                   const std::vector<int>& destinations, int64_t edge_max,
                                                   int64_t area) {
  // Tags of kSlotBits + at least 4 call bits (tag()) and slots below 2^20: else not used (the
  // same on every rank: MPI_TAG_UB is the MPI's; a rank's degree is its own, so agreed). The
  // standard promises only 2^15 - 1; Open MPI gives 2^31 - 1, MPICH 2^28 - 1.
  int* ub = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);  // (kept on MPI_COMM_WORLD only)
  int bits = 0;
  while (found && bits < 31 && (int64_t{1} << (bits + 1)) - 1 <= *ub) ++bits;  // tags [0, 2^bits) are valid
  const int call_bits = std::min(10, bits - kSlotBits);
  const int fits = call_bits >= 4 && sources.size() < (1u << 20) && destinations.size() < (1u << 20);
  int all = 0;
  PMPI_Allreduce(&fits, &all, 1, MPI_INT, MPI_MIN, comm);
  if (!all) return nullptr;
  MPI_Comm dup = MPI_COMM_NULL;
  PMPI_Comm_dup(comm, &dup);
  PMPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);  // (a receive of an erroneous size is a code, not an abort)
  std::unique_ptr<NodeExchange> x(new NodeExchange(comm, dup));
  x->src_ = sources, x->dst_ = destinations, x->edge_max_ = edge_max;
  x->call_bits_ = call_bits;
  // The standard's pairing of repeated edges (MPI-4 section 8.6): the k-th slot naming j among
  // my sources takes the block of the k-th slot naming me among j's destinations. Each
  // destination slot i sends its number i, each source slot receives one, on the private
  // duplicate in slot order: messages between two ranks match in the order they were posted
  // (MPI's non-overtaking rule), which is that pairing. Not learnt from MPI_Neighbor_alltoall:
  // MPICH 4.0.2 pairs repeated edges the other way round in it (and not in alltoallv).
  std::vector<int> mine(destinations.size());
  for (size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<int>(i);
  x->pair_.assign(sources.size(), -1);
  std::vector<MPI_Request> setup;
  setup.reserve(sources.size() + destinations.size());
  for (size_t s = 0; s < sources.size(); ++s)
    if (sources[s] != MPI_PROC_NULL) {
      setup.emplace_back();
      PMPI_Irecv(&x->pair_[s], 1, MPI_INT, sources[s], 0, dup, &setup.back());
    }
  for (size_t i = 0; i < destinations.size(); ++i)
    if (destinations[i] != MPI_PROC_NULL) {
      setup.emplace_back();
      PMPI_Isend(&mine[i], 1, MPI_INT, destinations[i], 0, dup, &setup.back());
    }
  PMPI_Waitall(static_cast<int>(setup.size()), setup.data(), MPI_STATUSES_IGNORE);
  const auto uniq = [](std::vector<int> v) {
    v.erase(std::remove(v.begin(), v.end(), MPI_PROC_NULL), v.end());
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  };
  const std::vector<int> readers = uniq(destinations), writers = uniq(sources);
  for (int r : sources)
    x->writer_of_.push_back(r == MPI_PROC_NULL ? -1
                                               : static_cast<int>(std::lower_bound(writers.begin(), writers.end(), r) -
                                                                  writers.begin()));
  x->consumed_.assign(writers.size(), 0);
  x->assigned_.assign(writers.size(), 0);
  x->header_ = header_bytes(destinations.size());
  x->area_ = x->header_ + area;  // (two such buffers per rank and communicator)
  x->channel_.declare(readers, std::vector<int64_t>(readers.size(), 0), x->area_, writers);
  x->patience_ = node_of(comm)->patience;
  if (!x->window_.try_connect()) return nullptr;  // agreed over the node, which is the communicator
  return x;
}

NodeExchange::~NodeExchange() {
  if (dup_ != MPI_COMM_NULL) PMPI_Comm_free(&dup_);
}

// While waiting on the window: Open MPI's progress engine for everyone's messages, by a
// probe that never matches (detail::mpi_progress in core/spin_wait.hpp: why a probe that
// may match is not enough).
void NodeExchange::mpi_progress() {
  int flag = 0;
  PMPI_Iprobe(0, kProgressProbeTag, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);
}

std::shared_ptr<NodeExchange::Op> NodeExchange::start(Shape shape, const Side& send, const Side& recv) {
  auto op = std::make_shared<Op>();
  op->call = ++calls_;
  op->shape = shape, op->send = send, op->recv = recv;
  op->in_place = send.buf == MPI_IN_PLACE;
  const size_t nd = dst_.size(), ns = src_.size();
  const auto type_of = [](MPI_Datatype t) { return Op::Type{type_size(t), type_extent(t), dense(t)}; };
  if (!op->in_place) op->send_type = type_of(send.type);
  op->recv_type = type_of(recv.type);
  const int64_t send_size = op->send_type.size, recv_size = op->recv_type.size;
  // Whether this rank publishes, and which writers it reads (see the header comment): where
  // every block a writer sends has one size, only writers of non-empty blocks take part, as
  // MPI's own skips empty calls; an alltoallv's writer and readers take part in every call.
  bool sends = op->in_place || shape == kBlocksV;
  for (size_t i = 0; !sends && i < nd; ++i) sends = dst_[i] != MPI_PROC_NULL && send_size * send.n(i) > 0;
  if (sends && channel_.has_readers()) op->write = ++epoch_;
  pending_.assign(consumed_.size(), 0);
  for (size_t s = 0; s < ns; ++s) {
    const int w = writer_of_[s];
    if (w >= 0 && !pending_[static_cast<size_t>(w)] && (shape == kBlocksV || recv_size * recv.n(s) > 0)) {
      pending_[static_cast<size_t>(w)] = 1;
      op->reads.emplace_back(static_cast<size_t>(w), ++assigned_[static_cast<size_t>(w)]);
    }
  }
  // A block above edge_max goes as a message whatever else the writer sends, so both ends
  // post it now, receives first as MPI's own does: the receive before the writer's header
  // is read, the send without waiting for the window.
  if (shape != kOneBlock)
    for (size_t s = 0; s < ns; ++s)
      if (writer_of_[s] >= 0 && recv_size * recv.n(s) > edge_max_) {
        if (op->posted.empty()) op->posted.assign(ns, -1);
        op->posted[s] = static_cast<int>(op->reqs.size());
        op->reqs.emplace_back();
        PMPI_Irecv(static_cast<char*>(const_cast<void*>(recv.buf)) + recv.at(s) * op->recv_type.extent, recv.n(s),
                   recv.type, src_[s], tag(op->call, pair_[s], true), dup_, &op->reqs.back());
      }
  if (shape != kOneBlock && !op->in_place) {
    const MPI_Aint extent = op->send_type.extent;
    for (size_t i = 0; i < nd; ++i)
      if (dst_[i] != MPI_PROC_NULL && send_size * send.n(i) > edge_max_) {
        op->reqs.emplace_back();
        PMPI_Isend(static_cast<const char*>(send.buf) + send.at(i) * extent, send.n(i), send.type, dst_[i],
                   tag(op->call, static_cast<int64_t>(i), true), dup_, &op->reqs.back());
      }
  }
  if (!op->staged()) {
    staging_.push_back(op);
    advance();
  }
  return op;
}

void NodeExchange::advance() {
  for (auto it = staging_.begin(); it != staging_.end();) {
    Op& op = **it;
    // my epochs are published in order, each once its buffer is free
    if (op.write && published_ == op.write - 1 && channel_.writable(op.write)) write(op);
    // a writer's epochs are read in order (its buffer e % 2 is reused once e is done)
    for (size_t k = 0; k < op.reads.size();) {
      const auto [w, e] = op.reads[k];
      if (consumed_[w] == e - 1 && channel_.ready(w, e)) {
        read(op, w, e);
        op.reads[k] = op.reads.back();
        op.reads.pop_back();
      } else {
        ++k;
      }
    }
    it = op.staged() ? staging_.erase(it) : it + 1;
  }
}

bool NodeExchange::progress(Op& op, bool block) {
  // One check, true once this call is complete. Every call in flight moves, not only this
  // one: a later call's queued write that another rank waits for is made while this one
  // waits for its messages.
  const auto done = [&] {
    if (!staging_.empty()) advance();
    if (!op.staged()) return false;
    if (block && staging_.empty()) {  // nothing left to advance here: MPI's own wait
      if (!op.reqs.empty()) PMPI_Waitall(static_cast<int>(op.reqs.size()), op.reqs.data(), MPI_STATUSES_IGNORE);
      return true;
    }
    int flag = 1;
    if (!op.reqs.empty()) PMPI_Testall(static_cast<int>(op.reqs.size()), op.reqs.data(), &flag, MPI_STATUSES_IGNORE);
    return flag != 0;
  };
  if (!block) return done();
  // The library's one wait (core/spin_wait.hpp: MPI's progress now and then within the
  // patience, at every yield after it), and MPI's progress at every check while this call
  // has messages in flight (a large message moves only as both ends call into MPI).
  spin_wait(
      patience_,
      [&] {
        if (done()) return true;
        if (!op.reqs.empty()) mpi_progress();
        return false;
      },
      [&] {
        if (op.reqs.empty()) mpi_progress();  // (else made by the check just before)
      });
  return true;
}

void NodeExchange::write(Op& op) {
  const uint64_t e = op.write;
  const Side& send = op.send;
  const bool one_block = op.shape == kOneBlock, in_place = op.in_place;
  const size_t nd = dst_.size();
  char* buf = channel_.buffer(static_cast<int>(e % 2));
  auto* h = reinterpret_cast<int64_t*>(buf);
  h[0] = static_cast<int64_t>(op.call);
  h[1] = static_cast<int64_t>(nd);
  const bool copy = op.send_type.dense;
  const MPI_Aint extent = op.send_type.extent;
  const int64_t size = op.send_type.size;
  const auto count = [&](size_t i) { return op.shape == kBlocksV ? send.counts[i] : send.count; };
  const auto from = [&](size_t i) {
    return static_cast<const char*>(send.buf) + (one_block ? 0 : send.at(i) * extent);
  };
  int64_t pos = header_;
  // Block i at pos (its offset), or -1 where it does not fit.
  const auto place = [&](size_t i) -> int64_t {
    const int64_t bytes = size * count(i);
    if (pos + bytes > area_) return -1;
    if (copy) {
      std::memcpy(buf + pos, from(i), static_cast<size_t>(bytes));
    } else {
      int at = 0;
      const NonNullView v(from(i), send.type);
      PMPI_Pack(v.buf(), count(i), v.type(), buf + pos, static_cast<int>(area_ - pos), &at, dup_);
    }
    const int64_t at = pos;
    pos += (bytes + 7) / 8 * 8;
    return at;
  };
  const int64_t shared = one_block && !in_place ? place(0) : -1;  // allgather(v): the one block
  for (size_t i = 0; i < nd; ++i) {
    int64_t* slot = h + 2 + 2 * i;
    slot[1] = in_place ? -1 : size * count(i);
    slot[0] = -1;
    if (in_place || dst_[i] == MPI_PROC_NULL) continue;
    if (one_block) slot[0] = shared;
    else if (slot[1] > edge_max_) continue;  // sent at start()
    else slot[0] = place(i);
    if (slot[0] < 0) {
      op.reqs.emplace_back();
      PMPI_Isend(from(i), count(i), send.type, dst_[i], tag(op.call, static_cast<int64_t>(i), false), dup_,
                 &op.reqs.back());
    }
  }
  channel_.publish(e);
  published_ = e;
  op.write = 0;
}

void NodeExchange::read(Op& op, size_t w, uint64_t e) {
  const Side& recv = op.recv;
  const bool copy = op.recv_type.dense;
  const MPI_Aint extent = op.recv_type.extent;
  const int64_t size = op.recv_type.size;
  const char* buf = channel_.data(w, e);
  const auto* h = reinterpret_cast<const int64_t*>(buf);
  if (h[0] != static_cast<int64_t>(op.call)) op.mismatch = true;  // a peer skipped or added a call
  for (size_t s = 0; s < src_.size(); ++s) {
    if (writer_of_[s] != static_cast<int>(w)) continue;
    const int i = pair_[s];
    if (i < 0 || i >= h[1]) {
      op.mismatch = true;
      continue;
    }
    const int64_t off = h[2 + 2 * i], bytes = h[3 + 2 * i], want = size * recv.n(s);
    char* to = static_cast<char*>(const_cast<void*>(recv.buf)) + recv.at(s) * extent;  // (the receive side)
    if (bytes != want) op.mismatch = true;
    if (!op.posted.empty() && op.posted[s] >= 0) {  // its receive posted at start
      if (off < 0 && bytes > edge_max_) continue;  // (one of another size: received there, truncated if larger)
      // Erroneous: the writer sends no such message; the receive withdrawn (cancel, then
      // wait: local for an unmatched receive; freed unfinished it went on matching in Open
      // MPI 4.1), and a block the writer sends otherwise received below.
      MPI_Request& r = op.reqs[static_cast<size_t>(op.posted[s])];
      if (r != MPI_REQUEST_NULL) {  // (null: another message matched it, an error in its status)
        PMPI_Cancel(&r);
        PMPI_Wait(&r, MPI_STATUS_IGNORE);
      }
    }
    if (bytes <= 0) continue;
    if (off >= 0) {
      if (copy) {  // (an erroneous size: the part that fits, as MPI delivers before its error)
        std::memcpy(to, buf + off, static_cast<size_t>(std::min(bytes, want)));
      } else if (bytes == want) {
        int at = 0;
        const NonNullView v(to, recv.type);
        PMPI_Unpack(buf + off, static_cast<int>(bytes), &at, v.buf(), recv.n(s), v.type(), dup_);
      }
    } else if (bytes == want) {
      op.reqs.emplace_back();
      PMPI_Irecv(to, recv.n(s), recv.type, src_[s], tag(op.call, i, false), dup_, &op.reqs.back());
    } else {  // an erroneous size: received whole (so nothing is left in flight), not delivered
      op.spill.emplace_back(static_cast<size_t>(bytes));
      op.reqs.emplace_back();
      PMPI_Irecv(op.spill.back().data(), static_cast<int>(bytes), MPI_BYTE, src_[s],
                 tag(op.call, i, bytes > edge_max_ && op.shape != kOneBlock), dup_, &op.reqs.back());
    }
  }
  channel_.done(w, e);
  consumed_[w] = e;
}

}  // namespace sparsecomm::detail
#endif  // SPARSECOMM_SMPI
