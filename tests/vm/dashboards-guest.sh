#!/bin/bash
# Guest side of tests/vm/test_dashboards_vm.py: two rdma_exporter instances on
# the Soft-RoCE device rxe0 that probe each other (and A itself, and a target
# where nothing listens), serving /metrics on PORT_A and PORT_B of every
# address (the VM's NIC: run-in-vm --hostfwd forwards the host's
# 127.0.0.1:PORT to them) until the host creates $RESULTS/stop.
#
# Usage (inside the VM started by run-in-vm):
#   dashboards-guest.sh EXPORTER RXE_UP PORT_A PORT_B
# Writes $RESULTS/ready once both exporters answer; logs in $RESULTS.
set -euo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
usage="usage: dashboards-guest.sh EXPORTER RXE_UP PORT_A PORT_B"
EXPORTER=${1:?$usage}
RXE_UP=${2:?$usage}
PORT_A=${3:?$usage}
PORT_B=${4:?$usage}
RXE=rxe0
# Stop on our own if the host never says so.
MAX_SECONDS=200

: "${RESULTS:?RESULTS must name the results directory}"
R=$RESULTS
PROG=dashboards-guest
# shellcheck source=guest-lib.sh
source "$HERE/guest-lib.sh"

: >"$R/steps.log"
gid_index=$(t 120 "$RXE_UP" --print-gid-index 2>"$R/rxe-up.log") ||
	die "rxe-up failed (see rxe-up.log)"
note "rxe0 up, GID index $gid_index"

# A: manages rxe0's counter mode (rxe accepts auto mode and binds nothing),
# names processes in the QP inventory, and probes B, itself (loopback) and a
# port where nothing listens; its 8 KiB class is more than B offers, so B
# refuses it, and its UD class with a 1 ms timeout loses the probes whose
# reply takes longer (on emulated rxe, most: the lost-by-path panels). B
# probes A. A is in rack r1, B in r2 (neither is in its own target list).
classes="
    - {name: send, op: send, size: 64, interval: 200ms, timeout: 1s}
    - {name: write, op: write, size: 64, interval: 200ms, timeout: 1s}
    - {name: read, op: read, size: 64, interval: 200ms, timeout: 1s}
    - {name: ud, op: ud, size: 64, interval: 200ms, timeout: 1s}"
cat >"$R/a.yml" <<CONF
web:
  listen_address: ":$PORT_A"
qp_counters:
  inventory_by_comm: true
  ports:
    - device: $RXE
      mode: auto
probe:
  enabled: true
  device: $RXE
  listen_address: 127.0.0.1:10911
  loopback: true
  backoff_max: 2s
  pinglist: {group: r1}
  classes:$classes
    - {name: large, op: write, size: 8192, interval: 1s, timeout: 1s}
    - {name: ud_short, op: ud, size: 128, interval: 200ms, timeout: 1ms}
  targets:
    - address: 127.0.0.1:10921
      labels: {rack: r2}
    - address: 127.0.0.1:10999
      classes: [write]
CONF
cat >"$R/b.yml" <<CONF
web:
  listen_address: ":$PORT_B"
probe:
  enabled: true
  device: $RXE
  listen_address: 127.0.0.1:10921
  max_message_size: 4096
  pinglist: {group: r2}
  classes:$classes
  targets:
    - address: 127.0.0.1:10911
      labels: {rack: r1}
CONF
"$EXPORTER" --config.file "$R/a.yml" 2>"$R/a.log" >/dev/null &
a_pid=$!
"$EXPORTER" --config.file "$R/b.yml" 2>"$R/b.log" >/dev/null &
b_pid=$!
trap 'kill "$a_pid" "$b_pid" 2>/dev/null || true; wait 2>/dev/null || true' EXIT
wait_healthz "http://127.0.0.1:$PORT_A/healthz" "$a_pid" a.log
wait_healthz "http://127.0.0.1:$PORT_B/healthz" "$b_pid" b.log
note "exporters up: A on $PORT_A, B on $PORT_B"
touch "$R/ready"

while [[ ! -e $R/stop ]] && ((SECONDS < MAX_SECONDS)); do
	kill -0 "$a_pid" 2>/dev/null || die "exporter A exited (see a.log)"
	kill -0 "$b_pid" 2>/dev/null || die "exporter B exited (see b.log)"
	sleep 0.5
done
[[ -e $R/stop ]] || die "the host did not create stop within ${MAX_SECONDS}s"
kill "$a_pid" "$b_pid"
rc_a=0
rc_b=0
wait "$a_pid" || rc_a=$?
wait "$b_pid" || rc_b=$?
trap - EXIT
((rc_a == 0 && rc_b == 0)) || die "exporters exited $rc_a and $rc_b on SIGTERM (see a.log, b.log)"
note "done"
