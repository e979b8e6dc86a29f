"""The culprit and last-hop alerts' inhibition rules
(config/alertmanager/rdma-inhibit.yml) in Debian's Alertmanager: amtool
accepts them, and with culprit and last-hop alerts firing, exactly the pair,
port and device alerts each one explains are muted.
The alerts are posted with the labels the rules give them
(tests/alerts/ checks those labels)."""
import datetime
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.request

import yaml

from harness import SOURCE_DIR

INHIBIT = os.path.join(SOURCE_DIR, "config/alertmanager/rdma-inhibit.yml")
ALERTMANAGER = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pair(alertname, prober, prober_group, target, target_group, device="mlx5_0", rail="r0"):
    """A UD pair alert as rdma-alerts.yml labels it."""
    return {"alertname": alertname, "severity": "critical", "job": "rdma_exporter",
            "instance": prober + ":10910", "group": prober_group, "target": target + ":10911",
            "rack": target_group, "device": device, "port": "1", "remote_device": device,
            "remote_port": "1", "rail": rail}


# Culprits as rdma-culprits.yml's alerts label them.
RNIC = {"alertname": "RdmaFabricRnicCulprit", "severity": "critical", "kind": "rnic",
        "host": "b2:10911", "device": "mlx5_0", "group": "B", "rail": "r0",
        "target": "b2:10911", "remote_device": "mlx5_0", "job": "rdma_exporter",
        "instance": "b2:10910"}
HOST = {"alertname": "RdmaFabricHostCulprit", "severity": "critical", "kind": "host",
        "host": "c1:10911", "group": "C", "target": "c1:10911", "job": "rdma_exporter",
        "instance": "c1:10910"}
LEAF = {"alertname": "RdmaFabricLeafCulprit", "severity": "critical", "kind": "leaf",
        "group": "D", "rail": "r1", "rack": "D"}
PATH = {"alertname": "RdmaFabricPathCulprit", "severity": "critical", "kind": "path",
        "group": "E", "to_group": "F", "rail": "r2", "rack": "F"}

# Last-hop suspects as rdma-last-hop.yml's alerts label them.
OPTIC = {"alertname": "RdmaLastHopOptic", "severity": "warning", "job": "rdma_exporter",
         "instance": "h1:10910", "device": "mlx5_0", "port": "1", "suspect": "optic",
         "evidence": "rx_power_low"}
NIC = {"alertname": "RdmaLastHopRnic", "severity": "warning", "job": "rdma_exporter",
       "instance": "h1:10910", "device": "mlx5_1", "suspect": "rnic",
       "evidence": "pcie_uncorrectable"}
SWITCH = {"alertname": "RdmaLastHopSwitch", "severity": "warning", "job": "rdma_exporter",
          "instance": "h1:10910", "device": "mlx5_2", "port": "1", "suspect": "switch",
          "evidence": "link_down_clean_optic"}


def port_alert(alertname, device, port="1", instance="h1:10910", **more):
    """A port or device alert as rdma-alerts.yml labels it."""
    return {"alertname": alertname, "severity": "warning", "job": "rdma_exporter",
            "instance": instance, "device": device, "port": port, **more}


# (alert, muted by): each explained alert and the culprit that mutes it, and
# near misses that stay active (None).
CASES = [
    # The RNIC b2/mlx5_0: pairs that probe it, and pairs it probes.
    (pair("RdmaProbeUdPairDown", "a1", "A", "b2", "B"), RNIC),
    (pair("RdmaProbeUdLoss", "a2", "A", "b2", "B"), RNIC),
    (pair("RdmaProbeUdPairDown", "b2", "B", "a1", "A"), RNIC),
    (pair("RdmaProbeUdPairDown", "a1", "A", "b1", "B"), None),  # another RNIC of B
    (pair("RdmaProbeUdPairDown", "a1", "A", "b2", "B", device="mlx5_1", rail="r1"), None),
    # The host c1: alerts about it as a target, and of its own exporter.
    ({"alertname": "RdmaProbeTargetDown", "severity": "warning", "job": "rdma_exporter",
      "instance": "a1:10910", "target": "c1:10911"}, HOST),
    (pair("RdmaProbeUdPairDown", "a1", "A", "c1", "C", device="mlx5_3", rail="r3"), HOST),
    ({"alertname": "RdmaProbePortDown", "severity": "warning", "job": "rdma_exporter",
      "instance": "c1:10910", "device": "mlx5_2", "port": "1"}, HOST),
    ({"alertname": "RdmaProbeHostNotListed", "severity": "warning", "job": "rdma_exporter",
      "instance": "a1:10910"}, None),  # no target, another exporter
    # The leaf of D on r1: pairs towards D and from D on r1, not on r0.
    (pair("RdmaProbeUdPairDown", "a1", "A", "d1", "D", device="mlx5_1", rail="r1"), LEAF),
    (pair("RdmaProbeUdLoss", "d2", "D", "a1", "A", device="mlx5_1", rail="r1"), LEAF),
    (pair("RdmaProbeUdPairDown", "a1", "A", "d1", "D"), None),
    # The path E -> F on r2: pairs from E to F on r2, not from E to G.
    (pair("RdmaProbeUdPairDown", "e1", "E", "f1", "F", device="mlx5_2", rail="r2"), PATH),
    (pair("RdmaProbeUdPairDown", "e1", "E", "g1", "G", device="mlx5_2", rail="r2"), None),
    # The optic of h1's mlx5_0 port 1: its FEC and symbol errors, not its
    # other port's, nor its PCIe errors.
    (port_alert("RdmaFecUncorrectable", "mlx5_0"), OPTIC),
    (port_alert("RdmaSymbolErrors", "mlx5_0"), OPTIC),
    (port_alert("RdmaFecUncorrectable", "mlx5_0", port="2"), None),
    (port_alert("RdmaFecUncorrectable", "mlx5_0", instance="h2:10910"), None),
    ({"alertname": "RdmaPcieUncorrectableErrors", "severity": "critical", "job": "rdma_exporter",
      "instance": "h1:10910", "device": "mlx5_0", "pci_address": "0000:3b:00.0",
      "aer_severity": "fatal"}, None),
    # The RNIC mlx5_1 of h1: its PCIe alerts, not its port's FEC.
    ({"alertname": "RdmaPcieLinkDegraded", "severity": "warning", "job": "rdma_exporter",
      "instance": "h1:10910", "device": "mlx5_1", "pci_address": "0000:86:00.0",
      "below": "width"}, NIC),
    ({"alertname": "RdmaPcieCorrectableErrors", "severity": "warning", "job": "rdma_exporter",
      "instance": "h1:10910", "device": "mlx5_1", "pci_address": "0000:86:00.0",
      "aer_severity": "correctable"}, NIC),
    (port_alert("RdmaFecUncorrectable", "mlx5_1"), None),
    # The switch side of h1's mlx5_2 port 1: its flaps and pauses.
    ({**port_alert("RdmaPortFlapping", "mlx5_2"), "severity": "critical"}, SWITCH),
    (port_alert("RdmaPfcPauseStorm", "mlx5_2", netdev="ens3f0", priority="3"), SWITCH),
    ({**port_alert("RdmaPortFlapping", "mlx5_3"), "severity": "critical"}, None),
]


class InhibitionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if ALERTMANAGER is None:
            raise RuntimeError("prometheus-alertmanager not found (scripts/setup installs it)")
        cls.dir = tempfile.mkdtemp(prefix="rdma_inhibit_")
        with open(INHIBIT, encoding="utf-8") as f:
            config = {"route": {"receiver": "null"}, "receivers": [{"name": "null"}],
                      **yaml.safe_load(f)}
        cls.config = os.path.join(cls.dir, "alertmanager.yml")
        with open(cls.config, "w", encoding="utf-8") as f:
            yaml.safe_dump(config, f)
        cls.port = free_port()
        cls.url = f"http://127.0.0.1:{cls.port}"
        cls.log = open(os.path.join(cls.dir, "alertmanager.log"), "w")
        cls.proc = subprocess.Popen(
            [ALERTMANAGER, "--config.file=" + cls.config,
             "--storage.path=" + os.path.join(cls.dir, "data"),
             f"--web.listen-address=127.0.0.1:{cls.port}", "--cluster.listen-address="],
            stdout=cls.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(cls.url + "/-/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if cls.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("alertmanager did not start: " + cls.dir)
            time.sleep(0.2)

    @classmethod
    def tearDownClass(cls):
        cls.proc.terminate()
        cls.proc.wait(timeout=30)
        cls.log.close()
        shutil.rmtree(cls.dir)

    def test_amtool_accepts_the_rules(self):
        r = subprocess.run(["amtool", "check-config", self.config], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("10 inhibit rules", r.stdout)

    def test_each_culprit_mutes_what_it_explains_and_nothing_else(self):
        now = datetime.datetime.now(datetime.timezone.utc)
        ends = (now + datetime.timedelta(hours=1)).isoformat()
        alerts = [RNIC, HOST, LEAF, PATH, OPTIC, NIC, SWITCH] + [a for a, _ in CASES]
        body = json.dumps([{"labels": a, "endsAt": ends} for a in alerts]).encode()
        req = urllib.request.Request(self.url + "/api/v2/alerts", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            self.assertEqual(r.status, 200)

        def key(labels):
            return tuple(sorted((k, v) for k, v in labels.items()))

        # Alertmanager takes the posted alerts in asynchronously: wait until
        # it lists them all, then until the inhibitor has seen the sources
        # (an alert's state settles once it has).
        want = {key(a): (key(by) if by else None) for a, by in CASES}
        deadline = time.monotonic() + 60
        while True:
            with urllib.request.urlopen(self.url + "/api/v2/alerts", timeout=10) as r:
                listed = json.load(r)
            fingerprint = {a["fingerprint"]: key(a["labels"]) for a in listed}
            got = {key(a["labels"]): tuple(fingerprint.get(f) for f in a["status"]["inhibitedBy"])
                   for a in listed}
            muted = {k: (v[0] if len(v) == 1 else v) or None for k, v in got.items()}
            if len(listed) == len(alerts) and all(muted.get(k) == v for k, v in want.items()):
                break
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
        for alert, by in CASES:
            with self.subTest(alert=alert["alertname"], labels=alert):
                self.assertEqual(muted.get(key(alert)), key(by) if by else None)
        # The culprits themselves are never muted.
        for culprit in (RNIC, HOST, LEAF, PATH, OPTIC, NIC, SWITCH):
            self.assertIsNone(muted.get(key(culprit)), culprit["alertname"])


if __name__ == "__main__":
    unittest.main()
