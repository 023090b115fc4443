# How the tests start MPI programs, with any MPI implementation.
#
# Every MPI test runs through tests/driver/mpitest.py: CMake's MPIEXEC_EXECUTABLE with
# MPIEXEC_NUMPROC_FLAG, MPIEXEC_PREFLAGS / MPIEXEC_POSTFLAGS, and the flags that
# scripts/mpi_launcher.sh (the one place that knows each implementation's launcher) names for
# it, written once into <build>/mpitest.json here. Each rank's stdout, stderr and exit code go
# to files of their own and every check is made rank by rank, so no verdict depends on the
# order in which a busy machine interleaves the ranks' output. A deadlock fails: the
# launcher's own time limit first, the driver's kill of the whole job as the backstop, ctest's
# TIMEOUT last.
set(SPARSECOMM_TEST_RANKS 1 2 3 4 8 CACHE STRING "Default rank counts for MPI tests")
find_package(Python3 REQUIRED COMPONENTS Interpreter)

# <build>/mpitest.json from the launcher's description.
function(sparsecomm_write_launcher_config)
  execute_process(COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/mpi_launcher.sh describe ${MPIEXEC_EXECUTABLE}
                  OUTPUT_VARIABLE desc RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "scripts/mpi_launcher.sh describe ${MPIEXEC_EXECUTABLE} failed")
  endif()
  string(REPLACE "\n" ";" desc "${desc}")
  set(vendor unknown)
  set(flags "")
  set(rank_env "")
  set(timeout "")
  set(session_env "")
  set(yield none)
  foreach(line IN LISTS desc)
    if(line MATCHES "^vendor=(.*)$")
      set(vendor "${CMAKE_MATCH_1}")
    elseif(line MATCHES "^flag=(.*)$")
      list(APPEND flags "\"${CMAKE_MATCH_1}\"")
    elseif(line MATCHES "^rank_env=(.*)$")
      list(APPEND rank_env "\"${CMAKE_MATCH_1}\"")
    elseif(line MATCHES "^timeout_flag=(.*)$")
      set(timeout ", \"timeout_flag\": \"${CMAKE_MATCH_1}\"")
    elseif(line MATCHES "^timeout_env=(.*)$")
      set(timeout ", \"timeout_env\": \"${CMAKE_MATCH_1}\"")
    elseif(line MATCHES "^yield=(.*)$")
      set(yield "${CMAKE_MATCH_1}")
    elseif(line MATCHES "^session_dir_env=(.*)$")
      set(session_env "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set(pre "")
  foreach(f IN LISTS MPIEXEC_PREFLAGS)
    list(APPEND pre "\"${f}\"")
  endforeach()
  set(post "")
  foreach(f IN LISTS MPIEXEC_POSTFLAGS)
    list(APPEND post "\"${f}\"")
  endforeach()
  # An MPI that progresses through UCX with a launcher that cannot make idle ranks yield: every
  # rank preloads tests/driver/yield_when_idle.c (why: there).
  set(preload "")
  if(yield STREQUAL "none")
    set(ucx "")
    foreach(lib IN LISTS MPI_C_LIBRARIES)
      sparsecomm_library_needed(found "${lib}" "libucp")
      list(APPEND ucx ${found})
    endforeach()
    if(ucx)
      add_library(sparsecomm_test_yield SHARED ${PROJECT_SOURCE_DIR}/tests/driver/yield_when_idle.c)
      target_link_libraries(sparsecomm_test_yield PRIVATE ${CMAKE_DL_LIBS})
      set(preload ", \"preload\": [\"$<TARGET_FILE:sparsecomm_test_yield>\"]")
      message(STATUS "sparsecomm: the tests' ranks yield when idle through tests/driver/yield_when_idle.c (UCX)")
    endif()
  endif()
  string(REPLACE ";" ", " flags "${flags}")
  string(REPLACE ";" ", " rank_env "${rank_env}")
  string(REPLACE ";" ", " pre "${pre}")
  string(REPLACE ";" ", " post "${post}")
  # (GENERATE: the preload is a target's file, known at generation time)
  file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/mpitest.json CONTENT
    "{\"vendor\": \"${vendor}\", \"mpiexec\": \"${MPIEXEC_EXECUTABLE}\", \"np_flag\": \"${MPIEXEC_NUMPROC_FLAG}\",\n \"flags\": [${flags}], \"preflags\": [${pre}], \"postflags\": [${post}], \"rank_env\": [${rank_env}]${timeout}${preload}}\n")
  set(SPARSECOMM_MPI_VENDOR ${vendor} PARENT_SCOPE)
  set(SPARSECOMM_MPI_SESSION_DIR_ENV "${session_env}" PARENT_SCOPE)
  message(STATUS "sparsecomm: tests launch with ${MPIEXEC_EXECUTABLE} (${vendor})")
endfunction()
sparsecomm_write_launcher_config()

