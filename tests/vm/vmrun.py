"""Shared by the Soft-RoCE VM suites: stage the binaries and guest scripts
under /var/tmp (the guest sees the host's root read-only but mounts fresh file
systems on /tmp and /run, so a checkout below /tmp would be invisible to it),
boot the VM once per test class with tests/vm/run-in-vm, and read what the
guest script left in the results directory.

Environment: RDMA_EXPORTER_BIN (default ../../build/rdma_exporter from this
file), RDMA_FAKE_NODE_API_BIN (default ../../build/tests/fake_node_api_server),
RDMA_VM_STAGE_ROOT (default /var/tmp/rdma-exporter-vm), RDMA_VM_KEEP=1
keeps the staging directory even when every test passed, RDMA_VM_RESULTS=DIR
checks the results of an earlier run instead of booting.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.abspath(os.environ.get("RDMA_EXPORTER_BIN",
                                     os.path.join(HERE, "..", "..", "build", "rdma_exporter")))
FAKE_NODE_API_BIN = os.path.abspath(os.environ.get(
    "RDMA_FAKE_NODE_API_BIN", os.path.join(HERE, "..", "..", "build", "tests",
                                           "fake_node_api_server")))
STAGE_ROOT = os.environ.get("RDMA_VM_STAGE_ROOT", "/var/tmp/rdma-exporter-vm")
RUN_IN_VM = os.path.join(HERE, "run-in-vm")
# Staging directories left behind by failed runs are removed after this age.
STALE_STAGE_SECS = 24 * 3600
HW_PREFIX, HW_SUFFIX = "rdma_port_hw_", "_total"

SAMPLE_RE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?[ \t]+(\S+)(?:[ \t]+-?\d+)?$")
LABEL_RE = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)')


class Exposition:
    """The samples of a Prometheus text exposition (format 0.0.4)."""

    def __init__(self, text, source="exposition"):
        self.source = source
        self.samples = []  # (name, labels dict, value)
        seen = set()
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.startswith("#"):
                continue
            m = SAMPLE_RE.match(line)
            if not m:
                raise ValueError(f"{source}:{number}: not a sample line: {line!r}")
            name, label_text, value = m.groups()
            labels = {}
            rest = label_text or ""
            while rest.strip():
                lm = LABEL_RE.match(rest)
                if not lm:
                    raise ValueError(f"{source}:{number}: bad labels: {line!r}")
                labels[lm.group(1)] = re.sub(r"\\(.)", lambda e: "\n" if e.group(1) == "n"
                                             else e.group(1), lm.group(2))
                rest = rest[lm.end():]
            key = (name, tuple(sorted(labels.items())))
            if key in seen:
                raise ValueError(f"{source}:{number}: duplicate series: {line!r}")
            seen.add(key)
            self.samples.append((name, labels, float(value)))

    def series(self, name, **labels):
        """(labels, value) of every sample of NAME whose labels include LABELS."""
        return [(l, v) for n, l, v in self.samples
                if n == name and all(l.get(k) == w for k, w in labels.items())]

    def value(self, name, **labels):
        """The value of the one sample of NAME with LABELS, None if there is none."""
        found = self.series(name, **labels)
        if len(found) > 1:
            raise AssertionError(f"{self.source}: {len(found)} series {name}{labels}")
        return found[0][1] if found else None

    def port_hw_counters(self, device, port):
        """{driver counter name: value} of rdma_port_hw_*_total for one port."""
        out = {}
        for name, labels, value in self.samples:
            if (name.startswith(HW_PREFIX) and name.endswith(HW_SUFFIX)
                    and labels.get("device") == device and labels.get("port") == port):
                out[name[len(HW_PREFIX):-len(HW_SUFFIX)]] = value
        return out

    def devices(self):
        return {l.get("device") for _, l, _ in self.samples if "device" in l}

    def buckets(self, name, **labels):
        """[(upper bound, cumulative count)] of one histogram NAME with LABELS."""
        out = []
        for lab, value in self.series(name + "_bucket", **labels):
            le = lab["le"]
            out.append((float("inf") if le == "+Inf" else float(le), value))
        return sorted(out)


def delta_buckets(after, before):
    """A histogram's buckets between two scrapes: AFTER less BEFORE."""
    b = dict(before)
    return [(bound, count - b.get(bound, 0.0)) for bound, count in after]


def quantile(buckets, q):
    """Prometheus' histogram_quantile over BUCKETS: linear inside the bucket;
    None without observations."""
    total = buckets[-1][1] if buckets else 0
    if total == 0:
        return None
    rank = q * total
    lower, below = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if bound == float("inf"):
                return lower
            return lower + (bound - lower) * (rank - below) / max(count - below, 1e-12)
        lower, below = bound, count
    return lower


def perftest_typical_us(text):
    """t_typical (the median) from perftest's latency table."""
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[0].isdigit() and re.match(r"^\d+$", fields[1]):
            return float(fields[4])
    raise AssertionError("no result line in perftest's output")



