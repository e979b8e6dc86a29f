#!/bin/bash
# Guest side of tests/vm/test_probe_security.py: one exporter on rxe0 (a
# responder, a write and a UD class) and probe_attacker.py, a hostile pyverbs
# peer, against it: RDMA writes into another session's buffer and into a
# prober's, a poisoned UD admission, a UD flood with rotating traffic class
# and path.
#
# Usage (inside the VM started by run-in-vm):
#   probe-security.sh EXPORTER [RXE_UP]
# Everything goes to $RESULTS; the host-side test decides pass/fail. Exits
# non-zero only when a step could not be carried out.
set -euo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
EXPORTER=${1:?usage: probe-security.sh EXPORTER [RXE_UP]}
RXE_UP=${2:-$HERE/rxe-up}
RXE=rxe0
FLOOD_SECS=${PROBE_FLOOD_SECS:-5}

: "${RESULTS:?RESULTS must name the results directory}"
R=$RESULTS

PROG=probe-security
# shellcheck source=guest-lib.sh
source "$HERE/guest-lib.sh"

scrape() { t 15 curl -sS -o "$R/$2" "http://127.0.0.1:$1/metrics" 2>>"$R/curl.err" || true; }
attack() {
	local out=$1
	shift
	t 120 /usr/bin/python3 "$HERE/probe_attacker.py" "$RXE" "$gid_index" 127.0.0.1 10911 "$RXE" \
		"$@" >"$R/$out.json" 2>"$R/$out.err" || note "attacker $* failed (see $out.err)"
}

: >"$R/steps.log"
gid_index=$(t 120 "$RXE_UP" --print-gid-index 2>"$R/rxe-up.log") || die "rxe-up failed"

# The exporter: a responder, and a prober whose one target is the attacker's
# fake responder (write class only). No secret: a peer holding it could do
# all of the below as well.
cat >"$R/a.yml" <<EOF
collection:
  max_age: 0s
probe:
  enabled: true
  device: $RXE
  listen_address: 127.0.0.1:10911
  backoff_initial: 200ms
  backoff_max: 1s
  connect_timeout: 2s
  classes:
    - {name: write, op: write, size: 64, interval: 100ms, timeout: 1s}
    - {name: ud, op: ud, size: 64, interval: 100ms, timeout: 1s}
  targets:
    - {address: "127.0.0.1:10961", classes: [write]}
EOF
"$EXPORTER" --config.file "$R/a.yml" --web.listen-address 127.0.0.1:10910 >"$R/a.log" 2>&1 &
a_pid=$!
trap 'kill -KILL "$a_pid" 2>/dev/null || true' EXIT
wait_listen 10910 30 || die "exporter did not start (see a.log)"
wait_listen 10911 30 || die "responder did not listen (see a.log)"
note "exporter up: $a_pid"
scrape 10910 start.prom

attack rc-cross rc-cross
note "rc-cross: $(cat "$R/rc-cross.json" 2>/dev/null)"
attack fake-responder fake-responder 10961 60
note "fake-responder: $(cat "$R/fake-responder.json" 2>/dev/null)"
attack ud-poison ud-poison 50
note "ud-poison: $(cat "$R/ud-poison.json" 2>/dev/null)"
scrape 10910 before-flood.prom
cpu_before=$(awk '{print $14 + $15}' "/proc/$a_pid/stat")
attack ud-flood ud-flood "$FLOOD_SECS"
cpu_after=$(awk '{print $14 + $15}' "/proc/$a_pid/stat")
echo "$cpu_before $cpu_after $(getconf CLK_TCK)" >"$R/flood-cpu.txt"
note "ud-flood: $(cat "$R/ud-flood.json" 2>/dev/null)"
scrape 10910 after-flood.prom
# The flood's admissions end with its connections: until the port holds no
# UD peer (a state, waited for; the test reads it from end.prom).
end_deadline=$(($(date +%s) + 60))
while :; do
	scrape 10910 end.prom
	grep -q '^rdma_probe_ud_peers{.*device="rxe0".*} 0$' "$R/end.prom" && break
	[ "$(date +%s)" -ge "$end_deadline" ] && break
	sleep 0.5
done

stop_recording a "$a_pid"
trap - EXIT
note "stopped: exit $(<"$R/a.rc")"
