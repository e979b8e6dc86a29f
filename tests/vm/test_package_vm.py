"""The Debian package on a whole system: the Soft-RoCE VM boots the host's
systemd as PID 1 on a writable overlay (run-in-vm --systemd), and
package-guest.sh installs the package with dpkg, lets its postinst start the
service, reads what the unit's hardening makes of the running process,
scrapes and reloads it, purges the package and lists what is left.

Builds the package from the build tree with cpack first (as
integration.package does). Environment: see vmrun.py.
"""
import os
import subprocess
import sys
import unittest

from vmrun import BIN, HERE, RUN_IN_VM, Exposition, new_stage, stage_files

sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from test_package import build_package  # noqa: E402  (tests/integration)

VM_TIMEOUT = 1200
# /proc/<pid>/status of a process without capabilities.
NO_CAPS = "0000000000000000"


class PackageOnSystemdTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.environ.get("RDMA_VM_RESULTS"):
            cls.results = os.path.abspath(os.environ["RDMA_VM_RESULTS"])
            cls.stage = None
        else:
            cls.stage = new_stage()
            deb = build_package(os.path.join(cls.stage, "deb"))
            stage_files(cls.stage, files=("package-guest.sh", "guest-lib.sh", "rxe-up",
                                           "otlp_sink.py"))
            cls.results = os.path.join(cls.stage, "results")
            r = subprocess.run(
                [RUN_IN_VM, "--systemd", "--timeout", str(VM_TIMEOUT), "--results", cls.results,
                 "./package-guest.sh", deb, os.path.join(cls.stage, "rxe-up")],
                cwd=cls.stage, stdin=subprocess.DEVNULL, capture_output=True, text=True)
            cls.vm_rc, cls.vm_err = r.returncode, r.stderr
        cls.facts = {}
        with open(os.path.join(cls.results, "facts.txt")) as f:
            for line in f:
                key, _, value = line.rstrip("\n").partition(" ")
                cls.facts[key] = value

    @classmethod
    def tearDownClass(cls):
        if cls.stage and not os.environ.get("RDMA_VM_KEEP"):
            subprocess.run(["rm", "-rf", cls.stage])

    def read(self, name):
        with open(os.path.join(self.results, name)) as f:
            return f.read()

    def test_a_guest_script_completed(self):
        if self.stage:
            self.assertEqual(self.vm_rc, 0, self.vm_err)
        self.assertIn("done", self.read("steps.log"))
        self.assertEqual(self.facts["pid1"], "systemd")

    def test_install_creates_the_user_and_enables_the_unit(self):
        self.assertEqual(self.facts["user_before"], "absent")
        self.assertEqual(self.facts["user"], "rdma_exporter:/nonexistent:/usr/sbin/nologin")
        self.assertEqual(self.facts["group"], "rdma_exporter")
        self.assertEqual(self.facts["enabled"], "enabled")
        self.assertEqual(self.facts["man"], "/usr/share/man/man8/rdma_exporter.8.gz")
        self.assertEqual(self.facts["conffile"].strip(), "/etc/rdma_exporter/rdma_exporter.yml")

    def test_service_answers_with_the_rxe_device(self):
        m = Exposition(self.read("metrics.txt"), "metrics.txt")
        self.assertEqual(m.value("rdma_port_state", device="rxe0", port="1"), 4)  # ACTIVE
        failing = [l["collector"] for l, v in m.series("rdma_exporter_collector_success")
                   if v != 1]
        self.assertEqual(failing, [], "collectors failing under the unit's hardening")

    def test_process_runs_with_the_units_hardening(self):
        status = dict(line.split(":\t", 1) for line in self.read("status.txt").splitlines()
                      if ":\t" in line)
        self.assertEqual(self.facts["proc_user"], "rdma_exporter")
        self.assertEqual(self.facts["main_comm"], "rdma_exporter")
        for caps in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            self.assertEqual(status[caps].strip(), NO_CAPS, caps)
        self.assertEqual(status["NoNewPrivs"].strip(), "1")
        self.assertEqual(status["Seccomp"].strip(), "2")  # a filter (SystemCallFilter)
        self.assertEqual(self.facts["write_usr"], "denied")  # ProtectSystem=strict
        self.assertEqual(self.facts["write_etc"], "denied")
        self.assertEqual(self.facts["home_entries"], "0")  # ProtectHome=yes
        self.assertEqual(self.facts["tmp_private"], "yes")  # PrivateTmp=yes
        self.assertIn("Read-only file system", self.read("write-usr.err"))
        show = dict(line.split("=", 1) for line in self.read("show.txt").splitlines()
                    if "=" in line)
        for key, value in (("User", "rdma_exporter"), ("NoNewPrivileges", "yes"),
                           ("ProtectSystem", "strict"), ("ProtectHome", "yes"),
                           ("PrivateTmp", "yes"), ("MemoryDenyWriteExecute", "yes"),
                           ("LimitMEMLOCK", str(2 << 30)),
                           ("RestrictAddressFamilies", "AF_INET AF_INET6 AF_NETLINK AF_UNIX"),
                           ("FragmentPath", "/lib/systemd/system/rdma_exporter.service"),
                           ("Documentation", '"man:rdma_exporter(8)"')):
            self.assertEqual(show.get(key), value, key)

    def test_with_otlp_pushing_the_unit_starts_and_stays(self):
        # Type=notify: without READY=1 systemd would have killed the service
        # 15 s after the restart (the drop-in's TimeoutStartSec) and
        # restarted it (Restart=on-failure); the facts are read at 25 s.
        self.assertEqual(self.facts["otlp_active"], "active", self.read("journal-otlp.txt"))
        self.assertEqual(self.facts["otlp_restarts"], "0")
        self.assertEqual(self.facts["otlp_result"], "success")
        self.assertEqual(self.facts["otlp_same_pid"], "same")
        self.assertGreater(int(self.facts["otlp_requests"]), 0, "no push reached the receiver")
        m = Exposition(self.read("metrics-otlp.txt"), "metrics-otlp.txt")
        self.assertGreater(m.value("rdma_exporter_otlp_exports_total", result="success"), 0)

    def test_reload_keeps_the_process(self):
        self.assertEqual(self.facts["pid_after_reload"], "same")
        self.assertEqual(self.facts["healthz_after_reload"], "ok")

    def test_purge_leaves_nothing(self):
        self.assertEqual(self.facts["dpkg_knows"], "no")
        self.assertEqual(self.facts["process"], "none")
        self.assertEqual(self.facts["unit_files"], "0")
        self.assertEqual(self.facts["unit_load"], "not-found")
        self.assertEqual(self.facts["user_after"], "absent")
        self.assertEqual(self.facts["group_after"], "absent")
        for f in ("passwd", "group", "shadow", "gshadow", "subuid", "subgid"):
            self.assertEqual(self.facts[f"accounts_{f}"], "unchanged", f)
        self.assertEqual(self.read("leftovers.txt"), "")


if __name__ == "__main__":
    unittest.main()
