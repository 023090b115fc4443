// The C API (include/sparsecomm.h) on the C++ library.
//
// Every entry point is a thin extern "C" shell around guarded(): no exception crosses the
// C boundary. Collective calls validate their arguments in three steps, each ending in an
// agreement so that bad input on one rank is an error on every rank and nobody hangs:
//   1. local checks (pointers, counts, ranks, datatypes, names, info keys), agreed;
//   2. one allreduce comparing the options (hash of their canonical form) and the
//      neighbor lists (sum of a hash of every edge, from both of its ends);
//   3. for the neighborhood alltoallv, one setup message per edge that tells the receiver
//      the sender's counts (and the ids of the values): every backend then delivers the
//      same result, and a count mismatch is an error instead of a truncation.
// Then the C++ layer (Sdde, make_plan, make_gather_plan) does the work; its own errors
// are agreed there. The neighborhood alltoallv with backend p2p skips step 3 and the plan:
// its steps 1 and 2 go into one non-blocking reduction that the first start completes
// (Agreement below; docs/architecture.md, "Deferred agreement").
#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <string_view>

#include "core/hash.hpp"
#include "core/parse.hpp"
#include "capi_internal.hpp"
#include "sparsecomm/comm/messages.hpp"

namespace sparsecomm::capi {
namespace {
constexpr const char* kTagOpen = "[[spc:";
// A message carrying its C error code ("[[spc:N]] text"): what fail() throws, and what
// agreements pass between ranks; classify() takes the code back out.
std::string coded(int code, const std::string& message) {
  return std::string(kTagOpen) + std::to_string(code) + "]] " + message;
}
const char* const kListsMismatch =
    "inconsistent neighbor lists: some rank lists a destination that does not list it as a source "
    "(or lists it a different number of times)";
}  // namespace

class Agreement;
class AgreementSlots;
// One persistent reduction of AgreementSlots (below).
struct AgreementSlot {
  MaxSum in, out;
  MPI_Request req = MPI_REQUEST_NULL;
  Agreement* owner = nullptr;  // whose reduction it runs, until completed
};

// The agreement of a neighborhood alltoallv init, posted without waiting
// (docs/architecture.md, "Deferred agreement"). Every rank posts one non-blocking
// reduction (iallreduce_max_sum) on the communicator's library duplicate: the lowest rank
// that failed its local checks, the hash of the options (max of h and of ~h), and the sums
// of the edge hashes from both ends (neighbor lists; and per edge its count and ids). A
// rank that failed, or takes a path that needs agreement before going on, settles at once;
// a rank on the direct path settles at its first start (or at free). Settling a failure
// hands the lowest failing rank's coded message to every rank (that rank sends it to each
// of the others, on the request's tag), so every rank reports the same error: the failing
// ranks at init, the others at the first SPC_Start (or at SPC_Request_free). Nobody waits
// in a collective that another rank has left: each rank posts the reduction exactly once,
// whatever path it takes. From a communicator's fifth init on, the reduction is one of four
// persistent ones kept per library duplicate (AgreementSlots), started instead of posted
// anew: an MPI_Start costs a fifth of building an MPI_Iallreduce's schedule each time.
class Agreement {
 public:
  struct Local {
    std::string error;  // "" or this rank's coded message ("[[spc:N]] text")
    uint64_t options = 0;
    uint64_t lists_out = 0, lists_in = 0;  // edge hashes of the neighbor lists
    uint64_t exact_out = 0, exact_in = 0;  // ... with each edge's count and ids (direct path)
  };
  // `slots` (may be null): the library duplicate's persistent reductions; `sequence`: this
  // init's number on the communicator (alike on every rank).
  Agreement(MPI_Comm lib, int tag, Local mine, std::shared_ptr<AgreementSlots> slots, uint64_t sequence);
  Agreement(const Agreement&) = delete;
  Agreement& operator=(const Agreement&) = delete;
  ~Agreement() {
    if (settled_) return;
    try {  // never leave the reduction (or a message for this rank) behind
      settle();
    } catch (...) {
    }
  }
  // Completes the agreement (blocking, once); throws the agreed error, again at every later
  // call once it failed. The exact sums (counts and ids per edge) are 0 on both sides where
  // no rank takes the direct path, so comparing them always is right; where ranks disagree
  // on the path (the environment differs), the sums differ and every rank fails instead of
  // the others waiting for setup messages.
  void settle();
  // The result, when AgreementSlots completes this agreement's reduction to reuse its slot.
  void take(const MaxSum& all) {
    all_ = all;
    slot_ = nullptr;
  }

 private:
  // The agreed outcome, from the reduction's result.
  void judge() {
    if (all_.max[0] != 0) {
      error_ = lowest_failure(p_ - static_cast<int>(all_.max[0]));
    } else if (all_.max[1] != h_ || all_.max[2] != ~h_) {  // alike everywhere, see make_plan
      error_ = coded(SPC_ERR_MISMATCH,
                     "ranks passed different sparsecomm_* options (backend, regions, SDDE, ...) or datatype sizes");
    } else if (all_.sum[0] != all_.sum[1]) {
      error_ = coded(SPC_ERR_MISMATCH, kListsMismatch);
    } else if (all_.sum[2] != all_.sum[3]) {
      error_ = coded(SPC_ERR_MISMATCH,
                     "inconsistent counts: on some edge the sender's sendcounts differ from the receiver's recvcounts "
                     "(or, _ext, the global ids sent differ from those expected, in value or order); "
                     "SPARSECOMM_CHECK_COLLECTIVE_ARGS=1 names the edge");
    }
  }

  // The lowest failing rank's message, on every rank.
  std::string lowest_failure(int lowest) {
    if (me_ == lowest) {
      std::vector<MPI_Request> reqs(static_cast<size_t>(p_ - 1), MPI_REQUEST_NULL);
      for (int r = 0, k = 0; r < p_; ++r)
        if (r != me_)
          SPC_MPI(MPI_Isend(error_.data(), static_cast<int>(error_.size()), MPI_CHAR, r, tag_, lib_,
                            &reqs[static_cast<size_t>(k++)]));
      wait_all(reqs);
      return error_;
    }
    MPI_Status st;
    SPC_MPI(MPI_Probe(lowest, tag_, lib_, &st));
    int n = 0;
    SPC_MPI(MPI_Get_count(&st, MPI_CHAR, &n));
    std::string m(static_cast<size_t>(n), '\0');
    SPC_MPI(MPI_Recv(m.data(), n, MPI_CHAR, lowest, tag_, lib_, MPI_STATUS_IGNORE));
    return m;
  }

  MPI_Comm lib_;
  int tag_, me_ = 0, p_ = 1;
  uint64_t h_ = 0;
  std::string error_;
  MaxSum mine_, all_;
  MPI_Request req_ = MPI_REQUEST_NULL;  // the MPI_Iallreduce, where no slot is used
  std::shared_ptr<AgreementSlots> slots_;
  AgreementSlot* slot_ = nullptr;  // the persistent reduction, until it completes
  bool settled_ = false;
};

// The persistent reductions of a library duplicate's agreements: kSlots persistent
// allreduces (allreduce_max_sum_init), used by the inits numbered kFirst and later, init k
// on slot k % kSlots. Every rank makes the same inits in the same order (they are
// collective), so every rank starts slot s for the same agreement, and each slot's
// persistent collective is started in the same order everywhere. A slot still running for
// agreement k - kSlots (its request not started yet, so not settled) is completed first and
// its result handed to that agreement (take): that wait ends once every rank has made init
// k - kSlots, which each did before its init k. Created on first use on the communicator
// (local); each slot's persistent request is made (collectively) at its first use. Where
// the MPI has no persistent collectives, every agreement posts its MPI_Iallreduce.
class AgreementSlots {
 public:
  static constexpr uint64_t kFirst = 4;  // a communicator's first inits: MPI_Iallreduce, no slot made
  static constexpr size_t kSlots = 4;
  using Slot = AgreementSlot;
  explicit AgreementSlots(std::shared_ptr<const Comm> lib) : lib_(std::move(lib)) {}
  AgreementSlots(const AgreementSlots&) = delete;
  AgreementSlots& operator=(const AgreementSlots&) = delete;
  ~AgreementSlots() {  // every agreement holds this: none is running when it goes
    for (Slot& sl : slots_)
      if (sl.req != MPI_REQUEST_NULL) MPI_Request_free(&sl.req);
  }
  // Starts agreement `owner`'s reduction of `mine` on its slot, or returns null (an early
  // init, or no persistent collectives): then the agreement posts its own.
  Slot* start(uint64_t sequence, Agreement* owner, const MaxSum& mine) {
    if (sequence < kFirst || !available_) return nullptr;
    Slot& sl = slots_[sequence % kSlots];
    if (sl.req == MPI_REQUEST_NULL) {
      if (!allreduce_max_sum_init(lib_->get(), &sl.in, &sl.out, &sl.req)) {
        available_ = false;  // alike on every rank: a property of the MPI
        return nullptr;
      }
    } else if (sl.owner) {
      SPC_MPI(MPI_Wait(&sl.req, MPI_STATUS_IGNORE));  // persistent: stays, inactive
      sl.owner->take(sl.out);
      sl.owner = nullptr;
    }
    sl.in = mine;
    SPC_MPI(MPI_Start(&sl.req));
    sl.owner = owner;
    return &sl;
  }
  // Completes the slot's reduction for its owner.
  void finish(Slot* sl, MaxSum* all) {
    SPC_MPI(MPI_Wait(&sl->req, MPI_STATUS_IGNORE));
    *all = sl->out;
    sl->owner = nullptr;
  }

