"""Shared by the host-side VM tests (test_softroce.py, test_dashboards_vm.py).

The guest sees the host's root file system read-only but mounts fresh file
systems on /tmp and /run, so a checkout or build tree below /tmp would be
invisible to it: what the guest runs is copied to a staging directory under
/var/tmp first. A run in which a test failed keeps its staging directory
(with the results) as evidence.
"""
import glob
import os
import shutil
import sys
import tempfile
import time
import unittest

STAGE_ROOT = os.environ.get("RDMA_VM_STAGE_ROOT", "/var/tmp/rdma-exporter-vm")
# Staging directories left behind by failed runs are removed after this age.
STALE_STAGE_SECS = 24 * 3600


def remove_stale_stages():
    now = time.time()
    for path in glob.glob(os.path.join(STAGE_ROOT, "stage-*")):
        try:
            if now - os.path.getmtime(path) > STALE_STAGE_SECS:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass


def make_stage(name, files):
    """A new staging directory under STAGE_ROOT holding FILES ({name in the
    stage: source path})."""
    os.makedirs(STAGE_ROOT, exist_ok=True)
    remove_stale_stages()
    stage = tempfile.mkdtemp(prefix=f"stage-{name}{os.getpid()}-", dir=STAGE_ROOT)
    os.chmod(stage, 0o755)
    for target, source in files.items():
        shutil.copy2(source, os.path.join(stage, target))
    return stage


class KeepsEvidence(unittest.TestCase):
    """A test class whose staging directory survives any failed test (and
    RDMA_VM_KEEP=1)."""

    stage = None
    results = None
    keep = False

    def run(self, result=None):
        if result is None:
            return super().run(result)
        before = len(result.failures) + len(result.errors)
        out = super().run(result)
        if len(result.failures) + len(result.errors) > before:
            type(self).keep = True
        return out

    @classmethod
    def finish_stage(cls):
        if cls.stage is None:
            return
        if cls.keep or os.environ.get("RDMA_VM_KEEP") == "1":
            print(f"\nVM results kept in {cls.results}", file=sys.stderr)
        else:
            shutil.rmtree(cls.stage, ignore_errors=True)
