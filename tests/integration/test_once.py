"""rdma_exporter --once: one collection to stdout, exit code by outcome."""
import os
import subprocess
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


if __name__ == "__main__":
    unittest.main()
