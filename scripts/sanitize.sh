#!/usr/bin/env bash
# The MPI gtest suites under AddressSanitizer + UndefinedBehaviorSanitizer, at 1 and 3 ranks
# (the serial paths and an odd count of several ranks; the other counts run unsanitized in the
# plain suite): a second build (build-asan, -DSPARSECOMM_SANITIZE=address,undefined, -O1 -g) of the
# library and the suites only. Any report halts the rank and fails its test. Open MPI's own
# process-lifetime allocations are suppressed (tests/sanitize/lsan.supp, each line commented).
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
cmake --build "$bdir" -j "${JOBS:-2}" --target "${suites[@]}" > "$bdir.build.log" 2>&1 || { tail -50 "$bdir.build.log"; exit 1; }
t1=$(date +%s)
echo "sanitize.sh: built ${#suites[@]} suites with address,undefined in $((t1 - t0)) s"
names=$(printf '%s|' "${suites[@]#test_}"); names=${names%|}
# fast_unwind_on_malloc=0: Open MPI is built without frame pointers; the fast unwinder stops
# at its first frame and no suppression by library name could match.
# intercept_tls_get_addr=0: LeakSanitizer tracks the dynamic TLS blocks of dlopen'ed
# libraries (Open MPI's components) through __tls_get_addr and at exit scans them; with
# Open MPI 4.1 it recorded a bogus block ("DTLS 6 at 0x3e1e-0x400004f20" with verbosity=1)
# and its tracer died on it ("Tracer caught signal 11", LeakSanitizer's fatal error) in
# test_plan at 4 ranks whenever the session directory's path was long enough, as ctest's
# per-test ones are. Leaks held only from dynamic TLS would now be reported, not hidden.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:exitcode=86:fast_unwind_on_malloc=0:intercept_tls_get_addr=0"
export LSAN_OPTIONS="suppressions=$root/tests/sanitize/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# The SuiteSparse variants of the suites are left to the optimized build (minutes under ASan).
(cd "$bdir" && ctest --output-on-failure -j "${JOBS:-2}" -R "^(${names})\.np(1|3)$" "$@")
echo "sanitize.sh: suites under sanitizers in $(( $(date +%s) - t1 )) s"
