// The completion and start calls of MPI, interposed so that the PMPI layer's requests
// (requests.hpp) mix with the program's own. With no operation of the layer alive, every
// call goes straight to PMPI_* after one emptiness check.
#include "interop/pmpi/requests.hpp"

#include <exception>
#include <unordered_map>
#include <vector>

#include "core/empty_status.hpp"
#include "interop/common/pipeline.hpp"

namespace sparsecomm::pmpi {
namespace {

struct Entry {
  std::unique_ptr<Operation> op;
  bool persistent = false;
  bool active = false;  // started and not yet completed by a completion call
  bool done = false;    // the operation has finished; the handle not yet completed
};

// Never destroyed: an operation the program never freed would otherwise free MPI objects
// after MPI_Finalize, at exit.
std::unordered_map<MPI_Request, Entry>& table() {
  static auto* t = new std::unordered_map<MPI_Request, Entry>();
  return *t;
}

Entry* find(MPI_Request r) {
  auto& t = table();
  if (t.empty() || r == MPI_REQUEST_NULL) return nullptr;
  auto it = t.find(r);
  return it == t.end() ? nullptr : &it->second;
}

// Whether e's operation is complete (or e inactive), advancing it.
bool advance(Entry& e, bool block) {
  if (e.active && !e.done) {
    try {
      e.done = e.op->progress(block);
    } catch (const std::exception& ex) {
      fail(ex.what());
    }
  }
  return !e.active || e.done;
}

void set_empty(MPI_Status* st) { detail::set_empty_status(st, PMPI_Status_set_elements, PMPI_Status_set_cancelled); }

// Completes the handle of a finished operation, as MPI completes a request: a persistent
// one becomes inactive, any other is freed and set to MPI_REQUEST_NULL.
void complete(MPI_Request* r, MPI_Status* st) {
  Entry* e = find(*r);
  e->active = e->done = false;
  set_empty(st);
  if (e->persistent) return;
  MPI_Request h = *r;
  table().erase(h);
  PMPI_Request_free(&h);
  *r = MPI_REQUEST_NULL;
}

MPI_Status* status_at(MPI_Status* sts, int i) { return sts == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &sts[i]; }

// Indices of the layer's active operations in r[0..n).
std::vector<int> ours(int n, const MPI_Request* r) {
  std::vector<int> v;
  if (table().empty()) return v;
  for (int i = 0; i < n; ++i)
    if (Entry* e = find(r[i]); e && e->active) v.push_back(i);
  return v;
}

}  // namespace

MPI_Request placeholder_request() {
  // To rank 0 of MPI_COMM_SELF (this process), not to MPI_PROC_NULL: MPICH 4.0's ch4
  // MPID_Startall skips any request whose pt2pt field "rank" reads MPI_PROC_NULL, without
  // looking at its kind, and a persistent collective request never writes that field, so one
  // made in the pooled object of a freed persistent request to MPI_PROC_NULL is never
  // started and its MPI_Wait never returns (fixed in MPICH 4.1: pmodels/mpich#6360).
  MPI_Request h = MPI_REQUEST_NULL;
  PMPI_Send_init(nullptr, 0, MPI_BYTE, 0, 0, MPI_COMM_SELF, &h);
  return h;
}

MPI_Request register_operation(std::unique_ptr<Operation> op, bool persistent, bool active) {
  MPI_Request h = placeholder_request();
  Entry& e = table()[h];
  e.op = std::move(op);
  e.persistent = persistent;
  e.active = active;
  return h;
}

bool any_requests() { return !table().empty(); }
bool is_ours(MPI_Request r) { return find(r) != nullptr; }

void fail(const char* what) {
  sparsecomm::interop::exit_with("sparsecomm mpi", what);
}

}  // namespace sparsecomm::pmpi

using namespace sparsecomm::pmpi;
#define SPC_EXPORT extern "C" __attribute__((visibility("default")))

SPC_EXPORT int MPI_Wait(MPI_Request* r, MPI_Status* st) {
  Entry* e = find(*r);
  if (!e) return PMPI_Wait(r, st);
  if (!e->active) {  // an inactive persistent request: MPI returns at once, empty status
    set_empty(st);
    return MPI_SUCCESS;
  }
  advance(*e, true);
  complete(r, st);
  return MPI_SUCCESS;
}

SPC_EXPORT int MPI_Test(MPI_Request* r, int* flag, MPI_Status* st) {
  Entry* e = find(*r);
  if (!e) return PMPI_Test(r, flag, st);
  *flag = advance(*e, false) ? 1 : 0;
  if (*flag) {
    if (e->active) complete(r, st);
    else set_empty(st);
  }
  return MPI_SUCCESS;
}

SPC_EXPORT int MPI_Waitall(int n, MPI_Request r[], MPI_Status sts[]) {
  const std::vector<int> mine = ours(n, r);
  if (mine.empty()) return PMPI_Waitall(n, r, sts);
  // Poll every operation of the layer rather than wait for them one by one: two ranks may
  // list the same operations in different orders, and each one's later stage runs only in
  // its own rank's calls.
  for (bool all = false; !all;) {
    all = true;
    for (int i : mine) all = advance(*find(r[i]), false) && all;
  }
  const int rc = PMPI_Waitall(n, r, sts);  // the layer's handles are inactive to MPI
  for (int i : mine) complete(&r[i], status_at(sts, i));
  return rc;
}

