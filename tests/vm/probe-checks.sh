#!/bin/bash
# Guest side of tests/vm/test_probe.py: two rdma_exporter instances probe each
# other over the Soft-RoCE device rxe0 with every operation; perftest's
# latency tools run at the same size in the same VM; the peer is killed and
# restarted mid-run; a garbage client talks to a probe port.
#
# Usage (inside the VM started by run-in-vm):
#   probe-checks.sh EXPORTER ASAN_EXPORTER [RXE_UP]
# ASAN_EXPORTER is a build with AddressSanitizer: it runs a phase of rapid
# session churn (thousands of set-ups and tear-downs of verbs resources) and
# must exit without a leak report.
# Everything goes to $RESULTS; the host-side test decides pass/fail. Exits
# non-zero only when a step could not be carried out.
set -euo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
EXPORTER=${1:?usage: probe-checks.sh EXPORTER ASAN_EXPORTER [RXE_UP]}
ASAN_EXPORTER=${2:?usage: probe-checks.sh EXPORTER ASAN_EXPORTER [RXE_UP]}
RXE_UP=${3:-$HERE/rxe-up}
RXE=rxe0
SIZE=${PROBE_SIZE:-64}
ITERS=${PERFTEST_ITERS:-2000}
# Each phase below lasts until its event has happened (counts of probes, a
# timeout, a refusal), however long a loaded machine takes; PHASE_LIMIT_SECS
# only ends a phase whose event never comes, and the host-side test then
# fails on what was recorded. The counts each phase waits for go to
# $R/counts, where test_probe.py reads the bounds it asserts.
STEADY_PROBES=${PROBE_STEADY_PROBES:-50}
PHASE_PROBES=${PROBE_PHASE_PROBES:-10}
PHASE_LIMIT_SECS=${PROBE_PHASE_LIMIT_SECS:-300}
# Session failures and re-set-ups of C, and oversized set-ups D refuses,
# before the churn ends (test_probe.py asserts at least as many).
CHURN_CYCLES=${PROBE_CHURN_CYCLES:-600}
CHURN_REFUSALS=${PROBE_CHURN_REFUSALS:-250}
CHURN_LIMIT_SECS=${PROBE_CHURN_LIMIT_SECS:-600}
# Spin on the CQ as long as perftest does (it never sleeps), so that the
# comparison measures the same thing; the default (100us) is in docs/probe.md.
BUSY_POLL=${PROBE_BUSY_POLL:-20ms}

: "${RESULTS:?RESULTS must name the results directory}"
R=$RESULTS

PROG=probe-checks
# shellcheck source=guest-lib.sh
source "$HERE/guest-lib.sh"

scrape() { t 15 curl -sS -o "$R/$2" "http://127.0.0.1:$1/metrics" 2>>"$R/curl.err" || true; }
# sum_samples FILE PREFIX LABEL...: the sum, as an integer, of the samples in
# FILE whose line starts with PREFIX (a metric name and "{") and holds every
# LABEL (name="value"); 0 for a missing file.
sum_samples() {
	local file=$1 prefix=$2
	shift 2
	if [ -s "$file" ]; then
		awk -v p="$prefix" -v labels="$*" 'BEGIN { n = split(labels, want, " ") }
			index($0, p) == 1 { for (i = 1; i <= n; i++) if (!index($0, want[i])) next; s += $NF }
			END { printf "%d\n", s }' "$file"
	else
		echo 0
	fi
}

# phase NAME CONDITION: runs the function CONDITION (which scrapes what it
# needs) every half second until it succeeds or PHASE_LIMIT_SECS pass.
phase() {
	local name=$1 condition=$2 deadline=$((SECONDS + PHASE_LIMIT_SECS))
	until "$condition"; do
		if ((SECONDS >= deadline)); then
			note "$name: not reached within ${PHASE_LIMIT_SECS}s"
			return 0
		fi
		sleep 0.5
	done
	note "$name"
}