# sparsecomm_add_test(<name> COMMAND <command> [args...] [TIMEOUT s] [LABELS ...]
#     [ENV VAR=VALUE...] [PASS regex] [SKIP_REGEX regex] [SKIP_CODE c] [PROCESSORS p] [RUN_SERIAL])
# The one place the tests call add_test: one ctest entry, with only the properties given
# (ctest's defaults otherwise). Used directly for what is not an MPI program judged rank by
# rank (scripts, lint checks, and the drivers that launch MPI themselves: compare.py,
# cluster.sh, smpi.sh); sparsecomm_add_mpi_test for those that are. PASS and SKIP_REGEX are
# searched in the whole output (PASS_ / SKIP_REGULAR_EXPRESSION); SKIP_CODE is the exit code
# ctest shows as skipped. The keywords are upper case: a command's own arguments must not be
# one of them.
function(sparsecomm_add_test name)
  cmake_parse_arguments(PARSE_ARGV 1 T "RUN_SERIAL" "TIMEOUT;PASS;SKIP_REGEX;SKIP_CODE;PROCESSORS" "COMMAND;LABELS;ENV")
  if(NOT T_COMMAND OR T_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "sparsecomm_add_test(${name}): needs COMMAND; not understood: '${T_UNPARSED_ARGUMENTS}'")
  endif()
  add_test(NAME ${name} COMMAND ${T_COMMAND})
  foreach(kw_prop TIMEOUT:TIMEOUT PASS:PASS_REGULAR_EXPRESSION SKIP_REGEX:SKIP_REGULAR_EXPRESSION
                  SKIP_CODE:SKIP_RETURN_CODE PROCESSORS:PROCESSORS LABELS:LABELS ENV:ENVIRONMENT)
    string(REPLACE ":" ";" kw_prop ${kw_prop})
    list(GET kw_prop 0 kw)
    list(GET kw_prop 1 prop)
    if(DEFINED T_${kw})
      set_property(TEST ${name} PROPERTY ${prop} "${T_${kw}}")
    endif()
  endforeach()
  if(T_RUN_SERIAL)
    set_property(TEST ${name} PROPERTY RUN_SERIAL TRUE)
  endif()
endfunction()

