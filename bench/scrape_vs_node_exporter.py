#!/usr/bin/env python3
"""Scrape cost of rdma_exporter next to Debian's prometheus-node-exporter.

Both read the same sysfs fixture (by default 8 mlx5-like devices with 2 ports
each, and 128 one-port devices; written by build/tests/sysfs_tree, or the
tool --sysfs-tree names): the node exporter with only its infiniband
collector; rdma_exporter with every collector that works on a machine with
sysfs only and that node_exporter's collector has a counterpart for
(sysfs, and hw_counters reading the ports' hw_counters/ from sysfs; this
machine has no rdma netlink, and the fixture no netdevs for ethtool and
dcb; the pcie collector, which reads what node_exporter's infiniband
collector does not, is off), its own process metrics, and collection.max_age 0s, so
every scrape is a fresh collection. Each server is scraped sequentially,
gzip accepted as Prometheus does. Reported per scrape: wall time seen by the
client, and the CPU time (user + system) the server process spent, from
/proc/<pid>/task/*/schedstat (nanoseconds; /proc/<pid>/stat clock ticks
where schedstat is missing) before and after. With --before, a second
rdma_exporter binary (an older build) is measured in the same run.

The floors: build/bench/sysfs_read_floor reads the same attribute files
rdma_exporter reads (listed by walking the fixture the way its collectors
do), nothing else. "pread" keeps every file open and re-reads it with one
pread at offset 0, as rdma_exporter does: what a scrape costs that does
nothing but read its values. "open" opens, reads and closes every file: what
a scrape costs that opens every file anew.

The servers are measured in turns (--rounds), each turn every server once;
the median turn is reported.

Usage: bench/scrape_vs_node_exporter.py [--scrapes N] [--rounds R]
           [--exporter PATH] [--before PATH] [--trees mlx5:8:2,mlx5:128:1]
           [--sysfs-tree PATH]
"""
import argparse
import http.client
import os
import re
import shutil
import socket
import statistics
import subprocess
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
    """CPU time of every thread of `pid`, from schedstat (nanoseconds)."""
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        pass
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def ratio(a, b):
    """a / b, formatted; "-" when b is 0 (too few scrapes to see any CPU time)."""
    return f"{a / b:.2f}" if b > 0 else "-"


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
    return sum(1 for line in text.splitlines()
               if line.startswith(prefix) and not line.startswith("#"))


def attribute_files(tree):
    """The files rdma_exporter's sysfs and hw_counters collectors read, walked the same way."""
    root = os.path.join(tree, "class", "infiniband")
    files = []
    for dev in sorted(os.listdir(root)):
        d = os.path.join(root, dev)
        for name in ("fw_ver", "board_id", "hca_type", "node_desc"):
            if os.path.exists(os.path.join(d, name)):
                files.append(os.path.join(d, name))
        hw = os.path.join(d, "hw_counters")
        if os.path.isdir(hw):
            files += [os.path.join(hw, c) for c in sorted(os.listdir(hw)) if c != "lifespan"]
        ports = os.path.join(d, "ports")
        for p in sorted(os.listdir(ports)) if os.path.isdir(ports) else []:
            pd = os.path.join(ports, p)
            for name in ("rate", "link_layer"):
                if os.path.exists(os.path.join(pd, name)):
                    files.append(os.path.join(pd, name))
            counters = os.path.join(pd, "counters")
            if os.path.isdir(counters):
                files += [os.path.join(counters, c) for c in sorted(os.listdir(counters))]
            port_hw = os.path.join(pd, "hw_counters")
            if os.path.isdir(port_hw):
                files += [os.path.join(port_hw, c) for c in sorted(os.listdir(port_hw))
                          if c != "lifespan"]
    return files


def floor_ms(floor_bin, tree, passes, mode):
    listing = os.path.join(tree, "files.txt")
    files = attribute_files(tree)
    with open(listing, "w") as f:
        f.write("\n".join(files) + "\n")
    out = subprocess.run([floor_bin, listing, str(passes), mode], check=True,
                         capture_output=True, text=True).stdout
    return float(re.search(r"cpu_per_pass_ms (\S+)", out).group(1)), len(files)


