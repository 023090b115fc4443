#!/usr/bin/env bash
# An emulated N-node cluster on one machine, so that locality-aware communication really
# crosses a (rate-limited) network between "nodes". Root only.
#
#   scripts/cluster.sh run 2 2 -- build/tests/cluster/test_cluster      # 2 nodes x 2 ranks
#   scripts/cluster.sh run 4 2 --rate 1gbit -- prog args...            # links limited to 1 Gbit/s
#   scripts/cluster.sh up 3 [--rate 100mbit]; scripts/cluster.sh status; scripts/cluster.sh down
#   scripts/cluster.sh smoke 2 2 [--rate 1gbit]   # hosts, MPI_COMM_TYPE_SHARED, ping-pong MB/s
#
# Layout (nothing touches the host's own network namespace or addresses):
#   spc-node<i>  one network namespace per node; eth0 = 10.77.0.<i+1>/24, lo up. A holder
#                process (`sleep infinity`) lives in it inside its own UTS namespace whose
#                hostname is node<i>; programs enter a node with nsenter --uts --net on the
#                holder, so Open MPI and MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) see
#                different hosts.
#   spc-bridge   a namespace holding the Linux bridge br0 and the peer veth<i> of every node.
#   --rate R     a tbf qdisc on both ends of every link (node eth0 and bridge veth<i>), so
#                inter-node bytes pay R in each direction — except the token bucket's worth
#                (burst_bytes: 1 ms at R) after the link was idle. Latency cannot be
#                emulated: this kernel has no netem qdisc (see --latency).
#
# `run` brings the cluster up if needed (and down again afterwards, also on failure or
# Ctrl-C), starts mpirun inside node0 with a hostfile of node addresses and remote daemons
# launched through this script acting as the rsh agent (`cluster.sh rsh HOST cmd...`),
# ranks placed in blocks (ranks 0..R-1 on node0, ...), and returns the program's exit code.
# The ranks see SPC_CLUSTER_NODES, SPC_CLUSTER_PPN and SPC_CLUSTER_RATE.
#
# Exit code 77 (ctest's skip code) when the machine cannot do this: not root, a missing
# tool, or no permission to create namespaces, veth pairs or bridges.
#
# Environment: CLUSTER_TIMEOUT (mpirun --timeout, seconds, default 600), CLUSTER_MPIRUN
# (the mpirun to use, default mpirun from PATH),
# CLUSTER_MPIRUN_ARGS (extra mpirun arguments, split on spaces, e.g.
# "--mca btl_base_verbose 100"), CLUSTER_LOCK_WAIT (seconds to wait for another run,
# default 1800), CLUSTER_QUIET=1 (no progress messages), CLUSTER_BURST (the links' tbf
# bucket in bytes instead of burst_bytes').
set -euo pipefail

readonly NS_PREFIX=spc-node
readonly BRIDGE_NS=spc-bridge
readonly SUBNET=10.77.0
readonly STATE_DIR=/run/sparsecomm-cluster
readonly SHM_DIR=/dev/shm/sparsecomm-cluster
readonly LOCK_FILE=/run/lock/sparsecomm-cluster.lock
readonly MAX_NODES=64
SELF=$(readlink -f "${BASH_SOURCE[0]}")
readonly SELF

usage() {
  cat <<EOF
usage: cluster.sh up NODES [--rate RATE]
       cluster.sh run NODES RANKS_PER_NODE [--rate RATE] -- program [args...]
       cluster.sh down
       cluster.sh status
       cluster.sh smoke NODES RANKS_PER_NODE [--rate RATE]   (a tiny MPI check program)
RATE is a tc rate such as 1gbit, 100mbit, 500kbit (applied to both directions of every link).
EOF
}

log() { if [ -z "${CLUSTER_QUIET:-}" ]; then echo "cluster.sh: $*" >&2; fi; }
die() {
  echo "cluster.sh: error: $*" >&2
  exit 1
}
usage_error() {
  echo "cluster.sh: $*" >&2
  usage >&2
  exit 2
}
skip() {
  echo "cluster.sh: SKIP (exit 77): $*" >&2
  exit 77
}

# ---------------------------------------------------------------------------------------
# Arguments

is_count() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }

