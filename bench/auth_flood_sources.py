#!/usr/bin/env python3
"""Scrapes with remembered credentials while several sources flood wrong
basic-auth passwords.

The exporter runs with one basic-auth user (bcrypt cost 10, made by
htpasswd) over plain HTTP, its default web limits and the sysfs fixture (8
mlx5-like devices, written by build/tests/sysfs_tree or --sysfs-tree). A
scraper checks its credentials once (the exporter remembers them). Then the
flood: --connections connections from each of --sources addresses, each
pipelining --depth requests with a wrong password and sending the next as
each answer comes, never re-opening a connection the exporter closes. Once
every flood connection has been answered at least once, the scraper runs
--scrapes scrapes of /metrics, one after the other, each on a connection of
its own (as Prometheus does once its kept-alive connection was closed).

Sources: 127.0.0.2, 127.0.0.3, ... (four by default); with --ipv6, that many
addresses of one /64 (2001:db8:1:2::/64), in a network namespace this script
makes, with the exporter and the scraper (2001:db8:9:9::1) inside it (needs
root and iproute2's ip).

Reported: the scrapes' answers (200, 401, 503, closed) and latency, the
flood's answers, and the exporter's own counts (auth failures by reason,
evicted and refused connections). Run it against an older build with
--exporter to compare.

Usage: bench/auth_flood_sources.py [--sources N] [--connections C] [--depth D]
                                   [--scrapes S] [--ipv6] [--exporter PATH]
                                   [--sysfs-tree PATH]

The flooder (Flood), the namespace (Namespace) and the one-request client
(request) are also what tests/integration/test_auth_flood.py drives the
exporter with.
"""
import argparse
import base64
import collections
import ctypes
import os
import re
import selectors
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PASSWORD = "benchmark password"
CLONE_NEWNET = 0x40000000


def basic(user, password):
    """An Authorization header line."""
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return f"Authorization: Basic {token}\r\n"


def get(path, host, header=""):
    return f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{header}\r\n".encode()


def bcrypt_hash(password, cost=10):
    """What an operator runs: htpasswd (Apache's bcrypt, $2y$)."""
    if shutil.which("htpasswd") is None:
        raise RuntimeError("htpasswd (apache2-utils) is needed to make a bcrypt hash")
    out = subprocess.run(["htpasswd", "-nbBC", str(cost), "", password], capture_output=True,
                         text=True, check=True).stdout
    return out.strip().lstrip(":")


class Namespace:
    """A network namespace of its own with ADDRESSES (IPv6, /128 each) on its
    loopback, removed by close(). Sockets made by a thread that has called
    enter() belong to it; the exporter runs inside with `prefix` before its
    command."""

    def __init__(self, addresses):
        if os.geteuid() != 0:
            raise RuntimeError("a network namespace needs root")
        if shutil.which("ip") is None:
            raise RuntimeError("iproute2's ip is needed to make a network namespace")
        self.name = f"rdma_auth_flood_{os.getpid()}_{id(self) & 0xffff}"
        self.prefix = ["ip", "netns", "exec", self.name]
        self._ip("netns", "add", self.name)
        try:
            self._ip("-n", self.name, "link", "set", "lo", "up")
            for a in addresses:
                self._ip("-n", self.name, "addr", "add", f"{a}/128", "dev", "lo", "nodad")
        except Exception:
            self.close()
            raise

    @staticmethod
    def _ip(*args):
        r = subprocess.run(["ip", *args], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"ip {' '.join(args)}: {r.stderr.strip()}")

    def enter(self):
        """Moves the calling thread (only it) into the namespace."""
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(f"/run/netns/{self.name}", os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"setns {self.name}: {os.strerror(err)}")
        finally:
            os.close(fd)

    def call(self, fn, *args):
        """fn(*args) on a thread inside the namespace; its result or exception."""
        out = {}

        def run():
            try:
                self.enter()
                out["value"] = fn(*args)
            except BaseException as e:  # handed to the caller
                out["error"] = e

        t = threading.Thread(target=run)
        t.start()
        t.join()
        if "error" in out:
            raise out["error"]
        return out["value"]

    def close(self):
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)


def connect(source, dest, port, timeout=10):
    family = socket.AF_INET6 if ":" in dest else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((source, 0))
    s.connect((dest, port))
    return s