 private:
  std::shared_ptr<const Comm> lib_;  // outlives the requests made on it
  Slot slots_[kSlots];
  bool available_ = true;
};

Agreement::Agreement(MPI_Comm lib, int tag, Local mine, std::shared_ptr<AgreementSlots> slots, uint64_t sequence)
    : lib_(lib), tag_(tag), error_(std::move(mine.error)) {
  me_ = comm_rank(lib), p_ = comm_size(lib);
  h_ = mine.options;
  mine_.max[0] = error_.empty() ? 0 : static_cast<uint64_t>(p_ - me_);  // max: the lowest failing rank
  mine_.max[1] = h_, mine_.max[2] = ~h_;
  mine_.sum[0] = mine.lists_out, mine_.sum[1] = mine.lists_in;
  mine_.sum[2] = mine.exact_out, mine_.sum[3] = mine.exact_in;
  if (slots && (slot_ = slots->start(sequence, this, mine_)) != nullptr) slots_ = std::move(slots);
  else iallreduce_max_sum(lib_, &mine_, &all_, &req_);
}

void Agreement::settle() {
  if (!settled_) {
    settled_ = true;
    if (slot_) {
      slots_->finish(slot_, &all_);
      slot_ = nullptr;
    } else {
      SPC_MPI(MPI_Wait(&req_, MPI_STATUS_IGNORE));  // (MPI_REQUEST_NULL once a slot's result was taken)
    }
    judge();
  }
  if (!error_.empty()) throw InputError(error_);
}

}  // namespace sparsecomm::capi

// The object behind SPC_Request (declared in sparsecomm.h, global namespace).
struct SPC_Request_s {
  // The direct path's communicator (declared first: it outlives the messages and the
  // agreement that use it), kept alive after the program frees its own.
  std::shared_ptr<const sparsecomm::Comm> lib;
  bool gather = false;
  // The direct path of the neighborhood alltoallv (backend p2p): one message per edge
  // straight between the caller's buffers, on the communicator's library duplicate with
  // this request's own tag; its agreement settles at the first start.
  std::unique_ptr<sparsecomm::Messages> direct_msgs;
  std::unique_ptr<sparsecomm::capi::Agreement> agreement;
  std::unique_ptr<sparsecomm::Plan> plan;          // alltoallv-shaped
  std::unique_ptr<sparsecomm::GatherPlan> gplan;   // allgather-shaped
  const void* sendbuf = nullptr;
  void* recvbuf = nullptr;
  int64_t esz = 0;  // bytes per element of the user's datatype
  int unit = 1;     // bytes per Plan value: esz = unit * plan width
  // Local copies (self-loops, and for gathers the received blocks to their places):
  // `n` bytes from sendbuf (from_send) or the staging buffer, at byte offsets.
  struct Copy {
    int64_t from, to, bytes;
    bool from_send;
  };
  std::vector<Copy> copies;
  bool direct = false;                // gather: the plan's layout is the user's: no staging
  std::vector<unsigned char> staging;
  bool active = false;
};

