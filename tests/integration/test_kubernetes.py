"""The Kubernetes manifests: structure, wiring between the objects, and the
embedded configuration accepted by the exporter itself."""
import json
import os
import subprocess
import tempfile
import time
import unittest
import urllib.request

import yaml

from harness import BIN, SOURCE_DIR, Exporter

MANIFEST = os.path.join(SOURCE_DIR, "config/kubernetes/rdma-exporter.yaml")


class KubernetesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(MANIFEST) as f:
            cls.docs = [d for d in yaml.safe_load_all(f) if d]
        cls.by_kind = {d["kind"]: d for d in cls.docs}

    def test_every_object_is_well_formed(self):
        self.assertEqual(sorted(self.by_kind),
                         ["ConfigMap", "DaemonSet", "Namespace", "Service", "ServiceMonitor"])
        for d in self.docs:
            self.assertIn("apiVersion", d)
            self.assertTrue(d["metadata"]["name"])
            if d["kind"] != "Namespace":
                self.assertEqual(d["metadata"]["namespace"], "rdma-monitoring")

    def test_daemonset_runs_with_least_privilege_in_the_host_namespaces(self):
        spec = self.by_kind["DaemonSet"]["spec"]
        pod = spec["template"]["spec"]
        self.assertEqual(spec["selector"]["matchLabels"], spec["template"]["metadata"]["labels"])
        self.assertTrue(pod["hostNetwork"])
        self.assertTrue(pod["hostPID"])
        containers = {c["name"]: c for c in pod["containers"]}
        self.assertEqual(sorted(containers), ["peers", "rdma-exporter"])
        volumes = {v["name"]: v for v in pod["volumes"]}
        for container in containers.values():
            sc = container["securityContext"]
            self.assertEqual(sc["capabilities"], {"drop": ["ALL"]})
            self.assertTrue(sc["readOnlyRootFilesystem"])
            self.assertFalse(sc["allowPrivilegeEscalation"])
            self.assertTrue(sc["runAsNonRoot"])
            for m in container["volumeMounts"]:
                self.assertIn(m["name"], volumes, m)
        c = containers["rdma-exporter"]
        mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
        self.assertTrue(mounts["/host/sys"]["readOnly"])
        self.assertEqual(volumes["sys"]["hostPath"]["path"], "/sys")
        self.assertIn("/dev/infiniband", mounts)
        self.assertEqual(volumes["config"]["configMap"]["name"],
                         self.by_kind["ConfigMap"]["metadata"]["name"])

    def test_ports_line_up(self):
        pod = self.by_kind["DaemonSet"]["spec"]["template"]["spec"]
        ports = {p["name"]: p for p in pod["containers"][0]["ports"]}
        self.assertEqual(sorted(ports), ["metrics", "probe"])
        svc = self.by_kind["Service"]["spec"]
        self.assertEqual(svc["clusterIP"], "None")
        self.assertEqual(sorted(p["targetPort"] for p in svc["ports"]), sorted(ports))
        self.assertEqual(svc["selector"], self.by_kind["DaemonSet"]["spec"]["selector"]["matchLabels"])
        sm = self.by_kind["ServiceMonitor"]["spec"]
        self.assertEqual(sm["endpoints"][0]["port"], svc["ports"][0]["name"])
        self.assertEqual(sm["selector"]["matchLabels"], self.by_kind["Service"]["metadata"]["labels"])

    def test_embedded_configuration_is_valid_and_matches_the_pod(self):
        data = self.by_kind["ConfigMap"]["data"]["rdma_exporter.yml"]
        path = os.path.join(tempfile.mkdtemp(), "rdma_exporter.yml")
        with open(path, "w") as f:
            f.write(data)
        r = subprocess.run([BIN, "--config.check", path], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        cfg = yaml.safe_load(data)
        pod = self.by_kind["DaemonSet"]["spec"]["template"]["spec"]
        port = pod["containers"][0]["ports"][0]["containerPort"]
        self.assertTrue(cfg["web"]["listen_address"].endswith(f":{port}"))
        mounts = [m["mountPath"] for m in pod["containers"][0]["volumeMounts"]]
        self.assertIn(cfg["sysfs"]["root"], mounts)
        args = pod["containers"][0]["args"]
        self.assertIn("--config.file=/etc/rdma_exporter/rdma_exporter.yml", args)


    def test_probe_is_wired_to_the_peers_sidecar_and_the_secret(self):
        cfg = yaml.safe_load(self.by_kind["ConfigMap"]["data"]["rdma_exporter.yml"])
        probe = cfg["probe"]
        pod = self.by_kind["DaemonSet"]["spec"]["template"]["spec"]
        containers = {c["name"]: c for c in pod["containers"]}
        exporter_mounts = {m["mountPath"]: m for m in containers["rdma-exporter"]["volumeMounts"]}
        sidecar_mounts = {m["mountPath"]: m for m in containers["peers"]["volumeMounts"]}
        (peers_file,) = probe["file_sd"]
        peers_dir = os.path.dirname(peers_file)
        self.assertEqual(exporter_mounts[peers_dir]["name"], sidecar_mounts[peers_dir]["name"])
        self.assertTrue(exporter_mounts[peers_dir]["readOnly"])
        self.assertFalse(sidecar_mounts[peers_dir].get("readOnly", False))
        secret_dir = os.path.dirname(probe["secret_file"])
        volumes = {v["name"]: v for v in pod["volumes"]}
        self.assertIn("secret", volumes[exporter_mounts[secret_dir]["name"]])
        env = {e["name"]: e["value"] for e in containers["peers"]["env"]}
        ports = {p["name"]: p["containerPort"] for p in containers["rdma-exporter"]["ports"]}
        self.assertTrue(probe["listen_address"].endswith(f":{ports['probe']}"))
        self.assertEqual(env["PROBE_PORT"], str(ports["probe"]))
        svc = self.by_kind["Service"]["metadata"]
        self.assertTrue(env["PEERS_SERVICE"].startswith(f"{svc['name']}.{svc['namespace']}.svc"))

    def test_peers_script_writes_a_file_sd_file_the_exporter_reads(self):
        # The sidecar's script with busybox's nslookup stood in for by a stub
        # that prints both output formats busybox has had, and a sleep that ends
        # the loop after one round.
        script = self.by_kind["ConfigMap"]["data"]["peers.sh"]
        work = tempfile.mkdtemp(prefix="rdma_peers_")
        out_dir = os.path.join(work, "peers")
        os.makedirs(out_dir)
        stubs = os.path.join(work, "bin")
        os.makedirs(stubs)
        with open(os.path.join(stubs, "nslookup"), "w") as f:
            f.write("#!/bin/sh\n"
                    "echo 'Server:\t\t10.96.0.10'\n"
                    "echo 'Address:\t10.96.0.10:53'\n"
                    "echo ''\n"
                    "echo 'Name:\trdma-exporter.rdma-monitoring.svc.cluster.local'\n"
                    "echo 'Address: 192.168.7.12'\n"
                    "echo 'Address 2: 192.168.7.11 node-b.example'\n")
        with open(os.path.join(stubs, "sleep"), "w") as f:
            f.write("#!/bin/sh\nexit 1\n")
        for name in ("nslookup", "sleep"):
            os.chmod(os.path.join(stubs, name), 0o755)
        script = script.replace("/var/run/rdma-exporter-peers", out_dir)
        env = dict(os.environ, PATH=stubs + ":" + os.environ["PATH"],
                   PEERS_SERVICE="rdma-exporter.rdma-monitoring.svc.cluster.local",
                   PROBE_PORT="10911")
        subprocess.run(["sh", "-c", script], env=env, capture_output=True, timeout=30)
        with open(os.path.join(out_dir, "peers.json")) as f:
            groups = json.load(f)
        self.assertEqual(groups, [{"targets": ["192.168.7.11:10911", "192.168.7.12:10911"],
                                   "labels": {"service": env["PEERS_SERVICE"]}}])
        # The exporter takes that file as its targets.
        config = (f"probe:\n  enabled: true\n  listen_address: 127.0.0.1:0\n"
                  f"  file_sd: [{os.path.join(out_dir, 'peers.json')}]\n")
        with Exporter(config=config) as e:
            deadline = time.monotonic() + 10
            text = ""
            while time.monotonic() < deadline:
                with urllib.request.urlopen(f"http://127.0.0.1:{e.port}/metrics") as r:
                    text = r.read().decode()
                if 'rdma_probe_targets{source="file_sd"} 2' in text:
                    break
                time.sleep(0.1)
            self.assertIn('rdma_probe_targets{source="file_sd"} 2', text)
            self.assertIn("rdma_probe_file_sd_last_read_successful 1", text)


if __name__ == "__main__":
    unittest.main()
