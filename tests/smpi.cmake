# In the SMPI build (SPARSECOMM_SMPI=ON, scripts/smpi.sh configure): correctness runs under
# smpirun at 64 simulated ranks (the ranks of 8 simulated nodes), and one 1,024-rank Moore
# exchange as a scale check. The backends SMPI cannot run -- MPI's neighborhood
# collectives -- are not registered in this build. Every run verifies its results.
function(sparsecomm_add_smpi_test name target ranks)
  add_test(NAME smpi_${name}.np${ranks}
    COMMAND ${PROJECT_SOURCE_DIR}/scripts/smpi.sh run ${ranks} --timeout 280 -- $<TARGET_FILE:${target}> ${ARGN})
  set_tests_properties(smpi_${name}.np${ranks} PROPERTIES TIMEOUT 300 LABELS "smpi" SKIP_RETURN_CODE 77
    ENVIRONMENT "SMPI_QUIET=1")
endfunction()

foreach(t test_sdde test_pattern)
  sparsecomm_test_exe(${t})
endforeach()

# Every SDDE strategy (NBX on the dissemination barrier), regions of 4.
sparsecomm_add_smpi_test(sdde test_sdde 64 --gtest_filter=*VariableSizeMatchesDirectAnswer/*_ppn_4:SddeTyped*)
sparsecomm_add_smpi_test(pattern test_pattern 64 --gtest_filter=PatternGenerated.Laplacian2d:PatternGenerated.Rotated)
if(TARGET sparsecomm_cli)
  # SpMV with every registered backend (and auto), checked against the serial product.
  sparsecomm_add_smpi_test(spmv sparsecomm_cli 64 spmv --gen rotate:64,64 --regions ppn:8 --backend all --reps 3)
  # Scale check: 1,024 simulated ranks, Moore (2,1), direct and combined.
  sparsecomm_add_smpi_test(nbrbench_moore sparsecomm_cli 1024
    nbrbench --topos moore:2,1 --sizes 4 --k 2 --aware agnostic --reps 2 --rounds 1)
endif()
