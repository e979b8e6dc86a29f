#!/usr/bin/python3
"""A UD prober written apart from the exporter, for vm.bed_ud: Python and
pyverbs (Debian's python3-pyverbs), the probe's control protocol and
datagram as docs/probe.md and collectors/probe/protocol.hpp describe them.

    ud_peer.py DEVICE GID_INDEX HOST PORT REMOTE_DEVICE COUNT

Makes a UD queue pair on port 1 of DEVICE, connects to the responder at
HOST:PORT, reads its hello, admits itself with a ud_setup for REMOTE_DEVICE
port 1 (no secret) and reads the ud_accept. Then:
  1. sends COUNT requests and counts the replies that match them;
  2. sends 5 datagrams with a wrong magic (no reply expected);
  3. closes the control connection, waits, and sends COUNT requests again
     (the responder must drop them: no longer admitted).
Prints one JSON object: replies while admitted, replies to the bad
datagrams, replies after the close, and the queue pair numbers."""
import json
import socket
import struct
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

SLOT = 40 + 1024  # GRH area and the largest datagram at MTU 1024
RECVS = 64
SIZE = 64
QKEY = 0x2345678
SESSION = 0x5151


def read_message(sock):
    header = b""
    while len(header) < 8:
        chunk = sock.recv(8 - len(header))
        if not chunk:
            raise ConnectionError("control connection closed")
        header += chunk
    if header[:3] != b"RXP" or header[3] != 2:
        raise ValueError(f"not a version 2 control message: {header!r}")
    length = struct.unpack(">H", header[6:8])[0]
    payload = b""
    while len(payload) < length:
        chunk = sock.recv(length - len(payload))
        if not chunk:
            raise ConnectionError("control connection closed")
        payload += chunk
    return header[4], payload


def name(text):
    data = text.encode()
    return bytes([len(data)]) + data


def datagram(seq, magic=b"RXU"):
    # magic, version 1, kind request, flags, path, tclass, session, seq,
    # responder delay, reserved; padded to SIZE.
    body = struct.pack(">3sBBBBBIQQI", magic, 1, 1, 0, 0, 0, SESSION, seq, 0, 0)
    return body + bytes(SIZE - len(body))


def main(device, gid_index, host, port, remote_device, count):
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
    kind, _ = read_message(sock)
    if kind != 1:
        raise ValueError(f"expected a hello, got type {kind}")
    setup = (struct.pack(">BIBBH", 4, SIZE, 0, 0, 1024)
             + struct.pack(">IIH", qp.qp_num, QKEY, 0) + gid
             + name(remote_device) + bytes([1]) + name("") + bytes(32))
    sock.sendall(b"RXP" + bytes([2, 6, 0]) + struct.pack(">H", len(setup)) + setup)
    kind, payload = read_message(sock)
    if kind != 7 or len(payload) != 26:
        raise ValueError(f"expected a ud_accept, got type {kind}: {payload!r}")
    rqpn, rqkey, _ = struct.unpack(">IIH", payload[:10])
    rgid = payload[10:26]
    text = ":".join(rgid[i:i + 2].hex() for i in range(0, 16, 2))
    route = GlobalRoute(dgid=GID(text), sgid_index=gid_index, hop_limit=64)
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
                    data = mr.read(SIZE, wc.wr_id * SLOT + 40)
                    magic, _, kind, _, _, _, session, seq = struct.unpack(">3sBBBBBIQ",
                                                                          data[:20])
                    if magic == b"RXU" and kind == 2 and session == SESSION and seq in wanted:
                        got.add(seq)
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
    time.sleep(2)  # the responder revokes the admission when the connection ends
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
    sys.exit(main(a[0], int(a[1]), a[2], int(a[3]), a[4], int(a[5])))
