// Fortran entry points of the blocking neighborhood collectives, so that a Fortran program
// (mpif.h, `use mpi`, `use mpi_f08`) under LD_PRELOAD=libsparsecomm_mpi.so is served like a
// C one.
//
// Why they are needed: Open MPI's Fortran bindings convert the handles and call the C
// *profiling* functions (mpi_neighbor_allgather_ -> PMPI_Neighbor_allgather), so the C
// entries of this layer (pmpi_neighbor.cpp) never see a Fortran call. The names a Fortran
// call reaches: the mpif.h / `use mpi` external names in every mangling a compiler may use
// (mpi_neighbor_allgather_, mpi_neighbor_allgather__, mpi_neighbor_allgather,
// MPI_NEIGHBOR_ALLGATHER), and Open MPI's shared implementation ompi_neighbor_allgather_f,
// which the `use mpi_f08` wrappers (libmpi_usempif08) call through the PLT. Each is defined
// here once, converts the handles (MPI_Comm_f2c, MPI_Type_f2c: MPI's own conversions), and
// calls this layer's C entry, which decides as for a C call and passes on to PMPI_* where
// it steps aside — what Open MPI's own Fortran wrapper would have called.
//
// Passed to MPI's own Fortran function untouched (dlsym(RTLD_NEXT), never guessed):
// a buffer that is one of Fortran's sentinels (MPI_BOTTOM, MPI_IN_PLACE: addresses of
// common blocks that only MPI's wrapper knows how to translate). Not defined here, so they
// reach MPI's own directly: the non-blocking and persistent forms (their requests would be
// completed by Fortran's MPI_WAIT, which Open MPI also sends straight to PMPI_Wait, past
// this layer's request table) and the completion calls. docs/interposition.md.
#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

static_assert(sizeof(MPI_Fint) == sizeof(int), "Fortran INTEGER must be a C int (count arrays are used in place)");

namespace {

// Whether p is the address of one of MPI's Fortran sentinel buffers (any mangling).
bool sentinel(const void* p) {
  static const std::vector<const void*> known = [] {
    std::vector<const void*> v;
    for (const char* n : {"mpi_fortran_bottom_", "mpi_fortran_bottom", "mpi_fortran_bottom__", "MPI_FORTRAN_BOTTOM",
                          "mpi_fortran_in_place_", "mpi_fortran_in_place", "mpi_fortran_in_place__",
                          "MPI_FORTRAN_IN_PLACE"})
      if (void* a = dlsym(RTLD_DEFAULT, n)) v.push_back(a);
    return v;
  }();
  return std::find(known.begin(), known.end(), p) != known.end();
}

// MPI's own Fortran implementation of a function: Open MPI's shared one, else the mpif.h
// name. Absent (a Fortran call reached the layer, so MPI's Fortran library is loaded):
// nothing can be passed on.
template <class F>
F original(const char* ompi_name, const char* mpif_name) {
  void* p = dlsym(RTLD_NEXT, ompi_name);
  if (!p) p = dlsym(RTLD_NEXT, mpif_name);
  if (!p) {
    std::fprintf(stderr, "sparsecomm mpi: error: %s not found in the MPI library loaded after the layer\n", mpif_name);
    std::exit(2);
  }
  return reinterpret_cast<F>(p);
}

void set(MPI_Fint* ierr, int rc) {
  if (ierr) *ierr = static_cast<MPI_Fint>(rc);
}

}  // namespace

