"""Deployment files: the systemd unit and drop-in pass systemd-analyze verify,
and cmake --install puts everything where a Debian package would."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import BIN, SOURCE_DIR

UNIT = os.path.join(SOURCE_DIR, "config/systemd/rdma_exporter.service")
DROPIN = os.path.join(SOURCE_DIR, "config/systemd/rdma_exporter.service.d/qp-counter-management.conf")


class DeployTest(unittest.TestCase):
    def verify(self, unit_text, dropin_text=None):
        d = tempfile.mkdtemp(prefix="rdma_unit_")
        # verify checks that ExecStart exists: point it at the built binary.
        path = os.path.join(d, "rdma_exporter.service")
        with open(path, "w") as f:
            f.write(unit_text.replace("/usr/bin/rdma_exporter", os.path.abspath(BIN)))
        if dropin_text is not None:
            os.makedirs(path + ".d")
            with open(os.path.join(path + ".d", "qp.conf"), "w") as f:
                f.write(dropin_text)
        env = dict(os.environ, SYSTEMD_UNIT_PATH=d + ":")
        return subprocess.run(["systemd-analyze", "verify", "--man=no", path],
                              capture_output=True, text=True, timeout=60, env=env)

    def test_unit_verifies(self):
        with open(UNIT) as f:
            unit = f.read()
        r = self.verify(unit)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("rdma_exporter.service:", r.stderr)  # no warning about our unit
        for hardening in ("NoNewPrivileges=yes", "ProtectSystem=strict", "PrivateTmp=yes",
                          "RestrictAddressFamilies=AF_NETLINK AF_INET AF_INET6 AF_UNIX",
                          "CapabilityBoundingSet=\n", "User=rdma_exporter"):
            self.assertIn(hardening, unit)
        settings = [l for l in unit.split("[Service]")[1].splitlines() if l and not l.startswith("#")]
        self.assertFalse([l for l in settings if "CAP_" in l], "the unit itself grants nothing")

    def test_dropin_adds_only_cap_net_admin(self):
        with open(UNIT) as f, open(DROPIN) as g:
            unit, dropin = f.read(), g.read()
        r = self.verify(unit, dropin)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        settings = [l for l in dropin.splitlines() if l and not l.startswith("#") and "=" in l]
        self.assertEqual(sorted(settings), ["AmbientCapabilities=CAP_NET_ADMIN",
                                            "CapabilityBoundingSet=CAP_NET_ADMIN"])

    def test_man_page_documents_every_flag_of_help(self):
        # The build generates the page from --help (docs/man/build-man).
        page = os.path.join(os.path.dirname(os.path.abspath(BIN)), "man", "rdma_exporter.8")
        help_text = subprocess.run([BIN, "--help"], capture_output=True, text=True).stdout
        # Each option's line starts with it ("  -h [ --help ]", "  --once").
        flags = set(re.findall(r"^\s+(?:-\w \[ )?(--[a-z][a-z._-]*[a-z])", help_text, re.M))
        self.assertGreater(len(flags), 8)
        with open(page) as f:
            man = f.read()
        # Each flag of --help is a bold option heading (.TP) of its own, its
        # description on the next line.
        headings = set(re.findall(r"^\.TP\n\\fB(\\-\\-[a-z][a-z._\\-]*[a-z])\\fR( arg)?\n",
                                  man, re.M))
        headings = {h for h, _ in headings}
        self.assertEqual(flags - {"--help"}, {h.replace("\\-", "-") for h in headings})
        self.assertIn("\\fB\\-h\\fR [ \\fB\\-\\-help\\fR ]", man)
        # The page renders without a single groff warning.
        r = subprocess.run(["groff", "-man", "-ww", "-z", page],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual((r.returncode, r.stderr.strip()), (0, ""))

    def test_cmake_install_layout(self):
        build = os.path.dirname(os.path.abspath(BIN))
        dest = tempfile.mkdtemp(prefix="rdma_install_")
        r = subprocess.run(["cmake", "--install", build, "--prefix", "/usr"],
                           env=dict(os.environ, DESTDIR=dest), capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for rel in ("usr/bin/rdma_exporter", "lib/systemd/system/rdma_exporter.service",
                    "lib/systemd/system/rdma_exporter.socket",
                    "usr/share/doc/rdma-exporter/examples/rdma_exporter.service.d/"
                    "socket-activation.conf",
                    "usr/lib/sysusers.d/rdma_exporter.conf",
                    "usr/share/doc/rdma-exporter/metrics.md",
                    "usr/share/man/man8/rdma_exporter.8.gz",
                    # runbook_url of every alert points at this file (through
                    # the link usr/share/doc/rdma_exporter -> rdma-exporter)
                    "usr/share/doc/rdma_exporter/alerts.md",
                    "usr/share/doc/rdma-exporter/examples/prometheus.yml",
                    "usr/share/doc/rdma-exporter/examples/rdma_exporter-dashboards.yml",
                    "etc/rdma_exporter/rdma_exporter.yml",
                    "usr/share/rdma_exporter/prometheus/rdma-alerts.yml",
                    "usr/share/rdma_exporter/prometheus/rdma-culprits-hosts.yml",
                    "usr/share/rdma_exporter/prometheus/rdma-culprits.yml",
                    "usr/share/rdma_exporter/prometheus/rdma-culprits-rails.yml",
                    "usr/share/rdma_exporter/prometheus/rdma-culprits-across-rails.yml",
                    "usr/share/rdma_exporter/prometheus/rdma-last-hop.yml",
                    "usr/share/rdma_exporter/dashboards/rdma-fleet.json",
                    "usr/share/rdma_exporter/dashboards/rdma-latency.json"):
            self.assertTrue(os.path.exists(os.path.join(dest, rel)), rel)
        dashboards = os.listdir(os.path.join(dest, "usr/share/rdma_exporter/dashboards"))
        self.assertEqual(sorted(dashboards),
                         sorted(f for f in os.listdir(os.path.join(SOURCE_DIR, "dashboards"))
                                if f.endswith(".json")))
        etc = [os.path.join(root, f) for root, _, files in os.walk(dest) for f in files
               if f == "rdma_exporter.yml"]
        self.assertEqual(len(etc), 1, etc)
        installed = os.path.join(dest, "usr/bin/rdma_exporter")
        r = subprocess.run([installed, "--config.check", etc[0]], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        shutil.rmtree(dest)


if __name__ == "__main__":
    unittest.main()
