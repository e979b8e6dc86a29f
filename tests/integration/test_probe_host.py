"""The probe's configuration, targets and control port on a host without
RDMA: file_sd reading and re-reading, reload, the responder's answers, and
start-up failures. Probing itself needs a device: tests/vm/test_probe.py."""
import hashlib
import hmac
import os
import random
import re
import signal
import socket
import struct
import subprocess
import tempfile
import time
import unittest
import urllib.request

from harness import BIN, Exporter, raw_request, wait_log, write_config


def free_port():
    """A TCP port free on every address (some tests listen on `:PORT`), taken
    below the kernel's ephemeral range, so that no outgoing connection of the
    suites running beside this one takes it before the exporter binds it."""
    with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as f:
        ephemeral_low = int(f.read().split()[0])
    wildcards = [(socket.AF_INET, "0.0.0.0")]
    if socket.has_ipv6 and os.path.exists("/proc/net/if_inet6"):
        wildcards.append((socket.AF_INET6, "::"))
    pick = random.SystemRandom()
    for _ in range(1000):
        port = pick.randrange(10000, ephemeral_low)
        try:
            for family, wildcard in wildcards:
                with socket.socket(family) as s:
                    s.bind((wildcard, port))
            return port
        except OSError:
            continue
    raise RuntimeError("no free TCP port below the ephemeral range")


def metrics(exporter):
    with urllib.request.urlopen(f"http://127.0.0.1:{exporter.port}/metrics", timeout=10) as r:
        return r.read().decode()


def value(text, name, **labels):
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        m = re.match(r"^(\w+)(?:\{(.*)\})? (\S+)$", line)
        if not m or m.group(1) != name:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            return float(m.group(3))
    return None


# What the probe says on a host without RDMA: the device list cannot be
# read (no verbs kernel interface), or no port can be probed from.
NO_PORT_PROBLEM = (r"collector failed\" collector=probe "
                   r"err=\"(listing RDMA devices: Function not implemented"
                   r"|no RDMA port to probe from)")


