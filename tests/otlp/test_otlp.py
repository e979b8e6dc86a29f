"""OTLP push: the daemon pushes to a Node receiver that decodes every request
with @opentelemetry/otlp-transformer (receiver.js), an implementation that is
not the exporter's own.

Needs node and tests/otlp/node_modules (scripts/setup runs `npm ci` here).
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from harness import BIN, Exporter, fixture_counter, make_sysfs, write_config  # noqa: E402

RECEIVER = os.path.join(HERE, "receiver.js")
DECODER = os.path.join(HERE, "node_modules", "@opentelemetry", "otlp-transformer", "package.json")

NOT_WIRED = ("the daemon does not run the OTLP pusher with otlp.enabled: true; serve() in "
             "exporter/main.cpp must create, start and stop an OtlpPusher "
             "(exporter/otlp/pusher.hpp)")


class Receiver:
    """receiver.js on an ephemeral port of 127.0.0.1 (https with --tls-cert)."""

    def __init__(self, *args):
        self.scheme = "https" if "--tls-cert" in args else "http"
        fd, self.out = tempfile.mkstemp(prefix="otlp_receiver_", suffix=".jsonl")
        os.close(fd)
        self.proc = subprocess.Popen(["node", RECEIVER, "--out", self.out, *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.match(r"listening (\d+)", line)
        if not m:
            self.proc.kill()
            raise RuntimeError("receiver did not start: " + line + self.proc.stderr.read())
        self.port = int(m.group(1))

    @property
    def url(self):
        return f"{self.scheme}://127.0.0.1:{self.port}/v1/metrics"

    @property
    def base_url(self):
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def lines(self):
        with open(self.out) as f:
            return [json.loads(line) for line in f if line.strip()]

    def requests(self):
        return [r for r in self.lines() if "tls_error" not in r]

    def tls_errors(self):
        return [r["tls_error"] for r in self.lines() if "tls_error" in r]

    def wait(self, predicate, timeout):
        """Waits until predicate(requests) holds; returns the requests."""
        deadline = time.monotonic() + timeout
        while True:
            got = self.requests()
            if predicate(got) or time.monotonic() > deadline:
                return got
            time.sleep(0.1)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()
        os.unlink(self.out)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def free_port():
    """A loopback port nobody listens on (bound, noted, closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def close(exporter):
    exporter.stop()
    exporter.proc.stdout.close()
    exporter.proc.stderr.close()


def otlp_config(root, endpoint, **otlp):
    settings = {"enabled": "true", "endpoint": endpoint, "interval": "1s", "timeout": "2s"}
    settings.update({k: str(v) for k, v in otlp.items()})
    lines = [f"sysfs: {{root: {root}}}", "otlp:"]
    lines += [f"  {k}: {v}" for k, v in settings.items()]
    lines += ["  resource_attributes: {deployment.environment: integration-test}",
              "  headers: {X-Test: otlp-integration}"]
    return "\n".join(lines) + "\n"


def scrape(exporter, timeout=5):
    """(exposition text, seconds it took)."""
    start = time.monotonic()
    with urllib.request.urlopen(f"http://127.0.0.1:{exporter.port}/metrics",
                                timeout=timeout) as r:
        text = r.read().decode()
    return text, time.monotonic() - start


def sample(text, name, labels=None):
    """The value of one sample of the exposition, or None."""
    want = "" if not labels else "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"
    for line in text.splitlines():
        if line.startswith(name + want + " "):
            return float(line.split()[-1])
    return None


def exports(text, result):
    return sample(text, "rdma_exporter_otlp_exports_total", {"result": result})


def wait_metric(exporter, predicate, timeout):
    """Scrapes until predicate(text) holds; returns the last text."""
    deadline = time.monotonic() + timeout
    while True:
        text, _ = scrape(exporter)
        if predicate(text) or time.monotonic() > deadline:
            return text
        time.sleep(0.2)


def attributes(kvs):
    return {a["key"]: a["value"].get("stringValue") for a in kvs}


def metrics_of(request):
    rms = request["decoded"]["resourceMetrics"]
    assert len(rms) == 1
    sms = rms[0]["scopeMetrics"]
    assert len(sms) == 1
    return {m["name"]: m for m in sms[0]["metrics"]}


def point(metric, kind, **labels):
    for p in metric[kind]["dataPoints"]:
        if labels.items() <= attributes(p.get("attributes", [])).items():
            return p
    raise AssertionError(f"no point with {labels} in {metric['name']}")


def key_paths(value, prefix=""):
    """Every object key path of a JSON value (list indices folded)."""
    paths = set()
    if isinstance(value, dict):
        for k, v in value.items():
            paths.add(prefix + "." + k)
            paths |= key_paths(v, prefix + "." + k)
    elif isinstance(value, list):
        for v in value:
            paths |= key_paths(v, prefix + "[]")
    return paths


class OtlpTestCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if shutil.which("node") is None or not os.path.exists(DECODER):
            raise AssertionError("node and tests/otlp/node_modules are needed: run scripts/setup")
        cls.sysfs = make_sysfs("mlx5:1:1 rxe")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.sysfs, ignore_errors=True)

    def start(self, receiver_url, **otlp):
        return self.daemon(otlp_config(self.sysfs, receiver_url, **otlp))

    def daemon(self, config):
        exporter = Exporter(config=config)
        self.addCleanup(close, exporter)
        return exporter

    def assert_wired(self, exporter):
        text, _ = scrape(exporter)
        self.assertIsNotNone(exports(text, "success"), NOT_WIRED)


