#!/usr/bin/python3
"""An Ethernet segment for test-bed VMs, over unix datagram sockets only.

One process per segment ("rail"). It binds a unix datagram socket; each VM
NIC (QEMU `-netdev dgram` with unix sockets, see run-in-vm --nic-dgram) sends
every Ethernet frame as one datagram to it from its own bound socket. The hub
learns a client from the first datagram it sends (the sender's socket path)
and forwards each frame to every other client (`--mode hub`), or, as a
learning switch (`--mode switch`), sends a frame for a unicast MAC it has seen
as a source only to that MAC's client and floods the rest.

No IP networking is involved: frames never leave the host's unix sockets.

Robustness:
- Sends are non-blocking. A frame a client's socket cannot take now (a
  unix datagram socket queues only net.unix.max_dgram_qlen frames, 10 by
  default) waits in that client's port buffer, as in a switch's egress
  queue: up to PORT_BUFFER frames for up to PORT_BUFFER_AGE seconds, in
  order. A frame beyond either (a paused VM, a slow one) is dropped and
  counted (dropped_full), as on a congested switch port; the other clients
  do not wait for it.
- A client whose socket is gone (ECONNREFUSED, ENOENT) is dropped, with the
  MACs learnt from it; it joins again with its next datagram.
- SIGTERM, SIGINT or the death of the parent process ends the hub; its
  socket is removed and the statistics are written.
- SIGUSR1 cuts the segment (every frame is dropped and counted), SIGUSR2
  heals it: a test can take a whole rail down and bring it back.
- SIGQUIT writes the statistics file at once (its "dumps" counts the
  writes), so a test can read what the segment dropped while it runs.

Usage: l2hub.py --socket PATH [--mode hub|switch] [--name NAME]
                [--stats FILE] [--cut]
Progress lines (clients joining and leaving) go to stderr. --stats writes a
JSON object at exit: frames received, forwarded, dropped (cut, queue full,
client gone) and the clients seen.
"""
import argparse
import collections
import ctypes
import errno
import json
import os
import select
import signal
import socket
import stat
import sys
import time

PR_SET_PDEATHSIG = 1
# A frame is at most 64 KiB with offloads; the VM NICs here send plain
# 1514-byte frames, but a larger buffer costs nothing.
MAX_FRAME = 65536
SOCKET_BUFFER = 4 << 20
# A client's port buffer: what a burst may leave waiting for its socket.
PORT_BUFFER = 256
PORT_BUFFER_AGE = 0.1
# How often the waiting frames are retried (a unix datagram socket cannot
# be polled for room at one peer).
RETRY_INTERVAL = 0.001
BROADCAST_BIT = 0x01