def wait_for(fn, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = fn()
        if result:
            return result
        time.sleep(0.05)
    return fn()


class ProbeOnHostTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="rdma_probe_")
        self.peers = os.path.join(self.dir, "peers.json")
        self.probe_port = free_port()

    def config(self, extra="", file_sd=None):
        return f"""
probe:
  enabled: true
  listen_address: 127.0.0.1:{self.probe_port}
  loopback: true
  file_sd: [{", ".join(file_sd or [self.peers])}]
  file_sd_refresh: 100ms
  targets:
    - address: peer-a:10911
      labels: {{rack: r1}}
{extra}"""

    def write_peers(self, text):
        tmp = self.peers + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.peers)

    def test_targets_from_every_source_and_file_changes(self):
        self.write_peers('[{"targets": ["10.0.0.1:10911", "10.0.0.2:10911"]}]')
        with Exporter(config=self.config()) as e:
            got = wait_for(lambda: value(metrics(e), "rdma_probe_targets", source="file_sd"))
            self.assertEqual(got, 2)
            text = metrics(e)
            self.assertEqual(value(text, "rdma_probe_targets", source="static"), 1)
            self.assertEqual(value(text, "rdma_probe_targets", source="loopback"), 1)
            self.assertEqual(value(text, "rdma_probe_file_sd_last_read_successful"), 1)
            # Without a device there is nothing to say about one, and the
            # probe says why it cannot probe.
            self.assertIsNone(value(text, "rdma_probe_device_info"))
            self.assertIsNone(value(text, "rdma_probe_port_state"))
            self.assertEqual(value(text, "rdma_exporter_collector_success", collector="probe"), 0)
            # The log line may land after the scrape's answer.
            wait_for(lambda: re.search(NO_PORT_PROBLEM, e.log()))
            self.assertRegex(e.log(), NO_PORT_PROBLEM)
            # A changed file is picked up.
            self.write_peers("- targets: [a:1, b:1, c:1]\n  labels: {zone: z}\n")
            self.assertEqual(wait_for(lambda: value(metrics(e), "rdma_probe_targets",
                                                    source="file_sd") == 3), True)
            # A broken file keeps the previous targets and says so.
            self.write_peers('[{"targets": ["no-port"]}]')
            self.assertTrue(wait_for(lambda: value(
                metrics(e), "rdma_probe_file_sd_last_read_successful") == 0))
            text = metrics(e)
            self.assertEqual(value(text, "rdma_probe_targets", source="file_sd"), 3)
            self.assertGreaterEqual(value(text, "rdma_probe_file_sd_failures_total"), 1)
            self.assertIn(self.peers, e.log())
            self.assertIn("expected host:port", e.log())
            # A file too large for a target list is not read.
            failures = value(metrics(e), "rdma_probe_file_sd_failures_total")
            with open(self.peers + ".tmp", "w") as f:
                f.write("#" * (17 << 20))
            os.replace(self.peers + ".tmp", self.peers)
            self.assertTrue(wait_for(lambda: value(
                metrics(e), "rdma_probe_file_sd_failures_total") > failures))
            self.assertIn(f"file_sd {self.peers}: is 17825792 bytes, more than 16777216 bytes",
                          e.log())
            self.assertEqual(value(metrics(e), "rdma_probe_targets", source="file_sd"), 3)
            # A missing file too.
            os.unlink(self.peers)
            self.assertTrue(wait_for(lambda: value(
                metrics(e), "rdma_probe_file_sd_failures_total") >= 2))
            self.assertEqual(value(metrics(e), "rdma_probe_targets", source="file_sd"), 3)
            self.assertEqual(e.stop(), 0)

    def test_a_fifo_in_place_of_the_file_sd_file_is_refused_and_the_probe_goes_on(self):
        """The peers file replaced by a FIFO that no one writes to: said once,
        its targets kept, and the probe's loop goes on: it answers a peer,
        takes the other file's changes, and stops at SIGTERM."""
        more = os.path.join(self.dir, "more.json")
        with open(more, "w") as f:
            f.write('[{"targets": ["10.0.0.9:10911"]}]')
        self.write_peers('[{"targets": ["10.0.0.1:10911", "10.0.0.2:10911"]}]')
        with Exporter(config=self.config(file_sd=[self.peers, more])) as e:
            self.assertEqual(wait_for(lambda: value(metrics(e), "rdma_probe_targets",
                                                    source="file_sd")), 3)
            os.unlink(self.peers)
            os.mkfifo(self.peers, 0o600)
            self.assertTrue(wait_for(lambda: value(
                metrics(e), "rdma_probe_file_sd_failures_total") == 1), e.log())
            # Looked at again with the other file, whose change is taken.
            with open(more + ".tmp", "w") as f:
                f.write('[{"targets": ["10.0.0.9:10911", "10.0.0.10:10911"]}]')
            os.replace(more + ".tmp", more)
            self.assertTrue(wait_for(lambda: value(metrics(e), "rdma_probe_targets",
                                                   source="file_sd") == 4))
            text = metrics(e)
            self.assertEqual(value(text, "rdma_probe_file_sd_failures_total"), 1)
            fifo = f"file_sd {self.peers}: is a FIFO, not a regular file"
            self.assertEqual(e.log().count(fifo), 1, e.log())
            # The probe's loop answers a peer: a hello, then a reject of
            # what is not the protocol, counted.
            answer = raw_request(self.probe_port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertTrue(answer.startswith(b"RXP\x04\x01"), answer[:16])
            self.assertIn(b"bad magic", answer)
            self.assertTrue(wait_for(lambda: value(
                metrics(e), "rdma_probe_responder_rejected_total", reason="protocol") == 1))
            self.assertEqual(e.stop(timeout=15), 0)
            self.assertIn("stopped", e.log())

    def test_a_fifo_in_place_of_the_secret_file_rejects_the_reload(self):
        """The secret file replaced by a FIFO: the reload is rejected, said
        once, the secret in force is kept, and SIGTERM stops the daemon."""
        secret = b"a-shared-probe-secret-0123456789"
        path = self.write_secret("probe.secret", secret)
        self.write_peers("[]")
        # Every scrape collects: the reload's outcome shows at once.
        config = self.config(f"  secret_file: {path}\ncollection: {{max_age: 0s}}\n")
        with Exporter(config=config) as e:
            os.unlink(path)
            os.mkfifo(path, 0o600)
            e.proc.send_signal(signal.SIGHUP)
            wait_log(e, "reload rejected")
            problem = f"probe.secret_file {path}: is a FIFO, not a regular file"
            self.assertEqual(e.log().count(problem), 1, e.log())
            self.assertEqual(value(metrics(e), "rdma_exporter_config_last_reload_successful"), 0)
            self.assertEqual(self.setup_with(secret)[:2], (6, b"no RDMA device"))
            self.assertEqual(e.stop(timeout=15), 0)

    def test_reload_applies_new_targets(self):
        self.write_peers("[]")
        path = write_config(self.config())
        with Exporter("--config.file", path) as e:
            self.assertEqual(wait_for(lambda: value(metrics(e), "rdma_probe_targets",
                                                    source="static")), 1)
            with open(path, "w") as f:
                f.write(self.config("""    - address: peer-b:10911
    - address: peer-c:10911
"""))
            e.proc.send_signal(signal.SIGHUP)
            self.assertTrue(wait_for(lambda: value(metrics(e), "rdma_probe_targets",
                                                   source="static") == 3))

    def test_probe_port_rejects_garbage_and_refuses_setups_without_a_device(self):
        self.write_peers("[]")
        with Exporter(config=self.config()) as e:
            answer = raw_request(self.probe_port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            # A version 4 hello with 18 bytes of payload (no secrets, no
            # ports), then a reject.
            self.assertTrue(answer.startswith(b"RXP\x04\x01\x00\x00\x12"), answer[:16])
            self.assertEqual(answer[8 + 16], 0, answer[:32])
            self.assertEqual(answer[8 + 17], 0, answer[:32])
            self.assertEqual(answer[26:31], b"RXP\x04\x04", answer)
            self.assertIn(b"bad magic", answer)
            text = wait_for(lambda: (lambda t: t if value(
                t, "rdma_probe_responder_rejected_total", reason="protocol") else None)(
                    metrics(e)))
            self.assertEqual(value(text, "rdma_probe_responder_rejected_total",
                                   reason="protocol"), 1)
            self.assertEqual(e.stop(), 0)

    def setup_with(self, key, device=b"mlx5_0", port=1, rail=b"", sent_port=None,
                   dialled_port=None, keys=1):
        """Connects to the probe port, reads the version 4 hello (expecting
        `keys` secrets and no ports) and sends a setup signed with `key` (a
        secret, a list of them, or None); returns the reject's code and
        reason and the hello's bytes."""
        with socket.create_connection(("127.0.0.1", self.probe_port), timeout=10) as s:
            size = 16 + 1 + 1
            hello = b""
            while len(hello) < 8 + size:
                chunk = s.recv(8 + size - len(hello))
                self.assertTrue(chunk, "no hello")
                hello += chunk
            self.assertEqual(hello[:8], b"RXP\x04\x01\x00\x00" + bytes([size]))
            nonce, count = hello[8:24], hello[24]
            self.assertEqual(count, keys)
            self.assertEqual(hello[25], 0)  # no ports
            # write, 64 B, tclass 0, sl 0, MTU 1024, QPN 17, PSN 0, LID 0,
            # GID 0, rkey 0, address 0; the responder's device and port (or
            # its rail), each name a length byte and its bytes; the prober's
            # nonce; the address it dialled (IPv4-mapped) and port; the count
            # of MACs and each, over "setup", the hello's nonce, the type (2)
            # and all of that.
            fields = (struct.pack(">BIBBH", 2, 64, 0, 0, 1024) +
                      struct.pack(">IIH", 17, 0, 0) + bytes(16) + struct.pack(">IQ", 0, 0) +
                      bytes([len(device)]) + device + bytes([port]) +
                      bytes([len(rail)]) + rail + os.urandom(16) +
                      bytes(10) + b"\xff\xff" + bytes([127, 0, 0, 1]) +
                      struct.pack(">H", dialled_port or self.probe_port))
            secrets = [] if key is None else key if isinstance(key, list) else [key]
            macs = [hmac.new(k, b"setup" + nonce + b"\x02" + fields, hashlib.sha256).digest()
                    for k in secrets]
            if sent_port is not None:  # another port than the MAC is for
                at = 47 + 1 + len(device)
                fields = fields[:at] + bytes([sent_port]) + fields[at + 1:]
            payload = fields + bytes([len(macs)]) + b"".join(macs)
            s.sendall(b"RXP\x04\x02\x00" + struct.pack(">H", len(payload)) + payload)
            answer = s.recv(512)
        self.assertEqual(answer[:5], b"RXP\x04\x04", answer)
        return answer[8], answer[9:], hello  # the reject code and reason

    @staticmethod
    def derived(secret):
        """What a hello could give away of a secret: HMACs of it under the
        labels the protocol uses, whole and as 8-byte key ids (what version 3
        sent to whoever connected)."""
        out = []
        for label in (b"rdma_exporter probe key id", b"setup", b"accept"):
            digest = hmac.new(secret, label, hashlib.sha256).digest()
            out += [digest, digest[:8]]
        return out

    def assert_reveals_nothing(self, hello, *secrets):
        for secret in secrets:
            for d in self.derived(secret):
                self.assertNotIn(d, hello)
            self.assertNotIn(secret, hello)

    def write_secret(self, name, secret, mode=0o600):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(secret + b"\n")
        os.chmod(path, mode)
        return path

    def test_probe_peers_prove_the_shared_secret(self):
        secret = b"a-shared-probe-secret-0123456789"
        path = self.write_secret("probe.secret", secret)
        self.write_peers("[]")

        def setup_with(key, **kw):
            code, reason, hello = self.setup_with(key, **kw)
            # Nothing a stranger could test guesses of the secret against.
            self.assert_reveals_nothing(hello, secret)
            return code, reason

        with Exporter(config=self.config(f"  secret_file: {path}\n")) as e:
            self.assertEqual(setup_with(b"the-wrong-secret-of-some-length"),
                             (2, b"authentication failed"))
            self.assertEqual(setup_with(None), (2, b"authentication failed"))
            # The MAC covers the port asked for: sent for another, it fails.
            self.assertEqual(setup_with(secret, sent_port=2), (2, b"authentication failed"))
            # A set-up made for another address (relayed to this responder
            # from the address the prober dialled) is refused.
            self.assertEqual(setup_with(secret, dialled_port=self.probe_port + 1),
                             (2, b"the set-up was made for another address"))
            # The right secret passes authentication; without a device the
            # set-up is then refused for want of resources (code 6), whether
            # it names a device or a rail.
            self.assertEqual(setup_with(secret), (6, b"no RDMA device"))
            self.assertEqual(setup_with(secret, device=b"", rail=b"192.168.100.0/24"),
                             (6, b"no RDMA device"))
            # Naming neither is malformed (code 7).
            self.assertEqual(setup_with(secret, device=b""),
                             (7, b"setup: names neither a device nor a rail"))
            text = wait_for(lambda: (lambda t: t if value(
                t, "rdma_probe_responder_rejected_total", reason="resources") == 2 else None)(
                    metrics(e)))
            self.assertEqual(value(text, "rdma_probe_responder_rejected_total", reason="auth"), 3)
            self.assertEqual(value(text, "rdma_probe_responder_rejected_total",
                                   reason="relayed"), 1)
            self.assertEqual(value(text, "rdma_probe_responder_rejected_total",
                                   reason="protocol"), 1)
            self.assertNotIn(secret.decode(), e.log())
            self.assertNotIn(secret.decode(), text)
            self.assertEqual(e.stop(), 0)

    def test_a_reload_rotates_the_secret_with_a_grace_period(self):
        """A reload that finds a new secret in the file (no other option
        changed) accepts both until the grace period ends, then only the new
        one; a secret file others can read rejects the reload and the
        secrets stay."""
        old, new = b"the-old-probe-secret-0123456789", b"the-new-probe-secret-9876543210"
        path = self.write_secret("probe.secret", old)
        self.write_peers("[]")
        config = self.config(f"  secret_file: {path}\n  secret_grace: 1s\n")
        with Exporter(config=config) as e:
            self.assertEqual(self.setup_with(old)[:2], (6, b"no RDMA device"))
            self.write_secret("probe.secret", new)
            e.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: "secret rotated" in e.log())
            code, reason, hello = self.setup_with(old, keys=2)
            self.assert_reveals_nothing(hello, old, new)
            self.assertEqual((code, reason), (6, b"no RDMA device"))
            self.assertEqual(self.setup_with(new, keys=2)[:2], (6, b"no RDMA device"))
            # A prober in its own grace period signs with both.
            self.assertEqual(self.setup_with([new, old], keys=2)[:2], (6, b"no RDMA device"))
            # After the grace period: the new secret only.
            wait_for(lambda: self.hello_keys() == 1 or None)
            self.assertEqual(self.setup_with(new)[:2], (6, b"no RDMA device"))
            self.assertEqual(self.setup_with(old)[:2], (2, b"authentication failed"))
            # The second MAC verifies when the first is of a secret not held.
            self.assertEqual(self.setup_with([old, new])[:2], (6, b"no RDMA device"))
            # A world-readable secret file is refused; the new secret stays.
            self.write_secret("probe.secret", b"a-third-probe-secret-000000000", 0o644)
            e.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: "reload rejected" in e.log())
            self.assertIn("mode 0644 lets other users read or change the secret", e.log())
            self.assertEqual(self.setup_with(new)[:2], (6, b"no RDMA device"))
            self.assertEqual(e.stop(), 0)

    def hello_keys(self):
        """How many secrets the responder's hello says it accepts now."""
        with socket.create_connection(("127.0.0.1", self.probe_port), timeout=10) as s:
            data = b""
            while len(data) < 8 + 17:
                chunk = s.recv(8 + 17 - len(data))
                self.assertTrue(chunk, "no hello")
                data += chunk
            return data[8 + 16]

    def test_a_secret_file_others_can_read_is_refused_at_start(self):
        path = self.write_secret("open.secret", b"a-shared-probe-secret-0123456789", 0o604)
        code, err = self.start_failure(self.config(f"  secret_file: {path}\n"))
        self.assertEqual(code, 1, err)
        self.assertIn(f"probe.secret_file {path}: mode 0604 lets other users read or change "
                      "the secret", err)
        # Readable by the group (a Kubernetes Secret with fsGroup) is fine.
        path = self.write_secret("group.secret", b"a-shared-probe-secret-0123456789", 0o640)
        self.write_peers("[]")
        with Exporter(config=self.config(f"  secret_file: {path}\n")) as e:
            self.assertEqual(self.setup_with(b"a-shared-probe-secret-0123456789")[:2],
                             (6, b"no RDMA device"))
            self.assertEqual(e.stop(), 0)

    def test_targets_are_asked_for_their_ports(self):
        """A second exporter's probe port answers discovery even without RDMA
        (a hello with no ports); a port nothing listens on is refused."""
        other_port = free_port()
        unused = free_port()
        other_config = f"""
probe:
  enabled: true
  listen_address: 127.0.0.1:{other_port}
"""
        config = f"""
probe:
  enabled: true
  listen_address: 127.0.0.1:{self.probe_port}
  discovery_interval: 200ms
  backoff_initial: 50ms
  backoff_max: 100ms
  targets:
    - address: 127.0.0.1:{other_port}
      labels: {{rack: r1}}
    - address: 127.0.0.1:{unused}
"""
        with Exporter(config=other_config) as other, Exporter(config=config) as e:
            answering = f"127.0.0.1:{other_port}"
            refused = f"127.0.0.1:{unused}"

            def discovered():
                t = metrics(e)
                if (value(t, "rdma_probe_target_up", target=answering) == 1 and
                        (value(t, "rdma_probe_discovery_errors_total", target=refused,
                               reason="refused") or 0) >= 2):
                    return t
                return None

            text = wait_for(discovered)
            self.assertIsNotNone(text, metrics(e))
            self.assertEqual(value(text, "rdma_probe_target_up", target=answering, rack="r1"), 1)
            self.assertEqual(value(text, "rdma_probe_target_ports", target=answering), 0)
            self.assertIsNone(value(text, "rdma_probe_discovery_errors_total", target=answering))
            self.assertEqual(value(text, "rdma_probe_target_up", target=refused), 0)
            self.assertEqual(value(text, "rdma_probe_target_ports", target=refused), 0)
            self.assertEqual(value(text, "rdma_probe_targets", source="static"), 2)
            # Nothing to probe from or to: no probe series.
            self.assertIsNone(value(text, "rdma_probe_sent_total"))
            # Targets that do not answer are not a problem of the probe; the
            # missing RDMA port is.
            self.assertEqual(value(text, "rdma_exporter_collector_success", collector="probe"), 0)
            # The log line may land after the scrape's answer.
            wait_for(lambda: re.search(NO_PORT_PROBLEM, e.log()))
            self.assertRegex(e.log(), NO_PORT_PROBLEM)
            # Asked again after the interval: the other exporter's responder
            # sees connections that read the hello and leave, and rejects none.
            self.assertTrue(wait_for(lambda: value(
                metrics(e), "rdma_probe_discovery_errors_total", target=refused,
                reason="refused") >= 3))
            other_text = metrics(other)
            self.assertIsNone(value(other_text, "rdma_probe_responder_rejected_total"))
            self.assertEqual(e.stop(), 0)
            self.assertEqual(other.stop(), 0)

    def test_listening_beyond_loopback_without_a_secret_is_warned_of_at_start(self):
        """The default posture says what it is: no secret and a control port
        that every interface answers gets one warning line; loopback only,
        or a secret, gets none."""
        warning = "listens beyond loopback and no shared secret is set"
        secret = self.write_secret("probe.secret", b"a-shared-probe-secret-0123456789")
        for everywhere, extra, warned in ((True, "", True), (False, "", False),
                                          (True, f"  secret_file: {secret}\n", False)):
            self.probe_port = free_port()  # a port of its own for each start
            config = self.config(extra)
            if everywhere:
                config = config.replace(f"listen_address: 127.0.0.1:{self.probe_port}",
                                        f"listen_address: :{self.probe_port}")
            with Exporter(config=config) as e:
                wait_for(lambda: "probe responder listening" in e.log())
                self.assertEqual(e.log().count(warning), 1 if warned else 0, e.log())
                if warned:
                    self.assertIn(f"listen_address=:{self.probe_port}", e.log())
                self.assertEqual(e.stop(), 0)

    def start_failure(self, config):
        r = subprocess.run([BIN, "--web.listen-address", "127.0.0.1:0", "--config.file",
                            write_config(config)], capture_output=True, text=True, timeout=30)
        return r.returncode, r.stderr

    def test_port_in_use_fails_at_start(self):
        with socket.socket() as busy:
            busy.bind(("127.0.0.1", self.probe_port))
            busy.listen()
            code, err = self.start_failure(self.config())
        self.assertEqual(code, 1, err)
        self.assertIn(f"probe responder: listen on 127.0.0.1:{self.probe_port}", err)

    def test_short_secret_fails_at_start(self):
        short = os.path.join(self.dir, "secret")
        with open(short, "w") as f:
            f.write("short\n")
        os.chmod(short, 0o600)
        code, err = self.start_failure(self.config(f"  secret_file: {short}\n"))
        self.assertEqual(code, 1, err)
        self.assertIn("at least 16 bytes", err)
        code, err = self.start_failure(self.config(f"  secret_file: {short}.missing\n"))
        self.assertEqual(code, 1, err)
        self.assertIn("No such file", err)


if __name__ == "__main__":
    unittest.main()
