#!/bin/bash
# The demo behind ./scripts/run on hosts without RDMA. Runs inside the
# Soft-RoCE VM (tests/vm/run-in-vm): brings up rxe0, keeps RDMA traffic
# flowing between two processes on it, and runs two exporters, A serving on
# 0.0.0.0:PORT_A and B on 0.0.0.0:PORT_B (forwarded to the host's
# 127.0.0.1), whose latency probes measure each other over rxe0 (RC write
# and send, and UD). Stops when the host creates $RESULTS/stop.
#
# Usage: demo-guest.sh EXPORTER PORT_A PORT_B [EXPORTER FLAGS...]
# Writes $RESULTS/ready once both exporters answer; logs in $RESULTS.
set -euo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
usage="usage: demo-guest.sh EXPORTER PORT_A PORT_B [EXPORTER FLAGS...]"
exporter=${1:?$usage}
port_a=${2:?$usage}
port_b=${3:?$usage}
shift 3
: "${RESULTS:?RESULTS must name the results directory}"
R=$RESULTS

say() { echo "demo: $*" >&2; }

timeout 120 "$HERE/rxe-up" >"$R/rxe-up.log" 2>&1 || {
	say "rxe-up failed:"
	cat "$R/rxe-up.log" >&2
	exit 1
}
gid=$(timeout 10 "$HERE/rxe-up" --print-gid-index)

# Each exporter's probe answers on its own control port and probes the
# other's: every port of rxe0 to every port of the peer, one probe per class
# every 500 ms. Both list both, as a fleet's target list does, in one rack:
# each finds itself in the list (its own address and probe port) and probes
# the other.
classes="
    - {name: write, op: write, size: 64, interval: 500ms, timeout: 1s}
    - {name: send, op: send, size: 64, interval: 500ms, timeout: 1s}
    - {name: ud, op: ud, size: 64, interval: 500ms, timeout: 1s}"
probe_config() { # PORT RESPONDER_PORT
	cat <<CONF
web:
  listen_address: ":$1"
probe:
  enabled: true
  device: rxe0
  listen_address: 127.0.0.1:$2
  classes:$classes
  targets:
    - address: 127.0.0.1:10911
      labels: {peer: a, rack: demo}
    - address: 127.0.0.1:10921
      labels: {peer: b, rack: demo}
CONF
}
probe_config "$port_a" 10911 >"$R/a.yml"
probe_config "$port_b" 10921 >"$R/b.yml"

"$exporter" --config.file "$R/a.yml" "$@" 2>"$R/a.log" >/dev/null &
a_pid=$!
"$exporter" --config.file "$R/b.yml" "$@" 2>"$R/b.log" >/dev/null &
b_pid=$!

# Background traffic: ping-pong pairs, one after the other, with a pause so
# the counters move in visible steps.
traffic() {
	local round=0
	while [[ ! -e $R/stop ]]; do
		round=$((round + 1))
		timeout 60 ibv_rc_pingpong -d rxe0 -g "$gid" -n 2000 -p 18600 >/dev/null 2>&1 &
		local server=$!
		sleep 0.5
		timeout 60 ibv_rc_pingpong -d rxe0 -g "$gid" -n 2000 -p 18600 192.168.77.1 \
			>/dev/null 2>&1 || true
		wait "$server" || true
		echo "$round" >"$R/traffic-rounds"
		sleep 2
	done
}
traffic &
traffic_pid=$!

for p in "$port_a" "$port_b"; do
	for _ in $(seq 1 600); do
		timeout 5 curl -sf -o /dev/null "http://127.0.0.1:$p/healthz" && break
		kill -0 "$a_pid" 2>/dev/null && kill -0 "$b_pid" 2>/dev/null || break
		sleep 0.1
	done
done
for pid_log in "$a_pid a.log" "$b_pid b.log"; do
	if ! kill -0 "${pid_log% *}" 2>/dev/null; then
		say "an exporter exited at start; ${pid_log#* }:"
		tail -20 "$R/${pid_log#* }" >&2
		exit 1
	fi
done
say "exporters and traffic running"
touch "$R/ready"
while [[ ! -e $R/stop ]] && kill -0 "$a_pid" 2>/dev/null && kill -0 "$b_pid" 2>/dev/null; do
	sleep 0.5
done
kill "$traffic_pid" 2>/dev/null || true
kill -TERM "$a_pid" "$b_pid" 2>/dev/null || true
rc_a=0
rc_b=0
wait "$a_pid" || rc_a=$?
wait "$b_pid" || rc_b=$?
wait "$traffic_pid" 2>/dev/null || true
say "exporters exited with $rc_a and $rc_b"
((rc_a == 0 && rc_b == 0))
