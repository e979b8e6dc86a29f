# Shell helpers the guest scripts of the VM suites source. Before sourcing,
# set PROG (the prefix of progress lines) and R (the results directory).

# note MSG: a progress line on stderr and in $R/steps.log.
note() { printf '%s: [%3ds] %s\n' "$PROG" "$SECONDS" "$*" | tee -a "$R/steps.log" >&2; }
die() {
	note "ERROR: $*"
	exit 1
}

# t SECS CMD...: CMD under its own time limit. Background jobs call timeout
# directly instead, so that $! is the timeout process and killing it stops
# CMD (timeout passes the signal on).
t() {
	local secs=$1
	shift
	timeout --kill-after=5 "$secs" "$@"
}

# wait_listen PORT SECS: until something listens on TCP PORT; 1 on timeout.
wait_listen() {
	local port=$1 deadline=$((SECONDS + $2))
	while ((SECONDS < deadline)); do
		if t 5 ss -Hltn "sport = :$port" | grep -q .; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# stop_recording NAME PID...: SIGTERM to every PID, then each one's exit code
# into $R/NAME<i>.rc in order (NAME "a b" writes a.rc and b.rc).
stop_recording() {
	local names=$1 rc name pid
	shift
	kill -TERM "$@" 2>/dev/null || true
	for name in $names; do
		pid=$1
		shift
		rc=0
		wait "$pid" || rc=$?
		echo "$rc" >"$R/$name.rc"
	done
}

# wait_healthz URL PID LOG: until the exporter (PID, logging to LOG in $R)
# answers URL; fails after 30 s or when it exits.
wait_healthz() {
	local url=$1 pid=$2 log=$3 deadline=$((SECONDS + 30))
	until t 5 curl -sf -o /dev/null "$url"; do
		kill -0 "$pid" 2>/dev/null || die "exporter exited at start (see $log)"
		((SECONDS < deadline)) || die "exporter did not answer $url within 30s"
		sleep 0.1
	done
}

# ---------------------------------------------------------------- rxe

# rxe_ipv4_gid_index DEV PORT IP: the index of the RoCE v2 GID of IPv4
# address IP on DEV/PORT; 1 if there is none (yet).
rxe_ipv4_gid_index() {
	local dir=/sys/class/infiniband/$1/ports/$2 ip=$3 want f idx gid type a b c d
	IFS=. read -r a b c d <<<"$ip"
	# The IPv4-mapped GID as sysfs prints it.
	printf -v want '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$a" "$b" "$c" "$d"
	for f in "$dir"/gids/*; do
		idx=${f##*/}
		read -r gid <"$f" 2>/dev/null || continue
		[[ $gid == "$want" ]] || continue
		read -r type <"$dir/gid_attrs/types/$idx" 2>/dev/null || continue
		if [[ $type == "RoCE v2" ]]; then
			echo "$idx"
			return 0
		fi
	done
	return 1
}

# ---------------------------------------------------------------- multi-VM bed
# For guest scripts of tests/vm/bed.py: BED_VM (vm0...), BED_INDEX, BED_RACK,
# BED_VMS, BED_RAILS and BED_MACS come from the host; the bed's shared
# directory is /run/share/bed.

BED_SHARE=${BED_SHARE:-/run/share/bed}

# bed_ip INDEX RAIL: the address of VM number INDEX on RAIL.
bed_ip() { echo "192.168.$((100 + $2)).$(($1 + 1))"; }

# bed_nap: a short pause without starting a process (cheap under emulation).
bed_nap() {
	if [[ -z ${_bed_nap_fd:-} ]]; then
		local fifo
		fifo=$(mktemp -u /tmp/bed-nap.XXXXXX)
		mkfifo -m 600 "$fifo"
		exec {_bed_nap_fd}<>"$fifo"
		rm -f "$fifo"
	fi
	read -r -t "${1:-0.1}" -u "$_bed_nap_fd" || true
}

# bed_wait_file PATH SECS: until PATH exists; 1 on timeout. PATH may be
# relative to the shared directory.
bed_wait_file() {
	local path=$1 deadline=$((SECONDS + $2))
	[[ $path == /* ]] || path=$BED_SHARE/$path
	until [[ -e $path ]]; do
		((SECONDS < deadline)) || return 1
		bed_nap 0.1
	done
}

# bed_wait_ready SECS: until every VM of the bed has written its ready file;
# 1 (naming the missing ones on stderr) on timeout.
bed_wait_ready() {
	local deadline=$((SECONDS + $1)) i missing
	while :; do
		missing=""
		for ((i = 0; i < ${BED_VMS:?}; i++)); do
			[[ -e $BED_SHARE/vm$i/ready ]] || missing+=" vm$i"
		done
		[[ -n $missing ]] || return 0
		if ((SECONDS >= deadline)); then
			echo "bed_wait_ready: not ready after $1s:$missing" >&2
			return 1
		fi
		bed_nap 0.2
	done
}

# bed_flag NAME [TEXT]: creates $BED_SHARE/$BED_VM/NAME (atomically, with
# TEXT as its content) for the host and the other VMs to wait for.
bed_flag() {
	local dir=$BED_SHARE/${BED_VM:?}
	mkdir -p "$dir"
	printf '%s' "${2:-}" >"$dir/.$1.tmp" && mv -f "$dir/.$1.tmp" "$dir/$1"
}
