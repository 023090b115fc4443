#!/usr/bin/env bash
# PETSc's own tests, each run with -sf_type basic and through the sparsecomm PetscSF type
# (-dll_append BUILD_DIR/libsparsecomm_petsc.so -sf_type sparsecomm) with a few backends;
# the outputs must be identical after a short, explicit normalization.
#
#   scripts/petsc_tests.sh BUILD_DIR
#
# The plugin's own tests (tests/petsc_sf/) run programs written for it; these are programs
# written by PETSc's developers to exercise PETSc, which use star forests in ways we did not
# think of (remapped copies, multi-SFs, embedded SFs, SCATTER_LOCAL, ...). Sources are read
# from PETSc's installed examples (src/vec/is/sf/tests, src/vec/vec/tests, src/dm/tests, C
# only), compiled against the installed PETSc into BUILD_DIR/petsc_tests/, and every case of
# their /*TEST ... TEST*/ blocks that this machine can run is run.
#
# Environment (all optional):
#   PETSC_EXAMPLES  the examples' src folder   (default: from pkg-config's PETSc version,
#                   /usr/share/petsc/X.Y/share/petsc/examples/src, or $PETSC_DIR/share/...)
#   MPIEXEC         MPI launcher               (default: scripts/mpirun.sh)
#   MPICC           MPI C compiler wrapper     (default: mpicc)
#   BACKENDS        sparsecomm backends to run (default: "auto p2p")
#   MAX_NP          largest rank count         (default: 4; a case asking for more runs at MAX_NP)
#   CASE_TIMEOUT    seconds per run            (default: 60)
#   ONLY            a regular expression: run only the cases whose name matches
#   FULL_LOOPS      1: every combination of a case's {{...}} loops (default: see parse_tests)
#
# One line per case: PASS, DIFFER, FAIL or SKIP, with the reason; then
#   petsc_tests: N cases, P passed, F failed, S skipped
# Exit status 1 if any case failed or differed (2 on a usage or set-up error), else 0.
# A case where basic itself fails, times out or is not deterministic is a SKIP: there is no
# reference to compare with.
set -uo pipefail

die() { echo "petsc_tests: $*" >&2; exit 2; }

[ $# -eq 1 ] || die "usage: $0 BUILD_DIR"
BUILD_DIR=$(cd "$1" 2>/dev/null && pwd) || die "no such build folder: $1"
PLUGIN="$BUILD_DIR/libsparsecomm_petsc.so"
[ -e "$PLUGIN" ] || die "$PLUGIN not found (build the sparsecomm_petsc target)"

MPIEXEC=${MPIEXEC:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/mpirun.sh}
MPICC=${MPICC:-mpicc}
BACKENDS=${BACKENDS:-auto p2p}
MAX_NP=${MAX_NP:-4}
CASE_TIMEOUT=${CASE_TIMEOUT:-60}
ONLY=${ONLY:-}
command -v "$MPICC" >/dev/null || die "no MPI C compiler ($MPICC)"
command -v "$MPIEXEC" >/dev/null || die "no MPI launcher ($MPIEXEC)"
command -v timeout >/dev/null || die "timeout(1) is needed (coreutils)"

# PETSc through pkg-config; the module is "PETSc" upstream, "petsc" in some packagings.
PC_PETSC=""
for m in PETSc petsc; do pkg-config --exists "$m" 2>/dev/null && { PC_PETSC=$m; break; }; done
[ -n "$PC_PETSC" ] || die "pkg-config finds no PETSc"
read -r -a PETSC_FLAGS <<<"$(pkg-config --cflags --libs "$PC_PETSC")"
# PETSc's own makefiles compile its tests with PETSC_CC_INCLUDES from petscvariables, which
# also names the include folders of the packages PETSc was built with (Debian's pkg-config
# file leaves out HDF5's, which petscviewerhdf5.h needs), and link libm (some tests call it
# directly; pkg-config's list does not carry it).
PETSC_VARS="$(pkg-config --variable=libdir "$PC_PETSC")/petsc/conf/petscvariables"
if [ -r "$PETSC_VARS" ]; then
  read -r -a inc <<<"$(sed -n 's/^PETSC_CC_INCLUDES *= *//p' "$PETSC_VARS")"
  PETSC_FLAGS=("${inc[@]}" "${PETSC_FLAGS[@]}")
fi
PETSC_FLAGS+=(-lm)
if [ -z "${PETSC_EXAMPLES:-}" ]; then
  v=$(pkg-config --modversion "$PC_PETSC")
  for d in "/usr/share/petsc/${v%.*}/share/petsc/examples/src" "${PETSC_DIR:-/nonexistent}/share/petsc/examples/src" \
           "${PETSC_DIR:-/nonexistent}/src"; do
    [ -d "$d/vec/is/sf/tests" ] && { PETSC_EXAMPLES=$d; break; }
  done
fi
[ -d "${PETSC_EXAMPLES:-}/vec/is/sf/tests" ] || die "PETSc's test sources not found (set PETSC_EXAMPLES)"

# The launcher: the project's scripts/mpirun.sh, which knows each MPI implementation's flags
# for this kind of machine (scripts/mpi_launcher.sh: oversubscription on 2 cores, yielding
# when idle, root allowed), so nothing here names one. MPIEXEC replaces it as it is.
# Open MPI's UCX layer takes ~0.2 s to start, half of a small test's run and so half of this
# phase; on one node ob1 (shared memory) carries the messages anyway, so OMPI_MCA_pml=ob1
# unless the environment chose a PML (other MPIs ignore the variable). Both runs of a case
# launch alike.
LAUNCH=("$MPIEXEC")
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}

