"""vm.bed: the multi-VM, two-rail bed is real (tests/vm/bed.py).

Three VMs (1 vCPU each) on two rails (l2hub.py segments), Soft-RoCE rxe0 on
rail 0 and rxe1 on rail 1 in every VM. The tests check, with what the guests'
kernels and tools report:
- every VM's ready announcement matches its kernel (addresses, MACs, rxe
  devices on the right NICs, ACTIVE ports, the GIDs in sysfs);
- every VM pings every other one on both rails, and its neighbour table
  holds the other VMs' MACs (ARP across the hub); asked on one rail, no VM
  answers for an address of the other rail (separate segments);
- perftest's ib_write_lat runs between vm0 and vm1 on rail 0 and between
  vm0 and vm2 on rail 1, each side in its own VM, with the other VM's GID as
  the remote address; both ends' rxe hw_counters (sent_pkts, rcvd_pkts) on
  that rail grow by at least the iteration count while the other rail's
  devices, and the VM left out, stay (nearly) still;
- every VM powers off cleanly.
The latencies (typical, p99), counter deltas and timings are printed and kept
in the bed's directory (bed-results.json) when RDMA_VM_KEEP=1 or a test fails.
"""
import ipaddress
import json
import math
import re
import sys
import unittest

from bed import BedTestCase

ITERS = 1000
# Far less than the pair's traffic: what the device of the other rail, or a
# VM outside the pair, may count meanwhile (expected: nothing at all).
STRAY_PKTS = ITERS // 10
PORT = 18516
PERFTEST_ATTEMPTS = 3
READY_TIMEOUT = 300
# (rail, server VM, client VM, VM left out)
PAIRS = ((0, "vm1", "vm0", "vm2"), (1, "vm2", "vm0", "vm1"))
RACKS = ("rack1", "rack1", "rack2")
COUNTERS = ("sent_pkts", "rcvd_pkts")

READ_COUNTERS = r"""
for d in /sys/class/infiniband/*; do
	for c in sent_pkts rcvd_pkts; do
		read -r v <"$d/ports/1/hw_counters/$c"
		echo "${d##*/} $c $v"
	done
done
"""


def mapped_gid(address):
    """The IPv4-mapped GID of ADDRESS as sysfs prints it."""
    packed = ipaddress.IPv6Address(f"::ffff:{address}").packed
    return ":".join(packed[i:i + 2].hex() for i in range(0, 16, 2))


def perftest_gid_ipv4(text, which):
    """The IPv4 address in the GID perftest prints below its "local address"
    or "remote address" line (16 decimal bytes, the last four the
    IPv4-mapped address)."""
    m = re.search(rf"{which} address:[^\n]*\n\s*GID:\s*([0-9:]+)", text)
    if not m:
        raise AssertionError(f"no {which} address line in perftest's output")
    octets = [int(x) for x in m.group(1).strip(":").split(":")]
    if len(octets) != 16:
        raise AssertionError(f"unexpected GID in perftest's output: {m.group(1)}")
    return ".".join(str(o) for o in octets[12:])


def perftest_row(text):
    """(#bytes, #iterations, t_typical, p99) in microseconds from the result
    row of ib_write_lat's latency table."""
    header = None
    for line in text.splitlines():
        if "t_typical" in line:
            header = line
            continue
        fields = line.split()
        if header and len(fields) >= 8 and fields[0].isdigit() and fields[1].isdigit():
            # #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
            return int(fields[0]), int(fields[1]), float(fields[4]), float(fields[7])
    raise AssertionError("no result row in ib_write_lat's output")


