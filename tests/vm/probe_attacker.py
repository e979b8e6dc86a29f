#!/usr/bin/python3
"""A hostile probe peer for vm.probe_security: Python and pyverbs (Debian's
python3-pyverbs), speaking the control protocol through probe_wire.py. No
secret: the exporter under test runs without one, as a compromised peer
holding the secret could do all of this too.

    probe_attacker.py DEVICE GID_INDEX HOST PORT REMOTE_DEVICE MODE [ARGS]

HOST:PORT is the exporter's responder; REMOTE_DEVICE its port's device.
MODE:
  rc-cross           two write sessions of its own; RDMA-writes into the
                     first session's buffer with its rkey (must work), then
                     into the second's with the second's rkey from the
                     first session's queue pair (must fail: remote access)
  fake-responder LISTEN SECONDS
                     a responder on 127.0.0.1:LISTEN (advertising the real
                     responder's ports) for the exporter's prober: sets up
                     the write session it asks for, then RDMA-writes into
                     the prober's buffer at the rkey and address its set-up
                     named (must fail)
  ud-poison COUNT    a victim queue pair admitted with its Q_Key; a second
                     session admits the victim's GID and QPN with a wrong
                     Q_Key; the victim sends COUNT requests and counts the
                     replies (all must come)
  ud-flood SECONDS   an admitted queue pair sends requests with every
                     traffic class and path, then floods with its own
                     traffic class as fast as it can for SECONDS
Prints one JSON object with what happened."""
import json
import os
import socket
import sys
import time

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

SIZE = 64
UD_SLOT = 40 + 1024
UD_DEPTH = 256
STATUS = {getattr(e, n): n for n in dir(e) if n.startswith("IBV_WC_") and n.endswith("_ERR")}
STATUS[e.IBV_WC_SUCCESS] = "IBV_WC_SUCCESS"


class Rdma:
    def __init__(self, device, gid_index):
        self.ctx = Context(name=device)
        self.pd = PD(self.ctx)
        self.gid_index = gid_index
        self.gid = bytes.fromhex(self.ctx.query_gid(1, gid_index).gid.replace(":", ""))

    def route(self, gid):
        return GlobalRoute(dgid=GID(w.gid_text(gid)), sgid_index=self.gid_index, hop_limit=64)


def connect(host, port):
    sock = socket.create_connection((host, port), timeout=10)
    kind, payload = w.read_message(sock)
    if kind != w.HELLO:
        raise ValueError(f"expected a hello, got type {kind}")
    return sock, w.decode_hello(payload)


