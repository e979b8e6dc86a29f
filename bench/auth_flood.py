#!/usr/bin/env python3
"""What a flood of wrong basic-auth passwords costs rdma_exporter.

The exporter runs with one basic-auth user (bcrypt cost 10, made by
htpasswd) over plain HTTP, on the sysfs fixture (8 mlx5-like devices,
written by build/tests/sysfs_tree or --sysfs-tree).
Flooders send requests with a wrong password as fast as the exporter answers
(each on a keep-alive connection of its own); meanwhile one scraper with the
right password scrapes every 0.2 s. Reported: wrong-password answers per
second, the exporter's CPU use during the flood (user + system time from
/proc/<pid>/stat, in cores), and the scraper's latency before and during the
flood.

Usage: bench/auth_flood.py [--flooders N] [--seconds S] [--exporter PATH]
                           [--sysfs-tree PATH]
"""
import argparse
import base64
import http.client
import os
import re
import statistics
import subprocess
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TICK = os.sysconf("SC_CLK_TCK")
PASSWORD = "benchmark password"


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def auth(user, password):
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def request(conn, headers):
    conn.request("GET", "/metrics", headers=headers)
    resp = conn.getresponse()
    resp.read()
    return resp.status


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flooders", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--exporter", default=os.path.join(ROOT, "build", "rdma_exporter"))
    ap.add_argument("--sysfs-tree", default=os.path.join(ROOT, "build", "tests", "sysfs_tree"))
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="rdma_flood_")
    sysfs = os.path.join(work, "sys")
    subprocess.run([args.sysfs_tree, sysfs, "mlx5:8:2"], check=True)
    hashed = subprocess.run(["htpasswd", "-nbBC", "10", "", PASSWORD], capture_output=True,
                            text=True, check=True).stdout.strip().lstrip(":")
    with open(os.path.join(work, "web.yml"), "w") as f:
        f.write(f"basic_auth_users:\n  prom: {hashed}\n")
    with open(os.path.join(work, "rdma.yml"), "w") as f:
        f.write(f"sysfs: {{root: {sysfs}}}\ncollection: {{max_age: 0s}}\n"
                "web: {max_connections: 64}\n")
    proc = subprocess.Popen([args.exporter, "--web.listen-address", "127.0.0.1:0",
                             "--config.file", os.path.join(work, "rdma.yml"),
                             "--web.config.file", os.path.join(work, "web.yml")],
                            stderr=subprocess.PIPE, text=True)
    port = None
    for line in proc.stderr:
        m = re.search(r"listening on\" address=\S+:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()

    good = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    assert request(good, auth("prom", PASSWORD)) == 200  # the one bcrypt check it pays

    def scrape_for(seconds):
        latencies = []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            t = time.perf_counter()
            assert request(good, auth("prom", PASSWORD)) == 200
            latencies.append((time.perf_counter() - t) * 1000)
            time.sleep(0.2)
        return latencies

    quiet = scrape_for(3)

    stop = threading.Event()
    answered = [0] * args.flooders

    def flood(i):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while not stop.is_set():
            if request(conn, auth("prom", f"guess {i}")) == 401:
                answered[i] += 1

    threads = [threading.Thread(target=flood, args=(i,)) for i in range(args.flooders)]
    for t in threads:
        t.start()
    time.sleep(1)  # let the queue fill
    cpu0, t0, n0 = cpu_seconds(proc.pid), time.monotonic(), sum(answered)
    loud = scrape_for(args.seconds)
    cpu1, t1, n1 = cpu_seconds(proc.pid), time.monotonic(), sum(answered)
    stop.set()
    for t in threads:
        t.join()
    proc.terminate()
    proc.wait()

    def p(values, q):
        return sorted(values)[min(len(values) - 1, int(q * len(values)))]

    print(f"flooders: {args.flooders}, flood window: {t1 - t0:.1f} s")
    print(f"wrong-password answers (401): {(n1 - n0) / (t1 - t0):.1f}/s")
    print(f"exporter CPU during the flood: {(cpu1 - cpu0) / (t1 - t0):.2f} cores")
    print(f"good scrape before: p50 {statistics.median(quiet):.1f} ms, "
          f"max {max(quiet):.1f} ms ({len(quiet)} scrapes)")
    print(f"good scrape during: p50 {statistics.median(loud):.1f} ms, "
          f"p90 {p(loud, 0.9):.1f} ms, max {max(loud):.1f} ms ({len(loud)} scrapes)")


if __name__ == "__main__":
    main()
