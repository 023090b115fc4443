#!/usr/bin/env bash
# expect_rejected.sh RC REGEX COMMAND...: runs COMMAND (an mpiexec line) and passes only when
# the run's verification rejected the result: exit code RC (3, every sparsecomm program's
# "verification failed" code; 1 for a gtest suite) AND output matching REGEX (the oracle's
# own words). A crash, a timeout, an error exit or a run that verified fine all fail this test.
set -uo pipefail
want=$1 regex=$2; shift 2
out=$("$@" 2>&1); rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne "$want" ]; then echo "expect_rejected: exit code $rc, expected $want (verification failed)"; exit 1; fi
if ! printf '%s\n' "$out" | grep -Eq -- "$regex"; then echo "expect_rejected: output does not match: $regex"; exit 1; fi
echo "expect_rejected: rejected as expected (exit $want, output matches '$regex')"
