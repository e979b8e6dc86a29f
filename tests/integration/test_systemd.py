"""systemd integration: socket activation (--web.systemd-socket, the sockets
passed as LISTEN_FDS from descriptor 3) and the notify protocol (READY=1,
RELOADING=1, STOPPING=1, WATCHDOG=1 on NOTIFY_SOCKET), with the sockets made
here as systemd makes them."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.request

from harness import BIN, SOURCE_DIR, make_sysfs, raw_request, status_of

# Puts the listening socket at descriptor 3 and says it is this process's,
# as systemd does, then runs the daemon in the same process.
ACTIVATE = """
import os, sys
fd = int(sys.argv[1])
if fd != 3:
    os.dup2(fd, 3)
    os.close(fd)
os.set_inheritable(3, True)
os.environ["LISTEN_FDS"] = "1"
os.environ["LISTEN_PID"] = str(os.getpid())
os.execv(sys.argv[2], sys.argv[2:])
"""


class Daemon:
    """rdma_exporter with the given command and environment; its log read on a thread."""

    def __init__(self, cmd, env=None, pass_fds=()):
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=dict(os.environ, **(env or {})),
                                     pass_fds=pass_fds)
        self.lines = []
        self.listening = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line)
            if "listening on" in line:
                self.listening.set()

    def log(self):
        return "".join(self.lines)

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self.reader.join(5)
        self.proc.stdout.close()
        self.proc.stderr.close()
        return code

    def wait_log(self, needle, timeout=15):
        deadline = time.monotonic() + timeout
        while needle not in self.log():
            if time.monotonic() > deadline:
                raise AssertionError(f"no {needle!r} in the log:\n{self.log()}")
            time.sleep(0.05)


OTLP_SINK = os.path.join(SOURCE_DIR, "tests", "vm", "otlp_sink.py")


class OtlpSink:
    """tests/vm/otlp_sink.py on a loopback port: answers every OTLP/HTTP POST
    with 200 and counts them in a stats file."""

    def __init__(self, directory):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.stats = os.path.join(directory, "otlp-sink.json")
        self.proc = subprocess.Popen([shutil.which("python3"), OTLP_SINK, "--listen",
                                      f"127.0.0.1:{port}", "--stats", self.stats],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{port}"

    def posts(self):
        try:
            with open(self.stats) as f:
                return json.load(f)["requests"]
        except FileNotFoundError:
            return 0

    def wait_for(self, posts, daemon, timeout=30):
        deadline = time.monotonic() + timeout
        while self.posts() < posts:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"{self.posts()} pushes arrived:\n{daemon.log()}")
            time.sleep(0.05)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(10)


class SystemdTestCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sysfs = make_sysfs("mlx5:1:1")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.sysfs, ignore_errors=True)

    def args(self):
        return ["--path.sysfs", self.sysfs, "--log.level", "debug"]


class SocketActivationTest(SystemdTestCase):
    def activated(self, sock, *args):
        d = Daemon([shutil.which("python3"), "-c", ACTIVATE, str(sock.fileno()), BIN,
                    "--web.systemd-socket", *self.args(), *args], pass_fds=(sock.fileno(),))
        sock.close()  # the daemon holds it now
        self.addCleanup(d.stop)
        return d

    def test_serves_on_the_socket_it_is_given(self):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        d = self.activated(sock)
        # The socket listens before the daemon runs: a request made now waits
        # in its backlog and is answered.
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=20) as r:
            self.assertEqual(r.status, 200)
            self.assertIn('rdma_exporter_build_info{', r.read().decode())
        self.assertTrue(d.listening.wait(10), d.log())
        self.assertIn(f'msg="listening on" address=127.0.0.1:{port} tls=false systemd_socket=true',
                      d.log())
        self.assertEqual(d.stop(), 0, d.log())

    def test_without_a_socket_it_exits_1_and_says_why(self):
        r = subprocess.run([BIN, "--web.systemd-socket", *self.args()], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("--web.systemd-socket: systemd passed no socket to this process", r.stderr)

    def test_a_socket_that_is_not_tcp_is_refused(self):
        d = tempfile.mkdtemp(prefix="rdma_sd_")
        self.addCleanup(shutil.rmtree, d, True)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(os.path.join(d, "s"))
        sock.listen()
        daemon = self.activated(sock)
        self.assertEqual(daemon.proc.wait(30), 1)
        daemon.stop()
        self.assertIn("is not a TCP socket", daemon.log())

    def test_with_systemd_socket_activate(self):
        tool = shutil.which("systemd-socket-activate")
        if tool is None:
            self.skipTest("systemd-socket-activate is not installed")
        # It binds, then starts the daemon at the first connection.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        d = Daemon([tool, "-l", f"127.0.0.1:{port}", BIN, "--web.systemd-socket", *self.args()])
        self.addCleanup(d.stop)
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                threading.Event().wait(0.05)
        response = raw_request(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        self.assertEqual(status_of(response), 200, d.log())


class NotifyTest(SystemdTestCase):
    def setUp(self):
        d = tempfile.mkdtemp(prefix="rdma_notify_")
        self.addCleanup(shutil.rmtree, d, True)
        self.path = os.path.join(d, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(20)
        self.addCleanup(self.sock.close)

    def start(self, env=None, *args):
        d = Daemon([BIN, "--web.listen-address", "127.0.0.1:0", *self.args(), *args],
                   env={"NOTIFY_SOCKET": self.path, **(env or {})})
        self.addCleanup(d.stop)
        return d

    def next_message(self):
        data = self.sock.recv(4096).decode()
        return dict(line.split("=", 1) for line in data.splitlines() if "=" in line)

    def until(self, key, d):
        """Messages up to the first with `key`; that one last."""
        seen = []
        while True:
            try:
                m = self.next_message()
            except socket.timeout:
                self.fail(f"no {key} after {seen}:\n{d.log()}")
            seen.append(m)
            if key in m:
                return seen

    def test_ready_reloading_and_stopping(self):
        d = self.start()
        ready = self.until("READY", d)[-1]
        self.assertEqual(ready["READY"], "1")
        self.assertEqual(ready["STATUS"], "serving metrics on 1 listener(s)")
        # READY=1 comes once the first collection is done (logged before it).
        d.wait_log("first collection done; ready")
        d.proc.send_signal(signal.SIGHUP)
        reloading = self.until("RELOADING", d)[-1]
        self.assertEqual(reloading["RELOADING"], "1")
        self.assertRegex(reloading["MONOTONIC_USEC"], r"^[1-9]\d*$")
        again = self.until("READY", d)[-1]
        self.assertEqual((again["READY"], again["STATUS"]), ("1", "configuration reloaded"))
        d.proc.send_signal(signal.SIGTERM)
        stopping = self.until("STOPPING", d)[-1]
        self.assertEqual(stopping["STOPPING"], "1")
        # It exits by itself: a second SIGTERM (as stop() would send while
        # it is still running) could land after its handlers are gone.
        self.assertEqual(d.proc.wait(20), 0, d.log())

    def otlp_config(self, endpoint):
        path = os.path.join(os.path.dirname(self.path), "otlp.yml")
        with open(path, "w") as f:
            f.write("otlp: {enabled: true, interval: 1s, timeout: 2s}\n")
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
        return env, ("--config.file", path)

    def assert_ready_then_serves(self, d):
        ready = self.until("READY", d)[-1]
        self.assertEqual((ready["READY"], ready["STATUS"]),
                         ("1", "serving metrics on 1 listener(s)"))
        d.wait_log("first collection done; ready")

    def test_ready_with_otlp_pushing_to_a_receiver_that_answers(self):
        with OtlpSink(os.path.dirname(self.path)) as sink:
            env, args = self.otlp_config(sink.url)
            d = self.start(env, *args)
            self.assert_ready_then_serves(d)
            # The pushes went through: readiness does not depend on who
            # asked for the first collection.
            sink.wait_for(2, d)
            d.wait_log("succeeded")
        self.assertEqual(d.stop(), 0, d.log())

    def test_ready_with_otlp_and_the_receiver_down(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env, args = self.otlp_config(f"http://127.0.0.1:{port}")
        d = self.start(env, *args)
        self.assert_ready_then_serves(d)
        d.wait_log("Connection refused")
        self.assertEqual(d.stop(), 0, d.log())

    def test_watchdog_pings_at_half_the_timeout(self):
        d = self.start({"WATCHDOG_USEC": "400000"})
        seen = self.until("READY", d)
        pings = sum(1 for m in seen if "WATCHDOG" in m)
        while pings < 3:
            m = self.until("WATCHDOG", d)[-1]
            self.assertEqual(m["WATCHDOG"], "1")
            pings += 1
        self.assertIn('msg="systemd watchdog enabled" interval_ms=200', d.log())
        self.assertEqual(d.stop(), 0, d.log())

    def test_no_watchdog_for_another_process(self):
        # WATCHDOG_PID names the process the timeout is for.
        d = self.start({"WATCHDOG_USEC": "400000", "WATCHDOG_PID": "1"})
        self.until("READY", d)
        self.assertNotIn("systemd watchdog", d.log())
        self.assertEqual(d.stop(), 0, d.log())

    def test_a_failed_start_says_why_in_status(self):
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            r = subprocess.run([BIN, "--web.listen-address", f"127.0.0.1:{port}", *self.args()],
                               capture_output=True, text=True, timeout=30,
                               env=dict(os.environ, NOTIFY_SOCKET=self.path))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(f"listen on 127.0.0.1:{port}: Address already in use", r.stderr)
        self.assertEqual(self.next_message(),
                         {"STATUS": f"listen on 127.0.0.1:{port}: Address already in use"})


class UnitFilesTest(unittest.TestCase):
    def read(self, rel):
        with open(os.path.join(SOURCE_DIR, "config/systemd", rel)) as f:
            return f.read()

    def test_socket_unit_and_its_drop_in_verify(self):
        d = tempfile.mkdtemp(prefix="rdma_unit_")
        self.addCleanup(shutil.rmtree, d, True)
        binary = os.path.abspath(BIN)
        service = os.path.join(d, "rdma_exporter.service")
        for name in ("rdma_exporter.service", "rdma_exporter.socket"):
            with open(os.path.join(d, name), "w") as f:
                f.write(self.read(name).replace("/usr/bin/rdma_exporter", binary))
        os.makedirs(service + ".d")
        dropin = self.read("rdma_exporter.service.d/socket-activation.conf")
        with open(os.path.join(service + ".d", "socket-activation.conf"), "w") as f:
            f.write(dropin.replace("/usr/bin/rdma_exporter", binary))
        r = subprocess.run(["systemd-analyze", "verify", "--man=no", service,
                            os.path.join(d, "rdma_exporter.socket")],
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, SYSTEMD_UNIT_PATH=d + ":"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("rdma_exporter.s", r.stderr)  # no warning about either unit
        self.assertIn("--web.systemd-socket", dropin)
        self.assertIn("ListenStream=10910", self.read("rdma_exporter.socket"))

    def test_the_service_is_type_notify_with_a_watchdog(self):
        unit = self.read("rdma_exporter.service")
        for line in ("Type=notify", "NotifyAccess=main", "WatchdogSec=60s"):
            self.assertIn("\n" + line + "\n", unit)


if __name__ == "__main__":
    unittest.main()
