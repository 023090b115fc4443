#!/usr/bin/env bash
# auto's measured model is kept per machine and layout from three launches: each of the
# first three processes that use a layout measures it once and adds its calibration to the
# cache file ("# launch" lines); the model in the file is their per-parameter median; a
# fourth launch only reads (the file stays byte for byte); a damaged launch line is measured
# again. (src/comm/plan/machine_model.cpp, kCachedLaunches.)
#
#   tests/apps/model_cache_launches.sh BUILD_DIR MPIEXEC PYTHON    (MPIEXEC: scripts/mpirun.sh)
set -euo pipefail
build=$1 mpiexec=$2 python=$3
cli=$build/src/apps/cli/sparsecomm
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/xdg
unset SPARSECOMM_MODEL
launch() {
  if ! "$mpiexec" -np 2 "$cli" info --gen rotate:24,24 > "$work/out.txt" 2>&1; then
    cat "$work/out.txt"; echo "FAILED: launch $1"; exit 1
  fi
  grep -q "auto chooses" "$work/out.txt" || { cat "$work/out.txt"; echo "FAILED: no choice in launch $1"; exit 1; }
}
check() {  # check EXPECTED_LAUNCHES: the file's launch lines, and its model their median
  "$python" - "$XDG_CACHE_HOME/sparsecomm" "$1" <<'PY'
import glob, statistics, sys
files = glob.glob(sys.argv[1] + "/model-*.txt")
assert len(files) == 1, "one cache file expected, found %s" % files
lines = open(files[0]).read().splitlines()
assert lines[0].startswith("# key: v10 mpi ") and " host " in lines[0], lines[0]
order = ["alpha_intra", "beta_intra", "alpha_inter", "beta_inter", "msg_intra", "byte_intra", "msg_inter",
         "byte_inter", "region_rate", "stage_intra", "stage_inter", "copy", "msg_shm", "byte_shm", "stage_shm"]
model = {l.split()[0]: float(l.split()[1]) for l in lines if l and not l.startswith("#")}
launches = [list(map(float, l.split()[2:])) for l in lines if l.startswith("# launch ")]
want = int(sys.argv[2])
assert len(launches) == want, "%d launch lines, %d expected" % (len(launches), want)
for k, name in enumerate(order):
    med = statistics.median(l[k] for l in launches)
    assert model[name] == med, "%s: %r in the model, the launches' median is %r" % (name, model[name], med)
print("launches %d: the model is their median" % want)
PY
}
launch 1; check 1
launch 2; check 2
launch 3; check 3
f=$(ls "$XDG_CACHE_HOME"/sparsecomm/model-*.txt)
before=$(cksum < "$f")
launch 4; check 3
[ "$(cksum < "$f")" = "$before" ] || { echo "FAILED: a fourth launch rewrote the cache"; exit 1; }
echo "a fourth launch only reads"
# A damaged launch line: the file is measured again (one fresh launch).
sed -i 's/^# launch \([^ ]*\)/# launch banana/' "$f"
launch 5; check 1
echo "model_cache_launches: passed"