#define SPC_FORTRAN(name)                                                                                    \
  extern "C" __attribute__((visibility("default"), alias("ompi_" #name "_f"))) decltype(ompi_##name##_f) mpi_##name##_; \
  extern "C" __attribute__((visibility("default"), alias("ompi_" #name "_f"))) decltype(ompi_##name##_f) mpi_##name##__; \
  extern "C" __attribute__((visibility("default"), alias("ompi_" #name "_f"))) decltype(ompi_##name##_f) mpi_##name;

extern "C" {

__attribute__((visibility("default"))) void ompi_neighbor_allgather_f(char* sb, MPI_Fint* sc, MPI_Fint* st, char* rb,
                                                                      MPI_Fint* rc, MPI_Fint* rt, MPI_Fint* comm,
                                                                      MPI_Fint* ierr) {
  if (sentinel(sb) || sentinel(rb)) {
    using F = void (*)(char*, MPI_Fint*, MPI_Fint*, char*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
    static const F own = original<F>("ompi_neighbor_allgather_f", "mpi_neighbor_allgather_");
    return own(sb, sc, st, rb, rc, rt, comm, ierr);
  }
  set(ierr, MPI_Neighbor_allgather(sb, *sc, PMPI_Type_f2c(*st), rb, *rc, PMPI_Type_f2c(*rt), PMPI_Comm_f2c(*comm)));
}

__attribute__((visibility("default"))) void ompi_neighbor_alltoall_f(char* sb, MPI_Fint* sc, MPI_Fint* st, char* rb,
                                                                     MPI_Fint* rc, MPI_Fint* rt, MPI_Fint* comm,
                                                                     MPI_Fint* ierr) {
  if (sentinel(sb) || sentinel(rb)) {
    using F = void (*)(char*, MPI_Fint*, MPI_Fint*, char*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
    static const F own = original<F>("ompi_neighbor_alltoall_f", "mpi_neighbor_alltoall_");
    return own(sb, sc, st, rb, rc, rt, comm, ierr);
  }
  set(ierr, MPI_Neighbor_alltoall(sb, *sc, PMPI_Type_f2c(*st), rb, *rc, PMPI_Type_f2c(*rt), PMPI_Comm_f2c(*comm)));
}

__attribute__((visibility("default"))) void ompi_neighbor_allgatherv_f(char* sb, MPI_Fint* sc, MPI_Fint* st, char* rb,
                                                                       MPI_Fint* rcs, MPI_Fint* rds, MPI_Fint* rt,
                                                                       MPI_Fint* comm, MPI_Fint* ierr) {
  if (sentinel(sb) || sentinel(rb)) {
    using F = void (*)(char*, MPI_Fint*, MPI_Fint*, char*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
    static const F own = original<F>("ompi_neighbor_allgatherv_f", "mpi_neighbor_allgatherv_");
    return own(sb, sc, st, rb, rcs, rds, rt, comm, ierr);
  }
  set(ierr, MPI_Neighbor_allgatherv(sb, *sc, PMPI_Type_f2c(*st), rb, rcs, rds, PMPI_Type_f2c(*rt), PMPI_Comm_f2c(*comm)));
}

__attribute__((visibility("default"))) void ompi_neighbor_alltoallv_f(char* sb, MPI_Fint* scs, MPI_Fint* sds,
                                                                      MPI_Fint* st, char* rb, MPI_Fint* rcs,
                                                                      MPI_Fint* rds, MPI_Fint* rt, MPI_Fint* comm,
                                                                      MPI_Fint* ierr) {
  if (sentinel(sb) || sentinel(rb)) {
    using F = void (*)(char*, MPI_Fint*, MPI_Fint*, MPI_Fint*, char*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*,
                       MPI_Fint*);
    static const F own = original<F>("ompi_neighbor_alltoallv_f", "mpi_neighbor_alltoallv_");
    return own(sb, scs, sds, st, rb, rcs, rds, rt, comm, ierr);
  }
  set(ierr, MPI_Neighbor_alltoallv(sb, scs, sds, PMPI_Type_f2c(*st), rb, rcs, rds, PMPI_Type_f2c(*rt),
                                   PMPI_Comm_f2c(*comm)));
}

}  // extern "C"

// The mpif.h / `use mpi` names, every mangling, as aliases of the functions above.
SPC_FORTRAN(neighbor_allgather)
SPC_FORTRAN(neighbor_alltoall)
SPC_FORTRAN(neighbor_allgatherv)
SPC_FORTRAN(neighbor_alltoallv)
extern "C" __attribute__((visibility("default"), alias("ompi_neighbor_allgather_f")))
decltype(ompi_neighbor_allgather_f) MPI_NEIGHBOR_ALLGATHER;
extern "C" __attribute__((visibility("default"), alias("ompi_neighbor_alltoall_f")))
decltype(ompi_neighbor_alltoall_f) MPI_NEIGHBOR_ALLTOALL;
extern "C" __attribute__((visibility("default"), alias("ompi_neighbor_allgatherv_f")))
decltype(ompi_neighbor_allgatherv_f) MPI_NEIGHBOR_ALLGATHERV;
extern "C" __attribute__((visibility("default"), alias("ompi_neighbor_alltoallv_f")))
decltype(ompi_neighbor_alltoallv_f) MPI_NEIGHBOR_ALLTOALLV;
