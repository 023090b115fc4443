# Fortran programs under the PMPI layer (included from tests/pmpi/CMakeLists.txt): fortran_nbr.F90
# built with `use mpi` and `use mpi_f08`, each with the persistent neighbor allgather this MPI's
# Fortran API has (MPI-4's MPI_Neighbor_allgather_init, or Open MPI 4.1's MPIX_ from mpi_ext),
# found by compiling against it.
include(CheckLanguage)
check_language(Fortran)
if(NOT CMAKE_Fortran_COMPILER)
  sparsecomm_skipped_test(mpi_pmpi_fortran "no Fortran compiler")
  return()
endif()
enable_language(Fortran)
find_package(MPI COMPONENTS Fortran)
if(NOT TARGET MPI::MPI_Fortran)
  sparsecomm_skipped_test(mpi_pmpi_fortran "MPI has no Fortran bindings")
  return()
endif()
include(CheckFortranSourceCompiles)

# sparsecomm_fortran_init(<out> <module> <extra use> <name>): whether `use <module>` (and
# <extra use>) offers the subroutine <name> as the persistent neighbor allgather.
function(sparsecomm_fortran_init out module extra name)
  set(CMAKE_REQUIRED_LIBRARIES MPI::MPI_Fortran)
  set(CMAKE_REQUIRED_QUIET ON)
  if(module STREQUAL "mpi_f08")
    set(decl "type(MPI_Comm) :: g\n  type(MPI_Request) :: r")
  else()
    set(decl "integer :: g, r")
  endif()
  check_fortran_source_compiles("
program p
  use ${module}
  ${extra}
  implicit none
  ${decl}
  integer :: sb(1), rb(1), ierr
  g = MPI_COMM_WORLD
  call ${name}(sb, 1, MPI_INTEGER, rb, 1, MPI_INTEGER, g, MPI_INFO_NULL, r, ierr)
end program" ${out} SRC_EXT F90)
  set(${out} ${${out}} PARENT_SCOPE)
endfunction()

foreach(api mpi mpi_f08)
  set(defs "")
  sparsecomm_fortran_init(SPARSECOMM_F_${api}_MPI4_INIT ${api} "" MPI_Neighbor_allgather_init)
  if(SPARSECOMM_F_${api}_MPI4_INIT)
    list(APPEND defs NBR_ALLGATHER_INIT=MPI_Neighbor_allgather_init)
  else()
    sparsecomm_fortran_init(SPARSECOMM_F_${api}_MPIX_INIT ${api} "use mpi_ext" MPIX_Neighbor_allgather_init)
    if(SPARSECOMM_F_${api}_MPIX_INIT)
      list(APPEND defs NBR_ALLGATHER_INIT=MPIX_Neighbor_allgather_init USE_MPI_EXT)
    endif()
  endif()
  add_executable(pmpi_fortran_${api} fortran_nbr.F90 mpi_bugs_f.c)
  target_link_libraries(pmpi_fortran_${api} PRIVATE MPI::MPI_Fortran MPI::MPI_C)
  set_target_properties(pmpi_fortran_${api} PROPERTIES Fortran_MODULE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fmod_${api})
  target_compile_definitions(pmpi_fortran_${api} PRIVATE ${defs})
  set(calls 650)
  set(persistent 0/0)
  if(defs)
    set(calls 750)
    set(persistent 100/0)
  endif()
  if(api STREQUAL "mpi_f08")
    target_compile_definitions(pmpi_fortran_${api} PRIVATE USE_F08)
  endif()
  # The MPI_BOTTOM calls (50 allgathers): never at the layer's C entries where MPI's Fortran
  # bindings call the C profiling functions (the layer's Fortran entries pass them to MPI's own
  # Fortran function); counted there where the bindings call the C MPI_ functions (MPICH),
  # which convert MPI_BOTTOM themselves (a type of absolute addresses: passed on by forced
  # backends, taken by auto's one-node exchange).
  # Non-blocking and persistent calls: through the layer's own Fortran entries where it has
  # them; where MPI's bindings call the C entries (MPICH), MPI's own (its mpi_f08 module
  # completes requests through PMPI_Wait & co. directly, where a request of the layer would
  # never be completed: from_fortran_binding in pmpi_neighbor.cpp).
  if(SPARSECOMM_PMPI_FORTRAN_ENTRIES)
    set(ag_auto "49/1")
    set(ag_combined "50/0")
    set(nb_auto "100/0")
  else()
    set(ag_auto "99/1")
    set(ag_combined "50/50")
    set(nb_auto "0/100")
    if(defs)
      set(persistent 0/100)
    endif()
  endif()
  foreach(np 1 2 3 4 8)
    set(checked "fortran_nbr [(]use ${api}[)]: ${calls} calls, [0-9]+ values checked on ${np} ranks, 0 wrong")
    sparsecomm_add_mpi_test(mpi_pmpi_fortran_${api}_plain pmpi_fortran_${api} RANKS ${np} RANK0 "${checked}" NONE "WRONG")
    # auto on one node: everything through the one-node exchange but the communicator's first
    # allgather (its set-up) and the persistent form (its own plan)
    sparsecomm_pmpi_test(mpi_pmpi_fortran_${api}_auto pmpi_fortran_${api} RANKS ${np} ENV SPARSECOMM_MPI_VERBOSE=1
      RANK0 "${checked}"
      EACH "MPI_Neighbor_allgather ${ag_auto}, MPI_Neighbor_alltoall 50/0, MPI_Ineighbor_allgather ${nb_auto}, ${init}_allgather_init ${persistent}, MPI_Neighbor_allgatherv 50/0, MPI_Neighbor_alltoallv 50/0, MPI_Ineighbor_allgatherv ${nb_auto}, ${init}_allgatherv_init 0/0, MPI_Ineighbor_alltoall ${nb_auto}, ${init}_alltoall_init 0/0, MPI_Ineighbor_alltoallv ${nb_auto},"
      NONE "WRONG|error")
    # combined: the blocking and persistent forms (below 4 ranks the ring names a rank twice:
    # alltoall(v) passed on, as for C); non-blocking calls without the fixed-counts hint are
    # MPI's own
    set(a2a "50/0")
    if(np LESS 4)
      set(a2a "0/50")
    endif()
    sparsecomm_pmpi_test(mpi_pmpi_fortran_${api}_combined pmpi_fortran_${api} RANKS ${np}
      ENV SPARSECOMM_MPI_BACKEND=combined SPARSECOMM_MPI_VERBOSE=1 RANK0 "${checked}"
      EACH "MPI_Neighbor_allgather ${ag_combined}, MPI_Neighbor_alltoall ${a2a}, MPI_Ineighbor_allgather 0/100, ${init}_allgather_init ${persistent}, MPI_Neighbor_allgatherv 50/0, MPI_Neighbor_alltoallv ${a2a}, MPI_Ineighbor_allgatherv 0/100,"
      NONE "WRONG|error")
  endforeach()
endforeach()