def measure_tree(spec, args):
    tree = tempfile.mkdtemp(prefix="rdma_bench_sysfs_")
    subprocess.run([args.sysfs_tree, tree, spec], check=True)
    cfg = os.path.join(tree, "bench.yml")
    with open(cfg, "w") as f:
        f.write("collection: {max_age: 0s}\n"
                "collectors: {devices: false, resources: false, qp_counters: false,\n"
                "             optional_counters: false, ethtool: false, dcb: false,\n"
                "             pcie: false, link: false, sysfs: true, hw_counters: true}\n"
                "hw_counters: {source: sysfs}\n")

    exporters = {"rdma_exporter": args.exporter}
    if args.before:
        exporters = {"rdma_exporter (before)": args.before, "rdma_exporter": args.exporter}
    procs, ports = {}, {}
    try:
        for name, binary in exporters.items():
            ports[name] = free_port()
            procs[name] = subprocess.Popen(
                [binary, "--config.file", cfg, "--path.sysfs", tree,
                 "--web.listen-address", f"127.0.0.1:{ports[name]}", "--log.level", "error"])
        ports["node_exporter"] = free_port()
        procs["node_exporter"] = subprocess.Popen(
            ["prometheus-node-exporter", "--collector.disable-defaults", "--collector.infiniband",
             f"--path.sysfs={tree}", f"--web.listen-address=127.0.0.1:{ports['node_exporter']}",
             "--log.level=error"])
        for name in procs:
            wait_ready(ports[name])
        print(f"\nfixture {spec}: {args.scrapes} sequential scrapes per server and round, "
              f"{args.rounds} rounds")
        print("samples: rdma_exporter (all) =", count_samples(ports["rdma_exporter"], ""),
              "of which rdma_port_pma_* =",
              count_samples(ports["rdma_exporter"], "rdma_port_pma_"),
              "and rdma_port_hw_* =", count_samples(ports["rdma_exporter"], "rdma_port_hw_"),
              "; node_exporter node_infiniband_* =",
              count_samples(ports["node_exporter"], "node_infiniband_"))
        for name in procs:
            scrape_many(ports[name], procs[name].pid, 20)  # warm up
        rounds = {name: [] for name in procs}
        floors = {"pread": [], "open": []}
        for _ in range(args.rounds):
            for name in procs:
                walls, cpu, size = scrape_many(ports[name], procs[name].pid, args.scrapes)
                rounds[name].append((statistics.median(walls), statistics.mean(walls), cpu, size))
            for mode, runs in floors.items():
                runs.append(floor_ms(args.floor, tree, args.scrapes, mode))
        results = {name: sorted(r, key=lambda x: x[2])[len(r) // 2] for name, r in rounds.items()}
        floor = {mode: sorted(runs)[len(runs) // 2] for mode, runs in floors.items()}
        pread_ms = floor["pread"][0]
        node_cpu = results["node_exporter"][2]
        print(f"{'server':<25} {'wall p50 ms':>12} {'wall mean ms':>13} {'cpu/scrape ms':>14} "
              f"{'gzip bytes':>11} {'x pread':>8} {'x node':>7}")
        for name, (p50, mean, cpu, size) in results.items():
            print(f"{name:<25} {p50 * 1e3:12.3f} {mean * 1e3:13.3f} {cpu * 1e3:14.3f} {size:11d} "
                  f"{ratio(cpu * 1e3, pread_ms):>8} {ratio(cpu, node_cpu):>7}")
        for mode, label in (("pread", "floor (kept-open pread)"),
                            ("open", "floor (open/read/close)")):
            ms, files = floor[mode]
            print(f"{label:<25} {'':>12} {'':>13} {ms:14.3f} {'':>11} "
                  f"{ratio(ms, pread_ms):>8} {ratio(ms / 1e3, node_cpu):>7}   ({files} files)")
    finally:
        for p in procs.values():
            p.terminate()
            p.wait(10)
        shutil.rmtree(tree, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scrapes", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--exporter", default=os.path.join(ROOT, "build", "rdma_exporter"))
    ap.add_argument("--before", help="a second rdma_exporter binary, measured in the same run")
    ap.add_argument("--floor", default=os.path.join(ROOT, "build", "bench", "sysfs_read_floor"))
    ap.add_argument("--sysfs-tree", default=os.path.join(ROOT, "build", "tests", "sysfs_tree"),
                    help="the tool that writes the trees")
    ap.add_argument("--trees", default="mlx5:8:2,mlx5:128:1",
                    help="sysfs_tree specs, comma-separated")
    args = ap.parse_args()
    if args.scrapes < 1 or args.rounds < 1:
        ap.error("--scrapes and --rounds must be at least 1")
    for spec in args.trees.split(","):
        measure_tree(spec, args)


if __name__ == "__main__":
    main()