: >"$R/steps.log"
gid_index=$(t 120 "$RXE_UP" --print-gid-index 2>"$R/rxe-up.log") || die "rxe-up failed"
echo "$gid_index" >"$R/gid-index"

# ------------------------------------------------------------ perftest
# Server and client on rxe0, the client reaching the server's port through
# 127.0.0.1, as the exporters below do.
port=18600
# perftest converts cycles with the CPU frequency it measures; under
# emulation that measurement sometimes fails and it prints "inf": run again.
for tool in ib_send_lat ib_write_lat ib_read_lat; do
	for attempt in 1 2 3; do
		t 120 "$tool" -d "$RXE" -x "$gid_index" -s "$SIZE" -n "$ITERS" -p "$port" \
			>"$R/$tool.server.log" 2>&1 &
		server=$!
		wait_listen "$port" 30 || die "$tool server did not listen"
		t 120 "$tool" -d "$RXE" -x "$gid_index" -s "$SIZE" -n "$ITERS" -p "$port" 127.0.0.1 \
			>"$R/$tool.log" 2>&1 || die "$tool client failed (see $tool.log)"
		wait "$server" || true
		port=$((port + 1))
		grep -A1 t_typical "$R/$tool.log" | tail -1 | grep -q -E 'inf|nan' || break
		note "$tool printed no numbers (attempt $attempt)"
	done
	note "$tool done"
done

# ------------------------------------------------------------ two exporters
# A probes B and B probes A, every op at $SIZE bytes, ten probes a second;
# both ends of every session prove the shared secret.
SECRET_FILE=$R/probe.secret
(umask 077 && printf 'vm-probe-shared-secret-0123456789\n' >"$SECRET_FILE")
# A keeps a rotated-out secret for an hour, B for 2 s (the rotation phase
# below).
write_config() {
	local peer_port=$1 probe_port=$2 grace=$3
	cat <<EOF
collection:
  max_age: 0s
probe:
  enabled: true
  device: $RXE
  listen_address: 127.0.0.1:$probe_port
  secret_file: $SECRET_FILE
  secret_grace: $grace
  backoff_initial: 200ms
  backoff_max: 1s
  connect_timeout: 2s
  classes:
    - {name: send, op: send, size: $SIZE, interval: 100ms, timeout: 1s, busy_poll: $BUSY_POLL}
    - {name: write, op: write, size: $SIZE, interval: 100ms, timeout: 1s, busy_poll: $BUSY_POLL}
    - {name: read, op: read, size: $SIZE, interval: 100ms, timeout: 1s, busy_poll: $BUSY_POLL}
  targets:
    - address: 127.0.0.1:$peer_port
      labels: {peer: peer}
EOF
}
write_config 10921 10911 1h >"$R/a.yml"
write_config 10911 10921 2s >"$R/b.yml"

start_b() {
	"$EXPORTER" --config.file "$R/b.yml" --web.listen-address 127.0.0.1:10920 \
		>>"$R/b.log" 2>&1 &
	b_pid=$!
	echo "$b_pid" >>"$R/b.pids"
}
"$EXPORTER" --config.file "$R/a.yml" --web.listen-address 127.0.0.1:10910 >"$R/a.log" 2>&1 &
a_pid=$!
start_b
trap 'kill -KILL "$a_pid" "$b_pid" 2>/dev/null || true' EXIT
wait_listen 10910 30 || die "exporter A did not start (see a.log)"
wait_listen 10920 30 || die "exporter B did not start (see b.log)"
note "exporters up: A $a_pid, B $b_pid"

# A's probes of B (and B's of A) as one FILE holds them: OP's NAME, summed.
of_b() { sum_samples "$R/$1" "$2{" 'target="127.0.0.1:10921"' "op=\"$3\""; }
of_a() { sum_samples "$R/$1" "$2{" 'target="127.0.0.1:10911"' "op=\"$3\""; }
printf '%s %s\n' steady_probes "$STEADY_PROBES" phase_probes "$PHASE_PROBES" \
	churn_cycles "$CHURN_CYCLES" churn_refusals "$CHURN_REFUSALS" >"$R/counts"