class PushTest(OtlpTestCase):
    def check_pushes(self, encoding, content_type, compression="none"):
        with Receiver() as receiver:
            exporter = self.start(receiver.url, encoding=encoding, compression=compression)
            # The third push carries the pusher's own success count.
            got = receiver.wait(lambda r: len(r) >= 3, 15)
            self.assert_wired(exporter)
            self.assertGreaterEqual(len(got), 3, exporter.log())
        for r in got:
            self.assertNotIn("error", r, r.get("error"))
            self.assertEqual(r["method"], "POST")
            self.assertEqual(r["url"], "/v1/metrics")
            self.assertEqual(r["headers"]["content-type"], content_type)
            self.assertEqual(r["headers"]["x-test"], "otlp-integration")
            self.assertTrue(r["headers"]["user-agent"].startswith("rdma_exporter/"))
            if compression == "gzip":
                self.assertEqual(r["headers"]["content-encoding"], "gzip")
            else:
                self.assertNotIn("content-encoding", r["headers"])

        first = got[0]
        rm = first["decoded"]["resourceMetrics"][0]
        resource = attributes(rm["resource"]["attributes"])
        self.assertEqual(resource["service.name"], "rdma_exporter")
        self.assertEqual(resource["host.name"], socket.gethostname())
        self.assertEqual(resource["deployment.environment"], "integration-test")
        self.assertEqual(rm["scopeMetrics"][0]["scope"]["name"], "rdma_exporter")

        m = metrics_of(first)
        # A PMA counter: the value the fixture wrote, as an integer.
        sym = m["rdma.port.pma.symbol_error"]
        self.assertEqual(sym["unit"], "1")
        self.assertNotIn("gauge", sym)
        self.assertEqual(sym["sum"]["aggregationTemporality"], 2)  # cumulative
        self.assertIs(sym["sum"]["isMonotonic"], True)
        p = point(sym, "sum", device="mlx5_0", port="1")
        self.assertEqual(p["asInt"], str(fixture_counter(self.sysfs, "mlx5_0", 1, "symbol_error")))
        # Data counters: 4-byte words in sysfs, bytes in the export.
        data = m["rdma.port.pma.port_xmit_data"]
        self.assertEqual(data["unit"], "By")
        self.assertEqual(point(data, "sum", device="mlx5_0", port="1")["asInt"],
                         str(4 * fixture_counter(self.sysfs, "mlx5_0", 1, "port_xmit_data")))
        # Gauges, info metrics, seconds.
        rate = m["rdma.port.rate"]
        self.assertEqual(rate["unit"], "By/s")
        self.assertEqual(point(rate, "gauge", device="mlx5_0", port="1")["asInt"], "12500000000")
        ll = m["rdma.port.link_layer_info"]
        self.assertEqual(ll["unit"], "1")
        self.assertEqual(point(ll, "gauge", device="rxe0", link_layer="Ethernet")["asInt"], "1")
        dur = m["rdma.exporter.collector.duration"]
        self.assertEqual(dur["unit"], "s")
        self.assertIn("asDouble", point(dur, "gauge", collector="sysfs"))
        self.assertNotIn("rdma.port.pma.symbol_error_total", m)
        self.assertFalse([n for n in m if "_total" in n or not n.startswith("rdma.")], list(m))

        # Start time: the same in every push and before each point's time.
        starts, times = set(), []
        for r in got:
            rm_ = metrics_of(r)
            for metric in rm_.values():
                for kind in ("sum", "histogram"):
                    for dp in metric.get(kind, {}).get("dataPoints", []):
                        starts.add(dp["startTimeUnixNano"])
                        self.assertLess(int(dp["startTimeUnixNano"]), int(dp["timeUnixNano"]))
                for dp in metric.get("gauge", {}).get("dataPoints", []):
                    self.assertNotIn("startTimeUnixNano", dp)
            times.append(int(point(rm_["rdma.port.pma.symbol_error"], "sum")["timeUnixNano"]))
        self.assertEqual(len(starts), 1, starts)
        start = int(starts.pop())
        self.assertLess(start, time.time_ns())
        self.assertGreater(start, time.time_ns() - 120 * 10**9)
        self.assertEqual(times, sorted(set(times)))  # each push is a new collection
        self.assertLess(abs(times[-1] / 1e9 - got[-1]["at"]), 5)

        # The pusher's own metrics travel too.
        last = metrics_of(got[-1])
        ok = point(last["rdma.exporter.otlp.exports"], "sum", result="success")
        self.assertGreaterEqual(int(ok["asInt"]), 1)
        return got

    def test_protobuf(self):
        self.check_pushes("protobuf", "application/x-protobuf")

    def test_json_gzip(self):
        got = self.check_pushes("json", "application/json", compression="gzip")
        # Every key the exporter wrote is a field the decoder knows.
        for r in got:
            raw, decoded = key_paths(r["raw"]), key_paths(r["decoded"])
            self.assertEqual(raw - decoded, set())

    def test_same_values_in_both_encodings(self):
        values = {}
        for encoding in ("protobuf", "json"):
            with Receiver() as receiver:
                exporter = self.start(receiver.url, encoding=encoding, interval="1h")
                got = receiver.wait(lambda r: len(r) >= 1, 10)
                self.assert_wired(exporter)
                exporter.stop()
            m = metrics_of(got[0])
            values[encoding] = {
                (name, kind, json.dumps(attributes(p.get("attributes", [])), sort_keys=True)):
                    p.get("asInt", p.get("asDouble"))
                for name, metric in m.items() if not name.startswith("rdma.exporter.")
                for kind in ("sum", "gauge") if kind in metric
                for p in metric[kind]["dataPoints"]}
        self.assertGreater(len(values["protobuf"]), 20)
        self.assertEqual(values["protobuf"], values["json"])


