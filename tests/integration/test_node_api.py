"""The kubernetes section against the node's sockets as the daemon meets
them: answering (fake_node_api_server), missing, refusing, hanging and
answering garbage. Scrapes are answered whatever the sockets do, a failing
API shows in rdma_exporter_kubernetes_api_up and is logged once, not at
every refresh."""
import os
import socket
import tempfile
import threading
import time
import unittest
import urllib.request

from harness import Exporter, NodeApi, value

API_UP = "rdma_exporter_kubernetes_api_up"
CALLS = "rdma_exporter_kubernetes_api_calls_total"
FAILURES = "rdma_exporter_kubernetes_api_failures_total"
NOT_ANSWERING = "kubernetes: not answering"


class UnixServer:
    """Accepts on a unix socket; each connection is handed to HANDLE (a
    function of the connection) on a thread of its own."""

    def __init__(self, path, handle):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(16)
        self.handle, self.held = handle, []
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def close(self):
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        for c in self.held:
            c.close()


def hang(conn):
    """Reads what comes and never answers."""
    try:
        while conn.recv(4096):
            pass
    except OSError:
        pass


def garbage(conn):
    try:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" + bytes(range(256)))
        conn.close()
    except OSError:
        pass


def config(cri, pod_resources):
    return f"""collection:
  max_age: 0s
kubernetes:
  enabled: true
  cri_socket: {cri}
  pod_resources_socket: {pod_resources}
  refresh_interval: 1s
  timeout: 500ms
"""


class NodeApiTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="rdma_node_sockets_")
        self.cri = os.path.join(self.dir, "cri.sock")
        self.pod_resources = os.path.join(self.dir, "kubelet.sock")

    def scrape(self, exporter):
        with urllib.request.urlopen(f"http://127.0.0.1:{exporter.port}/metrics",
                                    timeout=10) as r:
            self.assertEqual(r.status, 200)
            return r.read().decode()

    def scrape_until_calls(self, exporter, calls):
        """Scrapes until both APIs were called CALLS times (refreshes every
        second), then returns that scrape."""
        deadline = time.monotonic() + 120
        while True:
            text = self.scrape(exporter)
            counts = [value(text, CALLS, f'{{api="{api}"}}') or 0
                      for api in ("cri", "pod_resources")]
            if min(counts) >= calls:
                return text
            self.assertLess(time.monotonic(), deadline, f"calls {counts} of {calls}:\n{text}")
            time.sleep(0.2)

    def assert_failing_quietly(self, exporter):
        # Three refreshes: each API called at least 3 times, all failed.
        text = self.scrape_until_calls(exporter, 3)
        for api in ("cri", "pod_resources"):
            labels = f'{{api="{api}"}}'
            self.assertEqual(value(text, API_UP, labels), 0, api)
            self.assertEqual(value(text, FAILURES, labels), value(text, CALLS, labels), api)
        # Logged once per API when it started failing, not at each refresh.
        for api in ("cri", "pod_resources"):
            lines = [line for line in exporter.log().splitlines()
                     if NOT_ANSWERING in line and f"api={api}" in line]
            self.assertEqual(len(lines), 1, exporter.log())
        # The rest of the exposition is there.
        self.assertIn("\nrdma_exporter_build_info{", text)

    def check_failing_quietly(self, handle=None):
        """Runs the daemon against the two sockets, served by HANDLE (see
        UnixServer) when given, and checks that it fails quietly."""
        servers = [UnixServer(p, handle) for p in (self.cri, self.pod_resources)] if handle else []
        try:
            exporter = Exporter(config=config(self.cri, self.pod_resources))
            try:
                self.assert_failing_quietly(exporter)
            finally:
                self.assertEqual(exporter.stop(), 0, exporter.log())
        finally:
            for s in servers:
                s.close()

    def test_answering_sockets(self):
        api = NodeApi({"containers": [], "pods": []})
        try:
            exporter = Exporter(config=config(api.cri, api.pod_resources))
            try:
                text = self.scrape_until_calls(exporter, 3)
                for name in ("cri", "pod_resources"):
                    self.assertEqual(value(text, API_UP, f'{{api="{name}"}}'), 1, name)
                    self.assertEqual(value(text, FAILURES, f'{{api="{name}"}}'), 0, name)
                self.assertNotIn(NOT_ANSWERING, exporter.log())
            finally:
                self.assertEqual(exporter.stop(), 0, exporter.log())
        finally:
            api.stop()

    def test_missing_sockets(self):
        self.check_failing_quietly()

    def test_sockets_nobody_listens_on(self):
        for path in (self.cri, self.pod_resources):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(path)
            s.close()
        self.check_failing_quietly()

    def test_sockets_that_hang(self):
        self.check_failing_quietly(hang)

    def test_sockets_that_answer_garbage(self):
        self.check_failing_quietly(garbage)


if __name__ == "__main__":
    unittest.main()
