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
with every concrete combination of values. An error fails the test; a query
that returns nothing for every combination fails it too, unless its panel is
in NEEDS_HARDWARE, which is printed.
"""
import itertools
import json
import os
import re
import subprocess
import sys
import time
import unittest

import yaml

from harness import (FAKE_HOST_BIN, SOURCE_DIR, Exporter, Prometheus, make_proc, make_sysfs)
from metrics_doc import MetricsDoc, metric_names

DASHBOARD_DIR = os.path.join(SOURCE_DIR, "dashboards")
DASHBOARDS = ("rdma-fleet.json", "rdma-port.json", "rdma-congestion.json",
              "rdma-workloads.json", "rdma-latency.json")
DATASOURCE_REF = {"type": "prometheus", "uid": "${datasource}"}

# Panels whose queries may return nothing here, because no data source of
# the test bed produces their metrics: (dashboard, panel title or "*") ->
# why. Printed by the test whenever it is used.
NEEDS_HARDWARE = {
    ("rdma-latency.json", "*"):
        "the verbs latency probe (collectors/probe/, written on another branch): its "
        "metrics need the probe merged and RDMA verbs to run it (the Soft-RoCE VM)",
}

# What Grafana substitutes, for a Prometheus data source whose scrape interval
# is set to the test's 1 s and a "last 10 seconds" time range:
# $__rate_interval = max($__interval + scrape interval, 4 * scrape interval).
SCRAPE_INTERVAL_S = 1
GRAFANA_VARIABLES = {
    "__interval": "5s", "__interval_ms": "5000", "__interval_s": "5",
    "__rate_interval": "6s",
    "__range": "10s", "__range_s": "10", "__range_ms": "10000",
}
# Data must cover the range before the queries run.
MIN_SAMPLES_PER_TARGET = 12
MAX_COMBINATIONS = 64

PROCESSES = {100: ("python3", "/kubepods.slice/pod-a/ctr-1"),
             101: ("python3", "/kubepods.slice/pod-b/ctr-2"),
             200: ("spdk_tgt", "/system.slice/spdk.service"),
             300: ("ib_write_bw", "/user.slice/user-1000.slice/session-3.scope")}

ALL = object()  # a variable set to "All"


def load(name):
    with open(os.path.join(DASHBOARD_DIR, name), encoding="utf-8") as f:
        return json.load(f)


def panels(dashboard):
    """Every panel, including those inside collapsed rows."""
    for p in dashboard["panels"]:
        yield p
        yield from p.get("panels", [])


def variables(dashboard):
    return dashboard["templating"]["list"]


def variable_query(v):
    q = v.get("query")
    return q["query"] if isinstance(q, dict) else q


def needs_hardware(dashboard_name, title):
    return (NEEDS_HARDWARE.get((dashboard_name, title))
            or NEEDS_HARDWARE.get((dashboard_name, "*")))


# --------------------------------------------------------- substitution

REGEX_SPECIAL = re.compile(r"[$^*{}\[\]'+?.()|]")
VARIABLE_RE = re.compile(r"\$(\w+)|\$\{(\w+)(?::(\w+))?\}|\[\[(\w+)\]\]")


def grafana_escape(value):
    """What Grafana's Prometheus data source writes for one value of a
    multi-value variable: regular-expression characters escaped (twice,
    since the result sits in a PromQL string)."""
    return REGEX_SPECIAL.sub(lambda m: "\\\\" + m.group(0), value.replace("\\", "\\" * 4))


def format_value(var, value, known_values):
    if var.get("multi") or var.get("includeAll"):
        if value is ALL:
            if var.get("allValue"):
                return var["allValue"]
            return "(" + "|".join(grafana_escape(v) for v in known_values) + ")"
        return grafana_escape(value)
    return value


def substitute(expr, assignment, defined):
    """Replaces $var, ${var} and [[var]]; returns (text, unknown variables).
    `$1`-style group references (label_replace) are left alone."""
    unknown = set()

    def repl(m):
        name = m.group(1) or m.group(2) or m.group(4)
        if name.isdigit():
            return m.group(0)
        if name in GRAFANA_VARIABLES:
            return GRAFANA_VARIABLES[name]
        if name in assignment:
            return assignment[name]
        if name not in defined:
            unknown.add(name)
        return m.group(0)

    return VARIABLE_RE.sub(repl, expr), unknown


LABEL_VALUES_RE = re.compile(r"^label_values\((.*),\s*(\w+)\)$", re.S)


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
                ids = [p["id"] for p in panels(d)]
                self.assertEqual(len(ids), len(set(ids)), "panel ids are unique")
                self.assertTrue(all(isinstance(i, int) and i > 0 for i in ids))
                self.check_layout(d)
                self.check_variables(d)
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

    def check_variables(self, d):
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
        self.assertTrue({"job", "instance"} <= set(names))

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
        self.assertIn(unit, {"Bps", "bps", "pps", "cps", "reqps", "percentunit", "s", "short",
                             "none"}, title)
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
        doc = MetricsDoc(os.path.join(SOURCE_DIR, "docs/metrics.md"))
        problems = []
        for name in DASHBOARDS:
            d = load(name)
            exprs = [(p["title"], t["expr"]) for p in panels(d) for t in p.get("targets", [])]
            exprs += [(f"variable {v['name']}", LABEL_VALUES_RE.match(variable_query(v)).group(1))
                      for v in variables(d)[1:]]
            for title, expr in exprs:
                names, regexes = metric_names(expr)
                if not names and not regexes and "vector(" not in expr:
                    problems.append(f"{name}: {title}: no metric found in {expr}")
                problems += [f"{name}: {title}: {p}" for p in map(doc.problem, names) if p]
                problems += [f"{name}: {title}: {doc.name_regex_problem(r)}" for r in regexes
                             if doc.name_regex_problem(r)]
        self.assertEqual(problems, [])
        doc.report_pending("dashboards")
        self.assertEqual(doc.pending_now_documented(), [],
                         "docs/metrics.md lists these now: remove them from "
                         "PROBE_METRICS_PENDING_DOCS in tests/integration/metrics_doc.py")

    def test_the_name_check_catches_typos(self):
        doc = MetricsDoc(os.path.join(SOURCE_DIR, "docs/metrics.md"))
        names, _ = metric_names('sum by (device) (rate(rdma_port_hw_out_of_sequense_total'
                                '{job=~"$job"}[5m])) / on (device) rdma_port_sate')
        self.assertEqual(names, ["rdma_port_hw_out_of_sequense_total", "rdma_port_sate"])
        self.assertTrue(all(doc.problem(n) for n in names))
        self.assertIsNone(doc.problem("rdma_port_hw_out_of_sequence_total"))
        self.assertIsNone(doc.problem("rdma_port_pma_unicast_xmit_packets_total"))
        self.assertIsNotNone(doc.name_regex_problem("rdma_port_.+"))


class DashboardQueriesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.started = time.monotonic()
        cls.fake = cls.real = cls.prometheus = None
        try:
            cls.fake = Exporter("--path.sysfs", make_sysfs("mlx5:2:2 rxe"),
                                "--path.proc", make_proc(PROCESSES), binary=FAKE_HOST_BIN)
            cls.real = Exporter("--path.sysfs", make_sysfs("mlx5:1:2 efa"))
            with open(os.path.join(SOURCE_DIR, "config/prometheus/prometheus.yml")) as f:
                config = yaml.safe_load(f)
            config["global"] = {"scrape_interval": f"{SCRAPE_INTERVAL_S}s",
                                "evaluation_interval": f"{SCRAPE_INTERVAL_S}s"}
            job = config["scrape_configs"][0]
            job["scrape_timeout"] = f"{SCRAPE_INTERVAL_S}s"
            job["static_configs"] = [{"targets": [f"127.0.0.1:{cls.fake.port}",
                                                  f"127.0.0.1:{cls.real.port}"]}]
            with open(os.path.join(SOURCE_DIR, "config/prometheus/rdma-alerts.yml")) as f:
                rules = f.read()
            cls.prometheus = Prometheus(yaml.safe_dump(config), {"rdma-alerts.yml": rules})
            cls.wait_for_data()
        except BaseException:
            cls.tearDownClass()
            raise
        cls.ready = time.monotonic()

    @classmethod
    def wait_for_data(cls, timeout=90):
        expr = "min(count_over_time(up[1m]) and up == 1)"
        deadline = time.monotonic() + timeout
        while True:
            r = cls.prometheus.query(expr)
            up = cls.prometheus.query("count(up == 1)")
            samples = float(r["data"]["result"][0]["value"][1]) if r["data"]["result"] else 0
            targets = float(up["data"]["result"][0]["value"][1]) if up["data"]["result"] else 0
            if targets == 2 and samples >= MIN_SAMPLES_PER_TARGET:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"no data after {timeout}s (targets up {targets}, samples "
                                   f"{samples}):\n{cls.prometheus.log()}")
            time.sleep(1)

    @classmethod
    def tearDownClass(cls):
        for name in ("prometheus", "fake", "real"):
            thing = getattr(cls, name, None)
            if thing is not None:
                thing.stop()

    # -------------------------------------------------------- helpers

    def label_values(self, query):
        """Grafana's label_values(selector, label) through the HTTP API."""
        m = LABEL_VALUES_RE.match(query)
        self.assertIsNotNone(m, query)
        selector, label = m.groups()
        now = time.time()
        r = self.prometheus.get(f"/api/v1/label/{label}/values",
                                {"match[]": selector, "start": f"{now - 300:.0f}",
                                 "end": f"{now:.0f}"})
        self.assertEqual(r["status"], "success", f"{query}: {r}")
        return sorted(v for v in r["data"] if v != "")

    def combinations(self, d):
        """(the "All" combination or None, [concrete combinations]); each is
        (description, {variable: text}).

        Like Grafana, each variable's query sees the values of the ones
        before it. Concrete combinations follow every value of every
        variable (up to MAX_COMBINATIONS); a variable without values ends
        that path, as it leaves the dashboard empty in Grafana too."""
        vs = variables(d)[1:]
        names = {v["name"] for v in variables(d)}
        out = []

        def walk(i, assignment, chosen):
            if len(out) >= MAX_COMBINATIONS:
                return
            if i == len(vs):
                out.append((", ".join(f"{k}={'All' if c is ALL else c}"
                                      for k, c in chosen.items()), dict(assignment)))
                return
            v = vs[i]
            query, unknown = substitute(variable_query(v), assignment, names)
            self.assertEqual(unknown, set())
            values = self.label_values(query)
            for value in values:
                walk(i + 1, {**assignment, v["name"]: format_value(v, value, values)},
                     {**chosen, v["name"]: value})

        def all_combination():
            assignment = {}
            for v in vs:
                if not v.get("includeAll"):
                    return None
                query, _ = substitute(variable_query(v), assignment, names)
                assignment[v["name"]] = format_value(v, ALL, self.label_values(query))
            return ("all variables All", assignment)

        walk(0, {}, {})
        return all_combination(), out

    # ---------------------------------------------------------- tests

    def test_every_query_of_every_panel(self):
        failures, excused, counts, used = [], [], {}, set()
        now = time.time()
        for name in DASHBOARDS:
            d = load(name)
            names = {v["name"] for v in variables(d)}
            every, concrete = self.combinations(d)
            combos = ([every] if every else []) + concrete
            has_all = every is not None
            evaluated = 0
            for p in panels(d):
                for t in p.get("targets", []):
                    where = f"{name}: {p['title']} [{t['refId']}]"
                    results = []
                    for label, assignment in combos:
                        expr, unknown = substitute(t["expr"], assignment, names)
                        self.assertEqual(unknown, set(), where)
                        r = self.prometheus.query(expr, at=now)
                        evaluated += 1
                        if r.get("status") != "success":
                            failures.append(f"{where} with {label}: {r.get('error')}\n    {expr}")
                            results.append(None)
                            continue
                        results.append(bool(r["data"]["result"]))
                    empty = not any(results) or (has_all and not results[0])
                    if empty and None not in results:
                        reason = needs_hardware(name, p["title"])
                        if reason:
                            excused.append((where, reason))
                            used.add((name, p["title"]) if (name, p["title"]) in NEEDS_HARDWARE
                                     else (name, "*"))
                        else:
                            failures.append(f"{where}: no data for "
                                            f"{'All' if has_all and not results[0] else 'any combination'}"
                                            f"\n    {t['expr']}")
            counts[name] = (len(combos), evaluated)
        took = time.monotonic() - self.ready
        summary = [f"\nDashboard queries evaluated against Prometheus "
                   f"(setup {self.ready - self.started:.1f}s, queries {took:.1f}s):"]
        summary += [f"  {n}: {c} variable combinations, {e} queries" for n, (c, e) in counts.items()]
        if excused:
            summary.append("Queries without data, allowed by NEEDS_HARDWARE:")
            by_reason = {}
            for where, reason in excused:
                by_reason.setdefault(reason, []).append(where)
            for reason, wheres in by_reason.items():
                summary.append(f"  {len(wheres)} queries need {reason}:")
                summary += [f"    {w}" for w in wheres]
        print("\n".join(summary), file=sys.stderr)
        failures += [f"NEEDS_HARDWARE entry {key} is not needed any more: its queries have data"
                     for key in NEEDS_HARDWARE if key not in used]
        self.assertEqual(failures, [], "\n".join(failures))

    def test_every_variable_has_values(self):
        for name in DASHBOARDS:
            d = load(name)
            _, concrete = self.combinations(d)
            if concrete:
                continue
            reason = needs_hardware(name, "*")
            self.assertIsNotNone(reason, f"{name}: a variable has no values")
            print(f"\n{name}: variables without values, allowed by NEEDS_HARDWARE: {reason}",
                  file=sys.stderr)

    def test_needs_hardware_entries_name_existing_panels(self):
        for (name, title), _ in NEEDS_HARDWARE.items():
            d = load(name)
            titles = {p["title"] for p in panels(d)}
            self.assertTrue(title == "*" or title in titles, f"{name}: {title}")

    def test_alerting_rules_evaluate_without_errors(self):
        deadline = time.monotonic() + 30
        while True:
            r = self.prometheus.get("/api/v1/rules")
            rules = [rule for g in r["data"]["groups"] for rule in g["rules"]]
            if rules and all(not rule.get("lastEvaluation", "0001").startswith("0001")
                             for rule in rules):
                break
            self.assertLess(time.monotonic(), deadline, "rules were not evaluated")
            time.sleep(1)
        bad = [f"{rule['name']}: {rule.get('lastError')}" for rule in rules
               if rule["health"] != "ok"]
        self.assertEqual(bad, [])
        self.assertEqual(len(rules), 21)

    def test_the_data_has_what_the_dashboards_need(self):
        # The two sources together cover netlink and sysfs metrics, per-QP
        # sets of several processes and one host without rdma netlink.
        for expr, expected in (
                ('count(count by (instance) (rdma_exporter_build_info))', 2),
                ('count(rdma_exporter_netlink_available == 0)', 1),
                ('count(count by (comm) (rdma_qp_stat_rx_write_requests_total))', 3),
                ('count(rdma_port_state < 4)', 1),
                ('count(rdma_port_hw_sent_pkts_total)', 1)):
            r = self.prometheus.query(expr)
            self.assertEqual(r["status"], "success", expr)
            self.assertEqual(float(r["data"]["result"][0]["value"][1]), expected, expr)


if __name__ == "__main__":
    unittest.main()
