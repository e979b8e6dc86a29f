"""The golden exposition: fake_rdma_host's whole collection, byte for byte.

tests/golden/fake_rdma_host.prom is what the exporter's collectors make of the
fake kernel (mlx5 over nldev with per-QP counter sets, DCB and ethtool
statistics) and a sysfs tree with mlx5 and rxe devices. A change to any
metric name, label, HELP text or value shows in one reviewable diff of that
file. Values that differ from run to run (durations, the source revision)
are masked.

Regenerate after an intended change:
    python3 tests/integration/test_golden.py --update
"""
import os
import re
import subprocess
import sys
import unittest

from harness import FAKE_HOST_NETDEVS, SOURCE_DIR, add_netdevs, make_proc, make_sysfs

FAKE_HOST_BIN = os.environ.get("RDMA_FAKE_HOST_BIN",
                               os.path.join(SOURCE_DIR, "build", "tests", "fake_rdma_host"))

GOLDEN = os.path.join(SOURCE_DIR, "tests", "golden", "fake_rdma_host.prom")
SYSFS = "mlx5:2:2 rxe"
PROCESSES = {100: ("python3", "/kubepods.slice/pod-a/ctr-1"),
             101: ("python3", "/kubepods.slice/pod-b/ctr-2"),
             200: ("spdk_tgt", "/system.slice/spdk.service"),
             300: ("ib_write_bw", "/user.slice/user-1000.slice/session-3.scope")}

VOLATILE_VALUE = re.compile(
    r"^((?:\w+_duration_seconds|rdma_transceiver_read_timestamp_seconds)(?:\{[^}]*\})?) \S+$")
REVISION = re.compile(r'^(rdma_exporter_build_info\{.*)revision="[^"]*"')


def normalize(text):
    out = []
    for line in text.splitlines():
        line = VOLATILE_VALUE.sub(r"\1 <varies>", line)
        line = REVISION.sub(r'\1revision="<revision>"', line)
        out.append(line)
    return "\n".join(out) + "\n"


def exposition():
    r = subprocess.run([FAKE_HOST_BIN, "--once", "--path.sysfs",
                        add_netdevs(make_sysfs(SYSFS), FAKE_HOST_NETDEVS),
                        "--path.proc", make_proc(PROCESSES)],
                       capture_output=True, text=True, timeout=60, check=False)
    if r.returncode != 0:
        raise AssertionError(f"fake_rdma_host --once exited {r.returncode}: {r.stderr}")
    return normalize(r.stdout)


class GoldenExpositionTest(unittest.TestCase):
    def test_exposition_matches_golden(self):
        with open(GOLDEN, encoding="utf-8") as f:
            want = f.read()
        got = exposition()
        self.maxDiff = None
        self.assertGreater(len(want.splitlines()), 100)
        self.assertEqual(got, want, "the exposition changed; if that is intended, run "
                         "python3 tests/integration/test_golden.py --update and review the diff")


if __name__ == "__main__":
    if "--update" in sys.argv:
        with open(GOLDEN, "w", encoding="utf-8") as f:
            f.write(exposition())
        print(f"wrote {GOLDEN}")
    else:
        unittest.main()