WORK="$BUILD_DIR/petsc_tests"
mkdir -p "$WORK/bin" "$WORK/run" "$WORK/out"

# Known limitations: cases that cannot pass under the plugin for a reason outside it, each
# with the error that must be the one seen (anything else is still a failure) and why. Such
# a case is run and reported as SKIP "known limitation" when it fails exactly that way.
declare -A KNOWN_ERROR=(
  # VecScatterRemap (src/vec/is/sf/interface/vscat.c) accepts basic and neighbor star forests
  # only, by type name, and edits basic's private data; it refuses every other type
  # (window, allgatherv, ... alike). ex15 remaps scatters it created itself with the
  # -sf_type of the command line. (Copies made by VecScatterCopy, what PETSc itself remaps,
  # are basic under the plugin: DMDA local-to-local works.)
  [vec_is_sf/ex15_1]="VecScatterRemap on SF type sparsecomm is not supported"
)

# ------------------------------------------------------------------ requirements
# `requires:` words are evaluated the way PETSc's test harness means them, against the
# installed PETSc: defined(MACRO) and a package name (PETSC_HAVE_<NAME>) against every macro
# <petscsys.h> defines (the preprocessor's own list: some, e.g. the MPI feature macros, are
# derived there, not in petscconf.h); the scalar and precision words against PETSC_USE_*.
declare -A MACRO=()
while read -r _ name _; do MACRO[$name]=1; done < <(printf '#include <petscsys.h>\n' |
  "$MPICC" -dM -E -x c - "${PETSC_FLAGS[@]}" 2>/dev/null | grep '^#define PETSC')