namespace sparsecomm {
namespace capi {
namespace {

constexpr int kTagSetup = 77;

thread_local int tl_code = SPC_SUCCESS;
thread_local std::string tl_message;

// "... [[spc:N]] text ..." -> N and the text without the tag.
bool untag(const std::string& what, int& code, std::string& text) {
  const size_t pos = what.find(kTagOpen);
  if (pos == std::string::npos) return false;
  const size_t num = pos + std::strlen(kTagOpen);
  const size_t end = what.find("]]", num);
  if (end == std::string::npos) return false;
  int64_t v = 0;
  if (!parse_int(what.substr(num, end - num), v)) return false;
  code = static_cast<int>(v);
  size_t after = end + 2;
  if (after < what.size() && what[after] == ' ') ++after;
  text = what.substr(0, pos) + what.substr(after);
  return true;
}

int classify(const char* what, int fallback) {
  int code = fallback;
  std::string text;
  if (untag(what, code, text)) return record_error(code, text);
  return record_error(fallback, what);
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// FNV-1a over bytes fed piecewise: fnv(a + b) == Fnv().add(a).add(b).h.
struct Fnv {
  uint64_t h = 1469598103934665603ull;
  Fnv& add(std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return *this;
  }
  Fnv& add(int64_t v) {
    char buf[24];
    const int n = std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    return add(std::string_view(buf, static_cast<size_t>(n)));
  }
};

uint64_t fnv(const std::string& s) { return Fnv().add(s).h; }

using sparsecomm::detail::edge_hash;
using sparsecomm::detail::fmix64;

// Order-sensitive hash of a sequence of ids.
struct SeqHash {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  void add(int64_t v) { h = fmix64(h ^ fmix64(static_cast<uint64_t>(v) + 0x632be59bd9b4e019ull)) + 1; }
};

// agreed(body), then the check that every rank passed the same options (hash of
// `canonical`) and consistent neighbor lists (`out` / `in`: sums of edge hashes, 0 without
// lists), in ONE collective: the body's
// failure flag, the hash of the options and both edge-hash sums travel in one
// allreduce_max_sum; only when something is wrong do the ranks agree on the message (the
// failure path's own collectives). `canonical` is called after a successful body.
template <class Body, class Canonical>
void checked_and_cross_checked(MPI_Comm comm, Body&& body, Canonical&& canonical, const uint64_t& out,
                               const uint64_t& in) {
  std::string err;
  detail::ErrorKind kind = detail::ErrorKind::input;
  try {
    body();
  } catch (const NotImplementedError& e) {
    err = e.what(), kind = detail::ErrorKind::not_implemented;
  } catch (const InputError& e) {
    err = e.what();
  } catch (const std::exception& e) {
    err = e.what(), kind = detail::ErrorKind::generic;
  }
  const std::string canon = err.empty() ? canonical() : "";
  const uint64_t h = fnv(canon);
  MaxSum mine;
  mine.max[0] = err.empty() ? 0 : 1, mine.max[1] = h, mine.max[2] = ~h;
  mine.sum[0] = err.empty() ? out : 0, mine.sum[1] = err.empty() ? in : 0;
  const MaxSum all = allreduce_max_sum(comm, mine);
  if (all.max[0] != 0) {  // someone failed in the body: its message, everywhere (the others' checks moot)
    detail::agree_kind(comm, kind, err);
    return;
  }
  // Alike on every rank (see make_plan): options differ somewhere iff max(h) != h or
  // max(~h) != ~h here; the sums are the same everywhere.
  const bool differ = all.max[1] != h || all.max[2] != ~h, lists = all.sum[0] != all.sum[1];
  if (!differ && !lists) return;
  if (differ)
    err = coded(SPC_ERR_MISMATCH, "ranks passed different sparsecomm_* options or datatype sizes (rank " +
                                      std::to_string(comm_rank(comm)) + ": " + canon + ")");
  else
    err = coded(SPC_ERR_MISMATCH, kListsMismatch);
  agree(comm, err);
}

// Neighbors of a distributed graph communicator.
void graph_neighbors(MPI_Comm comm, std::vector<int>& sources, std::vector<int>& destinations) {
  int status = MPI_UNDEFINED;
  SPC_MPI(MPI_Topo_test(comm, &status));
  if (status != MPI_DIST_GRAPH)
    fail(MPI_ERR_TOPOLOGY,
         "the communicator is not a distributed graph communicator (MPI_Dist_graph_create_adjacent); "
         "use the _lists form for explicit neighbor lists");
  int indeg = 0, outdeg = 0, weighted = 0;
  SPC_MPI(MPI_Dist_graph_neighbors_count(comm, &indeg, &outdeg, &weighted));
  // Room for at least one entry each: MPI may write through the pointers even for degree 0.
  sources.resize(static_cast<size_t>(std::max(indeg, 1)));
  destinations.resize(static_cast<size_t>(std::max(outdeg, 1)));
  if (weighted) {
    std::vector<int> sw(sources.size()), dw(destinations.size());
    SPC_MPI(MPI_Dist_graph_neighbors(comm, indeg, sources.data(), sw.data(), outdeg, destinations.data(), dw.data()));
  } else {
    SPC_MPI(MPI_Dist_graph_neighbors(comm, indeg, sources.data(), MPI_UNWEIGHTED, outdeg, destinations.data(),
                                     MPI_UNWEIGHTED));
  }
  sources.resize(static_cast<size_t>(indeg));
  destinations.resize(static_cast<size_t>(outdeg));
}

// Neighbor lists from the graph or from the arguments, checked.
void neighbor_lists(MPI_Comm comm, bool from_graph, int indegree, const int* sources, int outdegree,
                    const int* destinations, std::vector<int>& srcs, std::vector<int>& dsts) {
  if (from_graph) {
    graph_neighbors(comm, srcs, dsts);
  } else {
    if (indegree < 0 || outdegree < 0) fail(SPC_ERR_ARG, "negative indegree or outdegree");
    if ((indegree > 0 && !sources) || (outdegree > 0 && !destinations))
      fail(SPC_ERR_ARG, "sources or destinations is NULL");
    srcs.assign(sources, sources + indegree);
    dsts.assign(destinations, destinations + outdegree);
  }
  const int p = comm_size(comm);
  for (int r : srcs)
    if (r < 0 || r >= p) fail(MPI_ERR_RANK, "source rank " + std::to_string(r) + " out of range [0, " + std::to_string(p) + ")");
  for (int r : dsts)
    if (r < 0 || r >= p)
      fail(MPI_ERR_RANK, "destination rank " + std::to_string(r) + " out of range [0, " + std::to_string(p) + ")");
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using CBuffer = std::unique_ptr<void, FreeDeleter>;

// malloc'd array (NULL for 0 bytes: MPI Advance's MPIL_Alloc convention).
CBuffer c_alloc(int64_t bytes) {
  if (bytes <= 0) return CBuffer(nullptr);
  void* p = std::malloc(static_cast<size_t>(bytes));
  if (!p) throw std::bad_alloc();
  return CBuffer(p);
}

}  // namespace

// Bytes of a contiguous datatype; MPI_ERR_TYPE for anything else.
int64_t contiguous_size(MPI_Datatype t, const char* what) {
  if (t == MPI_DATATYPE_NULL) fail(MPI_ERR_TYPE, std::string(what) + " is MPI_DATATYPE_NULL");
  int size = 0;
  MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
  SPC_MPI(MPI_Type_size(t, &size));
  SPC_MPI(MPI_Type_get_extent(t, &lb, &extent));
  SPC_MPI(MPI_Type_get_true_extent(t, &tlb, &textent));
  if (size <= 0) fail(MPI_ERR_TYPE, std::string(what) + " has size 0");
  if (lb != 0 || tlb != 0 || extent != size || textent != size)
    fail(MPI_ERR_TYPE, std::string(what) + " is not contiguous (size " + std::to_string(size) + ", extent " +
                           std::to_string(extent) + ", true extent " + std::to_string(textent) +
                           "); sparsecomm supports contiguous datatypes only");
  return size;
}

// Largest Plan value size (8, 4, 2 or 1 bytes) that divides the element size.
int unit_for(int64_t esz) {
  for (int u : {8, 4, 2})
    if (esz % u == 0) return u;
  return 1;
}

void check_names(const std::string& what, const std::string& name, const std::vector<std::string>& valid) {
  if (contains(valid, name)) return;
  // ("SDDE strategy": strategies, not "strategys")
  const std::string plural = !what.empty() && what.back() == 'y' ? what.substr(0, what.size() - 1) + "ies" : what + "s";
  fail(SPC_ERR_NOT_FOUND, "unknown " + what + " '" + name + "'; valid " + plural + ": " + join(valid));
}


// ---- errors -----------------------------------------------------------------------------

void fail(int code, const std::string& message) {
  throw InputError(coded(code, message));
}

int record_error(int code, const std::string& message) noexcept {
  try {
    tl_message = message;
  } catch (...) {
    tl_message.clear();
  }
  tl_code = code;
  return code;
}

int record_current_exception() noexcept {
  try {
    try {
      throw;
    } catch (const MpiError& e) {
      return classify(e.what(), e.code() == MPI_SUCCESS ? MPI_ERR_OTHER : e.code());
    } catch (const NotImplementedError& e) {
      return classify(e.what(), SPC_ERR_NOT_IMPLEMENTED);
    } catch (const InputError& e) {
      return classify(e.what(), SPC_ERR_ARG);
    } catch (const std::bad_alloc&) {
      return record_error(MPI_ERR_NO_MEM, "sparsecomm: out of memory");
    } catch (const std::exception& e) {
      return classify(e.what(), SPC_ERR_INTERNAL);
    } catch (...) {
      return record_error(SPC_ERR_INTERNAL, "sparsecomm: unknown exception");
    }
  } catch (...) {
    return SPC_ERR_INTERNAL;
  }
}

// ---- options ----------------------------------------------------------------------------

void Options::set(const std::string& key, const std::string& raw) {
  const std::string v = trim(raw);
  auto bad = [&](const std::string& why) { fail(SPC_ERR_INFO_VALUE, "info key " + key + ": '" + raw + "' " + why); };
  auto boolean = [&] {
    bool b = false;
    if (!parse_bool(v, b)) bad("is not a boolean (true/false, 1/0, yes/no, on/off)");
    return b;
  };
  if (key == "sparsecomm_backend") {
    if (v.empty()) bad("is empty");
    backend = v;
  } else if (key == "sparsecomm_sdde") {
    if (v.empty()) bad("is empty");
    sdde = v;
  } else if (key == "sparsecomm_regions") {
    if (v.empty()) bad("is empty");
    regions = v;
  } else if (key == "sparsecomm_persistent") {
    persistent = boolean();
  } else {
    // sparsecomm_<option>: an option some registered backend declares (BackendHooks::options;
    // "combined": k, theta, aware, rounds), checked against that declaration here and
    // against the chosen backend's when a call uses it. Each call keeps the options its
    // backend declares and ignores the others, as it ignores keys it does not use.
    const std::string name = key.substr(std::string("sparsecomm_").size());
    std::vector<OptionSpec> specs;
    for (const auto& b : backend_names())
      for (const auto& s : backend_hooks(b).options)
        if (!declares_option(specs, s.key)) specs.push_back(s);
    for (const auto& b : gather_backend_names())
      for (const auto& s : gather_backend_hooks(b).options)
        if (!declares_option(specs, s.key)) specs.push_back(s);
    auto spec = std::find_if(specs.begin(), specs.end(), [&](const OptionSpec& s) { return s.key == name; });
    if (spec == specs.end()) {
      std::string list = "sparsecomm_backend, sparsecomm_sdde, sparsecomm_regions, sparsecomm_persistent";
      for (const auto& s : specs)
        if (s.kind != OptionSpec::Kind::object) list += ", sparsecomm_" + s.key;
      fail(SPC_ERR_INFO_KEY, "unknown info key '" + key + "'; sparsecomm keys: " + list);
    }
    const std::string why = option_value_error(*spec, v);
    if (!why.empty()) fail(SPC_ERR_INFO_VALUE, "info key " + key + ": " + why);
    backend_opts.set(name, v);
  }
}

BackendOptions Options::backend_options_for(const std::vector<std::string>& names, const std::string& b,
                                            std::vector<OptionSpec> (*specs)(const std::string&)) const {
  // An unknown backend name keeps nothing: the plan's own collective check reports it.
  if (std::find(names.begin(), names.end(), b) == names.end()) return {};
  return backend_opts.only(specs(b));
}

void Options::apply(MPI_Info info) {
  if (info == MPI_INFO_NULL) return;
  int n = 0;
  SPC_MPI(MPI_Info_get_nkeys(info, &n));
  for (int i = 0; i < n; ++i) {
    char key[MPI_MAX_INFO_KEY + 1] = {0};
    SPC_MPI(MPI_Info_get_nthkey(info, i, key));
    const std::string k(key);
    if (k.rfind("sparsecomm_", 0) != 0) continue;  // not ours: ignored, as MPI does
    int len = 0, flag = 0;
    SPC_MPI(MPI_Info_get_valuelen(info, key, &len, &flag));
    if (!flag) continue;
    std::vector<char> value(static_cast<size_t>(len) + 1, 0);
    SPC_MPI(MPI_Info_get(info, key, len, value.data(), &flag));
    set(k, std::string(value.data()));
  }
}

// The canonical form of `o`, piece by piece to put(std::string_view): one description for
// canonical() (the pieces joined) and options_hash() (the pieces hashed as they come).
template <class Put>
void canonical_pieces(const Options& o, Put&& put) {
  put("backend="), put(o.backend), put("|sdde="), put(o.sdde), put("|regions="), put(o.regions);
  put("|persistent="), put(o.persistent ? "1" : "0"), put("|");
  if (!o.backend_opts.empty()) put(o.backend_opts.canonical());
}

std::string Options::canonical() const {
  std::string s;
  canonical_pieces(*this, [&](std::string_view piece) { s += piece; });
  return s;
}

// fnv(canonical() + shape + esz + suffix) without building the string (a persistent
// init's hot path): the same bytes, so the same hash.
uint64_t options_hash(const Options& o, std::string_view shape, int64_t esz, std::string_view suffix) {
  Fnv f;
  canonical_pieces(o, [&](std::string_view piece) { f.add(piece); });
  return f.add(shape).add(esz).add(suffix).h;
}

Options OptionSource::resolve() const {
  Options o = base;
  for (const auto& [k, v] : pairs) o.set(k, v);
  o.apply(info);
  return o;
}

Locality make_locality(MPI_Comm comm, const std::string& spec) {
  try {
    return Locality::parse(comm, spec);
  } catch (const InputError& e) {
    fail(SPC_ERR_INFO_VALUE, std::string("sparsecomm_regions: ") + e.what());
  }
}

// ---- SDDE (CRS shape) -------------------------------------------------------------------

// Collective on the first call per communicator and regions: the SDDE context of the plain
// SPC_ CRS calls, kept on the communicator (an MPI attribute, freed with it; not copied to
// duplicates), so a program that rediscovers its pattern every step pays the context's
// collectives (communicator duplicates, the region split) once, as MPIL_Comm callers do.
Sdde* comm_sdde(MPI_Comm comm, const std::string& regions) {
  auto& m = comm_attached<std::map<std::string, std::unique_ptr<Sdde>>>(comm);
  auto& sdde = m[regions];
  if (!sdde) sdde = std::make_unique<Sdde>(comm, make_locality(comm, regions));
  return sdde.get();
}

void crs_exchange(const CrsArgs& a, const OptionSource& os, MPI_Comm comm, Sdde* cached,
                  const std::string& cached_regions) {
  const CommExclusive exclusive(comm, a.fixed ? "SPC_Alltoall_crs" : "SPC_Alltoallv_crs");
  if (comm == MPI_COMM_NULL) fail(MPI_ERR_COMM, "the communicator is MPI_COMM_NULL");
  // Outputs are 0 / NULL unless the call succeeds.
  if (a.recv_nnz) *a.recv_nnz = 0;
  if (a.recv_size) *a.recv_size = 0;
  if (a.src) *a.src = nullptr;
  if (a.recvcounts) *a.recvcounts = nullptr;
  if (a.rdispls) *a.rdispls = nullptr;
  if (a.recvvals) *a.recvvals = nullptr;

  const int p = comm_size(comm);
  // 1. Collective arguments (options, strategy): the same on every rank by contract, so a
  //    bad one fails on every rank alike, here, without communication. Whether ranks really
  //    passed the same is checked (two allreduces) only when SPARSECOMM_CHECK_COLLECTIVE_ARGS
  //    is set (docs/architecture.md, "SDDE agreement").
  Options opt = os.resolve();
  if (opt.sdde.empty()) opt.sdde = "personalized";
  check_names("SDDE strategy", opt.sdde, Sdde::strategies());
  if (!a.fixed && Sdde::fixed_size_only(opt.sdde))
    fail(SPC_ERR_INFO_VALUE, "sparsecomm_sdde: strategy '" + opt.sdde +
                                 "' handles fixed-size messages only (use it with Alltoall_crs)");
  // 2. This rank's own arguments: a failure travels inside the exchange's own collectives
  //    (Sdde::exchange_into's caller_error) and every rank returns it; the success path
  //    adds no collective. The messages are sent from where they lie in sendvals.
  int64_t ssz = 0, rsz = 0, fixed_bytes = -1;
  detail::Outbox send;
  std::string err;
  try {
    if (!a.recv_nnz || !a.src || !a.recvvals || (!a.fixed && (!a.recv_size || !a.recvcounts || !a.rdispls)))
      fail(SPC_ERR_ARG, "an output pointer (recv_nnz, src, recvcounts, rdispls, recv_size, recvvals) is NULL");
    ssz = contiguous_size(a.sendtype, "sendtype");
    rsz = contiguous_size(a.recvtype, "recvtype");
    if (a.send_nnz < 0) fail(SPC_ERR_ARG, "send_nnz is negative");
    if (a.send_nnz > 0 && !a.dest) fail(SPC_ERR_ARG, "dest is NULL");
    std::vector<char> seen(static_cast<size_t>(p), 0);
    for (int i = 0; i < a.send_nnz; ++i) {
      const int d = a.dest[i];
      if (d < 0 || d >= p)
        fail(MPI_ERR_RANK, "dest[" + std::to_string(i) + "] = " + std::to_string(d) + " out of range [0, " +
                               std::to_string(p) + ")");
      if (seen[d]) fail(SPC_ERR_ARG, "two messages to rank " + std::to_string(d) + " (at most one per destination)");
      seen[d] = 1;
    }
    const char* vals = static_cast<const char*>(a.sendvals);
    send.reserve(static_cast<size_t>(a.send_nnz));
    auto add = [&](int dest, const char* from, int64_t bytes) { send.add(dest, from, bytes); };
    if (a.fixed) {
      if (a.sendcount < 0 || a.recvcount < 0) fail(MPI_ERR_COUNT, "sendcount or recvcount is negative");
      fixed_bytes = a.sendcount * ssz;
      if (a.recvcount * rsz != fixed_bytes)
        fail(SPC_ERR_ARG, "recvcount * size(recvtype) = " + std::to_string(a.recvcount * rsz) +
                              " bytes differs from sendcount * size(sendtype) = " + std::to_string(fixed_bytes));
      if (a.send_nnz > 0 && fixed_bytes > 0 && !vals) fail(MPI_ERR_BUFFER, "sendvals is NULL");
      for (int i = 0; i < a.send_nnz; ++i) add(a.dest[i], vals + i * fixed_bytes, fixed_bytes);
    } else {
      if (a.send_size < 0) fail(SPC_ERR_ARG, "send_size is negative");
      if (a.send_nnz > 0 && (!a.sendcounts || !a.sdispls)) fail(SPC_ERR_ARG, "sendcounts or sdispls is NULL");
      int64_t total = 0;
      for (int i = 0; i < a.send_nnz; ++i) {
        const int64_t c = a.sendcounts[i], d = a.sdispls[i];
        if (c < 0) fail(MPI_ERR_COUNT, "sendcounts[" + std::to_string(i) + "] is negative");
        if (d < 0 || d + c > a.send_size)
          fail(SPC_ERR_ARG, "message " + std::to_string(i) + " (sdispls " + std::to_string(d) + ", count " +
                                std::to_string(c) + ") lies outside [0, send_size = " + std::to_string(a.send_size) + ")");
        total += c;
      }
      if (total > 0 && !vals) fail(MPI_ERR_BUFFER, "sendvals is NULL");
      for (int i = 0; i < a.send_nnz; ++i) add(a.dest[i], vals + a.sdispls[i] * ssz, a.sendcounts[i] * ssz);
    }
  } catch (const std::exception& e) {
    err = e.what();
    send = detail::Outbox{};  // nothing is sent by a rank that failed
  }

  Sdde* sdde = (cached && cached_regions == opt.regions) ? cached : comm_sdde(comm, opt.regions);
  if (sdde->check_collective_args()) {  // opt-in: the options (and message size) everywhere the same
    const uint64_t no_lists = 0;
    checked_and_cross_checked(
        comm, [] {},
        [&] { return opt.canonical() + (a.fixed ? "|fixed bytes=" + std::to_string(fixed_bytes) : "|variable"); },
        no_lists, no_lists);
  }

  // 3. The exchange (raises a failed check of any rank on every rank), received straight
  //    into the output array the caller frees (ordered by source; the personalized
  //    strategy receives there directly, the others copy each message once).
  CBuffer vals;
  detail::Delivery got;
  got.allocate = [&vals](int64_t bytes) {
    vals = c_alloc(bytes);
    return static_cast<char*>(vals.get());
  };
  sdde->exchange_into(send, 1, a.fixed ? fixed_bytes : -1, opt.sdde, got, nullptr, err);

  // 4. Outputs (library-allocated). A failure here (out of memory; a message that is no
  //    whole number of recvtype elements, which only ranks that disagree on the datatypes
  //    produce) is this rank's alone: the exchange is over, nobody waits for it.
  const int64_t n = static_cast<int64_t>(got.ranks.size());
  if (a.fixed)
    for (int64_t i = 0; i < n; ++i) {
      const int64_t bytes = got.offsets[static_cast<size_t>(i) + 1] - got.offsets[static_cast<size_t>(i)];
      if (bytes != fixed_bytes)
        fail(SPC_ERR_MISMATCH, "rank " + std::to_string(got.ranks[static_cast<size_t>(i)]) + " sent a message of " +
                                   std::to_string(bytes) + " bytes, but this rank's recvcount x size(recvtype) is " +
                                   std::to_string(fixed_bytes) +
                                   " (ranks disagree on the message size; SPARSECOMM_CHECK_COLLECTIVE_ARGS=1 "
                                   "makes every rank report it)");
    }
  CBuffer src = c_alloc(n * static_cast<int64_t>(sizeof(int))), counts, displs;
  for (int64_t i = 0; i < n; ++i) static_cast<int*>(src.get())[i] = got.ranks[static_cast<size_t>(i)];
  int64_t total = 0;
  if (!a.fixed) {
    counts = c_alloc(n * static_cast<int64_t>(sizeof(int)));
    displs = c_alloc(n * static_cast<int64_t>(sizeof(int)));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t bytes = got.offsets[static_cast<size_t>(i) + 1] - got.offsets[static_cast<size_t>(i)];
      if (bytes % rsz != 0)
        fail(SPC_ERR_MISMATCH, "rank " + std::to_string(got.ranks[static_cast<size_t>(i)]) + " sent " +
                                   std::to_string(bytes) + " bytes, not a multiple of size(recvtype) = " +
                                   std::to_string(rsz));
      static_cast<int*>(counts.get())[i] = static_cast<int>(bytes / rsz);
      static_cast<int*>(displs.get())[i] = static_cast<int>(total);
      total += bytes / rsz;
      if (total > INT_MAX) fail(SPC_ERR_ARG, "more than 2^31 elements received");
    }
  }
  *a.recv_nnz = static_cast<int>(n);
  if (!a.fixed) {
    *a.recv_size = static_cast<int>(total);
    *a.recvcounts = static_cast<int*>(counts.release());
    *a.rdispls = static_cast<int*>(displs.release());
  }
  *a.src = static_cast<int*>(src.release());
  *a.recvvals = vals.release();
}

// ---- neighborhood alltoallv -------------------------------------------------------------

// The checks every neighborhood init starts with (run inside agreed()): the options with
// their defaults, valid names, the neighbor lists, equal element sizes of both datatypes.
template <class Args>
Options resolve_neighborhood(const Args& a, const OptionSource& os, MPI_Comm comm, SPC_Request* out,
                             const char* backend_kind, bool (*registered)(const std::string&),
                             std::vector<std::string> (*names)(), std::vector<int>& srcs, std::vector<int>& dsts,
                             int64_t& esz) {
  if (!out) fail(SPC_ERR_REQUEST, "request is NULL");
  Options opt = os.resolve();
  if (opt.backend.empty()) opt.backend = kDefaultBackend;
  if (opt.sdde.empty()) opt.sdde = "nbx";
  if (!registered(opt.backend)) check_names(backend_kind, opt.backend, names());  // the list: on failure only
  check_names("SDDE strategy", opt.sdde, Sdde::strategies());
  if (Sdde::fixed_size_only(opt.sdde))
    fail(SPC_ERR_INFO_VALUE, "sparsecomm_sdde: strategy '" + opt.sdde + "' handles fixed-size messages only");
  neighbor_lists(comm, a.from_graph, a.indegree, a.sources, a.outdegree, a.destinations, srcs, dsts);
  const int64_t ssz = contiguous_size(a.sendtype, "sendtype"), rsz = contiguous_size(a.recvtype, "recvtype");
  if (ssz != rsz)
    fail(MPI_ERR_TYPE, "sendtype (" + std::to_string(ssz) + " bytes) and recvtype (" + std::to_string(rsz) +
                           " bytes) must have the same size");
  esz = ssz;
  return opt;
}

// The tag of the persistent request made by the `sequence`-th alltoallv init on a
// communicator (library_comm's count, the same on every rank): its direct messages and
// its agreement's failure message. Above the setup tag; wraps within MPI_TAG_UB.
int request_tag(uint64_t sequence) {
  static const int ub = [] {
    void* v = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &found);
    return found ? *static_cast<int*>(v) : 32767;
  }();
  constexpr int kFirst = 1000;
  return kFirst + static_cast<int>(sequence % static_cast<uint64_t>(ub - kFirst + 1));
}

// Per edge, its position among the edges between the same two ranks (list order): the
// k-th edge i -> j of the sender is the k-th edge i -> j of the receiver (MPI's matching).
std::vector<int> repeat_index(const std::vector<int>& peers) {
  std::vector<int> k(peers.size(), 0);
  if (peers.size() < 2) return k;
  if (peers.size() <= 64) {  // a scan is cheaper than sorting at the degrees of a halo
    for (size_t i = 1; i < peers.size(); ++i)
      for (size_t j = i; j-- > 0;)
        if (peers[j] == peers[i]) {
          k[i] = k[j] + 1;
          break;
        }
    return k;
  }
  std::vector<int> order(peers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return peers[x] < peers[y]; });
  for (size_t i = 1; i < order.size(); ++i)
    if (peers[order[i]] == peers[order[i - 1]]) k[order[i]] = k[order[i - 1]] + 1;
  return k;
}

// One edge's term of the exact sums: its ends, repeat index, count and (ext) ids' hash.
uint64_t exact_edge(int from, int to, int k, int64_t count, uint64_t ids) {
  return fmix64(edge_hash(from, to, count) ^ fmix64(static_cast<uint64_t>(k) * 0xc2b2ae3d27d4eb4full + ids));
}

void alltoallv_init(const AlltoallvArgs& a, const OptionSource& os, MPI_Comm comm, const Locality* cached,
                    const std::string& cached_regions, SPC_Request* out) {
  const CommExclusive exclusive(comm, "SPC_Neighbor_alltoallv_init");
  if (comm == MPI_COMM_NULL) fail(MPI_ERR_COMM, "the communicator is MPI_COMM_NULL");
  if (out) *out = SPC_REQUEST_NULL;
  const int me = comm_rank(comm);
  // Collective on the first init per communicator only (the duplicate is kept on it).
  uint64_t sequence = 0;
  const std::shared_ptr<const Comm> lib_ref = library_comm_shared(comm, sequence);
  const MPI_Comm lib = lib_ref->get();
  const int tag = request_tag(sequence);
  Options opt;
  std::vector<int> srcs, dsts;
  int64_t esz = 0;
  // The direct path: backend p2p, unless SPARSECOMM_CHECK_COLLECTIVE_ARGS asks for the
  // setup messages that name a mismatched edge.
  bool direct = false;
  Agreement::Local mine;
  std::vector<int> self_out, self_in;  // positions of my self-loops in dsts / srcs

  // 1. Local checks (no communication); their outcome, the options' hash and the edge
  //    hashes go into the agreement.
  try {
    opt = resolve_neighborhood(a, os, comm, out, "backend", backend_registered, backend_names, srcs, dsts, esz);
    direct = opt.backend == "p2p" && !Sdde::check_collective_args_default();
    // (checked here for every path: the direct one builds no locality, and a bad value
    // must not be an error or not depending on the backend)
    if (const std::string e = region_spec_error(opt.regions, comm_size(comm)); !e.empty())
      fail(SPC_ERR_INFO_VALUE, "sparsecomm_regions: " + e);
    const int indeg = static_cast<int>(srcs.size()), outdeg = static_cast<int>(dsts.size());
    if (outdeg > 0 && (!a.sendcounts || !a.sdispls)) fail(SPC_ERR_ARG, "sendcounts or sdispls is NULL");
    if (indeg > 0 && (!a.recvcounts || !a.rdispls)) fail(SPC_ERR_ARG, "recvcounts or rdispls is NULL");
    int64_t send_total = 0, recv_total = 0;
    auto check_block = [&](const char* counts, const char* displs, int i, int64_t c, int64_t d) {
      if (c < 0) fail(MPI_ERR_COUNT, std::string(counts) + "[" + std::to_string(i) + "] is negative");
      if (d < 0) fail(SPC_ERR_ARG, std::string(displs) + "[" + std::to_string(i) + "] is negative");
      if (d + c > INT_MAX) fail(SPC_ERR_ARG, std::string("a block beyond 2^31 elements (") + displs + ")");
      if (c * esz > INT_MAX) fail(SPC_ERR_ARG, std::string("a message of more than 2^31 bytes (") + counts + ")");
    };
    for (int i = 0; i < outdeg; ++i) {
      check_block("sendcounts", "sdispls", i, a.sendcounts[i], a.sdispls[i]);
      send_total += a.sendcounts[i];
    }
    for (int j = 0; j < indeg; ++j) {
      check_block("recvcounts", "rdispls", j, a.recvcounts[j], a.rdispls[j]);
      recv_total += a.recvcounts[j];
    }
    if (send_total > 0 && !a.sendbuf) fail(MPI_ERR_BUFFER, "sendbuf is NULL");
    if (recv_total > 0 && !a.recvbuf) fail(MPI_ERR_BUFFER, "recvbuf is NULL");
    if (a.ext && ((send_total > 0 && !a.gsend) || (recv_total > 0 && !a.grecv)))
      fail(SPC_ERR_ARG, "global_sindices or global_rindices is NULL");
    // Self-loops: the k-th to myself is the k-th from myself (MPI's matching order).
    for (int i = 0; i < outdeg; ++i)
      if (dsts[i] == me) self_out.push_back(i);
    for (int j = 0; j < indeg; ++j)
      if (srcs[j] == me) self_in.push_back(j);
    if (self_out.size() != self_in.size())
      fail(SPC_ERR_MISMATCH, "rank " + std::to_string(me) + " lists itself " + std::to_string(self_out.size()) +
                                 " times as a destination but " + std::to_string(self_in.size()) + " times as a source");
    for (size_t k = 0; k < self_out.size(); ++k) {
      const int i = self_out[k], j = self_in[k];
      if (a.sendcounts[i] != a.recvcounts[j])
        fail(SPC_ERR_MISMATCH, "self-loop " + std::to_string(k) + " of rank " + std::to_string(me) + ": sends " +
                                   std::to_string(a.sendcounts[i]) + " values, receives " +
                                   std::to_string(a.recvcounts[j]));
      if (a.ext)
        for (int e = 0; e < a.sendcounts[i]; ++e)
          if (a.gsend[a.sdispls[i] + e] != a.grecv[a.rdispls[j] + e])
            fail(SPC_ERR_MISMATCH, "self-loop of rank " + std::to_string(me) +
                                       ": global_sindices and global_rindices differ");
    }
    for (int i = 0; i < outdeg; ++i) mine.lists_out += edge_hash(me, dsts[i]);
    for (int j = 0; j < indeg; ++j) mine.lists_in += edge_hash(srcs[j], me);
    if (direct) {  // what the setup messages would check, as sums: every edge's count (and ids)
      const std::vector<int> kout = repeat_index(dsts), kin = repeat_index(srcs);
      auto ids = [&](const int64_t* g, int64_t from, int64_t n) {
        SeqHash h;
        if (a.ext)
          for (int64_t e = 0; e < n; ++e) h.add(g[from + e]);
        return h.h;
      };
      for (int i = 0; i < outdeg; ++i)
        mine.exact_out += exact_edge(me, dsts[i], kout[i], a.sendcounts[i], ids(a.gsend, a.sdispls[i], a.sendcounts[i]));
      for (int j = 0; j < indeg; ++j)
        mine.exact_in += exact_edge(srcs[j], me, kin[j], a.recvcounts[j], ids(a.grecv, a.rdispls[j], a.recvcounts[j]));
    }
    mine.options = options_hash(opt, "|alltoallv|esz=", esz, a.ext ? "|ext" : "|positions");
  } catch (...) {
    const int code = record_current_exception();
    mine.error = coded(code, tl_message);
    direct = false;
  }

  // 2. The agreement: posted by every rank; settled now unless this rank takes the direct
  //    path and passed its checks (then at the first start).
  struct Slots {  // kept on the communicator; the agreements share it (and through it the duplicate)
    std::shared_ptr<AgreementSlots> p;
  };
  Slots& slots = comm_attached<Slots>(comm);
  if (!slots.p) slots.p = std::make_shared<AgreementSlots>(lib_ref);
  auto agreement = std::make_unique<Agreement>(lib, tag, std::move(mine), slots.p, sequence);
  if (!direct) agreement->settle();

  if (direct) {
    // One message per edge with data, straight from sendbuf / into recvbuf, receives first
    // (edges with nothing are left out on both sides: the agreement compares the counts
    // before anything is sent). Fresh requests at every start (Messages' default).
    auto req = std::make_unique<SPC_Request_s>();
    req->direct_msgs = std::make_unique<Messages>();
    Messages& m = *req->direct_msgs;
    m.reserve(srcs.size() + dsts.size());
    char* rb = static_cast<char*>(a.recvbuf);
    const char* sb = static_cast<const char*>(a.sendbuf);
    for (size_t j = 0; j < srcs.size(); ++j)
      if (a.recvcounts[j] > 0) m.add(false, rb + a.rdispls[j] * esz, a.recvcounts[j] * esz, srcs[j], tag);
    for (size_t i = 0; i < dsts.size(); ++i)
      if (a.sendcounts[i] > 0) m.add(true, sb + a.sdispls[i] * esz, a.sendcounts[i] * esz, dsts[i], tag);
    m.init(lib, kPersistentRequestsDefault);
    req->sendbuf = a.sendbuf;
    req->recvbuf = a.recvbuf;
    req->esz = esz;
    req->agreement = std::move(agreement);
    req->lib = lib_ref;
    *out = req.release();
    return;
  }

  // Edges per peer (other than me), peers ascending, edges in list order; self-loops are
  // copied locally (paired in step 1).
  std::map<int, std::vector<int>> out_edges, in_edges;
  for (size_t i = 0; i < dsts.size(); ++i)
    if (dsts[i] != me) out_edges[dsts[i]].push_back(static_cast<int>(i));
  for (size_t j = 0; j < srcs.size(); ++j)
    if (srcs[j] != me) in_edges[srcs[j]].push_back(static_cast<int>(j));
  std::vector<SPC_Request_s::Copy> self_copies;
  for (size_t k = 0; k < self_out.size(); ++k) {
    const int i = self_out[k], j = self_in[k];
    if (a.sendcounts[i] > 0) self_copies.push_back({a.sdispls[i] * esz, a.rdispls[j] * esz, a.sendcounts[i] * esz, true});
  }

  // 3. Setup messages on a duplicate (never matches user traffic): per peer, the edge
  //    counts and the ids of the values (ext: a hash of them; else their positions in the
  //    sender's buffer, which become the ids).
  std::map<int, std::vector<int64_t>> inbox;
  {
    const MPI_Comm setup = library_comm(comm);  // duplicated once per communicator
    std::vector<std::vector<int64_t>> outbox;
    std::vector<MPI_Request> reqs;
    outbox.reserve(out_edges.size());
    for (const auto& [d, edges] : out_edges) {
      std::vector<int64_t> m{static_cast<int64_t>(edges.size())};
      for (int i : edges) m.push_back(a.sendcounts[i]);
      SeqHash h;
      for (int i : edges)
        for (int e = 0; e < a.sendcounts[i]; ++e) {
          const int64_t pos = static_cast<int64_t>(a.sdispls[i]) + e;
          if (a.ext) h.add(a.gsend[pos]);
          else m.push_back(pos);
        }
      if (a.ext) m.push_back(static_cast<int64_t>(h.h));
      outbox.push_back(std::move(m));
      reqs.emplace_back(MPI_REQUEST_NULL);
      SPC_MPI(MPI_Isend(outbox.back().data(), static_cast<int>(outbox.back().size()), MPI_INT64_T, d, kTagSetup,
                        setup, &reqs.back()));
    }
    for (const auto& [s, edges] : in_edges) {
      MPI_Status st;
      SPC_MPI(MPI_Probe(s, kTagSetup, setup, &st));
      int n = 0;
      SPC_MPI(MPI_Get_count(&st, MPI_INT64_T, &n));
      auto& m = inbox[s];
      m.resize(static_cast<size_t>(n));
      SPC_MPI(MPI_Recv(m.data(), n, MPI_INT64_T, s, kTagSetup, setup, MPI_STATUS_IGNORE));
    }
    wait_all(reqs);
  }

  // 4. The pattern: send side packs from sendbuf positions, receive side unpacks into
  //    recvbuf positions; peers ascending, edges of one peer concatenated in list order
  //    (how MPI matches repeated edges). Peers with nothing to exchange are left out on
  //    both sides (their counts are known to agree).
  //    A failed check here rides make_plan's own collective (its caller_error).
  PatternSide send, recv;
  int32_t owned = 0, ghost = 0;
  std::string pattern_error;
  try {
    for (const auto& [s, edges] : in_edges) {
      const auto& m = inbox[s];
      const std::string who = "rank " + std::to_string(s) + " -> rank " + std::to_string(me) + ": ";
      if (m.empty() || m[0] != static_cast<int64_t>(edges.size()))
        fail(SPC_ERR_MISMATCH, who + "the sender lists the receiver " + (m.empty() ? "?" : std::to_string(m[0])) +
                                   " times as a destination, the receiver lists the sender " +
                                   std::to_string(edges.size()) + " times as a source");
      int64_t total = 0;
      for (size_t k = 0; k < edges.size(); ++k) {
        if (m[1 + k] != a.recvcounts[edges[k]])
          fail(SPC_ERR_MISMATCH, who + "edge " + std::to_string(k) + " sends " + std::to_string(m[1 + k]) +
                                     " values but recvcounts[" + std::to_string(edges[k]) + "] = " +
                                     std::to_string(a.recvcounts[edges[k]]));
        total += m[1 + k];
      }
      const size_t head = 1 + edges.size();
      if (m.size() != head + (a.ext ? 1 : static_cast<size_t>(total)))
        fail(SPC_ERR_INTERNAL, who + "malformed setup message");
      if (total == 0) continue;
      SeqHash h;
      recv.ranks.push_back(s);
      size_t next = head;
      for (int j : edges)
        for (int e = 0; e < a.recvcounts[j]; ++e) {
          const int32_t q = a.rdispls[j] + e;
          recv.indices.push_back(q);
          ghost = std::max(ghost, q + 1);
          if (a.ext) {
            h.add(a.grecv[q]);
            recv.global_ids.push_back(a.grecv[q]);
          } else {
            recv.global_ids.push_back(m[next++]);
          }
        }
      recv.offsets.push_back(static_cast<int64_t>(recv.indices.size()));
      if (a.ext && static_cast<int64_t>(h.h) != m[head])
        fail(SPC_ERR_MISMATCH, who + "the global ids the sender sends (global_sindices) differ from those the "
                                     "receiver expects (global_rindices), in value or order");
    }
    for (const auto& [d, edges] : out_edges) {
      int64_t total = 0;
      for (int i : edges) total += a.sendcounts[i];
      if (total == 0) continue;
      send.ranks.push_back(d);
      for (int i : edges)
        for (int e = 0; e < a.sendcounts[i]; ++e) {
          const int32_t pos = a.sdispls[i] + e;
          send.indices.push_back(pos);
          send.global_ids.push_back(a.ext ? a.gsend[pos] : pos);
          owned = std::max(owned, pos + 1);
        }
      send.offsets.push_back(static_cast<int64_t>(send.indices.size()));
    }
  } catch (const std::exception& e) {
    pattern_error = e.what();
    send = recv = PatternSide{};
    owned = ghost = 0;
  }
  const Pattern pattern(std::move(send), std::move(recv), owned, ghost);

  // 5. The plan (collective; its errors are agreed by make_plan).
  const Locality loc = (cached && cached_regions == opt.regions) ? *cached : make_locality(comm, opt.regions);
  PlanOptions popt;
  popt.value_bytes = unit_for(esz);
  popt.width = static_cast<int>(esz / popt.value_bytes);
  popt.sdde = opt.sdde;
  popt.backend = opt.backend_options_for(backend_names(), opt.backend, backend_option_specs);
  auto req = std::make_unique<SPC_Request_s>();
  req->plan = make_plan(opt.backend, pattern, loc, comm, popt, pattern_error);
  req->sendbuf = a.sendbuf;
  req->recvbuf = a.recvbuf;
  req->esz = esz;
  req->unit = popt.value_bytes;
  req->copies = std::move(self_copies);
  *out = req.release();
}

// ---- neighborhood allgather(v) -----------------------------------------------------------

void allgatherv_init(const AllgatherArgs& a, const OptionSource& os, MPI_Comm comm, SPC_Request* out) {
  const CommExclusive exclusive(comm, "SPC_Neighbor_allgather(v)_init");
  if (comm == MPI_COMM_NULL) fail(MPI_ERR_COMM, "the communicator is MPI_COMM_NULL");
  if (out) *out = SPC_REQUEST_NULL;
  const int me = comm_rank(comm);
  Options opt;
  std::vector<int> srcs, dsts, rcounts, rdispls;
  int64_t esz = 0;
  uint64_t hash_out = 0, hash_in = 0;
  Topology topo;

  const auto local_checks = [&] {
    opt = resolve_neighborhood(a, os, comm, out, "gather backend", gather_backend_registered, gather_backend_names, srcs,
                               dsts, esz);
    const int indeg = static_cast<int>(srcs.size());
    if (a.sendcount < 0) fail(MPI_ERR_COUNT, "sendcount is negative");
    if (a.uniform) {
      if (a.recvcount < 0) fail(MPI_ERR_COUNT, "recvcount is negative");
      if (static_cast<int64_t>(a.recvcount) * indeg > INT_MAX) fail(SPC_ERR_ARG, "more than 2^31 elements received");
      for (int j = 0; j < indeg; ++j) rcounts.push_back(a.recvcount), rdispls.push_back(j * a.recvcount);
    } else {
      if (indeg > 0 && (!a.recvcounts || !a.displs)) fail(SPC_ERR_ARG, "recvcounts or displs is NULL");
      rcounts.assign(a.recvcounts, a.recvcounts + indeg);
      rdispls.assign(a.displs, a.displs + indeg);
    }
    int64_t recv_total = 0;
    for (int j = 0; j < indeg; ++j) {
      if (rcounts[j] < 0) fail(MPI_ERR_COUNT, "recvcounts[" + std::to_string(j) + "] is negative");
      if (rdispls[j] < 0) fail(SPC_ERR_ARG, "displs[" + std::to_string(j) + "] is negative");
      if (static_cast<int64_t>(rdispls[j]) + rcounts[j] > INT_MAX) fail(SPC_ERR_ARG, "a block beyond 2^31 elements");
      recv_total += rcounts[j];
      if (srcs[j] == me && rcounts[j] != a.sendcount)
        fail(SPC_ERR_MISMATCH, "self-loop of rank " + std::to_string(me) + ": sendcount " +
                                   std::to_string(a.sendcount) + " but recvcounts[" + std::to_string(j) + "] = " +
                                   std::to_string(rcounts[j]));
    }
    if (a.sendcount > 0 && !dsts.empty() && !a.sendbuf) fail(MPI_ERR_BUFFER, "sendbuf is NULL");
    if (recv_total > 0 && !a.recvbuf) fail(MPI_ERR_BUFFER, "recvbuf is NULL");
    for (int d : dsts) {
      hash_out += edge_hash(me, d);
      if (d != me) topo.destinations.push_back(d);
    }
    for (int s : srcs) {
      hash_in += edge_hash(s, me);
      if (s != me) topo.sources.push_back(s);
    }
    for (auto* v : {&topo.sources, &topo.destinations}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    }
  };
  checked_and_cross_checked(
      comm, local_checks, [&] { return opt.canonical() + "|allgather|esz=" + std::to_string(esz); }, hash_out,
      hash_in);

  const Locality loc = make_locality(comm, opt.regions);
  GatherOptions gopt;
  gopt.value_bytes = 1;  // blocks as bytes: any element size
  gopt.sdde = opt.sdde;
  gopt.backend = opt.backend_options_for(gather_backend_names(), opt.backend, gather_backend_option_specs);
  gopt.persistent_requests = opt.persistent;
  auto req = std::make_unique<SPC_Request_s>();
  req->gather = true;
  req->gplan = make_gather_plan(opt.backend, topo, loc, comm, a.sendcount * esz, gopt);
  const GatherPlan& g = *req->gplan;

  // Received block sizes against recvcounts; where every block goes.
  agreed(comm, [&] {
    const int indeg = static_cast<int>(srcs.size());
    bool direct = true;
    for (int j = 0; j < indeg; ++j) {
      const int64_t to = static_cast<int64_t>(rdispls[j]) * esz;
      if (srcs[j] == me) {
        direct = false;
        if (rcounts[j] > 0) req->copies.push_back({0, to, rcounts[j] * esz, true});
        continue;
      }
      const size_t i = static_cast<size_t>(std::lower_bound(topo.sources.begin(), topo.sources.end(), srcs[j]) -
                                           topo.sources.begin());
      const int64_t bytes = g.recv_counts()[i];
      if (bytes != rcounts[j] * esz)
        fail(SPC_ERR_MISMATCH, "rank " + std::to_string(srcs[j]) + " -> rank " + std::to_string(me) + ": the sender's " +
                                   "sendcount is " + std::to_string(bytes / esz) + " but recvcounts[" +
                                   std::to_string(j) + "] = " + std::to_string(rcounts[j]));
      if (i != static_cast<size_t>(j) || to != g.recv_offsets()[i]) direct = false;
      if (bytes > 0) req->copies.push_back({g.recv_offsets()[i], to, bytes, false});
    }
    req->direct = direct;
    if (!direct) req->staging.assign(static_cast<size_t>(std::max<int64_t>(g.recv_total(), 1)), 0);
  });
  if (req->direct) req->copies.clear();
  req->sendbuf = a.sendbuf;
  req->recvbuf = a.recvbuf;
  req->esz = esz;
  *out = req.release();
}

}  // namespace capi
}  // namespace sparsecomm

