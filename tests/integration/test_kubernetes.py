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


def pod(name, node, host_ip, ready=True, deleting=False):
    p = {"metadata": {"name": name, "namespace": "rdma-monitoring",
                      "labels": {"app.kubernetes.io/name": "rdma-exporter"}},
         "spec": {"nodeName": node},
         "status": {"phase": "Running", "hostIP": host_ip,
                    "conditions": [{"type": "Initialized", "status": "True"},
                                   {"type": "Ready", "status": "True" if ready else "False"}]}}
    if deleting:
        p["metadata"]["deletionTimestamp"] = "2026-12-01T10:00:00Z"
    return p


def node(name, labels):
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
            "status": {"addresses": [{"type": "Hostname", "address": name}]}}


# What the API server's lists could say (trimmed): the exporter's pods and
# the RDMA nodes.
PODS = {"kind": "PodList", "apiVersion": "v1", "items": [
    pod("rdma-exporter-a", "node-a", "10.0.1.11"),
    pod("rdma-exporter-b", "node-b", "10.0.1.12"),
    pod("rdma-exporter-c", "node-c", "10.0.2.13"),
    pod("rdma-exporter-d", "node-d", "fd00::14"),
    pod("rdma-exporter-e", "node-e", "10.0.2.15", ready=False),
    pod("rdma-exporter-g", "node-g", "10.0.2.16", deleting=True),
    {"metadata": {"name": "rdma-exporter-f", "namespace": "rdma-monitoring"},
     "spec": {}, "status": {"phase": "Pending"}},
]}
NODES = {"kind": "NodeList", "apiVersion": "v1", "items": [
    node("node-a", {"topology.kubernetes.io/zone": "r1"}),
    node("node-b", {"topology.kubernetes.io/zone": "r1"}),
    node("node-c", {"topology.kubernetes.io/zone": "r2", "example.com/rack": "row3-rack7"}),
    node("node-d", {}),
    node("node-e", {"topology.kubernetes.io/zone": "r2"}),
    node("node-g", {"topology.kubernetes.io/zone": "r2"}),
]}


class KubernetesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(MANIFEST) as f:
            cls.docs = [d for d in yaml.safe_load_all(f) if d]
        cls.by_kind = {d["kind"]: d for d in cls.docs}

    def test_every_object_is_well_formed(self):
        self.assertEqual(sorted(self.by_kind),
                         ["ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet",
                          "Namespace", "Role", "RoleBinding", "Service", "ServiceAccount",
                          "ServiceMonitor"])
        self.assertEqual(len(self.docs), len(self.by_kind), "one object of each kind")
        for d in self.docs:
            self.assertIn("apiVersion", d)
            self.assertTrue(d["metadata"]["name"])
            if d["kind"] in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
                self.assertNotIn("namespace", d["metadata"])
            else:
                self.assertEqual(d["metadata"]["namespace"], "rdma-monitoring")

    def test_peers_sidecar_alone_may_read_pods_and_nodes(self):
        # Least privilege: list pods of this namespace and nodes, nothing
        # else, and only the sidecar holds the token.
        sa = self.by_kind["ServiceAccount"]
        self.assertIs(sa["automountServiceAccountToken"], False)
        self.assertEqual(self.by_kind["ClusterRole"]["rules"],
                         [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}])
        self.assertEqual(self.by_kind["Role"]["rules"],
                         [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}])
        for binding, role in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
            b = self.by_kind[binding]
            self.assertEqual(b["roleRef"], {"apiGroup": "rbac.authorization.k8s.io",
                                            "kind": role,
                                            "name": self.by_kind[role]["metadata"]["name"]})
            self.assertEqual(b["subjects"], [{"kind": "ServiceAccount",
                                              "name": sa["metadata"]["name"],
                                              "namespace": sa["metadata"]["namespace"]}])
        pod = self.by_kind["DaemonSet"]["spec"]["template"]["spec"]
        self.assertEqual(pod["serviceAccountName"], sa["metadata"]["name"])
        self.assertIs(pod["automountServiceAccountToken"], False)
        volumes = {v["name"]: v for v in pod["volumes"]}
        token_path = "/var/run/secrets/kubernetes.io/serviceaccount"
        containers = {c["name"]: c for c in pod["containers"]}
        self.assertNotIn(token_path, [m["mountPath"]
                                      for m in containers["rdma-exporter"]["volumeMounts"]])
        (mount,) = [m for m in containers["peers"]["volumeMounts"]
                    if m["mountPath"] == token_path]
        self.assertTrue(mount["readOnly"])
        sources = volumes[mount["name"]]["projected"]["sources"]
        self.assertEqual(sources[0]["serviceAccountToken"]["path"], "token")
        self.assertEqual(sources[1]["configMap"]["items"], [{"key": "ca.crt", "path": "ca.crt"}])
        self.assertEqual(sources[2]["downwardAPI"]["items"][0]["path"], "namespace")

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
            for m in container["volumeMounts"]:
                self.assertIn(m["name"], volumes, m)
        # The sidecar is no root; the exporter is uid 0 for the node's
        # sockets (root's, owner-writable), with no capability.
        self.assertTrue(containers["peers"]["securityContext"]["runAsNonRoot"])
        self.assertEqual(containers["peers"]["securityContext"]["runAsUser"], 65534)
        self.assertEqual(containers["rdma-exporter"]["securityContext"]["runAsUser"], 0)
        c = containers["rdma-exporter"]
        mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
        self.assertTrue(mounts["/host/sys"]["readOnly"])
        self.assertEqual(volumes["sys"]["hostPath"]["path"], "/sys")
        self.assertIn("/dev/infiniband", mounts)
        self.assertEqual(volumes["config"]["configMap"]["name"],
                         self.by_kind["ConfigMap"]["metadata"]["name"])

    def test_node_sockets_are_mounted_read_only_where_the_configuration_looks(self):
        pod = self.by_kind["DaemonSet"]["spec"]["template"]["spec"]
        cfg = yaml.safe_load(self.by_kind["ConfigMap"]["data"]["rdma_exporter.yml"])
        k8s = cfg["kubernetes"]
        self.assertTrue(k8s["enabled"])
        volumes = {v["name"]: v for v in pod["volumes"]}
        (exporter,) = [c for c in pod["containers"] if c["name"] == "rdma-exporter"]
        mounts = {m["mountPath"]: m for m in exporter["volumeMounts"]}
        for socket, host_dir in [(k8s["cri_socket"], "/run/containerd"),
                                 (k8s["pod_resources_socket"], "/var/lib/kubelet/pod-resources")]:
            mount = mounts[os.path.dirname(socket)]   # the directory, not the socket file
            self.assertTrue(mount["readOnly"], socket)
            self.assertEqual(volumes[mount["name"]]["hostPath"], {"path": host_dir,
                                                                   "type": "Directory"})
        # The sidecar sees neither.
        (peers,) = [c for c in pod["containers"] if c["name"] == "peers"]
        self.assertFalse({m["name"] for m in peers["volumeMounts"]} &
                         {mounts[os.path.dirname(k8s["cri_socket"])]["name"],
                          mounts[os.path.dirname(k8s["pod_resources_socket"])]["name"]})
        self.assertIn("pod", cfg["qp_counters"]["aggregate_by"])
        self.assertTrue(cfg["qp_counters"]["inventory_by_pod"])

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
        env = {e["name"]: e.get("value", e.get("valueFrom")) for e in containers["peers"]["env"]}
        ports = {p["name"]: p["containerPort"] for p in containers["rdma-exporter"]["ports"]}
        self.assertTrue(probe["listen_address"].endswith(f":{ports['probe']}"))
        self.assertEqual(env["PROBE_PORT"], str(ports["probe"]))
        svc = self.by_kind["Service"]["metadata"]
        self.assertTrue(env["PEERS_SERVICE"].startswith(f"{svc['name']}.{svc['namespace']}.svc"))
        # The sidecar lists the DaemonSet's own pods, on the nodes it runs
        # on, in its own namespace, and writes the rack label the pinglist
        # groups by.
        ds = self.by_kind["DaemonSet"]["spec"]
        self.assertEqual(dict([env["PEERS_SELECTOR"].split("=")]),
                         ds["template"]["metadata"]["labels"])
        self.assertEqual(dict([env["PEERS_NODE_SELECTOR"].split("=")]), pod["nodeSelector"])
        self.assertEqual(env["PEERS_NAMESPACE"], {"fieldRef": {"fieldPath": "metadata.namespace"}})
        self.assertEqual(env["PEERS_RACK_LABEL"], "topology.kubernetes.io/zone")
        self.assertEqual(probe["pinglist"]["group_label"], "rack")

    def run_peers(self, work, env_overrides, pods=PODS, nodes=NODES, kubectl_fails=False):
        """Runs the sidecar's script for one round with a fake kubectl that
        answers the API paths with canned lists (and a sleep that ends the
        loop); returns the kubectl calls it saw."""
        script = self.by_kind["ConfigMap"]["data"]["peers.sh"]
        out_dir = os.path.join(work, "peers")
        stubs = os.path.join(work, "bin")
        os.makedirs(out_dir, exist_ok=True)
        os.makedirs(stubs, exist_ok=True)
        for name, data in (("pods.json", pods), ("nodes.json", nodes)):
            with open(os.path.join(work, name), "w") as f:
                json.dump(data, f)
        log = os.path.join(work, "kubectl.log")
        with open(os.path.join(stubs, "kubectl"), "w") as f:
            f.write("#!/bin/sh\n"
                    f"echo \"$*\" >>'{log}'\n"
                    + ("exit 1\n" if kubectl_fails else "")
                    + "case \"$*\" in\n"
                    f"  'get --raw /api/v1/namespaces/'*'/pods?'*) cat '{work}/pods.json' ;;\n"
                    f"  'get --raw /api/v1/nodes?'*) cat '{work}/nodes.json' ;;\n"
                    "  *) echo \"unexpected: $*\" >&2; exit 1 ;;\n"
                    "esac\n")
        with open(os.path.join(stubs, "sleep"), "w") as f:
            f.write("#!/bin/sh\nexit 1\n")
        for name in ("kubectl", "sleep"):
            os.chmod(os.path.join(stubs, name), 0o755)
        if os.path.exists(log):
            os.remove(log)
        pod = self.by_kind["DaemonSet"]["spec"]["template"]["spec"]
        (peers,) = [c for c in pod["containers"] if c["name"] == "peers"]
        env = dict(os.environ, PATH=stubs + ":" + os.environ["PATH"],
                   PEERS_NAMESPACE="rdma-monitoring")
        env.update({e["name"]: e["value"] for e in peers["env"] if "value" in e})
        for name, value in env_overrides.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        script = script.replace("/var/run/rdma-exporter-peers", out_dir)
        subprocess.run(["sh", "-c", script], env=env, capture_output=True, timeout=30)
        with open(log) as f:
            return f.read().splitlines()

    def test_peers_script_writes_ready_pods_by_rack_and_the_exporter_reads_them(self):
        work = tempfile.mkdtemp(prefix="rdma_peers_")
        peers_file = os.path.join(work, "peers", "peers.json")
        service = "rdma-exporter.rdma-monitoring.svc.cluster.local"
        calls = self.run_peers(work, {})
        self.assertEqual(calls, [
            "get --raw /api/v1/namespaces/rdma-monitoring/pods?"
            "labelSelector=app.kubernetes.io/name=rdma-exporter&resourceVersion=0",
            "get --raw /api/v1/nodes?resourceVersion=0&"
            "labelSelector=feature.node.kubernetes.io/rdma.capable=true"])
        with open(peers_file) as f:
            groups = json.load(f)
        # Ready pods only (not node-e's, not the one being deleted, not the
        # pending one), at their node's address, grouped by the node's zone;
        # node-d has no zone label: a group without rack, sorted first.
        self.assertEqual(groups, [
            {"targets": ["[fd00::14]:10911"], "labels": {"service": service}},
            {"targets": ["10.0.1.11:10911", "10.0.1.12:10911"],
             "labels": {"service": service, "rack": "r1"}},
            {"targets": ["10.0.2.13:10911"], "labels": {"service": service, "rack": "r2"}}])

        # Without PEERS_RACK_LABEL, the documented default (the zone) too.
        os.remove(peers_file)
        self.run_peers(work, {"PEERS_RACK_LABEL": None})
        with open(peers_file) as f:
            self.assertEqual(json.load(f), groups)

        # Another node label: only node-c has it.
        os.remove(peers_file)
        self.run_peers(work, {"PEERS_RACK_LABEL": "example.com/rack"})
        with open(peers_file) as f:
            self.assertEqual(json.load(f), [
                {"targets": ["10.0.1.11:10911", "10.0.1.12:10911", "[fd00::14]:10911"],
                 "labels": {"service": service}},
                {"targets": ["10.0.2.13:10911"],
                 "labels": {"service": service, "rack": "row3-rack7"}}])

        # The API cannot be read, or no pod is ready: the last file stays.
        with open(peers_file) as f:
            before = f.read()
        self.run_peers(work, {}, kubectl_fails=True)
        self.run_peers(work, {}, pods={"kind": "PodList", "items": [PODS["items"][4]]})
        with open(peers_file) as f:
            self.assertEqual(f.read(), before)

        # The exporter takes that file as its targets, their rack label as
        # their group.
        config = (f"probe:\n  enabled: true\n  listen_address: 127.0.0.1:0\n"
                  f"  file_sd: [{peers_file}]\n")
        self.run_peers(work, {})
        with Exporter(config=config) as e:
            deadline = time.monotonic() + 10
            text = ""
            while time.monotonic() < deadline:
                with urllib.request.urlopen(f"http://127.0.0.1:{e.port}/metrics") as r:
                    text = r.read().decode()
                if 'rdma_probe_targets{source="file_sd"} 4' in text:
                    break
                time.sleep(0.1)
            self.assertIn('rdma_probe_targets{source="file_sd"} 4', text)
            self.assertIn("rdma_probe_file_sd_last_read_successful 1", text)
            self.assertIn("rdma_probe_pinglist_fleet_hosts 4", text)


if __name__ == "__main__":
    unittest.main()