# Steady: every op of both exporters has made STEADY_PROBES round trips.
steady() {
	scrape 10910 a-steady.prom
	scrape 10920 b-steady.prom
	local op
	for op in send write read; do
		[ "$(of_b a-steady.prom rdma_probe_latency_seconds_count "$op")" -ge "$STEADY_PROBES" ] &&
			[ "$(of_a b-steady.prom rdma_probe_latency_seconds_count "$op")" -ge "$STEADY_PROBES" ] ||
			return 1
	done
}
phase "steady state recorded" steady

# ------------------------------------------------------------ peer frozen
# A stopped process cannot echo sends, but the device still serves one-sided
# writes and reads to its memory: until A's sends time out and are down, and
# its writes and reads made PHASE_PROBES more round trips.
frozen() {
	scrape 10910 a-peer-frozen.prom
	[ "$(of_b a-peer-frozen.prom rdma_probe_timeouts_total send)" -ge 1 ] &&
		[ "$(of_b a-peer-frozen.prom rdma_probe_up send)" -eq 0 ] || return 1
	local op
	for op in write read; do
		[ "$(of_b a-peer-frozen.prom rdma_probe_latency_seconds_count "$op")" -ge \
			$(($(of_b a-steady.prom rdma_probe_latency_seconds_count "$op") + PHASE_PROBES)) ] ||
			return 1
	done
}
kill -STOP "$b_pid"
note "B stopped"
phase "B frozen recorded" frozen
kill -CONT "$b_pid"
note "B continued"
# Until every op of A is up again and made PHASE_PROBES more round trips.
probing_again() {
	local file=$1 before=$2 op
	scrape 10910 "$file"
	for op in send write read; do
		[ "$(of_b "$file" rdma_probe_up "$op")" -eq 1 ] &&
			[ "$(of_b "$file" rdma_probe_latency_seconds_count "$op")" -ge \
				$(($(of_b "$before" rdma_probe_latency_seconds_count "$op") + PHASE_PROBES)) ] ||
			return 1
	done
}
thawed() { probing_again a-thawed.prom a-peer-frozen.prom; }
phase "B thawed recorded" thawed

# ------------------------------------------------------------ peer restart
# Until every op of A is down with a refused connection counted.
down() {
	scrape 10910 a-peer-down.prom
	local op
	for op in send write read; do
		[ "$(of_b a-peer-down.prom rdma_probe_up "$op")" -eq 0 ] &&
			[ "$(sum_samples "$R/a-peer-down.prom" 'rdma_probe_errors_total{' \
				'target="127.0.0.1:10921"' "op=\"$op\"" 'reason="refused"')" -ge 1 ] || return 1
	done
}
kill -KILL "$b_pid"
wait "$b_pid" 2>/dev/null || true
note "B killed"
phase "B down recorded" down
start_b
wait_listen 10920 30 || die "exporter B did not restart"
note "B restarted ($b_pid)"
# Until A probes B again (PHASE_PROBES more round trips per op) and B's
# probes of A are up.
recovered() {
	probing_again a-recovered.prom a-peer-down.prom || return 1
	scrape 10920 b-recovered.prom
	local op
	for op in send write read; do
		[ "$(of_a b-recovered.prom rdma_probe_up "$op")" -eq 1 ] || return 1
	done
}
phase "recovery recorded" recovered

# ------------------------------------------------------------ garbage client
# In a subshell: the responder may close before the request is all written,
# and the SIGPIPE must not end this script.
exec 3<>/dev/tcp/127.0.0.1/10911
(printf 'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n' >&3) 2>/dev/null || true
t 10 cat <&3 >"$R/garbage-answer.bin" || true
exec 3<&-
# Until A counted the rejection.
rejected() {
	scrape 10910 a-after-garbage.prom
	[ "$(sum_samples "$R/a-after-garbage.prom" 'rdma_probe_responder_rejected_total{' \
		'reason="protocol"')" -ge 1 ]
}
phase "garbage client done" rejected