# A tc rate: a number with an optional bit/byte unit (tc's own syntax, case-insensitive).
check_rate() {
  local r=${1,,}
  [[ "$r" =~ ^[0-9]+(\.[0-9]+)?([kmgt]i?)?(bit|bps)?$ ]] ||
    usage_error "invalid --rate '$1' (expected a tc rate such as 1gbit, 100mbit, 500kbit)"
}

# tbf burst: one millisecond at the link rate, at least 16 KiB. The bucket is what may leave
# faster than the rate after the link was idle (a real link has none): up to ~125 KB at 1
# Gbit/s cross at about ten times the rate after an idle millisecond. A smaller one does
# not emulate a real link better here: tbf then needs a timer and a softirq every bucket's
# worth of bytes, and with 16 ranks busy on 2 cores they come late — an all-to-all of 89 KB
# between 4 nodes took three times its link time with a 16-64 KiB bucket, the link time
# with this one (experiments/calibration/README.md). CLUSTER_BURST overrides it.
burst_bytes() {
  local r=${1,,}
  [[ "$r" =~ ^([0-9]+(\.[0-9]+)?)([kmgt]?)(i?)(bit|bps)?$ ]]
  local num=${BASH_REMATCH[1]} prefix=${BASH_REMATCH[3]} iec=${BASH_REMATCH[4]} unit=${BASH_REMATCH[5]}
  awk -v n="$num" -v p="$prefix" -v i="$iec" -v u="$unit" 'BEGIN {
    base = (i == "i") ? 1024 : 1000; m = 1
    if (p == "k") m = base; else if (p == "m") m = base^2; else if (p == "g") m = base^3; else if (p == "t") m = base^4
    bytes = n * m; if (u != "bps") bytes /= 8
    b = int(bytes / 1000); if (b < 16384) b = 16384; print b }'
}

# The burst a cluster at `rate` gets: CLUSTER_BURST if set (bytes), else burst_bytes.
link_burst() {
  if [ -n "${CLUSTER_BURST:-}" ]; then
    if ! [[ "$CLUSTER_BURST" =~ ^[0-9]+$ ]] || [ "$CLUSTER_BURST" -lt 1514 ]; then
      usage_error "CLUSTER_BURST must be a number of bytes, at least 1514 (one packet)"
    fi
    echo "$CLUSTER_BURST"
  else
    burst_bytes "$1"
  fi
}

# Latency needs the netem qdisc. This machine's kernel has none (CONFIG_NET_SCH_NETEM is not
# set; `tc qdisc add dev X root netem delay 1ms` says "Specified qdisc kind is unknown"), so
# --latency is refused rather than silently ignored. The probe runs in a throwaway namespace.
refuse_latency() {
  local probe config=""
  if probe=$(unshare --net sh -c 'ip link add spcprobe0 type veth peer name spcprobe1 &&
                                  tc qdisc add dev spcprobe0 root netem delay 1ms' 2>&1); then
    echo "cluster.sh: error: --latency is not implemented (netem works on this kernel, but cluster.sh" \
      "only emulates bandwidth: --rate)." >&2
    exit 2
  fi
  if [ -r /proc/config.gz ] && zcat /proc/config.gz 2>/dev/null | grep '^# CONFIG_NET_SCH_NETEM is not set' >/dev/null; then
    config=", CONFIG_NET_SCH_NETEM is not set"
  fi
  echo "cluster.sh: error: --latency is not supported: emulating latency needs the netem qdisc, and this" \
    "kernel ($(uname -r)${config}) has none: 'tc qdisc add dev X root netem delay 1ms' fails with" \
    "'${probe%.}'. Only bandwidth can be emulated (--rate RATE, a tbf qdisc on every link)." >&2
  exit 2
}

# Parses [--rate R] [--latency ...] into RATE; the remaining words go into REST.
RATE=""
RATE_GIVEN=0
REST=()
parse_options() {
  REST=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --rate) [ $# -ge 2 ] || usage_error "--rate needs a value"; RATE=$2; RATE_GIVEN=1; shift 2 ;;
      --rate=*) RATE=${1#--rate=}; RATE_GIVEN=1; shift ;;
      --latency | --latency=* | --delay | --delay=*) refuse_latency ;;
      --) REST+=("$@"); break ;;
      -h | --help) usage; exit 0 ;;
      -*) usage_error "unknown option '$1'" ;;
      *) REST+=("$1"); shift ;;
    esac
  done
  if [ -n "$RATE" ]; then check_rate "$RATE"; fi
  if [ -n "${CLUSTER_BURST:-}" ]; then link_burst "" >/dev/null; fi  # checked before anything is built
}

