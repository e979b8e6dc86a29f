"""vm.chaos: the short form of bench/chaos.py on the multi-VM bed.

Every fault kind of the chaos run (a paused VM, a killed exporter, a device
deleted and added, a cut rail, valid and broken reloads, a file_sd file
rewritten, truncated or garbled, the OTLP receiver down) at least once, with
several at once, in about six minutes of faults and settling, seed fixed.
The run's own checks decide (answering, crashes, monotonic counters, no
probe success over a cut path, the faults' effects, recovery within its
bound, resources); this suite asserts that they found nothing, that every
kind ran and that each check had something to check. The report is printed
and kept in RDMA_CHAOS_REPORT (default /var/tmp/rdma-chaos-vm-test).
"""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))

import chaos  # noqa: E402

REPORT = os.environ.get("RDMA_CHAOS_REPORT", "/var/tmp/rdma-chaos-vm-test")
SEED = 11
ARGS = ["--duration", "360s", "--warmup", "50s", "--settle", "150s", "--gap", "3-10",
        "--seed", str(SEED), "--report", REPORT]


class ChaosTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rc = chaos.main(ARGS)
        with open(os.path.join(REPORT, "chaos-report.json")) as f:
            cls.report = json.load(f)

    def test_no_check_failed(self):
        self.assertEqual(self.report["violations"], [],
                         chaos.summary(self.report) + f"\nbed: {self.report.get('bed_dir')}")
        self.assertEqual(self.rc, 0)

    def test_every_kind_ran_and_some_together(self):
        self.assertEqual(sorted(self.report["kinds_run"]), sorted(chaos.KINDS))
        self.assertGreaterEqual(self.report["max_concurrent_seen"], 2)

    def test_every_check_had_work(self):
        c = self.report["counts"]
        # Every scrape compared with the one before it checked at least one
        # counter (every exporter has counters), however few a loaded
        # machine allowed.
        self.assertGreater(c["scrapes_compared"], 0)
        self.assertGreaterEqual(c["monotonic_samples"], c["scrapes_compared"])
        self.assertGreater(c["honesty_checks"], 0)
        self.assertGreater(c["queue_checks"], 0)
        # Each killed exporter came back as a new process: a documented reset.
        killed = sum(1 for f in self.report["faults"]
                     if f["kind"] == "exporter_kill" and f["end_s"] is not None)
        self.assertGreaterEqual(c["documented_resets"], killed)
        # Prometheus scrapes on its own clock, one scrape an interval over
        # the run's duration (the warm-up and settling besides); half of
        # them allows for the ones a loaded machine delays past the end.
        interval = self.report["prometheus_interval_s"]
        for vm, up in self.report["prometheus_up"].items():
            self.assertGreaterEqual(up["scrapes"], self.report["duration_s"] / interval / 2, vm)

    def test_every_fault_recovered(self):
        for f in self.report["faults"]:
            if f["end_s"] is None or "ended by the end of the run" in f["notes"]:
                continue
            self.assertIsNotNone(f["recovery"]["seconds"], f)


if __name__ == "__main__":
    unittest.main(verbosity=2)
