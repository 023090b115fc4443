// SPC_Request: start, wait, free and name the requests that the neighborhood inits
// (alltoallv.cpp, allgatherv.cpp) create.
#include <cstring>
#include <string>

#include "capi_internal.hpp"
#include "comm/plan/tune.hpp"
#include "core/empty_status.hpp"

using sparsecomm::capi::fail;
using sparsecomm::capi::guarded;

namespace {

void run_copies(const SPC_Request_s& r, const unsigned char* staging) {
  const auto* send = static_cast<const unsigned char*>(r.sendbuf);
  auto* recv = static_cast<unsigned char*>(r.recvbuf);
  for (const auto& c : r.copies)
    std::memmove(recv + c.to, (c.from_send ? send : staging) + c.from, static_cast<size_t>(c.bytes));
}

}  // namespace

extern "C" {

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
    if (r.msgs) {
      r.msgs->start();
    } else if (r.gather) {
      r.gplan->start(r.sendbuf ? static_cast<const unsigned char*>(r.sendbuf) : &nothing);
    } else {
      r.plan->start(r.sendbuf);
    }
    r.active = true;
  });
}

int SPC_Wait(SPC_Request* request, MPI_Status* status) {
  return guarded([&] {
    if (!request || !*request) fail(SPC_ERR_REQUEST, "SPC_Wait: the request is null");
    sparsecomm::detail::set_empty_status(status, MPI_Status_set_elements, MPI_Status_set_cancelled);
    SPC_Request_s& r = **request;
    if (!r.active) return;  // inactive persistent request: returns at once (MPI semantics)
    r.active = false;
    if (r.msgs) {
      r.msgs->wait();
      run_copies(r, nullptr);
    } else if (r.gather) {
      if (r.direct && r.recvbuf) {
        r.gplan->wait(static_cast<unsigned char*>(r.recvbuf));
      } else {
        if (r.staging.empty()) r.staging.assign(1, 0);
        r.gplan->wait(r.staging.data());
      }
      run_copies(r, r.staging.data());
    } else {
      r.plan->wait(r.recvbuf);
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
    std::string n = request->msgs ? "p2p" : request->gather ? request->gplan->name() : request->plan->name();
    if (!request->msgs && !request->gather)  // (a tuned auto plan: auto while it measures, then its winner)
      if (std::string won = sparsecomm::detail::tuned_winner(*request->plan); !won.empty()) n = won;
    if (n.size() > 63) n.resize(63);
    std::memcpy(name, n.c_str(), n.size() + 1);
    *resultlen = static_cast<int>(n.size());
  });
}

}  // extern "C"
