#!/usr/bin/env python3
"""Scrape cost of rdma_exporter next to Debian's prometheus-node-exporter.

Both read the same sysfs fixture (8 mlx5-like devices, 2 ports each): the
node exporter with only its infiniband collector, rdma_exporter with only its
sysfs collector (this machine has no rdma netlink) and collection.max_age 0s,
so every scrape is a fresh collection. Each server is scraped sequentially,
gzip accepted as Prometheus does. Reported per scrape: wall time seen by the
client, and the CPU time (user + system) the server process spent, read from
/proc/<pid>/stat before and after.

Usage: bench/scrape_vs_node_exporter.py [--scrapes N] [--exporter PATH]
"""
import argparse
import http.client
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def wait_ready(port, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/metrics")
            conn.getresponse().read()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing answers on port {port}")


def scrape_many(port, pid, n):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    walls = []
    body = b""
    cpu0 = cpu_seconds(pid)
    for _ in range(n):
        t0 = time.perf_counter()
        conn.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
        resp = conn.getresponse()
        body = resp.read()
        walls.append(time.perf_counter() - t0)
        if resp.status != 200:
            raise RuntimeError(f"status {resp.status}")
    cpu = cpu_seconds(pid) - cpu0
    conn.close()
    return walls, cpu / n, len(body)


def count_samples(port, prefix):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    return sum(1 for line in text.splitlines() if line.startswith(prefix))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scrapes", type=int, default=500)
    ap.add_argument("--exporter", default=os.path.join(ROOT, "build", "rdma_exporter"))
    args = ap.parse_args()

    tree = tempfile.mkdtemp(prefix="rdma_bench_sysfs_")
    subprocess.run([sys.executable, os.path.join(ROOT, "tests/fixtures/sysfs_tree.py"), tree,
                    "mlx5:8:2"], check=True)
    cfg = os.path.join(tree, "bench.yml")
    with open(cfg, "w") as f:
        f.write("collection: {max_age: 0s}\n"
                "collectors: {devices: false, hw_counters: false, resources: false}\n")

    rport, nport = free_port(), free_port()
    procs = {
        "rdma_exporter": subprocess.Popen(
            [args.exporter, "--config.file", cfg, "--path.sysfs", tree,
             "--web.listen-address", f"127.0.0.1:{rport}", "--log.level", "error"]),
        "node_exporter": subprocess.Popen(
            ["prometheus-node-exporter", "--collector.disable-defaults", "--collector.infiniband",
             f"--path.sysfs={tree}", f"--web.listen-address=127.0.0.1:{nport}",
             "--log.level=error"]),
    }
    ports = {"rdma_exporter": rport, "node_exporter": nport}
    try:
        for name in procs:
            wait_ready(ports[name])
        print(f"fixture: 8 mlx5-like devices x 2 ports, {args.scrapes} sequential scrapes each")
        print("samples: rdma_exporter rdma_port_pma_* =",
              count_samples(rport, "rdma_port_pma_"),
              "; node_exporter node_infiniband_* =", count_samples(nport, "node_infiniband_"))
        results = {}
        for name in procs:
            scrape_many(ports[name], procs[name].pid, 20)  # warm up
            walls, cpu, size = scrape_many(ports[name], procs[name].pid, args.scrapes)
            results[name] = (statistics.median(walls), statistics.mean(walls), cpu, size)
        print(f"{'server':<15} {'wall p50 ms':>12} {'wall mean ms':>13} {'cpu/scrape ms':>14} {'gzip bytes':>11}")
        for name, (p50, mean, cpu, size) in results.items():
            print(f"{name:<15} {p50 * 1e3:12.3f} {mean * 1e3:13.3f} {cpu * 1e3:14.3f} {size:11d}")
        r, n = results["rdma_exporter"], results["node_exporter"]
        print(f"ratio node_exporter / rdma_exporter: wall p50 {n[0] / r[0]:.2f}x, "
              f"cpu {n[2] / r[2] if r[2] > 0 else float('inf'):.2f}x")
    finally:
        for p in procs.values():
            p.terminate()
            p.wait(10)


if __name__ == "__main__":
    main()
