"""The test harness's own contracts that its users rely on."""
import os
import subprocess
import unittest

from harness import Server, free_port


def running(argv):
    """Whether a process runs with exactly ARGV as its command line."""
    r = subprocess.run(["pgrep", "-f", "-x", " ".join(argv)], capture_output=True, text=True)
    return r.returncode == 0


class ServerTest(unittest.TestCase):
    def test_a_server_that_never_gets_ready_is_stopped(self):
        # Nothing listens on the port: the wait runs out, and the process,
        # which the caller holds no handle to, is gone by the time it raises.
        argv = ["sleep", "%d.5" % (600 + os.getpid() % 1000)]
        with self.assertRaisesRegex(RuntimeError, r"^never-ready not ready within 1s"):
            Server("never-ready", argv, "/", free_port(), timeout=1)
        self.assertFalse(running(argv))

    def test_a_server_that_gets_ready_runs_until_stopped(self):
        port = free_port()
        server = Server("http", ["python3", "-m", "http.server", "--bind", "127.0.0.1", str(port)],
                        "/", port)
        try:
            self.assertIsNone(server.proc.poll())
        finally:
            server.stop()
        self.assertIsNotNone(server.proc.poll())


if __name__ == "__main__":
    unittest.main()
