# sparsecomm_add_mpi_test(<name> <target> [RANKS n...] [TIMEOUT s] [ARGS ...] [LABELS ...]
#                         [SKIP_REGEX regex] [REJECTED_REGEX regex [REJECTED_CODE rc]])
# Registers one ctest entry per rank count: <name>.np<n>. Each runs under mpiexec with
# oversubscription (the CI machine has 2 cores), yielding when idle (oversubscribed ranks
# busy-wait otherwise), root allowed (CI runs as root), and a time limit enforced twice:
# mpirun's own --timeout kills every rank of a deadlocked job, ctest's TIMEOUT backs it up.
# REJECTED_REGEX inverts the verdict the honest way (tests/oracles/expect_rejected.sh): the
# test passes only when the program exits 3 (verification failed; REJECTED_CODE for gtest's 1)
# with output matching the regex; a crash, a timeout or a clean pass all fail it.
set(SPARSECOMM_TEST_RANKS 1 2 3 4 8 CACHE STRING "Default rank counts for MPI tests")

function(sparsecomm_add_mpi_test name target)
  cmake_parse_arguments(A "" "TIMEOUT;SKIP_REGEX;REJECTED_REGEX;REJECTED_CODE" "RANKS;ARGS;LABELS" ${ARGN})
  set(wrapper "")
  if(A_REJECTED_REGEX)
    if(NOT A_REJECTED_CODE)
      set(A_REJECTED_CODE 3)
    endif()
    set(wrapper bash ${PROJECT_SOURCE_DIR}/tests/oracles/expect_rejected.sh ${A_REJECTED_CODE} "${A_REJECTED_REGEX}")
  endif()
  if(NOT A_RANKS)
    set(A_RANKS ${SPARSECOMM_TEST_RANKS})
  endif()
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 120)
  endif()
  math(EXPR ctest_timeout "${A_TIMEOUT} + 30")
  foreach(n IN LISTS A_RANKS)
    set(test_name ${name}.np${n})
    add_test(NAME ${test_name}
      COMMAND ${wrapper} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${n}
              --oversubscribe --timeout ${A_TIMEOUT} --mca mpi_yield_when_idle 1
              ${MPIEXEC_PREFLAGS} $<TARGET_FILE:${target}> ${MPIEXEC_POSTFLAGS} ${A_ARGS})
    if(n GREATER 2)
      set(procs 2)
    else()
      set(procs ${n})
    endif()
    # A session directory of its own per test: two mpiexec started in the same instant by
    # ctest -j race on mkdir of Open MPI's shared /tmp/ompi.<host>.<uid> ("File exists",
    # orte_init fails). Short (Open MPI puts unix sockets there) and per build tree.
    string(MD5 tree_hash "${CMAKE_BINARY_DIR}")
    string(SUBSTRING "${tree_hash}" 0 8 tree_hash)
    set(tmp_base /tmp/spc-${tree_hash}/${test_name})
    file(MAKE_DIRECTORY ${tmp_base})
    set_tests_properties(${test_name} PROPERTIES
      TIMEOUT ${ctest_timeout}
      PROCESSORS ${procs}
      LABELS "mpi;np${n};${A_LABELS}"
      ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1;SPARSECOMM_TEST_NP=${n};OMPI_MCA_orte_tmpdir_base=${tmp_base}")
    if(A_SKIP_REGEX)
      set_tests_properties(${test_name} PROPERTIES SKIP_REGULAR_EXPRESSION "${A_SKIP_REGEX}")
    endif()
  endforeach()
endfunction()

# sparsecomm_isolate_test_cache(): every test registered so far in the calling directory
# gets XDG_CACHE_HOME=<build>/test-cache. auto measures this machine's model on first use
# and caches it under $XDG_CACHE_HOME; without this the test suite, which runs its MPI jobs
# two at a time on an oversubscribed machine (and the emulated cluster without a rate
# limit), would leave models measured under its own load in the user's ~/.cache, which
# later runs of the same layout and network would read back. Called at the end of each
# directory's tests (a test's own XDG_CACHE_HOME, set later in its ENVIRONMENT, wins).
function(sparsecomm_isolate_test_cache)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t IN LISTS tests)
    get_test_property(${t} ENVIRONMENT env)
    if(NOT env MATCHES "XDG_CACHE_HOME=")
      set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "XDG_CACHE_HOME=${PROJECT_BINARY_DIR}/test-cache")
    endif()
  endforeach()
endfunction()
