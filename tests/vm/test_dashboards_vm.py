"""The dashboards on a real kernel: Prometheus on the host scrapes two
rdma_exporter instances running on Soft-RoCE (rdma_rxe) inside the test-bed
VM, through run-in-vm's port forwarding, while they probe each other with the
verbs latency probe (dashboards-guest.sh); then every query of every dashboard
is evaluated (tests/integration/dashboard_queries.py).

Soft-RoCE has no IB PMA counters, none of mlx5's congestion counters and no
per-QP counter sets, so the test works per panel: a panel passes when one of
its queries has data, and the panels that only show what rxe lacks are in
SOFT_ROCE_LACKS (printed when used), as are those of what the bed never does
(QUIET_BED). Errors fail the test whatever the data.

Environment: see vmrun.py (RDMA_VM_RESULTS does not apply: the VM must run
while Prometheus scrapes it).
"""
import os
import subprocess
import sys
import time
import unittest

from vmrun import BIN, HERE, RUN_IN_VM, VmTestCase

sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from dashboard_queries import Evaluation, prometheus_config, wait_for_data  # noqa: E402
from harness import Prometheus, free_port  # noqa: E402

READY_TIMEOUT = 150

PMA = "IB PMA counters (sysfs counters/), which Soft-RoCE does not have"
MLX5 = "mlx5's congestion and receive counters (np_*, rp_*, out_of_buffer, ...)"
QP_SETS = "per-QP counter sets, which mlx5 and ionic fill and Soft-RoCE never binds"
VETH = ("per-priority NIC statistics and DCB (the Soft-RoCE port's netdev is a veth: no "
        "priority counters, no DCB)")
NO_PCI = "a PCI function (a Soft-RoCE device has no parent device in sysfs)"
NO_MODULE = ("a pluggable module (a veth has none: the kernel answers EOPNOTSUPP to "
             "MODULE_EEPROM_GET and to the legacy ioctl)")
