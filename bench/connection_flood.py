#!/usr/bin/env python3
"""Scrapes while clients hold connections with unfinished requests.

The exporter runs with its default web limits on the sysfs fixture (8
mlx5-like devices, 2 ports each, written by build/tests/sysfs_tree or
--sysfs-tree). A flooder process opens --connections
connections spread over --sources addresses (127.0.0.2, 127.0.0.3, ...),
or, with --shared, from the scraper's own address 127.0.0.1, sends the start of a request on each and nothing more; with --reopen it
opens a new one whenever the exporter closes one, so it keeps holding as
many as it can. Once the flood is in place, a scraper on 127.0.0.1 runs
--scrapes scrapes of /metrics (gzip, as Prometheus asks), --parallel at a
time, each on a connection of its own, then one GET /healthz.

Reported: scrapes answered 200, other outcomes (503, reset, timeout), the
/healthz answer, the scrape latency, the exporter's RSS (VmRSS) before the
flood and after the scrapes, and its own counts of refused and evicted
connections. Run it against an older build with
--exporter to compare.

Usage: bench/connection_flood.py [--exporter PATH] [--connections N] [--sources K]
                                 [--parallel P] [--scrapes S] [--reopen] [--shared]
                                 [--sysfs-tree PATH]
"""
import argparse
import collections
import concurrent.futures
import http.client
import multiprocessing
import os
import re
import selectors
import socket
import statistics
import subprocess
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
START = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: "


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def open_one(port, source):
    s = socket.socket()
    s.bind((source, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    try:
        s.sendall(START)
    except OSError:
        pass  # refused and closed already
    s.setblocking(False)
    return s


def flood(port, connections, sources, shared, reopen, ready, stop, opened):
    """Runs in a process of its own, so the scraper's threads do not wait for
    the flooder's GIL."""
    sel = selectors.DefaultSelector()
    addresses = ["127.0.0.1"] if shared else [f"127.0.0.{2 + i}" for i in range(sources)]
    for i in range(connections):
        source = addresses[i % sources]
        sel.register(open_one(port, source), selectors.EVENT_READ, source)
    opened.value = connections
    ready.set()
    while not stop.is_set():
        for key, _ in sel.select(timeout=0.1):
            try:
                data = key.fileobj.recv(4096)
            except OSError:
                data = b""
            if data:
                continue  # a 503 before the close
            sel.unregister(key.fileobj)
            key.fileobj.close()
            if reopen and not stop.is_set():
                try:
                    sel.register(open_one(port, key.data), selectors.EVENT_READ, key.data)
                    opened.value += 1
                except OSError:
                    pass
    for key in list(sel.get_map().values()):
        key.fileobj.close()


def scrape(port, path="/metrics"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    t = time.perf_counter()
    try:
        conn.request("GET", path, headers={"Accept-Encoding": "gzip"})
        resp = conn.getresponse()
        resp.read()
        return str(resp.status), (time.perf_counter() - t) * 1000
    except (OSError, http.client.HTTPException) as e:
        return type(e).__name__, (time.perf_counter() - t) * 1000
    finally:
        conn.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exporter", default=os.path.join(ROOT, "build", "rdma_exporter"))
    ap.add_argument("--sysfs-tree", default=os.path.join(ROOT, "build", "tests", "sysfs_tree"))
    ap.add_argument("--connections", type=int, default=300)
    ap.add_argument("--sources", type=int, default=1)
    ap.add_argument("--parallel", type=int, default=100)
    ap.add_argument("--scrapes", type=int, default=100)
    ap.add_argument("--reopen", action="store_true")
    ap.add_argument("--shared", action="store_true",
                    help="flood from 127.0.0.1, the scraper's own address")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="rdma_conn_flood_")
    sysfs = os.path.join(work, "sys")
    subprocess.run([args.sysfs_tree, sysfs, "mlx5:8:2"], check=True)
    proc = subprocess.Popen([args.exporter, "--web.listen-address", "127.0.0.1:0",
                             "--path.sysfs", sysfs], stderr=subprocess.PIPE, text=True)
    port = None
    for line in proc.stderr:
        m = re.search(r"listening on\" address=\S+:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    assert scrape(port)[0] == "200"
    rss_before = rss_kib(proc.pid)

    ready, stop = multiprocessing.Event(), multiprocessing.Event()
    opened = multiprocessing.Value("i", 0)
    flooder = multiprocessing.Process(target=flood, args=(port, args.connections, args.sources,
                                                          args.shared, args.reopen, ready, stop,
                                                          opened))
    flooder.start()
    ready.wait(60)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.parallel) as pool:
        results = list(pool.map(lambda _: scrape(port), range(args.scrapes)))
    health = scrape(port, "/healthz")[0]
    rss_after = rss_kib(proc.pid)
    stop.set()
    flooder.join(30)
    time.sleep(1.1)  # past collection.max_age: a collection that reads the counts now
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/metrics")
    own = [line for line in conn.getresponse().read().decode().splitlines()
           if re.match(r"rdma_exporter_http_(rejected|evicted)_connections_total", line)]
    conn.close()
    proc.terminate()
    proc.wait()

    outcomes = collections.Counter(status for status, _ in results)
    latencies = sorted(ms for status, ms in results if status == "200")
    print(f"exporter: {args.exporter}")
    where = "the scraper's address" if args.shared else f"{args.sources} address(es)"
    print(f"flood: {args.connections} connections from {where}"
          f"{', re-opened when closed' if args.reopen else ''}; "
          f"{opened.value} opened in all")
    print(f"scrapes: {args.scrapes}, {args.parallel} at a time: "
          + ", ".join(f"{n} x {s}" for s, n in outcomes.most_common()))
    if latencies:
        print(f"scrape latency (200s): p50 {statistics.median(latencies):.1f} ms, "
              f"max {latencies[-1]:.1f} ms")
    print(f"/healthz during the flood: {health}")
    print(f"exporter RSS: {rss_before} KiB before, {rss_after} KiB after "
          f"({rss_after - rss_before:+d} KiB)")
    print("the exporter's count of connections refused and closed for others:")
    for line in own:
        print("  " + line)


if __name__ == "__main__":
    main()
