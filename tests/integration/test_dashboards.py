"""The Grafana dashboards (dashboards/*.json).

DashboardStructureTest reads the JSON: generated from dashboards/generate.py,
importable (schema version, unique ids, data source references, variables),
every panel with a unit and a description, every metric documented in
docs/metrics.md.

DashboardQueriesTest proves the queries on real data: Debian's Prometheus
scrapes, every second, two exporters on loopback:
- the rdma_exporter binary on a sysfs fixture tree (this host has no RDMA,
  so rdma netlink is unavailable: sysfs data and the exporter's own);
- fake_rdma_host: the exporter's collection and HTTP server in front of the
  fake nldev kernel (mlx5 RoCE and InfiniBand ports, a Soft-RoCE port,
  per-QP counter sets of four processes, traffic that keeps flowing).
It also loads the alerting rules. Once every target has been scraped for a
while, the variables are resolved the way Grafana resolves them (label_values
through the HTTP API, each variable with the values of the ones before), and
every query of every panel is evaluated through /api/v1/query with "All" and
with every concrete combination of values (dashboard_queries.py). An error
fails the test; so does a query that returns nothing with "All" or with every
combination, unless its panel is in NEEDS_HARDWARE (the needs-hardware list in
dashboard_queries.py), which the test prints when it is used.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import yaml

from dashboard_queries import (DASHBOARD_DIR, DASHBOARDS, DATASOURCE_REF, LABEL_VALUES_RE,
                               Evaluation, load, panels, prometheus_config, substitute,
                               variable_query, variables, wait_for_data)
from harness import (FAKE_HOST_BIN, FAKE_HOST_NETDEVS, SOURCE_DIR, Exporter, Prometheus,
                     NodeApi, add_netdevs, free_port, make_proc, make_sysfs, promtool,
                     rule_files)
from metrics_doc import MetricsDoc, metric_names

# The needs-hardware list: panels whose queries may return nothing here,
# because nothing on this test bed produces their metrics. (dashboard, panel
# title or "*") -> why. Printed whenever it is used; an entry that is not
# needed any more fails the test.
NEEDS_HARDWARE = {
    ("rdma-latency.json", "*"):
        "the verbs latency probe, which needs an RDMA device (vm.dashboards runs it on "
        "Soft-RoCE); here only its responder runs",
    ("rdma-overview.json", "*"):
        "the probe's groups and rails for the rollups to place ports in, and culprits "
        "(OverviewBoardTest evaluates every panel on the rollup rules' hand-worked series)",
    ("rdma-group.json", "*"):
        "the probe's groups and rails for the rollups to place hosts in (OverviewBoardTest "
        "evaluates every panel on the rollup rules' hand-worked series)",
    ("rdma-fabric.json", "*"):
        "UD probes between hosts for the culprit rules to record from (FabricBoardTest "
        "evaluates the board on a culprit's series; vm.bed_ud on the VM bed's)",
}
# Boards that read only the records of config/prometheus's rules, never an
# exporter's series: they have no job or instance variable.
RULE_BOARDS = ("rdma-fabric.json", "rdma-overview.json", "rdma-group.json")


def recorded_names():
    """Every `record:` of the shipped rule files."""
    names = set()
    for f in os.listdir(os.path.join(SOURCE_DIR, "config/prometheus")):
        if f.startswith("rdma-") and f.endswith(".yml"):
            with open(os.path.join(SOURCE_DIR, "config/prometheus", f)) as fh:
                names |= {r["record"] for g in yaml.safe_load(fh)["groups"]
                          for r in g["rules"] if "record" in r}
    return names

# Two of the processes are pods' (containerd under the systemd cgroup
# driver, and the cgroupfs driver), named by the node API below.
POD_A_UID = "0f3c1a2b-4d5e-4f60-8a9b-0c1d2e3f4a5b"
POD_B_UID = "11112222-3333-4444-5555-666677778888"
CONTAINER_A = "5d1e0c4b2a39f8e7d6c5b4a3928170f6e5d4c3b2a1908f7e6d5c4b3a29180f7e"
CONTAINER_B = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f91"
PROCESSES = {100: ("python3",
                   "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
                   + POD_A_UID.replace("-", "_") + f".slice/cri-containerd-{CONTAINER_A}.scope"),
             101: ("python3", f"/kubepods/besteffort/pod{POD_B_UID}/{CONTAINER_B}"),
             200: ("spdk_tgt", "/system.slice/spdk.service"),
             300: ("ib_write_bw", "/user.slice/user-1000.slice/session-3.scope")}

NODE_STATE = {
    "containers": [
        {"id": CONTAINER_A, "pod_uid": POD_A_UID, "namespace": "train", "pod": "job-a",
         "container": "worker"},
        {"id": CONTAINER_B, "pod_uid": POD_B_UID, "namespace": "store", "pod": "cache-b",
         "container": "server"}],
    # mlx5_1's PCI function (the sysfs tree's 0000:11:00.0) to job-a, rxe0
    # by name to cache-b.
    "pods": [
        {"namespace": "train", "pod": "job-a",
         "containers": [{"name": "worker", "devices": [
             {"resource": "example.com/rdma_vf", "ids": ["0000:11:00.0"]}]}]},
        {"namespace": "store", "pod": "cache-b",
         "containers": [{"name": "server", "devices": [
             {"resource": "example.com/rdma", "ids": ["rxe0"]}]}]}],
    # What the node can allocate: both of the above, and mlx5_0 by name, free.
    "allocatable": [{"resource": "example.com/rdma_vf", "ids": ["0000:11:00.0"]},
                    {"resource": "example.com/rdma", "ids": ["rxe0", "mlx5_0"]}]}


class DashboardStructureTest(unittest.TestCase):
    def test_generated_files_are_up_to_date(self):
        r = subprocess.run([sys.executable, os.path.join(DASHBOARD_DIR, "generate.py"), "--check"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        on_disk = sorted(f for f in os.listdir(DASHBOARD_DIR) if f.endswith(".json"))
        self.assertEqual(on_disk, sorted(DASHBOARDS))

    def test_importable_dashboards(self):
        uids = set()
        for name in DASHBOARDS:
            with self.subTest(dashboard=name):
                d = load(name)
                self.assertEqual(d["schemaVersion"], 39)
                self.assertIsNone(d["id"])
                self.assertNotIn("__inputs", d)
                self.assertRegex(d["uid"], r"^[a-z0-9-]{1,40}$")
                self.assertNotIn(d["uid"], uids)
                uids.add(d["uid"])
                self.assertTrue(d["title"].startswith("RDMA / "))
                self.assertIn("rdma", d["tags"])
                titles = [p["title"] for p in panels(d) if p["type"] != "row"]
                self.assertEqual(len(titles), len(set(titles)),
                                 "panel titles are unique (the needs-hardware lists use them)")
                ids = [p["id"] for p in panels(d)]
                self.assertEqual(len(ids), len(set(ids)), "panel ids are unique")
                self.assertTrue(all(isinstance(i, int) and i > 0 for i in ids))
                self.check_layout(d)
                self.check_variables(d, rules_only=name in RULE_BOARDS)
                for p in panels(d):
                    self.check_panel(p)

    def check_layout(self, d):
        cells = set()
        for p in panels(d):
            g = p["gridPos"]
            self.assertTrue(0 <= g["x"] and g["w"] > 0 and g["x"] + g["w"] <= 24, p["title"])
            self.assertTrue(g["y"] >= 0 and g["h"] > 0, p["title"])
            mine = {(x, y) for x in range(g["x"], g["x"] + g["w"])
                    for y in range(g["y"], g["y"] + g["h"])}
            self.assertFalse(cells & mine, f"panel {p['title']!r} overlaps another")
            cells |= mine

    def check_variables(self, d, rules_only):
        vs = variables(d)
        names = [v["name"] for v in vs]
        self.assertEqual(len(names), len(set(names)))
        self.assertEqual(vs[0], {**vs[0], "name": "datasource", "type": "datasource",
                                 "query": "prometheus"})
        for v in vs[1:]:
            self.assertEqual(v["type"], "query", v["name"])
            self.assertEqual(v["datasource"], DATASOURCE_REF, v["name"])
            self.assertRegex(variable_query(v), LABEL_VALUES_RE, v["name"])
            self.assertEqual(v.get("definition"), variable_query(v))
            # A variable only refers to the ones defined before it.
            _, unknown = substitute(variable_query(v), {}, set(names[:names.index(v["name"])]))
            self.assertEqual(unknown, set(), v["name"])
        if not rules_only:
            self.assertTrue({"job", "instance"} <= set(names))
            return
        # A board over the rules' records reads nothing else (it costs the
        # same at any fleet size) and filters by what the records carry.
        exprs = [t["expr"] for p in panels(d) for t in p.get("targets", [])]
        exprs += [LABEL_VALUES_RE.match(variable_query(v)).group(1) for v in vs[1:]]
        for expr in exprs:
            read, _ = metric_names(expr)
            self.assertTrue(read, expr)
            self.assertEqual([n for n in read if ":" not in n], [], expr)

    def check_panel(self, p):
        title = p.get("title", "")
        if p["type"] == "row":
            self.assertNotIn("targets", p)
            return
        self.assertIn(p["type"], {"timeseries", "stat", "table", "bargauge", "state-timeline",
                                  "heatmap"}, title)
        self.assertTrue(title, p["id"])
        self.assertGreater(len(p.get("description", "")), 20, title)
        self.assertEqual(p["datasource"], DATASOURCE_REF, title)
        unit = p["fieldConfig"]["defaults"].get("unit")
        # Grafana's unit ids: rates, time, counts, and the physical units of
        # the modules' monitors.
        self.assertIn(unit, {"Bps", "bps", "pps", "cps", "reqps", "percentunit", "s", "short",
                             "none", "watt", "amp", "celsius", "volt", "dB"}, title)
        refs = [t["refId"] for t in p["targets"]]
        self.assertTrue(refs, title)
        self.assertEqual(len(refs), len(set(refs)), title)
        for t in p["targets"]:
            self.assertEqual(t["datasource"], DATASOURCE_REF, title)
            self.assertTrue(t["expr"].strip(), title)
        for o in p["fieldConfig"]["overrides"]:
            if o["matcher"]["id"] == "byFrameRefID":
                self.assertIn(o["matcher"]["options"], refs, title)

    def test_grafana_provisioning_example_points_at_the_installed_dashboards(self):
        with open(os.path.join(SOURCE_DIR, "config/grafana/rdma_exporter-dashboards.yml")) as f:
            provisioning = yaml.safe_load(f)
        self.assertEqual(provisioning["apiVersion"], 1)
        (provider,) = provisioning["providers"]
        self.assertEqual(provider["type"], "file")
        self.assertEqual(provider["options"]["path"], "/usr/share/rdma_exporter/dashboards")

    def test_queries_use_only_defined_variables(self):
        for name in DASHBOARDS:
            d = load(name)
            defined = {v["name"] for v in variables(d)}
            for p in panels(d):
                for t in p.get("targets", []):
                    _, unknown = substitute(t["expr"], {}, defined)
                    self.assertEqual(unknown, set(), f"{name}: {p['title']}: {t['expr']}")

    def test_every_metric_is_documented(self):
        """Every series a query reads is in docs/metrics.md, or recorded by a
        shipped rule (the names with a colon)."""
        doc = MetricsDoc(os.path.join(SOURCE_DIR, "docs/metrics.md"))
        records = recorded_names()
        problems = []
        for name in DASHBOARDS:
            d = load(name)
            exprs = [(p["title"], t["expr"]) for p in panels(d) for t in p.get("targets", [])]
            exprs += [(f"variable {v['name']}", LABEL_VALUES_RE.match(variable_query(v)).group(1))
                      for v in variables(d)[1:]]
            for title, expr in exprs:
                names, regexes = metric_names(expr)
                if not names and not regexes:
                    problems.append(f"{name}: {title}: no metric found in {expr}")
                found = [doc.problem(n) if ":" not in n else None if n in records
                         else f"{n} is recorded by no rule of config/prometheus" for n in names]
                found += [doc.name_regex_problem(r) for r in regexes]
                problems += [f"{name}: {title}: {p}" for p in found if p]
        self.assertEqual(problems, [])

    def test_the_name_check_catches_typos(self):
        doc = MetricsDoc(os.path.join(SOURCE_DIR, "docs/metrics.md"))
        names, _ = metric_names('sum by (device) (rate(rdma_port_hw_out_of_sequense_total'
                                '{job=~"$job"}[5m])) / on (device) rdma_port_sate')
        self.assertEqual(names, ["rdma_port_hw_out_of_sequense_total", "rdma_port_sate"])
        self.assertTrue(all(doc.problem(n) for n in names))
        self.assertIsNone(doc.problem("rdma_port_hw_out_of_sequence_total"))
        self.assertIsNone(doc.problem("rdma_port_pma_unicast_xmit_packets_total"))
        self.assertIsNotNone(doc.name_regex_problem("rdma_port_.+"))


# Probe series of two exporters for the UD panels of the latency dashboard,
# one sample a minute from 0 to 10m (promtool's clock starts at 0). h1 is in
# rack r1, h2 in r2 (rdma_probe_pinglist_info). Pairs: (exporter, local
# port, rail, target and its rack, class): sent, timeouts and last success.
UD_PAIR = ('job="rdma_exporter", instance="{instance}", target="{target}", device="{device}", '
           'port="1", remote_device="{device}", remote_port="1", rail="{rail}", op="{op}", '
           'size="64", tclass="{tclass}", rack="{rack}"')
RAIL0, RAIL1 = "192.168.100.0/24", "192.168.101.0/24"
UD_PAIRS = [
    # h1 -> its own rack: answers everything.
    (dict(instance="h1:10910", target="10.0.0.2:10911", device="mlx5_0", rail=RAIL0, op="ud",
          tclass="0", rack="r1"), "0+60x10", "0x10", "0+60x10"),
    # h1 -> rack r2: 10% lost, all of it on path 1.
    (dict(instance="h1:10910", target="10.0.1.5:10911", device="mlx5_0", rail=RAIL0, op="ud",
          tclass="0", rack="r2"), "0+60x10", "0+6x10", "0+60x10"),
    # h2 -> its own rack: 5% lost.
    (dict(instance="h2:10910", target="10.0.1.6:10911", device="mlx5_0", rail=RAIL0, op="ud",
          tclass="0", rack="r2"), "0+60x10", "0+3x10", "0+60x10"),
    # h2 -> rack r1: nothing answered since 2m (480 of 600 lost).
    (dict(instance="h2:10910", target="10.0.0.3:10911", device="mlx5_0", rail=RAIL0, op="ud",
          tclass="0", rack="r1"), "0+60x10", "0 0 0 60+60x7", "0 60 120x9"),
    # h1 -> its own rack, another rail: answers everything.
    (dict(instance="h1:10910", target="10.0.0.2:10911", device="mlx5_1", rail=RAIL1, op="ud",
          tclass="0", rack="r1"), "0+60x10", "0x10", "0+60x10"),
    # An RC class, h1 -> its own rack: half lost. Not in the UD panels.
    (dict(instance="h1:10910", target="10.0.0.2:10911", device="mlx5_0", rail=RAIL0, op="write",
          tclass="106", rack="r1"), "0+60x10", "0+30x10", "0+60x10"),
]
UD_PORT = ('job="rdma_exporter", instance="h1:10910", device="mlx5_0", port="1", '
           'rail="192.168.100.0/24", op="ud", size="64", tclass="0", clock="device"')


def ud_input_series():
    series = [
        ('rdma_probe_pinglist_info{job="rdma_exporter", instance="h1:10910", group="r1", '
         'listed="true"}', "1x10"),
        ('rdma_probe_pinglist_info{job="rdma_exporter", instance="h2:10910", group="r2", '
         'listed="true"}', "1x10"),
        ('rdma_probe_path_timeouts_total{' + UD_PAIR.format(**UD_PAIRS[1][0]) + ', path="1"}',
         "_ 6+6x9"),
        ('rdma_probe_ud_dropped_total{job="rdma_exporter", instance="h1:10910", device="mlx5_0", '
         'port="1", reason="not_admitted"}', "0+30x10"),
    ]
    for labels, sent, lost, success in UD_PAIRS:
        pair = UD_PAIR.format(**labels)
        series += [(f"rdma_probe_sent_total{{{pair}}}", sent),
                   (f"rdma_probe_timeouts_total{{{pair}}}", lost),
                   (f"rdma_probe_last_success_timestamp_seconds{{{pair}}}", success)]
    # Network round trip to other racks: half the probes up to 1 ms, the
    # rest up to 2 ms; within the rack all up to 1 ms. Responder and prober
    # delay: all up to 100 us.
    buckets = [("rdma_probe_group_latency_seconds", ', scope="remote"',
                (("0.001", 50), ("0.002", 100), ("+Inf", 100))),
               ("rdma_probe_group_latency_seconds", ', scope="group"',
                (("0.001", 100), ("0.002", 100), ("+Inf", 100))),
               ("rdma_probe_responder_delay_seconds", "", (("0.0001", 100), ("+Inf", 100))),
               ("rdma_probe_prober_delay_seconds", "", (("0.0001", 100), ("+Inf", 100)))]
    for name, extra, counts in buckets:
        series += [(f'{name}_bucket{{{UD_PORT}{extra}, le="{le}"}}', f"0+{n}x10")
                   for le, n in counts]
    return [{"series": name, "values": values} for name, values in series]


def promtool_test(interval, input_series, tests, rules=()):
    """`promtool test rules` of TESTS (promql_expr_test entries) on
    INPUT_SERIES, with the rule files RULES evaluated first, in order."""
    if promtool() is None:
        raise RuntimeError("promtool not found (scripts/setup installs prometheus)")
    work = tempfile.mkdtemp(prefix="rdma_panels_")
    try:
        names = []
        for path in rules:
            shutil.copy(path, work)
            names.append(os.path.basename(path))
        with open(os.path.join(work, "panels.test.yml"), "w") as f:
            yaml.safe_dump({"rule_files": names, "evaluation_interval": interval,
                            "tests": [{"interval": interval, "input_series": input_series,
                                       "promql_expr_test": tests}]}, f)
        return subprocess.run([promtool(), "test", "rules", "panels.test.yml"], cwd=work,
                              capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(work)


def pair_labels(i, *names):
    labels = dict(UD_PAIRS[i][0], port="1", remote_device=UD_PAIRS[i][0]["device"],
                  remote_port="1")
    return "{" + ", ".join(f'{n}="{labels[n]}"' for n in names) + "}"


WORST = ("instance", "device", "port", "target", "rack", "remote_device", "remote_port")
PORT_H1 = '{instance="h1:10910", device="mlx5_0", port="1"'
# Panel title, query (refId) -> expected samples at 10m, with $__range 10m,
# $__rate_interval 2m and every variable at "All". Worked out by hand from
# the series above.
UD_EXPECTED = {
    ("Loss, rack × rack", "A"): [
        # r1 -> r1: 300 lost (the RC class) of 1800 sent (two UD pairs, RC).
        ('{group="r1", rack="r1"}', 300 / 1800),
        ('{group="r1", rack="r2"}', 0.1),
        ('{group="r2", rack="r2"}', 0.05),
        ('{group="r2", rack="r1"}', 0.8)],
    ("Worst NIC pairs by UD loss", "A"): [
        (pair_labels(3, *WORST), 0.8), (pair_labels(1, *WORST), 0.1),
        (pair_labels(2, *WORST), 0.05), (pair_labels(0, *WORST), 0),
        (pair_labels(4, *WORST), 0)],
    ("UD pairs not answering", "A"): [("{}", 1)],
    ("NIC pairs not answering", "B"): [(f'{{rail="{RAIL0}"}}', 1), (f'{{rail="{RAIL1}"}}', 0)],
    ("Lost UD probes by path", "A"): [
        (pair_labels(1, "instance", "device", "target", "remote_device")[:-1] + ', path="1"}',
         0.1)],
    ("UD datagrams dropped by reason", "A"): [(PORT_H1 + ', reason="not_admitted"}', 0.5)],
    ("UD network round trip per port and scope", "A"): [
        (PORT_H1 + ', scope="remote"}', 0.001), (PORT_H1 + ', scope="group"}', 0.0005)],
    ("UD network round trip per port and scope", "B"): [
        (PORT_H1 + ', scope="remote"}', 0.00198), (PORT_H1 + ', scope="group"}', 0.00099)],
    # p99 of one bucket from 0 to 100 us: 99% of its width.
    ("Responder delay", "B"): [(PORT_H1 + "}", 0.0001 * 0.99)],
    ("Prober delay", "B"): [(PORT_H1 + "}", 0.0001 * 0.99)],
}


class UdPanelsOnSyntheticDataTest(unittest.TestCase):
    """The latency dashboard's UD, rack and pinglist queries need an RDMA
    device to have data (DashboardQueriesTest only checks that they
    evaluate); here promtool evaluates them on hand-written series of two
    exporters in two racks and compares with hand-worked results."""

    def test_ud_panels_compute_what_their_descriptions_say(self):
        d = load("rdma-latency.json")
        names = {v["name"] for v in variables(d)}
        assignment = {"job": "rdma_exporter", **{n: ".*" for n in names if n != "job"}}
        by_title = {p["title"]: p for p in panels(d)}
        tests = []
        for (title, ref), samples in UD_EXPECTED.items():
            (t,) = [t for t in by_title[title]["targets"] if t["refId"] == ref]
            expr = t["expr"].replace("$__range", "10m").replace("$__rate_interval", "2m")
            expr, unknown = substitute(expr, assignment, names)
            self.assertEqual(unknown, set(), title)
            tests.append({"expr": expr, "eval_time": "10m",
                          "exp_samples": [{"labels": labels, "value": value}
                                          for labels, value in samples]})
        r = promtool_test("1m", ud_input_series(), tests)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


# The fabric board on the series of a dead RNIC (b2's mlx5_0, of groups A and
# B of two hosts each, one rail): the first case of
# tests/alerts/rdma-culprits.test.yml, whose comments work out its records.
# Panel title, query (refId) -> samples at 5m, every variable at "All".
FABRIC_CASE = "a dead RNIC is named, and its peers are not"
B2 = 'host="b2:10911", device="mlx5_0", group="B", rail="r0"'


def rnic(host, group):
    return f'host="{host}:10911", device="mlx5_0", group="{group}", rail="r0"'


def pair(prober, group, target, target_group):
    return (f'{{host="{prober}:10911", group="{group}", device="mlx5_0", rail="r0", '
            f'target="{target}:10911", target_group="{target_group}", remote_device="mlx5_0"}}')


FABRIC_EXPECTED = {
    ("Culprits", "A"): [("{}", 1)],
    ("RNICs", "A"): [("{}", 1)],
    ("Hosts", "A"): [("{}", 0)],
    ("Leaves", "A"): [("{}", 0)],
    ("Uplinks", "A"): [("{}", 0)],
    ("Paths", "A"): [("{}", 0)],
    # Lost: all of b2's probes; its replies are lost, its requests arrive.
    ("Culprits now", "A"): [(f'{{kind="rnic", {B2}, direction="transmit"}}', 1)],
    ("Culprits now", "B"): [(f'rdma:probe_culprit:pairs_failing{{kind="rnic", {B2}}}', 6)],
    ("Culprits now", "C"): [(f'rdma:probe_culprit:pairs{{kind="rnic", {B2}}}', 6)],
    # Each other RNIC loses its 2 pairs with b2: 240 of 720.
    ("RNICs losing probes", "A"): [
        (f"rdma:probe_rnic:loss_ratio:2m{{{B2}}}", 1),
        (f"rdma:probe_rnic:loss_ratio:2m{{{rnic('a1', 'A')}}}", 1 / 3),
        (f"rdma:probe_rnic:loss_ratio:2m{{{rnic('a2', 'A')}}}", 1 / 3),
        (f"rdma:probe_rnic:loss_ratio:2m{{{rnic('b1', 'B')}}}", 1 / 3)],
    # Every loss is blamed on b2.
    ("RNICs losing probes", "B"): [
        (f"{{{B2}}}", 1), (f"{{{rnic('a1', 'A')}}}", 0), (f"{{{rnic('a2', 'A')}}}", 0),
        (f"{{{rnic('b1', 'B')}}}", 0)],
    # Inside B both pairs lose (b1 <-> b2); inside A none.
    ("RNICs losing probes", "C"): [
        (f"rdma:probe_rnic:within_group_loss_ratio:2m{{{B2}}}", 1),
        (f"rdma:probe_rnic:within_group_loss_ratio:2m{{{rnic('a1', 'A')}}}", 0),
        (f"rdma:probe_rnic:within_group_loss_ratio:2m{{{rnic('a2', 'A')}}}", 0),
        (f"rdma:probe_rnic:within_group_loss_ratio:2m{{{rnic('b1', 'B')}}}", 1)],
    ("RNICs losing probes", "D"): [
        ('rdma:probe_rnic:requests_lost_ratio:2m{host="b2:10911", device="mlx5_0", '
         'group="B"}', 0)],
    # Each RNIC has 6 pairs (3 it probes, 3 probing it); those with b2 fail.
    ("RNICs losing probes", "E"): [
        (f"rdma:probe_rnic:pairs_failing:2m{{{B2}}}", 6),
        (f"rdma:probe_rnic:pairs_failing:2m{{{rnic('a1', 'A')}}}", 2),
        (f"rdma:probe_rnic:pairs_failing:2m{{{rnic('a2', 'A')}}}", 2),
        (f"rdma:probe_rnic:pairs_failing:2m{{{rnic('b1', 'B')}}}", 2)],
    ("RNICs losing probes", "F"): [
        (f"rdma:probe_rnic:pairs:2m{{{h}}}", 6)
        for h in (B2, rnic("a1", "A"), rnic("a2", "A"), rnic("b1", "B"))],
    # A's RNICs lose 480 of 1,440; B's 240 + 720 of 1,440.
    ("Loss per leaf", "A"): [('{group="A", rail="r0"}', 1 / 3), ('{group="B", rail="r0"}', 2 / 3)],
    ("Culprits by kind", "A"): [('{kind="rnic"}', 1)],
    # The pairs between groups without b2 lose nothing.
    ("Loss between leaves", "A"): [],
    ("Failing pairs", "A"): [
        (pair("a1", "A", "b2", "B"), 1), (pair("a2", "A", "b2", "B"), 1),
        (pair("b1", "B", "b2", "B"), 1), (pair("b2", "B", "a1", "A"), 1),
        (pair("b2", "B", "a2", "A"), 1), (pair("b2", "B", "b1", "B"), 1)],
    ("Hosts that stalled", "A"): [],
}


def check_board_on_rule_case(test, board, expected, rules, case_name):
    """Every query of BOARD (its variables at ".*") evaluated by promtool after
    the rule files of tests/alerts/RULES.test.yml, on the input series of its
    case CASE_NAME, against EXPECTED: {(panel title, refId): [(labels,
    value)]}, which must name every query of the board."""
    d = load(board)
    names = {v["name"] for v in variables(d)}
    tests, queried = [], set()
    for p in panels(d):
        for t in p.get("targets", []):
            queried.add((p["title"], t["refId"]))
            samples = expected.get((p["title"], t["refId"]))
            test.assertIsNotNone(samples, f"no expected values for {p['title']} [{t['refId']}]")
            expr, unknown = substitute(t["expr"], {n: ".*" for n in names}, names)
            test.assertEqual(unknown, set(), p["title"])
            tests.append({"expr": expr, "eval_time": "5m",
                          "exp_samples": [{"labels": labels, "value": value}
                                          for labels, value in samples]})
    test.assertEqual(set(expected), queried)
    alerts_dir = os.path.join(SOURCE_DIR, "tests/alerts")
    with open(os.path.join(alerts_dir, f"{rules}.test.yml")) as f:
        rule_tests = yaml.safe_load(f)
    (case,) = [c for c in rule_tests["tests"] if c["name"] == case_name]
    r = promtool_test(case["interval"], case["input_series"], tests,
                      rules=[os.path.join(alerts_dir, r) for r in rule_tests["rule_files"]])
    test.assertEqual(r.returncode, 0, r.stdout + r.stderr)


class FabricBoardTest(unittest.TestCase):
    """The fabric board reads the culprit rules' records, which exist only
    where hosts probe each other (DashboardQueriesTest only checks that its
    queries evaluate): promtool evaluates the rules and then every query of
    the board on the series of a dead RNIC, compared with hand-worked
    results."""

    def test_every_panel_shows_the_dead_rnic_and_its_evidence(self):
        check_board_on_rule_case(self, "rdma-fabric.json", FABRIC_EXPECTED, "rdma-culprits",
                                 FABRIC_CASE)


# The overview board on the rollup rules' case (tests/alerts/rdma-rollups.test.yml,
# whose comments work out every record): hosts a and b in group g1, c in
# g2, two rails; a leaf culprit (g1, rail0), RNIC culprits on a's and c's
# mlx5_0, a path from g2 to g1 on rail1.
ROLLUP_CASE = "rollups per port, host, group, rail, leaf and fleet; culprits' impact"
LEAF = 'culprit="leaf/g1/rail0", kind="leaf"'
RNIC_A = 'culprit="rnic/a:10911/mlx5_0", kind="rnic"'
RNIC_C = 'culprit="rnic/c:10911/mlx5_0", kind="rnic"'
PATH = 'culprit="path/g2/g1/rail1", kind="path"'


def pod(culprit, instance, name):
    return (f'culprit_instance_pod:rdma_impact:info{{{culprit}, job="rdma", '
            f'instance="{instance}", namespace="ns", pod="{name}", container="c"}}', 1)


OVERVIEW_EXPECTED = {
    # a 10 + 20, b 30 + 40, c 50 + 60, d 70 bytes/s.
    ("Traffic sent", "A"): [("{}", 280)],
    # (0.25 + 0.125 + 0.125) lost of (1 + 2 + 1 + 1) probes a second.
    ("Probe loss", "A"): [("{}", 0.1)],
    ("Link errors", "A"): [("{}", 3)],
    ("Retransmissions", "A"): [("{}", 0.5)],
    ("Culprits", "A"): [("{}", 4)],
    # a's and b's round trips, as many: 98 % into b's bucket (100 µs - 1 ms).
    ("p99 round trip, own group", "A"): [("{}", 0.000982)],
    ("Culprits and what sits behind them", "A"): [
        (f"culprit:rdma_impact_hosts:count{{{LEAF}}}", 2),
        (f"culprit:rdma_impact_hosts:count{{{RNIC_A}}}", 1),
        (f"culprit:rdma_impact_hosts:count{{{RNIC_C}}}", 1),
        (f"culprit:rdma_impact_hosts:count{{{PATH}}}", 1)],
    ("Culprits and what sits behind them", "B"): [
        (f"culprit:rdma_impact_traffic_bytes:rate2m{{{LEAF}}}", 45),
        (f"culprit:rdma_impact_traffic_bytes:rate2m{{{RNIC_A}}}", 15),
        (f"culprit:rdma_impact_traffic_bytes:rate2m{{{RNIC_C}}}", 50),
        (f"culprit:rdma_impact_traffic_bytes:rate2m{{{PATH}}}", 67)],
    ("Culprits and what sits behind them", "C"): [
        (f"culprit:rdma_impact_errors:rate2m{{{LEAF}}}", 3),
        (f"culprit:rdma_impact_errors:rate2m{{{RNIC_A}}}", 3),
        (f"culprit:rdma_impact_errors:rate2m{{{RNIC_C}}}", 0.5),
        (f"culprit:rdma_impact_errors:rate2m{{{PATH}}}", 0.2)],
    ("Pods behind culprits", "A"): [pod(RNIC_A, "a:9", "p1"), pod(LEAF, "b:9", "p2"),
                                    pod(LEAF, "b:9", "p3")],
    # g1: 0.375 of 4 probes a second; g2: 0.125 of 1.
    ("Groups by probe loss", "A"): [
        ('group:rdma_probe_loss:ratio_rate2m{job="rdma", group="g1"}', 0.09375),
        ('group:rdma_probe_loss:ratio_rate2m{job="rdma", group="g2"}', 0.125)],
    ("Leaves by probe loss", "A"): [
        ('group_rail:rdma_probe_loss:ratio_rate2m{job="rdma", group="g1", rail="rail0"}', 0.09375),
        ('group_rail:rdma_probe_loss:ratio_rate2m{job="rdma", group="g2", rail="rail1"}', 0.125)],
    ("Hosts by probe loss", "A"): [
        ('instance:rdma_probe_loss:ratio_rate2m{job="rdma", instance="a:9"}', 0.125),
        ('instance:rdma_probe_loss:ratio_rate2m{job="rdma", instance="b:9"}', 0),
        ('instance:rdma_probe_loss:ratio_rate2m{job="rdma", instance="c:9"}', 0.125)],
    ("Hosts by link errors", "A"): [
        ('instance:rdma_link_errors:rate2m{job="rdma", instance="a:9"}', 3)],
    ("Leaves by time paused", "A"): [
        ('group_rail_direction:rdma_netdev_pfc_pause_duration_seconds:max_rate2m{job="rdma", '
         'group="g1", rail="rail0", direction="rx"}', 0.5),
        ('group_rail_direction:rdma_netdev_pfc_pause_duration_seconds:max_rate2m{job="rdma", '
         'group="g2", rail="rail1", direction="tx"}', 0.3)],
    ("Groups by discards", "A"): [
        ('group:rdma_discards:rate2m{job="rdma", group="g1"}', 0.1),
        ('group:rdma_discards:rate2m{job="rdma", group="g2"}', 0.2)],
    ("Traffic per rail", "A"): [
        ('rail:rdma_transmit_bytes:rate2m{job="rdma", rail="rail0"}', 90),
        ('rail:rdma_transmit_bytes:rate2m{job="rdma", rail="rail1"}', 120)],
    ("Probe loss per rail", "A"): [
        ('rail:rdma_probe_loss:ratio_rate2m{job="rdma", rail="rail0"}', 0.09375),
        ('rail:rdma_probe_loss:ratio_rate2m{job="rdma", rail="rail1"}', 0.125)],
    ("p99 round trip per rail", "A"): [
        ('rail_scope_tclass:rdma_probe_group_latency_seconds:p99_rate2m{job="rdma", '
         'rail="rail0", scope="group", tclass="0"}', 0.000982)],
    ("Time paused per rail", "A"): [
        ('rail_direction:rdma_netdev_pfc_pause_duration_seconds:max_rate2m{job="rdma", '
         'rail="rail0", direction="rx"}', 0.5),
        ('rail_direction:rdma_netdev_pfc_pause_duration_seconds:max_rate2m{job="rdma", '
         'rail="rail1", direction="tx"}', 0.3)],
    # The most paused port of the fleet per priority: d's (in no group) on
    # 3, a's on 0, c's sending on 5.
    ("Time paused per priority", "A"): [
        ('job_priority_direction:rdma_netdev_pfc_pause_duration_seconds:max_rate2m{job="rdma", '
         'priority="3", direction="rx"}', 0.9),
        ('job_priority_direction:rdma_netdev_pfc_pause_duration_seconds:max_rate2m{job="rdma", '
         'priority="0", direction="rx"}', 0.1),
        ('job_priority_direction:rdma_netdev_pfc_pause_duration_seconds:max_rate2m{job="rdma", '
         'priority="5", direction="tx"}', 0.3)],
}


def host(instance, group):
    return f'{{job="rdma", instance="{instance}", group="{group}"}}'


# The group board on the same case, every group selected; host d has no
# group and is in no panel.
GROUP_EXPECTED = {
    ("Traffic per leaf", "A"): [
        ('group_rail:rdma_transmit_bytes:rate2m{job="rdma", group="g1", rail="rail0"}', 40),
        ('group_rail:rdma_transmit_bytes:rate2m{job="rdma", group="g1", rail="rail1"}', 60),
        ('group_rail:rdma_transmit_bytes:rate2m{job="rdma", group="g2", rail="rail0"}', 50),
        ('group_rail:rdma_transmit_bytes:rate2m{job="rdma", group="g2", rail="rail1"}', 60)],
    ("Probe loss per leaf", "A"): OVERVIEW_EXPECTED[("Leaves by probe loss", "A")],
    ("Culprits in the group", "A"): OVERVIEW_EXPECTED[
        ("Culprits and what sits behind them", "A")],
    ("Leaves by time paused", "A"): OVERVIEW_EXPECTED[("Leaves by time paused", "A")],
    # g1's most paused host per priority: a's 0.5 over b's 0.2 on 3.
    ("Time paused per priority", "A"): [
        ('group_priority_direction:rdma_netdev_pfc_pause_duration_seconds:max_rate2m{job="rdma", '
         'group="g1", priority="3", direction="rx"}', 0.5),
        ('group_priority_direction:rdma_netdev_pfc_pause_duration_seconds:max_rate2m{job="rdma", '
         'group="g1", priority="0", direction="rx"}', 0.1),
        ('group_priority_direction:rdma_netdev_pfc_pause_duration_seconds:max_rate2m{job="rdma", '
         'group="g2", priority="5", direction="tx"}', 0.3)],
    ("Hosts by time paused", "A"): [
        ('{job="rdma", instance="a:9", group="g1", priority="3", direction="rx"}', 0.5),
        ('{job="rdma", instance="a:9", group="g1", priority="0", direction="rx"}', 0.1),
        ('{job="rdma", instance="b:9", group="g1", priority="3", direction="rx"}', 0.2),
        ('{job="rdma", instance="c:9", group="g2", priority="5", direction="tx"}', 0.3)],
    ("Hosts by traffic", "A"): [(host("a:9", "g1"), 30), (host("b:9", "g1"), 70),
                                (host("c:9", "g2"), 110)],
    ("Hosts by probe loss", "A"): [(host("a:9", "g1"), 0.125), (host("b:9", "g1"), 0),
                                   (host("c:9", "g2"), 0.125)],
    ("Hosts by link errors", "A"): [(host("a:9", "g1"), 3)],
    ("Hosts by retransmissions", "A"): [(host("c:9", "g2"), 0.5)],
    ("Hosts by discards", "A"): [(host("b:9", "g1"), 0.1), (host("c:9", "g2"), 0.2)],
    ("Hosts by p99 round trip", "A"): [(host("a:9", "g1"), 9.910000000000001e-05),
                                       (host("b:9", "g1"), 0.000991)],
}


class OverviewBoardTest(unittest.TestCase):
    """The overview and group boards read the rollup rules' records, whose
    group and rail levels exist only where hosts run the probe: promtool
    evaluates the rules and then every query of each board on the rollup
    rules' case, compared with hand-worked results."""

    def test_every_panel_shows_the_rollups(self):
        check_board_on_rule_case(self, "rdma-overview.json", OVERVIEW_EXPECTED, "rdma-rollups",
                                 ROLLUP_CASE)

    def test_every_panel_of_the_group_board_shows_its_hosts_and_leaves(self):
        check_board_on_rule_case(self, "rdma-group.json", GROUP_EXPECTED, "rdma-rollups",
                                 ROLLUP_CASE)


class DashboardQueriesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        started = time.monotonic()
        cls.fake = cls.real = cls.prometheus = cls.node_api = None
        try:
            cls.node_api = NodeApi(NODE_STATE)
            cls.fake = Exporter("--path.sysfs",
                                add_netdevs(make_sysfs("mlx5:2:2 rxe"), FAKE_HOST_NETDEVS),
                                "--path.proc", make_proc(PROCESSES), "--kubernetes.sockets",
                                f"{cls.node_api.cri},{cls.node_api.pod_resources}",
                                binary=FAKE_HOST_BIN)
            # The probe's responder runs without a device; its probers wait
            # for one.
            cls.real = Exporter("--path.sysfs", make_sysfs("mlx5:1:2 efa"), config=f"""
probe:
  enabled: true
  listen_address: 127.0.0.1:{free_port()}
  loopback: true
""")
            cls.prometheus = Prometheus(*prometheus_config(
                [f"127.0.0.1:{cls.fake.port}", f"127.0.0.1:{cls.real.port}"]))
            wait_for_data(cls.prometheus, 2)
            cls.setup_seconds = time.monotonic() - started
            cls.evaluation = Evaluation(cls.prometheus)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.prometheus is not None:
            cls.prometheus.stop()
        if cls.node_api is not None:
            cls.node_api.stop()
        codes = {}
        for name in ("fake", "real"):
            exporter = getattr(cls, name)
            if exporter is not None:
                codes[name] = (exporter.stop(), exporter.log())
        bad = {name: c for name, c in codes.items() if c[0] != 0}
        assert not bad, "\n".join(f"{name} exited {code}:\n{log}"
                                   for name, (code, log) in bad.items())

    def test_every_query_of_every_panel(self):
        failures, summary = self.evaluation.verdict(
            {"NEEDS_HARDWARE": NEEDS_HARDWARE},
            f"exporter on fixtures and fake_rdma_host, set up in {self.setup_seconds:.1f}s")
        print(summary, file=sys.stderr)
        self.assertEqual(failures, [], "\n".join(failures))

    def test_every_variable_has_values(self):
        for name in DASHBOARDS:
            if self.evaluation.concrete[name]:
                continue
            reason = NEEDS_HARDWARE.get((name, "*"))
            self.assertIsNotNone(reason, f"{name}: a variable has no values")
            print(f"\n{name}: variables without values, allowed by NEEDS_HARDWARE: {reason}",
                  file=sys.stderr)

    def test_needs_hardware_entries_name_existing_panels(self):
        for (name, title), _ in NEEDS_HARDWARE.items():
            d = load(name)
            titles = {p["title"] for p in panels(d)}
            self.assertTrue(title == "*" or title in titles, f"{name}: {title}")

    def test_alerting_rules_evaluate_without_errors(self):
        # Every group is first evaluated within its own interval (a minute
        # for the probe's alerting group).
        started, deadline = time.monotonic(), None
        while True:
            r = self.prometheus.get("/api/v1/rules")
            if deadline is None and r["data"]["groups"]:
                deadline = started + 30 + max(g["interval"] for g in r["data"]["groups"])
            rules = [rule for g in r["data"]["groups"] for rule in g["rules"]]
            if rules and all(not rule.get("lastEvaluation", "0001").startswith("0001")
                             for rule in rules):
                break
            self.assertLess(time.monotonic(), deadline or started + 30, "rules were not evaluated")
            time.sleep(1)
        bad = [f"{rule['name']}: {rule.get('lastError')}" for rule in rules
               if rule["health"] != "ok"]
        self.assertEqual(bad, [])
        shipped = []
        for name in rule_files():
            with open(os.path.join(SOURCE_DIR, "config/prometheus", name)) as f:
                shipped += [r for g in yaml.safe_load(f)["groups"] for r in g["rules"]]
        self.assertEqual(len(rules), len(shipped))

    def test_the_data_has_what_the_dashboards_need(self):
        # The two sources together cover netlink and sysfs metrics, per-QP
        # sets of several processes and one host without rdma netlink. Each
        # series as its last scrape in the last minute had it: a scrape that
        # times out (1 s) on a loaded machine marks its series stale, and an
        # instant selector would then miss them.
        def last(selector):
            return f"last_over_time({selector}[1m])"

        for expr, expected in (
                ("count(count by (instance) (" + last("rdma_exporter_build_info") + "))", 2),
                ("count(" + last("rdma_exporter_netlink_available") + " == 0)", 1),
                ("count(count by (comm) (" + last("rdma_qp_stat_rx_write_requests_total") + "))",
                 3),
                ("count(" + last("rdma_port_state") + " < 4)", 1),
                ("count(" + last("rdma_port_hw_sent_pkts_total") + ")", 1),
                # Two pods' processes, each with its own labels; their devices.
                ("count(count by (namespace, pod, container) (" +
                 last('rdma_qp_stat_rx_write_requests_total{pod!=""}') + "))", 2),
                ("count(" + last('rdma_qp_stat_rx_write_requests_total{namespace="train", '
                                 'pod="job-a", container="worker", pid="100"}') + ")", 1),
                ("count(" + last('rdma_device_pod_info{device="mlx5_1", pod="job-a", '
                                 'device_id="0000:11:00.0"}') + ")", 1),
                ("count(" + last('rdma_device_pod_info{device="rxe0", pod="cache-b"}') + ")", 1),
                ("count(" + last('rdma_qps{pod="cache-b", namespace="store"}') + ")", 1),
                ("count(" + last("rdma_device_allocatable_info") + ")", 3),
                ("count(" + last('rdma_device_allocatable_info{device="mlx5_0", '
                                 'resource="example.com/rdma"}') +
                 " unless on (instance, device, resource, device_id) " +
                 last("rdma_device_pod_info") + ")", 1)):
            r = self.prometheus.query(expr)
            self.assertEqual(r["status"], "success", expr)
            self.assertEqual(float(r["data"]["result"][0]["value"][1]), expected, expr)


if __name__ == "__main__":
    unittest.main()
