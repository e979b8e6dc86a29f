#!/bin/bash
# Guest side of tests/vm/test_softroce.py: runs rdma_exporter on a real
# Soft-RoCE device and records, next to each exposition, what the kernel
# itself reports (rdma netlink through iproute2's rdma tool, and sysfs).
#
# Usage (inside the VM started by run-in-vm):
#   exporter-checks.sh EXPORTER NODE_API [RXE_UP]
# EXPORTER is the rdma_exporter binary, NODE_API fake_node_api_server (a
# node's CRI and pod-resources servers); RXE_UP defaults to rxe-up next to
# this script. Everything goes to $RESULTS; the host-side test decides pass/fail.
# The script exits non-zero only when a step could not be carried out
# (rxe-up failed, traffic did not run, the exporter did not start).
set -euo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
EXPORTER=${1:?usage: exporter-checks.sh EXPORTER NODE_API [RXE_UP]}
NODE_API=${2:?usage: exporter-checks.sh EXPORTER NODE_API [RXE_UP]}
RXE_UP=${3:-$HERE/rxe-up}
RXE=rxe0
NETDEV=veth0
PEER=veth1
LISTEN=127.0.0.1:10910
URL=http://$LISTEN/metrics
PINGPONG_PORT=18515
WRITE_BW_PORT=18516
# Hot-change schedule, in milliseconds from the start of the scrape loop.
HOT_MIN_MS=6000
HOT_MAX_MS=40000
HOT_INTERVAL=0.2
HOT_DELETE_AT_MS=1500
HOT_ADD_AT_MS=3000

: "${RESULTS:?RESULTS must name the results directory}"
R=$RESULTS
[[ -d $R && -w $R ]] || {
	echo "exporter-checks: RESULTS=$R is not a writable directory" >&2
	exit 1
}
[[ -x $EXPORTER ]] || {
	echo "exporter-checks: exporter '$EXPORTER' is not executable" >&2
	exit 1
}

PROG=exporter-checks
# shellcheck source=guest-lib.sh
source "$HERE/guest-lib.sh"

# Milliseconds since the epoch (wall clock, comparable with the exporter log).
now_ms() {
	local us=${EPOCHREALTIME/[^0-9]/}
	echo $((us / 1000))
}

# event NAME: appends "NAME <ms>" to events.txt.
# event NAME [MS]: records NAME at MS (default: now) in events.txt; the
# tests read the same numbers the script waits on.
event() { echo "$1 ${2:-$(now_ms)}" >>"$R/events.txt"; }

# record FILE CMD...: CMD's stdout into $R/FILE; a failure is fatal.
record() {
	local file=$1
	shift
	t 20 "$@" >"$R/$file" 2>"$R/$file.err" || die "failed: $* (see $file.err)"
	[[ -s $R/$file.err ]] || rm -f -- "$R/$file.err"
}


# pair NAME PORT CMD...: a verbs server/client pair over rxe0; both must
# exit 0. The client connects to the server through 127.0.0.1.
pair() {
	local name=$1 port=$2 server_pid rc_server=0 rc_client=0
	shift 2
	timeout --kill-after=5 90 "$@" >"$R/$name.server.log" 2>&1 &
	server_pid=$!
	if ! wait_listen "$port" 30; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
		die "$name: server did not listen on port $port"
	fi
	t 90 "$@" 127.0.0.1 >"$R/$name.client.log" 2>&1 || rc_client=$?
	wait "$server_pid" || rc_server=$?
	((rc_server == 0 && rc_client == 0)) ||
		die "$name: server exit $rc_server, client exit $rc_client (see $name.*.log)"
	note "$name pair finished"
}

