"""rdma_exporter against a real kernel: Soft-RoCE (rdma_rxe) in the test-bed VM.

setUpClass boots the VM once (tests/vm/run-in-vm, through vmrun.py) and runs
exporter-checks.sh in it, which records the exporter's expositions next to
what the kernel reports through iproute2's rdma tool and sysfs. The tests
compare the two. Environment: see vmrun.py.
"""
import json
import os
import re
import shutil
import subprocess
import unittest

from vmrun import BIN, FAKE_NODE_API_BIN, HW_PREFIX, HW_SUFFIX, Exposition, VmTestCase

# Port states and physical states as iproute2 prints them, with the numbers
# the exporter exports (docs/metrics.md).
PORT_STATES = {"DOWN": 1, "INIT": 2, "ARMED": 3, "ACTIVE": 4, "ACTIVE_DEFER": 5}
PHYS_STATES = {"SLEEP": 1, "POLLING": 2, "DISABLED": 3, "PORT_CONFIGURATION_TRAINING": 4,
               "LINK_UP": 5, "LINK_ERROR_RECOVERY": 6, "PHY_TEST": 7}
# Keys of `rdma -j statistic show` / `rdma -j resource show` entries that
# identify the device or port rather than count something.
STAT_KEYS = {"ifindex", "ifname", "port"}


def metric_name_part(kernel_name):
    """A driver counter name as it appears inside the metric name."""
    out = re.sub(r"[^A-Za-z0-9_]", "_", kernel_name)
    return "_" + out if out[:1].isdigit() else out


def stat_ports(stat_json):
    """{(device, port): {counter: value}} from `rdma -j statistic show`."""
    out = {}
    for entry in stat_json:
        counters = {k: v for k, v in entry.items() if k not in STAT_KEYS}
        for k, v in counters.items():
            if not isinstance(v, int):
                raise AssertionError(f"unexpected non-counter {k}={v!r} in {entry}")
        out[(entry["ifname"], str(entry["port"]))] = counters
    return out