[ ${#MACRO[@]} -gt 50 ] || die "could not read PETSc's configuration macros through $MPICC"

# One requirement word; 0 if met. Sets WHY to the unmet word.
req_met() {
  local w=$1 neg=0 ok=1
  [ "${w:0:1}" = "!" ] && { neg=1; w=${w:1}; }
  case $w in
    defined\(*\)) w=${w#defined(}; w=${w%)}; [ -n "${MACRO[$w]:-}" ] && ok=0 ;;
    complex) [ -n "${MACRO[PETSC_USE_COMPLEX]:-}" ] && ok=0 ;;
    real) [ -z "${MACRO[PETSC_USE_COMPLEX]:-}" ] && ok=0 ;;
    double) [ -n "${MACRO[PETSC_USE_REAL_DOUBLE]:-}" ] && ok=0 ;;
    single) [ -n "${MACRO[PETSC_USE_REAL_SINGLE]:-}" ] && ok=0 ;;
    __float128) [ -n "${MACRO[PETSC_USE_REAL___FLOAT128]:-}" ] && ok=0 ;;
    __fp16) [ -n "${MACRO[PETSC_USE_REAL___FP16]:-}" ] && ok=0 ;;
    64bitindices) [ -n "${MACRO[PETSC_USE_64BIT_INDICES]:-}" ] && ok=0 ;;
    datafilespath) [ -n "${DATAFILESPATH:-}" ] && ok=0 ;;
    # X11 is compiled in here, but these tests draw: without a display they fail or wait.
    x) [ -n "${MACRO[PETSC_HAVE_X]:-}" ] && [ -n "${DISPLAY:-}" ] && ok=0 ;;
    *) w=${w^^}; [ -n "${MACRO[PETSC_HAVE_$w]:-}" ] && ok=0 ;;
  esac
  [ $neg = 1 ] && ok=$((1 - ok))
  [ $ok = 0 ] || WHY="requires ${1}"
  return $ok
}
reqs_met() {
  local w
  for w in $1; do req_met "$w" || return 1; done
  return 0
}

