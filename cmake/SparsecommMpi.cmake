# What the MPI of this build offers, found by compiling against it (never guessed from the
# implementation's name), and whether a prebuilt dependency (Hypre, PETSc, CombBLAS) was
# built against this same MPI.
#
# Compile definitions, in SPARSECOMM_MPI_FEATURE_DEFS for the targets that use them:
#   SPARSECOMM_HAVE_MPI_EXT_H        <mpi-ext.h> exists (Open MPI's extensions header)
#   SPARSECOMM_HAVE_MPI4_NEIGHBOR_INIT  MPI-4's MPI_Neighbor_{allgather,...}_init
#   SPARSECOMM_HAVE_MPIX_NEIGHBOR_INIT  the same as MPIX_ (Open MPI 4.1's pcollreq extension)
#   SPARSECOMM_HAVE_MPIX_ALLREDUCE_INIT MPIX_Allreduce_init (MPI-4's name needs MPI_VERSION >= 4)
include(CheckCSourceCompiles)

function(sparsecomm_mpi_feature var code)
  set(CMAKE_REQUIRED_LIBRARIES MPI::MPI_C)
  set(CMAKE_REQUIRED_QUIET ON)
  # (a function the header does not declare must fail the check, as it would in C++)
  set(CMAKE_REQUIRED_FLAGS "-Werror=implicit-function-declaration")
  check_c_source_compiles("
#include <mpi.h>
#if defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif
int main(int argc, char** argv) { ${code} return 0; }" ${var})
  set(${var} ${${var}} PARENT_SCOPE)
endfunction()

function(sparsecomm_detect_mpi_features)
  set(CMAKE_REQUIRED_LIBRARIES MPI::MPI_C)
  set(CMAKE_REQUIRED_QUIET ON)
  check_c_source_compiles("#include <mpi.h>\n#include <mpi-ext.h>\nint main(void) { return 0; }"
                          SPARSECOMM_HAVE_MPI_EXT_H)
  sparsecomm_mpi_feature(SPARSECOMM_HAVE_MPI4_NEIGHBOR_INIT
    "MPI_Request r; (void)MPI_Neighbor_alltoallv_init(0, 0, 0, MPI_INT, 0, 0, 0, MPI_INT, MPI_COMM_NULL, MPI_INFO_NULL, &r);
     (void)MPI_Neighbor_allgather_init(0, 0, MPI_INT, 0, 0, MPI_INT, MPI_COMM_NULL, MPI_INFO_NULL, &r);")
  sparsecomm_mpi_feature(SPARSECOMM_HAVE_MPIX_NEIGHBOR_INIT
    "MPI_Request r; (void)MPIX_Neighbor_alltoallv_init(0, 0, 0, MPI_INT, 0, 0, 0, MPI_INT, MPI_COMM_NULL, MPI_INFO_NULL, &r);
     (void)MPIX_Neighbor_allgather_init(0, 0, MPI_INT, 0, 0, MPI_INT, MPI_COMM_NULL, MPI_INFO_NULL, &r);")
  sparsecomm_mpi_feature(SPARSECOMM_HAVE_MPIX_ALLREDUCE_INIT
    "MPI_Request r; (void)MPIX_Allreduce_init(0, 0, 0, MPI_INT, MPI_SUM, MPI_COMM_NULL, MPI_INFO_NULL, &r);")
  set(found "")
  set(defs "")
  foreach(f SPARSECOMM_HAVE_MPI_EXT_H SPARSECOMM_HAVE_MPI4_NEIGHBOR_INIT SPARSECOMM_HAVE_MPIX_NEIGHBOR_INIT
            SPARSECOMM_HAVE_MPIX_ALLREDUCE_INIT)
    if(${f})
      list(APPEND defs ${f}=1)
      string(REPLACE "SPARSECOMM_HAVE_" "" short ${f})
      list(APPEND found ${short})
    endif()
  endforeach()
  set(SPARSECOMM_MPI_FEATURE_DEFS ${defs} PARENT_SCOPE)
  string(REPLACE ";" ", " found "${found}")
  message(STATUS "sparsecomm: MPI ${MPI_C_VERSION} features: ${found}")
endfunction()

# sparsecomm_library_needed(<out> <library file> <regex>): the libraries <library file> itself
# links (its ELF DT_NEEDED entries) that match <regex>, or "" where none or where this cannot
# be read (no objdump, not ELF).
function(sparsecomm_library_needed out file regex)
  set(${out} "" PARENT_SCOPE)
  if(NOT CMAKE_OBJDUMP OR NOT EXISTS "${file}")
    return()
  endif()
  get_filename_component(real "${file}" REALPATH)
  execute_process(COMMAND ${CMAKE_OBJDUMP} -p "${real}" OUTPUT_VARIABLE dump ERROR_QUIET RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    return()
  endif()
  string(REGEX MATCHALL "NEEDED +${regex}[^ \n]*" needed "${dump}")
  set(names "")
  foreach(n IN LISTS needed)
    string(REGEX REPLACE "NEEDED +" "" n "${n}")
    list(APPEND names ${n})
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

# The sonames of this build's MPI C library.
function(sparsecomm_our_mpi out)
  set(names "")
  foreach(lib IN LISTS MPI_C_LIBRARIES)
    if(EXISTS "${lib}" AND CMAKE_OBJDUMP)
      get_filename_component(real "${lib}" REALPATH)
      execute_process(COMMAND ${CMAKE_OBJDUMP} -p "${real}" OUTPUT_VARIABLE dump ERROR_QUIET)
      if(dump MATCHES "SONAME +([^ \n]+)")
        list(APPEND names ${CMAKE_MATCH_1})
      endif()
    endif()
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

# sparsecomm_dependency_usable(<out> <name> <library file>): TRUE unless <library file> links
# an MPI library that is not this build's (Debian's Hypre, PETSc and CombBLAS are built against
# Open MPI: linked into an MPICH program they would bring a second MPI into the process).
# Says why on a mismatch.
function(sparsecomm_dependency_usable out name file)
  set(${out} TRUE PARENT_SCOPE)
  if(SPARSECOMM_SMPI)
    return()
  endif()
  sparsecomm_library_needed(theirs "${file}" "lib(mpi|mpich|impi|mpi_cray)")
  if(NOT theirs)
    return()
  endif()
  sparsecomm_our_mpi(ours)
  if(NOT ours)
    return()
  endif()
  foreach(t IN LISTS theirs)
    if(t IN_LIST ours)
      return()
    endif()
  endforeach()
  string(REPLACE ";" ", " theirs "${theirs}")
  string(REPLACE ";" ", " ours "${ours}")
  message(STATUS "sparsecomm: ${name} (${file}) is built against ${theirs}, this build uses ${ours}: "
                 "everything that needs ${name} is skipped")
  set(${out} FALSE PARENT_SCOPE)
endfunction()

# sparsecomm_detect_fortran_bindings(): whether the PMPI layer needs Fortran entry points of
# its own (SPARSECOMM_PMPI_FORTRAN_ENTRIES). Open MPI's Fortran bindings convert their
# arguments and call the C *profiling* functions (PMPI_Neighbor_allgather, PMPI_Wait), so a C
# layer never sees a Fortran call: it needs entries of its own. MPICH's `mpif.h` / `use mpi`
# bindings call the C MPI_ names (after converting MPI_BOTTOM and the other sentinels of
# their own), which the layer already defines: entries of its own there would receive
# MPICH's Fortran sentinels unconverted. Read off the MPI Fortran library's undefined
# symbols (objdump); where that cannot be read, the entries are built for an MPI whose mpi.h
# says it is Open MPI (whose bindings are known to call the profiling functions), not for others.
function(sparsecomm_detect_fortran_bindings)
  set(CMAKE_REQUIRED_LIBRARIES MPI::MPI_C)
  set(CMAKE_REQUIRED_QUIET ON)
  check_c_source_compiles("#include <mpi.h>\n#ifndef OPEN_MPI\n#error not Open MPI\n#endif\nint main(void) { return 0; }"
                          SPARSECOMM_MPI_IS_OPEN_MPI)
  set(entries ${SPARSECOMM_MPI_IS_OPEN_MPI})
  set(why "no MPI Fortran library found to inspect")
  set(dirs "")
  foreach(lib IN LISTS MPI_C_LIBRARIES)
    get_filename_component(d "${lib}" DIRECTORY)
    list(APPEND dirs ${d})
  endforeach()
  # The Fortran library of this MPI: one that links this build's MPI C library.
  sparsecomm_our_mpi(ours)
  set(fortran_lib "")
  foreach(name mpi_mpifh mpichfort mpifort)
    find_library(candidate NAMES ${name} HINTS ${dirs} NO_DEFAULT_PATH NO_CACHE)
    if(candidate AND NOT fortran_lib)
      sparsecomm_library_needed(needs "${candidate}" "lib(mpi|mpich|impi|mpi_cray)")
      foreach(n IN LISTS needs)
        if(n IN_LIST ours)
          set(fortran_lib "${candidate}")
        endif()
      endforeach()
    endif()
    unset(candidate)
  endforeach()
  if(fortran_lib AND CMAKE_OBJDUMP)
    get_filename_component(real "${fortran_lib}" REALPATH)
    execute_process(COMMAND ${CMAKE_OBJDUMP} -T "${real}" OUTPUT_VARIABLE dump ERROR_QUIET)
    if(dump MATCHES "\\*UND\\*[^\n]* MPI_Neighbor_allgather\n")
      set(entries OFF)
      set(why "its Fortran bindings (${real}) call the C MPI_ functions")
    elseif(dump MATCHES "\\*UND\\*[^\n]* PMPI_Neighbor_allgather\n")
      set(why "its Fortran bindings (${real}) call the C PMPI_ functions")
    endif()
  endif()
  set(SPARSECOMM_PMPI_FORTRAN_ENTRIES ${entries} PARENT_SCOPE)
  message(STATUS "sparsecomm: PMPI layer's own Fortran entries: ${entries} (${why})")
endfunction()
