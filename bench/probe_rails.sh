#!/bin/bash
# An 8-rail host, simulated: eight Soft-RoCE devices, each on its own veth
# pair and subnet (one rail each), in the test-bed VM. Run from the top of
# the repository:
#
#   tests/vm/run-in-vm --timeout 600 --results /var/tmp/probe-rails \
#       bench/probe_rails.sh "$PWD/build/rdma_exporter"
#   cat /var/tmp/probe-rails/probe-rails.txt
#
# (the build tree must not lie below /tmp: the VM mounts a fresh /tmp).
# It measures, for SECS seconds each, the exporter's CPU time with the probe
# off, with the probe on and nothing to probe (the device scan and the
# responder only), and with the probe probing the host itself on all eight
# rails (loopback: each port probes the port of its rail, one write a
# second); then how long `rdma link delete` of one device takes while all
# eight probe, and that the other seven keep probing.
set -euo pipefail
EXPORTER=${1:?usage: probe_rails.sh EXPORTER}
SECS=${BENCH_SECS:-30}
RAILS=${BENCH_RAILS:-8}
: "${RESULTS:?run this through tests/vm/run-in-vm}"
R=$RESULTS
. "$(dirname -- "${BASH_SOURCE[0]}")/vm-lib.sh"
scrape() {
	t 10 curl -sS "http://127.0.0.1:10910/metrics" >"$R/$1"
}

t 60 modprobe -a veth crc32_generic ib_core ib_uverbs rdma_ucm rdma_rxe
for ((i = 0; i < RAILS; i++)); do
	t 10 ip link add "rail$i" type veth peer name "peer$i"
	t 10 ip addr add "10.$((100 + i)).0.1/24" dev "rail$i"
	t 10 ip link set "rail$i" up
	t 10 ip link set "peer$i" up
	t 30 rdma link add "rxe$i" type rxe netdev "rail$i"
done
deadline=$((SECONDS + 60))
until [[ $(rdma link show | grep -c 'state ACTIVE') == "$RAILS" ]]; do
	((SECONDS < deadline)) || {
		rdma link show >&2
		exit 1
	}
	sleep 0.2
done

out=$R/probe-rails.txt
echo "# $(uname -r), $(nproc) vCPUs (QEMU TCG), $RAILS rxe devices, ${SECS}s per row" >"$out"
printf '%-28s %10s %12s\n' configuration cpu_ms cpu_percent >>"$out"

run() {
	local name=$1 config=$2
	printf '%s' "$config" >"$R/$name.yml"
	"$EXPORTER" --config.file "$R/$name.yml" --web.listen-address 127.0.0.1:10910 \
		>"$R/$name.log" 2>&1 &
	pid=$!
	wait_listen 10910
	sleep 5
	local before after
	before=$(cpu_ns "$pid")
	sleep "$SECS"
	after=$(cpu_ns "$pid")
	scrape "$name.prom"
	awk -v n="$name" -v d="$((after - before))" -v s="$SECS" \
		'BEGIN {printf "%-28s %10.1f %12.3f\n", n, d / 1e6, d / 1e7 / s}' >>"$out"
}
stop() {
	kill -TERM "$pid"
	wait "$pid" || true
}

run probe-off $'collection:\n  max_age: 0s\n'
stop
run probe-idle $'probe:\n  enabled: true\n  listen_address: 127.0.0.1:10911\n'
stop
run probe-8-rails $'probe:\n  enabled: true\n  listen_address: 127.0.0.1:10911\n  loopback: true\n'

# Every rail probes itself, never another rail.
pairs=$(grep -c '^rdma_probe_up{' "$R/probe-8-rails.prom" || true)
same=$(grep '^rdma_probe_up{' "$R/probe-8-rails.prom" |
	grep -cE 'device="rxe([0-9]+)",port="1",remote_device="rxe\1",.*\} 1$' || true)
echo "# probe-8-rails: $pairs pairs, $same of them same-rail and up" >>"$out"

# One device deleted while all probe.
start=$(date +%s%N)
t 60 rdma link delete rxe5
echo "# rdma link delete rxe5: $((($(date +%s%N) - start) / 1000000)) ms" >>"$out"
sleep 4
scrape after-delete-1.prom
sleep 5
scrape after-delete-2.prom
kept=0
for ((i = 0; i < RAILS; i++)); do
	((i == 5)) && continue
	a=$(grep "^rdma_probe_sent_total{.*device=\"rxe$i\",port" "$R/after-delete-1.prom" | awk '{print $2}')
	b=$(grep "^rdma_probe_sent_total{.*device=\"rxe$i\",port" "$R/after-delete-2.prom" | awk '{print $2}')
	[[ -n $a && -n $b ]] && awk -v a="$a" -v b="$b" 'BEGIN {exit !(b > a)}' && kept=$((kept + 1))
done
echo "# after the delete: $kept of $((RAILS - 1)) other rails kept probing;" \
	"rxe5: $(grep 'rdma_probe_device_state{device="rxe5",state="gone"}' "$R/after-delete-2.prom")" >>"$out"
stop
cat "$out"
