#!/usr/bin/python3
"""A UD prober written apart from the exporter, for vm.bed_ud: Python and
pyverbs (Debian's python3-pyverbs), the probe's control protocol and
datagram through probe_wire.py (which must be staged next to it).

    ud_peer.py DEVICE GID_INDEX HOST PORT REMOTE_DEVICE COUNT METRICS

Makes a UD queue pair on port 1 of DEVICE, connects to the responder at
HOST:PORT, reads its hello, admits itself with a ud_setup for REMOTE_DEVICE
port 1 (no secret) and reads the ud_accept. Then:
  1. sends COUNT requests and counts the replies that match them;
  2. sends 5 datagrams with a wrong magic (no reply expected);
  3. closes the control connection, waits until the responder's exporter
     (its /metrics at METRICS, host:port) admits no more UD peers on
     REMOTE_DEVICE than before the set-up, and sends COUNT requests again
     (the responder must drop them: no longer admitted).
Prints one JSON object: replies while admitted, replies to the bad
datagrams, replies after the close, and the queue pair numbers."""
import json
import os
import socket
import sys
import time
import urllib.request

import pyverbs.enums as e
from pyverbs.addr import AH, AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import probe_wire as w  # noqa: E402

SLOT = 40 + 1024  # GRH area and the largest datagram at MTU 1024
RECVS = 64
SIZE = 64
QKEY = 0x2345678
SESSION = 0x5151


def datagram(seq, magic=b"RXU"):
    return w.datagram(seq, SESSION, SIZE, magic=magic)


def ud_peers(metrics, device):
    """rdma_probe_ud_peers of DEVICE in the exporter's /metrics at METRICS,
    both scopes."""
    with urllib.request.urlopen(f"http://{metrics}/metrics", timeout=10) as resp:
        found = [float(line.rsplit(" ", 1)[1]) for line in resp.read().decode().splitlines()
                 if line.startswith("rdma_probe_ud_peers{") and f'device="{device}"' in line]
    if not found:
        raise ValueError(f"no rdma_probe_ud_peers for {device} at {metrics}")
    return sum(found)


def main(device, gid_index, host, port, remote_device, count, metrics):
    peers_before = ud_peers(metrics, remote_device)
    ctx = Context(name=device)
    pd = PD(ctx)
    cq = CQ(ctx, 2 * RECVS)
    cap = QPCap(max_send_wr=RECVS, max_recv_wr=RECVS, max_send_sge=1, max_recv_sge=1)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq, cap=cap, sq_sig_all=1))
    attr = QPAttr()
    attr.qkey = QKEY
    attr.port_num = 1
    attr.pkey_index = 0
    qp.to_rts(attr)
    mr = MR(pd, SLOT * RECVS + SIZE * RECVS, e.IBV_ACCESS_LOCAL_WRITE)
    for i in range(RECVS):
        qp.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[SGE(mr.buf + i * SLOT, SLOT, mr.lkey)]))
    gid = bytes.fromhex(ctx.query_gid(1, gid_index).gid.replace(":", ""))

    sock = socket.create_connection((host, port), timeout=10)
    kind, _ = w.read_message(sock)
    if kind != w.HELLO:
        raise ValueError(f"expected a hello, got type {kind}")
    # The prober's nonce, the address dialled and an all-zero MAC: no secret.
    # Its class sends a request every 20 ms.
    setup = w.encode_ud_setup(SIZE, qp.qp_num, QKEY, 0, gid, remote_device,
                              dialled=w.dialled_of(sock), interval_ms=20)
    sock.sendall(w.message(w.UD_SETUP, setup))
    kind, payload = w.read_message(sock)
    if kind != w.UD_ACCEPT:
        raise ValueError(f"expected a ud_accept, got type {kind}: {payload!r}")
    accept = w.decode_ud_accept(payload)
    rqpn, rqkey = accept["qpn"], accept["qkey"]
    route = GlobalRoute(dgid=GID(w.gid_text(accept["gid"])), sgid_index=gid_index, hop_limit=64)
    ah = AH(pd, attr=AHAttr(0, 0, 0, 0, 1, 1, route))

    def send(seq, magic=b"RXU"):
        slot = seq % RECVS
        addr = mr.buf + SLOT * RECVS + slot * SIZE
        mr.write(datagram(seq, magic), SIZE, SLOT * RECVS + slot * SIZE)
        wr = SendWR(opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(addr, SIZE, mr.lkey)])
        wr.set_wr_ud(ah, rqpn, rqkey)
        qp.post_send(wr)

    def replies(seconds, wanted):
        """Replies to the sequence numbers in WANTED within SECONDS."""
        got = set()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            n, wcs = cq.poll(num_entries=16)
            for wc in wcs[:n]:
                if wc.opcode & e.IBV_WC_RECV and wc.status == e.IBV_WC_SUCCESS:
                    d = w.decode_datagram(mr.read(SIZE, wc.wr_id * SLOT + 40))
                    if d and d["kind"] == w.REPLY and d["session"] == SESSION and \
                            d["seq"] in wanted:
                        got.add(d["seq"])
                    qp.post_recv(RecvWR(wr_id=wc.wr_id, num_sge=1,
                                        sg=[SGE(mr.buf + wc.wr_id * SLOT, SLOT, mr.lkey)]))
            time.sleep(0.001)
        return len(got)

    admitted = set()
    for seq in range(1, count + 1):
        send(seq)
        admitted.add(seq)
        time.sleep(0.02)
    answered = replies(3, admitted)
    bad = set(range(1001, 1006))
    for seq in bad:
        send(seq, magic=b"XXX")
    answered_bad = replies(2, bad)
    sock.close()
    # The responder revokes the admission when it sees the connection end.
    deadline = time.monotonic() + 60
    while ud_peers(metrics, remote_device) > peers_before:
        if time.monotonic() > deadline:
            raise TimeoutError("the responder still admits this peer 60 s after the close")
        time.sleep(0.1)
    after = set(range(2001, 2001 + count))
    for seq in after:
        send(seq)
        time.sleep(0.02)
    answered_after = replies(3, after)
    print(json.dumps({"sent": count, "answered": answered, "bad_sent": len(bad),
                      "answered_bad": answered_bad, "answered_after_close": answered_after,
                      "qpn": qp.qp_num, "responder_qpn": rqpn}))
    return 0


if __name__ == "__main__":
    a = sys.argv[1:]
    sys.exit(main(a[0], int(a[1]), a[2], int(a[3]), a[4], int(a[5]), a[6]))
