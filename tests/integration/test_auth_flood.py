"""A flood of wrong basic-auth passwords against the real binary: scrapes
with remembered credentials are answered 200 during it, from four loopback
addresses and from one IPv6 /64; and the per-source connection cap counts a
/64 as one source. The IPv6 cases run in a network namespace the test makes
(root and iproute2's ip); the flooder is bench/auth_flood_sources.py's."""
import os
import shutil
import sys
import tempfile
import unittest

from harness import SOURCE_DIR, Exporter, make_sysfs, value, wait_log

sys.path.insert(0, os.path.join(SOURCE_DIR, "bench"))
from auth_flood_sources import (Flood, Namespace, basic, bcrypt_hash, connect, get,  # noqa: E402
                                metrics_text, request)

PASSWORD = "correct horse battery"
GOOD = basic("prom", PASSWORD)
WRONG = basic("prom", "wrong guess")
SCRAPES = 3


class AuthFloodTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        missing = [tool for tool in ("htpasswd", "ip") if shutil.which(tool) is None]
        if missing:
            raise AssertionError(f"{', '.join(missing)} not found: install apache2-utils and "
                                 "iproute2 (scripts/setup does)")
        if os.geteuid() != 0:
            raise AssertionError("these tests make a network namespace: run them as root")
        cls.sysfs = make_sysfs("mlx5:1:1")
        cls.dir = tempfile.mkdtemp(prefix="rdma_auth_flood_")
        # Cost 10, as htpasswd's users choose: about 10 checks a second here.
        cls.hash = bcrypt_hash(PASSWORD, cost=10)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def start(self, web="", listen="127.0.0.1:0", netns=None):
        path = os.path.join(self.dir, "web.yml")
        with open(path, "w") as f:
            f.write(f"basic_auth_users:\n  prom: {self.hash}\n")
        exp = Exporter("--web.config.file", path, "--log.level", "debug", listen=listen,
                       prefix=netns.prefix if netns else (),
                       config=f"collection: {{max_age: 0s}}\nsysfs: {{root: {self.sysfs}}}\n"
                              + (f"web: {{{web}}}\n" if web else ""))
        self.addCleanup(exp.stop)
        wait_log(exp, "first collection done; ready")
        return exp

    def namespace(self, addresses):
        ns = Namespace(addresses)
        self.addCleanup(ns.close)
        return ns

    def flood_and_scrape(self, exp, sources, per_source, scraper, dest, netns=None):
        """The scraper's credentials checked once; then the flood, and once
        every flood connection was answered, SCRAPES scrapes, each on a new
        connection. Their answers, and the exporter's metrics after them."""
        call = netns.call if netns else (lambda fn, *a: fn(*a))
        first = call(request, scraper, dest, exp.port, get("/metrics", dest, GOOD))
        self.assertEqual(first[0], 200, exp.log()[-2000:])
        flood = Flood(sources, per_source, dest, exp.port, get("/metrics", dest, WRONG),
                      netns=netns)
        flood.start()
        self.addCleanup(flood.stop)
        self.assertTrue(flood.answered.wait(240), "the flood's connections were never answered")
        self.assertIsNone(flood.error)
        answers = [call(request, scraper, dest, exp.port, get("/metrics", dest, GOOD))[0]
                   for _ in range(SCRAPES)]
        flood.stop()
        self.assertGreater(flood.statuses[401], 0)
        return answers, call(metrics_text, scraper, dest, exp.port, GOOD)

    def test_remembered_credentials_are_answered_during_a_flood_from_four_addresses(self):
        exp = self.start()
        sources = [f"127.0.0.{i}" for i in range(2, 6)]
        # 4 x 16 = web.max_connections: every place is the flood's.
        answers, text = self.flood_and_scrape(exp, sources, 16, "127.0.0.1", "127.0.0.1")
        self.assertEqual(answers, [200] * SCRAPES, exp.log()[-3000:])
        # Two checks per address at most: the rest of the flood was refused
        # at once, and nobody was refused a place.
        self.assertGreater(value(text, "rdma_exporter_http_auth_failures_total",
                                 '{reason="throttled"}'), 0)
        for reason in ("max_connections", "max_connections_per_source"):
            self.assertEqual(value(text, "rdma_exporter_http_rejected_connections_total",
                                   f'{{reason="{reason}"}}'), 0, reason)

    def test_remembered_credentials_are_answered_during_a_flood_from_one_ipv6_subnet(self):
        sources = [f"2001:db8:1:2::{i:x}" for i in range(1, 17)]
        dest = "2001:db8:9:9::1"
        ns = self.namespace(sources + [dest])
        exp = self.start(listen=f"[{dest}]:0", netns=ns)
        # 16 addresses x 4 connections: the /64 holds at most 16 places, and
        # its newcomers take the places of its own.
        answers, text = self.flood_and_scrape(exp, sources, 4, dest, dest, netns=ns)
        self.assertEqual(answers, [200] * SCRAPES, exp.log()[-3000:])
        self.assertGreater(value(text, "rdma_exporter_http_auth_failures_total",
                                 '{reason="throttled"}'), 0)
        # Each of the flood's 48 connections past the 16th took the place of
        # an older one of the /64, or was refused when all 16 were served.
        closed = sum(value(text, "rdma_exporter_http_evicted_connections_total",
                           f'{{reason="{reason}"}}')
                     for reason in ("tls_handshake", "headers", "idle", "closing", "auth_check"))
        closed += value(text, "rdma_exporter_http_rejected_connections_total",
                        '{reason="max_connections_per_source"}')
        self.assertEqual(closed, 48, text)

    def test_the_per_source_cap_counts_an_ipv6_subnet_as_one_source(self):
        sources = [f"2001:db8:1:2::{i:x}" for i in range(1, 18)]
        dest = "2001:db8:9:9::1"
        ns = self.namespace(sources + [dest])
        exp = self.start("header_timeout: 1h, read_timeout: 1h", listen=f"[{dest}]:0", netns=ns)

        def unfinished(source):
            s = connect(source, dest, exp.port, timeout=30)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            return s

        # 17 addresses of one /64, one unfinished request each: the 17th
        # takes the place of the first (web.max_connections_per_source, 16).
        held = [ns.call(unfinished, source) for source in sources]
        self.addCleanup(lambda: [s.close() for s in held])
        text = ns.call(metrics_text, dest, dest, exp.port, GOOD)
        self.assertEqual(value(text, "rdma_exporter_http_evicted_connections_total",
                               '{reason="headers"}'), 1, text)
        self.assertEqual(value(text, "rdma_exporter_http_rejected_connections_total",
                               '{reason="max_connections_per_source"}'), 0)
        self.assertEqual(held[0].recv(1), b"")  # closed without an answer
        for s in held[1:]:
            s.sendall(b"\r\n")  # the rest are still open, and served
        for s in held[1:]:
            self.assertIn(b"401 Unauthorized", s.recv(4096))


if __name__ == "__main__":
    unittest.main()
