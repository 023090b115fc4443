// Fortran entry points of the neighborhood collectives and of the calls that complete and
// start requests, so that a Fortran program (mpif.h, `use mpi`, `use mpi_f08`) under
// LD_PRELOAD=libsparsecomm_mpi.so is served like a C one.
//
// Why they are needed: Open MPI's Fortran bindings convert the handles and call the C
// *profiling* functions (mpi_neighbor_allgather_ -> PMPI_Neighbor_allgather, mpi_wait_ ->
// PMPI_Wait), so the C entries of this layer (pmpi_neighbor.cpp, requests.cpp) never see a
// Fortran call. The names a Fortran call reaches: the mpif.h / `use mpi` external names in
// every mangling a compiler may use (mpi_neighbor_allgather_, mpi_neighbor_allgather__,
// mpi_neighbor_allgather, MPI_NEIGHBOR_ALLGATHER), and Open MPI's shared implementation
// ompi_neighbor_allgather_f, which the `use mpi_f08` wrappers (libmpi_usempif08) call
// through the PLT. Each is defined here once (the manglings are aliases).
//
// Neighborhood collectives (blocking, non-blocking, persistent MPIX_*_init): the handles
// converted with MPI's own f2c functions, then this layer's C entry, which decides as for a
// C call and passes on to PMPI_* where it steps aside — what Open MPI's wrapper would have
// called. A buffer that is one of Fortran's sentinels (MPI_BOTTOM, MPI_IN_PLACE: common
// blocks only MPI's wrapper translates) sends the whole call to MPI's own Fortran function
// (dlsym(RTLD_NEXT): never guessed).
//
// Completion and start (MPI_WAIT, _TEST, their ALL/ANY/SOME forms, MPI_START(ALL),
// MPI_REQUEST_FREE, MPI_REQUEST_GET_STATUS): with no request of the layer alive, or none of
// the layer's among the call's requests, MPI's own Fortran function, untouched. Otherwise
// the requests are converted, the layer's C entry completes them (its own operations and
// MPI's alike, requests.cpp), and the results go back as MPI's wrapper returns them:
// handles by MPI_Request_c2f (MPI_REQUEST_NULL for freed ones), statuses by
// MPI_Status_c2f unless the program passed MPI_STATUS(ES)_IGNORE, indices from 1, and a
// LOGICAL flag as the value MPI's own Fortran MPI_TEST stores for true (learned once from
// it, on an inactive persistent request). docs/interposition.md.
#include <dlfcn.h>
#include <mpi.h>
#ifdef SPARSECOMM_HAVE_MPI_EXT_H
#include <mpi-ext.h>  // Open MPI's MPIX_Neighbor_*_init (pcollreq)
#endif

#include <algorithm>
#include <vector>

#include "interop/common/pipeline.hpp"
#include "interop/pmpi/requests.hpp"

static_assert(sizeof(MPI_Fint) == sizeof(int), "Fortran INTEGER must be a C int (count arrays are used in place)");