class RcSession:
    """One RC queue pair of ours, with a buffer peers may write."""

    def __init__(self, rdma):
        self.rdma = rdma
        self.cq = CQ(rdma.ctx, 16)
        cap = QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=1, max_recv_sge=1)
        self.qp = QP(rdma.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq,
                                         cap=cap, sq_sig_all=1))
        self.mr = MR(rdma.pd, 4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
        self.psn = int.from_bytes(os.urandom(3), "big")

    def local(self, remote_access=True):
        return w.encode_peer(self.qp.qp_num, self.psn, 0, self.rdma.gid,
                             self.mr.rkey if remote_access else 0,
                             self.mr.buf if remote_access else 0)

    def connect(self, remote):
        attr = QPAttr()
        attr.qp_state = e.IBV_QPS_INIT
        attr.pkey_index = 0
        attr.port_num = 1
        attr.qp_access_flags = e.IBV_ACCESS_REMOTE_WRITE
        self.qp.modify(attr, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT
                       | e.IBV_QP_ACCESS_FLAGS)
        attr = QPAttr()
        attr.qp_state = e.IBV_QPS_RTR
        attr.path_mtu = e.IBV_MTU_1024
        attr.dest_qp_num = remote["qpn"]
        attr.rq_psn = remote["psn"]
        attr.max_dest_rd_atomic = 1
        attr.min_rnr_timer = 12
        attr.ah_attr = AHAttr(0, 0, 0, 0, 1, 1, self.rdma.route(remote["gid"]))
        self.qp.modify(attr, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU
                       | e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC
                       | e.IBV_QP_MIN_RNR_TIMER)
        attr = QPAttr()
        attr.qp_state = e.IBV_QPS_RTS
        attr.timeout = 14
        attr.retry_cnt = 7
        attr.rnr_retry = 7
        attr.sq_psn = self.psn
        attr.max_rd_atomic = 1
        self.qp.modify(attr, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT
                       | e.IBV_QP_RNR_RETRY | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)

    def write(self, rkey, addr, timeout=10):
        """An RDMA write of SIZE bytes to (rkey, addr): its completion status."""
        wr = SendWR(opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                    sg=[SGE(self.mr.buf, SIZE, self.mr.lkey)])
        wr.set_wr_rdma(rkey, addr)
        self.qp.post_send(wr)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            n, wcs = self.cq.poll(num_entries=1)
            if n:
                return STATUS.get(wcs[0].status, str(wcs[0].status))
            time.sleep(0.001)
        return "no completion"


def rc_cross(rdma, host, port, remote_device):
    sessions = []
    for _ in range(2):
        sock, _ = connect(host, port)
        s = RcSession(rdma)
        sock.sendall(w.message(w.SETUP, w.encode_setup(
            w.OP_WRITE, SIZE, s.local(), remote_device, dialled=w.dialled_of(sock))))
        kind, payload = w.read_message(sock)
        if kind != w.ACCEPT:
            raise ValueError(f"expected an accept, got {kind}: {w.decode_reject(payload)}")
        remote = w.decode_accept(payload)
        s.connect(remote)
        sessions.append((sock, s, remote))
    (_, first, mine), (_, _, other) = sessions
    own = first.write(mine["rkey"], mine["addr"])
    cross = first.write(other["rkey"], other["addr"])
    for sock, _, _ in sessions:
        sock.close()
    return {"own": own, "other_session": cross, "rkeys": [mine["rkey"], other["rkey"]]}


def fake_responder(rdma, host, port, listen, seconds):
    # The real responder's ports, so that the prober's rail and port match.
    sock, hello = connect(host, port)
    sock.close()
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", listen))
    server.listen(16)
    server.settimeout(1)
    deadline = time.monotonic() + seconds
    held = []
    while time.monotonic() < deadline:
        try:
            conn, _ = server.accept()
        except socket.timeout:
            continue
        conn.settimeout(5)
        conn.sendall(w.message(w.HELLO, w.encode_hello(os.urandom(16), 0, hello["ports"])))
        try:
            kind, payload = w.read_message(conn)
        except (ConnectionError, OSError, ValueError):
            conn.close()  # a discovery: it read the hello and left
            continue
        if kind != w.SETUP:
            conn.close()
            continue
        setup = w.decode_setup(payload)
        s = RcSession(rdma)
        s.connect(setup["peer"])
        conn.sendall(w.message(w.ACCEPT, w.encode_accept(s.local())))
        held.append(conn)
        time.sleep(1)  # the prober moves its queue pair to RTS and probes
        status = s.write(setup["peer"]["rkey"], setup["peer"]["addr"])
        for c in held:
            c.close()
        server.close()
        return {"op": setup["op"], "prober_rkey": setup["peer"]["rkey"],
                "prober_addr": setup["peer"]["addr"], "status": status}
    server.close()
    return {"status": "no set-up arrived"}


class UdPeer:
    def __init__(self, rdma, qkey):
        self.rdma = rdma
        self.qkey = qkey
        self.cq = CQ(rdma.ctx, 2 * UD_DEPTH)
        cap = QPCap(max_send_wr=UD_DEPTH, max_recv_wr=UD_DEPTH, max_send_sge=1, max_recv_sge=1)
        self.qp = QP(rdma.pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=self.cq, rcq=self.cq,
                                         cap=cap, sq_sig_all=1))
        attr = QPAttr()
        attr.qkey = qkey
        attr.port_num = 1
        attr.pkey_index = 0
        self.qp.to_rts(attr)
        self.mr = MR(rdma.pd, UD_SLOT * UD_DEPTH + SIZE * UD_DEPTH, e.IBV_ACCESS_LOCAL_WRITE)
        for i in range(UD_DEPTH):
            self.post_recv(i)
        self.outstanding = 0
        self.sent = 0
        self.replies = set()
        self.reply_count = 0
        self.ah = None
        self.remote = None

    def post_recv(self, i):
        self.qp.post_recv(RecvWR(wr_id=i, num_sge=1,
                                 sg=[SGE(self.mr.buf + i * UD_SLOT, UD_SLOT, self.mr.lkey)]))

    def admit(self, host, port, remote_device, qpn=None, gid=None, qkey=None, interval_ms=1000):
        """A ud_setup for a class that sends every INTERVAL_MS (for another
        queue pair when QPN, GID, QKEY are given); returns the open control
        connection."""
        sock, _ = connect(host, port)
        sock.sendall(w.message(w.UD_SETUP, w.encode_ud_setup(
            SIZE, qpn or self.qp.qp_num, self.qkey if qkey is None else qkey, 0,
            gid or self.rdma.gid, remote_device, dialled=w.dialled_of(sock),
            interval_ms=interval_ms)))
        kind, payload = w.read_message(sock)
        if kind != w.UD_ACCEPT:
            raise ValueError(f"expected a ud_accept, got {kind}: {w.decode_reject(payload)}")
        self.remote = w.decode_ud_accept(payload)
        self.ah = AH(self.rdma.pd, attr=AHAttr(0, 0, 0, 0, 1, 1,
                                               self.rdma.route(self.remote["gid"])))
        return sock

    def poll(self):
        n, wcs = self.cq.poll(num_entries=32)
        for wc in wcs[:n]:
            if wc.opcode & e.IBV_WC_RECV:
                if wc.status == e.IBV_WC_SUCCESS:
                    d = w.decode_datagram(self.mr.read(SIZE, wc.wr_id * UD_SLOT + 40))
                    if d and d["kind"] == w.REPLY:
                        self.replies.add(d["seq"])
                        self.reply_count += 1
                self.post_recv(wc.wr_id)
            else:
                self.outstanding -= 1
        return n

    def send(self, seq, tclass=0, path=0, session=0x5151):
        while self.outstanding >= UD_DEPTH - 8:
            self.poll()
        slot = seq % UD_DEPTH
        offset = UD_SLOT * UD_DEPTH + slot * SIZE
        self.mr.write(w.datagram(seq, session, SIZE, path=path, tclass=tclass), SIZE, offset)
        wr = SendWR(opcode=e.IBV_WR_SEND, num_sge=1,
                    sg=[SGE(self.mr.buf + offset, SIZE, self.mr.lkey)])
        wr.set_wr_ud(self.ah, self.remote["qpn"], self.remote["qkey"])
        self.qp.post_send(wr)
        self.outstanding += 1
        self.sent += 1

    def settle(self, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not self.poll():
                time.sleep(0.001)


def ud_poison(rdma, host, port, remote_device, count):
    victim = UdPeer(rdma, 0x2345678)
    victim_sock = victim.admit(host, port, remote_device, interval_ms=20)
    # Another session names the victim's queue pair with a wrong Q_Key.
    poisoner = UdPeer(rdma, 0x0badbad)
    poison_sock = poisoner.admit(host, port, remote_device, qpn=victim.qp.qp_num,
                                 gid=rdma.gid, qkey=0x0badbad)
    for seq in range(1, count + 1):
        victim.send(seq)
        victim.settle(0.02)
    victim.settle(2)
    answered = len([s for s in victim.replies if 1 <= s <= count])
    victim_sock.close()
    poison_sock.close()
    return {"sent": count, "answered": answered, "victim_qpn": victim.qp.qp_num}


FLOOD_INTERVAL_MS = 100


def ud_flood(rdma, host, port, remote_device, seconds):
    # A class of ten probes a second: answered at up to twenty.
    peer = UdPeer(rdma, 0x3456789)
    sock = peer.admit(host, port, remote_device, interval_ms=FLOOD_INTERVAL_MS)
    # Every traffic class and path a sender could name: 4,096 requests.
    seq = 0
    for i in range(4096):
        seq += 1
        peer.send(seq, tclass=i & 0xff, path=(i * 7 + (i >> 8)) & 0xff)
    peer.settle(2)
    rotating_replies = peer.reply_count
    # A flood with the admitted traffic class, paths the class may have.
    start = time.monotonic()
    flood_first = seq + 1
    while time.monotonic() - start < seconds:
        seq += 1
        peer.send(seq, path=seq % 16)
        if seq % 64 == 0:
            peer.poll()
    elapsed = time.monotonic() - start
    peer.settle(2)
    flood_replies = len([s for s in peer.replies if s >= flood_first])
    sock.close()
    return {"rotating_sent": 4096, "rotating_replies": rotating_replies,
            "flood_sent": seq - flood_first + 1, "flood_seconds": elapsed,
            "flood_replies": flood_replies}


def main(argv):
    device, gid_index, host, port, remote_device, mode = argv[:6]
    rdma = Rdma(device, int(gid_index))
    port = int(port)
    if mode == "rc-cross":
        out = rc_cross(rdma, host, port, remote_device)
    elif mode == "fake-responder":
        out = fake_responder(rdma, host, port, int(argv[6]), float(argv[7]))
    elif mode == "ud-poison":
        out = ud_poison(rdma, host, port, remote_device, int(argv[6]))
    elif mode == "ud-flood":
        out = ud_flood(rdma, host, port, remote_device, float(argv[6]))
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
