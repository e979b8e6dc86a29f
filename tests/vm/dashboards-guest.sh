#!/bin/bash
# Guest side of tests/vm/test_dashboards_vm.py: a Soft-RoCE device with RC
# traffic flowing, and rdma_exporter serving it on PORT of every address (the
# VM's NIC; run-in-vm --hostfwd PORT forwards the host's 127.0.0.1:PORT to
# it) until the host creates $RESULTS/stop.
#
# Usage (inside the VM started by run-in-vm):
#   dashboards-guest.sh EXPORTER RXE_UP PORT
# Writes $RESULTS/ready once the exporter answers; logs in $RESULTS.
set -euo pipefail

EXPORTER=${1:?usage: dashboards-guest.sh EXPORTER RXE_UP PORT}
RXE_UP=${2:?usage: dashboards-guest.sh EXPORTER RXE_UP PORT}
PORT=${3:?usage: dashboards-guest.sh EXPORTER RXE_UP PORT}
RXE=rxe0
PINGPONG_PORT=18515
# Stop on our own if the host never says so.
MAX_SECONDS=180

: "${RESULTS:?RESULTS must name the results directory}"
R=$RESULTS

PROG=dashboards-guest
# shellcheck source=guest-lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/guest-lib.sh"

: >"$R/steps.log"
gid_index=$(t 120 "$RXE_UP" --print-gid-index 2>"$R/rxe-up.log") ||
	die "rxe-up failed (see rxe-up.log)"
note "rxe0 up, GID index $gid_index"

# Auto mode on rxe0 is managed (rxe accepts it and binds nothing), so the
# counter-management metrics exist; the QP inventory names processes.
cat >"$R/exporter.yml" <<CONF
web:
  listen_address: ":$PORT"
qp_counters:
  inventory_by_comm: true
  ports:
    - device: $RXE
      mode: auto
CONF
"$EXPORTER" --config.file "$R/exporter.yml" 2>"$R/exporter.log" >/dev/null &
exporter_pid=$!
trap 'kill "$exporter_pid" 2>/dev/null || true; wait "$exporter_pid" 2>/dev/null || true' EXIT

wait_healthz "http://127.0.0.1:$PORT/healthz" "$exporter_pid" exporter.log
note "exporter up on port $PORT"
touch "$R/ready"

# RC traffic over rxe0 (client and server on this host) until told to stop.
runs=0
failed=0
while [[ ! -e $R/stop ]] && ((SECONDS < MAX_SECONDS)); do
	timeout --kill-after=5 60 ibv_rc_pingpong -d "$RXE" -i 1 -g "$gid_index" -n 300 \
		-p "$PINGPONG_PORT" >"$R/pingpong.server.log" 2>&1 &
	server=$!
	deadline=$((SECONDS + 20))
	until t 5 ss -Hltn "sport = :$PINGPONG_PORT" | grep -q .; do
		kill -0 "$server" 2>/dev/null || break
		((SECONDS < deadline)) || break
		sleep 0.1
	done
	rc=0
	t 60 ibv_rc_pingpong -d "$RXE" -i 1 -g "$gid_index" -n 300 -p "$PINGPONG_PORT" 127.0.0.1 \
		>"$R/pingpong.client.log" 2>&1 || rc=$?
	wait "$server" || rc=$?
	runs=$((runs + 1))
	((rc == 0)) || failed=$((failed + 1))
done
note "traffic: $runs pingpong runs, $failed failed"
[[ -e $R/stop ]] || die "the host did not create stop within ${MAX_SECONDS}s"
((runs > 0 && failed == 0)) || die "traffic failed (see pingpong.*.log)"
kill "$exporter_pid"
wait "$exporter_pid" || die "exporter exited $? on SIGTERM (see exporter.log)"
trap - EXIT
note "done"
