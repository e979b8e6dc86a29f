#!/bin/bash
# A long run of the daemon under steady churn, watching for slow leaks of
# memory, file descriptors and threads. Run from anywhere:
#
#   bench/soak.sh                      # 30 minutes, release build (build/)
#   bench/soak.sh --duration 3m        # a short check
#   bench/soak.sh --asan               # the AddressSanitizer build (build-asan/)
#
# What runs, on loopback, for the whole duration:
#   - rdma_exporter on the sysfs fixture of the integration tests (eight
#     2-port mlx5 HCAs, written by the build's tests/sysfs_tree), scraped 10 times a
#     second (keep-alive, gzip, as Prometheus does);
#   - fake_rdma_host (the exporter's collection and HTTP server in front of
#     the fake nldev, DCB and ethtool kernel, tests/fake_kernel), scraped 10
#     times a second too; it has no reload, probe or OTLP (--no-fake-host
#     leaves it out);
#   - a reload (SIGHUP) every 10 s, alternating between two configurations
#     that differ in device filter, connection limit and probe targets;
#   - the probe enabled. This machine has no RDMA device, so no probe
#     session can be set up; what churns is target discovery (a control
#     connection per target every second): the daemon's own responder
#     answers, one target refuses (nothing listens), one flaps (a listener
#     that accepts and drops connections, up 15 s, down 15 s), and the
#     reload adds and removes targets;
#   - OTLP push every 2 s to a receiver that is up for 30 s, down for 30 s,
#     so the pusher's retry, backoff and queue paths run;
# and every minute (--sample) a row of each process's RSS (VmRSS), open file
# descriptors (/proc/PID/fd) and threads (/proc/PID/status Threads), with
# the scrape, reload and OTLP counts so far. A summary compares the first
# and the last row; with --asan, sanitizer reports in the logs are printed
# (ASAN_OPTIONS defaults to detect_leaks=1:quarantine_size_mb=16; ASan's
# shadow memory and quarantine still make RSS several times larger, and it
# grows during the first minutes).
# Exit status 1 when a process died or a sanitizer reported something.
#
# Options: --duration D (30m; s, m or h), --sample D (1m), --asan,
#          --build DIR (default build/, or build-asan/ with --asan),
#          --no-fake-host, --keep (keep the work directory and its logs).
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
DURATION=30m
SAMPLE=1m
ASAN=0
BUILD=
FAKE_HOST=1
KEEP=0
while (($#)); do
	case $1 in
	--duration) DURATION=$2; shift ;;
	--sample) SAMPLE=$2; shift ;;
	--asan) ASAN=1 ;;
	--build) BUILD=$2; shift ;;
	--no-fake-host) FAKE_HOST=0 ;;
	--keep) KEEP=1 ;;
	-h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "soak.sh: unknown option $1 (--help)" >&2; exit 2 ;;
	esac
	shift
done

seconds() {
	case $1 in
	*h) echo $((${1%h} * 3600)) ;;
	*m) echo $((${1%m} * 60)) ;;
	*s) echo "${1%s}" ;;
	*) echo "$1" ;;
	esac
}
DURATION_S=$(seconds "$DURATION")
SAMPLE_S=$(seconds "$SAMPLE")

if [[ -z $BUILD ]]; then
	if ((ASAN)); then BUILD=$ROOT/build-asan; else BUILD=$ROOT/build; fi
fi
EXPORTER=$BUILD/rdma_exporter
FAKE=$BUILD/tests/fake_rdma_host
SYSFS_TREE=$BUILD/tests/sysfs_tree
[[ -x $EXPORTER ]] || { echo "soak.sh: no $EXPORTER (build it first)" >&2; exit 2; }
[[ -x $SYSFS_TREE ]] || { echo "soak.sh: no $SYSFS_TREE (build it first)" >&2; exit 2; }
if ((FAKE_HOST)) && [[ ! -x $FAKE ]]; then
	echo "soak.sh: no $FAKE, running without it" >&2
	FAKE_HOST=0
fi

WORK=$(mktemp -d /tmp/rdma_soak.XXXXXX)
PIDS=()
# shellcheck disable=SC2317  # run by the trap
cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
	if ((KEEP)); then echo "logs kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
WEB_PORT=$(free_port)
PROBE_PORT=$(free_port)
REFUSED_PORT=$(free_port)
FLAP_PORT=$(free_port)
OTLP_PORT=$(free_port)
FAKE_PORT=$(free_port)

