"""The layers of docs/architecture.md, checked on every #include, and the
unit tests' folders, which mirror the sources'.

Lowest first: common/ (the core) -> common/kernel/ (kernel access) and
common/kubernetes/ (the node's Kubernetes APIs) -> the collectors
(collectors/) and the probe (exporter/probe/) -> the daemon (the rest of
exporter/). A file includes only its own layer or the ones below; a
collector includes no other collector's folder, and the probe no
collector's. Inside the probe, its folders are layers too, in PROBE_LAYERS'
order (docs/architecture.md, "The probe"): a file includes only its own
folder or the ones before it; the files at the probe's top (the service)
come last.
"""
import os
import re
import subprocess
import unittest

from harness import SOURCE_DIR

INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)

PROBE = "exporter/probe/"


def layer(path):
    if path.startswith(("common/kernel/", "common/kubernetes/")):
        return 1
    if path.startswith("common/"):
        return 0
    if path.startswith(("collectors/", PROBE)):
        return 2
    if path.startswith("exporter/"):
        return 3
    return None


# The probe's folders, lowest first; its top-level files come after them.
PROBE_LAYERS = ["wire", "verbs", "stats", "plan", "local_ports", "ud", "control", "probers"]


def probe_layer(path):
    """The rank of a file under exporter/probe/, or None elsewhere."""
    if not path.startswith(PROBE):
        return None
    parts = path[len(PROBE):].split("/")
    if len(parts) == 1:
        return len(PROBE_LAYERS)
    return PROBE_LAYERS.index(parts[0]) if parts[0] in PROBE_LAYERS else None


def folder(path):
    """The part of the middle layer a path is in: a collector's folder
    ("collectors/<name>"), the probe, or None (the collectors' shared files
    at collectors/'s top, and every other layer)."""
    if path.startswith(PROBE):
        return "probe"
    parts = path.split("/")
    if parts[0] != "collectors" or len(parts) < 3:
        return None
    return "collectors/" + parts[1]


def problems(sources):
    """(file, include, why) for every include that breaks the layering."""
    out = []
    for path, text in sources:
        for inc in INCLUDE.findall(text):
            lf, li = layer(path), layer(inc)
            if lf is None or li is None:
                continue
            if li > lf:
                out.append((path, inc, "points up"))
                continue
            ff, fi = folder(path), folder(inc)
            if ff and fi and ff != fi:
                out.append((path, inc, "another collector's folder" if ff != "probe" and fi != "probe"
                            else "between the probe and a collector"))
                continue
            pf, pi = probe_layer(path), probe_layer(inc)
            if pf is not None and pi is not None and pi > pf:
                out.append((path, inc, "points up in the probe"))
    return out


def tree_sources():
    for top in ("common", "collectors", "exporter"):
        for root, _, files in os.walk(os.path.join(SOURCE_DIR, top)):
            for name in files:
                if name.endswith((".cpp", ".hpp")):
                    full = os.path.join(root, name)
                    with open(full, encoding="utf-8") as f:
                        yield os.path.relpath(full, SOURCE_DIR), f.read()


class LayersTest(unittest.TestCase):
    def test_no_include_points_up_or_across(self):
        found = problems(tree_sources())
        self.assertEqual(found, [], "\n".join(f"{f}: {i} ({why})" for f, i, why in found))

    def test_the_check_sees_a_violation(self):
        bad = [("common/log.cpp", '#include "collectors/scrape.hpp"\n'),
               ("common/log.cpp", '#include "common/kernel/nldev/codec.hpp"\n'),
               ("common/kernel/nldev/codec.cpp", '#include "exporter/config.hpp"\n'),
               ("common/kubernetes/node_api.cpp", '#include "collectors/pods/pods_collector.hpp"\n'),
               ("collectors/dcb/dcb_collector.cpp", '#include "collectors/ethtool/mapping.hpp"\n'),
               ("collectors/dcb/dcb_collector.cpp", '#include "exporter/collection.hpp"\n'),
               ("exporter/probe/probers/rc_prober.cpp", '#include "collectors/qp_counters/options.hpp"\n'),
               ("collectors/pods/pods_collector.cpp", '#include "exporter/probe/probe.hpp"\n'),
               ("exporter/probe/service.cpp", '#include "exporter/config.hpp"\n'),
               ("exporter/daemon.cpp", '#include "exporter/probe/probe.hpp"\n'),
               ("collectors/pods/pods_collector.cpp", '#include "common/kubernetes/pod_directory.hpp"\n'),
               ("exporter/probe/wire/protocol.cpp", '#include "exporter/probe/verbs/device.hpp"\n'),
               ("exporter/probe/ud/port.cpp", '#include "exporter/probe/control/channel.hpp"\n'),
               ("exporter/probe/control/responder.cpp", '#include "exporter/probe/service.hpp"\n'),
               ("exporter/probe/probers/rc_prober.cpp", '#include "exporter/probe/ud/port.hpp"\n')]
        self.assertEqual([(f, why) for f, _, why in problems(bad)],
                         [("common/log.cpp", "points up"),
                          ("common/log.cpp", "points up"),
                          ("common/kernel/nldev/codec.cpp", "points up"),
                          ("common/kubernetes/node_api.cpp", "points up"),
                          ("collectors/dcb/dcb_collector.cpp", "another collector's folder"),
                          ("collectors/dcb/dcb_collector.cpp", "points up"),
                          ("exporter/probe/probers/rc_prober.cpp",
                           "between the probe and a collector"),
                          ("collectors/pods/pods_collector.cpp",
                           "between the probe and a collector"),
                          ("exporter/probe/service.cpp", "points up"),
                          ("exporter/probe/wire/protocol.cpp", "points up in the probe"),
                          ("exporter/probe/ud/port.cpp", "points up in the probe"),
                          ("exporter/probe/control/responder.cpp", "points up in the probe")])


