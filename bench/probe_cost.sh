#!/bin/bash
# The probe's cost and its latency next to perftest, on Soft-RoCE in the
# test-bed VM. Run from the top of the repository:
#
#   tests/vm/run-in-vm --timeout 900 --results /var/tmp/probe-bench \
#       bench/probe_cost.sh "$PWD/build/rdma_exporter" "$PWD/tests/vm/rxe-up"
#   cat /var/tmp/probe-bench/probe-cost.txt
#
# (the build tree must not lie below /tmp: the VM mounts a fresh /tmp).
# For each operation and rate (probes per second), an exporter probes itself
# through rxe0 (the loopback target) for SECS seconds; the CPU time it used
# comes from /proc/PID/stat, the latency from its histogram. perftest's
# latency tools give the reference at the same size.
set -euo pipefail
EXPORTER=${1:?usage: probe_cost.sh EXPORTER RXE_UP}
RXE_UP=${2:?usage: probe_cost.sh EXPORTER RXE_UP}
SECS=${BENCH_SECS:-20}
SIZE=${BENCH_SIZE:-64}
: "${RESULTS:?run this through tests/vm/run-in-vm}"
R=$RESULTS
. "$(dirname -- "${BASH_SOURCE[0]}")/vm-lib.sh"

gid=$(t 120 "$RXE_UP" --print-gid-index 2>"$R/rxe-up.log")
out=$R/probe-cost.txt
{
	echo "# $(uname -r), $(nproc) vCPUs (QEMU TCG), rxe0, $SIZE B messages, ${SECS}s per row"
	printf '%-6s %6s %9s %10s %10s %12s %12s\n' op rate busy_poll probes cpu_ms cpu_percent median_us
} >"$out"

port=18700
for tool in ib_send_lat ib_write_lat ib_read_lat; do
	t 120 "$tool" -d rxe0 -x "$gid" -s "$SIZE" -n 2000 -p "$port" >/dev/null 2>&1 &
	server=$!
	wait_listen "$port"
	t 120 "$tool" -d rxe0 -x "$gid" -s "$SIZE" -n 2000 -p "$port" 127.0.0.1 >"$R/$tool.log" 2>&1
	wait "$server" || true
	port=$((port + 1))
	echo "# $tool: $(grep -A1 t_typical "$R/$tool.log" | tail -1)" >>"$out"
done

run() {
	local op=$1 rate=$2 busy=${3:-100us} interval_us=$((1000000 / $2)) pid before after
	cat >"$R/bench.yml" <<EOF
probe:
  enabled: true
  device: rxe0
  listen_address: 127.0.0.1:10911
  loopback: true
  classes:
    - {name: bench, op: $op, size: $SIZE, interval: $((interval_us / 1000))ms, busy_poll: $busy}
EOF
	"$EXPORTER" --config.file "$R/bench.yml" --web.listen-address 127.0.0.1:10910 \
		>"$R/bench-$op-$rate.log" 2>&1 &
	pid=$!
	wait_listen 10910
	sleep 3
	t 10 curl -s http://127.0.0.1:10910/metrics >"$R/bench-$op-$rate-before.prom"
	before=$(cpu_ns "$pid")
	sleep "$SECS"
	after=$(cpu_ns "$pid")
	t 10 curl -s http://127.0.0.1:10910/metrics >"$R/bench-$op-$rate.prom"
	kill -TERM "$pid"
	wait "$pid" || true
	/usr/bin/python3 - "$R/bench-$op-$rate-before.prom" "$R/bench-$op-$rate.prom" \
		"$op" "$rate" "$busy" "$((after - before))" "$SECS" >>"$out" <<'PY'
import re, sys
def hist(path, op):
    b = {}
    for line in open(path):
        m = re.match(r'rdma_probe_latency_seconds_bucket\{.*op="%s".*le="([^"]+)"\} (\S+)' % op, line)
        if m:
            b[float("inf") if m[1] == "+Inf" else float(m[1])] = float(m[2])
    return b
before, after, op, rate, busy = sys.argv[1:6]
cpu_ns, secs = int(sys.argv[6]), int(sys.argv[7])
b0, b1 = hist(before, op), hist(after, op)
buckets = sorted((le, b1[le] - b0.get(le, 0)) for le in b1)
total = buckets[-1][1] if buckets else 0
median, lower, below = float("nan"), 0.0, 0.0
for le, n in buckets:
    if total and n >= total / 2:
        median = lower + (le - lower) * (total / 2 - below) / max(n - below, 1e-12)
        break
    lower, below = le, n
cpu_ms = cpu_ns / 1e6
print(f"{op:<6} {rate:>6} {busy:>9} {int(total):>10} {cpu_ms:>10.1f} {cpu_ms / 10 / secs:>12.3f} {median * 1e6:>12.1f}")
PY
}
for op in write send read; do
	for rate in 10 100 1000; do run "$op" "$rate"; done
done
# Spinning against sleeping at once on the completion channel.
run write 100 0s
run write 100 10ms
# The exporter with the probe idle (no targets): the responder's cost.
cat >"$R/idle.yml" <<EOF
probe: {enabled: true, device: rxe0, listen_address: 127.0.0.1:10911}
EOF
"$EXPORTER" --config.file "$R/idle.yml" --web.listen-address 127.0.0.1:10910 >"$R/idle.log" 2>&1 &
pid=$!
wait_listen 10910
sleep 3
before=$(cpu_ns "$pid")
sleep "$SECS"
after=$(cpu_ns "$pid")
kill -TERM "$pid"
wait "$pid" || true
echo "# idle (responder only): $(((after - before) / 1000000)) ms CPU in ${SECS}s" >>"$out"
cat "$out"
