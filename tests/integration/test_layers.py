"""The layers of docs/architecture.md, checked on every #include.

Lowest first: common/ -> collectors/kernel/ and collectors/kubernetes/ (the
node's Kubernetes APIs) -> the collectors and the probe -> exporter/. A file includes only its own layer or the ones below; a
collector includes no other collector's folder; the probe includes nothing
of collectors/ but kernel access. Inside the probe, its folders are layers
too, in PROBE_LAYERS' order (docs/architecture.md, "The probe"): a file
includes only its own folder or the ones before it; the files at the
probe's top (the service) come last.
"""
import os
import re
import subprocess
import unittest

from harness import SOURCE_DIR

INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)


def layer(path):
    if path.startswith("common/"):
        return 0
    if path.startswith(("collectors/kernel/", "collectors/kubernetes/")):
        return 1
    if path.startswith("collectors/"):
        return 2
    if path.startswith("exporter/"):
        return 3
    return None


# The probe's folders, lowest first; its top-level files come after them.
PROBE_LAYERS = ["wire", "verbs", "stats", "plan", "devices", "ud", "control", "probers"]


def probe_layer(path):
    """The rank of a file under collectors/probe/, or None elsewhere."""
    parts = path.split("/")
    if parts[:2] != ["collectors", "probe"] or len(parts) < 3:
        return None
    if len(parts) == 3:
        return len(PROBE_LAYERS)
    return PROBE_LAYERS.index(parts[2]) if parts[2] in PROBE_LAYERS else None


def folder(path):
    """The collector folder of a path under collectors/, or None."""
    parts = path.split("/")
    if parts[0] != "collectors" or len(parts) < 3 or parts[1] in ("kernel", "kubernetes"):
        return None
    return parts[1]


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
                out.append((path, inc, "another collector's folder"))
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
               ("collectors/kernel/nldev/codec.cpp", '#include "exporter/config.hpp"\n'),
               ("collectors/dcb/dcb_collector.cpp", '#include "collectors/ethtool/mapping.hpp"\n'),
               ("collectors/probe/probers/rc_prober.cpp", '#include "collectors/qp_counters/options.hpp"\n'),
               ("exporter/daemon.cpp", '#include "collectors/probe/probe.hpp"\n'),
               ("collectors/probe/wire/protocol.cpp", '#include "collectors/probe/verbs/device.hpp"\n'),
               ("collectors/probe/ud/port.cpp", '#include "collectors/probe/control/channel.hpp"\n'),
               ("collectors/probe/control/responder.cpp", '#include "collectors/probe/service.hpp"\n'),
               ("collectors/probe/probers/rc_prober.cpp", '#include "collectors/probe/ud/port.hpp"\n')]
        self.assertEqual([(f, why) for f, _, why in problems(bad)],
                         [("common/log.cpp", "points up"),
                          ("collectors/kernel/nldev/codec.cpp", "points up"),
                          ("collectors/dcb/dcb_collector.cpp", "another collector's folder"),
                          ("collectors/probe/probers/rc_prober.cpp", "another collector's folder"),
                          ("collectors/probe/wire/protocol.cpp", "points up in the probe"),
                          ("collectors/probe/ud/port.cpp", "points up in the probe"),
                          ("collectors/probe/control/responder.cpp", "points up in the probe")])


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


if __name__ == "__main__":
    unittest.main()
