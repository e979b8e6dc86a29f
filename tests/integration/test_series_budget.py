"""The series budget of docs/metrics.md ("Series per host"), counted.

fake_rdma_host --rnics 8 is the rail host the table describes: the fake
kernel as 8 single-port mlx5 RoCE RNICs, the exporter's own collection of
them (with a sysfs tree of 8 mlx5 devices and their netdevs' carrier files),
and the probe's own statistics of a fleet-mode host (--probe-pairs 31,4).
Its exposition is counted per section of docs/metrics.md (each series by the
section that documents its metric) and compared with the table's rows, for
8 processes and for 130 (more counter sets than qp_counters.max_series).
A row the exposition does not match, a section with series but no row, or a
wrong total fails.
"""
import collections
import os
import re
import subprocess
import unittest

from harness import SOURCE_DIR, add_netdevs, make_proc, make_sysfs
from metrics_doc import MetricsDoc

FAKE_HOST_BIN = os.environ.get("RDMA_FAKE_HOST_BIN",
                               os.path.join(SOURCE_DIR, "build", "tests", "fake_rdma_host"))
METRICS_MD = os.path.join(SOURCE_DIR, "docs", "metrics.md")
RNICS = 8
COLUMNS = {8: "8 processes", 130: "130 processes"}


def budget_table():
    """{column header: {section: series}} and the totals, from the table
    under "## Series per host"."""
    with open(METRICS_MD, encoding="utf-8") as f:
        text = f.read()
    part = text.split("## Series per host", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in part.splitlines() if line.startswith("|")]
    header, body = rows[0], rows[2:]
    table, totals = {h: {} for h in COLUMNS.values()}, {}
    for row in body:
        link = re.fullmatch(r"\[([^\]]+)\]\(#[^)]+\)", row[0])
        for column in COLUMNS.values():
            value = int(row[header.index(column)].replace(",", ""))
            if row[0] == "total":
                totals[column] = value
            else:
                if link is None:
                    raise AssertionError(f"budget row {row[0]!r} links no section")
                table[column][link.group(1)] = value
    return table, totals


def rail_host_exposition(processes, pair_series="all"):
    sysfs = make_sysfs(f"mlx5:{RNICS}:1")
    add_netdevs(sysfs, {f"ens{i + 1}np0": (1, 1 + i, i) for i in range(RNICS)})
    proc = make_proc({1000 + p: (f"rank{p}", f"/kubepods.slice/pod-{p}/ctr")
                      for p in range(processes)})
    r = subprocess.run([FAKE_HOST_BIN, "--once", "--rnics", str(RNICS), "--processes",
                        str(processes), "--probe-pairs", "31,4", "--pair-series", pair_series,
                        "--path.sysfs", sysfs,
                        "--path.proc", proc],
                       capture_output=True, text=True, timeout=120, check=False)
    if r.returncode != 0:
        raise AssertionError(f"fake_rdma_host exited {r.returncode}: {r.stderr}")
    return r.stdout


def count_by_section(exposition, doc):
    counts, undocumented = collections.Counter(), []
    for line in exposition.splitlines():
        if not line or line.startswith("#"):
            continue
        name = re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line).group(0)
        section = doc.section_of(name)
        if section is None:
            undocumented.append(name)
        counts[section] += 1
    return counts, undocumented


class SeriesBudgetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.doc = MetricsDoc(METRICS_MD)
        cls.table, cls.totals = budget_table()

    def check(self, processes):
        column = COLUMNS[processes]
        counts, undocumented = count_by_section(rail_host_exposition(processes), self.doc)
        self.assertEqual(undocumented, [])
        want = self.table[column]
        for section, n in want.items():
            with self.subTest(section=section, processes=processes):
                self.assertEqual(counts.get(section, 0), n)
        self.assertEqual(sorted(s for s in counts if s not in want), [],
                         "sections with series but no row in the budget")
        self.assertEqual(sum(counts.values()), self.totals[column])
        self.assertEqual(sum(want.values()), self.totals[column], "the table's own sum")

    def test_eight_processes(self):
        self.check(8)

    def test_counter_sets_at_the_cap(self):
        self.check(130)

    def test_the_probe_stays_within_its_fleet_bound(self):
        # The fleet mode's promise (docs/probe.md): at most 2,000 series per
        # host with the defaults, whatever the fleet's size.
        self.assertLessEqual(self.table[COLUMNS[8]]["Latency probe"], 2000)

    def test_sparse_pairs_leave_the_probe_without_its_pair_series(self):
        # probe.pair_series: failing in a healthy fleet: no series per pair,
        # the figure docs/probe.md ("Pair series") gives.
        with open(os.path.join(SOURCE_DIR, "docs", "probe.md"), encoding="utf-8") as f:
            m = re.search(r"healthy fleet's host exports ([\d,]+) probe series", f.read())
        self.assertIsNotNone(m, "docs/probe.md gives no figure for probe.pair_series: failing")
        exposition = rail_host_exposition(8, "failing")
        counts, _ = count_by_section(exposition, self.doc)
        self.assertEqual(counts["Latency probe"], int(m.group(1).replace(",", "")))
        pair = re.compile(r"^rdma_probe_(sent|timeouts)_total\{.*remote_device=", re.M)
        self.assertIsNone(pair.search(exposition))


if __name__ == "__main__":
    unittest.main()
