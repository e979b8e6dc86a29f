#!/bin/bash
# The demo behind ./scripts/run on hosts without RDMA. Runs inside the
# Soft-RoCE VM (tests/vm/run-in-vm): brings up rxe0, keeps RDMA traffic
# flowing between two processes on it, and serves the exporter on
# 0.0.0.0:PORT (forwarded to the host's 127.0.0.1:PORT). Stops when the host
# creates $RESULTS/stop.
#
# Usage: demo-guest.sh EXPORTER PORT [EXPORTER FLAGS...]
set -euo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
exporter=$1
port=$2
shift 2
: "${RESULTS:?RESULTS must name the results directory}"

say() { echo "demo: $*" >&2; }

timeout 120 "$HERE/rxe-up" >"$RESULTS/rxe-up.log" 2>&1 || {
	say "rxe-up failed:"
	cat "$RESULTS/rxe-up.log" >&2
	exit 1
}
gid=$(timeout 10 "$HERE/rxe-up" --print-gid-index)

"$exporter" --web.listen-address "0.0.0.0:$port" "$@" 2>"$RESULTS/exporter.log" &
exporter_pid=$!

# Background traffic: ping-pong pairs, one after the other, with a pause so
# the counters move in visible steps.
traffic() {
	local round=0
	while [[ ! -e $RESULTS/stop ]]; do
		round=$((round + 1))
		timeout 60 ibv_rc_pingpong -d rxe0 -g "$gid" -n 2000 -p 18600 >/dev/null 2>&1 &
		local server=$!
		sleep 0.5
		timeout 60 ibv_rc_pingpong -d rxe0 -g "$gid" -n 2000 -p 18600 192.168.77.1 \
			>/dev/null 2>&1 || true
		wait "$server" || true
		echo "$round" >"$RESULTS/traffic-rounds"
		sleep 2
	done
}
traffic &
traffic_pid=$!

say "exporter and traffic running"
touch "$RESULTS/ready"
while [[ ! -e $RESULTS/stop ]] && kill -0 "$exporter_pid" 2>/dev/null; do
	sleep 0.5
done
kill "$traffic_pid" 2>/dev/null || true
kill -TERM "$exporter_pid" 2>/dev/null || true
rc=0
wait "$exporter_pid" || rc=$?
wait "$traffic_pid" 2>/dev/null || true
say "exporter exited with $rc"
exit "$rc"