# Writes "device port name value" for every port hw counter file (one grep
# reads them all: "PATH:VALUE" lines).
dump_sysfs_hw_counters() {
	local out=$1 path value rest dev port line
	local -a files
	files=(/sys/class/infiniband/*/ports/*/hw_counters/*)
	: >"$out"
	[[ -e ${files[0]} ]] || return 0
	t 20 grep -H '' -- "${files[@]}" >"$out.raw" || die "reading sysfs hw_counters failed"
	while IFS= read -r line; do
		path=${line%%:*}
		value=${line#*:}
		rest=${path#/sys/class/infiniband/}
		dev=${rest%%/*}
		rest=${rest#*/ports/}
		port=${rest%%/*}
		printf '%s %s %s %s\n' "$dev" "$port" "${path##*/}" "$value" >>"$out"
	done <"$out.raw"
	rm -f -- "$out.raw"
}

# curl prints 000 itself when it gets no response.
scrape() {
	local code
	code=$(t 15 curl -sS -o "$R/$1" -w '%{http_code}' "$URL" 2>>"$R/curl.err") || true
	echo "${code:-000}"
}

: >"$R/events.txt"
: >"$R/steps.log"
note "kernel $(uname -r), exporter $EXPORTER"

# ---------------------------------------------------------------- 1. device

gid_index=$(t 120 "$RXE_UP" --print-gid-index 2>"$R/rxe-up.log") ||
	die "rxe-up failed (see rxe-up.log)"
