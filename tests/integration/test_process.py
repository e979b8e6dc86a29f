"""The daemon's process_* metrics against /proc/<pid> of the running daemon,
and --web.disable-exporter-metrics."""
import os
import re
import subprocess
import unittest
import urllib.request

from harness import BIN, SOURCE_DIR, Exporter, make_sysfs, value
from metrics_doc import MetricsDoc

PROCESS_METRICS = ("process_cpu_seconds_total", "process_resident_memory_bytes",
                   "process_virtual_memory_bytes", "process_virtual_memory_max_bytes",
                   "process_open_fds", "process_max_fds", "process_start_time_seconds",
                   "process_threads")
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
CONFIG = "collection:\n  max_age: 0s\n"


def scrape(exporter, path="/metrics"):
    with urllib.request.urlopen(f"http://127.0.0.1:{exporter.port}{path}", timeout=10) as r:
        return r.read().decode()


def proc_stat(pid):
    """utime + stime in seconds, threads, starttime (ticks), vsize, rss bytes."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is field 3 of proc(5)
    return {"cpu": (int(fields[11]) + int(fields[12])) / CLK_TCK,
            "threads": int(fields[17]),
            "starttime": int(fields[19]),
            "vsize": int(fields[20]),
            "rss": int(fields[21]) * PAGE}


def soft_limit(pid, row):
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith(row):
                return line[len(row):].split()[0]
    raise AssertionError(f"no {row} in /proc/{pid}/limits")


def boot_time():
    with open("/proc/stat") as f:
        return int(re.search(r"^btime (\d+)$", f.read(), re.M).group(1))


class ProcessMetricsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sysfs = make_sysfs("mlx5:1:1")
        cls.exporter = Exporter("--path.sysfs", cls.sysfs, config=CONFIG)

    @classmethod
    def tearDownClass(cls):
        assert cls.exporter.stop() == 0, cls.exporter.log()

    def test_values_agree_with_proc_of_the_daemon(self):
        pid = self.exporter.proc.pid
        before = proc_stat(pid)
        text = scrape(self.exporter)
        after = proc_stat(pid)
        fds = len(os.listdir(f"/proc/{pid}/fd"))

        cpu = value(text, "process_cpu_seconds_total")
        self.assertLessEqual(before["cpu"], cpu)
        self.assertLessEqual(cpu, after["cpu"])
        rss = value(text, "process_resident_memory_bytes")
        self.assertLess(abs(rss - after["rss"]), max(0.25 * after["rss"], 4 << 20))
        vsize = value(text, "process_virtual_memory_bytes")
        self.assertLess(abs(vsize - after["vsize"]), max(0.25 * after["vsize"], 16 << 20))
        # Exact: limits and the start time do not move.
        self.assertEqual(value(text, "process_max_fds"),
                         float(soft_limit(pid, "Max open files")))
        space = soft_limit(pid, "Max address space")
        # Unlimited is RLIM_INFINITY, 2^64 - 1; the text format prints 16 digits.
        self.assertAlmostEqual(value(text, "process_virtual_memory_max_bytes"),
                               2.0**64 if space == "unlimited" else float(space), delta=1e5)
        start = boot_time() + after["starttime"] / CLK_TCK
        self.assertLessEqual(abs(value(text, "process_start_time_seconds") - start), 1.0)
        # The scrape's own connection may be open or closed by now.
        self.assertLessEqual(abs(value(text, "process_open_fds") - fds), 3)
        self.assertGreaterEqual(value(text, "process_open_fds"), 3)
        self.assertEqual(value(text, "process_threads"), after["threads"])

    def test_types_and_documentation(self):
        text = scrape(self.exporter)
        self.assertIn("# TYPE process_cpu_seconds_total counter\n", text)
        for name in PROCESS_METRICS[1:]:
            self.assertIn(f"# TYPE {name} gauge\n", text)
        # Every family served, the process ones included, is in docs/metrics.md.
        doc = MetricsDoc(os.path.join(SOURCE_DIR, "docs/metrics.md"))
        names = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
        self.assertTrue(set(PROCESS_METRICS) <= names)
        self.assertEqual([p for p in map(doc.problem, sorted(names)) if p], [])

    def test_http_metrics_are_served_by_default(self):
        # A scrape joins a collection already under way (the first one, right
        # after start): one whole scrape first, so the next starts its own
        # collection after /healthz was answered.
        scrape(self.exporter)
        scrape(self.exporter, "/healthz")
        self.assertIsNotNone(value(scrape(self.exporter), "rdma_exporter_http_requests_total",
                                   '{handler="/healthz",code="200"}'))

    def test_once_has_no_process_metrics(self):
        r = subprocess.run([BIN, "--once", "--path.sysfs", self.sysfs], capture_output=True,
                           text=True, timeout=60, check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("rdma_exporter_build_info", r.stdout)
        self.assertNotIn("process_", r.stdout)


class DisableExporterMetricsTest(unittest.TestCase):
    def test_process_and_http_metrics_go_the_rest_stays(self):
        sysfs = make_sysfs("mlx5:1:1")
        with Exporter("--path.sysfs", sysfs, "--web.disable-exporter-metrics",
                      config=CONFIG) as exporter:
            scrape(exporter, "/healthz")
            text = scrape(exporter)
        self.assertNotRegex(text, r"(?m)^(# TYPE )?process_")
        self.assertNotIn("rdma_exporter_http_", text)
        for kept in ('rdma_exporter_collector_success{collector="sysfs"} 1',
                     "rdma_exporter_collections_total ", "rdma_exporter_build_info{",
                     "rdma_exporter_config_last_reload_successful 1",
                     "rdma_exporter_collection_duration_seconds ",
                     'rdma_port_pma_symbol_error_total{device="mlx5_0",port="1"}'):
            self.assertIn(kept, text)


if __name__ == "__main__":
    unittest.main()