"$SYSFS_TREE" "$WORK/sys" mlx5:8:2
"$SYSFS_TREE" "$WORK/fake-sys" mlx5:2:2 rxe
# The processes fake_rdma_host's QPs belong to (as in tests/integration).
for entry in "100 python3 /kubepods.slice/pod-a/ctr-1" "101 python3 /kubepods.slice/pod-b/ctr-2" \
	"200 spdk_tgt /system.slice/spdk.service" \
	"300 ib_write_bw /user.slice/user-1000.slice/session-3.scope"; do
	read -r pid comm cgroup <<<"$entry"
	mkdir -p "$WORK/proc/$pid"
	echo "$comm" >"$WORK/proc/$pid/comm"
	echo "0::$cgroup" >"$WORK/proc/$pid/cgroup"
done

# Two configurations; every reload installs the other one.
config() { # $1: devices.exclude, $2: max_connections, $3: extra probe targets
	cat <<EOF
web: {max_connections: $2}
collection: {max_age: 0s}
sysfs: {root: $WORK/sys}
devices: {exclude: [$1]}
otlp:
  enabled: true
  endpoint: http://127.0.0.1:$OTLP_PORT/v1/metrics
  interval: 2s
  timeout: 2s
  max_backoff: 4s
probe:
  enabled: true
  listen_address: 127.0.0.1:$PROBE_PORT
  loopback: true
  discovery_interval: 1s
  backoff_initial: 200ms
  backoff_max: 2s
  connect_timeout: 1s
  targets:
    - address: 127.0.0.1:$PROBE_PORT
      labels: {role: self}
    - address: 127.0.0.1:$FLAP_PORT
      labels: {role: flapping}
$3
EOF
}
config "" 64 "    - address: 127.0.0.1:$REFUSED_PORT
      labels: {role: refused}" >"$WORK/a.yml"
config "mlx5_7" 32 "" >"$WORK/b.yml"
cp "$WORK/a.yml" "$WORK/rdma.yml"

if ((ASAN)); then
	# A small quarantine, so RSS follows what the daemon holds rather than
	# ASan's store of freed memory (256 MiB by default).
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:quarantine_size_mb=16}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
fi

"$EXPORTER" --web.listen-address "127.0.0.1:$WEB_PORT" --config.file "$WORK/rdma.yml" \
	>"$WORK/exporter.log" 2>&1 &
EXPORTER_PID=$!
DAEMONS=("$EXPORTER_PID")
FAKE_PID=0
if ((FAKE_HOST)); then
	"$FAKE" --web.listen-address "127.0.0.1:$FAKE_PORT" --path.sysfs "$WORK/fake-sys" \
		--path.proc "$WORK/proc" >"$WORK/fake_rdma_host.log" 2>&1 &
	FAKE_PID=$!
	DAEMONS+=("$FAKE_PID")
fi
PIDS=("${DAEMONS[@]}")

echo "# $(basename "$BUILD")/rdma_exporter (pid $EXPORTER_PID)$( ((FAKE_HOST)) && echo " and fake_rdma_host (pid $FAKE_PID)"), ${DURATION_S}s, a row every ${SAMPLE_S}s; work directory $WORK"

# The load, the flapping peers and the sampling: one Python process, stopped
# by the trap like the daemons.
python3 - "$WORK" "$DURATION_S" "$SAMPLE_S" "$EXPORTER_PID" "$WEB_PORT" "$FAKE_PID" "$FAKE_PORT" \
	"$OTLP_PORT" "$FLAP_PORT" <<'PYTHON' &
import http.client
import http.server
import os
import shutil
import signal
import socket
import sys
import threading
import time

work, duration, sample = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
exporter_pid, web_port, fake_pid, fake_port = map(int, sys.argv[4:8])
otlp_port, flap_port = int(sys.argv[8]), int(sys.argv[9])
stop = threading.Event()
lock = threading.Lock()
counts = {"ok": 0, "failed": 0, "reloads": 0, "otlp_posts": 0, "flap_accepts": 0}


def bump(key, n=1):
    with lock:
        counts[key] += n


