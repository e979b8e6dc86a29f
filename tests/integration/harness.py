"""Runs the rdma_exporter binary as a black box for the integration tests."""
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

BIN = os.environ.get("RDMA_EXPORTER_BIN", "../../build/rdma_exporter")
SOURCE_DIR = os.environ.get("RDMA_EXPORTER_SOURCE_DIR",
                            os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))


def make_sysfs(specs):
    """A fake sysfs tree from tests/fixtures/sysfs_tree.py; returns its root."""
    root = tempfile.mkdtemp(prefix="rdma_sysfs_")
    subprocess.run(["python3", os.path.join(SOURCE_DIR, "tests/fixtures/sysfs_tree.py"), root]
                   + specs.split(), check=True)
    return root


def write_config(text):
    fd, path = tempfile.mkstemp(suffix=".yml", prefix="rdma_exporter_")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


class Exporter:
    """Starts the daemon on an ephemeral loopback port and reads its log."""

    def __init__(self, *args, config=None):
        cmd = [BIN, "--web.listen-address", "127.0.0.1:0"]
        if config is not None:
            cmd += ["--config.file", write_config(config)]
        cmd += list(args)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.log_lines = []
        self._listening = threading.Event()
        self.port = None
        self._reader = threading.Thread(target=self._read_log, daemon=True)
        self._reader.start()
        if not self._listening.wait(15):
            self.stop()
            raise RuntimeError("exporter did not start listening:\n" + self.log())

    def _read_log(self):
        for line in self.proc.stderr:
            self.log_lines.append(line)
            m = re.search(r"listening on \S+:(\d+)", line)
            if m and self.port is None:
                self.port = int(m.group(1))
                self._listening.set()

    def log(self):
        return "".join(self.log_lines)

    def connect(self, timeout=10):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        return s

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._reader.join(5)
        return code

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def raw_request(port, data, timeout=10):
    """Sends raw bytes, returns everything the server sends until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        chunks = []
        while True:
            try:
                b = s.recv(65536)
            except ConnectionResetError:
                break
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)


def status_of(response):
    m = re.match(rb"HTTP/1\.[01] (\d{3})", response)
    return int(m.group(1)) if m else None


def promtool():
    return shutil.which("promtool")


def value(text, name, labels=""):
    """The value of one sample in exposition text, or None."""
    m = re.search(r"^" + re.escape(name + labels) + r" (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def wait_log(exporter, needle, count=1, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if exporter.log().count(needle) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"no {count}x {needle!r} in the log:\n{exporter.log()}")