SPC_EXPORT int MPI_Waitany(int n, MPI_Request r[], int* index, MPI_Status* st) {
  if (ours(n, r).empty()) return PMPI_Waitany(n, r, index, st);
  for (;;) {
    const std::vector<int> mine = ours(n, r);
    for (int i : mine)
      if (advance(*find(r[i]), false)) {
        complete(&r[i], st);
        *index = i;
        return MPI_SUCCESS;
      }
    int flag = 0;
    const int rc = PMPI_Testany(n, r, index, &flag, st);
    if (rc != MPI_SUCCESS || (flag && *index != MPI_UNDEFINED)) return rc;
    if (mine.empty()) {  // nothing active anywhere
      *index = MPI_UNDEFINED;
      set_empty(st);
      return MPI_SUCCESS;
    }
  }
}

namespace {
// One pass of Testsome over the layer's operations and MPI's requests; *out is
// MPI_UNDEFINED when neither has an active request.
int test_some(int n, MPI_Request r[], int* out, int idx[], MPI_Status sts[]) {
  const std::vector<int> mine = ours(n, r);
  *out = 0;
  for (int i : mine)
    if (advance(*find(r[i]), false)) {
      complete(&r[i], status_at(sts, *out));
      idx[(*out)++] = i;
    }
  int more = 0;
  std::vector<int> mi(static_cast<size_t>(n) + 1);
  std::vector<MPI_Status> ms(sts == MPI_STATUSES_IGNORE ? 0 : static_cast<size_t>(n) + 1);
  const int rc = PMPI_Testsome(n, r, &more, mi.data(), ms.empty() ? MPI_STATUSES_IGNORE : ms.data());
  if (more == MPI_UNDEFINED) {
    if (mine.empty()) *out = MPI_UNDEFINED;
    return rc;
  }
  for (int k = 0; k < more; ++k) {
    if (!ms.empty()) sts[*out] = ms[static_cast<size_t>(k)];
    idx[(*out)++] = mi[static_cast<size_t>(k)];
  }
  return rc;
}
}  // namespace

SPC_EXPORT int MPI_Waitsome(int n, MPI_Request r[], int* out, int idx[], MPI_Status sts[]) {
  if (ours(n, r).empty()) return PMPI_Waitsome(n, r, out, idx, sts);
  for (;;) {
    const int rc = test_some(n, r, out, idx, sts);
    if (rc != MPI_SUCCESS || *out == MPI_UNDEFINED || *out > 0) return rc;
  }
}

SPC_EXPORT int MPI_Testsome(int n, MPI_Request r[], int* out, int idx[], MPI_Status sts[]) {
  if (ours(n, r).empty()) return PMPI_Testsome(n, r, out, idx, sts);
  return test_some(n, r, out, idx, sts);
}

SPC_EXPORT int MPI_Testall(int n, MPI_Request r[], int* flag, MPI_Status sts[]) {
  const std::vector<int> mine = ours(n, r);
  if (mine.empty()) return PMPI_Testall(n, r, flag, sts);
  bool all = true;
  for (int i : mine) all = advance(*find(r[i]), false) && all;
  if (!all) {  // MPI: with flag false no request is completed, so MPI's are not tested
    *flag = 0;
    return MPI_SUCCESS;
  }
  const int rc = PMPI_Testall(n, r, flag, sts);
  if (*flag)
    for (int i : mine) complete(&r[i], status_at(sts, i));
  return rc;
}

SPC_EXPORT int MPI_Testany(int n, MPI_Request r[], int* index, int* flag, MPI_Status* st) {
  const std::vector<int> mine = ours(n, r);
  if (mine.empty()) return PMPI_Testany(n, r, index, flag, st);
  for (int i : mine)
    if (advance(*find(r[i]), false)) {
      complete(&r[i], st);
      *index = i, *flag = 1;
      return MPI_SUCCESS;
    }
  const int rc = PMPI_Testany(n, r, index, flag, st);
  if (*flag && *index == MPI_UNDEFINED) *flag = 0;  // the layer's requests are still active
  return rc;
}

SPC_EXPORT int MPI_Start(MPI_Request* r) {
  Entry* e = find(*r);
  if (!e) return PMPI_Start(r);
  try {
    e->op->start();
  } catch (const std::exception& ex) {
    fail(ex.what());
  }
  e->active = true, e->done = false;
  return MPI_SUCCESS;
}

SPC_EXPORT int MPI_Startall(int n, MPI_Request r[]) {
  if (table().empty()) return PMPI_Startall(n, r);
  // MPI's own requests started in place, one by one: not through a copy of their handles
  // (an MPI may change a persistent request's handle at its start).
  int rc = MPI_SUCCESS;
  for (int i = 0; i < n; ++i) {
    const int one = find(r[i]) ? MPI_Start(&r[i]) : PMPI_Start(&r[i]);
    if (rc == MPI_SUCCESS) rc = one;
  }
  return rc;
}

SPC_EXPORT int MPI_Request_free(MPI_Request* r) {
  Entry* e = find(*r);
  if (!e) return PMPI_Request_free(r);
  advance(*e, true);  // an active operation completes first (its buffers are the program's)
  MPI_Request h = *r;
  table().erase(h);
  *r = MPI_REQUEST_NULL;
  return PMPI_Request_free(&h);
}

SPC_EXPORT int MPI_Request_get_status(MPI_Request r, int* flag, MPI_Status* st) {
  Entry* e = find(r);
  if (!e) return PMPI_Request_get_status(r, flag, st);
  *flag = advance(*e, false) ? 1 : 0;
  if (*flag) set_empty(st);
  return MPI_SUCCESS;
}
