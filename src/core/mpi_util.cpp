#include "sparsecomm/core/mpi_util.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#ifdef SPARSECOMM_HAVE_MPI_EXT_H
#include <mpi-ext.h>  // Open MPI 4.1: MPIX_Allreduce_init (persistent collectives)
#endif

namespace sparsecomm {

namespace {
uint64_t fnv1a(uint64_t h, const std::string& v) {
  for (unsigned char c : v) h = (h ^ c) * 1099511628211ULL;
  return (h ^ 0x1fu) * 1099511628211ULL;  // (each value ended by a unit separator)
}
constexpr uint64_t kFnvBasis = 14695981039346656037ULL;
}  // namespace

int64_t settings_hash(const std::vector<NamedValue>& settings) {
  uint64_t h = kFnvBasis;
  for (const NamedValue& s : settings) h = fnv1a(h, s.value);
  return static_cast<int64_t>(h >> 2);
}

std::string differing_settings(MPI_Comm comm, const std::vector<NamedValue>& settings) {
  std::vector<long long> mine, most(2 * settings.size());
  for (const NamedValue& s : settings) {
    const long long h = static_cast<long long>(fnv1a(kFnvBasis, s.value) >> 2);
    mine.push_back(h), mine.push_back(-h);
  }
  if (!settings.empty())
    SPC_MPI(MPI_Allreduce(mine.data(), most.data(), static_cast<int>(mine.size()), MPI_LONG_LONG, MPI_MAX, comm));
  std::string list;
  for (size_t i = 0; i < settings.size(); ++i)
    if (most[2 * i] != -most[2 * i + 1])
      list += (list.empty() ? "" : ", ") + settings[i].name + " is '" + settings[i].value + "' here";
  return list;
}

namespace {
struct HeldComm {
  MPI_Comm comm;
  std::thread::id owner;
  int depth;
};
std::mutex held_mutex;
std::vector<HeldComm>& held() {
  static std::vector<HeldComm> h;
  return h;
}
}  // namespace

CommExclusive::CommExclusive(MPI_Comm comm, const char* call) : comm_(comm) {
  const std::lock_guard<std::mutex> lock(held_mutex);
  for (HeldComm& h : held())
    if (h.comm == comm) {
      if (h.owner == std::this_thread::get_id()) {
        ++h.depth;
        return;
      }
      throw InputError(std::string(call) +
                       ": another thread of this process is in a collective sparsecomm call on the same "
                       "communicator; MPI allows one thread at a time to make collective calls on a "
                       "communicator (in the same order on every rank): not supported. Give each thread "
                       "its own communicator (MPI_Comm_dup) or make the calls one after the other");
    }
  held().push_back({comm, std::this_thread::get_id(), 1});
}

CommExclusive::~CommExclusive() {
  const std::lock_guard<std::mutex> lock(held_mutex);
  auto& h = held();
  for (size_t i = 0; i < h.size(); ++i)
    if (h[i].comm == comm_) {
      if (--h[i].depth == 0) h.erase(h.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
}

std::string settings_differ(MPI_Comm comm, const std::vector<NamedValue>& settings, const std::string& where_set) {
  return "settings differ between ranks: " + differing_settings(comm, settings) +
         ", not on every rank; these must be the same on every rank (" + where_set + ")";
}

void agree_settings(MPI_Comm comm, const std::string& local_error, const std::vector<NamedValue>& settings,
                    const std::string& where_set, const std::vector<NamedValue>* compared) {
  const long long h = settings_hash(compared ? *compared : settings);
  const long long mine[3] = {local_error.empty() ? 0 : 1, h, -h};
  long long most[3] = {0, 0, 0};
  SPC_MPI(MPI_Allreduce(mine, most, 3, MPI_LONG_LONG, MPI_MAX, comm));
  if (most[0] != 0) agree(comm, local_error);
  if (most[1] != -most[2]) throw InputError(settings_differ(comm, settings, where_set));
}

int comm_rank(MPI_Comm comm) {
  int r = 0;
  SPC_MPI(MPI_Comm_rank(comm, &r));
  return r;
}

int comm_size(MPI_Comm comm) {
  int s = 0;
  SPC_MPI(MPI_Comm_size(comm, &s));
  return s;
}

void wait_all(int n, MPI_Request* reqs, MPI_Status* st) {
  if (n <= 0) return;
#ifdef SPARSECOMM_SMPI
  for (int i = 0; i < n; ++i)
    SPC_MPI(MPI_Wait(&reqs[i], st == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &st[i]));
#else
  SPC_MPI(MPI_Waitall(n, reqs, st));
#endif
}

Comm::Comm(MPI_Comm parent) {
  SPC_MPI(MPI_Comm_dup(parent, &comm_));
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

Comm Comm::adopt(MPI_Comm owned) {
  Comm c;
  c.comm_ = owned;
  if (owned != MPI_COMM_NULL) {
    MPI_Comm_set_errhandler(owned, MPI_ERRORS_RETURN);
    MPI_Comm_rank(owned, &c.rank_);
    MPI_Comm_size(owned, &c.size_);
  }
  return c;
}

bool mpi_finalized() noexcept {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

void Comm::reset() noexcept {
  if (comm_ != MPI_COMM_NULL && !mpi_finalized()) MPI_Comm_free(&comm_);
  comm_ = MPI_COMM_NULL;
}

Comm::~Comm() { reset(); }

Comm::Comm(Comm&& o) noexcept : comm_(o.comm_), rank_(o.rank_), size_(o.size_) { o.comm_ = MPI_COMM_NULL; }

Comm& Comm::operator=(Comm&& o) noexcept {
  if (this != &o) {
    reset();
    comm_ = o.comm_;
    rank_ = o.rank_;
    size_ = o.size_;
    o.comm_ = MPI_COMM_NULL;
  }
  return *this;
}

void allreduce_max_u64(MPI_Comm comm, uint64_t* values, int n) {
  constexpr uint64_t kTop = uint64_t{1} << 63;
  std::vector<int64_t> flipped(static_cast<size_t>(std::max(n, 0)));
  for (int i = 0; i < n; ++i) flipped[static_cast<size_t>(i)] = static_cast<int64_t>(values[i] ^ kTop);
  SPC_MPI(MPI_Allreduce(MPI_IN_PLACE, flipped.data(), n, MPI_INT64_T, MPI_MAX, comm));
  for (int i = 0; i < n; ++i) values[i] = static_cast<uint64_t>(flipped[static_cast<size_t>(i)]) ^ kTop;
}

namespace {
// One value reduced with `op` over `comm`.
template <class T>
T allreduce_one(MPI_Comm comm, T v, MPI_Datatype type, MPI_Op op) {
  T r = 0;
  SPC_MPI(MPI_Allreduce(&v, &r, 1, type, op, comm));
  return r;
}
}  // namespace

double allreduce_max(MPI_Comm comm, double v) { return allreduce_one(comm, v, MPI_DOUBLE, MPI_MAX); }
int64_t allreduce_max(MPI_Comm comm, int64_t v) { return allreduce_one(comm, v, MPI_INT64_T, MPI_MAX); }
int64_t allreduce_sum(MPI_Comm comm, int64_t v) { return allreduce_one(comm, v, MPI_INT64_T, MPI_SUM); }
int64_t allreduce_min(MPI_Comm comm, int64_t v) { return allreduce_one(comm, v, MPI_INT64_T, MPI_MIN); }

namespace {
void max_sum_op(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const MaxSum*>(in);
  auto* b = static_cast<MaxSum*>(inout);
  for (int k = 0; k < *len; ++k)
    for (int i = 0; i < 4; ++i) {
      b[k].max[i] = std::max(a[k].max[i], b[k].max[i]);
      b[k].sum[i] += a[k].sum[i];
    }
}
}  // namespace

namespace {
struct LibraryComm {  // comm_attached: dropped with the communicator it duplicates
  std::shared_ptr<const Comm> dup;  // shared with what outlives it (persistent requests)
  uint64_t calls = 0;               // library_comm_shared(comm, sequence) calls so far
};

// Collective on the first call per communicator: its LibraryComm, duplicate made.
LibraryComm& library_state(MPI_Comm comm) {
  LibraryComm& l = comm_attached<LibraryComm>(comm);
  if (!l.dup) l.dup = std::make_shared<const Comm>(comm);
  return l;
}
}  // namespace

MPI_Comm library_comm(MPI_Comm comm) { return library_state(comm).dup->get(); }

std::shared_ptr<const Comm> library_comm_shared(MPI_Comm comm, uint64_t& sequence) {
  LibraryComm& l = library_state(comm);
  sequence = l.calls++;
  return l.dup;
}

int library_request_tag(uint64_t sequence) {
  static const int ub = [] {
    void* v = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &found);
    return found ? *static_cast<int*>(v) : 32767;  // (32767: the least MPI_TAG_UB the standard allows)
  }();
  return kLibraryRequestTagFirst +
         static_cast<int>(sequence % static_cast<uint64_t>(ub - kLibraryRequestTagFirst + 1));
}

namespace {
// The MaxSum datatype and operation: created once per process, after MPI_Init (the first
// call), kept until MPI_Finalize.
MPI_Datatype max_sum_type() {
  static_assert(sizeof(MaxSum) == 8 * sizeof(uint64_t), "MaxSum: 8 uint64, no padding");
  static MPI_Datatype type = [] {
    MPI_Datatype t;
    SPC_MPI(MPI_Type_contiguous(8, MPI_UINT64_T, &t));
    SPC_MPI(MPI_Type_commit(&t));
    return t;
  }();
  return type;
}
MPI_Op max_sum() {
  static MPI_Op op = [] {
    MPI_Op o;
    SPC_MPI(MPI_Op_create(max_sum_op, 1, &o));
    return o;
  }();
  return op;
}
}  // namespace

MaxSum allreduce_max_sum(MPI_Comm comm, const MaxSum& mine) {
  MaxSum out;
  SPC_MPI(MPI_Allreduce(&mine, &out, 1, max_sum_type(), max_sum(), comm));
  return out;
}

bool allreduce_max_sum_init(MPI_Comm comm, const MaxSum* mine, MaxSum* out, MPI_Request* req) {
#if defined(SPARSECOMM_SMPI)
  (void)comm, (void)mine, (void)out, (void)req;
  return false;
#elif MPI_VERSION >= 4
  SPC_MPI(MPI_Allreduce_init(mine, out, 1, max_sum_type(), max_sum(), comm, MPI_INFO_NULL, req));
  return true;
#elif defined(SPARSECOMM_HAVE_MPIX_ALLREDUCE_INIT)
  SPC_MPI(MPIX_Allreduce_init(mine, out, 1, max_sum_type(), max_sum(), comm, MPI_INFO_NULL, req));
  return true;
#else
  (void)comm, (void)mine, (void)out, (void)req;
  return false;
#endif
}

void iallreduce_max_sum(MPI_Comm comm, const MaxSum* mine, MaxSum* out, MPI_Request* req) {
#ifdef SPARSECOMM_SMPI
  // SMPI: no non-blocking reduction here; the blocking one completes it now and the
  // request is null, so the caller's later wait returns at once (its cost moves from the
  // wait to this call).
  *out = allreduce_max_sum(comm, *mine);
  *req = MPI_REQUEST_NULL;
#else
  SPC_MPI(MPI_Iallreduce(mine, out, 1, max_sum_type(), max_sum(), comm, req));
#endif
}

NonblockingBarrier::NonblockingBarrier(MPI_Comm comm, int tag, int flag)
    : comm_(comm), tag_(tag), mine_(flag), acc_(flag) {
#ifdef SPARSECOMM_SMPI
  p_ = comm_size(comm), me_ = comm_rank(comm);
#endif
  post();
}

void NonblockingBarrier::post() {
#ifdef SPARSECOMM_SMPI
  if (dist_ >= p_) {
    done_ = true;
    return;
  }
  out_ = acc_;
  SPC_MPI(MPI_Irecv(&in_, 1, MPI_INT, ((me_ - dist_) % p_ + p_) % p_, tag_, comm_, &req_[0]));
  SPC_MPI(MPI_Isend(&out_, 1, MPI_INT, (me_ + dist_) % p_, tag_, comm_, &req_[1]));
#else
  SPC_MPI(MPI_Iallreduce(&mine_, &acc_, 1, MPI_INT, MPI_MAX, comm_, &req_[0]));
#endif
}

bool NonblockingBarrier::advance() {
#ifdef SPARSECOMM_SMPI
  acc_ = std::max(acc_, in_);
  dist_ *= 2;
  post();
#else
  done_ = true;
#endif
  return done_;
}

bool NonblockingBarrier::test() {
  while (!done_) {
    int flag = 0;
    SPC_MPI(MPI_Testall(2, req_, &flag, MPI_STATUSES_IGNORE));
    if (!flag) return false;
    advance();
  }
  return true;
}

bool NonblockingBarrier::wait_with(MPI_Request& other, MPI_Status* st) {
  while (!done_) {
    MPI_Request all[3] = {other, req_[0], req_[1]};
    int idx = MPI_UNDEFINED;
    MPI_Status s;
    SPC_MPI(MPI_Waitany(3, all, &idx, &s));
    other = all[0], req_[0] = all[1], req_[1] = all[2];
    if (idx == 0) {
      if (st) *st = s;
      return true;
    }
    if (req_[0] == MPI_REQUEST_NULL && req_[1] == MPI_REQUEST_NULL) advance();
  }
  return false;
}

RequestPool::~RequestPool() {
  if (left_ == 0) return;
  try {
    wait();
  } catch (const std::exception& e) {
    // A destructor must not throw: report, as a Plan destroyed mid-exchange does.
    std::fprintf(stderr, "sparsecomm: RequestPool destroyed with %zu requests pending; completing them failed: %s\n",
                 left_, e.what());
  }
}

RequestPool::RequestPool(RequestPool&& o) noexcept
    : reqs_(std::move(o.reqs_)), st_(std::move(o.st_)), left_(o.left_) {
  o.reqs_.clear(), o.st_.clear(), o.left_ = 0;
}

RequestPool& RequestPool::operator=(RequestPool&& o) noexcept {
  if (this != &o) {
    if (left_ > 0) {
      try {
        wait();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "sparsecomm: RequestPool replaced with requests pending; completing them failed: %s\n",
                     e.what());
      }
    }
    reqs_ = std::move(o.reqs_), st_ = std::move(o.st_), left_ = o.left_;
    o.reqs_.clear(), o.st_.clear(), o.left_ = 0;
  }
  return *this;
}

MPI_Request* RequestPool::add() {
  reqs_.push_back(MPI_REQUEST_NULL);
  st_.emplace_back();
  ++left_;
  return &reqs_.back();
}

void RequestPool::take(int n) {
  if (n == MPI_UNDEFINED) n = 0;  // no active request (cannot happen while left_ > 0)
  for (int i = 0; i < n; ++i) st_[static_cast<size_t>(idx_[i])] = tmp_[i];
  left_ -= static_cast<size_t>(n);
}

bool RequestPool::test() {
  if (left_ == 0) return true;
  int n = 0;
  idx_.resize(reqs_.size());
  tmp_.resize(reqs_.size());
  SPC_MPI(MPI_Testsome(static_cast<int>(reqs_.size()), reqs_.data(), &n, idx_.data(), tmp_.data()));
  take(n);
  return left_ == 0;
}

void RequestPool::wait() {
  for (size_t i = 0; i < reqs_.size() && left_ > 0; ++i)
    if (reqs_[i] != MPI_REQUEST_NULL) {
      SPC_MPI(MPI_Wait(&reqs_[i], &st_[i]));
      --left_;
    }
}

void RequestPool::wait_some() {
  if (left_ == 0) return;
  int n = 0;
  idx_.resize(reqs_.size());
  tmp_.resize(reqs_.size());
  SPC_MPI(MPI_Waitsome(static_cast<int>(reqs_.size()), reqs_.data(), &n, idx_.data(), tmp_.data()));
  take(n);
}

void RequestPool::reset() {
  wait();
  reqs_.clear(), st_.clear(), left_ = 0;
}

int RequestPool::count(size_t i, MPI_Datatype type) const {
  int n = 0;
  SPC_MPI(MPI_Get_count(&st_[i], type, &n));
  return n;
}

}  // namespace sparsecomm