# ------------------------------------------------------------------ the TEST blocks
# One line per case: NAME US NSIZE US REQUIRES US FILTER US TODO US ARGS; "BUILD US
# REQUIRES" for a build: entry; "LEFT US NAME US NSIZE US REQUIRES US TODO US COUNT US
# ARGS" for what the loop rule below leaves out. (US, the ASCII unit separator: fields may be empty,
# and bash's read merges adjacent whitespace separators such as tabs.) The blocks are
# indented YAML: top-level test:/testset:/build: entries; a testset's keys are shared by its nested test: entries,
# whose args and requires are appended to the set's and whose suffix is joined to it with
# "_". A loop {{a b c}} (also {{a b}separate output}) gives one case per value, named with
# "+value". Rank counts in a loop all run; the loops of args are walked along a diagonal
# (case k takes the k-th value of each loop, cyclically): every value of every loop runs at
# every rank count, without the full product (ex18 and ex19 of sf/tests would be 104 cases,
# most of the phase's time). FULL_LOOPS=1 runs the full product.
US=$'\x1f'
parse_tests() {
  awk '
    function flush_sub() {
      if (insub) { ns++; S_suf[ns] = sub_["suffix"]; S_np[ns] = sub_["nsize"]; S_args[ns] = sub_["args"]
                   S_req[ns] = sub_["requires"]; S_fil[ns] = sub_["filter"]; S_todo[ns] = sub_["TODO"] }
      insub = 0; delete sub_
    }
    function emit(suffix, np, args, req, fil, todo,   name, vals, n, i) {
      name = base (suffix != "" ? "_" suffix : "")
      gsub(/^ +| +$/, "", req)
      if (np == "") np = "1"
      if (match(np, /\{\{[^}]*\}/)) {  # the rank counts: every one
        n = split(substr(np, RSTART + 2, RLENGTH - 3), vals, /[ ,]+/)
        for (i = 1; i <= n; i++) if (vals[i] != "") args_loops(name "+" vals[i], vals[i], args, req, fil, todo)
      } else args_loops(name, np, args, req, fil, todo)
    }
    # The loops of args: the full product when full=1; otherwise case k takes the k-th value
    # of every loop (cyclically), as many cases as the longest loop has values.
    function args_loops(name, np, args, req, fil, todo,   nl, piece, loopv, len, rest, body, k, m, j, out, nm, maxlen, prod) {
      if (full) { product(name, np, args, req, fil, todo); return }
      nl = 0; rest = args; maxlen = 1; prod = 1; delete lv
      while (match(rest, /\{\{[^}]*\}[^}]*\}/)) {
        piece[nl] = substr(rest, 1, RSTART - 1)
        body = substr(rest, RSTART + 2, RLENGTH - 2); sub(/\}.*/, "", body); gsub(/^[ ,]+|[ ,]+$/, "", body)
        nl++; len[nl] = split(body, loopv, /[ ,]+/)
        for (j = 1; j <= len[nl]; j++) lv[nl, j] = loopv[j]
        if (len[nl] > maxlen) maxlen = len[nl]
        rest = substr(rest, RSTART + RLENGTH)
      }
      piece[nl] = rest
      for (m = 1; m <= nl; m++) prod *= len[m]
      if (nl > 0 && prod > maxlen) print "LEFT" US name US np US req US todo US (prod - maxlen) US args
      for (k = 0; k < maxlen; k++) {
        out = piece[0]; nm = name
        for (m = 1; m <= nl; m++) { out = out lv[m, k % len[m] + 1] piece[m]; nm = nm "+" lv[m, k % len[m] + 1] }
        gsub(/^ +| +$/, "", out)
        print nm US np US req US fil US todo US out
      }
    }
    function product(name, np, args, req, fil, todo,   pre, body, post, vals, n, i) {
      if (match(args, /\{\{[^}]*\}[^}]*\}/)) {
        pre = substr(args, 1, RSTART - 1); body = substr(args, RSTART + 2, RLENGTH - 2); post = substr(args, RSTART + RLENGTH)
        sub(/\}.*/, "", body)
        n = split(body, vals, /[ ,]+/)
        for (i = 1; i <= n; i++) if (vals[i] != "") product(name "+" vals[i], np, pre vals[i] post, req, fil, todo)
        return
      }
      gsub(/^ +| +$/, "", args)
      print name US np US req US fil US todo US args
    }
    function flush_top(   i) {
      flush_sub()
      if (kind == "build") print "BUILD" US top["requires"]
      else if (kind == "test" || (kind == "testset" && ns == 0)) emit(top["suffix"], top["nsize"], top["args"], top["requires"], top["filter"], top["TODO"])
      else if (kind == "testset")
        for (i = 1; i <= ns; i++)
          emit(top["suffix"] != "" && S_suf[i] != "" ? top["suffix"] "_" S_suf[i] : top["suffix"] S_suf[i],
               S_np[i] != "" ? S_np[i] : top["nsize"], top["args"] " " S_args[i], top["requires"] " " S_req[i],
               S_fil[i] != "" ? S_fil[i] : top["filter"], top["TODO"] S_todo[i])
      kind = ""; ns = 0; delete top
    }
    /\/\*+TEST/ { inblk = 1; topind = -1; next }
    /TEST\*+\// { if (inblk) flush_top(); inblk = 0; next }
    !inblk { next }
    { gsub(/\t/, "    ") }
    /^[ ]*(#.*)?$/ { next }
    {
      match($0, /^ */); ind = RLENGTH; line = substr($0, ind + 1)
      if (!match(line, /^[A-Za-z_]+:/)) next
      key = substr(line, 1, RLENGTH - 1); val = substr(line, RLENGTH + 1); gsub(/^ +| +$/, "", val)
      if (topind < 0 && (key == "test" || key == "testset" || key == "build")) topind = ind
      if (ind == topind && (key == "test" || key == "testset" || key == "build")) { flush_top(); kind = key; next }
      if (kind == "testset" && key == "test") { flush_sub(); insub = 1; subind = ind; next }
      if (insub && ind > subind) sub_[key] = val
      else top[key] = val
    }
  ' base="$2" US="$US" full="${FULL_LOOPS:-0}" "$1"
}