# ------------------------------------------------------------ secret rotated
# A new secret in the file both read, then SIGHUP to both: each accepts both
# secrets and signs with both; when B's grace period ends (2 s), B closes
# the sessions of the old secret at both of its ends: as responder, A's
# three sessions to it, and as prober, its three sessions to A (which still
# accepts the old secret for an hour). Both sides set them up again with
# the new one. Driven by the counts, a deadline only for a run that stalls.
scrape 10910 a-before-rotation.prom
scrape 10920 b-before-rotation.prom
(umask 077 && printf 'vm-probe-rotated-secret-9876543210\n' >"$SECRET_FILE.new" &&
	mv "$SECRET_FILE.new" "$SECRET_FILE")
kill -HUP "$a_pid" "$b_pid"
note "secret rotated, both reloaded"
rotation_deadline=$(($(date +%s) + 120))
while :; do
	scrape 10910 a-rotated.prom
	scrape 10920 b-rotated.prom
	retired_in=$(sum_samples "$R/b-rotated.prom" 'rdma_probe_responder_rejected_total{' \
		'reason="retired_secret"')
	retired_out=$(sum_samples "$R/b-rotated.prom" 'rdma_probe_errors_total{' \
		'reason="retired_secret"')
	up_a=$(sum_samples "$R/a-rotated.prom" 'rdma_probe_up{' 'target="127.0.0.1:10921"')
	up_b=$(sum_samples "$R/b-rotated.prom" 'rdma_probe_up{' 'target="127.0.0.1:10911"')
	if [ "$retired_in" -ge 3 ] && [ "$retired_out" -ge 3 ] && [ "$up_a" -eq 3 ] &&
		[ "$up_b" -eq 3 ]; then
		break
	fi
	if [ "$(date +%s)" -ge "$rotation_deadline" ]; then
		note "rotation: $retired_in retired in, $retired_out out, up $up_a/$up_b after 120s"
		break
	fi
	sleep 0.5
done
# Probes flow again on the sessions of the new secret (every op up, above).
scrape 10910 a-after-rotation.prom
scrape 10920 b-after-rotation.prom
note "rotation phase done"

# ------------------------------------------------------------ churn under ASan
# C (AddressSanitizer) and D probe each other with a 1 ms timeout that sends
# under emulation often miss, so sessions are torn down and set up again all
# the time on both sides; C also probes D with four classes of sizes D does
# not offer, so C makes and frees a queue pair for every refused set-up.
churn_config() {
	local listen=$1 peer=$2 extra=$3
	cat <<EOF
collection:
  max_age: 0s
probe:
  enabled: true
  device: $RXE
  listen_address: 127.0.0.1:$listen
  secret_file: $SECRET_FILE
  backoff_initial: 1ms
  backoff_max: 5ms
  setups_per_minute_per_source: 1000000
  max_sessions_per_source: 1000
  max_message_size: 8192
  classes:
    - {name: flaky, op: send, size: 64, interval: 1ms, timeout: 1ms, busy_poll: 0s}
$extra
  targets:
    - address: 127.0.0.1:$peer
EOF
}
oversized="    - {name: big-write, op: write, size: 8192, interval: 1ms}
    - {name: bigger-write, op: write, size: 16384, interval: 1ms}
    - {name: big-read, op: read, size: 8192, interval: 1ms}
    - {name: bigger-read, op: read, size: 16384, interval: 1ms}"
churn_config 10931 10941 "$oversized" | sed 's/max_message_size: 8192/max_message_size: 16384/' \
	>"$R/c.yml"
