"""Configuration reload: SIGHUP and POST /-/reload, valid and invalid files,
and files that are FIFOs (read without waiting for a writer, refused)."""
import http.client
import os
import signal
import subprocess
import tempfile
import time
import unittest

from harness import BIN, Exporter, make_sysfs, value, wait_log, write_config


def get(port, path, method="GET"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request(method, path)
    resp = conn.getresponse()
    body = resp.read().decode()
    conn.close()
    return resp.status, body


class ReloadTest(unittest.TestCase):
    def setUp(self):
        self.sysfs = make_sysfs("mlx5:2:1")
        self.base = f"collection: {{max_age: 0s}}\nsysfs: {{root: {self.sysfs}}}\n"

    def start(self, extra=""):
        exp = Exporter(config=self.base + extra)
        self.addCleanup(exp.stop)
        self.path = exp.proc.args[exp.proc.args.index("--config.file") + 1]
        return exp

    def rewrite(self, text):
        with open(self.path, "w") as f:
            f.write(text)

    def test_sighup_applies_a_valid_file_without_resetting_counters(self):
        exp = self.start()
        _, before = get(exp.port, "/metrics")
        self.assertIn('device="mlx5_1"', before)
        collections = value(before, "rdma_exporter_collections_total")
        stamp = value(before, "rdma_exporter_config_last_reload_success_timestamp_seconds")
        self.rewrite(self.base + "devices: {exclude: [mlx5_1]}\n")
        time.sleep(0.01)
        exp.proc.send_signal(signal.SIGHUP)
        wait_log(exp, "configuration reloaded")
        _, after = get(exp.port, "/metrics")
        self.assertNotIn('device="mlx5_1"', after)
        self.assertIn('device="mlx5_0"', after)
        self.assertEqual(value(after, "rdma_exporter_config_last_reload_successful"), 1)
        self.assertGreater(value(after, "rdma_exporter_collections_total"), collections)
        self.assertGreater(value(after, "rdma_exporter_config_last_reload_success_timestamp_seconds"),
                           stamp)
        self.assertGreaterEqual(
            value(after, "rdma_exporter_http_requests_total", '{handler="/metrics",code="200"}'), 1)

    def test_invalid_file_is_rejected_and_the_running_configuration_kept(self):
        exp = self.start()
        self.rewrite(self.base + "devices: {exclude: [mlx5_1]}\nweb: {max_connections: none}\n")
        exp.proc.send_signal(signal.SIGHUP)
        wait_log(exp, "reload rejected")
        self.assertRegex(exp.log(), r"reload rejected\" err=\"\S+:4:\d+: web.max_connections")
        _, text = get(exp.port, "/metrics")
        self.assertIn('device="mlx5_1"', text)  # the old configuration still applies
        self.assertEqual(value(text, "rdma_exporter_config_last_reload_successful"), 0)
        # A good file afterwards recovers.
        self.rewrite(self.base)
        exp.proc.send_signal(signal.SIGHUP)
        wait_log(exp, "configuration reloaded")
        _, text = get(exp.port, "/metrics")
        self.assertEqual(value(text, "rdma_exporter_config_last_reload_successful"), 1)

    def test_lifecycle_endpoint_is_off_by_default(self):
        exp = self.start()
        self.assertEqual(get(exp.port, "/-/reload", "POST")[0], 403)

    def test_lifecycle_endpoint_reloads_when_enabled(self):
        exp = self.start("web: {enable_lifecycle: true}\n")
        self.assertEqual(get(exp.port, "/-/reload", "GET")[0], 405)
        self.rewrite(self.base + "web: {enable_lifecycle: true}\ndevices: {include: [mlx5_0]}\n")
        status, body = get(exp.port, "/-/reload", "POST")
        self.assertEqual((status, body), (200, "configuration reloaded\n"))
        _, text = get(exp.port, "/metrics")
        self.assertNotIn('device="mlx5_1"', text)
        self.rewrite("web: [broken\n")
        status, body = get(exp.port, "/-/reload", "POST")
        self.assertEqual(status, 500)
        self.assertIn("reload rejected", body)
        self.assertEqual(get(exp.port, "/healthz")[0], 200)

    def fifo_in_place_of(self, path):
        """PATH replaced by a FIFO that no one ever writes to."""
        os.unlink(path)
        os.mkfifo(path, 0o600)

    def assert_rejected_and_serving(self, exp, problem):
        """A SIGHUP is rejected for PROBLEM, said once; the daemon serves the
        configuration it ran with and stops at SIGTERM."""
        exp.proc.send_signal(signal.SIGHUP)
        wait_log(exp, "reload rejected")
        self.assertIn(problem, exp.log())
        self.assertEqual(exp.log().count("is a FIFO"), 1, exp.log())
        status, text = get(exp.port, "/metrics")
        self.assertEqual(status, 200)
        self.assertIn('device="mlx5_1"', text)
        self.assertEqual(value(text, "rdma_exporter_config_last_reload_successful"), 0)
        self.assertEqual(exp.stop(timeout=15), 0)
        self.assertIn("stopped", exp.log())

    def test_a_fifo_in_place_of_the_configuration_file_is_rejected(self):
        exp = self.start()
        self.fifo_in_place_of(self.path)
        self.assert_rejected_and_serving(
            exp, f"{self.path}: cannot read configuration file: is a FIFO, not a regular file")

    def test_a_fifo_in_place_of_the_web_configuration_file_is_rejected(self):
        web = write_config("http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n")
        exp = Exporter("--web.config.file", web, config=self.base)
        self.addCleanup(exp.stop)
        self.fifo_in_place_of(web)
        self.assert_rejected_and_serving(
            exp, f"{web}: cannot read web configuration file: is a FIFO, not a regular file")

    def test_a_fifo_as_the_configuration_file_at_start_is_a_configuration_error(self):
        fifo = os.path.join(tempfile.mkdtemp(prefix="rdma_fifo_"), "rdma_exporter.yml")
        os.mkfifo(fifo, 0o600)
        r = subprocess.run([BIN, "--web.listen-address", "127.0.0.1:0", "--config.file", fifo],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(f"{fifo}: cannot read configuration file: is a FIFO, not a regular file",
                      r.stderr)


if __name__ == "__main__":
    unittest.main()
