"""What a hostile peer can reach through the probe's verbs resources, on a
real kernel: Soft-RoCE in the test-bed VM.

probe-security.sh (run once in the VM through vmrun.py) starts one exporter
and runs probe_attacker.py, a pyverbs peer speaking the control protocol
through probe_wire.py, against it. The tests read what it recorded.

Environment: see vmrun.py.
"""
import json
import sys
import unittest

from vmrun import BIN, VmTestCase

# A remote error for an RDMA write: rxe answers a write to memory of another
# protection domain with an access error, and a write to a queue pair that
# accepts no remote writes with an invalid-request error.
REMOTE_ERRORS = ("IBV_WC_REM_ACCESS_ERR", "IBV_WC_REM_INV_REQ_ERR")


class ProbeSecurityTest(VmTestCase):
    GUEST_SCRIPT = "probe-security.sh"
    GUEST_FILES = ("rxe-up", "guest-lib.sh", "probe_wire.py", "probe_attacker.py")
    BINARIES = {"rdma_exporter": BIN}
    VM_TIMEOUT = 420
    LOGS = ("a.log", "rc-cross.err", "fake-responder.err", "ud-poison.err", "ud-flood.err")

    def result(self, name):
        try:
            return json.loads(self.text(name + ".json"))
        except (OSError, ValueError):
            self.fail(f"{name}: no result; stderr: {self.text(name + '.err')[-2000:]}")

    def test_a_another_sessions_rkey_reaches_nothing(self):
        r = self.result("rc-cross")
        self.assertEqual(r["own"], "IBV_WC_SUCCESS", r)
        self.assertEqual(r["other_session"], "IBV_WC_REM_ACCESS_ERR", r)

    def test_b_a_probers_buffer_is_not_remotely_writable(self):
        r = self.result("fake-responder")
        self.assertEqual(r.get("op"), 2, r)  # the prober asked for a write session
        # Its set-up names no rkey or address, and a write there fails anyway.
        self.assertEqual((r["prober_rkey"], r["prober_addr"]), (0, 0), r)
        self.assertIn(r["status"], REMOTE_ERRORS, r)

    def test_c_a_poisoned_admission_leaves_the_victims_replies(self):
        r = self.result("ud-poison")
        # UD under emulation may lose a datagram now and then; the poisoned
        # Q_Key would lose them all.
        self.assertGreaterEqual(r["answered"], r["sent"] - 2, r)

    def test_d_a_ud_flood_is_bounded(self):
        r = self.result("ud-flood")
        before, after = self.prom("before-flood.prom"), self.prom("after-flood.prom")

        def delta(name, **labels):
            return (after.value(name, device="rxe0", **labels) or 0) - (
                before.value(name, device="rxe0", **labels) or 0)

        answered = delta("rdma_probe_ud_answered_total")
        not_admitted = delta("rdma_probe_ud_dropped_total", reason="not_admitted")
        malformed = delta("rdma_probe_ud_dropped_total", reason="malformed")
        limited = delta("rdma_probe_ud_dropped_total", reason="rate_limited")
        handles = after.value("rdma_probe_ud_address_handles", device="rxe0")
        ticks = [float(x) for x in self.text("flood-cpu.txt").split()]
        cpu = (ticks[1] - ticks[0]) / ticks[2]
        print(f"\nUD flood: {r}; answered {answered:.0f}, not_admitted {not_admitted:.0f}, "
              f"malformed {malformed:.0f}, rate_limited {limited:.0f}, address handles "
              f"{handles}, exporter CPU {cpu:.2f}s", file=sys.stderr)
        # Rotating traffic class and path: only the admitted traffic class and
        # the paths a class can have are answered, each with an address handle.
        answerable = 16 * 16 + 32
        self.assertLessEqual(r["rotating_replies"], answerable, r)
        # Every other request of the rotation is dropped and counted (rxe may
        # lose some under emulation, as in the flood below).
        self.assertGreater(not_admitted + malformed,
                           (r["rotating_sent"] - answerable) / 2, r)
        self.assertIsNotNone(handles)
        # One destination (the attacker's GID): at most
        # UdPort::kMaxAddressHandlesPerDestination handles.
        self.assertLessEqual(handles, 64)
        # The flood: its class sends ten a second, so at most twenty a
        # second and a burst of 32 are answered, the rest dropped and
        # counted, and the exporter keeps answering within that.
        seconds = r["flood_seconds"] + 4  # the settling after each phase
        self.assertLessEqual(answered, 20 * seconds + 32, r)
        self.assertGreater(r["flood_sent"], 20 * seconds + 32, r)
        # Most of the rest are counted as rate_limited (rxe may lose some
        # under emulation before they reach the queue pair).
        self.assertGreater(limited, (r["flood_sent"] - 20 * seconds - 32) / 2, r)
        self.assertGreater(r["flood_replies"], 0, r)

    def test_e_the_exporter_survives_and_says_so(self):
        self.assertEqual(self.code("a.rc"), "0")
        log = self.text("a.log")
        self.assertNotIn("level=error", log)
        end = self.prom("end.prom")
        peers = end.series("rdma_probe_ud_peers", device="rxe0")
        self.assertEqual(sorted(l["scope"] for l, _ in peers), ["group", "remote"])
        self.assertEqual(sum(v for _, v in peers), 0)


if __name__ == "__main__":
    unittest.main()