class SoftRoceTest(VmTestCase):
    GUEST_SCRIPT = "exporter-checks.sh"
    # In this order: the guest script's EXPORTER and NODE_API.
    BINARIES = {"rdma_exporter": BIN, "fake_node_api_server": FAKE_NODE_API_BIN}
    VM_TIMEOUT = 200
    LOGS = ("exporter.log",)

    # ------------------------------------------------------------ helpers

    def events(self):
        out = {}
        for line in self.text("events.txt").splitlines():
            name, ms = line.split()
            out[name] = int(ms)
        return out

    def hot_scrapes(self):
        """[(index, start_ms, end_ms, http_code, exporter_alive)] of the scrape loop."""
        out = []
        for line in self.text("hot/index.txt").splitlines():
            n, start, end, code, alive = line.split()
            out.append((int(n), int(start), int(end), code, alive))
        return out

    def assert_counters_equal(self, prom, stat_json, what):
        """Every port counter of the kernel dump equals the exposition's, and
        the exposition has no other port counters."""
        ports = stat_ports(stat_json)
        self.assertTrue(ports, f"{what}: the kernel reported no port counters")
        for (device, port), counters in ports.items():
            self.assertTrue(counters, f"{what}: no counters for {device}/{port}")
            expected = {metric_name_part(k): v for k, v in counters.items()}
            exported = prom.port_hw_counters(device, port)
            self.assertEqual(sorted(exported), sorted(expected),
                             f"{what}: counter names of {device}/{port}")
            for name, value in expected.items():
                self.assertEqual(exported[name], value,
                                 f"{what}: {device}/{port} {name}: exported "
                                 f"{exported[name]!r}, kernel {value}")
        exported_ports = {(l["device"], l["port"]) for n, l, _ in prom.samples
                          if n.startswith(HW_PREFIX) and n.endswith(HW_SUFFIX)}
        self.assertEqual(exported_ports, set(ports), f"{what}: ports with hw counters")

    # ------------------------------------------------------------ tests

    def test_a_hw_counters_equal_kernel_and_sysfs(self):
        before, after = self.json("stat-before.json"), self.json("stat-after.json")
        self.assertEqual(before, after,
                         "counters moved around --once: the moment was not quiet")
        once = self.prom("once.prom")
        self.assert_counters_equal(once, before, "once.prom vs rdma statistic")

        sysfs = {}
        for line in self.text("sysfs-hw-counters.txt").splitlines():
            device, port, name, value = line.split()
            sysfs.setdefault((device, port), {})[name] = int(value)
        self.assertEqual(set(sysfs), set(stat_ports(before)), "ports: sysfs vs netlink")
        for (device, port), counters in stat_ports(before).items():
            files = dict(sysfs[(device, port)])
            self.assertIn("lifespan", files, "rxe's sysfs has a lifespan file")
            files.pop("lifespan")
            self.assertEqual(files, counters, f"{device}/{port}: sysfs vs rdma statistic")
        for name, labels, _ in once.samples:
            self.assertNotIn("lifespan", name, f"lifespan must not be exported: {name}{labels}")

    def test_a_hw_counters_through_sysfs_equal_kernel(self):
        """With hw_counters.source: sysfs, the port hw counters read from sysfs
        are the series and values `rdma statistic show` (rdma netlink) gives
        at the same quiet moment, and each port says where they came from."""
        self.assertEqual(self.code("once-sysfs.rc"), "0", self.text("once-sysfs.stderr"))
        before, after = self.json("stat-before.json"), self.json("stat-after.json")
        self.assertEqual(before, after,
                         "counters moved around the --once runs: the moment was not quiet")
        through_sysfs = self.prom("once-sysfs.prom")
        self.assert_counters_equal(through_sysfs, before, "once-sysfs.prom vs rdma statistic")
        through_netlink = self.prom("once.prom")
        for (device, port) in stat_ports(before):
            self.assertEqual(through_sysfs.port_hw_counters(device, port),
                             through_netlink.port_hw_counters(device, port),
                             f"{device}/{port}: sysfs path vs netlink path")
            for prom, source in ((through_netlink, "netlink"), (through_sysfs, "sysfs")):
                series = prom.series("rdma_port_hw_source_info", device=device, port=port)
                self.assertEqual([(l.get("source"), v) for l, v in series], [(source, 1)],
                                 f"{device}/{port}: rdma_port_hw_source_info")
        for name, labels, _ in through_sysfs.samples:
            self.assertNotIn("lifespan", name, f"lifespan must not be exported: {name}{labels}")

    def test_b_counters_follow_traffic(self):
        once = self.prom("once.prom")
        kernel = stat_ports(self.json("stat-before.json"))
        for (device, port), counters in kernel.items():
            for name in ("sent_pkts", "rcvd_pkts"):
                value = once.value(f"{HW_PREFIX}{name}{HW_SUFFIX}", device=device, port=port)
                self.assertIsNotNone(value, f"{device}/{port} {name} missing")
                self.assertGreater(value, 0, f"{device}/{port} {name}: no traffic seen")
                self.assertEqual(value, counters[name])

        self.assertEqual(self.code("scrape1.code"), "200")
        self.assertEqual(self.code("scrape2.code"), "200")
        scrape1, scrape2 = self.prom("scrape1.prom"), self.prom("scrape2.prom")
        stat2 = self.json("stat2.json")
        self.assert_counters_equal(scrape2, stat2, "scrape2.prom vs rdma statistic")
        for (device, port) in stat_ports(stat2):
            first = scrape1.port_hw_counters(device, port)
            second = scrape2.port_hw_counters(device, port)
            self.assertEqual(sorted(first), sorted(second), f"{device}/{port} counter names")
            for name, value in first.items():
                self.assertGreaterEqual(second[name], value, f"{device}/{port} {name} went back")
            for name in ("sent_pkts", "rcvd_pkts"):
                self.assertGreater(second[name], first[name],
                                   f"{device}/{port} {name} did not grow with traffic")

    def test_c_devices_and_ports_match_kernel(self):
        devices, links = self.json("rdma-dev.json"), self.json("rdma-link.json")
        self.assertTrue(devices and links)
        self.assertIn("rxe0", {d["ifname"] for d in devices})
        for name in ("once.prom", "scrape1.prom"):
            prom = self.prom(name)
            info_devices = {l["device"] for l, _ in prom.series("rdma_device_info")}
            self.assertEqual(info_devices, {d["ifname"] for d in devices}, name)
            for dev in devices:
                series = prom.series("rdma_device_info", device=dev["ifname"])
                self.assertEqual(len(series), 1, f"{name}: rdma_device_info of {dev['ifname']}")
                labels, value = series[0]
                self.assertEqual(value, 1)
                self.assertEqual(labels.get("node_guid"), dev["node_guid"], name)
                self.assertEqual(labels.get("sys_image_guid"), dev["sys_image_guid"], name)
                self.assertEqual(labels.get("node_type"), dev["node_type"], name)
                self.assertEqual(labels.get("fw_version"), dev.get("fw", ""), name)
                ports = [p for p in links if p["ifname"] == dev["ifname"]]
                self.assertEqual(prom.value("rdma_device_ports", device=dev["ifname"]),
                                 len(ports), f"{name}: rdma_device_ports")
            for link in links:
                device, port = link["ifname"], str(link["port"])
                self.assertEqual(prom.value("rdma_port_state", device=device, port=port),
                                 PORT_STATES[link["state"]], f"{name}: {device}/{port} state")
                self.assertEqual(prom.value("rdma_port_phys_state", device=device, port=port),
                                 PHYS_STATES[link["physical_state"]],
                                 f"{name}: {device}/{port} physical state")
                series = prom.series("rdma_port_info", device=device, port=port)
                self.assertEqual(len(series), 1, f"{name}: rdma_port_info {device}/{port}")
                labels, _ = series[0]
                self.assertEqual(labels.get("state"), link["state"], name)
                self.assertEqual(labels.get("phys_state"), link["physical_state"], name)
                self.assertEqual(labels.get("netdev"), link.get("netdev", ""), name)
        rxe = [p for p in links if p["ifname"] == "rxe0"]
        self.assertEqual([(p["state"], p["physical_state"], p.get("netdev")) for p in rxe],
                         [("ACTIVE", "LINK_UP", "veth0")], "the test bed's rxe0 port")
        self.assertEqual(self.prom("once.prom").value("rdma_port_state", device="rxe0",
                                                      port="1"), 4)
        self.assertEqual(self.prom("once.prom").value("rdma_port_phys_state", device="rxe0",
                                                      port="1"), 5)

    def test_c_sysfs_identity_and_ports_match(self):
        devices, ports = {}, {}
        for line in self.text("sysfs-info.txt").splitlines():
            path, value = line.split(":", 1)
            parts = path.split("/")  # '', sys, class, infiniband, DEV, ...
            if parts[5] == "ports":
                ports.setdefault((parts[4], parts[6]), {})[parts[7]] = value
            else:
                devices.setdefault(parts[4], {})[parts[5]] = value
        self.assertIn("rxe0", devices)
        self.assertIn(("rxe0", "1"), ports)
        prom = self.prom("once.prom")
        for device, files in devices.items():
            series = prom.series("rdma_device_hardware_info", device=device)
            self.assertEqual(len(series), 1, f"rdma_device_hardware_info of {device}")
            labels = series[0][0]
            for label, name in (("fw_version", "fw_ver"), ("board_id", "board_id"),
                                ("hca_type", "hca_type"), ("node_desc", "node_desc")):
                self.assertEqual(labels.get(label), files.get(name, ""), f"{device} {name}")
            info = prom.series("rdma_device_info", device=device)[0][0]
            self.assertEqual(info.get("node_guid"), files.get("node_guid"), device)
            self.assertEqual(info.get("sys_image_guid"), files.get("sys_image_guid"), device)
        for (device, port), files in ports.items():
            # "10 Gb/sec (1X QDR)", "2.5 Gb/sec (1X SDR)"
            m = re.match(r"^(\d+(?:\.\d+)?) Gb/sec", files["rate"])
            self.assertTrue(m, f"{device}/{port} rate {files['rate']!r}")
            self.assertEqual(prom.value("rdma_port_rate_bytes_per_second", device=device,
                                        port=port), float(m.group(1)) * 1e9 / 8,
                             f"{device}/{port} rate {files['rate']!r}")
            layer = prom.series("rdma_port_link_layer_info", device=device, port=port)
            self.assertEqual([l.get("link_layer") for l, _ in layer], [files["link_layer"]])
            # "4: ACTIVE", "5: LinkUp"
            self.assertEqual(prom.value("rdma_port_state", device=device, port=port),
                             int(files["state"].split(":")[0]), f"{device}/{port} state")
            self.assertEqual(prom.value("rdma_port_phys_state", device=device, port=port),
                             int(files["phys_state"].split(":")[0]), f"{device}/{port} phys")

    def test_d_resources_match_kernel(self):
        self.assertEqual(self.code("res.code"), "200")
        res, res_after = self.json("res.json"), self.json("res-after.json")
        self.assertEqual(res, res_after, "resources changed around the scrape")
        qps = self.json("res-qp.json")
        self.assertTrue(any(q.get("comm") == "ibv_rc_pingpong" and q["ifname"] == "rxe0"
                            for q in qps), "the ibv_rc_pingpong server's QP is not listed")
        prom = self.prom("res.prom")
        self.assertIn("rxe0", {d["ifname"] for d in res})
        for dev in res:
            device = dev["ifname"]
            kinds = {k: v for k, v in dev.items() if k not in STAT_KEYS}
            self.assertTrue(kinds, f"no resource kinds for {device}")
            exported = {l["resource"]: v for l, v in
                        prom.series("rdma_device_resources", device=device)}
            self.assertEqual(exported, {k: float(v) for k, v in kinds.items()},
                             f"{device}: resources exported vs rdma resource show")
        self.assertGreaterEqual(prom.value("rdma_device_resources", device="rxe0",
                                           resource="qp"), 1)

    def test_e_hot_removal_and_readd(self):
        events = self.events()
        scrapes = self.hot_scrapes()
        self.assertTrue(scrapes, "the scrape loop recorded nothing")
        for n, _, _, code, alive in scrapes:
            self.assertEqual(code, "200", f"hot scrape {n}")
            self.assertEqual(alive, "alive", f"exporter dead after hot scrape {n}")
        self.assertEqual(self.code("exporter-alive"), "alive")

        def has_rxe0(prom):
            return bool(prom.series("rdma_device_info", device="rxe0"))

        before = [n for n, s, e, _, _ in scrapes if e < events["delete_begin"]]
        self.assertTrue(before, "no scrape before the deletion")
        for n in before:
            self.assertTrue(has_rxe0(self.prom(f"hot/{n}.prom")), f"hot scrape {n}")

        window = [n for n, s, e, _, _ in scrapes
                  if s >= events["delete_end"] and e <= events["add_begin"]]
        self.assertTrue(window, "no scrape ran entirely while rxe0 was deleted")
        for n in window:
            prom = self.prom(f"hot/{n}.prom")
            self.assertNotIn("rxe0", prom.devices(), f"hot scrape {n}: rxe0 series while deleted")
            self.assertFalse(has_rxe0(prom))
            success = prom.series("rdma_exporter_collector_success")
            self.assertTrue(success, f"hot scrape {n}: no collector_success")
            for labels, value in success:
                self.assertEqual(value, 1, f"hot scrape {n}: collector {labels} failed "
                                 "on a host whose only device was gone")
            self.assertEqual(prom.value("rdma_exporter_netlink_available"), 1)

        after = [n for n, s, e, _, _ in scrapes if s >= events["active"]]
        self.assertTrue(after, "no loop scrape after rxe0 came back")
        for n in after:
            prom = self.prom(f"hot/{n}.prom")
            self.assertTrue(has_rxe0(prom), f"hot scrape {n}: rxe0 not back")
            self.assertEqual(prom.value("rdma_port_state", device="rxe0", port="1"), 4)

        self.assertEqual(self.code("after-readd.code"), "200")
        readd = self.prom("after-readd.prom")
        self.assertTrue(has_rxe0(readd))
        # A re-created device starts from zero; the quiet kernel dump taken
        # right after the scrape must match it.
        self.assert_counters_equal(readd, self.json("stat-after-readd.json"),
                                   "after-readd.prom vs rdma statistic")

        self.assertEqual(self.code("exporter.rc"), "0", "exit code after SIGTERM")
        log = self.text("exporter.log").splitlines()
        for line in log:
            self.assertRegex(line, r'^ts=\S+ level=(debug|info|warn|error) msg=', "log format")
        self.assertTrue(any('msg="listening on" address=127.0.0.1:10910 ' in l for l in log))
        self.assertIn("stopped", log[-1] if log else "")
        # One line per collector state change: at worst each collector fails
        # once while the device goes away and once while it comes back.
        collectors = len(self.prom("once.prom").series("rdma_exporter_collector_success"))
        complaints = [l for l in log if re.search(r" level=(warn|error) ", l)]
        self.assertLessEqual(len(complaints), 2 * collectors,
                             "warning storm:\n" + "\n".join(complaints))
        self.assertLess(len(log), 4 + 4 * collectors, "log storm:\n" + "\n".join(log))

    def test_f_promtool_accepts_expositions(self):
        checked = {}
        for line in self.text("promtool.txt").splitlines():
            name, rc = line.split()
            checked[name] = rc
        for name in ("once.prom", "scrape1.prom", "scrape2.prom", "res.prom",
                     "after-readd.prom"):
            self.assertEqual(checked.get(name), "0",
                             f"promtool check metrics {name}:\n"
                             + self.text(f"promtool-{name}.out"))
        # The scrapes of the hot-change loop, checked on the host.
        promtool = shutil.which("promtool")
        self.assertIsNotNone(promtool, "promtool (Debian package prometheus) is not installed")
        for n, _, _, code, _ in self.hot_scrapes():
            with open(self.path(f"hot/{n}.prom"), "rb") as f:
                proc = subprocess.run([promtool, "check", "metrics"], stdin=f,
                                      capture_output=True, text=True, timeout=60)
            self.assertEqual(proc.returncode, 0,
                             f"promtool check metrics hot/{n}.prom:\n{proc.stdout}{proc.stderr}")

    def test_g_once_is_clean(self):
        self.assertEqual(self.code("once.rc"), "0")
        self.assertEqual(self.text("once.stderr"), "", "--once wrote to stderr")
        once = self.prom("once.prom")
        for labels, value in once.series("rdma_exporter_collector_success"):
            self.assertEqual(value, 1, f"collector {labels} failed")
        self.assertEqual(once.value("rdma_exporter_netlink_available"), 1)


    def test_h_qp_counters_on_rxe(self):
        r = self.results
        def read(name):
            with open(os.path.join(r, name)) as f:
                return f.read()
        for run in ("qp-restore", "qp-auto", "qp-manual"):
            self.assertEqual(read(run + ".rc").strip(), "0", read(run + ".stderr"))
        # The mode the exporter set is the kernel's, and restore_on_exit undid it.
        # (`rdma statistic qp mode` prints "... mode qp auto off" or "auto type,pid on".)
        self.assertIn("qp auto off", read("qpmode-start.txt"))
        self.assertIn("qp auto off", read("qpmode-after-qp-restore.txt"))
        self.assertIn("qp auto type,pid on", read("qpmode-after-qp-auto.txt"))
        restore = Exposition(read("qp-restore.prom"))
        self.assertEqual(restore.value("rdma_qp_stat_mode_info", device="rxe0", port="1",
                                       mode="auto", auto_by="qp_type,pid"), 1)
        self.assertEqual(restore.value("rdma_qp_stat_writes_total", device="rxe0", port="1",
                                       operation="set_auto", result="ok"), 1)
        self.assertEqual(restore.value("rdma_qp_stat_mode_drift", device="rxe0", port="1"), 0)
        # rxe accepts auto mode but binds nothing.
        self.assertEqual(restore.value("rdma_qp_stat_sets", device="rxe0", port="1"), 0)
        # The QP inventory matches the kernel's, attributed to the process.
        qps = json.loads(read("qp-res-qp.json"))
        server_pid = read("qp-server.pid").strip()
        ours = [q for q in qps if str(q.get("pid")) == server_pid]
        self.assertTrue(ours, "the pingpong server's QP is in the kernel's list")
        by_key = {}
        for q in qps:
            key = (str(q.get("port", "")), q["type"], q["state"], q.get("comm", ""))
            by_key[key] = by_key.get(key, 0) + 1
        for (port, qtype, state, comm), count in by_key.items():
            self.assertEqual(restore.value("rdma_qps", device="rxe0", port=port, qp_type=qtype,
                                           state=state, comm=comm), count, (port, qtype, state, comm))
        # Manual binding: auto mode taken over and turned off, then the bind
        # fails with ENOMEM on rxe, visibly.
        manual = Exposition(read("qp-manual.prom"))
        self.assertEqual(manual.value("rdma_qp_stat_writes_total", device="rxe0", port="1",
                                      operation="set_auto_off", result="ok"), 1)
        self.assertGreaterEqual(manual.value("rdma_qp_stat_writes_total", device="rxe0", port="1",
                                             operation="bind", result="ENOMEM"), 1)
        self.assertIn("ENOMEM", read("qp-manual.stderr") + read("qp-manual.prom"))

    def test_h_qp_inventory_of_a_pod(self):
        """The QP-holding server in a pod-shaped cgroup, the fake CRI and
        pod-resources servers answering for its container: its QPs are
        listed under its namespace, pod and container in the first
        collection, the kernel's other QPs under none, and rxe0 is the pod's."""
        r = self.results
        def read(name):
            with open(os.path.join(r, name)) as f:
                return f.read()
        self.assertEqual(read("qp-pods.rc").strip(), "0", read("qp-pods.stderr"))
        self.assertIn("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
                      "0f3c1a2b_4d5e_4f60_8a9b_0c1d2e3f4a5b.slice/cri-containerd-"
                      "5d1e0c4b2a39f8e7d6c5b4a3928170f6e5d4c3b2a1908f7e6d5c4b3a29180f7e.scope",
                      read("qp-pods-cgroup.txt"))
        prom = Exposition(read("qp-pods.prom"))
        server_pid = read("qp-server.pid").strip()
        pod = {"namespace": "rdma-jobs", "pod": "pingpong-0", "container": "server"}
        no_pod = {"namespace": "", "pod": "", "container": ""}
        by_key = {}
        for q in json.loads(read("qp-pods-qp.json")):
            labels = pod if str(q.get("pid")) == server_pid else no_pod
            key = (str(q.get("port", "")), q["type"], q["state"], q.get("comm", ""),
                   tuple(sorted(labels.items())))
            by_key[key] = by_key.get(key, 0) + 1
        self.assertTrue(any(dict(k[4]) == pod for k in by_key), "no QP of the server listed")
        for (port, qtype, state, comm, labels), count in by_key.items():
            self.assertEqual(prom.value("rdma_qps", device="rxe0", port=port, qp_type=qtype,
                                        state=state, comm=comm, **dict(labels)), count,
                             (port, qtype, state, comm, labels))
        self.assertEqual(prom.value("rdma_device_pod_info", device="rxe0",
                                    resource="example.com/rxe", device_id="rxe0", **pod), 1)
        for api in ("cri", "pod_resources"):
            self.assertEqual(prom.value("rdma_exporter_kubernetes_api_up", api=api), 1)

    def test_i_congestion_on_rxe_and_veth(self):
        """The ethtool, DCB and optional-counter paths on rxe over a veth:
        raw statistics equal ethtool -S, no DCB and no optional counters, and
        none of it is an error."""
        self.assertEqual(self.code("congestion.rc"), "0", self.text("congestion.stderr"))
        prom = self.prom("congestion.prom")
        for labels, value in prom.series("rdma_exporter_collector_success"):
            self.assertEqual(value, 1, f"collector {labels} failed")
        collectors = {l["collector"] for l, _ in prom.series("rdma_exporter_collector_success")}
        self.assertLessEqual({"optional_counters", "ethtool", "dcb"}, collectors)

        # ethtool: the driver is veth, every statistic is there raw and equals
        # ethtool -S (a quiet moment: before and after agree).
        self.assertIn("driver: veth", self.text("ethtool-i-veth0.txt"))
        before = parse_ethtool_s(self.text("ethtool-S-before.txt"))
        after = parse_ethtool_s(self.text("ethtool-S-after.txt"))
        self.assertTrue(before, "ethtool -S veth0 printed no statistics")
        self.assertEqual(before, after, "veth0 statistics moved around --once")
        raw = {l["name"]: v for l, v in prom.series("rdma_netdev_ethtool_stat", device="rxe0",
                                                    port="1", netdev="veth0")}
        self.assertEqual(raw, {k: float(v) for k, v in before.items()},
                         "rdma_netdev_ethtool_stat vs ethtool -S veth0")
        # Nothing of veth's maps to a per-priority metric, and it has no DCB.
        for name, labels, _ in prom.samples:
            if (name.startswith("rdma_netdev_") and name != "rdma_netdev_ethtool_stat"
                    and not name.startswith("rdma_netdev_carrier")):
                self.fail(f"veth0 has no mapping or DCB, yet {name}{labels} was exported")
        self.assertNotEqual(self.code("dcb-ets-veth0.rc"), "0",
                            "dcb(8) shows an ETS configuration on a veth")

        # rxe offers no optional counter: nothing reported, nothing written,
        # and the rule's counter is named once in the log.
        self.assertEqual(prom.series("rdma_port_optional_stat_enabled"), [])
        self.assertEqual(prom.series("rdma_port_optional_stat_writes_total"), [])
        stderr = self.text("congestion.stderr").splitlines()
        notes = [l for l in stderr if "offers no optional counter cc_rx_ce_pkts" in l]
        self.assertEqual(len(notes), 1, "\n".join(stderr))
        self.assertEqual([l for l in stderr if l not in notes], [], "other log lines")

        checked = dict(line.split() for line in self.text("promtool.txt").splitlines())
        self.assertEqual(checked.get("congestion.prom"), "0",
                         self.text("promtool-congestion.prom.out"))

    def test_j_link_flap_and_pci_parent(self):
        """veth0's carrier lost and regained between two --once runs: the
        link collector's counts grow by one each and equal the kernel's
        files; the pcie collector exports rxe0's parent exactly as sysfs
        has it; the transceiver collector finds no module on the veth."""
        def files(name):
            out = {}
            for line in self.text(name).splitlines():
                path, _, value = line.partition(":")
                out[os.path.basename(path)] = int(value)
            return out

        before, after = files("carrier-before.txt"), files("carrier-after.txt")
        self.assertEqual((before["carrier"], after["carrier"]), (1, 1))
        self.assertEqual(after["carrier_down_count"], before["carrier_down_count"] + 1)
        self.assertEqual(after["carrier_up_count"], before["carrier_up_count"] + 1)
        labels = {"device": "rxe0", "port": "1", "netdev": "veth0"}
        for name, kernel in (("link-before", before), ("link-after", after)):
            self.assertEqual(self.code(name + ".rc"), "0", self.text(name + ".stderr"))
            prom = self.prom(name + ".prom")
            self.assertEqual(prom.value("rdma_netdev_carrier", **labels), 1, name)
            self.assertEqual(prom.value("rdma_netdev_carrier_up_changes_total", **labels),
                             kernel["carrier_up_count"], name)
            self.assertEqual(prom.value("rdma_netdev_carrier_down_changes_total", **labels),
                             kernel["carrier_down_count"], name)
            self.assertEqual(prom.value("rdma_exporter_collector_success", collector="link"), 1)
            self.assertEqual(prom.value("rdma_exporter_collector_success", collector="pcie"), 1)

        prom = self.prom("link-after.prom")
        # ethtool netlink on a veth: the link is up (no reason to give) and
        # the driver has no FEC (EOPNOTSUPP, quiet).
        self.assertEqual(prom.value("rdma_exporter_ethtool_netlink_available"), 1)
        self.assertEqual(prom.series("rdma_netdev_link_ext_state_info"), [])
        self.assertEqual([n for n, _, _ in prom.samples if n.startswith("rdma_netdev_fec_")], [])
        # A veth has no module: the kernel checks the MODULE_EEPROM_GET
        # request (a malformed one is EINVAL, a failure) and answers
        # EOPNOTSUPP, and so does the legacy ioctl: no series, no failure.
        self.assertEqual(prom.value("rdma_exporter_collector_success", collector="transceiver"), 1)
        self.assertEqual([n for n, _, _ in prom.samples if n.startswith("rdma_transceiver_")], [])
        # Debian's ethtool, on the same kernel and veth, is refused alike.
        for what in ("module", "fec"):
            self.assertNotEqual(self.code(f"ethtool-{what}.rc"), "0", self.text(f"ethtool-{what}.txt"))
            self.assertIn("Operation not supported", self.text(f"ethtool-{what}.txt"), what)
        parent = dict(line.split(" ", 1) for line in self.text("rxe-parent.txt").splitlines())
        info = prom.series("rdma_device_pci_info")
        if parent["device"] == "none" or parent.get("subsystem") != "pci":
            self.assertEqual(info, [], f"rxe0's parent: {parent}")
        else:
            self.assertEqual([l["pci_address"] for l, _ in info],
                             [os.path.basename(parent["device"])], f"rxe0's parent: {parent}")
        checked = dict(line.split() for line in self.text("promtool.txt").splitlines())
        self.assertEqual(checked.get("link-after.prom"), "0",
                         self.text("promtool-link-after.prom.out"))


def parse_ethtool_s(text):
    """{name: value} from `ethtool -S` ("NIC statistics:" then "name: value")."""
    out = {}
    for line in text.splitlines()[1:]:
        name, _, value = line.strip().rpartition(":")
        out[name] = int(value)
    return out


if __name__ == "__main__":
    unittest.main()
