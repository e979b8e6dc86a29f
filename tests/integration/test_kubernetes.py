"""The Kubernetes manifests: structure, wiring between the objects, and the
embedded configuration accepted by the exporter itself."""
import os
import subprocess
import tempfile
import unittest

import yaml

from harness import BIN, SOURCE_DIR

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
        (c,) = pod["containers"]
        sc = c["securityContext"]
        self.assertEqual(sc["capabilities"], {"drop": ["ALL"]})
        self.assertTrue(sc["readOnlyRootFilesystem"])
        self.assertFalse(sc["allowPrivilegeEscalation"])
        self.assertTrue(sc["runAsNonRoot"])
        volumes = {v["name"]: v for v in pod["volumes"]}
        for m in c["volumeMounts"]:
            self.assertIn(m["name"], volumes, m)
        mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
        self.assertTrue(mounts["/host/sys"]["readOnly"])
        self.assertEqual(volumes["sys"]["hostPath"]["path"], "/sys")
        self.assertIn("/dev/infiniband", mounts)
        self.assertEqual(volumes["config"]["configMap"]["name"],
                         self.by_kind["ConfigMap"]["metadata"]["name"])

    def test_ports_line_up(self):
        pod = self.by_kind["DaemonSet"]["spec"]["template"]["spec"]
        (port,) = pod["containers"][0]["ports"]
        svc = self.by_kind["Service"]["spec"]
        self.assertEqual(svc["clusterIP"], "None")
        self.assertEqual(svc["ports"][0]["targetPort"], port["name"])
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


if __name__ == "__main__":
    unittest.main()