def wait_listening(port, pid, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def scraper(port):
    """GET /metrics every 0.1 s on a keep-alive connection."""
    conn = None
    next_at = time.monotonic()
    while not stop.is_set():
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
            resp = conn.getresponse()
            resp.read()
            bump("ok" if resp.status == 200 else "failed")
        except (OSError, http.client.HTTPException):
            bump("failed")
            if conn is not None:
                conn.close()
            conn = None
        next_at += 0.1
        stop.wait(max(0.0, next_at - time.monotonic()))


def reloader():
    configs = [os.path.join(work, "b.yml"), os.path.join(work, "a.yml")]
    n = 0
    while not stop.wait(10):
        tmp = os.path.join(work, "rdma.yml.tmp")
        shutil.copyfile(configs[n % 2], tmp)
        os.replace(tmp, os.path.join(work, "rdma.yml"))
        os.kill(exporter_pid, signal.SIGHUP)
        bump("reloads")
        n += 1


class Receiver(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        bump("otlp_posts")
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def otlp_flapper():
    """An OTLP/HTTP receiver up for 30 s, then down for 30 s."""
    while not stop.is_set():
        server = http.server.ThreadingHTTPServer(("127.0.0.1", otlp_port), Receiver)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        stop.wait(30)
        server.shutdown()
        server.server_close()
        stop.wait(30)


def probe_flapper():
    """A probe target that accepts and drops connections for 15 s, then is
    gone for 15 s."""
    while not stop.is_set():
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", flap_port))
        listener.listen(16)
        listener.settimeout(0.2)
        up_until = time.monotonic() + 15
        while not stop.is_set() and time.monotonic() < up_until:
            try:
                conn, _ = listener.accept()
                conn.close()
                bump("flap_accepts")
            except socket.timeout:
                pass
        listener.close()
        stop.wait(15)


def proc_sample(pid):
    if not pid:
        return None
    rss = threads = None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    return rss, fds, threads


def row(t, samples):
    cells = [f"{t:>6}"]
    for s in samples:
        cells += [f"{'-':>9}", f"{'-':>4}", f"{'-':>4}"] if s is None else \
                 [f"{s[0]:>9}", f"{s[1]:>4}", f"{s[2]:>4}"]
    with lock:
        c = dict(counts)
    cells += [f"{c['ok']:>8}", f"{c['failed']:>6}", f"{c['reloads']:>7}",
              f"{c['otlp_posts']:>6}", f"{c['flap_accepts']:>6}"]
    print(" ".join(cells), flush=True)


pids = [exporter_pid] + ([fake_pid] if fake_pid else [])
if not wait_listening(web_port, exporter_pid) or \
        (fake_pid and not wait_listening(fake_port, fake_pid)):
    print("a daemon did not start listening (see its log)", flush=True)
    sys.exit(1)
threads = [threading.Thread(target=f, daemon=True) for f in (reloader, otlp_flapper, probe_flapper)]
threads += [threading.Thread(target=scraper, args=(p,), daemon=True)
            for p in [web_port] + ([fake_port] if fake_pid else [])]
for t in threads:
    t.start()

header = ["t_s", "exp_rss_kib", "fds", "thr"]
if fake_pid:
    header += ["host_rss_kib", "fds", "thr"]
header += ["scrapes", "failed", "reloads", "otlp", "flaps"]
widths = [6, 9, 4, 4] + ([9, 4, 4] if fake_pid else []) + [8, 6, 7, 6, 6]
print(" ".join(f"{h:>{w}}" for h, w in zip(header, widths)), flush=True)
start = time.monotonic()
first = last = None
status = 0
while True:
    t = round(time.monotonic() - start)
    samples = [proc_sample(p) for p in pids]
    row(t, samples)
    first = first or samples
    last = samples
    if any(s is None for s in samples):
        print("a daemon died", flush=True)
        status = 1
        break
    if t >= duration:
        break
    stop.wait(min(sample, max(0.05, start + duration - time.monotonic())))
stop.set()
names = ["rdma_exporter", "fake_rdma_host"]
for name, a, b in zip(names, first, last):
    if a and b:
        print(f"# {name}: RSS {a[0]} -> {b[0]} KiB ({b[0] - a[0]:+d}), "
              f"fds {a[1]} -> {b[1]}, threads {a[2]} -> {b[2]}", flush=True)
with lock:
    print(f"# scrapes {counts['ok']} ok, {counts['failed']} failed; {counts['reloads']} reloads; "
          f"{counts['otlp_posts']} OTLP pushes received", flush=True)
sys.exit(status)
PYTHON
LOAD_PID=$!
PIDS=("$LOAD_PID" "${DAEMONS[@]}")
status=0
wait "$LOAD_PID" || status=1
PIDS=("${DAEMONS[@]}")

# Stop the daemons the way an operator would (SIGTERM, exit 0), then look at
# their logs.
for pid in "${DAEMONS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
for pid in "${DAEMONS[@]}"; do
	code=0
	wait "$pid" || code=$?
	[[ $code == 0 ]] || { echo "# pid $pid exited $code"; status=1; }
done
PIDS=()
echo "# rdma_exporter log: $(grep -c 'configuration reloaded' "$WORK/exporter.log" || true) reloads applied," \
	"$(grep -c 'reload rejected' "$WORK/exporter.log" || true) rejected"
if grep -hE 'ERROR: (Address|Leak|Thread)Sanitizer|runtime error:' "$WORK"/*.log; then
	status=1
fi
exit "$status"