def split_response(buf):
    """(status, rest of the buffer) when BUF starts with a whole response,
    else (None, BUF)."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None, buf
    head = buf[:end].decode("latin-1")
    m = re.search(r"(?im)^content-length:\s*(\d+)", head)
    total = end + 4 + (int(m.group(1)) if m else 0)
    if len(buf) < total:
        return None, buf
    return int(head.split(" ", 2)[1]), buf[total:]


def request(source, dest, port, data, timeout=30):
    """One request on a new connection: (status, or "closed" when the
    exporter closed it unanswered, and the seconds it took)."""
    t0 = time.perf_counter()
    with connect(source, dest, port, timeout) as s:
        s.sendall(data)
        buf = b""
        while True:
            status, _ = split_response(buf)
            if status is not None:
                return status, time.perf_counter() - t0
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                return "closed", time.perf_counter() - t0
            buf += chunk


class Flood(threading.Thread):
    """Connections from SOURCES (PER_SOURCE each) to DEST:PORT, each keeping
    DEPTH requests (DATA) in flight and sending one more per answer, at most
    MAX_REQUESTS per connection, until stop(). A connection the exporter
    closes is not re-opened. `answered` is set once every connection has
    had an answer or was closed; `statuses` counts the answers."""

    def __init__(self, sources, per_source, dest, port, data, depth=4, max_requests=500,
                 netns=None):
        super().__init__(daemon=True)
        self.plan = [s for s in sources for _ in range(per_source)]
        self.dest, self.port, self.data = dest, port, data
        self.depth, self.max_requests, self.netns = depth, max_requests, netns
        self.statuses = collections.Counter()
        self.closed = 0
        self.answered = threading.Event()
        self.error = None
        self._halt = threading.Event()

    def stop(self):
        self._halt.set()
        self.join(30)

    def run(self):
        try:
            if self.netns:
                self.netns.enter()
            self._flood()
        except BaseException as e:  # reported by the caller
            self.error = e
            self.answered.set()

    def _flood(self):
        sel = selectors.DefaultSelector()
        conns = []
        for source in self.plan:
            s = connect(source, self.dest, self.port)
            s.setblocking(False)
            conn = {"sock": s, "buf": b"", "sent": 0, "done": False, "heard": False}
            conns.append(conn)
            self._send(conn, self.depth)
            sel.register(s, selectors.EVENT_READ, conn)
        waiting = len(conns)
        while not self._halt.is_set() and sel.get_map():
            for key, _ in sel.select(0.2):
                conn = key.data
                heard = self._read(conn)
                if heard and not conn["heard"]:
                    conn["heard"] = True
                    waiting -= 1
                if conn["done"]:
                    sel.unregister(conn["sock"])
                    conn["sock"].close()
            if waiting == 0:
                self.answered.set()
        for conn in conns:
            conn["sock"].close()

    def _send(self, conn, n):
        n = min(n, self.max_requests - conn["sent"])
        if n > 0:
            try:
                conn["sock"].sendall(self.data * n)  # a few hundred bytes: never blocks
                conn["sent"] += n
            except OSError:
                pass  # closed by the exporter: the read sees it

    def _read(self, conn):
        """Whether the connection was answered or closed."""
        try:
            chunk = conn["sock"].recv(65536)
        except BlockingIOError:
            return False
        except OSError:
            chunk = b""
        if not chunk:
            self.closed += 1
            conn["done"] = True
            return True
        conn["buf"] += chunk
        answers = 0
        while True:
            status, conn["buf"] = split_response(conn["buf"])
            if status is None:
                break
            self.statuses[status] += 1
            answers += 1
        self._send(conn, answers)
        return answers > 0


def exporter_counters(metrics_text):
    """The exporter's own HTTP counters worth reporting, by series."""
    wanted = ("rdma_exporter_http_auth_failures_total", "rdma_exporter_http_evicted_connections_total",
              "rdma_exporter_http_rejected_connections_total")
    return {line.split(" ")[0]: float(line.split(" ")[1])
            for line in metrics_text.splitlines() if line.startswith(wanted)}


def metrics_text(source, dest, port, header):
    with connect(source, dest, port, 30) as s:
        s.sendall(get("/metrics", dest, header + "Connection: close\r\n"))
        buf = b""
        while chunk := s.recv(65536):
            buf += chunk
    return buf.decode("utf-8", "replace")