class TestNamesTest(unittest.TestCase):
    def test_every_unit_test_name_is_stable_from_run_to_run(self):
        """A test is selected by its name: a parameterized test named (or
        printed) by its parameter's bytes, pointers and padding among them,
        would have another name in the next run."""
        binary = os.environ.get("RDMA_UNIT_TESTS_BIN",
                                os.path.join(SOURCE_DIR, "build", "tests", "unit_tests"))
        runs = [subprocess.run([binary, "--gtest_list_tests"], capture_output=True, text=True,
                               check=True, timeout=120).stdout for _ in range(2)]
        self.assertEqual(runs[0], runs[1])
        self.assertNotRegex(runs[0], r"-byte object <")
        self.assertGreater(runs[0].count("\n"), 500)


UNIT = "tests/unit"
# Test code's own sources (the fake kernel) are mirrored under their folder's
# name: tests/unit/fake_kernel/ holds the tests of tests/fake_kernel/.
TEST_SOURCES = {"fake_kernel": "tests/fake_kernel"}


def mirror_problems(unit_files, source_files):
    """(test file, why) for every file of tests/unit/ that does not sit
    where the source it tests sits: tests/unit/<folder>/<stem>[_<aspect>]_test.cpp
    for a source <folder>/<stem>.{cpp,hpp}; a helper (.hpp) in a folder that
    holds tests."""
    stems = {}
    for path in source_files:
        folder_, name = os.path.split(path)
        stems.setdefault(folder_, set()).add(os.path.splitext(name)[0])
    out = []
    for path in unit_files:
        folder_, name = os.path.split(path)
        top = folder_.split("/")[0] if folder_ else ""
        source_folder = (TEST_SOURCES[top] + folder_[len(top):]) if top in TEST_SOURCES else folder_
        if source_folder not in stems:
            out.append((path, "no source folder " + (source_folder or ".")))
            continue
        if not name.endswith("_test.cpp"):
            if not name.endswith(".hpp"):
                out.append((path, "neither a test nor a helper"))
            continue
        stem = name[:-len("_test.cpp")]
        if not any(stem == s or stem.startswith(s + "_") for s in stems[source_folder]):
            out.append((path, "no source " + stem + " in " + source_folder))
    return out


def git_files(*patterns):
    listed = subprocess.run(["git", "ls-files", *patterns], cwd=SOURCE_DIR, capture_output=True,
                            text=True, check=True).stdout.split()
    return [f for f in listed if os.path.exists(os.path.join(SOURCE_DIR, f))]


class UnitTestsMirrorSourcesTest(unittest.TestCase):
    def unit_files(self):
        return [os.path.relpath(f, UNIT) for f in git_files(UNIT)]

    def test_every_unit_test_sits_where_its_source_sits(self):
        sources = git_files("common", "collectors", "exporter", *TEST_SOURCES.values())
        sources = [f for f in sources if f.endswith((".cpp", ".hpp"))]
        found = mirror_problems(self.unit_files(), sources)
        self.assertEqual(found, [], "\n".join(f"tests/unit/{f}: {why}" for f, why in found))

    def test_every_unit_test_is_built(self):
        with open(os.path.join(SOURCE_DIR, "tests", "CMakeLists.txt"), encoding="utf-8") as f:
            listed = set(re.findall(r"\bunit/(\S+_test\.cpp)", f.read()))
        tests = {f for f in self.unit_files() if f.endswith("_test.cpp")}
        self.assertEqual(sorted(tests - listed), [])
        self.assertEqual(sorted(listed - tests), [])

    def test_the_check_sees_a_misplaced_test(self):
        sources = ["common/backoff.cpp", "exporter/http/server.cpp", "tests/fake_kernel/fake_nldev.cpp"]
        unit = ["common/backoff_test.cpp", "common/backoff_jitter_test.cpp",
                "exporter/http/server_harness.hpp", "fake_kernel/fake_nldev_test.cpp",
                "backoff_test.cpp", "common/backoffs_test.cpp", "exporter/server_test.cpp",
                "exporter/http/notes.txt"]
        self.assertEqual(mirror_problems(unit, sources),
                         [("backoff_test.cpp", "no source folder ."),
                          ("common/backoffs_test.cpp", "no source backoffs in common"),
                          ("exporter/server_test.cpp", "no source folder exporter"),
                          ("exporter/http/notes.txt", "neither a test nor a helper")])


if __name__ == "__main__":
    unittest.main()
