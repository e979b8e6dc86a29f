#!/usr/bin/env python3
"""Writes the Grafana dashboards in this directory (rdma-*.json).

The JSON files are generated so that every dashboard uses the same
variables, selectors, legends and layout rules; edit the Python, run this
script, and commit both (a test checks that they agree):

    dashboards/generate.py            # rewrites dashboards/rdma-*.json
    dashboards/generate.py --check    # exit 1 if a file differs

Layout:
- generate.py: this script and DASHBOARDS, the table of file names and the
  functions that build them. A new dashboard is one row there and one
  module in boards/ (CMakeLists.txt's install list and
  tests/integration/dashboard_queries.py name the files too).
- boards/: one module per dashboard (fleet, port, congestion, workloads,
  latency, fabric, optics, pods), each with dashboard(), which returns the dashboard as a dict.
- panels/: the library the boards share: builders (the data source, queries,
  thresholds, value mappings, panel kinds, table transformations),
  variables, layout (Board: rows, grid positions, ids, the dashboard
  around the panels), promql (selectors, rates, every counter of a port)
  and ports (the port legend and states, counter and traffic panels).

Conventions:
- Every panel and query uses the data source variable `${datasource}` (no
  `__inputs`): the dashboards import as they are and follow whichever
  Prometheus the viewer picks.
- Selectors always carry `job` and `instance`; per-port panels also `device`
  and `port`. Multi-value variables with "All" use `.*`, so a fleet of any
  size does not expand into a huge regular expression.
- Rates use `$__rate_interval`; panels that summarise the time picker's range
  use `$__range`. Panels over every counter of a port use differences over
  `$__interval` (see panels/promql.py, all_counters).
Only the Python standard library is used.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# boards/ and panels/ are found next to this file whatever the working
# directory (and with python3 -P), and leave no __pycache__ behind.
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True

from boards import (congestion, fabric, fleet, group, latency, optics, overview, pods,  # noqa: E402
                    port, workloads)

DASHBOARDS = {
    "rdma-overview.json": overview.dashboard,
    "rdma-group.json": group.dashboard,
    "rdma-fleet.json": fleet.dashboard,
    "rdma-port.json": port.dashboard,
    "rdma-congestion.json": congestion.dashboard,
    "rdma-workloads.json": workloads.dashboard,
    "rdma-latency.json": latency.dashboard,
    "rdma-fabric.json": fabric.dashboard,
    "rdma-optics.json": optics.dashboard,
    "rdma-pods.json": pods.dashboard,
}


def render(build):
    return json.dumps(build(), indent=2, ensure_ascii=False) + "\n"


def main(argv):
    check = argv[1:] == ["--check"]
    if argv[1:] and not check:
        sys.stderr.write(__doc__)
        return 2
    stale = []
    for name, build in DASHBOARDS.items():
        path = os.path.join(HERE, name)
        text = render(build)
        try:
            with open(path, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = None
        if current == text:
            continue
        if check:
            stale.append(name)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"wrote {path}")
    if stale:
        print("out of date (run dashboards/generate.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
