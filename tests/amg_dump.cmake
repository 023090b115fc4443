# sparsecomm_amg_spmv --dump-levels (issue 9): a small BoomerAMG hierarchy written at 2 ranks.
# The program reads every level file back with the library's Matrix Market reader and checks
# it against Hypre's level matrix (same nnz, identical entries, SpMV equal to
# hypre_ParCSRMatrixMatvec); it exits 3 otherwise. Then the CLI re-reads a coarse level at
# 3 ranks (another row partition than the writer's) and verifies its SpMV with two backends.
if(SPARSECOMM_BUILD_APPS AND SPARSECOMM_HAVE_HYPRE)
  set(amg_dump_dir ${CMAKE_CURRENT_BINARY_DIR}/amg_dump_levels)
  sparsecomm_add_mpi_test(app_amg_dump sparsecomm_amg_spmv RANKS 2 TIMEOUT 180
    ARGS --nx 48 --ny 40 --regions ppn:2 --dump-levels ${amg_dump_dir} --dump-only)
  set_tests_properties(app_amg_dump.np2 PROPERTIES FIXTURES_SETUP amg_dump)
  sparsecomm_add_mpi_test(app_amg_dump_reread sparsecomm_cli RANKS 3 TIMEOUT 180
    ARGS spmv --matrix ${amg_dump_dir}/level_1.mtx --regions ppn:2 --reps 2 --reference rows
         --backend p2p,aggregated_dedup)
  set_tests_properties(app_amg_dump_reread.np3 PROPERTIES FIXTURES_REQUIRED amg_dump)
endif()
