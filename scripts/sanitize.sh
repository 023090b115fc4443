#!/usr/bin/env bash
# Everything that runs in a user's process, under AddressSanitizer + UndefinedBehaviorSanitizer:
# a second build (build-asan, -DSPARSECOMM_SANITIZE=address,undefined, -O1 -g) of the library,
# the C API, the PMPI layer, the Hypre hook and the PETSc plugin, and of the programs that
# test them. Runs
#   - the MPI gtest suites at 1 and 3 ranks (the serial paths and an odd count of several
#     ranks; the other counts run unsanitized in the plain suite);
#   - the interposition tests at 3 ranks, through the sanitized layers (LD_PRELOAD of the
#     sanitized PMPI layer and Hypre hook into sanitized programs; the PETSc plugin loaded
#     by PETSc; the C API's programs), plus the C API's and the neighborhood shapes' at 1;
#   - a plan kept past MPI_Finalize, for every backend;
#   - under ThreadSanitizer instead (build-tsan), the tests that run threads.
# Any report halts the rank and fails its test. Open MPI's own process-lifetime allocations are
# suppressed (tests/sanitize/lsan.supp, each line commented). Not run here, with why:
#   mpi_pmpi_comm_churn           measures resident memory growth, which ASan's quarantine
#                                 of freed blocks makes by design
#   hypre_hook_package_reuse,     need malloc to hand a freed address back (a comm package,
#   mpi_nbr_shapes_settled_reuse  an MPI handle), which ASan's allocator does not do even with
#                                 its quarantine off; what they guard (a stale cache entry)
#                                 is then never reached. (Run here, the first found plans
#                                 destroyed after MPI_Finalize; plan_after_finalize tests that.)
#   scripts/sanitize.sh [extra ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bdir=${ASAN_BUILD_DIR:-build-asan}
suites=(test_dist_csr test_errors test_reader test_ordering test_generators test_locality test_sdde test_pattern
        test_plan test_gather test_combining test_plan_stats)
t0=$(date +%s)
cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="-O1 -g" -DSPARSECOMM_SANITIZE=address,undefined \
  -DSPARSECOMM_BUILD_APPS=OFF > "$bdir.configure.log" 2>&1 || { cat "$bdir.configure.log"; exit 1; }
cmake --build "$bdir" -j "${JOBS:-2}" --target "${suites[@]}" plan_after_finalize > "$bdir.build.log" 2>&1 ||
  { tail -50 "$bdir.build.log"; exit 1; }
# The interposition layers (LD_PRELOADed or loaded by PETSc, so no test program depends on
# them) and their test programs: every target of their test folders
layer_targets=()
# (the list in a variable: grep -q closing a pipe early fails it under pipefail)
all_targets=$(cmake --build "$bdir" --target help)
for t in sparsecomm_c sparsecomm_mpi sparsecomm_hypre_hook sparsecomm_petsc; do
  if grep -qw "$t" <<< "$all_targets"; then layer_targets+=("$t"); fi
done
cmake --build "$bdir" -j "${JOBS:-2}" --target "${layer_targets[@]}" >> "$bdir.build.log" 2>&1 ||
  { tail -50 "$bdir.build.log"; exit 1; }
for d in pmpi capi hypre_hook petsc_sf; do
  if [ -d "$bdir/tests/$d" ]; then
    make -C "$bdir/tests/$d" -j "${JOBS:-2}" all >> "$bdir.build.log" 2>&1 || { tail -50 "$bdir.build.log"; exit 1; }
  fi
done
t1=$(date +%s)
echo "sanitize.sh: built ${#suites[@]} suites and the interposition layers with address,undefined in $((t1 - t0)) s"
names=$(printf '%s|' "${suites[@]#test_}"); names=${names%|}
# fast_unwind_on_malloc=0: Open MPI is built without frame pointers; the fast unwinder stops
# at its first frame and no suppression by library name could match.
# intercept_tls_get_addr=0: LeakSanitizer tracks the dynamic TLS blocks of dlopen'ed
# libraries (Open MPI's components) through __tls_get_addr and at exit scans them; with
# Open MPI 4.1 it recorded a bogus block ("DTLS 6 at 0x3e1e-0x400004f20" with verbosity=1)
# and its tracer died on it ("Tracer caught signal 11", LeakSanitizer's fatal error) in
# test_plan at 4 ranks whenever the session directory's path was long enough, as ctest's
# per-test ones are. Leaks held only from dynamic TLS would now be reported, not hidden.
# verify_asan_link_order=0: the layers are LD_PRELOADed ahead of the program, whose first
# library is ASan's runtime; the check would stop every rank although the runtime is still
# ahead of libc (the layers link it too).
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:exitcode=86:fast_unwind_on_malloc=0:intercept_tls_get_addr=0:verify_asan_link_order=0"
export LSAN_OPTIONS="suppressions=$root/tests/sanitize/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# The SuiteSparse variants of the suites are left to the optimized build (minutes under ASan).
layers="plan_after_finalize|capi_[a-z]+|mpi_nbr_shapes_[a-z0-9_]+|mpi_nbr_pmpi_[a-z0-9_]+|mpi_pmpi_[a-z0-9_-]+|hypre_hook_[a-z0-9_]+|petsc_sf_[a-z0-9_]+"
rc=0
(cd "$bdir" && ctest --output-on-failure -j "${JOBS:-2}" \
  -R "^((${names})\.np(1|3)|(${layers})\.np3|(capi_[a-z]+|mpi_nbr_shapes_pmpi_[a-z0-9_]+|plan_after_finalize)\.np1)$" \
  -E "^(mpi_pmpi_comm_churn|hypre_hook_package_reuse|mpi_nbr_shapes_settled_reuse)\." "$@") || rc=1
echo "sanitize.sh: suites and interposition tests under sanitizers in $(( $(date +%s) - t1 )) s"

# ThreadSanitizer over the tests that run threads: the PMPI layer at MPI_THREAD_MULTIPLE (two
# threads in neighborhood collectives at once), the Hypre hook under MPI_THREAD_MULTIPLE and
# two threads creating plans on one communicator (threads_one_comm: the second refused, the
# library's own lock), in a third build (build-tsan). Open MPI is not built with TSan: its own reports are
# suppressed (tests/sanitize/tsan.supp, which says why each is not ours).
t2=$(date +%s)
tdir=${TSAN_BUILD_DIR:-build-tsan}
tsan_targets=(sparsecomm_mpi pmpi_threads threads_one_comm)
[ -d "$bdir/tests/hypre_hook" ] && tsan_targets+=(sparsecomm_hypre_hook hypre_amg_solve)
cmake -S . -B "$tdir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="-O1 -g" -DSPARSECOMM_SANITIZE=thread \
  -DSPARSECOMM_BUILD_APPS=OFF > "$tdir.configure.log" 2>&1 || { cat "$tdir.configure.log"; exit 1; }
cmake --build "$tdir" -j "${JOBS:-2}" --target "${tsan_targets[@]}" > "$tdir.build.log" 2>&1 ||
  { tail -50 "$tdir.build.log"; exit 1; }
(cd "$tdir" && TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1:suppressions=$root/tests/sanitize/tsan.supp" \
  ctest --output-on-failure -j "${JOBS:-2}" -R "^(mpi_pmpi_threads_[a-z]+|hypre_hook_thread_multiple|threads_one_comm)\.np[0-9]+$" "$@") || rc=1
echo "sanitize.sh: ThreadSanitizer build and threaded tests in $(( $(date +%s) - t2 )) s"
exit $rc