# ---------------------------------------------------------------------------------------
# Can this machine do it? (exit 77 if not)

require_tools() {
  [ "$(id -u)" -eq 0 ] || skip "must run as root (network namespaces, veth pairs, bridges)"
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null 2>&1 || skip "'$t' not found (needs iproute2, util-linux, Open MPI)"
  done
}

probe_kernel() {
  local out
  out=$(unshare --net --uts sh -c 'ip link add spcprobe0 type veth peer name spcprobe1 &&
                                   ip link add spcprobebr type bridge' 2>&1) ||
    skip "cannot create network/UTS namespaces, veth pairs or a bridge here: ${out}"
  if [ -n "$RATE" ]; then
    out=$(unshare --net sh -c "ip link add spcprobe0 type veth peer name spcprobe1 &&
          tc qdisc add dev spcprobe0 root tbf rate $RATE burst $(link_burst "$RATE") latency 100ms" 2>&1) ||
      skip "cannot rate-limit a link with 'tc qdisc add ... tbf rate $RATE': ${out}"
  fi
}

# ---------------------------------------------------------------------------------------
# State: $STATE_DIR/cluster.env (NODES, RATE, OWNER = "up" or "run:<pid>"), node<i>.pid.

lock() {
  mkdir -p "$(dirname "$LOCK_FILE")"
  exec 9>>"$LOCK_FILE"
  if ! flock -n 9; then
    log "waiting for another cluster.sh to finish (lock $LOCK_FILE)"
    flock -w "${CLUSTER_LOCK_WAIT:-1800}" 9 || die "another cluster.sh held $LOCK_FILE for too long"
  fi
}

our_namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^(${NS_PREFIX}[0-9]+|${BRIDGE_NS})\$" || true; }

state_get() { # key -> value ("" when absent)
  [ -f "$STATE_DIR/cluster.env" ] || return 0
  sed -n "s/^$1=//p" "$STATE_DIR/cluster.env"
}

holder_pid() { cat "$STATE_DIR/node$1.pid" 2>/dev/null || true; }

holder_alive() { # node -> 0 if its holder runs in the node's network namespace
  local pid
  pid=$(holder_pid "$1")
  [ -n "$pid" ] && [ -e "/proc/$pid" ] && [ -e "/run/netns/${NS_PREFIX}$1" ] &&
    [ "$(stat -L -c %i "/proc/$pid/ns/net" 2>/dev/null)" = "$(stat -L -c %i "/run/netns/${NS_PREFIX}$1")" ]
}

cluster_healthy() {
  local n i
  n=$(state_get NODES)
  [ -n "$n" ] || return 1
  for ((i = 0; i < n; i++)); do holder_alive "$i" || return 1; done
}

owner_alive() {
  local owner pid
  owner=$(state_get OWNER)
  case "$owner" in
    up) return 0 ;;
    run:*) pid=${owner#run:}; [ -e "/proc/$pid" ] && grep -qa cluster.sh "/proc/$pid/cmdline" 2>/dev/null ;;
    *) return 1 ;;
  esac
}

# ---------------------------------------------------------------------------------------
# up / down

running() { # pid -> 0 if it exists and is not a zombie (pid 1 may reap orphans late)
  local st
  st=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ]
}

teardown() {
  local ns pids left p _
  for ns in $(our_namespaces); do
    # Everything still running inside our namespaces (holders, daemons and ranks of an
    # interrupted run) is ours: terminate it, then remove the namespace with its links.
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    if [ -n "$pids" ]; then
      # shellcheck disable=SC2086
      kill -TERM $pids 2>/dev/null || true
      for _ in 1 2 3 4 5 6 7 8 9 10; do
        left=""
        for p in $pids; do if running "$p"; then left+=" $p"; fi; done
        [ -n "$left" ] || break
        sleep 0.2
      done
      # shellcheck disable=SC2086
      if [ -n "$left" ]; then kill -KILL $left 2>/dev/null || true; fi
    fi
    ip netns del "$ns" 2>/dev/null || ip netns del "$ns"
  done
  rm -rf "$STATE_DIR" "$SHM_DIR"
}