def start_exporter(args, work, listen, prefix):
    sysfs = os.path.join(work, "sys")
    subprocess.run([args.sysfs_tree, sysfs, "mlx5:8:2"], check=True)
    with open(os.path.join(work, "web.yml"), "w") as f:
        f.write(f"basic_auth_users:\n  prom: {bcrypt_hash(PASSWORD)}\n")
    with open(os.path.join(work, "rdma.yml"), "w") as f:
        f.write(f"sysfs: {{root: {sysfs}}}\ncollection: {{max_age: 0s}}\n")
    proc = subprocess.Popen(prefix + [args.exporter, "--web.listen-address", listen,
                                      "--config.file", os.path.join(work, "rdma.yml"),
                                      "--web.config.file", os.path.join(work, "web.yml")],
                            stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        m = re.search(r"listening on\" address=\S+:(\d+)", line)
        if m:
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
            return proc, int(m.group(1))
    raise RuntimeError("the exporter did not start")


def run(args, netns):
    if netns:
        sources = [f"2001:db8:1:2::{i + 1:x}" for i in range(args.sources)]
        scraper, dest = "2001:db8:9:9::1", "2001:db8:9:9::1"
    else:
        sources = [f"127.0.0.{i + 2}" for i in range(args.sources)]
        scraper, dest = "127.0.0.1", "127.0.0.1"
    call = netns.call if netns else (lambda fn, *a: fn(*a))
    work = tempfile.mkdtemp(prefix="rdma_auth_flood_")
    proc, port = start_exporter(args, work, f"[{dest}]:0" if netns else f"{dest}:0",
                                netns.prefix if netns else [])
    try:
        good = get("/metrics", dest, basic("prom", PASSWORD))
        first = call(request, scraper, dest, port, good)
        assert first[0] == 200, first  # the one bcrypt check the scraper pays
        flood = Flood(sources, args.connections, dest, port,
                      get("/metrics", dest, basic("prom", "wrong guess")), depth=args.depth,
                      max_requests=args.max_requests, netns=netns)
        flood.start()
        flood.answered.wait(300)
        if flood.error:
            raise flood.error
        t0 = time.monotonic()
        results = [call(request, scraper, dest, port, good) for _ in range(args.scrapes)]
        window = time.monotonic() - t0
        flood.stop()
        counters = exporter_counters(call(metrics_text, scraper, dest, port,
                                          basic("prom", PASSWORD)))
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)
    report(args, sources, results, window, flood, counters)


def report(args, sources, results, window, flood, counters):
    statuses = collections.Counter(status for status, _ in results)
    ok = sorted(seconds * 1000 for status, seconds in results if status == 200)
    print(f"flood: {len(sources)} sources ({sources[0]} ...) x {args.connections} connections, "
          f"{args.depth} requests in flight each")
    print(f"scrapes with remembered credentials: {statuses[200]} of {len(results)} answered 200 "
          f"in {window:.1f} s; all answers: {dict(statuses)}")
    if ok:
        print(f"their latency: p50 {statistics.median(ok):.1f} ms, "
              f"p90 {ok[min(len(ok) - 1, int(0.9 * len(ok)))]:.1f} ms, max {ok[-1]:.1f} ms")
    print(f"flood answers: {dict(flood.statuses)}, its connections closed by the exporter: "
          f"{flood.closed}")
    for series, value in sorted(counters.items()):
        print(f"  {series} {value:g}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sources", type=int, default=4)
    ap.add_argument("--connections", type=int, default=16, help="per source")
    ap.add_argument("--depth", type=int, default=4, help="requests in flight per connection")
    ap.add_argument("--max-requests", type=int, default=20000, help="per connection")
    ap.add_argument("--scrapes", type=int, default=100)
    ap.add_argument("--ipv6", action="store_true", help="the sources are addresses of one /64")
    ap.add_argument("--exporter", default=os.path.join(ROOT, "build", "rdma_exporter"))
    ap.add_argument("--sysfs-tree", default=os.path.join(ROOT, "build", "tests", "sysfs_tree"))
    args = ap.parse_args()
    if not args.ipv6:
        return run(args, None)
    netns = Namespace([f"2001:db8:1:2::{i + 1:x}" for i in range(args.sources)] +
                      ["2001:db8:9:9::1"])
    try:
        run(args, netns)
    finally:
        netns.close()


if __name__ == "__main__":
    main()