# sparsecomm_add_mpi_test(<name> <target-or-program> [RANKS n...] [TIMEOUT s] [ARGS ...]
#     [LABELS ...] [ENV VAR=VALUE...] [RANK_ENV r VAR=VALUE ...]
#     [EACH regex...] [RANK0 regex...] [ANY regex...] [ONCE regex...] [NONE regex...]
#     [EXIT code|nonzero|unfinalized] [SKIP_IF regex...] [SKIP_CODE c] [PROCESSORS p]
#     [REJECTED_REGEX regex [REJECTED_CODE rc]] [VIA "launcher command"] [RUN_SERIAL]
#     [TEST_ENV VAR=VALUE...])
# One ctest entry per rank count: <name>.np<n>, judged by tests/driver/mpitest.py (see its
# header for what each check means; regular expressions are Python's, searched in each rank's
# stdout and stderr apart). Without checks the verdict is the exit code; EXIT unfinalized: a
# failure exit without MPI_Finalize (the interposition layers end a job so on a bad setting),
# after which the launcher may stop the other ranks. REJECTED_REGEX
# inverts the verdict the honest way: the test passes only when the program exits
# REJECTED_CODE (3, "verification failed"; 1 for a gtest suite) and some rank printed the
# oracle's words; a crash, a timeout or a clean pass fail it. SKIP_IF: a rank printing it
# (e.g. a SuiteSparse file absent) skips the test. VIA: the ranks start with that command
# instead (scripts/cluster.sh run N PPN --: the emulated cluster); TEST_ENV: the driver's own
# environment (the launcher's settings); RUN_SERIAL: alone on the machine.
function(sparsecomm_add_mpi_test name target)
  cmake_parse_arguments(A "RUN_SERIAL" "TIMEOUT;REJECTED_REGEX;REJECTED_CODE;EXIT;SKIP_CODE;PROCESSORS;VIA"
                        "RANKS;ARGS;LABELS;ENV;RANK_ENV;EACH;RANK0;ANY;ONCE;NONE;SKIP_IF;SKIP_REGEX;TEST_ENV" ${ARGN})
  if(TARGET ${target})
    set(program $<TARGET_FILE:${target}>)
  else()
    set(program ${target})
  endif()
  if(NOT A_RANKS)
    set(A_RANKS ${SPARSECOMM_TEST_RANKS})
  endif()
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 120)
  endif()
  set(checks "")
  foreach(kind EACH ANY ONCE NONE SKIP_IF SKIP_REGEX)
    string(TOLOWER ${kind} flag)
    string(REPLACE "_" "-" flag ${flag})
    if(kind STREQUAL "SKIP_REGEX")
      set(flag skip-if)
    endif()
    foreach(rx IN LISTS A_${kind})
      string(REGEX REPLACE "^-" "[-]" rx "${rx}")  # (not an option of the driver)
      list(APPEND checks --${flag} "${rx}")
    endforeach()
  endforeach()
  foreach(rx IN LISTS A_RANK0)
    string(REGEX REPLACE "^-" "[-]" rx "${rx}")
    list(APPEND checks --rank 0 "${rx}")
  endforeach()
  foreach(kv IN LISTS A_ENV)
    list(APPEND checks --env "${kv}")
  endforeach()
  list(LENGTH A_RANK_ENV n_rank_env)
  if(n_rank_env GREATER 0)
    math(EXPR last "${n_rank_env} - 1")
    foreach(i RANGE 0 ${last} 2)
      math(EXPR j "${i} + 1")
      list(GET A_RANK_ENV ${i} r)
      list(GET A_RANK_ENV ${j} kv)
      list(APPEND checks --rank-env ${r} "${kv}")
    endforeach()
  endif()
  if(A_REJECTED_REGEX)
    if(NOT A_REJECTED_CODE)
      set(A_REJECTED_CODE 3)
    endif()
    string(REGEX REPLACE "^-" "[-]" rx "${A_REJECTED_REGEX}")
    list(APPEND checks --exit ${A_REJECTED_CODE} --any "${rx}")
  elseif(DEFINED A_EXIT)
    list(APPEND checks --exit ${A_EXIT})
  endif()
  if(DEFINED A_SKIP_CODE)
    list(APPEND checks --skip-code ${A_SKIP_CODE})
  endif()
  if(A_VIA)
    list(APPEND checks --via "${A_VIA}")
  endif()
  # A check that swallowed the next keywords: CMake does not split a list inside unbalanced
  # square brackets, so a regex like "rank 0[]]" (or "\\]") merges what follows it: match
  # a bracket with "." instead.
  foreach(c IN LISTS checks)
    if(c MATCHES ";")
      message(FATAL_ERROR "sparsecomm_add_mpi_test(${name}): a check swallowed others ('${c}'): unbalanced [ ] in a regex?")
    endif()
  endforeach()
  math(EXPR ctest_timeout "${A_TIMEOUT} + 60")
  string(MD5 tree_hash "${CMAKE_BINARY_DIR}")
  string(SUBSTRING "${tree_hash}" 0 8 tree_hash)
  foreach(n IN LISTS A_RANKS)
    set(test_name ${name}.np${n})
    if(A_PROCESSORS)
      set(procs ${A_PROCESSORS})
    elseif(n GREATER 2)
      set(procs 2)
    else()
      set(procs ${n})
    endif()
    set(env "SPARSECOMM_TEST_NP=${n}" ${A_TEST_ENV})
    if(SPARSECOMM_MPI_SESSION_DIR_ENV)
      # A session directory of its own per test (short: some launchers put unix sockets
      # there), per build tree.
      set(tmp_base /tmp/spc-${tree_hash}/${test_name})
      file(MAKE_DIRECTORY ${tmp_base})
      list(APPEND env "${SPARSECOMM_MPI_SESSION_DIR_ENV}=${tmp_base}")
    endif()
    set(serial "")
    if(A_RUN_SERIAL)
      set(serial RUN_SERIAL)
    endif()
    sparsecomm_add_test(${test_name}
      COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/driver/mpitest.py
              --config ${PROJECT_BINARY_DIR}/mpitest.json --np ${n} --timeout ${A_TIMEOUT} ${checks}
              -- ${program} ${A_ARGS}
      TIMEOUT ${ctest_timeout} PROCESSORS ${procs} SKIP_CODE 77 LABELS mpi np${n} ${A_LABELS} ENV ${env} ${serial})
  endforeach()
endfunction()

# sparsecomm_skipped_test(<name> <reason>): a test this build cannot run, listed by ctest as
# skipped with its reason (never left out silently).
function(sparsecomm_skipped_test name reason)
  sparsecomm_add_test(${name} COMMAND ${CMAKE_COMMAND} -E echo "skipped: ${reason}" SKIP_REGEX "skipped: ")
endfunction()

# sparsecomm_isolate_test_cache(): every test registered so far in the calling directory
# gets XDG_CACHE_HOME=<build>/test-cache, and the launcher of this build for the scripts
# that start MPI themselves (scripts/mpirun.sh reads SPARSECOMM_MPIEXEC). auto measures this
# machine's model on first use and caches it under $XDG_CACHE_HOME; without this the test
# suite, which runs its MPI jobs two at a time on an oversubscribed machine (and the
# emulated cluster without a rate limit), would leave models measured under its own load in
# the user's ~/.cache, which later runs of the same layout and network would read back.
# Called at the end of each directory's tests (a test's own XDG_CACHE_HOME, set later in its
# ENVIRONMENT, wins).
function(sparsecomm_isolate_test_cache)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t IN LISTS tests)
    get_test_property(${t} ENVIRONMENT env)
    if(NOT env MATCHES "XDG_CACHE_HOME=")
      set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "XDG_CACHE_HOME=${PROJECT_BINARY_DIR}/test-cache")
    endif()
    if(NOT env MATCHES "SPARSECOMM_MPIEXEC=")
      set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "SPARSECOMM_MPIEXEC=${MPIEXEC_EXECUTABLE}")
    endif()
  endforeach()
endfunction()