FEC = "FEC, which a veth's driver does not have"
SOFT_ROCE_LACKS = {
    ("rdma-overview.json", "Traffic sent"): PMA,
    ("rdma-group.json", "Traffic per leaf"): PMA,
    ("rdma-group.json", "Hosts by traffic"): PMA,
    ("rdma-group.json", "Leaves by time paused"): VETH,
    ("rdma-group.json", "Time paused per priority"): VETH,
    ("rdma-group.json", "Hosts by time paused"): VETH,
    ("rdma-overview.json", "Traffic per rail"): PMA,
    ("rdma-overview.json", "Leaves by time paused"): VETH,
    ("rdma-overview.json", "Time paused per rail"): VETH,
    ("rdma-overview.json", "Time paused per priority"): VETH,
    ("rdma-fleet.json", "Throughput"): PMA,
    ("rdma-fleet.json", "Link utilization"): PMA,
    ("rdma-fleet.json", "Top talkers"): PMA,
    ("rdma-fleet.json", "Physical and link errors"): PMA,
    ("rdma-fleet.json", "Drops and discards"): PMA + "; " + MLX5,
    ("rdma-port.json", "LID"): "an InfiniBand port (Soft-RoCE is RoCE: no LID)",
    ("rdma-port.json", "Throughput"): PMA,
    ("rdma-port.json", "PMA error counters (per second)"): PMA,
    ("rdma-port.json", "Transmit wait (per second)"): PMA,
    ("rdma-port.json", "PMA counters"): PMA,
    ("rdma-port.json", "PCIe link"): NO_PCI,
    ("rdma-port.json", "PCIe errors"): NO_PCI,
    ("rdma-port.json", "FEC blocks"): FEC,
    ("rdma-port.json", "Link down reason"):
        "a driver's reason for a down link (the veth is up, and its driver gives none)",
    ("rdma-congestion.json", "CNPs sent (notification point)"): MLX5,
    ("rdma-congestion.json", "CNPs handled (reaction point)"): MLX5,
    ("rdma-congestion.json", "ECN-marked packets received"): MLX5,
    ("rdma-congestion.json", "Top ports by CNPs sent"): MLX5,
    ("rdma-congestion.json", "Local ACK timeouts"): MLX5,
    ("rdma-congestion.json", "Receive buffer drops"): MLX5,
    ("rdma-congestion.json", "ICRC errors"): MLX5,
    ("rdma-congestion.json", "PFC pause frames per priority"): VETH,
    ("rdma-congestion.json", "Time paused per priority"): VETH,
    ("rdma-congestion.json", "Traffic per priority"): VETH,
    ("rdma-congestion.json", "Discards and ECN marks per priority"): VETH,
    ("rdma-congestion.json", "QoS configuration (DCB)"): VETH,
    ("rdma-congestion.json", "Transmit wait"): PMA,
    ("rdma-congestion.json", "Transmit discards"): PMA,
    ("rdma-workloads.json", "RDMA writes received by process"): QP_SETS,
    ("rdma-workloads.json", "RDMA reads received by process"): QP_SETS,
    ("rdma-workloads.json", "Atomic operations received by process"): QP_SETS,
    ("rdma-workloads.json", "Top processes by requests received"): QP_SETS,
    ("rdma-workloads.json", "Requests received by QP type"): QP_SETS,
    ("rdma-workloads.json", "Requests received by container (cgroup)"): QP_SETS,
    ("rdma-workloads.json", "Share of the port's requests in counter sets"): QP_SETS,
    ("rdma-workloads.json", "Transport errors by process"): QP_SETS,
    ("rdma-workloads.json", "Errors by process and QP type"): QP_SETS,
    ("rdma-optics.json", "Last-hop evidence"):
        "last-hop evidence: the veth has no module, FEC or PCI function, and its link stays up",
    ("rdma-optics.json", "Modules"): NO_MODULE,
    ("rdma-optics.json", "Weakest receive margins"): NO_MODULE,
    ("rdma-optics.json", "Raised flags"): NO_MODULE,
    ("rdma-optics.json", "Receive power per lane"): NO_MODULE,
    ("rdma-optics.json", "Transmit power per lane"): NO_MODULE,
    ("rdma-optics.json", "Laser bias per lane"): NO_MODULE,
    ("rdma-optics.json", "Module temperature"): NO_MODULE,
    ("rdma-optics.json", "FEC corrected blocks (per second)"): FEC,
    ("rdma-optics.json", "FEC uncorrectable blocks (per second)"): FEC,
    ("rdma-optics.json", "Links down and why"):
        "a link that is down (the veth's stays up)",
    ("rdma-optics.json", "PCIe links"): NO_PCI,
    ("rdma-optics.json", "PCIe error messages"): NO_PCI,
    ("rdma-latency.json", "Prober delay"):
        "completion timestamps, which rxe's completions do not carry (the prober's delay is "
        "host round trip less device round trip)",
}
# Panels of what the bed's two exporters, admitted to each other, never do.
QUIET_BED = {
    ("rdma-latency.json", "UD datagrams dropped by reason"):
        "UD datagrams dropped: every UD prober of the bed is admitted and answered",
    ("rdma-fabric.json", "*"):
        "culprits, their evidence and failing pairs: the bed's exporters lose no probe "
        "(vm.bed_ud evaluates the board with a culprit)",
    ("rdma-overview.json", "Culprits and what sits behind them"):
        "culprits: the bed's exporters lose no probe (integration.dashboards evaluates the "
        "board with culprits)",
    ("rdma-overview.json", "Pods behind culprits"):
        "culprits and pods: the bed loses no probe and runs no Kubernetes node API",
    ("rdma-overview.json", "Hosts by link errors"): "link errors: the veth has none",
    ("rdma-overview.json", "Groups by discards"): "discards: the bed drops nothing",
    ("rdma-group.json", "Culprits in the group"):
        "culprits: the bed's exporters lose no probe (integration.dashboards evaluates the "
        "board with culprits)",
    ("rdma-group.json", "Hosts by link errors"): "link errors: the veth has none",
    ("rdma-group.json", "Hosts by retransmissions"): "retransmissions: the bed loses nothing",
    ("rdma-group.json", "Hosts by discards"): "discards: the bed drops nothing",
    ("rdma-pods.json", "*"):
        "pods: the bed runs no Kubernetes node API (vm.kubernetes shows the pod labels on "
        "Soft-RoCE; integration.dashboards evaluates the board with pods)",
}


