"""./scripts/run on a host without RDMA, end to end: the Soft-RoCE VM with
two exporters probing each other, Prometheus on the host scraping both with
the project's alerting rules. The test reads the URLs the demo prints, asks
the exporters and Prometheus, then presses Ctrl-C (SIGINT to the demo's
process group, as a terminal does) and checks that the VM, Prometheus and
every temporary directory are gone.

Environment: RDMA_EXPORTER_BIN (the binary the demo runs; it skips setup and
build with it).
"""
import calendar
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

from vmrun import BIN, HERE, Exposition

sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from harness import free_port  # noqa: E402

SCRIPT = os.path.join(HERE, "..", "..", "scripts", "run")
STAGES = "/var/tmp/rdma-exporter-demo.*"
# Boot, rxe, two exporters, Prometheus and the first probe latencies.
READY_TIMEOUT = 600


def get(url, timeout=30):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def processes_mentioning(text):
    out = []
    for cmdline in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(cmdline, "rb") as f:
                args = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in args:
            out.append(args)
    return out


class DemoTest(unittest.TestCase):
    def test_demo_serves_probes_to_prometheus_and_ctrl_c_leaves_nothing(self):
        tmpdir = tempfile.mkdtemp(prefix="rdma-demo-test-", dir="/var/tmp")
        before = set(glob.glob(STAGES))
        ports = {free_port()}
        while len(ports) < 3:
            ports.add(free_port())
        port_a, port_b, port_p = sorted(ports)
        env = dict(os.environ, RDMA_EXPORTER_BIN=BIN, TMPDIR=tmpdir,
                   RDMA_EXPORTER_DEMO_PORT=str(port_a), RDMA_EXPORTER_DEMO_PORT_B=str(port_b),
                   RDMA_EXPORTER_DEMO_PROMETHEUS_PORT=str(port_p))
        log_path = tmpdir + ".log"
        log = open(log_path, "w+")
        demo = subprocess.Popen([SCRIPT], env=env, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + READY_TIMEOUT
            while True:
                log.seek(0)
                out = log.read()
                if "Press Ctrl-C to stop." in out:
                    break
                self.assertIsNone(demo.poll(), f"the demo stopped early:\n{out}")
                self.assertLess(time.monotonic(), deadline, f"the demo was not up:\n{out}")
                time.sleep(1)
            stages = set(glob.glob(STAGES)) - before
            self.assertEqual(len(stages), 1, stages)
            stage = stages.pop()

            # The URLs it prints answer.
            for port in (port_a, port_b):
                self.assertIn(f"http://127.0.0.1:{port}/metrics", out)
            # Debian's Prometheus serves the classic web UI.
            self.assertIn(f"http://127.0.0.1:{port_p}/classic/alerts", out)
            self.assertIn("RdmaProbePairDown", get(f"http://127.0.0.1:{port_p}/classic/alerts"))
            a = Exposition(get(f"http://127.0.0.1:{port_a}/metrics"), "A")
            b = Exposition(get(f"http://127.0.0.1:{port_b}/metrics"), "B")
            for name, m in (("A", a), ("B", b)):
                ups = m.series("rdma_probe_up", op="write")
                self.assertEqual([v for _, v in ups], [1.0], name)
                self.assertEqual(m.value("rdma_exporter_collector_success", collector="probe"),
                                 1, name)
            self.assertEqual(a.series("rdma_probe_up", op="write")[0][0]["peer"], "b")
            self.assertEqual(b.series("rdma_probe_up", op="write")[0][0]["peer"], "a")
            # Prometheus has the probe latencies of both and evaluates the rules.
            p99 = re.search(r"^    (histogram_quantile\(0\.99, .*)$", out, re.M).group(1)
            query = urllib.parse.urlencode({"query": p99})
            result = json.loads(get(f"http://127.0.0.1:{port_p}/api/v1/query?{query}"))
            series = {(r["metric"]["exporter"], r["metric"]["op"])
                      for r in result["data"]["result"] if r["value"][1] != "NaN"}
            self.assertIn(("a", "write"), series)
            self.assertIn(("b", "write"), series)
            rules = json.loads(get(f"http://127.0.0.1:{port_p}/api/v1/rules"))
            names = [r["name"] for g in rules["data"]["groups"] for r in g["rules"]]
            self.assertIn("RdmaProbePairDown", names)
            targets = json.loads(get(f"http://127.0.0.1:{port_p}/api/v1/targets"))
            self.assertEqual(sorted(t["health"] for t in targets["data"]["activeTargets"]),
                             ["up", "up"])

            # No false alert: each exporter finds itself in the target list,
            # and the latency objectives are the demo's. Read once every
            # rule group was evaluated twice after both probes' latencies
            # were in (the groups run every 5 s and 30 s).
            listed = urllib.parse.urlencode(
                {"query": 'count(rdma_probe_pinglist_info{listed="true"})'})
            got = json.loads(get(f"http://127.0.0.1:{port_p}/api/v1/query?{listed}"))
            self.assertEqual([r["value"][1] for r in got["data"]["result"]], ["2"])
            since = time.time() + 1

            def evaluations_after(t):
                groups = json.loads(get(f"http://127.0.0.1:{port_p}/api/v1/rules"))["data"]["groups"]
                # lastEvaluation: RFC 3339 in UTC; whole seconds are enough.
                return min(calendar.timegm(time.strptime(g["lastEvaluation"][:19],
                                                         "%Y-%m-%dT%H:%M:%S"))
                           for g in groups) > t

            deadline = time.monotonic() + 180
            while not evaluations_after(since):
                self.assertLess(time.monotonic(), deadline, "the rules were not evaluated")
                time.sleep(1)
            first = time.time() + 1
            while not evaluations_after(first):
                self.assertLess(time.monotonic(), deadline, "the rules were not evaluated")
                time.sleep(1)
            alerts = json.loads(get(f"http://127.0.0.1:{port_p}/api/v1/alerts"))
            self.assertEqual([(a["labels"]["alertname"], a["state"])
                              for a in alerts["data"]["alerts"]], [])
            # The Fabric health board's records: the culprit rules see both
            # exporters' RNIC (rxe0, under each one's probe address) and
            # name nothing; the demo printed as much before it was up.
            for expr, want in (("count(rdma:probe_rnic:sent:increase2m)", ["2"]),
                               ("count(rdma:probe_culprit) or vector(0)", ["0"])):
                got = json.loads(get(f"http://127.0.0.1:{port_p}/api/v1/query?"
                                     + urllib.parse.urlencode({"query": expr})))
                self.assertEqual([r["value"][1] for r in got["data"]["result"]], want, expr)
            self.assertIn("  culprits: 0\n", out)

            # Ctrl-C.
            os.killpg(demo.pid, signal.SIGINT)
            self.assertEqual(demo.wait(240), 0)
            log.seek(0)
            self.assertIn("Stopped.", log.read())
            self.assertFalse(os.path.exists(stage), "the VM's staging directory is left")
            self.assertEqual(os.listdir(tmpdir), [], "temporary files are left")
            self.assertEqual(processes_mentioning(stage), [])
            self.assertEqual(processes_mentioning(tmpdir), [])
            for port in (port_a, port_b, port_p):
                with self.assertRaises(OSError, msg=f"port {port} still answers"):
                    get(f"http://127.0.0.1:{port}/", timeout=5)
        finally:
            if demo.poll() is None:
                os.killpg(demo.pid, signal.SIGTERM)
                demo.wait(240)
            log.close()
            shutil.rmtree(tmpdir, ignore_errors=True)
            if sys.exc_info()[0] is None:
                os.unlink(log_path)
            else:
                print(f"\ndemo output kept in {log_path}", file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