// ---- the C entry points -------------------------------------------------------------------

using sparsecomm::capi::fail;
using sparsecomm::capi::guarded;

namespace {

std::string generic_message(int code) {
  switch (code) {
    case SPC_SUCCESS: return "no error";
    case SPC_ERR_ARG: return "sparsecomm: invalid argument";
    case SPC_ERR_NOT_FOUND: return "sparsecomm: unknown backend or SDDE strategy name";
    case SPC_ERR_INFO_KEY: return "sparsecomm: unknown sparsecomm_* info key";
    case SPC_ERR_INFO_VALUE: return "sparsecomm: malformed value of a sparsecomm_* info key";
    case SPC_ERR_MISMATCH: return "sparsecomm: ranks disagree (options, neighbor lists, counts or ids)";
    case SPC_ERR_REQUEST: return "sparsecomm: invalid request or request state";
    case SPC_ERR_NOT_IMPLEMENTED: return "sparsecomm: not implemented";
    case SPC_ERR_INTERNAL: return "sparsecomm: internal error";
    default: break;
  }
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (code > 0 && code < SPC_ERR_BASE && initialized && !finalized) {
    int* last = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag);
    const int lastcode = (flag && last) ? *last : MPI_ERR_LASTCODE;
    if (code <= std::max(lastcode, static_cast<int>(MPI_ERR_LASTCODE))) {
      char buf[MPI_MAX_ERROR_STRING];
      int len = 0;
      if (MPI_Error_string(code, buf, &len) == MPI_SUCCESS) return std::string(buf, static_cast<size_t>(len));
    }
  }
  return "unknown error code " + std::to_string(code);
}