create() { # nodes rate burst owner (burst: link_burst's, empty without a rate)
  local n=$1 rate=$2 burst=$3 owner=$4 i ns pid t
  mkdir -p "$STATE_DIR/tmp" "$SHM_DIR"
  printf 'NODES=%s\nRATE=%s\nBURST=%s\nOWNER=%s\n' "$n" "$rate" "$burst" "$owner" >"$STATE_DIR/cluster.env"
  ip netns add "$BRIDGE_NS" || skip "'ip netns add' failed (no permission to create named network namespaces?)"
  ip -n "$BRIDGE_NS" link set lo up
  ip -n "$BRIDGE_NS" link add br0 type bridge
  ip -n "$BRIDGE_NS" link set br0 up
  for ((i = 0; i < n; i++)); do
    ns=${NS_PREFIX}$i
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    # Created inside the bridge namespace with the peer moved straight into the node:
    # no interface ever appears in the host's namespace.
    ip -n "$BRIDGE_NS" link add "veth$i" type veth peer name eth0 netns "$ns"
    ip -n "$BRIDGE_NS" link set "veth$i" master br0
    ip -n "$BRIDGE_NS" link set "veth$i" up
    ip -n "$ns" addr add "$SUBNET.$((i + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    if [ -n "$rate" ]; then
      tc -n "$ns" qdisc add dev eth0 root tbf rate "$rate" burst "$burst" latency 100ms
      tc -n "$BRIDGE_NS" qdisc add dev "veth$i" root tbf rate "$rate" burst "$burst" latency 100ms
    fi
    # The holder: `ip netns exec` and `unshare` exec (no fork), so $! is the sleep itself.
    # fd 9 (the lock) is not inherited.
    ip netns exec "$ns" unshare --uts sh -c "hostname node$i && exec sleep infinity" </dev/null >/dev/null 2>&1 9>&- &
    pid=$!
    echo "$pid" >"$STATE_DIR/node$i.pid"
    for ((t = 0; t < 50; t++)); do
      if holder_alive "$i" && [ "$(nsenter --target "$pid" --uts hostname 2>/dev/null)" = "node$i" ]; then break; fi
      [ -e "/proc/$pid" ] || die "the holder process of node$i exited (see: ip netns exec $ns unshare --uts hostname node$i)"
      sleep 0.1
    done
    [ "$(nsenter --target "$pid" --uts hostname 2>/dev/null)" = "node$i" ] || die "node$i did not come up"
  done
  # The rsh agent Open MPI calls for remote daemons: this script in its `rsh` role.
  printf '#!/bin/sh\nexec %q rsh "$@"\n' "$SELF" >"$STATE_DIR/rsh-agent"
  chmod +x "$STATE_DIR/rsh-agent"
  log "up: $n nodes (node0..node$((n - 1)) = $SUBNET.1..$SUBNET.$n)${rate:+, links limited to $rate (tbf burst $burst B)}"
}

# Makes sure a cluster of n nodes at `rate` is up. Sets CREATED=1 when this call built it.
CREATED=0
ensure_up() { # nodes rate owner
  local n=$1 rate=$2 owner=$3 burst=""
  [ -z "$rate" ] || burst=$(link_burst "$rate")
  if [ -f "$STATE_DIR/cluster.env" ] || [ -n "$(our_namespaces)" ]; then
    if owner_alive && cluster_healthy; then
      # `run` without --rate takes an existing cluster's links as they are.
      if [ "$(state_get NODES)" = "$n" ] &&
        { { [ "$(state_get RATE)" = "$rate" ] && [ "$(state_get BURST)" = "$burst" ]; } || [ "$RATE_GIVEN" = 0 ]; }; then
        log "using the cluster that is already up ($n nodes, $(state_get RATE | sed 's/^$/no rate limit/'))"
        return 0
      fi
      die "a cluster with $(state_get NODES) nodes (rate '$(state_get RATE)', burst '$(state_get BURST)') is already up; run 'cluster.sh down' first"
    fi
    log "removing leftovers of an earlier cluster"
    teardown
  fi
  CREATED=1
  create "$n" "$rate" "$burst" "$owner"
}

# ---------------------------------------------------------------------------------------
# Commands