class DashboardsOnSoftRoceTest(VmTestCase):
    GUEST_SCRIPT = "dashboards-guest.sh"
    BINARIES = {"rdma_exporter": BIN}
    VM_TIMEOUT = 300
    LOGS = ("a.log", "b.log")

    @classmethod
    def setUpClass(cls):
        cls.vm = cls.prometheus = cls.vm_log = None
        ports = [free_port(), free_port()]
        while ports[1] == ports[0]:
            ports[1] = free_port()
        args = cls.make_stage() + [str(p) for p in ports]
        started = time.monotonic()
        try:
            os.makedirs(cls.results)
            cls.vm_log = open(os.path.join(cls.stage, "run-in-vm.log"), "w")
            forward = [arg for p in ports for arg in ("--hostfwd", str(p))]
            cls.vm = subprocess.Popen(
                [RUN_IN_VM, "--results", cls.results, "--timeout", str(cls.VM_TIMEOUT),
                 *forward, "./" + cls.GUEST_SCRIPT, *args],
                cwd=cls.stage, stdin=subprocess.DEVNULL, stdout=cls.vm_log,
                stderr=subprocess.STDOUT)
            deadline = time.monotonic() + READY_TIMEOUT
            while not os.path.exists(os.path.join(cls.results, "ready")):
                if cls.vm.poll() is not None:
                    raise RuntimeError(f"the VM stopped (exit {cls.vm.returncode}) before the "
                                       f"exporters were up:\n{cls.guest_logs()}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the exporters in the VM were not up within "
                                       f"{READY_TIMEOUT}s:\n{cls.guest_logs()}")
                time.sleep(0.5)
            cls.prometheus = Prometheus(*prometheus_config([f"127.0.0.1:{p}" for p in ports]))
            wait_for_data(cls.prometheus, 2, timeout=120)
            cls.setup_seconds = time.monotonic() - started
            cls.evaluation = Evaluation(cls.prometheus)
            cls.rules = cls.prometheus.get("/api/v1/rules")
        except BaseException:
            cls.keep = True
            cls.stop_vm()
            cls.tearDownStage()
            raise

    @classmethod
    def guest_logs(cls):
        out = []
        for name in ("steps.log", *cls.LOGS, "console.log"):
            path = os.path.join(cls.results, name)
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    out += [f"---- {name} (tail) ----", *f.read().splitlines()[-40:]]
        cls.vm_log.flush()
        with open(cls.vm_log.name, errors="replace") as f:
            out += ["---- run-in-vm ----", *f.read().splitlines()[-20:]]
        return "\n".join(out)

    @classmethod
    def stop_vm(cls):
        """Tells the guest to stop; returns the VM's exit code."""
        if cls.prometheus is not None:
            cls.prometheus.stop()
            cls.prometheus = None
        if cls.vm is None:
            return None
        with open(os.path.join(cls.results, "stop"), "w"):
            pass
        try:
            code = cls.vm.wait(cls.VM_TIMEOUT)
        except subprocess.TimeoutExpired:
            cls.vm.terminate()
            code = cls.vm.wait()
        cls.vm = None
        if code != 0:
            cls.keep = True
            print(f"\nthe VM run failed (exit {code}):\n{cls.guest_logs()}", file=sys.stderr)
        cls.vm_log.close()
        return code

    @classmethod
    def tearDownStage(cls):
        super().tearDownClass()

    @classmethod
    def tearDownClass(cls):
        code = cls.stop_vm()
        cls.tearDownStage()
        assert code in (0, None), f"the guest script failed (exit {code})"

    def test_every_panel_shows_soft_roce_data(self):
        failures, summary = self.evaluation.verdict(
            {"SOFT_ROCE_LACKS": SOFT_ROCE_LACKS, "QUIET_BED": QUIET_BED},
            f"two exporters probing each other on Soft-RoCE in the VM, set up in "
            f"{self.setup_seconds:.1f}s", per_panel=True)
        print(summary, file=sys.stderr)
        self.assertEqual(failures, [], "\n".join(failures))

    def test_alerting_rules_evaluate_without_errors(self):
        rules = [rule for g in self.rules["data"]["groups"] for rule in g["rules"]]
        self.assertTrue(rules)
        bad = [f"{rule['name']}: {rule.get('lastError')}" for rule in rules
               if rule["health"] not in ("ok", "unknown")]
        self.assertEqual(bad, [])


if __name__ == "__main__":
    unittest.main()