void set_empty_status(MPI_Status* status) {
  if (status == MPI_STATUS_IGNORE) return;
  status->MPI_SOURCE = MPI_ANY_SOURCE;
  status->MPI_TAG = MPI_ANY_TAG;
  status->MPI_ERROR = MPI_SUCCESS;
  MPI_Status_set_elements(status, MPI_BYTE, 0);
  MPI_Status_set_cancelled(status, 0);
}

void run_copies(const SPC_Request_s& r, const unsigned char* staging) {
  const auto* send = static_cast<const unsigned char*>(r.sendbuf);
  auto* recv = static_cast<unsigned char*>(r.recvbuf);
  for (const auto& c : r.copies)
    std::memmove(recv + c.to, (c.from_send ? send : staging) + c.from, static_cast<size_t>(c.bytes));
}

sparsecomm::capi::OptionSource from_info(MPI_Info info) {
  sparsecomm::capi::OptionSource os;
  os.info = info;
  return os;
}

}  // namespace

extern "C" {

int SPC_Error_string(int code, char* string, int* resultlen) {
  if (!string || !resultlen) return SPC_ERR_ARG;
  try {
    std::string msg = (code != SPC_SUCCESS && code == sparsecomm::capi::tl_code && !sparsecomm::capi::tl_message.empty())
                          ? sparsecomm::capi::tl_message
                          : generic_message(code);
    if (msg.size() > SPC_MAX_ERROR_STRING - 1) msg.resize(SPC_MAX_ERROR_STRING - 1);
    std::memcpy(string, msg.c_str(), msg.size() + 1);
    *resultlen = static_cast<int>(msg.size());
    return SPC_SUCCESS;
  } catch (...) {
    string[0] = '\0';
    *resultlen = 0;
    return SPC_ERR_INTERNAL;
  }
}

int SPC_Free(void* ptr) {
  std::free(ptr);
  return SPC_SUCCESS;
}

int SPC_Alltoall_crs(int send_nnz, const int* dest, int sendcount, MPI_Datatype sendtype, const void* sendvals,
                     int* recv_nnz, int** src, int recvcount, MPI_Datatype recvtype, void** recvvals, MPI_Info info,
                     MPI_Comm comm) {
  return guarded([&] {
    sparsecomm::capi::CrsArgs a;
    a.fixed = true;
    a.send_nnz = send_nnz, a.dest = dest, a.sendcount = sendcount, a.sendtype = sendtype, a.sendvals = sendvals;
    a.recv_nnz = recv_nnz, a.src = src, a.recvcount = recvcount, a.recvtype = recvtype, a.recvvals = recvvals;
    sparsecomm::capi::crs_exchange(a, from_info(info), comm, nullptr, "");
  });
}

int SPC_Alltoallv_crs(int send_nnz, int send_size, const int* dest, const int* sendcounts, const int* sdispls,
                      MPI_Datatype sendtype, const void* sendvals, int* recv_nnz, int* recv_size, int** src,
                      int** recvcounts, int** rdispls, MPI_Datatype recvtype, void** recvvals, MPI_Info info,
                      MPI_Comm comm) {
  return guarded([&] {
    sparsecomm::capi::CrsArgs a;
    a.send_nnz = send_nnz, a.send_size = send_size, a.dest = dest, a.sendcounts = sendcounts, a.sdispls = sdispls;
    a.sendtype = sendtype, a.sendvals = sendvals;
    a.recv_nnz = recv_nnz, a.recv_size = recv_size, a.src = src, a.recvcounts = recvcounts, a.rdispls = rdispls;
    a.recvtype = recvtype, a.recvvals = recvvals;
    sparsecomm::capi::crs_exchange(a, from_info(info), comm, nullptr, "");
  });
}

int SPC_Neighbor_alltoallv_init(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
                                MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, SPC_Request* request) {
  return guarded([&] {
    sparsecomm::capi::AlltoallvArgs a;
    a.sendbuf = sendbuf, a.sendcounts = sendcounts, a.sdispls = sdispls, a.sendtype = sendtype;
    a.recvbuf = recvbuf, a.recvcounts = recvcounts, a.rdispls = rdispls, a.recvtype = recvtype;
    sparsecomm::capi::alltoallv_init(a, from_info(info), comm, nullptr, "", request);
  });
}

int SPC_Neighbor_alltoallv_init_ext(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                    const int64_t global_sindices[], MPI_Datatype sendtype, void* recvbuf,
                                    const int recvcounts[], const int rdispls[], const int64_t global_rindices[],
                                    MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, SPC_Request* request) {
  return guarded([&] {
    sparsecomm::capi::AlltoallvArgs a;
    a.sendbuf = sendbuf, a.sendcounts = sendcounts, a.sdispls = sdispls, a.sendtype = sendtype;
    a.recvbuf = recvbuf, a.recvcounts = recvcounts, a.rdispls = rdispls, a.recvtype = recvtype;
    a.gsend = global_sindices, a.grecv = global_rindices, a.ext = true;
    sparsecomm::capi::alltoallv_init(a, from_info(info), comm, nullptr, "", request);
  });
}

int SPC_Neighbor_alltoallv_init_lists(int indegree, const int sources[], int outdegree, const int destinations[],
                                      const void* sendbuf, const int sendcounts[], const int sdispls[],
                                      const int64_t global_sindices[], MPI_Datatype sendtype, void* recvbuf,
                                      const int recvcounts[], const int rdispls[], const int64_t global_rindices[],
                                      MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, SPC_Request* request) {
  return guarded([&] {
    sparsecomm::capi::AlltoallvArgs a;
    a.from_graph = false;
    a.indegree = indegree, a.sources = sources, a.outdegree = outdegree, a.destinations = destinations;
    a.sendbuf = sendbuf, a.sendcounts = sendcounts, a.sdispls = sdispls, a.sendtype = sendtype;
    a.recvbuf = recvbuf, a.recvcounts = recvcounts, a.rdispls = rdispls, a.recvtype = recvtype;
    // Both id arrays or neither: decided from arguments every rank can see differently, so
    // a rank with only one of them still takes part in the agreement (as an ext call).
    a.ext = global_sindices || global_rindices;
    a.gsend = global_sindices, a.grecv = global_rindices;
    sparsecomm::capi::alltoallv_init(a, from_info(info), comm, nullptr, "", request);
  });
}

int SPC_Neighbor_allgather_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                SPC_Request* request) {
  return guarded([&] {
    sparsecomm::capi::AllgatherArgs a;
    a.sendbuf = sendbuf, a.sendcount = sendcount, a.sendtype = sendtype;
    a.recvbuf = recvbuf, a.uniform = true, a.recvcount = recvcount, a.recvtype = recvtype;
    sparsecomm::capi::allgatherv_init(a, from_info(info), comm, request);
  });
}

