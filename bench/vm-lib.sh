# Sourced by the benchmarks that run in the test-bed VM (probe_cost.sh,
# probe_rails.sh): a command under a time limit, waiting for a listener, and
# a process's CPU time.

# t SECS COMMAND...: COMMAND, killed after SECS seconds.
t() {
	local secs=$1
	shift
	timeout --kill-after=5 "$secs" "$@"
}

# wait_listen PORT: until a TCP socket listens on PORT (at most 30 s).
wait_listen() {
	local deadline=$((SECONDS + 30))
	until t 5 ss -Hltn "sport = :$1" | grep -q .; do
		((SECONDS < deadline)) || return 1
		sleep 0.1
	done
}

# cpu_ns PID: CPU time of every thread of PID in nanoseconds, from the
# scheduler's own accounting (se.sum_exec_runtime in /proc/PID/task/*/sched,
# milliseconds with six decimals): tick-sampled utime/stime are coarse for a
# process that wakes often and briefly. It includes the kernel's work in the
# process's context, which on rxe is the whole RDMA transport.
cpu_ns() {
	cat /proc/"$1"/task/*/sched |
		awk '/se.sum_exec_runtime/ {s += $3} END {printf "%.0f", s * 1000000}'
}