# ------------------------------------------------------------------ output normalization
# What legitimately differs between -sf_type basic and sparsecomm, and nothing else:
#  - the type's name after the word "type" ("type: sparsecomm" where PetscSFView prints it,
#    "type sparsecomm" where a test prints PetscSFGetType's answer, "type=sparsecomm");
#  - what each type's own viewer adds: basic's "MultiSF sort=..." line, the plugin's
#    "sparsecomm: ..." lines and its per-rank "[r] bcast|reduce plan (...)" and
#    "[r] operations: ..." lines (PetscSFView of a sparsecomm star forest).
# Before that, the case's own `filter:` (PETSc's harness pipes the output through it before
# comparing with the expected output) is applied to both runs alike.
normalize() {
  sed -E -e 's/(type[:=]? ?)sparsecomm\b/\1basic/g' |
    grep -avE '^ *MultiSF sort=(rank-order|unordered)$|^ *sparsecomm: |^ *\[[0-9]+\] (bcast|reduce) plan \(|^ *\[[0-9]+\] operations: [0-9]+ native'
}
apply_filter() {  # $1 filter (may be empty), stdin -> stdout
  if [ -n "$1" ]; then sh -c "$1"; else cat; fi
}

# ------------------------------------------------------------------ running
# run OUT NP EXE ARGS...: the case in a fresh folder (some tests write files), stdout to
# OUT (what is compared; PETSc's harness compares stdout too), stderr to OUT.err. Sets RC
# (124: timed out).
run() {
  local out=$1 np=$2 exe=$3 dir; shift 3
  dir="$WORK/run/$(basename "$out")"
  rm -rf "$dir"; mkdir -p "$dir"
  (cd "$dir" && timeout -k 5 "$CASE_TIMEOUT" "${LAUNCH[@]}" -n "$np" "$exe" "$@" >"$out" 2>"$out.err" </dev/null)
  RC=$?
}

ncases=0; npass=0; nfail=0; nskip=0
nsrc=0; nbuilt=0
declare -A SRC_SKIP=()   # reason -> count (sources not compiled)
declare -A CASE_SKIP=()  # reason class -> count
LEFT_OUT=(); nleft=0
t0=$(date +%s)

report() {  # STATUS NAME DETAIL
  printf '%-6s %-44s %s\n' "$1" "$2" "$3"
}
skip_case() {  # NAME REASON [CLASS]
  nskip=$((nskip + 1)); CASE_SKIP[${3:-$2}]=$(( ${CASE_SKIP[${3:-$2}]:-0} + 1 ))
  report SKIP "$1" "$2"
}

