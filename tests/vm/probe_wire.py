"""The probe's control protocol (version 4) and UD datagram in Python, written
from docs/probe.md and exporter/probe/wire/protocol.cpp, for the VM suites'
peers written apart from the exporter (ud_peer.py, probe_attacker.py).

Every control message: 'R' 'X' 'P', version, type, 0, payload length (16 bits,
big endian), payload. Names: a length byte and up to 64 printable bytes."""
import os
import socket
import struct

VERSION = 4
HELLO, SETUP, ACCEPT, REJECT, KEEPALIVE, UD_SETUP, UD_ACCEPT = range(1, 8)
OP_SEND, OP_WRITE, OP_READ, OP_UD = 1, 2, 3, 4
REJECT_CODES = {1: "version", 2: "auth", 3: "capacity", 4: "rate", 5: "unsupported",
                6: "resources", 7: "protocol"}
NONCE_SIZE = 16
MAC_SIZE = 32
PEER_SIZE = 4 + 4 + 2 + 16 + 4 + 8  # RC: QPN, PSN, LID, GID, rkey, address
UD_PEER_SIZE = 4 + 4 + 2 + 16  # UD: QPN, Q_Key, LID, GID
DATAGRAM_VERSION = 1
DATAGRAM_SIZE = 32
REQUEST, REPLY = 1, 2


def message(kind, payload=b""):
    """One control message of type KIND."""
    return b"RXP" + bytes([VERSION, kind, 0]) + struct.pack(">H", len(payload)) + payload


def _read_exactly(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("control connection closed")
        data += chunk
    return data


def read_message(sock):
    """(type, payload) of the next message on SOCK."""
    header = _read_exactly(sock, 8)
    if header[:3] != b"RXP" or header[3] != VERSION:
        raise ValueError(f"not a version {VERSION} control message: {header!r}")
    length = struct.unpack(">H", header[6:8])[0]
    return header[4], _read_exactly(sock, length)


def name(text):
    data = text.encode()
    return bytes([len(data)]) + data


class _Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, n):
        if self.pos + n > len(self.data):
            raise ValueError("truncated message")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u8(self):
        return self.take(1)[0]

    def unpack(self, fmt):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))

    def name(self):
        return self.take(self.u8()).decode()


def encode_hello(nonce, keys, ports):
    """KEYS: how many secrets the responder accepts (0: none); PORTS:
    [{device, port, ethernet, gid (16 bytes), rail}]."""
    out = bytes(nonce) + bytes([keys, len(ports)])
    for p in ports:
        out += (name(p["device"]) + bytes([p["port"], 1 if p["ethernet"] else 2]) + p["gid"]
                + name(p["rail"]))
    return out


def decode_hello(payload):
    r = _Reader(payload)
    hello = {"nonce": r.take(NONCE_SIZE)}
    hello["keys"] = r.u8()
    ports = []
    for _ in range(r.u8()):
        device = r.name()
        port, link = r.u8(), r.u8()
        ports.append({"device": device, "port": port, "ethernet": link == 1,
                      "gid": r.take(16), "rail": r.name()})
    hello["ports"] = ports
    return hello


def dialled_of(sock):
    """The address and port SOCK is connected to, as a set-up names them:
    16 bytes (IPv4 as IPv4-mapped) and 2."""
    host, port = sock.getpeername()[:2]
    try:
        raw = bytes(10) + b"\xff\xff" + socket.inet_aton(host)
    except OSError:
        raw = socket.inet_pton(socket.AF_INET6, host)
    return raw + struct.pack(">H", port)


def _target(device, port, rail, nonce, dialled):
    return name(device) + bytes([port]) + name(rail) + bytes(nonce) + bytes(dialled)


def _macs(macs):
    """A set-up's MACs: their count, then each (none without a secret)."""
    return bytes([len(macs)]) + b"".join(macs)


def encode_peer(qpn, psn, lid, gid, rkey, addr):
    return struct.pack(">IIH", qpn, psn, lid) + bytes(gid) + struct.pack(">IQ", rkey, addr)


