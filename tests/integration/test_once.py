"""rdma_exporter --once: one collection to stdout, exit code by outcome."""
import json
import os
import subprocess
import tempfile
import unittest

from harness import BIN, make_sysfs, promtool


def once(*args, **kw):
    return subprocess.run([BIN, "--once", *args], capture_output=True, text=True, timeout=60, **kw)


class OnceTest(unittest.TestCase):
    def test_healthy_tree_exits_0_with_the_exposition(self):
        r = once("--path.sysfs", make_sysfs("mlx5:2:2 rxe"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('rdma_port_pma_symbol_error_total{device="mlx5_1",port="2"}', r.stdout)
        self.assertIn('rdma_port_link_layer_info{device="rxe0",port="1",link_layer="Ethernet"} 1',
                      r.stdout)
        self.assertIn('rdma_exporter_collector_success{collector="sysfs"} 1', r.stdout)

    def test_promtool_accepts_the_output(self):
        self.assertIsNotNone(promtool(), "promtool missing: scripts/setup installs it")
        r = once("--path.sysfs", make_sysfs("mlx5:1:2 efa rxe"))
        check = subprocess.run(["promtool", "check", "metrics"], input=r.stdout,
                               capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)

    def test_failures_exit_1_name_the_file_and_keep_good_values(self):
        r = once("--path.sysfs", make_sysfs("mlx5 broken"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("collector sysfs: read ", r.stderr)
        self.assertIn("broken0/ports/1/counters/port_rcv_errors: not a counter value", r.stderr)
        self.assertIn('rdma_port_pma_port_xmit_packets_total{device="broken0",port="1"} 12', r.stdout)
        self.assertIn('rdma_exporter_collector_success{collector="sysfs"} 0', r.stdout)

    def test_excluded_device_disappears_and_its_failures_with_it(self):
        r = once("--path.sysfs", make_sysfs("mlx5 broken"), "--devices.exclude", "broken.*")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("broken0", r.stdout)
        r = once("--path.sysfs", make_sysfs("mlx5:3"), "--devices.include", "mlx5_[02]")
        self.assertIn('device="mlx5_2"', r.stdout)
        self.assertNotIn('device="mlx5_1"', r.stdout)

    def test_host_without_rdma_exits_0_with_exporter_metrics_only(self):
        r = once("--path.sysfs", "/nonexistent")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("rdma_exporter_build_info", r.stdout)
        self.assertIn("rdma_exporter_collector_success", r.stdout)
        if "rdma_exporter_netlink_available 0" in r.stdout:
            # This machine has no RDMA kernel: exactly one line says so.
            self.assertNotIn("rdma_device_info", r.stdout)
            lines = [l for l in r.stderr.splitlines() if "no RDMA on this host" in l]
            self.assertEqual(len(lines), 1, r.stderr)
            self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)

    def test_unwritable_stdout_is_a_failure(self):
        with open("/dev/full", "w") as full:
            r = subprocess.run([BIN, "--once", "--path.sysfs", make_sysfs("mlx5:4:2")],
                               stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn("writing the metrics to stdout failed", r.stderr)


class FormatTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sysfs = make_sysfs("mlx5:1:2 rxe")
        cls.text = once("--path.sysfs", cls.sysfs).stdout

    def prometheus_values(self):
        from prometheus_client.parser import text_string_to_metric_families
        out = {}
        for fam in text_string_to_metric_families(self.text):
            for s in fam.samples:
                if s.name.startswith("rdma_exporter_collector_duration") or \
                        s.name.startswith("rdma_exporter_collection_duration"):
                    continue
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
        return out

    def test_openmetrics_parses_strictly_and_carries_the_same_samples(self):
        from prometheus_client.openmetrics.parser import text_string_to_metric_families
        r = once("--path.sysfs", self.sysfs, "--format", "openmetrics")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.endswith("# EOF\n"))
        got = {}
        types = {}
        for fam in text_string_to_metric_families(r.stdout):
            types[fam.name] = fam.type
            for s in fam.samples:
                got[(s.name, tuple(sorted(s.labels.items())))] = s.value
        self.assertEqual(types["rdma_port_pma_port_xmit_data_bytes"], "counter")
        want = self.prometheus_values()
        for key, value in want.items():
            self.assertIn(key, got)
            self.assertEqual(got[key], value, key)

    def test_json_schema(self):
        r = once("--path.sysfs", self.sysfs, "--format", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["schema"], "rdma_exporter/v1")
        self.assertIsInstance(doc["timestamp_seconds"], (int, float))
        names = {c["name"]: c for c in doc["collectors"]}
        self.assertTrue(names["sysfs"]["success"])
        self.assertEqual(names["sysfs"]["errors"], [])
        fams = {m["name"]: m for m in doc["metrics"]}
        xmit = fams["rdma_port_pma_port_xmit_data_bytes_total"]
        self.assertEqual(xmit["type"], "counter")
        sample = [s for s in xmit["samples"] if s["labels"] == {"device": "mlx5_0", "port": "2"}]
        self.assertEqual(len(sample), 1)
        want = self.prometheus_values()[("rdma_port_pma_port_xmit_data_bytes_total",
                                         (("device", "mlx5_0"), ("port", "2")))]
        self.assertEqual(sample[0]["value"], want)

    def test_otlp_json_carries_the_same_values(self):
        r = once("--path.sysfs", self.sysfs, "--format", "otlp-json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        rm = doc["resourceMetrics"][0]
        attrs = {a["key"]: a["value"]["stringValue"] for a in rm["resource"]["attributes"]}
        self.assertEqual(attrs["service.name"], "rdma_exporter")
        metrics = {m["name"]: m for m in rm["scopeMetrics"][0]["metrics"]}
        xmit = metrics["rdma.port.pma.port_xmit_data"]
        self.assertEqual(xmit["unit"], "By")
        self.assertTrue(xmit["sum"]["isMonotonic"])
        self.assertEqual(xmit["sum"]["aggregationTemporality"], 2)
        point = [p for p in xmit["sum"]["dataPoints"]
                 if {a["key"]: a["value"]["stringValue"] for a in p["attributes"]}
                 == {"device": "mlx5_0", "port": "2"}][0]
        want = self.prometheus_values()[("rdma_port_pma_port_xmit_data_bytes_total",
                                         (("device", "mlx5_0"), ("port", "2")))]
        self.assertEqual(int(point["asInt"]), want)

    def test_json_reports_failures(self):
        r = once("--path.sysfs", make_sysfs("broken"), "--format", "json")
        self.assertEqual(r.returncode, 1)
        doc = json.loads(r.stdout)
        sysfs = [c for c in doc["collectors"] if c["name"] == "sysfs"][0]
        self.assertFalse(sysfs["success"])
        self.assertTrue(any("port_rcv_errors" in e for e in sysfs["errors"]))

    def test_output_file_is_replaced_atomically(self):
        out_dir = tempfile.mkdtemp(prefix="rdma_once_out_")
        path = os.path.join(out_dir, "rdma.prom")
        with open(path, "w") as f:
            f.write("old\n")
        r = once("--path.sysfs", self.sysfs, "--output", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "")
        with open(path) as f:
            content = f.read()
        self.assertNotIn("old", content.splitlines()[0])
        self.assertIn("rdma_port_pma_symbol_error_total", content)
        self.assertEqual(os.listdir(out_dir), ["rdma.prom"])  # no temporary file left
        self.assertEqual(oct(os.stat(path).st_mode & 0o777), "0o644")

    def test_unwritable_output_fails_and_keeps_the_old_file(self):
        out_dir = tempfile.mkdtemp(prefix="rdma_once_ro_")
        path = os.path.join(out_dir, "rdma.prom")
        r = once("--path.sysfs", self.sysfs, "--output", os.path.join(out_dir, "missing", "x.prom"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("writing the metrics failed", r.stderr)
        self.assertFalse(os.path.exists(path))

    def test_format_usage_errors(self):
        self.assertEqual(once("--format", "xml").returncode, 2)
        r = subprocess.run([BIN, "--format", "json"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn("go with --once", r.stderr)


if __name__ == "__main__":
    unittest.main()