namespace {

using sparsecomm::pmpi::any_requests;
using sparsecomm::pmpi::is_ours;
using sparsecomm::pmpi::placeholder_request;

// The addresses of MPI's Fortran common blocks `names` (any mangling) that exist.
std::vector<const void*> commons(std::initializer_list<const char*> names) {
  std::vector<const void*> v;
  for (const char* n : names)
    if (void* a = dlsym(RTLD_DEFAULT, n)) v.push_back(a);
  return v;
}

// Whether p is one of MPI's Fortran sentinel buffers (MPI_BOTTOM, MPI_IN_PLACE).
bool sentinel(const void* p) {
  static const std::vector<const void*> known =
      commons({"mpi_fortran_bottom_", "mpi_fortran_bottom", "mpi_fortran_bottom__", "MPI_FORTRAN_BOTTOM",
               "mpi_fortran_in_place_", "mpi_fortran_in_place", "mpi_fortran_in_place__", "MPI_FORTRAN_IN_PLACE"});
  return std::find(known.begin(), known.end(), p) != known.end();
}

// Whether a Fortran status (array) argument is MPI_STATUS_IGNORE (MPI_STATUSES_IGNORE).
bool status_ignored(const MPI_Fint* p, bool many) {
  if (p == (many ? MPI_F_STATUSES_IGNORE : MPI_F_STATUS_IGNORE)) return true;
  static const std::vector<const void*> one =
      commons({"mpi_fortran_status_ignore_", "mpi_fortran_status_ignore", "mpi_fortran_status_ignore__",
               "MPI_FORTRAN_STATUS_IGNORE"});
  static const std::vector<const void*> all =
      commons({"mpi_fortran_statuses_ignore_", "mpi_fortran_statuses_ignore", "mpi_fortran_statuses_ignore__",
               "MPI_FORTRAN_STATUSES_IGNORE"});
  const auto& known = many ? all : one;
  return std::find(known.begin(), known.end(), static_cast<const void*>(p)) != known.end();
}

// Words of a Fortran status: MPI_STATUS_SIZE, which Open MPI defines as the C struct's
// size in Fortran integers (MPI-4's MPI_F_STATUS_SIZE where the header has it).
#ifdef MPI_F_STATUS_SIZE
constexpr size_t kStatusWords = MPI_F_STATUS_SIZE;
#else
constexpr size_t kStatusWords = sizeof(MPI_Status) / sizeof(MPI_Fint);
static_assert(sizeof(MPI_Status) % sizeof(MPI_Fint) == 0, "a Fortran status is the C status in integers");
#endif

// MPI's own Fortran implementation of a function: Open MPI's shared one, else the mpif.h
// name. Absent (a Fortran call reached the layer, so MPI's Fortran library is loaded):
// nothing can be passed on.
template <class F>
F original(const char* ompi_name, const char* mpif_name) {
  void* p = dlsym(RTLD_NEXT, ompi_name);
  if (!p) p = dlsym(RTLD_NEXT, mpif_name);
  if (!p)
    sparsecomm::interop::exit_with("sparsecomm mpi",
                                   std::string(mpif_name) + " not found in the MPI library loaded after the layer");
  return reinterpret_cast<F>(p);
}
#define SPC_OWN(name, ...)                                \
  using Own = void (*)(__VA_ARGS__);                      \
  static const Own own = original<Own>("ompi_" #name "_f", "mpi_" #name "_")

void set(MPI_Fint* ierr, int rc) {
  if (ierr) *ierr = static_cast<MPI_Fint>(rc);
}

// The value a Fortran LOGICAL holds for .true., as MPI's own Fortran binding stores it:
// MPI_TEST on an inactive persistent request completes at once with flag true.
MPI_Fint fortran_true() {
  static const MPI_Fint value = [] {
    MPI_Request r = placeholder_request();
    MPI_Fint f = PMPI_Request_c2f(r), flag = 0, ierr = 0;
    std::vector<MPI_Fint> st(kStatusWords + 8, 0);
    SPC_OWN(test, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
    own(&f, &flag, st.data(), &ierr);
    PMPI_Request_free(&r);
    return flag != 0 ? flag : MPI_Fint{1};
  }();
  return value;
}

// A call's Fortran requests as C handles; whether any is the layer's.
bool convert(int n, const MPI_Fint* f, std::vector<MPI_Request>& c) {
  bool ours = false;
  c.resize(static_cast<size_t>(std::max(n, 0)));
  for (int i = 0; i < n; ++i) {
    c[static_cast<size_t>(i)] = PMPI_Request_f2c(f[i]);
    ours = ours || is_ours(c[static_cast<size_t>(i)]);
  }
  return ours;
}
void back(const std::vector<MPI_Request>& c, MPI_Fint* f) {
  for (size_t i = 0; i < c.size(); ++i) f[i] = PMPI_Request_c2f(c[i]);
}
// C statuses for a Fortran status array of n (none if ignored) and their conversion back.
struct Statuses {
  MPI_Fint* f;
  std::vector<MPI_Status> c;
  Statuses(MPI_Fint* fs, int n, bool many) : f(status_ignored(fs, many) ? nullptr : fs) {
    if (f) c.resize(static_cast<size_t>(std::max(n, 1)));
  }
  MPI_Status* one() { return f ? c.data() : MPI_STATUS_IGNORE; }
  MPI_Status* all() { return f ? c.data() : MPI_STATUSES_IGNORE; }
  void back(int n) {
    if (!f) return;
    for (int i = 0; i < n; ++i) PMPI_Status_c2f(&c[static_cast<size_t>(i)], f + static_cast<size_t>(i) * kStatusWords);
  }
};

}  // namespace

#define SPC_F(ret) extern "C" __attribute__((visibility("default"))) ret
// The mpif.h / `use mpi` names of ompi_<name>_f in the manglings compilers use.
#define SPC_FORTRAN(name, NAME)                                                                     \
  SPC_F(decltype(ompi_##name##_f)) mpi_##name##_ __attribute__((alias("ompi_" #name "_f")));       \
  SPC_F(decltype(ompi_##name##_f)) mpi_##name##__ __attribute__((alias("ompi_" #name "_f")));      \
  SPC_F(decltype(ompi_##name##_f)) mpi_##name __attribute__((alias("ompi_" #name "_f")));          \
  SPC_F(decltype(ompi_##name##_f)) NAME __attribute__((alias("ompi_" #name "_f")));

using F = MPI_Fint;

// ---------------------------------------------------------------- neighborhood collectives

SPC_F(void) ompi_neighbor_allgather_f(char* sb, F* sc, F* st, char* rb, F* rc, F* rt, F* comm, F* ierr) {
  if (sentinel(sb) || sentinel(rb)) {
    SPC_OWN(neighbor_allgather, char*, F*, F*, char*, F*, F*, F*, F*);
    return own(sb, sc, st, rb, rc, rt, comm, ierr);
  }
  set(ierr, MPI_Neighbor_allgather(sb, *sc, PMPI_Type_f2c(*st), rb, *rc, PMPI_Type_f2c(*rt), PMPI_Comm_f2c(*comm)));
}

SPC_F(void) ompi_neighbor_alltoall_f(char* sb, F* sc, F* st, char* rb, F* rc, F* rt, F* comm, F* ierr) {
  if (sentinel(sb) || sentinel(rb)) {
    SPC_OWN(neighbor_alltoall, char*, F*, F*, char*, F*, F*, F*, F*);
    return own(sb, sc, st, rb, rc, rt, comm, ierr);
  }
  set(ierr, MPI_Neighbor_alltoall(sb, *sc, PMPI_Type_f2c(*st), rb, *rc, PMPI_Type_f2c(*rt), PMPI_Comm_f2c(*comm)));
}

SPC_F(void) ompi_neighbor_allgatherv_f(char* sb, F* sc, F* st, char* rb, F* rcs, F* rds, F* rt, F* comm, F* ierr) {
  if (sentinel(sb) || sentinel(rb)) {
    SPC_OWN(neighbor_allgatherv, char*, F*, F*, char*, F*, F*, F*, F*, F*);
    return own(sb, sc, st, rb, rcs, rds, rt, comm, ierr);
  }
  set(ierr, MPI_Neighbor_allgatherv(sb, *sc, PMPI_Type_f2c(*st), rb, rcs, rds, PMPI_Type_f2c(*rt), PMPI_Comm_f2c(*comm)));
}

SPC_F(void) ompi_neighbor_alltoallv_f(char* sb, F* scs, F* sds, F* st, char* rb, F* rcs, F* rds, F* rt, F* comm,
                                      F* ierr) {
  if (sentinel(sb) || sentinel(rb)) {
    SPC_OWN(neighbor_alltoallv, char*, F*, F*, F*, char*, F*, F*, F*, F*, F*);
    return own(sb, scs, sds, st, rb, rcs, rds, rt, comm, ierr);
  }
  set(ierr, MPI_Neighbor_alltoallv(sb, scs, sds, PMPI_Type_f2c(*st), rb, rcs, rds, PMPI_Type_f2c(*rt),
                                   PMPI_Comm_f2c(*comm)));
}

// The request of a started call, as Fortran sees it (the call's code and request taken
// after the call, not as arguments beside it: C++ leaves their order open).
static void out_request(int code, MPI_Request c, F* request, F* ierr) {
  if (code == MPI_SUCCESS) *request = PMPI_Request_c2f(c);
  set(ierr, code);
}

SPC_F(void) ompi_ineighbor_allgather_f(char* sb, F* sc, F* st, char* rb, F* rc, F* rt, F* comm, F* request, F* ierr) {
  if (sentinel(sb) || sentinel(rb)) {
    SPC_OWN(ineighbor_allgather, char*, F*, F*, char*, F*, F*, F*, F*, F*);
    return own(sb, sc, st, rb, rc, rt, comm, request, ierr);
  }
  MPI_Request c = MPI_REQUEST_NULL;
  const int code = MPI_Ineighbor_allgather(sb, *sc, PMPI_Type_f2c(*st), rb, *rc, PMPI_Type_f2c(*rt), PMPI_Comm_f2c(*comm), &c);
  out_request(code, c, request, ierr);
}

SPC_F(void) ompi_ineighbor_alltoall_f(char* sb, F* sc, F* st, char* rb, F* rc, F* rt, F* comm, F* request, F* ierr) {
  if (sentinel(sb) || sentinel(rb)) {
    SPC_OWN(ineighbor_alltoall, char*, F*, F*, char*, F*, F*, F*, F*, F*);
    return own(sb, sc, st, rb, rc, rt, comm, request, ierr);
  }
  MPI_Request c = MPI_REQUEST_NULL;
  const int code = MPI_Ineighbor_alltoall(sb, *sc, PMPI_Type_f2c(*st), rb, *rc, PMPI_Type_f2c(*rt), PMPI_Comm_f2c(*comm), &c);
  out_request(code, c, request, ierr);
}

SPC_F(void) ompi_ineighbor_allgatherv_f(char* sb, F* sc, F* st, char* rb, F* rcs, F* rds, F* rt, F* comm, F* request,
                                        F* ierr) {
  if (sentinel(sb) || sentinel(rb)) {
    SPC_OWN(ineighbor_allgatherv, char*, F*, F*, char*, F*, F*, F*, F*, F*, F*);
    return own(sb, sc, st, rb, rcs, rds, rt, comm, request, ierr);
  }
  MPI_Request c = MPI_REQUEST_NULL;
  const int code = MPI_Ineighbor_allgatherv(sb, *sc, PMPI_Type_f2c(*st), rb, rcs, rds, PMPI_Type_f2c(*rt),
                                       PMPI_Comm_f2c(*comm), &c);
  out_request(code, c, request, ierr);
}

SPC_F(void) ompi_ineighbor_alltoallv_f(char* sb, F* scs, F* sds, F* st, char* rb, F* rcs, F* rds, F* rt, F* comm,
                                       F* request, F* ierr) {
  if (sentinel(sb) || sentinel(rb)) {
    SPC_OWN(ineighbor_alltoallv, char*, F*, F*, F*, char*, F*, F*, F*, F*, F*, F*);
    return own(sb, scs, sds, st, rb, rcs, rds, rt, comm, request, ierr);
  }
  MPI_Request c = MPI_REQUEST_NULL;
  const int code = MPI_Ineighbor_alltoallv(sb, scs, sds, PMPI_Type_f2c(*st), rb, rcs, rds, PMPI_Type_f2c(*rt),
                                      PMPI_Comm_f2c(*comm), &c);
  out_request(code, c, request, ierr);
}

// Open MPI 4.1's persistent neighborhood collectives (the pcollreq extension: mpi_ext /
// mpif-ext.h), Fortran names ompix_*_f / mpix_*_.
#ifdef SPARSECOMM_HAVE_MPIX_NEIGHBOR_INIT
#define SPC_OWNX(name, ...)                           \
  using Own = void (*)(__VA_ARGS__);                  \
  static const Own own = original<Own>("ompix_" #name "_f", "mpix_" #name "_")

SPC_F(void) ompix_neighbor_allgather_init_f(char* sb, F* sc, F* st, char* rb, F* rc, F* rt, F* comm, F* info,
                                            F* request, F* ierr) {
  if (sentinel(sb) || sentinel(rb)) {
    SPC_OWNX(neighbor_allgather_init, char*, F*, F*, char*, F*, F*, F*, F*, F*, F*);
    return own(sb, sc, st, rb, rc, rt, comm, info, request, ierr);
  }
  MPI_Request c = MPI_REQUEST_NULL;
  const int code = MPIX_Neighbor_allgather_init(sb, *sc, PMPI_Type_f2c(*st), rb, *rc, PMPI_Type_f2c(*rt),
                                           PMPI_Comm_f2c(*comm), PMPI_Info_f2c(*info), &c);
  out_request(code, c, request, ierr);
}

SPC_F(void) ompix_neighbor_alltoall_init_f(char* sb, F* sc, F* st, char* rb, F* rc, F* rt, F* comm, F* info,
                                           F* request, F* ierr) {
  if (sentinel(sb) || sentinel(rb)) {
    SPC_OWNX(neighbor_alltoall_init, char*, F*, F*, char*, F*, F*, F*, F*, F*, F*);
    return own(sb, sc, st, rb, rc, rt, comm, info, request, ierr);
  }
  MPI_Request c = MPI_REQUEST_NULL;
  const int code = MPIX_Neighbor_alltoall_init(sb, *sc, PMPI_Type_f2c(*st), rb, *rc, PMPI_Type_f2c(*rt),
                                          PMPI_Comm_f2c(*comm), PMPI_Info_f2c(*info), &c);
  out_request(code, c, request, ierr);
}

SPC_F(void) ompix_neighbor_allgatherv_init_f(char* sb, F* sc, F* st, char* rb, F* rcs, F* rds, F* rt, F* comm,
                                             F* info, F* request, F* ierr) {
  if (sentinel(sb) || sentinel(rb)) {
    SPC_OWNX(neighbor_allgatherv_init, char*, F*, F*, char*, F*, F*, F*, F*, F*, F*, F*);
    return own(sb, sc, st, rb, rcs, rds, rt, comm, info, request, ierr);
  }
  MPI_Request c = MPI_REQUEST_NULL;
  const int code = MPIX_Neighbor_allgatherv_init(sb, *sc, PMPI_Type_f2c(*st), rb, rcs, rds, PMPI_Type_f2c(*rt),
                                            PMPI_Comm_f2c(*comm), PMPI_Info_f2c(*info), &c);
  out_request(code, c, request, ierr);
}

SPC_F(void) ompix_neighbor_alltoallv_init_f(char* sb, F* scs, F* sds, F* st, char* rb, F* rcs, F* rds, F* rt,
                                            F* comm, F* info, F* request, F* ierr) {
  if (sentinel(sb) || sentinel(rb)) {
    SPC_OWNX(neighbor_alltoallv_init, char*, F*, F*, F*, char*, F*, F*, F*, F*, F*, F*, F*);
    return own(sb, scs, sds, st, rb, rcs, rds, rt, comm, info, request, ierr);
  }
  MPI_Request c = MPI_REQUEST_NULL;
  const int code = MPIX_Neighbor_alltoallv_init(sb, scs, sds, PMPI_Type_f2c(*st), rb, rcs, rds, PMPI_Type_f2c(*rt),
                                           PMPI_Comm_f2c(*comm), PMPI_Info_f2c(*info), &c);
  out_request(code, c, request, ierr);
}
#define SPC_FORTRANX(name, NAME)                                                                    \
  SPC_F(decltype(ompix_##name##_f)) mpix_##name##_ __attribute__((alias("ompix_" #name "_f")));    \
  SPC_F(decltype(ompix_##name##_f)) mpix_##name##__ __attribute__((alias("ompix_" #name "_f")));   \
  SPC_F(decltype(ompix_##name##_f)) mpix_##name __attribute__((alias("ompix_" #name "_f")));       \
  SPC_F(decltype(ompix_##name##_f)) NAME __attribute__((alias("ompix_" #name "_f")));
SPC_FORTRANX(neighbor_allgather_init, MPIX_NEIGHBOR_ALLGATHER_INIT)
SPC_FORTRANX(neighbor_alltoall_init, MPIX_NEIGHBOR_ALLTOALL_INIT)
SPC_FORTRANX(neighbor_allgatherv_init, MPIX_NEIGHBOR_ALLGATHERV_INIT)
SPC_FORTRANX(neighbor_alltoallv_init, MPIX_NEIGHBOR_ALLTOALLV_INIT)
#endif

// ------------------------------------------------------------------ completion and start

SPC_F(void) ompi_wait_f(F* request, F* status, F* ierr) {
  std::vector<MPI_Request> c;
  if (!any_requests() || !convert(1, request, c)) {
    SPC_OWN(wait, F*, F*, F*);
    return own(request, status, ierr);
  }
  Statuses st(status, 1, false);
  const int rc = MPI_Wait(&c[0], st.one());
  back(c, request), st.back(1), set(ierr, rc);
}

SPC_F(void) ompi_test_f(F* request, F* flag, F* status, F* ierr) {
  std::vector<MPI_Request> c;
  if (!any_requests() || !convert(1, request, c)) {
    SPC_OWN(test, F*, F*, F*, F*);
    return own(request, flag, status, ierr);
  }
  Statuses st(status, 1, false);
  int cf = 0;
  const int rc = MPI_Test(&c[0], &cf, st.one());
  *flag = cf ? fortran_true() : 0;
  back(c, request), set(ierr, rc);
  if (cf) st.back(1);
}

SPC_F(void) ompi_waitall_f(F* count, F* requests, F* statuses, F* ierr) {
  std::vector<MPI_Request> c;
  if (!any_requests() || !convert(*count, requests, c)) {
    SPC_OWN(waitall, F*, F*, F*, F*);
    return own(count, requests, statuses, ierr);
  }
  Statuses st(statuses, *count, true);
  const int rc = MPI_Waitall(*count, c.data(), st.all());
  back(c, requests), st.back(*count), set(ierr, rc);
}

SPC_F(void) ompi_testall_f(F* count, F* requests, F* flag, F* statuses, F* ierr) {
  std::vector<MPI_Request> c;
  if (!any_requests() || !convert(*count, requests, c)) {
    SPC_OWN(testall, F*, F*, F*, F*, F*);
    return own(count, requests, flag, statuses, ierr);
  }
  Statuses st(statuses, *count, true);
  int cf = 0;
  const int rc = MPI_Testall(*count, c.data(), &cf, st.all());
  *flag = cf ? fortran_true() : 0;
  back(c, requests), set(ierr, rc);
  if (cf) st.back(*count);
}

SPC_F(void) ompi_waitany_f(F* count, F* requests, F* index, F* status, F* ierr) {
  std::vector<MPI_Request> c;
  if (!any_requests() || !convert(*count, requests, c)) {
    SPC_OWN(waitany, F*, F*, F*, F*, F*);
    return own(count, requests, index, status, ierr);
  }
  Statuses st(status, 1, false);
  int i = MPI_UNDEFINED;
  const int rc = MPI_Waitany(*count, c.data(), &i, st.one());
  *index = i == MPI_UNDEFINED ? MPI_UNDEFINED : i + 1;
  back(c, requests), st.back(1), set(ierr, rc);
}

SPC_F(void) ompi_testany_f(F* count, F* requests, F* index, F* flag, F* status, F* ierr) {
  std::vector<MPI_Request> c;
  if (!any_requests() || !convert(*count, requests, c)) {
    SPC_OWN(testany, F*, F*, F*, F*, F*, F*);
    return own(count, requests, index, flag, status, ierr);
  }
  Statuses st(status, 1, false);
  int i = MPI_UNDEFINED, cf = 0;
  const int rc = MPI_Testany(*count, c.data(), &i, &cf, st.one());
  *index = i == MPI_UNDEFINED ? MPI_UNDEFINED : i + 1;
  *flag = cf ? fortran_true() : 0;
  back(c, requests), set(ierr, rc);
  if (cf) st.back(1);
}

// Waitsome and Testsome: the same conversion.
template <class Call>
static void some(F* count, F* requests, F* outcount, F* indices, F* statuses, F* ierr, Call call) {
  std::vector<MPI_Request> c;
  convert(*count, requests, c);
  Statuses st(statuses, *count, true);
  std::vector<int> idx(static_cast<size_t>(std::max(*count, 1)));
  int out = MPI_UNDEFINED;
  const int rc = call(*count, c.data(), &out, idx.data(), st.all());
  *outcount = out;
  if (out != MPI_UNDEFINED)
    for (int k = 0; k < out; ++k) indices[k] = idx[static_cast<size_t>(k)] + 1;
  back(c, requests), set(ierr, rc);
  if (out != MPI_UNDEFINED) st.back(out);
}

SPC_F(void) ompi_waitsome_f(F* count, F* requests, F* outcount, F* indices, F* statuses, F* ierr) {
  std::vector<MPI_Request> c;
  if (!any_requests() || !convert(*count, requests, c)) {
    SPC_OWN(waitsome, F*, F*, F*, F*, F*, F*);
    return own(count, requests, outcount, indices, statuses, ierr);
  }
  some(count, requests, outcount, indices, statuses, ierr, MPI_Waitsome);
}

SPC_F(void) ompi_testsome_f(F* count, F* requests, F* outcount, F* indices, F* statuses, F* ierr) {
  std::vector<MPI_Request> c;
  if (!any_requests() || !convert(*count, requests, c)) {
    SPC_OWN(testsome, F*, F*, F*, F*, F*, F*);
    return own(count, requests, outcount, indices, statuses, ierr);
  }
  some(count, requests, outcount, indices, statuses, ierr, MPI_Testsome);
}

SPC_F(void) ompi_start_f(F* request, F* ierr) {
  std::vector<MPI_Request> c;
  if (!any_requests() || !convert(1, request, c)) {
    SPC_OWN(start, F*, F*);
    return own(request, ierr);
  }
  set(ierr, MPI_Start(&c[0]));
}

SPC_F(void) ompi_startall_f(F* count, F* requests, F* ierr) {
  std::vector<MPI_Request> c;
  if (!any_requests() || !convert(*count, requests, c)) {
    SPC_OWN(startall, F*, F*, F*);
    return own(count, requests, ierr);
  }
  set(ierr, MPI_Startall(*count, c.data()));
}

SPC_F(void) ompi_request_free_f(F* request, F* ierr) {
  std::vector<MPI_Request> c;
  if (!any_requests() || !convert(1, request, c)) {
    SPC_OWN(request_free, F*, F*);
    return own(request, ierr);
  }
  const int rc = MPI_Request_free(&c[0]);
  back(c, request), set(ierr, rc);
}

SPC_F(void) ompi_request_get_status_f(F* request, F* flag, F* status, F* ierr) {
  std::vector<MPI_Request> c;
  if (!any_requests() || !convert(1, request, c)) {
    SPC_OWN(request_get_status, F*, F*, F*, F*);
    return own(request, flag, status, ierr);
  }
  Statuses st(status, 1, false);
  int cf = 0;
  const int rc = MPI_Request_get_status(c[0], &cf, st.one());
  *flag = cf ? fortran_true() : 0;
  set(ierr, rc);
  if (cf) st.back(1);
}

SPC_FORTRAN(neighbor_allgather, MPI_NEIGHBOR_ALLGATHER)
SPC_FORTRAN(neighbor_alltoall, MPI_NEIGHBOR_ALLTOALL)
SPC_FORTRAN(neighbor_allgatherv, MPI_NEIGHBOR_ALLGATHERV)
SPC_FORTRAN(neighbor_alltoallv, MPI_NEIGHBOR_ALLTOALLV)
SPC_FORTRAN(ineighbor_allgather, MPI_INEIGHBOR_ALLGATHER)
SPC_FORTRAN(ineighbor_alltoall, MPI_INEIGHBOR_ALLTOALL)
SPC_FORTRAN(ineighbor_allgatherv, MPI_INEIGHBOR_ALLGATHERV)
SPC_FORTRAN(ineighbor_alltoallv, MPI_INEIGHBOR_ALLTOALLV)
// The completion calls also under their Fortran profiling names: Open MPI's mpi_f08
// wrappers of MPI_TEST, MPI_TESTALL, MPI_TESTANY, MPI_TESTSOME and MPI_REQUEST_GET_STATUS
// call pmpi_test_ and the like (libmpi_usempif08's imports), not ompi_test_f. A request of
// the layer means nothing to MPI's own, whichever name reaches it; every other request
// still goes to MPI's own implementation.
#define SPC_FORTRAN_PMPI(name, NAME)                                                                 \
  SPC_F(decltype(ompi_##name##_f)) pmpi_##name##_ __attribute__((alias("ompi_" #name "_f")));       \
  SPC_F(decltype(ompi_##name##_f)) pmpi_##name##__ __attribute__((alias("ompi_" #name "_f")));      \
  SPC_F(decltype(ompi_##name##_f)) pmpi_##name __attribute__((alias("ompi_" #name "_f")));          \
  SPC_F(decltype(ompi_##name##_f)) P##NAME __attribute__((alias("ompi_" #name "_f")));
SPC_FORTRAN_PMPI(wait, MPI_WAIT)
SPC_FORTRAN_PMPI(test, MPI_TEST)
SPC_FORTRAN_PMPI(waitall, MPI_WAITALL)
SPC_FORTRAN_PMPI(testall, MPI_TESTALL)
SPC_FORTRAN_PMPI(waitany, MPI_WAITANY)
SPC_FORTRAN_PMPI(testany, MPI_TESTANY)
SPC_FORTRAN_PMPI(waitsome, MPI_WAITSOME)
SPC_FORTRAN_PMPI(testsome, MPI_TESTSOME)
SPC_FORTRAN_PMPI(start, MPI_START)
SPC_FORTRAN_PMPI(startall, MPI_STARTALL)
SPC_FORTRAN_PMPI(request_free, MPI_REQUEST_FREE)
SPC_FORTRAN_PMPI(request_get_status, MPI_REQUEST_GET_STATUS)
SPC_FORTRAN(wait, MPI_WAIT)
SPC_FORTRAN(test, MPI_TEST)
SPC_FORTRAN(waitall, MPI_WAITALL)
SPC_FORTRAN(testall, MPI_TESTALL)
SPC_FORTRAN(waitany, MPI_WAITANY)
SPC_FORTRAN(testany, MPI_TESTANY)
SPC_FORTRAN(waitsome, MPI_WAITSOME)
SPC_FORTRAN(testsome, MPI_TESTSOME)
SPC_FORTRAN(start, MPI_START)
SPC_FORTRAN(startall, MPI_STARTALL)
SPC_FORTRAN(request_free, MPI_REQUEST_FREE)
SPC_FORTRAN(request_get_status, MPI_REQUEST_GET_STATUS)
