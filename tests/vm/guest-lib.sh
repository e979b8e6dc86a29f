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
