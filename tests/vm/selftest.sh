#!/bin/bash
# Self-test of the VM test bed; run it with: tests/vm/run-in-vm tests/vm/selftest.sh
#
# Inside the VM: brings up rxe0 (rxe-up), records rdma netlink output and the
# port's hw_counters, runs ibv_rc_pingpong and ib_write_lat server/client
# pairs over rxe0, and checks that the packet counters moved. Every output
# goes to $RESULTS; the exit code is 0 only if every step passed.
set -euo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
RXE=rxe0
ITERS=1000
STEP_TIMEOUT=90
PINGPONG_PORT=18515
WRITE_LAT_PORT=18516

: "${RESULTS:?RESULTS must name the results directory}"
[[ -d $RESULTS && -w $RESULTS ]] || {
	echo "selftest: RESULTS=$RESULTS is not a writable directory" >&2
	exit 1
}

summary=$RESULTS/selftest-summary.txt
: >"$summary"
failures=0

note() { printf 'selftest: [%3ds] %s\n' "$SECONDS" "$*" | tee -a "$summary" >&2; }
pass() { note "PASS $*"; }
fail() {
	note "FAIL $*"
	failures=$((failures + 1))
}

# step NAME CMD...: runs CMD under the step timeout with its output in
# $RESULTS/NAME.
step() {
	local name=$1 rc=0
	shift
	timeout --kill-after=5 "$STEP_TIMEOUT" "$@" >"$RESULTS/$name" 2>&1 || rc=$?
	if ((rc == 0)); then
		pass "$name"
	else
		fail "$name (exit $rc): $*"
	fi
	return "$rc"
}

# Waits until a TCP listener on port $1 exists (up to $2 seconds).
wait_listen() {
	local port=$1 deadline=$((SECONDS + $2))
	while ((SECONDS < deadline)); do
		if timeout 5 ss -Hltn "sport = :$port" | grep -q .; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# Runs a verbs server/client pair: name, port, then the common command line.
# The client adds 127.0.0.1 as the server address for the connection setup.
pair() {
	local name=$1 port=$2 server_pid rc_server=0 rc_client=0
	shift 2
	timeout --kill-after=5 "$STEP_TIMEOUT" "$@" >"$RESULTS/$name.server.log" 2>&1 &
	server_pid=$!
	if ! wait_listen "$port" 30; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
		fail "$name: server did not listen on port $port"
		return 0
	fi
	timeout --kill-after=5 "$STEP_TIMEOUT" "$@" 127.0.0.1 >"$RESULTS/$name.client.log" 2>&1 ||
		rc_client=$?
	wait "$server_pid" || rc_server=$?
	if ((rc_server == 0 && rc_client == 0)); then
		pass "$name (server and client)"
	else
		fail "$name: server exit $rc_server, client exit $rc_client (see $name.*.log)"
	fi
}

# Writes "name value" lines for every port hw counter to $1.
dump_hw_counters() {
	local f value out=$1
	: >"$out"
	for f in "/sys/class/infiniband/$RXE/ports/1/hw_counters"/*; do
		read -r value <"$f"
		printf '%s %s\n' "${f##*/}" "$value" >>"$out"
	done
}

# counter FILE NAME: prints the value of counter NAME from a dump_hw_counters file.
counter() {
	local name value
	while read -r name value; do
		if [[ $name == "$2" ]]; then
			echo "$value"
			return 0
		fi
	done <"$1"
}

note "kernel $(uname -r), results in $RESULTS"

gid_index=""
if gid_index=$(timeout 120 "$HERE/rxe-up" --print-gid-index 2>"$RESULTS/rxe-up.log"); then
	pass "rxe-up (IPv4 GID index $gid_index)"
else
	fail "rxe-up (see rxe-up.log)"
	cat "$RESULTS/rxe-up.log" >&2
	exit 1
fi
echo "$gid_index" >"$RESULTS/gid-index"

step rdma-dev.json rdma -j dev || true
step rdma-link.json rdma -j link || true
step rdma-statistic-before.json rdma -j statistic show || true
step gids.txt grep -H . /sys/class/infiniband/$RXE/ports/1/gids/0 \
	/sys/class/infiniband/$RXE/ports/1/gids/"$gid_index" \
	/sys/class/infiniband/$RXE/ports/1/gid_attrs/types/"$gid_index" || true

if [[ -d /sys/class/infiniband/$RXE/ports/1/hw_counters ]]; then
	dump_hw_counters "$RESULTS/hw_counters-before.txt"
	mapfile -t lines <"$RESULTS/hw_counters-before.txt"
	pass "hw_counters readable (${#lines[@]} counters)"
else
	fail "no hw_counters directory for $RXE port 1"
fi

pair ibv_rc_pingpong "$PINGPONG_PORT" \
	ibv_rc_pingpong -d "$RXE" -i 1 -g "$gid_index" -n "$ITERS" -p "$PINGPONG_PORT"
pair ib_write_lat "$WRITE_LAT_PORT" \
	ib_write_lat -d "$RXE" -i 1 -x "$gid_index" -n "$ITERS" -p "$WRITE_LAT_PORT" -F

step rdma-statistic-after.json rdma -j statistic show || true
if [[ -f $RESULTS/hw_counters-before.txt ]]; then
	dump_hw_counters "$RESULTS/hw_counters-after.txt"
	for name in sent_pkts rcvd_pkts; do
		before=$(counter "$RESULTS/hw_counters-before.txt" "$name")
		after=$(counter "$RESULTS/hw_counters-after.txt" "$name")
		if [[ -n $before && -n $after ]] && ((after >= before + 2 * ITERS)); then
			pass "hw counter $name $before -> $after"
		else
			fail "hw counter $name did not grow enough: ${before:-?} -> ${after:-?}"
		fi
	done
fi

note "finished in ${SECONDS}s with $failures failure(s)"
((failures == 0))