int SPC_Neighbor_allgatherv_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                                 MPI_Info info, SPC_Request* request) {
  return guarded([&] {
    sparsecomm::capi::AllgatherArgs a;
    a.sendbuf = sendbuf, a.sendcount = sendcount, a.sendtype = sendtype;
    a.recvbuf = recvbuf, a.recvcounts = recvcounts, a.displs = displs, a.recvtype = recvtype;
    sparsecomm::capi::allgatherv_init(a, from_info(info), comm, request);
  });
}

int SPC_Neighbor_allgatherv_init_lists(int indegree, const int sources[], int outdegree, const int destinations[],
                                       const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                       const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                                       MPI_Comm comm, MPI_Info info, SPC_Request* request) {
  return guarded([&] {
    sparsecomm::capi::AllgatherArgs a;
    a.from_graph = false;
    a.indegree = indegree, a.sources = sources, a.outdegree = outdegree, a.destinations = destinations;
    a.sendbuf = sendbuf, a.sendcount = sendcount, a.sendtype = sendtype;
    a.recvbuf = recvbuf, a.recvcounts = recvcounts, a.displs = displs, a.recvtype = recvtype;
    sparsecomm::capi::allgatherv_init(a, from_info(info), comm, request);
  });
}

int SPC_Start(SPC_Request* request) {
  return guarded([&] {
    if (!request || !*request) fail(SPC_ERR_REQUEST, "SPC_Start: the request is null");
    SPC_Request_s& r = **request;
    if (r.active) fail(SPC_ERR_REQUEST, "SPC_Start: the request is already active (SPC_Wait for it first)");
    static const unsigned char nothing = 0;
    if (r.agreement) {  // the first start of a direct request: its init's agreement first
      r.agreement->settle();
      r.agreement.reset();
    }
    if (r.direct_msgs) {
      r.direct_msgs->start();
    } else if (r.gather) {
      r.gplan->start(r.sendbuf ? static_cast<const unsigned char*>(r.sendbuf) : &nothing);
    } else {
      sparsecomm::capi::with_unit(r.unit, [&](auto tag) {
        using T = decltype(tag);
        r.plan->start(static_cast<const T*>(r.sendbuf));
      });
    }
    r.active = true;
  });
}