echo "$gid_index" >"$R/gid-index"
record rdma-dev.json rdma -j dev
record rdma-link.json rdma -j link
# sysfs identity and port files as "PATH:VALUE" lines (a file holding only
# a newline gives "PATH:", an empty one nothing).
info_files=()
for f in /sys/class/infiniband/*/{fw_ver,board_id,hca_type,node_desc,node_guid,sys_image_guid,node_type} \
	/sys/class/infiniband/*/ports/*/{rate,link_layer,state,phys_state}; do
	if [[ -f $f ]]; then
		info_files+=("$f")
	fi
done
((${#info_files[@]} > 0)) || die "no files under /sys/class/infiniband"
t 20 grep -H '' -- "${info_files[@]}" >"$R/sysfs-info.txt" 2>"$R/sysfs-info.err" || true
t 10 "$EXPORTER" --version >"$R/exporter-version.txt" 2>&1 || true

# ---------------------------------------------------------------- 2. traffic

pair pingpong1 "$PINGPONG_PORT" \
	ibv_rc_pingpong -d "$RXE" -i 1 -g "$gid_index" -n 1000 -p "$PINGPONG_PORT"

# ---------------------------------------------------------------- 3. --once

record stat-before.json rdma -j statistic show
dump_sysfs_hw_counters "$R/sysfs-hw-counters.txt"
once_rc=0
t 30 "$EXPORTER" --once >"$R/once.prom" 2>"$R/once.stderr" || once_rc=$?
echo "$once_rc" >"$R/once.rc"
# The same quiet moment through the sysfs path: hw_counters.source pins it,
# so every port hw counter comes from ports/<n>/hw_counters/.
printf 'hw_counters:\n  source: sysfs\n' >"$R/once-sysfs.yml"
once_sysfs_rc=0
t 30 "$EXPORTER" --once --config.file "$R/once-sysfs.yml" >"$R/once-sysfs.prom" \
	2>"$R/once-sysfs.stderr" || once_sysfs_rc=$?
echo "$once_sysfs_rc" >"$R/once-sysfs.rc"
record stat-after.json rdma -j statistic show
note "--once exited $once_rc, through sysfs $once_sysfs_rc"

# ---------------------------------------------------------------- 4. daemon

cat >"$R/exporter.yml" <<EOF
collection:
  max_age: 0s
EOF
"$EXPORTER" --config.file "$R/exporter.yml" --web.listen-address "$LISTEN" \
	2>"$R/exporter.log" >"$R/exporter.stdout" &
exporter_pid=$!
echo "$exporter_pid" >"$R/exporter.pid"
# Stops the daemon if the script dies early, so the VM can power off.
trap 'kill -KILL "$exporter_pid" 2>/dev/null || true' EXIT

wait_healthz "http://$LISTEN/healthz" "$exporter_pid" exporter.log
note "exporter daemon up (pid $exporter_pid)"

scrape scrape1.prom >"$R/scrape1.code"
pair write_bw "$WRITE_BW_PORT" \
	ib_write_bw -d "$RXE" -i 1 -x "$gid_index" -n 200 -s 4096 -p "$WRITE_BW_PORT" -F
scrape scrape2.prom >"$R/scrape2.code"
record stat2.json rdma -j statistic show

# ---------------------------------------------------------------- 5. resources

timeout --kill-after=5 60 ibv_rc_pingpong -d "$RXE" -i 1 -g "$gid_index" -n 10 \
	-p "$PINGPONG_PORT" >"$R/res-server.log" 2>&1 &
res_server=$!
deadline=$((SECONDS + 30))
qps=""
until [[ $qps == *'"comm":"ibv_rc_pingpong"'* ]]; do
	kill -0 "$res_server" 2>/dev/null || die "resource-holding server exited early (see res-server.log)"
	((SECONDS < deadline)) || die "no ibv_rc_pingpong QP in rdma resource show qp within 30s"
	sleep 0.1
	qps=$(t 10 rdma -j resource show qp 2>/dev/null) || qps=""
done
record res.json rdma -j resource show
record res-qp.json rdma -j resource show qp
scrape res.prom >"$R/res.code"
record res-after.json rdma -j resource show
kill "$res_server" 2>/dev/null || true
wait "$res_server" 2>/dev/null || true
note "resources recorded"

# ---------------------------------------------------------------- 6. hot changes

# The scrape loop runs for at least HOT_MIN_MS and until the main script
# creates hot/stop (at most HOT_MAX_MS). hot/index.txt gets one line per
# scrape: "N START_MS END_MS HTTP_CODE EXPORTER_ALIVE".
mkdir -p -- "$R/hot"
hot_loop() {
	local i=0 start end code alive
	local min_ms=$(($(now_ms) + HOT_MIN_MS)) max_ms=$(($(now_ms) + HOT_MAX_MS))
	while :; do
		end=$(now_ms)
		((end < max_ms)) || break
		[[ $end -ge $min_ms && -e $R/hot/stop ]] && break
		start=$(now_ms)
		code=$(t 10 curl -sS -o "$R/hot/$i.prom" -w '%{http_code}' "$URL" 2>>"$R/hot/curl.err") ||
			true
		code=${code:-000}
		end=$(now_ms)
		alive=alive
		kill -0 "$exporter_pid" 2>/dev/null || alive=dead
		echo "$i $start $end $code $alive" >>"$R/hot/index.txt"
		i=$((i + 1))
		sleep "$HOT_INTERVAL"
	done
}

# wait_scrape_since MS LIMIT_S: waits until a loop scrape that started at or
# after MS has finished (at most LIMIT_S seconds).
wait_scrape_since() {
	local since=$1 deadline=$((SECONDS + $2)) start rest
	while ((SECONDS < deadline)); do
		while read -r _ start rest; do
			((start >= since)) && return 0
		done <"$R/hot/index.txt"
		sleep 0.1
	done
	note "no scrape started after $since finished within $2s"
}

: >"$R/hot/index.txt"
hot_start_ms=$(now_ms)
event hot_start "$hot_start_ms"
hot_loop &
hot_pid=$!

# sleep_until MS: sleeps until MS milliseconds after the loop started.
sleep_until() {
	local remaining=$((hot_start_ms + $1 - $(now_ms)))
	if ((remaining > 0)); then
		sleep "$((remaining / 1000)).$(printf '%03d' $((remaining % 1000)))"
	fi
}

# link_change LOG CMD...: runs an rdma link command; if it hangs, records
# the kernel stacks of blocked tasks (dmesg-hang.txt) before giving up.
link_change() {
	local log=$1 pid rc=0 deadline=$((SECONDS + 20)) child fd target p
	shift
	timeout --kill-after=5 30 "$@" >"$R/$log" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
		sleep 0.05
	done
	if kill -0 "$pid" 2>/dev/null; then
		note "hung for 20s: $*; recording blocked tasks"
		for child in $(pgrep -P "$pid" || true); do
			{
				echo "== /proc/$child/stack ($*)"
				cat "/proc/$child/stack" 2>&1 || true
			} >>"$R/dmesg-hang.txt"
		done
		{
			echo "== processes holding /dev/infiniband files"
			for fd in /proc/[0-9]*/fd/*; do
				target=$(readlink "$fd" 2>/dev/null) || continue
				[[ $target == /dev/infiniband/* ]] || continue
				p=${fd#/proc/}
				p=${p%%/*}
				echo "$p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) -> $target"
			done
			echo "== ps"
			ps -eo pid,ppid,stat,etime,args 2>&1 || true
		} >>"$R/dmesg-hang.txt"
		echo w >/proc/sysrq-trigger 2>/dev/null || true
		t 10 dmesg >>"$R/dmesg-hang.txt" 2>&1 || true
	fi
	wait "$pid" || rc=$?
	((rc == 0)) || die "failed (exit $rc): $* (see $log)"
}

# The device goes away once a scrape has seen it in place.
sleep_until "$HOT_DELETE_AT_MS"
wait_scrape_since "$hot_start_ms" 15
event delete_begin
link_change link-delete.log rdma link delete "$RXE"
delete_end_ms=$(now_ms)
event delete_end "$delete_end_ms"
# The device stays away until at least one scrape saw the host without it.
sleep_until "$HOT_ADD_AT_MS"
wait_scrape_since "$delete_end_ms" 15
event add_begin
link_change link-add.log rdma link add "$RXE" type rxe netdev "$NETDEV"
event add_end
t 60 "$RXE_UP" 2>>"$R/link-add.log" || die "$RXE did not come back ACTIVE (see link-add.log)"
active_ms=$(now_ms)
event active "$active_ms"
wait_scrape_since "$active_ms" 15
touch "$R/hot/stop"
wait "$hot_pid" || die "the scrape loop failed"
event hot_end
note "hot changes done ($(wc -l <"$R/hot/index.txt") scrapes)"

if kill -0 "$exporter_pid" 2>/dev/null; then
	echo alive >"$R/exporter-alive"
else
	echo dead >"$R/exporter-alive"
fi
scrape after-readd.prom >"$R/after-readd.code"
record stat-after-readd.json rdma -j statistic show

kill -TERM "$exporter_pid" 2>/dev/null || true
exporter_rc=0
deadline=$((SECONDS + 30))
while kill -0 "$exporter_pid" 2>/dev/null && ((SECONDS < deadline)); do
	sleep 0.1
done
if kill -0 "$exporter_pid" 2>/dev/null; then
	kill -KILL "$exporter_pid" 2>/dev/null || true
	echo "did not stop within 30s of SIGTERM" >>"$R/steps.log"
fi
wait "$exporter_pid" || exporter_rc=$?
trap - EXIT
echo "$exporter_rc" >"$R/exporter.rc"
note "exporter exited $exporter_rc after SIGTERM"

# ---------------------------------------------------------------- 8. qp counters

# What rxe supports of per-QP counters: the exporter sets and restores the
# counter mode, reads the QP inventory, and meets ENOMEM on manual binds.
t 10 rdma statistic qp mode >"$R/qpmode-start.txt" 2>&1 || true
timeout --kill-after=5 60 ibv_rc_pingpong -d "$RXE" -i 1 -g "$gid_index" -n 10 \
	-p "$PINGPONG_PORT" >"$R/qp-server.log" 2>&1 &
qp_server=$!
deadline=$((SECONDS + 30))
qps=""
until [[ $qps == *'"comm":"ibv_rc_pingpong"'* ]]; do
	kill -0 "$qp_server" 2>/dev/null || die "QP-holding server exited early (see qp-server.log)"
	((SECONDS < deadline)) || die "no ibv_rc_pingpong QP within 30s"
	sleep 0.1
	qps=$(t 10 rdma -j resource show qp 2>/dev/null) || qps=""
done
server_pid=$(pgrep -x ibv_rc_pingpong | head -n 1)
echo "$server_pid" >"$R/qp-server.pid"

once_with() { # NAME YAML: runs --once with that configuration
	printf '%s\n' "$2" >"$R/$1.yml"
	local rc=0
	t 30 "$EXPORTER" --once --config.file "$R/$1.yml" >"$R/$1.prom" 2>"$R/$1.stderr" || rc=$?
	echo "$rc" >"$R/$1.rc"
	t 10 rdma statistic qp mode >"$R/qpmode-after-$1.txt" 2>&1 || true
}
record qp-res-qp.json rdma -j resource show qp
once_with qp-restore "qp_counters:
  inventory_by_comm: true
  ports: [{device: $RXE, port: 1, mode: auto, auto_by: [qp_type, pid], restore_on_exit: true}]"
once_with qp-auto "qp_counters:
  ports: [{device: $RXE, port: 1, mode: auto, auto_by: [qp_type, pid]}]"
once_with qp-manual "qp_counters:
  ports: [{device: $RXE, port: 1, mode: manual, take_over: true}]
  manual_rules: [{name: pingpong, pid: $server_pid}]"

# The QP-holding server in a cgroup shaped like a pod's container
# (containerd under the systemd cgroup driver, cgroup v2), with the fake
# CRI and pod-resources servers answering for that container and for rxe0
# allocated to it by name.
POD_UID=0f3c1a2b-4d5e-4f60-8a9b-0c1d2e3f4a5b
CONTAINER_ID=5d1e0c4b2a39f8e7d6c5b4a3928170f6e5d4c3b2a1908f7e6d5c4b3a29180f7e
[[ -e /sys/fs/cgroup/cgroup.procs ]] || mount -t cgroup2 cgroup2 /sys/fs/cgroup ||
	die "cannot mount cgroup2"
pod_cgroup=/sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice
pod_cgroup+=/kubepods-besteffort-pod${POD_UID//-/_}.slice/cri-containerd-$CONTAINER_ID.scope
mkdir -p "$pod_cgroup"
echo "$server_pid" >"$pod_cgroup/cgroup.procs" || die "cannot move $server_pid into $pod_cgroup"
record qp-pods-cgroup.txt cat "/proc/$server_pid/cgroup"
cat >"$R/node-state.yml" <<STATE
containers:
  - {id: $CONTAINER_ID, pod_uid: $POD_UID, namespace: rdma-jobs, pod: pingpong-0, container: server}
pods:
  - {namespace: rdma-jobs, pod: pingpong-0, containers: [{name: server, devices: [{resource: example.com/rxe, ids: [$RXE]}]}]}
STATE
"$NODE_API" /tmp/cri.sock /tmp/kubelet.sock "$R/node-state.yml" >"$R/node-api.log" 2>&1 &
node_api=$!
deadline=$((SECONDS + 30))
until grep -qx ready "$R/node-api.log"; do
	kill -0 "$node_api" 2>/dev/null || die "fake_node_api_server exited (see node-api.log)"
	((SECONDS < deadline)) || die "fake_node_api_server not ready within 30s"
	sleep 0.1
done
record qp-pods-qp.json rdma -j resource show qp
once_with qp-pods "kubernetes:
  enabled: true
  cri_socket: /tmp/cri.sock
  pod_resources_socket: /tmp/kubelet.sock
qp_counters:
  inventory_by_comm: true
  inventory_by_pod: true"
kill "$node_api" 2>/dev/null || true
wait "$node_api" 2>/dev/null || true
kill "$qp_server" 2>/dev/null || true
wait "$qp_server" 2>/dev/null || true
note "qp counter runs done"

# ---------------------------------------------------------------- 9. congestion and QoS

# The netdev behind rxe0 is a veth: driver statistics (all unmapped), no DCB,
# and rxe has no optional counters. The exporter's raw ethtool statistics are
# compared with Debian's ethtool -S, taken right before and after --once.
record ethtool-i-veth0.txt ethtool -i "$NETDEV"
record ethtool-S-before.txt ethtool -S "$NETDEV"
dcb_rc=0
t 10 dcb ets show dev "$NETDEV" >"$R/dcb-ets-veth0.txt" 2>&1 || dcb_rc=$?
echo "$dcb_rc" >"$R/dcb-ets-veth0.rc"
once_with congestion "ethtool:
  raw_stats: true
dcb:
  dscp_priority: true
optional_counters:
  ports: [{device: $RXE, enable: [cc_rx_ce_pkts]}]"
record ethtool-S-after.txt ethtool -S "$NETDEV"
note "congestion run done"

# ---------------------------------------------------------------- 10. link and PCIe

# The carrier of veth0 lost and regained between two --once runs (its peer
# down and up, veth0 itself staying administratively up): the link
# collector's counts must each grow by one, as the kernel's files do. And
# what sysfs says of rxe0's parent device, against the pcie collector.
carrier_files=(/sys/class/net/"$NETDEV"/{carrier,carrier_up_count,carrier_down_count})
wait_carrier() { # VALUE
	local deadline=$((SECONDS + 20))
	until [[ $(cat /sys/class/net/"$NETDEV"/carrier 2>/dev/null) == "$1" ]]; do
		((SECONDS < deadline)) || die "$NETDEV carrier did not become $1"
		sleep 0.05
	done
}
{
	if [[ -e /sys/class/infiniband/$RXE/device ]]; then
		echo "device $(readlink -f "/sys/class/infiniband/$RXE/device")"
		echo "subsystem $(basename "$(readlink -f "/sys/class/infiniband/$RXE/device/subsystem")")"
	else
		echo "device none"
	fi
} >"$R/rxe-parent.txt"
record carrier-before.txt grep -H '' "${carrier_files[@]}"
once_rc=0
t 30 "$EXPORTER" --once >"$R/link-before.prom" 2>"$R/link-before.stderr" || once_rc=$?
echo "$once_rc" >"$R/link-before.rc"
t 10 ip link set "$PEER" down || die "ip link set $PEER down failed"
wait_carrier 0
t 10 ip link set "$PEER" up || die "ip link set $PEER up failed"
wait_carrier 1
record carrier-after.txt grep -H '' "${carrier_files[@]}"
once_rc=0
t 30 "$EXPORTER" --once >"$R/link-after.prom" 2>"$R/link-after.stderr" || once_rc=$?
echo "$once_rc" >"$R/link-after.rc"
# What Debian's ethtool gets from the same kernel for the veth's module and
# FEC (both refused: the exporter must export nothing for them).
for what in module:-m fec:--show-fec; do
	rc=0
	t 20 ethtool "${what#*:}" "$NETDEV" >"$R/ethtool-${what%%:*}.txt" 2>&1 || rc=$?
	echo "$rc" >"$R/ethtool-${what%%:*}.rc"
done
note "link flap done"

# ---------------------------------------------------------------- 7. promtool

: >"$R/promtool.txt"
for f in once.prom once-sysfs.prom scrape1.prom scrape2.prom res.prom after-readd.prom \
	qp-restore.prom qp-auto.prom qp-manual.prom congestion.prom link-before.prom link-after.prom; do
	rc=0
	t 60 promtool check metrics <"$R/$f" >"$R/promtool-$f.out" 2>&1 || rc=$?
	echo "$f $rc" >>"$R/promtool.txt"
done
note "done"