class FailureTest(OtlpTestCase):
    def test_503_then_200_is_retried(self):
        with Receiver("--script", "503,503", "--retry-after", "1") as receiver:
            exporter = self.start(receiver.url)
            got = receiver.wait(lambda r: any(x["answer"] == "200" for x in r), 15)
            self.assert_wired(exporter)
            text = wait_metric(exporter, lambda t: (exports(t, "success") or 0) >= 1, 10)
        answers = [r["answer"] for r in got]
        self.assertEqual(answers[:3], ["503", "503", "200"], exporter.log())
        # The same payload again, after the Retry-After second.
        self.assertEqual(got[0]["sha1"], got[1]["sha1"])
        self.assertEqual(got[1]["sha1"], got[2]["sha1"])
        self.assertGreaterEqual(got[1]["at"] - got[0]["at"], 0.9)
        self.assertGreaterEqual(got[2]["at"] - got[1]["at"], 0.9)
        self.assertEqual(exports(text, "retryable_error"), 2)
        self.assertGreaterEqual(exports(text, "success"), 1)
        self.assertEqual(exports(text, "permanent_error"), 0)
        self.assertGreater(sample(text, "rdma_exporter_otlp_last_success_timestamp_seconds"),
                           time.time() - 60)

    def test_hanging_receiver_blocks_nothing_else(self):
        with Receiver("--then", "hang") as receiver:
            exporter = self.start(receiver.url, queue_size=2, max_backoff="1s")
            self.assert_wired(exporter)
            deadline = time.monotonic() + 8
            slowest = 0
            while time.monotonic() < deadline:
                _, took = scrape(exporter)
                slowest = max(slowest, took)
                time.sleep(0.25)
            text, _ = scrape(exporter)
            self.assertLess(slowest, 1.0)
            self.assertLessEqual(sample(text, "rdma_exporter_otlp_queue_length"), 2)
            self.assertGreaterEqual(sample(text, "rdma_exporter_otlp_dropped_total"), 1)
            self.assertGreaterEqual(exports(text, "network_error"), 2)
            self.assertEqual(exports(text, "success"), 0)
            self.assertEqual(sample(text, "rdma_exporter_otlp_last_success_timestamp_seconds"), 0)
            # Every attempt waited for the 2 s timeout: no more than one per 2 s.
            self.assertLessEqual(len(receiver.requests()), 8 / 2 + 2)
            # Shutdown does not wait for the hanging request.
            start = time.monotonic()
            self.assertEqual(exporter.stop(signal.SIGTERM), 0)
            self.assertLess(time.monotonic() - start, 3)

    def test_absent_receiver(self):
        exporter = self.start(f"http://127.0.0.1:{free_port()}/v1/metrics", max_backoff="1s")
        self.assert_wired(exporter)
        text = wait_metric(exporter, lambda t: (exports(t, "network_error") or 0) >= 2, 10)
        self.assertGreaterEqual(exports(text, "network_error"), 2)
        self.assertEqual(exports(text, "success"), 0)
        self.assertIsNone(exporter.proc.poll())
        self.assertIn("Connection refused", exporter.log())
        self.assertEqual(exporter.stop(), 0)

    def test_400_is_not_retried(self):
        with Receiver("--then", "400") as receiver:
            exporter = self.start(receiver.url)
            self.assert_wired(exporter)
            time.sleep(5)
            got = receiver.requests()
            text, _ = scrape(exporter)
        # One request per collection (about one a second), never a retry.
        self.assertGreaterEqual(len(got), 3)
        self.assertLessEqual(len(got), 7)
        self.assertEqual(len({r["sha1"] for r in got}), len(got))
        self.assertGreaterEqual(exports(text, "permanent_error"), 3)
        self.assertEqual(exports(text, "retryable_error"), 0)
        self.assertEqual(sample(text, "rdma_exporter_otlp_queue_length"), 0)
        # Logged once, not once per request.
        self.assertEqual(exporter.log().count("rejected the payload with HTTP 400"), 1)

    def test_disabled_means_no_push_metrics(self):
        exporter = self.daemon(f"sysfs: {{root: {self.sysfs}}}\notlp: {{enabled: false}}\n")
        text, _ = scrape(exporter)
        self.assertNotIn("rdma_exporter_otlp_", text)