int SPC_Wait(SPC_Request* request, MPI_Status* status) {
  return guarded([&] {
    if (!request || !*request) fail(SPC_ERR_REQUEST, "SPC_Wait: the request is null");
    set_empty_status(status);
    SPC_Request_s& r = **request;
    if (!r.active) return;  // inactive persistent request: returns at once (MPI semantics)
    r.active = false;
    if (r.direct_msgs) {
      r.direct_msgs->wait();
    } else if (r.gather) {
      if (r.direct && r.recvbuf) {
        r.gplan->wait(static_cast<unsigned char*>(r.recvbuf));
      } else {
        if (r.staging.empty()) r.staging.assign(1, 0);
        r.gplan->wait(r.staging.data());
      }
      run_copies(r, r.staging.data());
    } else {
      sparsecomm::capi::with_unit(r.unit, [&](auto tag) {
        using T = decltype(tag);
        r.plan->wait(static_cast<T*>(r.recvbuf));
      });
      run_copies(r, nullptr);
    }
  });
}

int SPC_Request_free(SPC_Request* request) {
  if (!request || !*request) {
    return guarded([] { fail(SPC_ERR_REQUEST, "SPC_Request_free: the request is null"); });
  }
  int rc = SPC_SUCCESS;
  if ((*request)->active) rc = SPC_Wait(request, MPI_STATUS_IGNORE);  // complete, never drop
  if ((*request)->agreement) {  // never started: its init's agreement is settled here
    const int settled = guarded([&] { (*request)->agreement->settle(); });
    if (rc == SPC_SUCCESS) rc = settled;
  }
  delete *request;
  *request = SPC_REQUEST_NULL;
  return rc;
}

int SPC_Request_backend(SPC_Request request, char* name, int* resultlen) {
  return guarded([&] {
    if (!request) fail(SPC_ERR_REQUEST, "SPC_Request_backend: the request is null");
    if (!name || !resultlen) fail(SPC_ERR_ARG, "SPC_Request_backend: name or resultlen is NULL");
    std::string n = request->direct_msgs ? "p2p" : request->gather ? request->gplan->name() : request->plan->name();
    if (n.size() > 63) n.resize(63);
    std::memcpy(name, n.c_str(), n.size() + 1);
    *resultlen = static_cast<int>(n.size());
  });
}

}  // extern "C"