def decode_peer(data):
    qpn, psn, lid = struct.unpack(">IIH", data[:10])
    rkey, addr = struct.unpack(">IQ", data[26:38])
    return {"qpn": qpn, "psn": psn, "lid": lid, "gid": bytes(data[10:26]), "rkey": rkey,
            "addr": addr}


def encode_setup(op, size, peer, device, port=1, rail="", tclass=0, sl=0, mtu=1024,
                 nonce=None, dialled=bytes(18), macs=()):
    """A setup (RC): PEER as encode_peer() makes it."""
    return (struct.pack(">BIBBH", op, size, tclass, sl, mtu) + peer
            + _target(device, port, rail, nonce or os.urandom(NONCE_SIZE), dialled)
            + _macs(macs))


def decode_setup(payload):
    r = _Reader(payload)
    op, size, tclass, sl, mtu = r.unpack(">BIBBH")
    setup = {"op": op, "size": size, "tclass": tclass, "sl": sl, "mtu": mtu,
             "peer": decode_peer(r.take(PEER_SIZE))}
    setup["device"] = r.name()
    setup["port"] = r.u8()
    setup["rail"] = r.name()
    setup["nonce"] = r.take(NONCE_SIZE)
    setup["dialled"] = r.take(18)
    setup["macs"] = [r.take(MAC_SIZE) for _ in range(r.u8())]
    return setup


def encode_accept(peer, mac=bytes(MAC_SIZE)):
    return peer + mac


def decode_accept(payload):
    if len(payload) != PEER_SIZE + MAC_SIZE:
        raise ValueError(f"accept of {len(payload)} bytes")
    out = decode_peer(payload[:PEER_SIZE])
    out["mac"] = payload[PEER_SIZE:]
    return out


def encode_ud_setup(size, qpn, qkey, lid, gid, device, port=1, rail="", tclass=0, sl=0,
                    mtu=1024, nonce=None, dialled=bytes(18), macs=(), interval_ms=1000):
    return (struct.pack(">BIBBH", OP_UD, size, tclass, sl, mtu)
            + struct.pack(">IIH", qpn, qkey, lid) + bytes(gid) + struct.pack(">I", interval_ms)
            + _target(device, port, rail, nonce or os.urandom(NONCE_SIZE), dialled)
            + _macs(macs))


def decode_ud_accept(payload):
    if len(payload) != UD_PEER_SIZE + MAC_SIZE:
        raise ValueError(f"ud_accept of {len(payload)} bytes")
    qpn, qkey, lid = struct.unpack(">IIH", payload[:10])
    return {"qpn": qpn, "qkey": qkey, "lid": lid, "gid": bytes(payload[10:26]),
            "mac": payload[26:]}


def decode_reject(payload):
    """(code name, reason)."""
    return REJECT_CODES.get(payload[0], str(payload[0])), payload[1:].decode(errors="replace")


def datagram(seq, session, size, kind=REQUEST, path=0, tclass=0, flags=0, delay_ns=0,
             magic=b"RXU"):
    """A UD probe datagram of SIZE bytes (the 32-byte header, zero padding)."""
    body = struct.pack(">3sBBBBBIQQI", magic, DATAGRAM_VERSION, kind, flags, path, tclass,
                       session, seq, delay_ns, 0)
    return body + bytes(size - len(body))


def decode_datagram(data):
    """The header's fields, or None when DATA is not a probe datagram."""
    if len(data) < DATAGRAM_SIZE:
        return None
    magic, version, kind, flags, path, tclass, session, seq, delay, _ = struct.unpack(
        ">3sBBBBBIQQI", bytes(data[:DATAGRAM_SIZE]))
    if magic != b"RXU" or version != DATAGRAM_VERSION:
        return None
    return {"kind": kind, "flags": flags, "path": path, "tclass": tclass, "session": session,
            "seq": seq, "delay_ns": delay}


def gid_text(raw):
    """16 GID bytes as pyverbs' GID() takes them."""
    return ":".join(raw[i:i + 2].hex() for i in range(0, 16, 2))
