"""Which collectors run and what a scrape gets: --collector.NAME,
--no-collector.NAME, --collector.disable-defaults, and the collect[] and
exclude[] parameters of /metrics."""
import gzip
import http.client
import re
import signal
import subprocess
import time
import unittest
import urllib.parse

from harness import BIN, Exporter, Prometheus, make_sysfs, value, wait_log

ALL = ["devices", "hw_counters", "optional_counters", "resources", "qp_counters", "ethtool",
       "dcb", "sysfs", "pcie", "link", "transceiver", "pods"]
# Those that run without a kubernetes section (pods runs only with it).
RUN = [name for name in ALL if name != "pods"]
CONFIG = "collection:\n  max_age: 0s\n"
SYSFS_FAMILY = "rdma_port_pma_symbol_error_total"   # the sysfs collector
HW_FAMILY = "rdma_port_hw_out_of_sequence_total"    # hw_counters (from sysfs here)


def get(exporter, path, headers=None, method="GET"):
    conn = http.client.HTTPConnection("127.0.0.1", exporter.port, timeout=10)
    conn.request(method, path, headers=headers or {})
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp, body


def collectors_reported(text):
    return sorted(re.findall(r'^rdma_exporter_collector_success\{collector="([^"]+)"\}', text,
                             re.M))


def families(text):
    return set(re.findall(r"^# TYPE (\S+) ", text, re.M))


class CollectorFlagsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sysfs = make_sysfs("mlx5:1:1")

    def scrape_with(self, *flags, config=CONFIG):
        with Exporter("--path.sysfs", self.sysfs, *flags, config=config) as exporter:
            _, body = get(exporter, "/metrics")
        return body.decode()

    def test_default_runs_every_collector(self):
        text = self.scrape_with()
        self.assertEqual(collectors_reported(text), sorted(RUN))
        self.assertIn(SYSFS_FAMILY, families(text))
        self.assertIn(HW_FAMILY, families(text))

    def test_no_collector_turns_one_off(self):
        text = self.scrape_with("--no-collector.sysfs")
        self.assertEqual(collectors_reported(text), sorted(set(RUN) - {"sysfs"}))
        self.assertNotIn(SYSFS_FAMILY, families(text))
        self.assertNotIn("rdma_port_rate_bytes_per_second", families(text))
        self.assertIn(HW_FAMILY, families(text))

    def test_disable_defaults_runs_only_the_named_ones_whatever_the_file_says(self):
        text = self.scrape_with("--collector.disable-defaults", "--collector.sysfs",
                                config=CONFIG + "collectors:\n  hw_counters: true\n"
                                                "  sysfs: false\n")
        self.assertEqual(collectors_reported(text), ["sysfs"])
        self.assertIn(SYSFS_FAMILY, families(text))
        self.assertNotIn(HW_FAMILY, families(text))
        self.assertIn("rdma_exporter_build_info", families(text))

    def test_last_flag_of_a_pair_wins(self):
        text = self.scrape_with("--collector.disable-defaults", "--collector.hw_counters",
                                "--no-collector.hw_counters", "--collector.sysfs")
        self.assertEqual(collectors_reported(text), ["sysfs"])

    def test_flags_survive_a_reload(self):
        with Exporter("--path.sysfs", self.sysfs, "--no-collector.hw_counters",
                      config=CONFIG + "collectors:\n  hw_counters: true\n") as exporter:
            exporter.proc.send_signal(signal.SIGHUP)
            wait_log(exporter, "configuration reloaded")
            _, body = get(exporter, "/metrics")
        self.assertNotIn(HW_FAMILY, families(body.decode()))
        self.assertIn(SYSFS_FAMILY, families(body.decode()))

    def test_unknown_collector_exits_2_naming_it(self):
        r = subprocess.run([BIN, "--collector.infiniband", "--once"], capture_output=True,
                           text=True, timeout=30, check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn('rdma_exporter: unknown collector "infiniband" in --collector.infiniband '
                      "(collectors: devices, hw_counters, optional_counters, resources, "
                      "qp_counters, ethtool, dcb, sysfs, pcie, link, transceiver, pods)", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_help_lists_every_collector(self):
        r = subprocess.run([BIN, "--help"], capture_output=True, text=True, timeout=30,
                           check=True)
        help_text = " ".join(r.stdout.split())
        for name in ALL:
            self.assertIn(f"--collector.{name} enable the {name} collector (default enabled): ",
                          help_text)
            self.assertIn(f"--no-collector.{name} disable the {name} collector", help_text)
        self.assertIn("--collector.disable-defaults", help_text)

    def test_once_follows_the_flags(self):
        r = subprocess.run([BIN, "--once", "--path.sysfs", self.sysfs,
                            "--collector.disable-defaults", "--collector.hw_counters"],
                           capture_output=True, text=True, timeout=60, check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(collectors_reported(r.stdout), ["hw_counters"])
        self.assertNotIn(SYSFS_FAMILY, r.stdout)


class CollectParameterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sysfs = make_sysfs("mlx5:1:1")
        cls.exporter = Exporter("--path.sysfs", cls.sysfs, "--no-collector.dcb",
                                config="collection:\n  max_age: 1h\n")

    @classmethod
    def tearDownClass(cls):
        assert cls.exporter.stop() == 0, cls.exporter.log()

    def metrics(self, query, headers=None):
        resp, body = get(self.exporter, "/metrics?" + query, headers)
        return resp, body

    def test_collect_serves_only_the_named_collectors(self):
        resp, body = self.metrics("collect[]=sysfs")
        self.assertEqual(resp.status, 200)
        text = body.decode()
        self.assertEqual(collectors_reported(text), ["sysfs"])
        self.assertIn(SYSFS_FAMILY, families(text))
        self.assertNotIn(HW_FAMILY, families(text))
        self.assertNotIn('collector="hw_counters"', text)
        # The exporter's own metrics stay.
        for own in ("rdma_exporter_build_info", "rdma_exporter_collections_total",
                    "process_cpu_seconds_total", "rdma_exporter_http_open_connections"):
            self.assertIn(own, families(text))

    def test_percent_encoded_as_prometheus_sends_it(self):
        query = urllib.parse.urlencode({"collect[]": ["sysfs", "hw_counters"]}, doseq=True)
        self.assertIn("collect%5B%5D=sysfs", query)
        resp, body = self.metrics(query)
        self.assertEqual(resp.status, 200)
        self.assertEqual(collectors_reported(body.decode()), ["hw_counters", "sysfs"])
        self.assertIn(HW_FAMILY, families(body.decode()))

    def test_exclude_serves_the_rest(self):
        resp, body = self.metrics("exclude[]=sysfs&exclude[]=qp_counters")
        self.assertEqual(resp.status, 200)
        text = body.decode()
        self.assertEqual(collectors_reported(text),
                         sorted(set(RUN) - {"sysfs", "qp_counters", "dcb"}))
        self.assertNotIn(SYSFS_FAMILY, families(text))
        self.assertIn(HW_FAMILY, families(text))

    def test_one_collection_serves_filtered_and_whole_scrapes(self):
        _, whole = get(self.exporter, "/metrics")
        _, part = self.metrics("collect[]=sysfs")
        count = value(whole.decode(), "rdma_exporter_collections_total")
        self.assertEqual(value(part.decode(), "rdma_exporter_collections_total"), count)
        # The same values, cut from the same collection.
        sample = 'rdma_port_pma_port_xmit_data_bytes_total{device="mlx5_0",port="1"}'
        self.assertEqual(value(part.decode(), sample), value(whole.decode(), sample))

    def test_gzip_and_head(self):
        resp, body = self.metrics("collect[]=sysfs", {"Accept-Encoding": "gzip"})
        self.assertEqual(resp.getheader("Content-Encoding"), "gzip")
        text = gzip.decompress(body).decode()
        self.assertEqual(collectors_reported(text), ["sysfs"])
        resp, body = get(self.exporter, "/metrics?collect[]=sysfs", method="HEAD")
        self.assertEqual((resp.status, body), (200, b""))
        self.assertEqual(int(resp.getheader("Content-Length")), len(text))

    def test_bad_parameters_are_400_with_a_reason(self):
        for query, reason in [
                ("collect[]=sysfs&exclude[]=devices",
                 "collect[] and exclude[] cannot be used in one request\n"),
                ("collect[]=infiniband",
                 'unknown collector "infiniband" in collect[] (collectors: devices, hw_counters, '
                 "optional_counters, resources, qp_counters, ethtool, dcb, sysfs, pcie, link, "
                 "transceiver, pods, probe)\n"),
                ("collect[]=dcb", 'collector "dcb" in collect[] is not enabled\n'),
                ("exclude[]=probe", 'collector "probe" in exclude[] is not enabled\n'),
                ("collect[]=%zz", 'malformed percent escape in the query string: "%zz"\n')]:
            resp, body = self.metrics(query)
            self.assertEqual((resp.status, body.decode()), (400, reason), query)
        _, body = get(self.exporter, "/metrics?collect[]=sysfs&x=1")
        self.assertIn(SYSFS_FAMILY, families(body.decode()))


class PrometheusParamsTest(unittest.TestCase):
    """Debian's Prometheus sends `params: collect[]` the way the exporter reads it."""

    def test_scrape_with_collect_params(self):
        with Exporter("--path.sysfs", make_sysfs("mlx5:1:1"), config=CONFIG) as exporter:
            prometheus = Prometheus(f"""global:
  scrape_interval: 1s
scrape_configs:
  - job_name: sysfs_only
    params:
      collect[]: [sysfs]
    static_configs:
      - targets: ['127.0.0.1:{exporter.port}']
""")
            try:
                deadline = time.monotonic() + 60
                while True:
                    up = prometheus.query('up{job="sysfs_only"} == 1')["data"]["result"]
                    if up:
                        break
                    self.assertLess(time.monotonic(), deadline, prometheus.log())
                    time.sleep(0.5)

                def series(expr):
                    return sorted(tuple(sorted(r["metric"].items()))
                                  for r in prometheus.query(expr)["data"]["result"])

                self.assertEqual(series("rdma_exporter_collector_success"),
                                 [(("__name__", "rdma_exporter_collector_success"),
                                   ("collector", "sysfs"), ("instance", f"127.0.0.1:{exporter.port}"),
                                   ("job", "sysfs_only"))])
                self.assertEqual(len(series(SYSFS_FAMILY)), 1)
                self.assertEqual(series(HW_FAMILY), [])
            finally:
                prometheus.stop()


if __name__ == "__main__":
    unittest.main()
