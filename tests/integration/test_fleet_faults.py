"""The culprit rules against simulated faults (bench/fleet_faults): a fleet
of 64 hosts on 4 rails in groups of 8, its probes simulated by
bench/fleet_faults_sim with the real pinglists and the probe's own
statistics, the rules evaluated by a real Prometheus. Every fault of the
shipped CI scenarios is named, as exactly its element, within 2 pinglist
epochs of simulated time, and nothing else is named (host stalls shorter
than the probe timeout run all along). And bench/fleet_faults_campaign adds
up several runs' reports."""
import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

from harness import SOURCE_DIR

sys.path.insert(0, os.path.join(SOURCE_DIR, "bench"))
import fleet_load  # noqa: E402
from promql_selectors import sub_selectors  # noqa: E402


def load_fleet_faults():
    path = os.path.join(SOURCE_DIR, "bench", "fleet_faults")
    loader = importlib.machinery.SourceFileLoader("fleet_faults", path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module

SIM = os.environ.get("RDMA_FLEET_FAULTS_SIM_BIN",
                     os.path.join(SOURCE_DIR, "build/bench/fleet_faults_sim"))
SCENARIOS = os.path.join(SOURCE_DIR, "bench/scenarios")
EPOCH_SECONDS = 60


class FleetFaultsTest(unittest.TestCase):
    def run_scenario(self, name, *args):
        with tempfile.TemporaryDirectory(prefix="fleet_faults_") as d:
            report = os.path.join(d, "report.json")
            r = subprocess.run([os.path.join(SOURCE_DIR, "bench/fleet_faults"),
                                os.path.join(SCENARIOS, name), "--sim", SIM, "--report", report,
                                *args], capture_output=True, text=True, timeout=900)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with open(report) as f:
                return json.load(f)

    def check(self, report, expected, late=0):
        named = {}
        for fault in report["faults"]:
            if fault["kind"] != "host_stall":
                offset = fault["start"] - report["timeline_start"]
                named[(fault["kind"], offset)] = fault["named_as"]
        self.assertEqual(named, expected)
        self.assertEqual(report["false_culprit_list"], [])
        total = report["total"]
        self.assertEqual(total["named_correctly"], total["injected"])
        self.assertLessEqual(total["time_to_name_seconds"]["max"], 2 * EPOCH_SECONDS + late)

    CI_SMALL = {
        ("rnic", 180.0): ["rnic/h0005:10911/mlx5_1"],
        ("rnic", 600.0): ["rnic/h0040:10911/mlx5_3"],
        ("leaf", 1020.0): ["leaf/g002/rail0"],
        ("leaf", 1440.0): ["leaf/g006/rail2"],
        ("host_down", 1860.0): ["host/h0033:10911"],
    }

    def test_faults_at_the_ends_and_leaves(self):
        self.check(self.run_scenario("ci-small.yml"), self.CI_SMALL)

    def test_faults_at_the_ends_and_leaves_split_by_rail(self):
        # The two parts as evaluators split by rail run them, the part across
        # rails reading the rails' records an evaluation (30 s) late: the
        # same culprits, hosts and RNICs up to 30 s later.
        report = self.run_scenario(
            "ci-small.yml", "--rules",
            os.path.join(SOURCE_DIR, "config/prometheus/rdma-culprits-rails.yml"),
            os.path.join(SOURCE_DIR, "config/prometheus/rdma-culprits-across-rails.yml"))
        self.check(report, self.CI_SMALL, late=30)

    def test_faults_between_groups(self):
        report = self.run_scenario("ci-between-groups.yml")
        self.check(report, {
            ("uplink", 120.0): ["uplink/g003/rail1"],
            ("uplink", 540.0): ["uplink/g005/rail2"],
            ("path", 960.0): ["path/g001/g006/rail0"],
            ("rnic", 1380.0): ["rnic/h0020:10911/mlx5_0"],
        })


class CampaignTest(unittest.TestCase):
    """bench/fleet_faults_campaign on two reports written here, every figure
    distinct: one with a double fault (an RNIC named, a leaf named as
    another element) and an uplink not named, one with a path and a host
    down named late and early."""

    @staticmethod
    def fault(kind, group, start, named_as, time_to_name=None):
        f = {"kind": kind, "group": group, "start": start, "end": start + 300,
             "named_as": named_as}
        if time_to_name is not None:
            f["time_to_name_seconds"] = time_to_name
        return f

    def test_reports_add_up(self):
        first = {
            "faults": [
                self.fault("rnic", "g001", 1000, ["rnic/h0040:10911/mlx5_1"], 60),
                self.fault("leaf", "g001", 1000, ["rnic/h0041:10911/mlx5_2"]),
                self.fault("uplink", "g002", 1000, []),
                {"kind": "host_stall", "start": 0, "end": 2000, "named_as": []},
            ],
            "culprit_episodes": 5, "culprit_episodes_exact": 3,
            "total": {"wrong_element_culprits": 1, "false_culprits": 1},
            "false_culprit_list": [{"culprit": "leaf/g009/rail3", "from": 30, "to": 60}],
        }
        second = {
            "faults": [
                self.fault("path", "g003", 5000, ["path/g003/g007/rail0"], 150),
                self.fault("host_down", "g004", 5000, ["host/h0130:10911"], 90),
            ],
            "culprit_episodes": 2, "culprit_episodes_exact": 2,
            "total": {"wrong_element_culprits": 0, "false_culprits": 0},
            "false_culprit_list": [],
        }
        with tempfile.TemporaryDirectory(prefix="campaign_") as d:
            paths = []
            for i, report in enumerate((first, second)):
                paths.append(os.path.join(d, "r%d.json" % i))
                with open(paths[-1], "w") as f:
                    json.dump(report, f)
            r = subprocess.run([os.path.join(SOURCE_DIR, "bench/fleet_faults_campaign")] + paths,
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        total = out["total"]
        self.assertEqual((total["injected"], total["named"], total["named_correctly"]), (5, 4, 3))
        self.assertEqual(total["recall"], 0.8)
        self.assertEqual(total["accuracy"], 0.75)
        self.assertEqual(total["time_to_name_seconds"], {"median": 90, "max": 150})
        self.assertEqual(total["named_within_2_epochs"], 2 / 3)
        self.assertEqual((total["culprit_episodes"], total["culprit_episodes_exact"]), (7, 5))
        self.assertEqual(total["precision"], 5 / 7)
        self.assertEqual((total["wrong_element_culprits"], total["false_culprits"]), (1, 1))
        self.assertEqual([c["culprit"] for c in out["false_culprit_list"]], ["leaf/g009/rail3"])
        single, double = out["single"], out["double"]
        self.assertEqual((single["injected"], single["named"], single["named_correctly"]),
                         (3, 2, 2))
        self.assertEqual((double["injected"], double["named"], double["named_correctly"]),
                         (2, 2, 1))
        self.assertEqual(sorted(out["kinds"]), ["host_down", "leaf", "path", "rnic", "uplink"])
        self.assertEqual(out["kinds"]["leaf"]["accuracy"], 0.0)
        self.assertEqual(out["kinds"]["uplink"]["recall"], 0.0)

    def test_a_report_that_cannot_be_read_is_an_error(self):
        with tempfile.TemporaryDirectory(prefix="campaign_") as d:
            path = os.path.join(d, "broken.json")
            with open(path, "w") as f:
                f.write('{"faults": [')
            r = subprocess.run([os.path.join(SOURCE_DIR, "bench/fleet_faults_campaign"), path],
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("broken.json", r.stderr)


if __name__ == "__main__":
    unittest.main()


class SelectorRewriteTest(unittest.TestCase):
    """What both benchmarks rewrite: each selector once, whole, and nothing
    inside a label value, another name or a function's name."""
    EXPR = ('sum by (host) (rate(rec:a{host="rec:a",x=~"y"}[2m])) / rec:a offset 1m'
            ' + rec:ab + f(rec:a) and rec:a_total + label_replace(v, "h", "rec:a", "", "")')

    def test_the_callback_sees_names_matchers_and_ranges(self):
        seen = []

        def note(name, matchers, range_, text):
            seen.append((name, matchers, range_, text))
            return "<%s>" % text if name == "rec:a" else text

        got = sub_selectors(self.EXPR, note)
        self.assertEqual(got, 'sum by (host) (rate(<rec:a{host="rec:a",x=~"y"}[2m]>)) / <rec:a> offset 1m'
                              ' + rec:ab + f(<rec:a>) and rec:a_total'
                              ' + label_replace(v, "h", "rec:a", "", "")')
        self.assertIn(("rec:a", '{host="rec:a",x=~"y"}', "[2m]", 'rec:a{host="rec:a",x=~"y"}[2m]'),
                      seen)
        self.assertNotIn("rate", [name for name, *_ in seen])
        self.assertNotIn("f", [name for name, *_ in seen])

    def test_fleet_faults_reads_only_the_named_records_late(self):
        lagged = load_fleet_faults().lagged
        self.assertEqual(lagged("a + b[2m] + ab + a_b{x=\"a\"}", {"a", "b"}, 15),
                         "a offset 15s + b[2m] offset 15s + ab + a_b{x=\"a\"}")

    def test_fleet_faults_reads_an_earlier_rule_file_an_interval_late(self):
        # Split by rail, the part across rails reads the rails' records 30 s
        # late, a record both parts write by the kind the rails' part writes,
        # and its own records at once; the host records 15 s late in both.
        d = tempfile.mkdtemp(prefix="fleet_faults_rules_")
        try:
            def write(name, group, rules):
                with open(os.path.join(d, name), "w") as f:
                    yaml.safe_dump({"groups": [{"name": group, "interval": "30s",
                                                "rules": rules}]}, f)
                return os.path.join(d, name)

            hosts = os.path.join(d, "hosts.yml")
            with open(hosts, "w") as f:
                yaml.safe_dump({"groups": [{"name": "h", "interval": "15s", "rules": [
                    {"record": "h:x", "expr": "vector(1)"}]}]}, f)
            rails = write("rails.yml", "r", [
                {"record": "r:s", "expr": "h:x"},
                {"record": "c", "labels": {"kind": "leaf"}, "expr": "r:s"}])
            across = write("across.yml", "a", [
                {"record": "c", "labels": {"kind": "host"},
                 "expr": 'r:s + max_over_time(c{kind="leaf"}[80s]) + h:x'},
                {"record": "c", "labels": {"kind": "rnic"},
                 "expr": 'r:s unless max_over_time(c{kind="host"}[80s])'}])
            ff = load_fleet_faults()
            got = [(origin, g["name"], g["rules"][0]["expr"])
                   for origin, g in ff.recording_rules(hosts, [rails, across])]
        finally:
            shutil.rmtree(d)
        self.assertEqual(got, [
            ("h", ff.PHASE_GROUP, "vector(1)"),
            ("r", ff.PHASE_GROUP, "h:x offset 15s"),
            ("r", ff.PHASE_GROUP, "r:s"),
            ("a", ff.PHASE_GROUP,
             'r:s offset 30s + max_over_time(c{kind="leaf"}[80s] offset 30s) + h:x offset 15s'),
            ("a", ff.PHASE_GROUP, 'r:s offset 30s unless max_over_time(c{kind="host"}[80s])')])

    def test_fleet_load_expands_records_with_their_matchers(self):
        defs = {"x": ["sum by (group) (z)"], "w": ["x * 2"]}
        self.assertEqual(
            fleet_load.raw('x{group="g1"} + y', defs),
            '(((sum by (group) (z))) and on (group) '
            'label_replace(vector(1), "group", "g1", "", "")) + y')
        self.assertEqual(fleet_load.raw("w", defs), "((((sum by (group) (z))) * 2))")
        self.assertEqual(fleet_load.raw('x{group=~".*"}', defs), "((sum by (group) (z)))")
        self.assertIsNone(fleet_load.raw('x{group!="g1"}', defs))

