# In the SMPI build (SPARSECOMM_SMPI=ON, scripts/smpi.sh configure): correctness runs under
# smpirun at 64 simulated ranks (the ranks of 8 simulated nodes), two at 256 (32 nodes), and
# one 1,024-rank Moore exchange as a scale check. The backends SMPI cannot run -- MPI's
# neighborhood collectives -- are not registered in this build. Every run verifies its
# results and fails its exit code otherwise.
function(sparsecomm_add_smpi_test name target ranks)
  sparsecomm_add_test(smpi_${name}.np${ranks}
    COMMAND ${PROJECT_SOURCE_DIR}/scripts/smpi.sh run ${ranks} --timeout 280 -- $<TARGET_FILE:${target}> ${ARGN}
    TIMEOUT 300 LABELS smpi SKIP_CODE 77 ENV SMPI_QUIET=1)
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
  # 256 simulated ranks, 32 regions of 8 (= the simulated nodes). The gtests above are too slow
  # here (their patterns are large: pattern ~120 s, sdde >200 s), so these run the CLI on small
  # generated matrices; both exit 3 on any wrong result (sdde: pattern != the dense Alltoallv
  # answer on some rank; spmv: |y - serial y| > 1e-12 max|y| on some rank).
  # They rely on smpi.sh's explicit collective algorithms: with SMPI's default collectives
  # the verification's MPI_Alltoallv alone costs ~15 s of host time at 256 ranks, and so does
  # every rma call (Win_allocate/fence/free).
  # Host times on the 2-core dev machine, other simulations running: sdde ~15 s CPU, 20-25 s
  # wall; spmv ~9 s CPU, 12-19 s wall.
  # Every SDDE strategy once (a warm-up call each would add ~10 s), on the 27-point 3D Laplacian
  # 16^3: 16 rows per rank, neighbours 1 and 15..17 ranks away (up to 3 regions away).
  sparsecomm_add_smpi_test(sdde_cli sparsecomm_cli 256
    sdde --gen lap3d27:16,16,16 --regions ppn:8 --reps 1 --warmup 0)
  # SpMV through p2p and aggregated_dedup on rotated anisotropic diffusion 32x32: 4 rows per
  # rank, neighbours 1 and 7..9 ranks away (4 in other regions). Not all backends: plan setup
  # is what costs to simulate here (combined +~18 s CPU; auto builds every plan again, ~+70 s);
  # the 64-rank entry above runs them all, the 1,024-rank one runs combining.
  sparsecomm_add_smpi_test(spmv_cli sparsecomm_cli 256
    spmv --gen rotate:32,32 --regions ppn:8 --backend p2p,aggregated_dedup --reps 1)
  # autoeval's tuning evidence where times are deterministic (experiments/tune): exit 3 unless
  # the A/A pair (p2p against a second p2p plan, same rounds) times exactly alike (--exact),
  # or any value of the rounds or of the 300-exchange solves is wrong; 16 ranks, 2 nodes.
  # (smpirun splits its arguments at spaces: the matrix list is ';'-separated.)
  sparsecomm_add_smpi_test(autoeval_tune sparsecomm_cli 16
    autoeval --matrices "gen:rotate:64,64$<SEMICOLON>gen:lap2d:48,48" --regions node --reps 30 --rounds 3 --tune measure --aa p2p --solve 300
    --model builtin --exact)
  # Scale check: 1,024 simulated ranks, Moore (2,1), direct and combined.
  sparsecomm_add_smpi_test(nbrbench_moore sparsecomm_cli 1024
    nbrbench --topos moore:2,1 --sizes 4 --k 2 --aware agnostic --reps 2 --rounds 1 --regions ppn:4)
endif()
if(TARGET sparsecomm_bfs)
  # The 2D BFS at 16 simulated ranks (4x4 grid), blocking and overlapped over the p2p and
  # direct transports (SMPI has no neighborhood collectives), both merges, one and several fold
  # chunks per level; exits 3 if any BFS breaks the Graph500 rules or the variants' levels
  # differ. (This run caught SMPI's MPI_Testall nulling requests it reports as incomplete.)
  sparsecomm_add_smpi_test(bfs sparsecomm_bfs 16
    --scale 12 --roots 4 --variants blocking,overlapped --merge both --transport p2p,direct --fold-every 1,0)
endif()

# The C API and the MPI Advance compatibility layer (sparsecomm_c) under SMPI.
# SPC_Alltoall(v)_crs with every SDDE strategy against the direct answer, on MPI_COMM_WORLD
# (a plain C program: exits non-zero on every rank when any check failed). (It caught the
# world communicator's objects found by every rank: comm_attached, mpi_util.hpp.)
add_executable(test_capi_sdde capi/test_capi_sdde.c)
set_target_properties(test_capi_sdde PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_link_libraries(test_capi_sdde PRIVATE sparsecomm_c)
sparsecomm_add_smpi_test(capi_sdde test_capi_sdde 64)
# The persistent alltoallv's deferred agreement (in this build completed at the first start,
# src/capi/agreement.cpp): a mismatch reported on every rank, an init that waits for nobody.
add_executable(test_capi_deferred capi/test_capi_deferred.c)
set_target_properties(test_capi_deferred PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_link_libraries(test_capi_deferred PRIVATE sparsecomm_c)
sparsecomm_add_smpi_test(capi_deferred test_capi_deferred 64)
# The peer benchmark (experiments/sdde_anchor/bench.c) against sparsecomm through MPI
# Advance's names, on the 3D 27-point Laplacian with 8^3 points per rank (a box per rank,
# regions of 8 = the simulated nodes): every SDDE algorithm, the known-pattern exchange and
# the persistent halo exchange (both init algorithms), each result checked by its owner;
# exits 3 when any is wrong or failed. MPI Advance itself is not built here
# (experiments/sdde_anchor/smpi.sh runs both).
add_executable(sdde_anchor_bench ${PROJECT_SOURCE_DIR}/experiments/sdde_anchor/bench.c)
set_target_properties(sdde_anchor_bench PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON)
target_compile_definitions(sdde_anchor_bench PRIVATE USE_SPARSECOMM)
target_link_libraries(sdde_anchor_bench PRIVATE sparsecomm_c)
sparsecomm_add_smpi_test(sdde_anchor_bench sdde_anchor_bench 64 gen:lap3d27:8 8 3)
