"""Time per /metrics request with and without collect[]/exclude[].

Runs tests/fake_rdma_host (the exporter's collection and HTTP server over the
fake kernel and a sysfs fixture: the golden exposition's host) and scrapes it
over one keep-alive connection, each path N times, plain and with gzip.

    python3 bench/filtered_scrapes.py [--build build] [--requests 300]
"""
import argparse
import http.client
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import harness  # noqa: E402
from harness import make_proc, make_sysfs  # noqa: E402
from test_golden import PROCESSES, SYSFS  # noqa: E402

PATHS = ["/metrics", "/metrics?collect[]=sysfs", "/metrics?exclude[]=sysfs",
         "/metrics?collect[]=qp_counters"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--requests", type=int, default=300)
    args = ap.parse_args()
    harness.SYSFS_TREE_BIN = os.path.join(args.build, "tests", "sysfs_tree")
    # The harness's Exporter finds the port in the "listening on" line (the
    # same pattern as the integration tests), fails after 15 s instead of
    # waiting forever, and keeps reading the log so the pipe never fills.
    host = harness.Exporter("--path.sysfs", make_sysfs(SYSFS), "--path.proc", make_proc(PROCESSES),
                            binary=os.path.join(args.build, "tests", "fake_rdma_host"))
    port = host.port
    try:
        print("| request | gzip | ms per request | body |")
        print("|---|---|---|---|")
        for path in PATHS:
            for gz in (False, True):
                conn = http.client.HTTPConnection("127.0.0.1", port)
                headers = {"Accept-Encoding": "gzip"} if gz else {}
                start = time.perf_counter()
                for _ in range(args.requests):
                    conn.request("GET", path, headers=headers)
                    resp = conn.getresponse()
                    body = resp.read()
                    assert resp.status == 200, resp.status
                elapsed = (time.perf_counter() - start) / args.requests * 1e3
                conn.close()
                print(f"| `{path}` | {'yes' if gz else 'no'} | {elapsed:.2f} | {len(body):,} B |")
    finally:
        host.stop()


if __name__ == "__main__":
    main()
