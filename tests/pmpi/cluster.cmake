# The PMPI layer across the emulated cluster (included from tests/pmpi/CMakeLists.txt;
# scripts/cluster.sh: network namespaces, root only, skipped otherwise).
if(NOT SPARSECOMM_MPI_VENDOR STREQUAL "openmpi")
  sparsecomm_skipped_test(cluster_pmpi "scripts/cluster.sh launches through Open MPI's mpirun (its rsh agent and MCA settings); this build's launcher is ${SPARSECOMM_MPI_VENDOR}")
  return()
endif()
# sparsecomm_pmpi_cluster_test(<name> <nodes> <ppn> <program> ...): on <nodes> x <ppn>, links
# of 1 Gbit/s, under the layer (ENV, checks and ARGS as sparsecomm_add_mpi_test's).
function(sparsecomm_pmpi_cluster_test name nodes ppn program)
  math(EXPR np "${nodes} * ${ppn}")
  sparsecomm_add_mpi_test(${name} ${program} RANKS ${np} TIMEOUT 150 LABELS "cluster;root" RUN_SERIAL PROCESSORS 2
    VIA "${PROJECT_SOURCE_DIR}/scripts/cluster.sh run ${nodes} ${ppn} --rate 1gbit --"
    TEST_ENV CLUSTER_TIMEOUT=150 CLUSTER_MPIRUN=${MPIEXEC_EXECUTABLE}
    ENV ${layer} SPARSECOMM_MPI_VERBOSE=1 NONE "WRONG|error" ${ARGN})
endfunction()
foreach(backend auto aggregated_dedup aggregated_2step)
  sparsecomm_pmpi_cluster_test(cluster_nbr_shapes_pmpi_${backend} 2 3 pmpi_nbr_shapes
    ENV SPARSECOMM_MPI_BACKEND=${backend} RANK0 "values checked on 6 ranks, 0 wrong")
endforeach()
sparsecomm_pmpi_cluster_test(cluster_nbr_bench_pmpi_auto 2 4 mpi_nbr_bench ENV SPARSECOMM_MODEL=builtin
  ARGS -topo moore:2,2 -sizes 4,1000 -reps 3 -fixed-counts 1
  RANK0 "allgather of 4-byte blocks [(]counts fixed[)]: auto predicted [0-9.]+ us combined against [0-9.]+ us direct, [0-9.]+ us aggregated_dedup against [0-9.]+ us direct: aggregated_dedup"
  EACH "MPI_Neighbor_allgather 8/0, MPI_Neighbor_alltoall 8/0, MPI_Ineighbor_allgather 8/0")
sparsecomm_pmpi_cluster_test(cluster_nbr_bench_pmpi_auto_unhinted 2 4 mpi_nbr_bench ENV SPARSECOMM_MODEL=builtin
  ARGS -topo moore:2,2 -sizes 4,1000 -reps 3 -fixed-counts 0
  RANK0 "allgather of 4-byte blocks: auto predicted .*[(]each plan with a [0-9]+ us agreement per call[)]: MPI's own"
  RANK0 "stepping aside" EACH "MPI_Neighbor_allgather 0/8, MPI_Neighbor_alltoall 0/8")