def remove_stale_stages():
    """Removes staging directories that failed runs left behind a day ago."""
    now = time.time()
    for path in glob.glob(os.path.join(STAGE_ROOT, "stage-*")):
        try:
            if now - os.path.getmtime(path) > STALE_STAGE_SECS:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass


def new_stage(prefix=None):
    """A new staging directory under STAGE_ROOT (which the guest can read)."""
    os.makedirs(STAGE_ROOT, exist_ok=True)
    remove_stale_stages()
    stage = tempfile.mkdtemp(prefix=prefix or f"stage-{os.getpid()}-", dir=STAGE_ROOT)
    os.chmod(stage, 0o755)
    return stage


def stage_files(stage, binaries=None, files=()):
    """Copies BINARIES ({staged name: host path}) and FILES (names in this
    directory, or paths) into STAGE; returns the staged binaries' paths."""
    staged = []
    for name, path in (binaries or {}).items():
        if not os.access(path, os.X_OK):
            raise RuntimeError(f"{name}: {path} not found or not executable")
    for name, path in (binaries or {}).items():
        shutil.copy2(path, os.path.join(stage, name))
        staged.append(os.path.join(stage, name))
    for name in files:
        shutil.copy2(os.path.join(HERE, name), os.path.join(stage, os.path.basename(name)))
    return staged


class VmTestCase(unittest.TestCase):
    """Boots the VM once for the class and runs GUEST_SCRIPT in it with the
    staged BINARIES ({staged name: host path}) as arguments, then rxe-up.
    Every guest script can source guest-lib.sh."""
    GUEST_SCRIPT = None
    GUEST_FILES = ("rxe-up", "guest-lib.sh")
    BINARIES = {}
    VM_TIMEOUT = 200
    LOGS = ()  # results files printed when the run fails
    stage = None
    keep = False

    @classmethod
    def make_stage(cls):
        """Copies BINARIES, GUEST_SCRIPT and GUEST_FILES into a new staging
        directory (cls.stage, results in cls.results); returns the guest
        script's arguments: the staged binaries, then rxe-up."""
        for name, path in cls.BINARIES.items():
            if not os.access(path, os.X_OK):
                raise RuntimeError(f"{name}: {path} not found or not executable")
        cls.stage = new_stage()
        args = stage_files(cls.stage, cls.BINARIES, (cls.GUEST_SCRIPT, *cls.GUEST_FILES))
        args.append(os.path.join(cls.stage, "rxe-up"))
        cls.results = os.path.join(cls.stage, "results")
        return args

    @classmethod
    def setUpClass(cls):
        if os.environ.get("RDMA_VM_RESULTS"):
            cls.results = os.path.abspath(os.environ["RDMA_VM_RESULTS"])
            return
        args = cls.make_stage()
        cmd = [RUN_IN_VM, "--results", cls.results, "--timeout", str(cls.VM_TIMEOUT),
               "./" + cls.GUEST_SCRIPT, *args]
        start = time.monotonic()
        try:
            proc = subprocess.run(cmd, cwd=cls.stage, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=cls.VM_TIMEOUT + 60)
        except subprocess.TimeoutExpired:
            cls.keep = True
            raise RuntimeError(f"run-in-vm did not finish within {cls.VM_TIMEOUT + 60}s; "
                               f"results in {cls.results}")
        cls.vm_wall = time.monotonic() - start
        print(f"\nVM run (boot, {cls.GUEST_SCRIPT}, power-off): {cls.vm_wall:.1f}s wall",
              file=sys.stderr)
        if proc.returncode != 0:
            cls.keep = True
            report = [f"run-in-vm exited {proc.returncode}; results kept in {cls.results}",
                      "---- run-in-vm stderr (tail) ----", *proc.stderr.splitlines()[-80:]]
            for name in ("steps.log", *cls.LOGS):
                path = os.path.join(cls.results, name)
                if os.path.exists(path):
                    with open(path, errors="replace") as f:
                        report += [f"---- {name} ----", *f.read().splitlines()[-60:]]
            print("\n".join(report), file=sys.stderr)
            raise RuntimeError(f"the VM run failed (exit {proc.returncode}); see above")

    @classmethod
    def tearDownClass(cls):
        if cls.stage is None:
            return
        if cls.keep or os.environ.get("RDMA_VM_KEEP") == "1":
            print(f"\nVM results kept in {cls.results}", file=sys.stderr)
        else:
            shutil.rmtree(cls.stage, ignore_errors=True)

    def run(self, result=None):
        # Keep the evidence of a run in which any test failed.
        if result is None:
            return super().run(result)
        before = len(result.failures) + len(result.errors)
        out = super().run(result)
        if len(result.failures) + len(result.errors) > before:
            type(self).keep = True
        return out

    def path(self, name):
        return os.path.join(self.results, name)

    def text(self, name):
        with open(self.path(name), errors="replace") as f:
            return f.read()

    def json(self, name):
        return json.loads(self.text(name))

    def prom(self, name):
        return Exposition(self.text(name), name)

    def code(self, name):
        return self.text(name).strip()