# Sources may be ordered arbitrarily by the filesystem; sort for a stable report.
mapfile -t SOURCES < <(for d in vec/is/sf/tests vec/vec/tests dm/tests; do
  ls "$PETSC_EXAMPLES/$d"/*.c 2>/dev/null; done | sort -V)

for src in "${SOURCES[@]}"; do
  nsrc=$((nsrc + 1))
  rel=${src#"$PETSC_EXAMPLES"/}
  dir=${rel%/*}; base=$(basename "$src" .c)
  tag=$(echo "$dir" | sed -e 's|/tests$||' -e 's|/|_|g')   # vec_is_sf, vec_vec, dm
  mapfile -t CASES < <(parse_tests "$src" "$base")
  build_req=""; ours=(); lefts=()
  for c in "${CASES[@]}"; do
    if [[ $c == BUILD"$US"* ]]; then build_req+=" ${c#BUILD"$US"}"
    elif [[ $c == LEFT"$US"* ]]; then lefts+=("${c#LEFT"$US"}")
    else ours+=("$c"); fi
  done
  if [ ${#ours[@]} -eq 0 ]; then SRC_SKIP["no TEST block"]=$(( ${SRC_SKIP["no TEST block"]:-0} + 1 )); continue; fi
  if ! reqs_met "$build_req"; then
    SRC_SKIP["build $WHY"]=$(( ${SRC_SKIP["build $WHY"]:-0} + 1 ))
    for c in "${ours[@]}"; do
      [ -n "$ONLY" ] && ! [[ $tag/${c%%"$US"*} =~ $ONLY ]] && continue
      ncases=$((ncases + 1)); skip_case "$tag/${c%%"$US"*}" "build $WHY" "build requirement"
    done
    continue
  fi

  # What the loop rule leaves out of cases that could run here, for the summary.
  for l in "${lefts[@]}"; do
    IFS=$US read -r name np req todo n args <<<"$l"
    [ -n "$ONLY" ] && ! [[ $tag/$name =~ $ONLY ]] && continue
    [ -z "$todo" ] && reqs_met "$req" && ! [[ " $args " =~ [[:space:]]-sf_type[[:space:]] ]] &&
      LEFT_OUT+=("$tag/$name (np $np): $n") && nleft=$((nleft + n))
  done

  # Decide every case before compiling: a source none of whose cases can run here is not built.
  runnable=(); nmatch=0
  for c in "${ours[@]}"; do
    IFS=$US read -r name np req fil todo args <<<"$c"
    name="$tag/$name"
    [ -n "$ONLY" ] && ! [[ $name =~ $ONLY ]] && continue
    ncases=$((ncases + 1)); nmatch=$((nmatch + 1))
    if [ -n "$todo" ]; then skip_case "$name" "TODO in its spec: $todo" "TODO in the spec"; continue; fi
    if ! reqs_met "$req"; then skip_case "$name" "$WHY" "requires: an unmet requirement"; continue; fi
    # A case that chooses its own star-forest type tests that type, not the default one.
    if [[ " $args " =~ [[:space:]]-sf_type[[:space:]] ]]; then skip_case "$name" "sets its own -sf_type" ; continue; fi
    # Data files outside the examples (DATAFILESPATH) are not installed here.
    if [[ $args == *DATAFILESPATH* ]]; then skip_case "$name" "needs DATAFILESPATH"; continue; fi
    # Plain words (none of these folders' args needs more); quoting or a $VARIABLE would
    # need PETSc's harness's shell environment, so such a case is skipped, not guessed at.
    if [[ $args == *[\'\"\$\`\;\|\&\<\>]* ]]; then skip_case "$name" "args need a shell: $args"; continue; fi
    runnable+=("$name$US$np$US$fil$US$args")
  done
  if [ ${#runnable[@]} -eq 0 ]; then
    [ $nmatch -eq 0 ] || SRC_SKIP["no case runnable here"]=$(( ${SRC_SKIP["no case runnable here"]:-0} + 1 ))
    continue
  fi

  exe="$WORK/bin/$tag-$base"
  if [ ! -x "$exe" ] || [ "$src" -nt "$exe" ]; then
    # No -Werror: PETSc's examples are not warning-free with every compiler.
    if ! "$MPICC" -O1 -w -o "$exe" "$src" "${PETSC_FLAGS[@]}" >"$WORK/out/$tag-$base.build.log" 2>&1; then
      first=$(grep -m1 -E 'error' "$WORK/out/$tag-$base.build.log" | sed -E 's|^.*/||' | cut -c1-100)
      SRC_SKIP["does not compile against this PETSc"]=$(( ${SRC_SKIP["does not compile against this PETSc"]:-0} + 1 ))
      for c in "${runnable[@]}"; do skip_case "${c%%"$US"*}" "does not compile: $first" "source does not compile"; done
      continue
    fi
  fi
  nbuilt=$((nbuilt + 1))

  for c in "${runnable[@]}"; do
    IFS=$US read -r name np fil args <<<"$c"
    read -r -a ARGV <<<"$args"
    np=${np:-1}; note=""
    [[ $np =~ ^[0-9]+$ ]] || { skip_case "$name" "nsize '$np' not a number"; continue; }
    if [ "$np" -gt "$MAX_NP" ]; then note=" (nsize $np run at $MAX_NP)"; np=$MAX_NP; fi
    id=$(echo "$name" | tr '/+' '__' | tr -c 'A-Za-z0-9_.=\n-' '_')
    ref="$WORK/out/$id.basic"; c0=$(date +%s.%N)
    run "$ref" "$np" "$exe" "${ARGV[@]}" -sf_type basic
    if [ $RC -eq 124 ] || [ $RC -eq 137 ]; then skip_case "$name" "basic times out (${CASE_TIMEOUT}s)$note" "basic fails or times out"; continue; fi
    if [ $RC -ne 0 ]; then skip_case "$name" "basic fails (exit $RC)$note" "basic fails or times out"; continue; fi
    apply_filter "$fil" <"$ref" | normalize >"$ref.n"
    # At one rank every leaf is on its own rank: the plugin builds no plan, so every backend
    # runs the same code; the first one stands for all.
    backends=$BACKENDS; [ "$np" -eq 1 ] && backends=${BACKENDS%% *}
    status=PASS; detail="np $np, ${backends// /, } identical to basic$note"
    for b in $backends; do
      got="$WORK/out/$id.$b"
      run "$got" "$np" "$exe" "${ARGV[@]}" -dll_append "$PLUGIN" -sf_type sparsecomm -sf_sparsecomm_backend "$b"
      if [ $RC -ne 0 ] && [ -n "${KNOWN_ERROR[$name]:-}" ] && grep -qF "${KNOWN_ERROR[$name]}" "$got.err"; then
        status=SKIP; detail="known limitation, sparsecomm/$b: ${KNOWN_ERROR[$name]}"
        break
      fi
      if [ $RC -ne 0 ]; then
        err=$(grep -m1 -a 'ERROR: [A-Z]' "$got.err" | cut -c1-90)
        status=FAIL; detail="np $np, sparsecomm/$b: $( { [ $RC -eq 124 ] || [ $RC -eq 137 ]; } && echo "timed out (${CASE_TIMEOUT}s)" || echo "exit $RC")$note; ${err:-no PETSc error message}"
        break
      fi
      apply_filter "$fil" <"$got" | normalize >"$got.n"
      if ! cmp -s "$ref.n" "$got.n"; then
        # Is basic itself deterministic on this case? A second basic run tells.
        run "$ref.2" "$np" "$exe" "${ARGV[@]}" -sf_type basic
        apply_filter "$fil" <"$ref.2" | normalize >"$ref.2.n"
        if ! cmp -s "$ref.n" "$ref.2.n"; then status=SKIP; detail="basic not deterministic, two basic runs differ$note"; break; fi
        line=$(diff "$ref.n" "$got.n" | grep -m2 '^[<>]' | tr '\n' ' ' | cut -c1-110)
        status=DIFFER; detail="np $np, sparsecomm/$b differs$note: $line (diff $ref.n $got.n)"
        break
      fi
    done
    case $status in
      PASS) npass=$((npass + 1)); report PASS "$name" "$detail ($(awk -v a="$c0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s)" ;;
      SKIP) skip_case "$name" "$detail" "${detail%%,*}" ;;
      *) nfail=$((nfail + 1)); report "$status" "$name" "$detail" ;;
    esac
  done
done

t1=$(date +%s)
echo
echo "sources: $nsrc C files, $nbuilt built and run${ONLY:+ (cases matching $ONLY)}; not built:"
for r in "${!SRC_SKIP[@]}"; do printf '  %3d  %s\n' "${SRC_SKIP[$r]}" "$r"; done | sort -k2
echo "skipped cases by reason:"
for r in "${!CASE_SKIP[@]}"; do printf '  %3d  %s\n' "${CASE_SKIP[$r]}" "$r"; done | sort -rn
if [ ${#LEFT_OUT[@]} -gt 0 ]; then
  echo "left out by the loop rule (FULL_LOOPS=1 runs them): $nleft combinations of {{...}} loops,"
  printf '  %s\n' "${LEFT_OUT[@]}"
fi
echo "backends: $BACKENDS; at most $MAX_NP ranks; ${CASE_TIMEOUT}s a run; $((t1 - t0)) s in all"
echo "petsc_tests: $ncases cases, $npass passed, $nfail failed, $nskip skipped"
[ $nfail -eq 0 ]
