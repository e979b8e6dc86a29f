"""The Debian package (docs/packaging.md): CPack builds it from the build
tree, lintian finds no error and no warning, and it holds the files Debian
expects where it expects them. Installing, starting and purging it is
vm.package (tests/vm/test_package.py)."""
import gzip
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import BIN, SOURCE_DIR

BUILD = os.path.dirname(os.path.abspath(BIN))


def changelog_version():
    return subprocess.run(["dpkg-parsechangelog", "-l",
                           os.path.join(SOURCE_DIR, "config/debian/changelog"), "-SVersion"],
                          capture_output=True, text=True, check=True).stdout.strip()


def build_package(out_dir):
    """Runs cpack on the build tree; returns the .deb's path."""
    if not os.path.exists(os.path.join(BUILD, "man", "rdma_exporter.8.gz")):
        raise RuntimeError(f"no man page in {BUILD}/man: build the target man (part of all)")
    r = subprocess.run(["cpack", "--config", os.path.join(BUILD, "CPackConfig.cmake"),
                        "-B", out_dir], cwd=BUILD, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"cpack failed:\n{r.stdout}{r.stderr}")
    debs = [f for f in os.listdir(out_dir) if f.endswith(".deb")]
    if len(debs) != 1:
        raise RuntimeError(f"cpack made {debs}")
    return os.path.join(out_dir, debs[0])


def sanitizer_build():
    with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
        return any(line.strip() in ("RDMA_EXPORTER_SANITIZE:BOOL=ON", "RDMA_EXPORTER_FUZZ:BOOL=ON")
                   for line in f)


class PackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if sanitizer_build():
            raise unittest.SkipTest("packages are built from the release tree, not a sanitizer build")
        cls.tmp = tempfile.mkdtemp(prefix="rdma_deb_")
        cls.deb = build_package(cls.tmp)
        cls.root = os.path.join(cls.tmp, "root")
        subprocess.run(["dpkg-deb", "-x", cls.deb, cls.root], check=True)
        cls.control = os.path.join(cls.tmp, "control")
        subprocess.run(["dpkg-deb", "-e", cls.deb, cls.control], check=True)
        listing = subprocess.run(["dpkg-deb", "-c", cls.deb], capture_output=True, text=True,
                                 check=True).stdout
        # {path: (mode string, owner)}
        cls.entries = {}
        for line in listing.splitlines():
            fields = line.split()
            path = fields[5][1:].rstrip("/") or "/"
            cls.entries[path] = (fields[0], fields[1])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def field(self, name):
        return subprocess.run(["dpkg-deb", "-f", self.deb, name], capture_output=True,
                              text=True, check=True).stdout.strip()

    def test_name_and_file_name(self):
        version = changelog_version()
        self.assertEqual(os.path.basename(self.deb), f"rdma-exporter_{version}_amd64.deb")
        self.assertEqual(self.field("Package"), "rdma-exporter")
        self.assertEqual(self.field("Version"), version)
        self.assertEqual(self.field("Architecture"), "amd64")
        depends = self.field("Depends")
        for dep in ("systemd | systemd-standalone-sysusers | opensysusers", "libibverbs1",
                    "libmnl0", "libyaml-cpp0.7", "libprometheus-cpp-core1.0"):
            self.assertIn(dep, depends)

    def test_lintian_has_no_errors_or_warnings(self):
        r = subprocess.run(["lintian", "--fail-on", "error,warning", "--pedantic", self.deb],
                           capture_output=True, text=True, timeout=600)
        tags = [l for l in r.stdout.splitlines() if l[:2] in ("E:", "W:")]
        self.assertEqual((r.returncode, tags), (0, []), r.stdout + r.stderr)

    def test_files_where_debian_expects_them(self):
        expected = {
            "/usr/bin/rdma_exporter": "-rwxr-xr-x",
            "/lib/systemd/system/rdma_exporter.service": "-rw-r--r--",
            "/usr/lib/sysusers.d/rdma_exporter.conf": "-rw-r--r--",
            "/etc/rdma_exporter/rdma_exporter.yml": "-rw-r--r--",
            "/usr/share/man/man8/rdma_exporter.8.gz": "-rw-r--r--",
            "/usr/share/doc/rdma-exporter/copyright": "-rw-r--r--",
            "/usr/share/doc/rdma-exporter/changelog.gz": "-rw-r--r--",
            "/usr/share/doc/rdma-exporter/alerts.md": "-rw-r--r--",
            "/usr/share/doc/rdma-exporter/examples/rdma_exporter.service.d/"
            "qp-counter-management.conf": "-rw-r--r--",
            "/usr/share/doc/rdma-exporter/examples/prometheus-shard.yml": "-rw-r--r--",
            "/usr/share/doc/rdma-exporter/examples/prometheus-culprits.yml": "-rw-r--r--",
            "/usr/share/doc/rdma-exporter/examples/prometheus-culprits-across-rails.yml": "-rw-r--r--",
            "/usr/share/doc/rdma-exporter/examples/prometheus-culprits-scrape.yml": "-rw-r--r--",
            "/usr/share/doc/rdma-exporter/examples/vmagent.yml": "-rw-r--r--",
            "/usr/share/doc/rdma-exporter/examples/culprit-rules/generate.py": "-rw-r--r--",
            "/usr/share/doc/rdma-exporter/examples/culprit-rules/culprit-thresholds.yml":
            "-rw-r--r--",
            "/usr/share/doc/rdma-exporter/examples/culprit-rules/templates/"
            "rdma-culprits-rails.yml": "-rw-r--r--",
            "/usr/share/doc/rdma-exporter/examples/culprit-rules/templates/"
            "rdma-culprits-across-rails.yml": "-rw-r--r--",
            "/usr/share/doc/rdma-exporter/examples/culprit-rules/alert-thresholds.yml":
            "-rw-r--r--",
            "/usr/share/doc/rdma-exporter/examples/culprit-rules/templates/"
            "rdma-alerts.yml": "-rw-r--r--",
            "/usr/share/doc/rdma_exporter": "lrwxrwxrwx",
            "/usr/share/rdma_exporter/prometheus/rdma-alerts.yml": "-rw-r--r--",
            "/usr/share/rdma_exporter/prometheus/rdma-culprits-hosts.yml": "-rw-r--r--",
            "/usr/share/rdma_exporter/prometheus/rdma-culprits.yml": "-rw-r--r--",
            "/usr/share/rdma_exporter/prometheus/rdma-culprits-rails.yml": "-rw-r--r--",
            "/usr/share/rdma_exporter/prometheus/rdma-culprits-across-rails.yml": "-rw-r--r--",
            "/usr/share/rdma_exporter/prometheus/rdma-last-hop.yml": "-rw-r--r--",
            "/usr/share/rdma_exporter/prometheus/rdma-rollups.yml": "-rw-r--r--",
            "/usr/share/rdma_exporter/prometheus/rdma-rollups-fleet.yml": "-rw-r--r--",
            "/usr/share/rdma_exporter/alertmanager/rdma-inhibit.yml": "-rw-r--r--",
            "/usr/share/rdma_exporter/dashboards/rdma-latency.json": "-rw-r--r--",
        }
        for path, mode in expected.items():
            self.assertIn(path, self.entries)
            self.assertEqual(self.entries[path][0], mode, path)
        self.assertEqual(os.readlink(os.path.join(self.root, "usr/share/doc/rdma_exporter")),
                         "rdma-exporter")
        self.assertEqual({owner for _, owner in self.entries.values()}, {"root/root"})
        self.assertEqual([p for p in self.entries if p.startswith("/usr/local")], [])
        # The drop-in is an example: installed active it would grant CAP_NET_ADMIN.
        self.assertEqual([p for p in self.entries if p.startswith("/lib/systemd/system/")
                          and p.endswith(".d")], [])

    def test_packaged_unit_and_configuration_are_the_sources(self):
        for packaged, source in (("lib/systemd/system/rdma_exporter.service",
                                  "config/systemd/rdma_exporter.service"),
                                 ("etc/rdma_exporter/rdma_exporter.yml",
                                  "config/rdma_exporter.yml"),
                                 ("usr/lib/sysusers.d/rdma_exporter.conf",
                                  "config/systemd/rdma_exporter.sysusers.conf")):
            with open(os.path.join(self.root, packaged), "rb") as a, \
                    open(os.path.join(SOURCE_DIR, source), "rb") as b:
                self.assertEqual(a.read(), b.read(), packaged)

    def test_control_files(self):
        with open(os.path.join(self.control, "conffiles")) as f:
            self.assertEqual(f.read(), "/etc/rdma_exporter/rdma_exporter.yml\n")
        for script in ("postinst", "prerm", "postrm"):
            path = os.path.join(self.control, script)
            self.assertEqual(oct(os.stat(path).st_mode & 0o777), "0o755", script)
            r = subprocess.run(["sh", "-n", path], capture_output=True, text=True)
            self.assertEqual((r.returncode, r.stderr), (0, ""), script)
        with open(os.path.join(self.control, "postinst")) as f:
            self.assertIn("systemd-sysusers", f.read())

    def test_compressed_docs_are_gzip_9n(self):
        for rel in ("usr/share/man/man8/rdma_exporter.8.gz",
                    "usr/share/doc/rdma-exporter/changelog.gz"):
            with open(os.path.join(self.root, rel), "rb") as f:
                header = f.read(10)
            # RFC 1952: no file name (FLG bit 3), no time stamp, best compression (XFL 2).
            self.assertEqual(header[:3], b"\x1f\x8b\x08", rel)
            self.assertEqual(header[3] & 0x08, 0, rel)
            self.assertEqual(header[4:8], b"\0\0\0\0", rel)
            self.assertEqual(header[8], 2, rel)

    def test_man_page_is_the_help_of_the_packaged_binary(self):
        with gzip.open(os.path.join(self.root, "usr/share/man/man8/rdma_exporter.8.gz"),
                       "rt") as f:
            page = f.read()
        self.assertIn('.TH RDMA_EXPORTER "8"', page)
        for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "SIGNALS",
                        '"EXIT STATUS"', "FILES", '"SEE ALSO"'):
            self.assertIn(f"\n.SH {section}\n", page)
        self.assertIn("\\fB\\-\\-web.listen\\-address\\fR", page)

    def test_binary_is_stripped(self):
        r = subprocess.run(["readelf", "-S", os.path.join(self.root, "usr/bin/rdma_exporter")],
                           capture_output=True, text=True, check=True)
        self.assertNotIn(".debug_info", r.stdout)
        self.assertNotIn(".symtab", r.stdout)


if __name__ == "__main__":
    unittest.main()
