# The CombBLAS anchor: our 2D BFS side by side with CombBLAS's top-down BFS (optional).
# Included from src/apps/bfs2d/CMakeLists.txt after the sparsecomm_bfs2d library is defined.
# CombBLAS's package config (Debian libcombblas-dev 1.6.2: /usr/lib/<arch>/cmake/CombBLAS)
# exports CombBLAS::CombBLAS, which compiles with THREADED and links OpenMP::OpenMP_CXX (its
# config looks for OpenMP quietly; without OpenMP the imported target cannot be linked).
# Not in the SMPI build: CombBLAS is built against Open MPI (and SMPI's malloc macros break
# its headers).
# SPARSECOMM_WITH_COMBBLAS (AUTO, ON, OFF; CMakeLists.txt) applies, as does the check that
# CombBLAS is built against this build's MPI.
if(NOT SPARSECOMM_SMPI AND NOT SPARSECOMM_WITH_COMBBLAS STREQUAL "OFF")
  find_package(CombBLAS QUIET)
endif()
set(combblas_lib "")
if(TARGET CombBLAS::CombBLAS)
  foreach(prop IMPORTED_LOCATION_RELEASE IMPORTED_LOCATION_NONE IMPORTED_LOCATION_NOCONFIG IMPORTED_LOCATION)
    get_target_property(loc CombBLAS::CombBLAS ${prop})
    if(loc AND NOT combblas_lib)
      set(combblas_lib ${loc})
    endif()
  endforeach()
endif()
set(combblas_found OFF)
if(NOT SPARSECOMM_SMPI AND CombBLAS_FOUND AND TARGET CombBLAS::CombBLAS AND TARGET OpenMP::OpenMP_CXX)
  set(combblas_found ON)
endif()
if(NOT SPARSECOMM_SMPI)
  sparsecomm_optional(CombBLAS ${combblas_found} "${combblas_lib}" combblas_usable)
endif()
if(NOT SPARSECOMM_SMPI AND combblas_usable)
  add_executable(sparsecomm_bfs_combblas ${CMAKE_CURRENT_LIST_DIR}/combblas_anchor.cpp)
  target_link_libraries(sparsecomm_bfs_combblas PRIVATE sparsecomm_bfs2d CombBLAS::CombBLAS)
  target_include_directories(sparsecomm_bfs_combblas PRIVATE
    ${PROJECT_SOURCE_DIR}/src/apps ${CMAKE_CURRENT_LIST_DIR})
  # CombBLAS's headers are full of warnings (deprecated binders, sign compares): system headers.
  # Imported targets' include directories are SYSTEM already; say so for clarity and keep it
  # true if the target is ever made non-imported.
  get_target_property(_combblas_inc CombBLAS::CombBLAS INTERFACE_INCLUDE_DIRECTORIES)
  if(_combblas_inc)
    target_include_directories(sparsecomm_bfs_combblas SYSTEM PRIVATE ${_combblas_inc})
  endif()
  target_compile_options(sparsecomm_bfs_combblas PRIVATE ${SPARSECOMM_WARNINGS})
  message(STATUS "sparsecomm: CombBLAS found (${CombBLAS_DIR}); building sparsecomm_bfs_combblas")
elseif(SPARSECOMM_SMPI)
  message(STATUS "sparsecomm: SMPI build: the CombBLAS BFS anchor is not built")
endif()
