# Install rules: the libraries (shared by default, versioned sonames), the public headers,
# the `sparsecomm` command, a CMake package (find_package(sparsecomm [COMPONENTS petsc
# hypre])) with namespaced targets, pkg-config files, and a Debian package through CPack.
#
#   cmake -B b && cmake --build b && cmake --install b --prefix /opt/sparsecomm
#   find_package(sparsecomm REQUIRED)          target_link_libraries(app PRIVATE sparsecomm::sparsecomm)
#   pkg-config --cflags --libs sparsecomm_c    (C programs: sparsecomm::c)
include(CMakePackageConfigHelpers)
set(SPARSECOMM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/sparsecomm)

install(TARGETS sparsecomm EXPORT sparsecommTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET sparsecomm_c)
  install(TARGETS sparsecomm_c EXPORT sparsecommTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(EXPORT sparsecommTargets NAMESPACE sparsecomm:: DESTINATION ${SPARSECOMM_CMAKE_DIR})

# The components: each its own export set, loaded only when asked for, so that a user of
# the core library needs neither PETSc nor Hypre.
set(SPARSECOMM_COMPONENTS "")
if(TARGET sparsecomm_petsc)
  install(TARGETS sparsecomm_petsc EXPORT sparsecommPetscTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT sparsecommPetscTargets NAMESPACE sparsecomm:: DESTINATION ${SPARSECOMM_CMAKE_DIR})
  list(APPEND SPARSECOMM_COMPONENTS petsc)
endif()
if(TARGET sparsecomm_hypre_interop)
  install(TARGETS sparsecomm_hypre sparsecomm_hypre_interop EXPORT sparsecommHypreTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT sparsecommHypreTargets NAMESPACE sparsecomm:: DESTINATION ${SPARSECOMM_CMAKE_DIR})
  list(APPEND SPARSECOMM_COMPONENTS hypre)
endif()

# Headers: include/ as it is (the C++ API by layer, sparsecomm.h, mpi_advance_compat.h)
# and the generated version header.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/include/sparsecomm/version.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sparsecomm)

if(TARGET sparsecomm_cli)
  install(TARGETS sparsecomm_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
# The interposition library (LD_PRELOAD; no CMake target to link: it replaces Hypre's
# functions in a program that already links Hypre).
if(TARGET sparsecomm_hypre_hook)
  install(TARGETS sparsecomm_hypre_hook LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
if(TARGET sparsecomm_mpi)  # MPI_Neighbor_* through sparsecomm (LD_PRELOAD)
  install(TARGETS sparsecomm_mpi LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

set(SPARSECOMM_SHARED ${BUILD_SHARED_LIBS})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/sparsecommConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/sparsecommConfig.cmake INSTALL_DESTINATION ${SPARSECOMM_CMAKE_DIR})
# 0.x: a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/sparsecommConfigVersion.cmake VERSION ${PROJECT_VERSION}
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/sparsecommConfig.cmake ${PROJECT_BINARY_DIR}/sparsecommConfigVersion.cmake
        DESTINATION ${SPARSECOMM_CMAKE_DIR})

# pkg-config: sparsecomm (C++) and sparsecomm_c (C), both on Open MPI's own .pc files. A
# static build lists the libraries behind them (zlib, libstdc++) in Libs.private.
if(BUILD_SHARED_LIBS)
  set(SPARSECOMM_PC_PRIVATE "")
else()
  set(SPARSECOMM_PC_PRIVATE "-lz -lstdc++ -lm")
endif()
# Relocatable: the prefix is found from where the .pc file lies (cmake --install --prefix
# chooses it after configuration).
file(RELATIVE_PATH SPARSECOMM_PC_UP ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" SPARSECOMM_PC_UP "${SPARSECOMM_PC_UP}")
foreach(pc sparsecomm sparsecomm_c)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()

# A Debian package (cpack -G DEB in the build directory; dpkg -i installs it under /usr).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME sparsecomm)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "sparsecomm developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Sparse irregular communication (halo exchanges, neighborhood collectives) for MPI codes")
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libopenmpi3, zlib1g")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
include(CPack)