class BedTest(BedTestCase):
    BED = {"vms": 3, "rails": 2, "racks": RACKS}
    READY_TIMEOUT = READY_TIMEOUT

    @classmethod
    def set_up_bed(cls):
        cls.record["pairs"] = {}

    # ------------------------------------------------------------ helpers

    def counters(self):
        """{(vm, device, counter): value} read from every guest's sysfs."""
        out = {}
        for vm, res in self.bed.run_all(READ_COUNTERS, timeout=60).items():
            self.assertEqual(res.rc, 0, res.describe())
            for line in res.out.splitlines():
                device, name, value = line.split()
                out[(vm, device, name)] = int(value)
        return out

    def write_lat(self, rail, server, client, port):
        """ib_write_lat between two VMs on RAIL: (server Result, client Result)."""
        bed = self.bed
        common = (f"ib_write_lat -d rxe{rail} -i 1 -n {ITERS} -F -p {port}")
        srv = bed.spawn(server, f"exec {common} -x "
                        f"{self.ready[server]['rails'][rail]['gid_index']}", timeout=180)
        listening = bed.run(server, f"wait_listen {port} 90", timeout=100)
        if listening.rc != 0:
            srv.kill()
            self.fail(f"the ib_write_lat server in {server} did not listen:\n"
                      + srv.wait(30).describe())
        cli = bed.run(client, f"{common} -x {self.ready[client]['rails'][rail]['gid_index']} "
                      f"{bed.ip(server, rail)}", timeout=180)
        if cli.rc != 0:
            srv.kill()
        return srv.wait(60), cli

    # ------------------------------------------------------------ tests

    def test_a_ready_matches_the_kernels(self):
        bed = self.bed
        self.assertEqual(sorted(self.ready), ["vm0", "vm1", "vm2"])
        script = ("ip -j addr show; echo '----'; rdma -j link show; echo '----'; "
                  "for r in 0 1; do read -r s </sys/class/infiniband/rxe$r/ports/1/state; "
                  "echo \"rxe$r $s\"; done")
        answers = bed.run_all(script, timeout=60)
        for i, vm in enumerate(bed.names):
            ready = self.ready[vm]
            self.assertEqual((ready["vm"], ready["index"], ready["rack"]), (vm, i, RACKS[i]))
            self.assertEqual(len(ready["rails"]), 2)
            res = answers[vm]
            self.assertEqual(res.rc, 0, res.describe())
            addr_json, link_json, states = res.out.split("----\n")
            addrs = {a["ifname"]: a for a in json.loads(addr_json)}
            links = {link["ifname"]: link for link in json.loads(link_json)}
            for r, rail in enumerate(ready["rails"]):
                want_ip = f"192.168.{100 + r}.{i + 1}"
                self.assertEqual((rail["rail"], rail["if"], rail["ip"], rail["rxe"]),
                                 (r, f"rail{r}", want_ip, f"rxe{r}"), f"{vm} rail {r}")
                self.assertEqual(rail["mac"], f"52:54:00:be:0{r}:0{i + 1}")
                nic = addrs.get(f"rail{r}")
                self.assertIsNotNone(nic, f"{vm}: no NIC rail{r} in ip addr")
                self.assertEqual(nic["address"], rail["mac"], f"{vm} rail{r} MAC")
                self.assertIn("UP", nic["flags"])
                self.assertIn((want_ip, 24), [(a["local"], a["prefixlen"])
                                              for a in nic["addr_info"]
                                              if a["family"] == "inet"])
                link = links.get(f"rxe{r}")
                self.assertIsNotNone(link, f"{vm}: rdma link shows no rxe{r}")
                self.assertEqual(link.get("netdev"), f"rail{r}", f"{vm} rxe{r} netdev")
                self.assertEqual(link.get("state"), "ACTIVE", f"{vm} rxe{r}")
                self.assertIn(f"rxe{r} 4: ACTIVE", states)
                self.assertEqual(rail["gid"], mapped_gid(want_ip), f"{vm} rail{r} GID")
                gid = bed.run(vm, "cat /sys/class/infiniband/rxe%d/ports/1/gids/%d "
                              "/sys/class/infiniband/rxe%d/ports/1/gid_attrs/types/%d"
                              % (r, rail["gid_index"], r, rail["gid_index"]), timeout=30)
                self.assertEqual(gid.out.split("\n")[:2], [mapped_gid(want_ip), "RoCE v2"],
                                 gid.describe())
            # The user-mode NIC keeps its usual place and address.
            self.assertIn(("10.0.2.15", 24), [(a["local"], a["prefixlen"])
                                              for a in addrs["eth0"]["addr_info"]
                                              if a["family"] == "inet"])

    def test_b_every_vm_pings_every_other_on_both_rails(self):
        bed = self.bed
        cmds = []
        for vm in bed.names:
            for r in range(bed.rails):
                for other in bed.names:
                    if other != vm:
                        cmds.append((vm, r, other, bed.spawn(
                            vm, f"ping -n -c 3 -i 0.2 -W 5 -I rail{r} {bed.ip(other, r)}",
                            timeout=60)))
        for vm, r, other, cmd in cmds:
            res = cmd.wait(75)
            self.assertEqual(res.rc, 0, f"{vm} -> {other} on rail {r}: " + res.describe())
            self.assertRegex(res.out, r"\b3 packets transmitted, 3 received\b",
                             f"{vm} -> {other} rail {r}")
            self.assertRegex(res.out, rf"bytes from {re.escape(bed.ip(other, r))}:")
        # The rails are separate segments: asked on one rail, nobody answers
        # for an address of the other rail.
        cmds = []
        for vm in bed.names:
            for r in range(bed.rails):
                other = bed.names[(bed.names.index(vm) + 1) % len(bed.names)]
                cmds.append((vm, r, other, bed.spawn(
                    vm, f"arping -c 2 -w 3 -I rail{r} {bed.ip(other, 1 - r)}", timeout=30)))
        for vm, r, other, cmd in cmds:
            res = cmd.wait(45)
            self.assertRegex(res.out, r"Received 0 response",
                             f"{vm}: rail{r} reaches {other}'s rail{1 - r} address: "
                             + res.describe())
            self.assertNotEqual(res.rc, 0, res.describe())
        # ARP went across the hubs: each VM knows the others' MACs per rail.
        for vm, res in bed.run_all("ip -j neigh show", timeout=30).items():
            self.assertEqual(res.rc, 0, res.describe())
            neigh = {(n["dst"], n["dev"]): n.get("lladdr") for n in json.loads(res.out)}
            for r in range(bed.rails):
                for other in bed.names:
                    if other != vm:
                        self.assertEqual(neigh.get((bed.ip(other, r), f"rail{r}")),
                                         bed.mac(other, r), f"{vm}: neighbour {other} rail{r}")

    def pair_test(self, rail, server, client, outsider):
        bed = self.bed
        port = PORT + 10 * rail
        before = self.counters()
        for attempt in range(1, PERFTEST_ATTEMPTS + 1):
            srv, cli = self.write_lat(rail, server, client, port + attempt)
            self.assertEqual(cli.rc, 0, f"rail {rail} client in {client}: " + cli.describe())
            self.assertEqual(srv.rc, 0, f"rail {rail} server in {server}: " + srv.describe())
            size, iters, typical, p99 = perftest_row(cli.out)
            # Under emulation perftest sometimes fails to measure the clock
            # and prints inf or nan: measure again.
            if math.isfinite(typical) and math.isfinite(p99):
                break
            print(f"\nrail {rail}: ib_write_lat printed no numbers (attempt {attempt})",
                  file=sys.stderr)
        after = self.counters()

        # The client reached the server's GID on this rail, in the other VM.
        self.assertEqual(perftest_gid_ipv4(cli.out, "local"), bed.ip(client, rail))
        self.assertEqual(perftest_gid_ipv4(cli.out, "remote"), bed.ip(server, rail))
        self.assertEqual(perftest_gid_ipv4(srv.out, "local"), bed.ip(server, rail))
        self.assertEqual(perftest_gid_ipv4(srv.out, "remote"), bed.ip(client, rail))
        self.assertEqual(iters, ITERS)
        self.assertTrue(math.isfinite(typical) and typical > 0, f"t_typical {typical}")
        self.assertTrue(math.isfinite(p99) and p99 >= typical, f"p99 {p99} < typical {typical}")

        delta = {k: after[k] - before[k] for k in before}
        other = 1 - rail
        for vm in (server, client):
            for name in COUNTERS:
                self.assertGreaterEqual(delta[(vm, f"rxe{rail}", name)], ITERS,
                                        f"{vm} rxe{rail} {name} grew too little: {delta}")
                self.assertLess(delta[(vm, f"rxe{other}", name)], STRAY_PKTS,
                                f"{vm} rxe{other} {name} carried rail {rail}'s traffic")
        for device in ("rxe0", "rxe1"):
            for name in COUNTERS:
                self.assertLess(delta[(outsider, device, name)], STRAY_PKTS,
                                f"{outsider} {device} {name} moved though it is not in the pair")
        self.record["pairs"][f"rail{rail}"] = {
            "server": server, "client": client, "bytes": size, "iterations": iters,
            "t_typical_us": typical, "p99_us": p99, "attempts": attempt,
            "counter_deltas": {f"{vm} {dev} {name}": v for (vm, dev, name), v
                               in sorted(delta.items())}}

    def test_c_write_lat_vm0_vm1_on_rail0(self):
        self.pair_test(*PAIRS[0])

    def test_d_write_lat_vm0_vm2_on_rail1(self):
        self.pair_test(*PAIRS[1])

    def test_e_every_vm_stops_cleanly(self):
        codes = self.bed.stop()
        self.assertEqual(codes, {"vm0": 0, "vm1": 0, "vm2": 0}, self.bed.evidence())
        for r in range(self.bed.rails):
            stats = self.bed.hub_stats(r)
            self.assertIsNotNone(stats, f"hub of rail {r} wrote no statistics")
            # One NIC per VM on each rail (a VM booted again keeps its
            # socket). Counted as joined: a VM that has already exited when
            # the hub forwards a last broadcast to it is dropped from
            # "clients" as gone, which is the hub doing its job.
            self.assertEqual(stats["clients_joined"], 3, f"rail {r}: {stats}")
            self.record.setdefault("hubs", {})[f"rail{r}"] = {
                k: stats[k] for k in ("received", "forwarded", "dropped_full", "dropped_gone")}


if __name__ == "__main__":
    unittest.main()