churn_config 10941 10931 "" | sed 's/max_message_size: 8192/max_message_size: 4096/' >"$R/d.yml"
"$EXPORTER" --config.file "$R/d.yml" --web.listen-address 127.0.0.1:10940 >"$R/d.log" 2>&1 &
d_pid=$!
ASAN_OPTIONS=detect_leaks=1:exitcode=23 "$ASAN_EXPORTER" --config.file "$R/c.yml" \
	--web.listen-address 127.0.0.1:10930 >"$R/c.log" 2>&1 &
c_pid=$!
wait_listen 10930 60 || die "exporter C (ASan) did not start (see c.log)"
# Driven by counts, not by time: churn until C has failed and set up its
# sessions again CHURN_CYCLES times and D has refused CHURN_REFUSALS
# oversized set-ups (a slow machine takes longer, and gets as many cycles);
# CHURN_LIMIT_SECS only ends a run in which churn has stopped.
churn_deadline=$(($(date +%s) + CHURN_LIMIT_SECS))
churn_started=$(date +%s)
while :; do
	scrape 10930 c-churn.prom
	scrape 10940 d-churn.prom
	failures=$(sum_samples "$R/c-churn.prom" 'rdma_probe_errors_total{' 'target="127.0.0.1:10941"')
	failures=$((failures + $(sum_samples "$R/c-churn.prom" 'rdma_probe_timeouts_total{' \
		'target="127.0.0.1:10941"')))
	refused=$(sum_samples "$R/d-churn.prom" 'rdma_probe_responder_rejected_total{' \
		'reason="unsupported"')
	if [ "$failures" -ge "$CHURN_CYCLES" ] && [ "$refused" -ge "$CHURN_REFUSALS" ]; then
		break
	fi
	if [ "$(date +%s)" -ge "$churn_deadline" ]; then
		note "churn stalled: $failures failures, $refused refusals after ${CHURN_LIMIT_SECS}s"
		break
	fi
	sleep 2
done
note "churn: $failures failures and re-set-ups, $refused refusals in $(($(date +%s) - churn_started))s"
stop_recording "c d" "$c_pid" "$d_pid"
note "churn done: C exit $(<"$R/c.rc"), D exit $(<"$R/d.rc")"

# ------------------------------------------------------------ dma-buf memory
# rxe cannot register dma-buf memory: the exporter must say so at start and
# count the failed set-ups, and keep running.
cat >"$R/e.yml" <<EOF
probe:
  enabled: true
  device: $RXE
  listen_address: 127.0.0.1:10951
  loopback: true
  memory: udmabuf
  backoff_initial: 100ms
  backoff_max: 200ms
EOF
t 5 modprobe udmabuf 2>>"$R/steps.log" || true
ls -l /dev/udmabuf >"$R/udmabuf-node.txt" 2>&1 || true
"$EXPORTER" --config.file "$R/e.yml" --web.listen-address 127.0.0.1:10950 >"$R/e.log" 2>&1 &
e_pid=$!
wait_listen 10950 30 || die "exporter E did not start (see e.log)"
# Driven by the event, not by time: until a session failed its set-up (or,
# on a kernel that registers dma-bufs, until the loopback pair is up).
udmabuf_deadline=$(($(date +%s) + 120))
while :; do
	scrape 10950 e-udmabuf.prom
	[ "$(sum_samples "$R/e-udmabuf.prom" 'rdma_probe_errors_total{' 'reason="setup"')" -ge 1 ] && break
	[ "$(sum_samples "$R/e-udmabuf.prom" 'rdma_probe_up{' 'target="loopback"')" -ge 1 ] && break
	if [ "$(date +%s)" -ge "$udmabuf_deadline" ]; then
		note "udmabuf: no failed set-up and no probe after 120s"
		break
	fi
	sleep 0.5
done
stop_recording e "$e_pid"
note "udmabuf phase done: E exit $(<"$R/e.rc")"

# ------------------------------------------------------------ clean stop
stop_recording "a b" "$a_pid" "$b_pid"
trap - EXIT
note "stopped: A exit $(<"$R/a.rc"), B exit $(<"$R/b.rc")"
