#!/bin/sh
# rank_shim.sh DIR [VAR=VALUE ...] -- PROGRAM ARGS...: what the launcher starts on every rank
# (tests/driver/mpitest.py). It finds its rank, sends the rank's stdout and stderr to files
# of their own (DIR/rank<r>.out, DIR/rank<r>.err) and its exit code to DIR/rank<r>.rc, and
# runs PROGRAM with the given environment (the exit code the launcher sees: below). Files per rank are what make a multi-rank verdict
# independent of the order in which a busy machine interleaves the ranks' streams.
#
# The rank comes from the launcher's environment; this is the one list of each MPI
# implementation's name for it (Open MPI; MPICH's Hydra, Intel MPI and MVAPICH use PMI;
# PMIx launchers; Slurm's srun).
dir=$1; shift
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${PMIX_RANK:-${SLURM_PROCID:-}}}}
if [ -z "$rank" ]; then rank="unknown$$"; fi
exec > "$dir/rank$rank.out" 2> "$dir/rank$rank.err"
# VAR=VALUE for the program (the shell itself reads none of them); one written
# SPARSECOMM_TEST_RANKENV_<r>_VAR=VALUE is VAR=VALUE on rank r only.
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case "$1" in
    "SPARSECOMM_TEST_RANKENV_${rank}_"*) export "${1#SPARSECOMM_TEST_RANKENV_${rank}_}" ;;
    SPARSECOMM_TEST_RANKENV_*) ;;
    *) export "$1" ;;
  esac
  shift
done
[ "$1" = "--" ] && shift
# In the background with the signals forwarded (the trap set first), so that a launcher that
# stops the job on a timeout stops the program, not only this shell; the program's pid in
# DIR/rank<r>.pid for the driver's backstop; then the program's own exit code.
child=""
trap '[ -n "$child" ] && kill -TERM "$child" 2>/dev/null' TERM INT HUP
"$@" &
child=$!
echo "$child" > "$dir/rank$rank.pid"
wait "$child"
rc=$?
while kill -0 "$child" 2>/dev/null; do wait "$child"; rc=$?; done
echo "$rc" > "$dir/rank$rank.rc"
# A program that ended on its own (any exit code) leaves the launcher an exit 0: launchers
# stop the whole job when one rank exits non-zero, which would kill a rank still writing its
# report (its buffered stdout lost) after the others agreed on a failure and left. The driver
# reads every rank's code from the files. A rank killed by a signal (a crash) is passed on, so
# that the launcher stops the others at once.
if [ "$rc" -gt 128 ]; then exit "$rc"; fi
exit 0