class ConfigCheckTest(unittest.TestCase):
    def test_bad_settings_are_rejected_with_position(self):
        path = write_config("otlp:\n"
                            "  enabled: true\n"
                            "  encoding: xml\n"
                            "  endpoint: ftp://collector:4318/v1/metrics\n"
                            "  interval: 0s\n")
        r = subprocess.run([BIN, "--config.check", path], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 3, r.stderr)
        self.assertTrue(lines[0].startswith(f"{path}:3:13: otlp.encoding: expected one of "
                                            "protobuf, json"), lines[0])
        self.assertTrue(lines[1].startswith(f"{path}:4:13: otlp.endpoint: expected an http:// "
                                            "or https:// URL"), lines[1])
        self.assertEqual(lines[2], f"{path}:5:13: otlp.interval: must be positive")

    def test_valid_settings_pass(self):
        path = write_config("otlp:\n  enabled: true\n  endpoint: http://otel:4318\n"
                            "  encoding: json\n  interval: 30s\n"
                            "  headers: {Authorization: Bearer x}\n")
        r = subprocess.run([BIN, "--config.check", path], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main()


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def make_ca(folder, name):
    key, cert = os.path.join(folder, name + ".key"), os.path.join(folder, name + ".pem")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-out", cert, "-days", "2", "-subj", f"/CN={name}",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    return key, cert


def make_leaf(folder, name, ca, extensions):
    """A certificate signed by `ca` ((key, cert)), with these x509v3 lines."""
    key, csr = os.path.join(folder, name + ".key"), os.path.join(folder, name + ".csr")
    cert, ext = os.path.join(folder, name + ".pem"), os.path.join(folder, name + ".ext")
    with open(ext, "w") as f:
        f.write("\n".join(extensions) + "\n")
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-out", csr, "-subj", f"/CN={name}")
    openssl("x509", "-req", "-in", csr, "-CA", ca[1], "-CAkey", ca[0], "-CAcreateserial",
            "-out", cert, "-days", "2", "-extfile", ext)
    return key, cert


class TlsTestCase(OtlpTestCase):
    """Certificates made by openssl for this run: a CA that signs the
    receiver's certificate (for 127.0.0.1), one for another host, and a
    client certificate; and a second CA that signs nothing used here."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if shutil.which("openssl") is None:
            raise AssertionError("the openssl command is needed: run scripts/setup")
        cls.pki = tempfile.mkdtemp(prefix="otlp_tls_")
        cls.ca = make_ca(cls.pki, "test-ca")
        cls.other_ca = make_ca(cls.pki, "other-ca")
        server = ["basicConstraints=CA:FALSE", "keyUsage=digitalSignature",
                  "extendedKeyUsage=serverAuth"]
        cls.server = make_leaf(cls.pki, "receiver", cls.ca,
                               server + ["subjectAltName=IP:127.0.0.1,DNS:localhost"])
        cls.elsewhere = make_leaf(cls.pki, "elsewhere", cls.ca,
                                  server + ["subjectAltName=DNS:collector.example"])
        cls.client = make_leaf(cls.pki, "rdma-exporter-client", cls.ca,
                               ["basicConstraints=CA:FALSE", "keyUsage=digitalSignature",
                                "extendedKeyUsage=clientAuth"])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.pki, ignore_errors=True)
        super().tearDownClass()

    def tls_receiver(self, cert=None, *args):
        key, pem = cert or self.server
        return Receiver("--tls-cert", pem, "--tls-key", key, *args)

    def daemon_with_env(self, env, config=None):
        """The daemon with these OTEL_* variables (and no others)."""
        clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        clean.update(env)
        with mock.patch.dict(os.environ, clean, clear=True):
            return self.daemon(config if config is not None
                               else f"sysfs: {{root: {self.sysfs}}}\n")


class TlsPushTest(TlsTestCase):
    def test_environment_alone_pushes_over_tls(self):
        """No otlp section: OTEL_EXPORTER_OTLP_ENDPOINT turns push on; the CA
        comes from OTEL_EXPORTER_OTLP_CERTIFICATE; the resource from
        OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME."""
        with self.tls_receiver() as receiver:
            exporter = self.daemon_with_env({
                "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.base_url,
                "OTEL_EXPORTER_OTLP_CERTIFICATE": self.ca[1],
                "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/json",
                "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
                "OTEL_EXPORTER_OTLP_HEADERS": "X-Scope-OrgID=tenant%2C1, X-Test = tls",
                "OTEL_EXPORTER_OTLP_TIMEOUT": "2000",
                "OTEL_METRIC_EXPORT_INTERVAL": "1000",
                "OTEL_RESOURCE_ATTRIBUTES":
                    "deployment.environment=tls%20test,k8s.node.name=node-1,"
                    "service.name=overridden",
                "OTEL_SERVICE_NAME": "rdma-fabric-a",
            })
            got = receiver.wait(lambda r: len(r) >= 2, 15)
            self.assertGreaterEqual(len(got), 2, exporter.log())
            text = wait_metric(exporter, lambda t: (exports(t, "success") or 0) >= 1, 10)
            self.assertEqual(receiver.tls_errors(), [])
        self.assertEqual(exports(text, "tls_error"), 0)
        self.assertEqual(exports(text, "network_error"), 0)
        self.assertIn(f'endpoint={receiver.url} interval=1000ms', exporter.log())
        for r in got:
            self.assertNotIn("error", r, r.get("error"))
            self.assertEqual(r["url"], "/v1/metrics")
            self.assertEqual(r["headers"]["content-type"], "application/json")
            self.assertEqual(r["headers"]["content-encoding"], "gzip")
            self.assertEqual(r["headers"]["x-scope-orgid"], "tenant,1")
            self.assertEqual(r["headers"]["x-test"], "tls")
            self.assertIn(r["tls"]["protocol"], ("TLSv1.2", "TLSv1.3"))
            self.assertIsNone(r["tls"]["client_cn"])
            # SNI carries names, never an address (RFC 6066).
            self.assertFalse(r["tls"]["servername"])
        rm = got[0]["decoded"]["resourceMetrics"][0]
        resource = attributes(rm["resource"]["attributes"])
        self.assertEqual(resource["service.name"], "rdma-fabric-a")
        self.assertEqual(resource["deployment.environment"], "tls test")
        self.assertEqual(resource["k8s.node.name"], "node-1")
        self.assertEqual(resource["host.name"], socket.gethostname())
        m = metrics_of(got[0])
        sym = m["rdma.port.pma.symbol_error"]
        self.assertEqual(point(sym, "sum", device="mlx5_0", port="1")["asInt"],
                         str(fixture_counter(self.sysfs, "mlx5_0", 1, "symbol_error")))
        self.assertEqual(point(m["rdma.port.rate"], "gauge", device="mlx5_0", port="1")["asInt"],
                         "12500000000")
        self.assertIn("rdma.port.link_layer_info", m)

    def test_wrong_ca_is_refused_and_counted(self):
        with self.tls_receiver() as receiver:
            exporter = self.daemon_with_env({
                "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": receiver.url,
                "OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE": self.other_ca[1],
                "OTEL_EXPORTER_OTLP_CERTIFICATE": self.ca[1],  # the generic one loses
                "OTEL_EXPORTER_OTLP_TIMEOUT": "2000",
                "OTEL_METRIC_EXPORT_INTERVAL": "1000",
            }, config=f"sysfs: {{root: {self.sysfs}}}\notlp: {{max_backoff: 1s}}\n")
            text = wait_metric(exporter, lambda t: (exports(t, "tls_error") or 0) >= 2, 15)
            got = receiver.requests()
        self.assertGreaterEqual(exports(text, "tls_error"), 2, exporter.log())
        self.assertEqual(exports(text, "success"), 0)
        self.assertEqual(exports(text, "network_error"), 0)
        self.assertEqual(got, [])
        self.assertIn(f"OTLP push to {receiver.url} failed: TLS handshake: the receiver's "
                      "certificate was refused: unable to get local issuer certificate; "
                      "retrying with backoff", exporter.log())
        self.assertIsNone(exporter.proc.poll())
        self.assertEqual(exporter.stop(), 0)

    def test_certificate_for_another_host_is_refused(self):
        with self.tls_receiver(self.elsewhere) as receiver:
            exporter = self.daemon_with_env({
                "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.base_url,
                "OTEL_EXPORTER_OTLP_CERTIFICATE": self.ca[1],
                "OTEL_METRIC_EXPORT_INTERVAL": "1000",
            })
            text = wait_metric(exporter, lambda t: (exports(t, "tls_error") or 0) >= 1, 15)
            got = receiver.requests()
        self.assertGreaterEqual(exports(text, "tls_error"), 1, exporter.log())
        self.assertEqual(got, [])
        self.assertIn("failed: TLS handshake: the receiver's certificate was refused: "
                      "hostname mismatch", exporter.log())

    def test_mutual_tls_with_the_file_keys(self):
        """ca_file, cert_file and key_file from the file, relative to it; a
        host name (localhost) is sent as SNI and matched by DNS name."""
        folder = tempfile.mkdtemp(prefix="otlp_mtls_")
        self.addCleanup(shutil.rmtree, folder, True)
        for src, name in ((self.ca[1], "ca.pem"), (self.client[1], "client.pem"),
                          (self.client[0], "client.key")):
            shutil.copy(src, os.path.join(folder, name))
        with self.tls_receiver(None, "--client-ca", self.ca[1]) as receiver:
            config = os.path.join(folder, "rdma_exporter.yml")
            with open(config, "w") as f:
                url = f"https://localhost:{receiver.port}/v1/metrics"
                f.write(otlp_config(self.sysfs, url, ca_file="ca.pem",
                                    cert_file="client.pem", key_file="client.key"))
            clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
            with mock.patch.dict(os.environ, clean, clear=True):
                exporter = Exporter("--config.file", config)
            self.addCleanup(close, exporter)
            got = receiver.wait(lambda r: len(r) >= 1, 15)
        self.assertGreaterEqual(len(got), 1, exporter.log())
        self.assertEqual(got[0]["tls"]["client_cn"], "rdma-exporter-client")
        self.assertEqual(got[0]["tls"]["servername"], "localhost")
        self.assertNotIn("error", got[0])

    def test_mutual_tls_without_a_client_certificate_fails(self):
        with self.tls_receiver(None, "--client-ca", self.ca[1]) as receiver:
            exporter = self.daemon_with_env({
                "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.base_url,
                "OTEL_EXPORTER_OTLP_CERTIFICATE": self.ca[1],
                "OTEL_METRIC_EXPORT_INTERVAL": "1000",
            })
            text = wait_metric(exporter, lambda t: (exports(t, "tls_error") or 0) >= 1, 15)
            got = receiver.requests()
            refused = receiver.tls_errors()
        self.assertEqual(got, [])
        self.assertGreaterEqual(len(refused), 1)
        self.assertGreaterEqual(exports(text, "tls_error"), 1, exporter.log())
        self.assertEqual(exports(text, "success"), 0)
        self.assertEqual(exports(text, "network_error"), 0)
        self.assertIn("certificate required", exporter.log())


class EnvironmentCheckTest(unittest.TestCase):
    """Malformed OTEL_* values are configuration errors: exit 2, one line
    each, from --config.check and at start."""

    BAD = {
        "OTEL_EXPORTER_OTLP_TIMEOUT": "10s",
        "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "grpc",
        "OTEL_EXPORTER_OTLP_HEADERS": "Authorization",
    }
    EXPECTED = [
        "environment: OTEL_EXPORTER_OTLP_HEADERS: member 1 has no '=' (expected "
        "key=value,key2=value2)",
        "environment: OTEL_EXPORTER_OTLP_TIMEOUT: expected a whole number of milliseconds from "
        "0 (no limit) to 2147483647, got \"10s\"",
        "environment: OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: grpc is not supported: this exporter "
        "speaks OTLP/HTTP; use http/protobuf or http/json (a Collector's OTLP/HTTP port is 4318)",
    ]

    def run_exporter(self, args, env):
        clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        clean.update(env)
        return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=30, env=clean)

    def test_config_check_reports_the_environment(self):
        path = write_config("log: {level: info}\n")
        self.addCleanup(os.unlink, path)
        r = self.run_exporter(["--config.check", path], self.BAD)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stderr.strip().splitlines(), self.EXPECTED)

    def test_start_refuses_the_environment(self):
        r = self.run_exporter(["--web.listen-address", "127.0.0.1:0"], self.BAD)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stderr.strip().splitlines(),
                         ["rdma_exporter: " + e for e in self.EXPECTED])

    def test_unusable_ca_file(self):
        path = write_config("otlp: {enabled: true, endpoint: 'https://127.0.0.1:1/v1/metrics'}\n")
        self.addCleanup(os.unlink, path)
        r = self.run_exporter(["--config.check", path],
                              {"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"})
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stderr.strip(), "otlp.ca_file /nonexistent/ca.pem: No such file or "
                                           "directory")
        # Not a certificate at all.
        r = self.run_exporter(["--config.check", path], {"OTEL_EXPORTER_OTLP_CERTIFICATE": path})
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stderr.strip(), f"otlp.ca_file {path}: no PEM certificate in it")
