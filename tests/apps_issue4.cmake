# Smoke tests of the message-combining programs (issue 4): sparsecomm_nbrbench verifies every
# exchange against the expected blocks and sparsecomm_spmm every variant's C against a serial
# Eigen product; both exit non-zero when a check fails. spmm exits 77 (skipped) when the
# SuiteSparse file is not on the data search path.
if(SPARSECOMM_BUILD_APPS)
  # Topologies separated by a space here (';' would split the CMake list).
  sparsecomm_add_mpi_test(app_nbrbench sparsecomm_nbrbench RANKS 4 8 TIMEOUT 180
    ARGS --topos "moore:2,1 er:0.5" --sizes 4,256 --k 2,3 --reps 5 --regions ppn:2)
  sparsecomm_add_mpi_test(app_spmm sparsecomm_spmm RANKS 3 8 TIMEOUT 180
    ARGS --matrix HB/ash292 --ordering natural,rcm --reps 1 --k 2,3 --regions ppn:2)
  set_tests_properties(app_spmm.np3 app_spmm.np8 PROPERTIES SKIP_RETURN_CODE 77)
  # An unknown ordering is an error on every rank before any matrix is read.
  sparsecomm_add_mpi_test(app_spmm_bad_ordering sparsecomm_spmm RANKS 2 TIMEOUT 60
    ARGS --matrix HB/ash292 --ordering natural,metis)
  set_tests_properties(app_spmm_bad_ordering.np2 PROPERTIES
    PASS_REGULAR_EXPRESSION "unknown ordering .metis. \\(valid: natural, rcm\\)")
endif()
