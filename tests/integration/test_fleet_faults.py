"""The culprit rules against simulated faults (bench/fleet_faults): a fleet
of 64 hosts on 4 rails in groups of 8, its probes simulated by
bench/fleet_faults_sim with the real pinglists and the probe's own
statistics, the rules evaluated by a real Prometheus. Every fault of the
shipped CI scenarios is named, as exactly its element, within 2 pinglist
epochs of simulated time, and nothing else is named (host stalls shorter
than the probe timeout run all along)."""
import json
import os
import subprocess
import tempfile
import unittest

from harness import SOURCE_DIR

SIM = os.environ.get("RDMA_FLEET_FAULTS_SIM_BIN",
                     os.path.join(SOURCE_DIR, "build/bench/fleet_faults_sim"))
SCENARIOS = os.path.join(SOURCE_DIR, "bench/scenarios")
EPOCH_SECONDS = 60


class FleetFaultsTest(unittest.TestCase):
    def run_scenario(self, name):
        with tempfile.TemporaryDirectory(prefix="fleet_faults_") as d:
            report = os.path.join(d, "report.json")
            r = subprocess.run([os.path.join(SOURCE_DIR, "bench/fleet_faults"),
                                os.path.join(SCENARIOS, name), "--sim", SIM, "--report", report],
                               capture_output=True, text=True, timeout=900)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with open(report) as f:
                return json.load(f)

    def check(self, report, expected):
        named = {}
        for fault in report["faults"]:
            if fault["kind"] != "host_stall":
                offset = fault["start"] - report["timeline_start"]
                named[(fault["kind"], offset)] = fault["named_as"]
        self.assertEqual(named, expected)
        self.assertEqual(report["false_culprit_list"], [])
        total = report["total"]
        self.assertEqual(total["named_correctly"], total["injected"])
        self.assertLessEqual(total["time_to_name_seconds"]["max"], 2 * EPOCH_SECONDS)

    def test_faults_at_the_ends_and_leaves(self):
        report = self.run_scenario("ci-small.yml")
        self.check(report, {
            ("rnic", 180.0): ["rnic/h0005:10911/mlx5_1"],
            ("rnic", 600.0): ["rnic/h0040:10911/mlx5_3"],
            ("leaf", 1020.0): ["leaf/g002/rail0"],
            ("leaf", 1440.0): ["leaf/g006/rail2"],
            ("host_down", 1860.0): ["host/h0033:10911"],
        })

    def test_faults_between_groups(self):
        report = self.run_scenario("ci-between-groups.yml")
        self.check(report, {
            ("uplink", 120.0): ["uplink/g003/rail1"],
            ("uplink", 540.0): ["uplink/g005/rail2"],
            ("path", 960.0): ["path/g001/g006/rail0"],
            ("rnic", 1380.0): ["rnic/h0020:10911/mlx5_0"],
        })


if __name__ == "__main__":
    unittest.main()