cmd_up() {
  parse_options "$@"
  if [ ${#REST[@]} -ne 1 ] || ! is_count "${REST[0]}"; then usage_error "up needs NODES"; fi
  local n=${REST[0]}
  [ "$n" -le "$MAX_NODES" ] || usage_error "at most $MAX_NODES nodes"
  require_tools ip unshare nsenter flock hostname ${RATE:+tc}
  probe_kernel
  lock
  trap 'rc=$?; if [ $rc -ne 0 ] && [ "$CREATED" = 1 ]; then teardown; fi' EXIT
  RATE_GIVEN=1  # `up` wants exactly these links
  ensure_up "$n" "$RATE" up
}

cmd_down() {
  [ $# -eq 0 ] || usage_error "down takes no arguments"
  require_tools ip
  lock
  teardown
  log "down"
}

cmd_status() {
  local n i pid ns
  n=$(state_get NODES)
  if [ -z "$n" ]; then
    if [ -n "$(our_namespaces)" ]; then
      echo "no cluster state, but leftover namespaces: $(our_namespaces | tr '\n' ' ')(run: cluster.sh down)"
    else
      echo "down"
    fi
    return 0
  fi
  local rate
  rate=$(state_get RATE)
  echo "cluster: $n nodes, links ${rate:+limited to }${rate:-not rate-limited}, owner $(state_get OWNER)$(owner_alive || echo ' (gone: run cluster.sh down)')"
  for ((i = 0; i < n; i++)); do
    ns=${NS_PREFIX}$i
    pid=$(holder_pid "$i")
    if holder_alive "$i"; then
      echo "  node$i: netns $ns, hostname $(nsenter --target "$pid" --uts hostname), $(ip -n "$ns" -4 -o addr show dev eth0 | awk '{print $4}'), holder pid $pid, qdisc: $(tc -n "$ns" qdisc show dev eth0 | head -1)"
    else
      echo "  node$i: DOWN (holder ${pid:-?} missing)"
    fi
  done
}

# rsh agent role: `cluster.sh rsh [ssh-style options] HOST command...` runs the command
# (a shell command line, as ssh would pass it to the remote shell) in HOST's namespaces.
cmd_rsh() {
  while [ $# -gt 0 ]; do
    case "$1" in
      -l | -p | -o | -i | -F) shift 2 ;;
      -*) shift ;;
      *) break ;;
    esac
  done
  [ $# -ge 1 ] || die "rsh: no host"
  local host=$1 node="" pid
  shift
  case "$host" in
    "$SUBNET".*) node=$((${host##*.} - 1)) ;;
    node[0-9]*) node=${host#node} ;;
    *) die "rsh: unknown host '$host' (expected $SUBNET.K or nodeI)" ;;
  esac
  holder_alive "$node" || die "rsh: node$node is not up"
  pid=$(holder_pid "$node")
  exec nsenter --target "$pid" --uts --net -- sh -c "$*"
}

MPIRUN_PID=""
RUN_RC=0
run_cleanup() {
  local rc=$?
  trap - EXIT
  trap '' INT TERM HUP # a second Ctrl-C must not interrupt the clean-up
  [ "$RUN_RC" -ne 0 ] && rc=$RUN_RC
  if [ -n "$MPIRUN_PID" ] && running "$MPIRUN_PID"; then
    kill -TERM "$MPIRUN_PID" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
      running "$MPIRUN_PID" || break
      sleep 0.2
    done
    kill -KILL "$MPIRUN_PID" 2>/dev/null || true
  fi
  if [ "$CREATED" = 1 ]; then
    teardown
    log "down"
  else
    rm -f "$STATE_DIR/run.$$".*
  fi
  exit "$rc"
}

cmd_run() {
  parse_options "$@"
  local words=("${REST[@]}")
  if [ ${#words[@]} -lt 4 ] || ! is_count "${words[0]}" || ! is_count "${words[1]}" || [ "${words[2]}" != "--" ]; then
    usage_error "run needs NODES RANKS_PER_NODE [--rate RATE] -- program [args...]"
  fi
  local n=${words[0]} ppn=${words[1]}
  local prog=("${words[@]:3}")
  [ "$n" -le "$MAX_NODES" ] || usage_error "at most $MAX_NODES nodes"
  local mpirun=${CLUSTER_MPIRUN:-mpirun}
  require_tools ip unshare nsenter flock hostname "$mpirun" ${RATE:+tc}
  probe_kernel
  lock
  trap run_cleanup EXIT
  trap 'RUN_RC=130; exit 130' INT
  trap 'RUN_RC=143; exit 143' TERM
  trap 'RUN_RC=129; exit 129' HUP
  ensure_up "$n" "$RATE" "run:$$"
  RATE=$(state_get RATE)
  local burst
  burst=$(state_get BURST)

  local timeout=${CLUSTER_TIMEOUT:-600} extra=()
  is_count "$timeout" || usage_error "CLUSTER_TIMEOUT must be a positive number of seconds"
  # shellcheck disable=SC2206
  [ -z "${CLUSTER_MPIRUN_ARGS:-}" ] || extra=(${CLUSTER_MPIRUN_ARGS})
  local hostfile="$STATE_DIR/run.$$.hostfile" i
  : >"$hostfile"
  for ((i = 0; i < n; i++)); do echo "$SUBNET.$((i + 1)) slots=$ppn" >>"$hostfile"; done

  # MCA settings as name=value; one given again in CLUSTER_MPIRUN_ARGS replaces ours
  # (Open MPI 4.1's mpirun refuses an MCA parameter listed twice on its command line).
  # shellcheck disable=SC2054  # commas inside MCA values, not array separators
  local mca=(
    # Remote daemons (orted) start through this script acting as rsh; node0's own ranks
    # are launched by mpirun directly (10.77.0.1 is one of its interface addresses).
    "plm_rsh_agent=$STATE_DIR/rsh-agent" plm_rsh_no_tree_spawn=1
    # Oversubscribed ranks busy-wait forever otherwise (2 cores here).
    mpi_yield_when_idle=1
    # Shared memory inside a node, TCP over the emulated network between nodes only.
    pml=ob1 btl=self,vader,tcp "osc=^ucx"
    "btl_tcp_if_include=$SUBNET.0/24" "oob_tcp_if_include=$SUBNET.0/24"
    # Session directories and shared-memory segments in places `down` removes.
    "orte_tmpdir_base=$STATE_DIR/tmp" "btl_vader_backing_directory=$SHM_DIR"
  )
  local mpirun_args=(
    -np $((n * ppn)) --hostfile "$hostfile"
    # Blocks of ppn ranks per node: ranks 0..ppn-1 on node0, and so on.
    --map-by "ppr:$ppn:node" --rank-by slot --bind-to none
    --oversubscribe --allow-run-as-root --timeout "$timeout"
    # Remote orted stay attached to the rsh agent (no --daemonize), so their errors show.
    --leave-session-attached
    -x SPC_CLUSTER_NODES -x SPC_CLUSTER_PPN -x SPC_CLUSTER_RATE
    # auto's cached machine model is keyed by it: a model measured over links of another
    # rate (or none) is not this network's (src/comm/plan/calibrate.cpp, network_tag).
    -x SPARSECOMM_MODEL_TAG
    -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
  )
  local kv user=" ${extra[*]} "
  for kv in "${mca[@]}"; do
    [[ "$user" =~ [[:space:]]--?mca[[:space:]]+${kv%%=*}[[:space:]] ]] || mpirun_args+=(--mca "${kv%%=*}" "${kv#*=}")
  done
  mpirun_args+=("${extra[@]}")
  log "run: $n nodes x $ppn ranks${RATE:+, rate $RATE}: ${prog[*]}"
  # In the background, so that a signal reaches the trap at once (bash runs traps only
  # between foreground commands); fd 9 (the lock) stays with this script.
  SPC_CLUSTER_NODES=$n SPC_CLUSTER_PPN=$ppn SPC_CLUSTER_RATE=$RATE \
    SPARSECOMM_MODEL_TAG="emulated cluster, links ${RATE:-unlimited}${burst:+ (burst $burst B)}${SPARSECOMM_MODEL_TAG:+; $SPARSECOMM_MODEL_TAG}" \
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    nsenter --target "$(holder_pid 0)" --uts --net -- "$mpirun" "${mpirun_args[@]}" "${prog[@]}" 9>&- &
  MPIRUN_PID=$!
  local rc=0
  wait "$MPIRUN_PID" || rc=$?
  MPIRUN_PID=""
  RUN_RC=$rc
  exit "$rc"
}

# A tiny MPI program, compiled into a temporary directory: every rank checks that it runs on
# host node<rank / ppn> and that MPI_COMM_TYPE_SHARED groups exactly the ranks of its node,
# then rank 0 times 1 MiB ping-pongs with a rank on its own node and one on the next node,
# and 64 KiB to the next node after 3 ms of idle (what the links' token bucket lets through).
cmd_smoke() {
  parse_options "$@"
  if [ ${#REST[@]} -ne 2 ] || ! is_count "${REST[0]}" || ! is_count "${REST[1]}"; then
    usage_error "smoke needs NODES RANKS_PER_NODE"
  fi
  require_tools mpicc
  local tmp rc=0
  tmp=$(mktemp -d /tmp/sparsecomm-cluster-smoke.XXXXXX)
  # shellcheck disable=SC2064  # expand $tmp now
  trap "rm -rf '$tmp'" EXIT
  cat >"$tmp/smoke.c" <<'END_OF_C'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double pingpong(int me, int peer, char* buf, int n) {
  const int reps = 3;
  double t = MPI_Wtime();
  for (int k = 0; k < reps; ++k) {
    if (me == 0) {
      MPI_Send(buf, n, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, n, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (me == peer) {
      MPI_Recv(buf, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
    }
  }
  return 2.0 * reps * n / (MPI_Wtime() - t) / 1e6;
}

/* n bytes to peer and an 8-byte reply, after the link was idle for 3 ms: MB/s of the best
   of 5. A link that lets a burst leave faster than its rate shows it here. */
static double after_idle(int me, int peer, char* buf, int n) {
  double best = 1e30;
  for (int k = 0; k < 5; ++k) {
    usleep(3000);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    if (me == 0) {
      MPI_Send(buf, n, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
      MPI_Recv(buf, 8, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (me == peer) {
      MPI_Recv(buf, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
    }
    t = MPI_Wtime() - t;
    if (t < best) best = t;
  }
  return n / best / 1e6;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me, p, len, local_size, bad = 0;
  char name[MPI_MAX_PROCESSOR_NAME], host[256] = "", want[64];
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Get_processor_name(name, &len);
  gethostname(host, sizeof host - 1);
  const char* ppn_env = getenv("SPC_CLUSTER_PPN");
  const int ppn = ppn_env ? atoi(ppn_env) : 1;
  snprintf(want, sizeof want, "node%d", me / ppn);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &local_size);
  bad = strcmp(name, want) != 0 || strcmp(host, want) != 0 || local_size != ppn;
  printf("rank %d of %d: processor %s, hostname %s, %d ranks share its node%s\n", me, p, name, host, local_size,
         bad ? "  <-- WRONG" : "");
  fflush(stdout);
  const int n = 1 << 20;
  char* buf = calloc(n, 1);
  MPI_Barrier(MPI_COMM_WORLD);
  if (ppn > 1) {
    double bw = pingpong(me, 1, buf, n);
    if (me == 0) printf("1 MiB ping-pong rank 0 <-> rank 1 (same node): %.0f MB/s\n", bw);
  }
  if (p > ppn) {
    double bw = pingpong(me, ppn, buf, n);
    if (me == 0) printf("1 MiB ping-pong rank 0 <-> rank %d (next node): %.0f MB/s\n", ppn, bw);
    bw = after_idle(me, ppn, buf, 1 << 16);
    if (me == 0) printf("64 KiB to rank %d (next node) after 3 ms idle: %.0f MB/s\n", ppn, bw);
  }
  free(buf);
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Comm_free(&node);
  MPI_Finalize();
  return any;
}
END_OF_C
  mpicc -O2 -o "$tmp/smoke" "$tmp/smoke.c"
  "$SELF" run "${REST[0]}" "${REST[1]}" ${RATE:+--rate "$RATE"} -- "$tmp/smoke" || rc=$?
  if [ "$rc" -eq 0 ]; then echo "smoke: OK"; else echo "smoke: FAILED (exit $rc)"; fi
  return "$rc"
}

main() {
  [ $# -ge 1 ] || { usage >&2; exit 2; }
  local cmd=$1
  shift
  case "$cmd" in
    up) cmd_up "$@" ;;
    run) cmd_run "$@" ;;
    down) cmd_down "$@" ;;
    status) cmd_status "$@" ;;
    rsh) cmd_rsh "$@" ;;
    smoke) cmd_smoke "$@" ;;
    -h | --help | help) usage ;;
    *) usage_error "unknown command '$cmd'" ;;
  esac
}

main "$@"
