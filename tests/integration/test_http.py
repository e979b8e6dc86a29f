"""HTTP behaviour of the daemon: routes, methods, limits, abusive clients."""
import concurrent.futures
import gzip
import http.client
import os
import re
import signal
import socket
import subprocess
import threading
import time
import unittest

from harness import (BIN, Exporter, make_sysfs, promtool, raw_request, status_of, value,
                     wait_log)


class HttpTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sysfs = make_sysfs("mlx5:2:2 rxe efa")
        cls.exporter = Exporter("--path.sysfs", cls.sysfs, config="""
web:
  read_timeout: 2s
  idle_timeout: 3s
  max_connections: 16
  max_request_bytes: 2048
collection:
  max_age: 0s
""")

    @classmethod
    def tearDownClass(cls):
        code = cls.exporter.stop()
        assert code == 0, f"exporter exited {code}:\n{cls.exporter.log()}"

    def get(self, path, method="GET", headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.exporter.port, timeout=10)
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
        return resp, body

    def test_metrics_is_prometheus_text(self):
        resp, body = self.get("/metrics")
        self.assertEqual(resp.status, 200)
        self.assertEqual(resp.getheader("Content-Type"), "text/plain; version=0.0.4; charset=utf-8")
        text = body.decode()
        self.assertIn('rdma_port_pma_port_xmit_data_bytes_total{device="mlx5_1",port="2"}', text)
        self.assertIn('rdma_exporter_collector_success{collector="sysfs"} 1', text)
        self.assertIn("# TYPE rdma_port_rate_bytes_per_second gauge", text)

    def test_gzip_when_accepted(self):
        resp, body = self.get("/metrics", headers={"Accept-Encoding": "gzip"})
        self.assertEqual(resp.getheader("Content-Encoding"), "gzip")
        self.assertEqual(resp.getheader("Vary"), "Accept-Encoding")
        text = gzip.decompress(body).decode()
        self.assertIn("rdma_device_hardware_info", text)
        resp, body = self.get("/metrics", headers={"Accept-Encoding": "identity"})
        self.assertIsNone(resp.getheader("Content-Encoding"))
        self.assertIn(b"rdma_device_hardware_info", body)

    def test_landing_and_health(self):
        resp, body = self.get("/")
        self.assertEqual(resp.status, 200)
        self.assertIn(b'href="metrics"', body)
        resp, body = self.get("/healthz")
        self.assertEqual((resp.status, body), (200, b"OK\n"))
        resp, body = self.get("/metrics?x=1")
        self.assertEqual(resp.status, 200)

    def test_head_has_headers_and_no_body(self):
        resp, body = self.get("/metrics", method="HEAD")
        self.assertEqual(resp.status, 200)
        self.assertEqual(body, b"")
        self.assertGreater(int(resp.getheader("Content-Length")), 1000)

    def test_unknown_path_is_404_other_methods_405(self):
        self.assertEqual(self.get("/nope")[0].status, 404)
        self.assertEqual(self.get("/metrics/extra")[0].status, 404)
        for method in ("POST", "PUT", "DELETE", "OPTIONS"):
            resp, _ = self.get("/metrics", method=method)
            self.assertEqual(resp.status, 405, method)
            self.assertEqual(resp.getheader("Allow"), "GET, HEAD")

    def test_malformed_requests_are_400(self):
        for junk in (b"GARBAGE\r\n\r\n", b"GET\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n",
                     b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
                     b"\x00\x01\x02\x03\r\n\r\n"):
            self.assertEqual(status_of(raw_request(self.exporter.port, junk)), 400, junk)

    def test_oversized_headers_are_431_and_an_oversized_target_414(self):
        # max_request_bytes is 2048 here.
        big = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 4096 + b"\r\n\r\n"
        self.assertEqual(status_of(raw_request(self.exporter.port, big)), 431)
        # A mebibyte of header, more than the socket buffers take: answered,
        # not reset, while the client still sends.
        huge = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * (1 << 20) + b"\r\n\r\n"
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
            s.settimeout(10)
            s.connect(("127.0.0.1", self.exporter.port))
            s.sendall(huge)
            reply = b""
            while chunk := s.recv(65536):
                reply += chunk
        self.assertTrue(reply.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n"), reply)
        self.assertTrue(reply.endswith(b"\r\n\r\nrequest headers too large\n"), reply)
        long_target = b"GET /metrics?" + b"q" * 4096 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
        reply = raw_request(self.exporter.port, long_target)
        self.assertTrue(reply.startswith(b"HTTP/1.1 414 URI Too Long\r\n"), reply)

    def test_request_body_is_refused(self):
        req = b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
        self.assertEqual(status_of(raw_request(self.exporter.port, req)), 400)

    def test_client_sending_headers_forever_is_cut_off(self):
        s = self.exporter.connect()
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        start = time.monotonic()
        closed = False
        # One header every 0.2 s, never finishing; read_timeout is 2 s.
        while time.monotonic() - start < 10:
            try:
                s.sendall(b"X-Slow: y\r\n")
                s.settimeout(0.2)
                if s.recv(1) == b"":
                    closed = True
                    break
            except socket.timeout:
                continue
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
        s.close()
        self.assertTrue(closed, "slow client was never disconnected")
        self.assertLess(time.monotonic() - start, 6)
        self.assertEqual(self.get("/healthz")[0].status, 200)

    def test_idle_connection_is_closed(self):
        s = self.exporter.connect()
        s.settimeout(10)
        start = time.monotonic()
        self.assertEqual(s.recv(1), b"")
        self.assertLess(time.monotonic() - start, 6)
        s.close()

    def test_keep_alive_serves_several_requests(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.exporter.port, timeout=10)
        for _ in range(5):
            conn.request("GET", "/metrics")
            resp = conn.getresponse()
            self.assertEqual(resp.status, 200)
            resp.read()
        conn.close()

    def rejected(self, reason):
        _, body = self.get("/metrics")
        return value(body.decode(), "rdma_exporter_http_rejected_connections_total",
                     f'{{reason="{reason}"}}')

    def test_connection_limits_and_many_parallel_clients(self):
        # max_connections 16, and 16 (the default) from one address. Sixteen
        # idle connections from 127.0.0.1 fill both; a 17th from there takes
        # the place of that address's oldest, one from 127.0.0.2 the place
        # of the oldest of all. Nothing is refused: every connection held
        # is waiting for its request.
        refused = self.rejected("max_connections_per_source")
        held = [self.exporter.connect() for _ in range(16)]
        extra = self.exporter.connect()
        extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        extra.settimeout(5)
        self.assertTrue(extra.recv(1024).startswith(b"HTTP/1.1 200 OK\r\n"))
        held[0].settimeout(5)
        self.assertEqual(held[0].recv(1024), b"")  # evicted for the 17th
        other = socket.create_connection(("127.0.0.1", self.exporter.port), timeout=10,
                                         source_address=("127.0.0.2", 0))
        other.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertTrue(other.recv(1024).startswith(b"HTTP/1.1 200 OK\r\n"))
        held[1].settimeout(5)
        self.assertEqual(held[1].recv(1024), b"")  # evicted for 127.0.0.2's
        other.close()
        extra.close()
        for s in held:
            s.close()
        time.sleep(0.3)
        self.assertEqual(self.rejected("max_connections_per_source"), refused)

        def scrape(_):
            resp, body = self.get("/metrics", headers={"Accept-Encoding": "gzip"})
            return resp.status
        with concurrent.futures.ThreadPoolExecutor(max_workers=12) as pool:
            statuses = list(pool.map(scrape, range(200)))
        self.assertEqual(statuses.count(200) + statuses.count(503), 200)
        self.assertGreater(statuses.count(200), 100)
        resp, body = self.get("/metrics")
        self.assertIn(b"rdma_exporter_http_rejected_connections_total", body)
        self.assertEqual(resp.status, 200)

    def test_promtool_accepts_the_exposition(self):
        self.assertIsNotNone(promtool(), "promtool missing: scripts/setup installs it")
        _, body = self.get("/metrics")
        result = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


class FloodTest(unittest.TestCase):
    """Clients that open hundreds of connections and never finish a request,
    next to a scraper: with the default limits (web.max_connections 64,
    web.max_connections_per_source 16) every scrape is served, whether the
    flood comes from other addresses or the scraper's own. The scraper runs
    100 scrapes, 10 at a time, each on a connection of its own.""" 

    def setUp(self):
        self.sysfs = make_sysfs("mlx5:8:2")
        # Under AddressSanitizer (the ASan run of these tests) freed memory
        # waits in a quarantine of up to 256 MiB before it is reused, which
        # would hide the memory bound below: a small quarantine keeps it
        # meaningful. Builds without ASan ignore the variable.
        asan = os.environ.get("ASAN_OPTIONS", "")
        os.environ["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "quarantine_size_mb=1"
        self.addCleanup(lambda: os.environ.__setitem__("ASAN_OPTIONS", asan)
                        if asan else os.environ.pop("ASAN_OPTIONS", None))
        # The flood keeps its connections for the whole test: no header timeout.
        self.exporter = Exporter("--path.sysfs", self.sysfs, config="""
web: {header_timeout: 60s, read_timeout: 60s}
collection: {max_age: 0s}
""")
        self.held = []
        self.addCleanup(self.close_all)

    def close_all(self):
        for s in self.held:
            s.close()
        code = self.exporter.stop()
        self.assertEqual(code, 0, self.exporter.log())

    def flood(self, sources, per_source):
        """per_source connections from each address, each sending the start
        of a request and nothing more."""
        for _ in range(per_source):
            for source in sources:
                s = socket.create_connection(("127.0.0.1", self.exporter.port), timeout=10,
                                             source_address=(source, 0))
                self.held.append(s)
                try:
                    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                except OSError:
                    pass  # refused and closed already

    def scrape(self, path="/metrics"):
        conn = http.client.HTTPConnection("127.0.0.1", self.exporter.port, timeout=30)
        try:
            conn.request("GET", path, headers={"Accept-Encoding": "gzip"})
            resp = conn.getresponse()
            body = resp.read()
            return resp.status, body
        except OSError as e:
            return repr(e), b""
        finally:
            conn.close()

    def scrape_100(self):
        with concurrent.futures.ThreadPoolExecutor(max_workers=10) as pool:
            return [status for status, _ in pool.map(lambda _: self.scrape(), range(100))]

    def http_counter(self, name, reason):
        status, body = self.scrape()
        self.assertEqual(status, 200)
        return value(gzip.decompress(body).decode(), name, f'{{reason="{reason}"}}')

    def test_one_address_holding_300_unfinished_requests(self):
        rss_before = rss_kib(self.exporter.proc.pid)
        self.flood(["127.0.0.2"], 300)
        self.assertEqual(self.scrape_100(), [200] * 100)
        self.assertEqual(self.scrape("/healthz"), (200, b"OK\n"))
        # 16 held; each later one took the place of the oldest of them.
        self.assertEqual(self.http_counter("rdma_exporter_http_evicted_connections_total",
                                           "headers"), 284)
        self.assertEqual(self.http_counter("rdma_exporter_http_rejected_connections_total",
                                           "max_connections_per_source"), 0)
        self.assertEqual(self.http_counter("rdma_exporter_http_rejected_connections_total",
                                           "max_connections"), 0)
        growth = rss_kib(self.exporter.proc.pid) - rss_before
        self.assertLess(growth, 64 * 1024, f"RSS grew by {growth} KiB")

    def test_a_scraper_sharing_its_address_with_300_unfinished_requests(self):
        # The flood and the scrapes from one address (NAT, a proxy, a tool
        # on the Prometheus host): each scrape's connection takes the place
        # of one that has waited longer for its request.
        self.flood(["127.0.0.1"], 300)
        self.assertEqual(self.scrape_100(), [200] * 100)
        self.assertEqual(self.scrape("/healthz"), (200, b"OK\n"))
        self.assertEqual(self.http_counter("rdma_exporter_http_rejected_connections_total",
                                           "max_connections_per_source"), 0)
        # 284 by the flood, then some of the 16 it left: one for each scrape
        # that found the address at its cap (the first did; how many more
        # depends on how the scrapes overlapped), never a scrape's own
        # (ten at a time, and the flood's connections have waited longer).
        evicted = self.http_counter("rdma_exporter_http_evicted_connections_total", "headers")
        self.assertGreater(evicted, 284)
        self.assertLessEqual(evicted, 300)

    def test_twenty_addresses_filling_the_connection_cap(self):
        rss_before = rss_kib(self.exporter.proc.pid)
        # 320 connections, 16 from each of 127.0.0.2 to 127.0.0.21: past 64,
        # each takes the place of the oldest.
        self.flood([f"127.0.0.{i}" for i in range(2, 22)], 16)
        self.assertEqual(self.scrape_100(), [200] * 100)
        self.assertEqual(self.scrape("/healthz"), (200, b"OK\n"))
        # 256 evicted by the flood itself, and one for each scrape that
        # found all 64 places taken: the first did, later ones when the
        # server had not yet seen an earlier scrape's connection close (104
        # scrapes in all, with the ones below).
        evicted = self.http_counter("rdma_exporter_http_evicted_connections_total", "headers")
        self.assertGreaterEqual(evicted, 257)
        self.assertLessEqual(evicted, 256 + 104)
        self.assertEqual(self.http_counter("rdma_exporter_http_rejected_connections_total",
                                           "max_connections"), 0)
        self.assertEqual(self.http_counter("rdma_exporter_http_rejected_connections_total",
                                           "max_connections_per_source"), 0)
        growth = rss_kib(self.exporter.proc.pid) - rss_before
        self.assertLess(growth, 64 * 1024, f"RSS grew by {growth} KiB")


class ShutdownTest(unittest.TestCase):
    def test_sigterm_finishes_in_flight_response_and_exits_0(self):
        sysfs = make_sysfs("mlx5:8:2")
        exp = Exporter("--path.sysfs", sysfs)
        conn = http.client.HTTPConnection("127.0.0.1", exp.port, timeout=10)
        conn.request("GET", "/metrics")
        exp.proc.send_signal(signal.SIGTERM)
        resp = conn.getresponse()
        body = resp.read()
        self.assertEqual(resp.status, 200)
        self.assertIn(b"rdma_port_pma", body)
        self.assertEqual(exp.proc.wait(10), 0, exp.log())
        self.assertIn("msg=\"received a signal, finishing requests in flight\" signal=SIGTERM",
                      exp.log())
        with self.assertRaises(OSError):
            socket.create_connection(("127.0.0.1", exp.port), timeout=2).close()

    def test_sigint_with_idle_keepalive_connection_exits_promptly(self):
        exp = Exporter("--path.sysfs", "/nonexistent")
        idle = exp.connect()
        start = time.monotonic()
        self.assertEqual(exp.stop(signal.SIGINT), 0)
        self.assertLess(time.monotonic() - start, 5)
        idle.close()

    def test_address_in_use_is_a_clear_failure(self):
        with Exporter("--path.sysfs", "/nonexistent") as first:
            result = subprocess.run([first.proc.args[0], "--web.listen-address",
                                     f"127.0.0.1:{first.port}", "--path.sysfs", "/nonexistent"],
                                    capture_output=True, text=True, timeout=10)
            self.assertEqual(result.returncode, 1)
            self.assertIn("Address already in use", result.stderr)


class ListenersAndPathTest(unittest.TestCase):
    def test_every_listen_address_serves(self):
        # The harness gives 127.0.0.1:0; a second flag adds [::1]:0.
        with Exporter("--web.listen-address", "[::1]:0", "--path.sysfs", "/nonexistent") as exp:
            wait_log(exp, "listening on", count=2)
            ports = [int(p) for p in re.findall(r'msg="listening on" address=\S+?:(\d+) ', exp.log())]
            self.assertEqual(len(ports), 2, exp.log())
            self.assertIn(f'msg="listening on" address=[::1]:{ports[1]} ', exp.log())
            with socket.create_connection(("::1", ports[1]), timeout=10) as s:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                self.assertEqual(status_of(s.recv(4096)), 200)
            self.assertEqual(status_of(raw_request(ports[0], b"GET /healthz HTTP/1.1\r\n"
                                                   b"Connection: close\r\n\r\n")), 200)

    def test_an_address_in_use_among_several_fails_the_start_naming_it(self):
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            busy = f"127.0.0.1:{taken.getsockname()[1]}"
            r = subprocess.run([BIN, "--web.listen-address", "127.0.0.1:0", "--web.listen-address",
                                busy, "--path.sysfs", "/nonexistent"],
                               capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(f'err="listen on {busy}: Address already in use"', r.stderr)
        self.assertNotIn("listening on", r.stderr)

    def test_telemetry_path(self):
        with Exporter("--web.telemetry-path", "/rdma/metrics", "--path.sysfs",
                      "/nonexistent") as exp:
            def get(path):
                return raw_request(exp.port, f"GET {path} HTTP/1.1\r\nConnection: close\r\n\r\n"
                                   .encode())
            response = get("/rdma/metrics")
            self.assertEqual(status_of(response), 200)
            self.assertIn(b"rdma_exporter_build_info{", response)
            self.assertEqual(status_of(get("/metrics")), 404)
            self.assertIn(b'<a href="rdma/metrics">', get("/"))
            self.assertEqual(status_of(get("/healthz")), 200)

    def test_a_reload_moves_the_telemetry_path(self):
        with Exporter("--path.sysfs", "/nonexistent", config="web: {telemetry_path: /a}\n") as exp:
            config = exp.proc.args[exp.proc.args.index("--config.file") + 1]

            def status(path):
                return status_of(raw_request(
                    exp.port, f"GET {path} HTTP/1.1\r\nConnection: close\r\n\r\n".encode()))
            self.assertEqual((status("/a"), status("/b"), status("/metrics")), (200, 404, 404))
            with open(config, "w") as f:
                f.write("web: {telemetry_path: /b}\n")
            exp.proc.send_signal(signal.SIGHUP)
            wait_log(exp, "configuration reloaded")
            self.assertEqual((status("/a"), status("/b")), (404, 200))

    def test_a_bad_telemetry_path_is_a_usage_error(self):
        r = subprocess.run([BIN, "--web.telemetry-path", "metrics", "--once"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("web.telemetry_path: expected a path below /", r.stderr)


if __name__ == "__main__":
    unittest.main()