class Hub:
    def __init__(self, path, mode="hub", name="hub", cut=False, log=sys.stderr):
        self.path = path
        self.mode = mode
        self.name = name
        self.log = log
        self.forwarding = not cut
        self.clients = {}  # address -> {"frames": n, "since": t}
        self.waiting = {}  # address -> deque of (time queued, frame)
        self.macs = {}  # source MAC (bytes) -> address, switch mode only
        self.stats = {"received": 0, "forwarded": 0, "buffered": 0, "dropped_cut": 0,
                      "dropped_full": 0,
                      "dropped_gone": 0, "dropped_other": 0, "unbound_senders": 0,
                      "runt_frames": 0, "clients_joined": 0, "clients_dropped": 0,
                      "cuts": 0, "dumps": 0}
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
            try:
                self.sock.setsockopt(socket.SOL_SOCKET, opt, SOCKET_BUFFER)
            except OSError:
                pass
        self._remove_stale_socket()
        self.sock.bind(path)
        self.sock.setblocking(False)

    def _remove_stale_socket(self):
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return
        if not stat.S_ISSOCK(st.st_mode):
            raise SystemExit(f"l2hub: {self.path} exists and is not a socket")
        os.unlink(self.path)

    def say(self, msg):
        print(f"l2hub {self.name}: [{time.monotonic():.3f}] {msg}", file=self.log, flush=True)

    def cut(self, on):
        if on and self.forwarding:
            self.stats["cuts"] += 1
        if on == self.forwarding:
            self.forwarding = not on
            self.say("segment cut: frames are dropped" if on else "segment healed")

    def drop_client(self, addr, why):
        if self.clients.pop(addr, None) is not None:
            self.stats["clients_dropped"] += 1
            self.say(f"client {addr} dropped ({why}); {len(self.clients)} left")
        self.stats["dropped_gone"] += len(self.waiting.pop(addr, ()))
        for mac in [m for m, a in self.macs.items() if a == addr]:
            del self.macs[mac]

    def try_send(self, frame, addr):
        """True once the frame is sent or dropped for good, False if the
        client's socket is full."""
        try:
            self.sock.sendto(frame, addr)
            self.stats["forwarded"] += 1
        except BlockingIOError:
            return False
        except (ConnectionRefusedError, FileNotFoundError) as e:
            self.stats["dropped_gone"] += 1
            self.drop_client(addr, e.strerror or type(e).__name__)
        except OSError as e:
            if e.errno in (errno.ECONNREFUSED, errno.ENOENT, errno.ENOTSOCK):
                self.stats["dropped_gone"] += 1
                self.drop_client(addr, e.strerror)
            else:
                self.stats["dropped_other"] += 1
        return True

    def send(self, frame, addr):
        queue = self.waiting.get(addr)
        if not queue and self.try_send(frame, addr):
            return
        if queue is None:
            queue = self.waiting[addr] = collections.deque()
        if len(queue) >= PORT_BUFFER:
            self.stats["dropped_full"] += 1
            return
        self.stats["buffered"] += 1
        queue.append((time.monotonic(), frame))

    def flush(self):
        """Sends what waits in the port buffers, oldest first; drops what
        waited longer than PORT_BUFFER_AGE."""
        now = time.monotonic()
        for addr in list(self.waiting):
            queue = self.waiting.get(addr)
            while queue:
                queued, frame = queue[0]
                queue.popleft()
                if now - queued > PORT_BUFFER_AGE:
                    self.stats["dropped_full"] += 1
                elif not self.try_send(frame, addr):
                    queue.appendleft((queued, frame))
                    break
                queue = self.waiting.get(addr)
            if not queue:
                self.waiting.pop(addr, None)

    def handle(self, frame, addr):
        self.stats["received"] += 1
        if not addr:
            # An unbound sender cannot be answered: it is not a client.
            self.stats["unbound_senders"] += 1
            return
        if len(frame) < 14:
            self.stats["runt_frames"] += 1
            return
        client = self.clients.get(addr)
        if client is None:
            client = self.clients[addr] = {"frames": 0, "since": time.time()}
            self.stats["clients_joined"] += 1
            self.say(f"client {addr} joined (source MAC {frame[6:12].hex(':')}); "
                     f"{len(self.clients)} known")
        client["frames"] += 1
        if not self.forwarding:
            self.stats["dropped_cut"] += 1
            return
        dst, src = frame[0:6], frame[6:12]
        if self.mode == "switch":
            if not src[0] & BROADCAST_BIT:
                self.macs[src] = addr
            if not dst[0] & BROADCAST_BIT:
                target = self.macs.get(dst)
                if target is not None:
                    if target != addr:
                        self.send(frame, target)
                    return
        for other in list(self.clients):
            if other != addr:
                self.send(frame, other)

    def serve(self, stop, parent, wakeup=None, dump=None):
        """Forwards until stop() is true or the parent process is gone.
        WAKEUP: a socket that becomes readable when a signal arrives; DUMP:
        called on each pass of the loop (writes the statistics if asked)."""
        poller = select.poll()
        poller.register(self.sock, select.POLLIN)
        if wakeup is not None:
            poller.register(wakeup, select.POLLIN)
        while not stop():
            if parent is not None and os.getppid() != parent:
                self.say("parent process gone; exiting")
                return
            self.flush()
            try:
                ready = poller.poll(RETRY_INTERVAL * 1000 if self.waiting else 1000)
            except InterruptedError:
                continue
            if wakeup is not None and any(fd == wakeup.fileno() for fd, _ in ready):
                try:
                    while wakeup.recv(64):
                        pass
                except (BlockingIOError, InterruptedError):
                    pass
            if dump is not None:
                dump()
            if not ready:
                continue
            # Drain what is queued before polling again.
            while True:
                try:
                    frame, addr = self.sock.recvfrom(MAX_FRAME)
                except (BlockingIOError, InterruptedError):
                    break
                self.handle(frame, addr)

    def write_stats(self, stats_path):
        self.stats["dumps"] += 1
        out = dict(self.stats, name=self.name, mode=self.mode,
                   clients={a: c["frames"] for a, c in self.clients.items()},
                   forwarding=self.forwarding)
        tmp = stats_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(out, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(tmp, stats_path)

    def close(self, stats_path=None):
        try:
            os.unlink(self.path)
        except OSError:
            pass
        self.sock.close()
        if stats_path:
            self.write_stats(stats_path)


def die_with_parent():
    """Asks the kernel for SIGTERM when the parent process exits (Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--socket", required=True, help="unix datagram socket to bind")
    ap.add_argument("--mode", choices=("hub", "switch"), default="hub")
    ap.add_argument("--name", default=None, help="name in progress lines and statistics")
    ap.add_argument("--stats", help="write statistics (JSON) to this file at exit")
    ap.add_argument("--cut", action="store_true", help="start with the segment cut")
    args = ap.parse_args(argv)

    parent = os.getppid()
    die_with_parent()
    if os.getppid() != parent:  # the parent died before prctl took effect
        return 0
    hub = Hub(args.socket, args.mode, args.name or os.path.basename(args.socket),
              cut=args.cut)
    stopping = []

    def on_stop(signum, _frame):
        stopping.append(signum)

    # A signal wakes the poll loop at once instead of after its timeout.
    wake_r, wake_w = socket.socketpair()
    wake_r.setblocking(False)
    wake_w.setblocking(False)
    signal.set_wakeup_fd(wake_w.fileno(), warn_on_full_buffer=False)
    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    signal.signal(signal.SIGHUP, on_stop)
    signal.signal(signal.SIGUSR1, lambda *_: hub.cut(True))
    signal.signal(signal.SIGUSR2, lambda *_: hub.cut(False))
    dumps = []
    signal.signal(signal.SIGQUIT, lambda *_: dumps.append(1))

    def dump():
        if dumps and args.stats:
            dumps.clear()
            hub.write_stats(args.stats)
    hub.say(f"listening on {args.socket} ({args.mode} mode"
            f"{', cut' if args.cut else ''})")
    try:
        hub.serve(lambda: bool(stopping), parent, wake_r, dump)
    finally:
        hub.say("stopping: " + ", ".join(f"{k} {v}" for k, v in hub.stats.items()))
        hub.close(args.stats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
