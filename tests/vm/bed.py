#!/usr/bin/python3
"""A multi-VM, multi-rail RDMA test bed: several test-bed VMs (run-in-vm)
joined by one virtual Ethernet segment per rail, Soft-RoCE on every rail.

Layout (defaults: 3 VMs, 2 rails):

    vm0 (rack1)        vm1 (rack1)        vm2 (rack2)
    rail0 rxe0 .100.1  rail0 rxe0 .100.2  rail0 rxe0 .100.3   -- hub rail0
    rail1 rxe1 .101.1  rail1 rxe1 .101.2  rail1 rxe1 .101.3   -- hub rail1
    eth0 10.0.2.15 (user-mode NIC, only for the host's port forward)

Rail r of VM i: NIC `rail<r>`, MAC 52:54:00:be:<r>:<i+1> (hex), address
192.168.(100+r).(i+1)/24, rxe device `rxe<r>`. These addresses exist only
on the rails, which are tests/vm/l2hub.py processes exchanging frames over
unix datagram sockets (QEMU `-netdev dgram`): no host network is involved.
Each VM has 1 vCPU (TCG): on a 2-core machine never run more than 3 VMs.

Using it from a suite::

    from bed import Bed

    with Bed(vms=3, rails=2, racks=("rack1", "rack1", "rack2"),
             binaries={"rdma_exporter": BIN}) as bed:
        ready = bed.wait_ready()            # {vm: the ready JSON of bed-up}
        bed.run("vm0", "ping -c 3 192.168.100.2").check()
        srv = bed.spawn("vm1", "exec ib_write_lat -d rxe0 -x 1 -p 18516")
        bed.run("vm1", "wait_listen 18516 60").check()
        cli = bed.run("vm0", "ib_write_lat -d rxe0 -x 1 -p 18516 192.168.100.2")
        srv.wait(60)
        # an exporter in every VM, scraped through the host port forward
        for vm in bed.names:
            bed.spawn(vm, "exec $BED_STAGE/rdma_exporter --config ...")
        text = bed.scrape("vm2")            # GET http://127.0.0.1:<port>/metrics
        bed.pause("vm1"); ...; bed.resume("vm1")   # SIGSTOP / SIGCONT of QEMU
        # rxe's delete blocks while a process holds the device: spawn it
        gone = bed.spawn("vm2", "rdma link delete rxe1")
        ...; gone.wait(60).check()
        bed.run("vm2", "rdma link add rxe1 type rxe netdev rail1 && ./bed-up")
        bed.cut_rail(1); ...; bed.heal_rail(1)     # the hub drops every frame
        codes = bed.stop()                  # {vm: run-in-vm exit code}

Construction (nothing starts before start() or `with`):
    Bed(vms=3, rails=2, racks=None, script="bed-agent", args=(),
        scripts=None, files=(), binaries=None, env=None, memory=1024, smp=1,
        timeout=900, guest_port=9879, hub_mode="switch", name="bed")
    - script/args: the guest script every VM runs (default bed-agent: bed-up,
      then the command channel); scripts={"vm1": "other.sh"} per VM. Scripts
      and `files` are names in tests/vm or paths; they and `binaries`
      ({staged name: host path}) are staged under /var/tmp, which the guests
      see as $BED_STAGE (also the guests' working directory). "{stage}" in
      args is replaced with that directory.
    - env: extra guest environment. Every guest gets BED_VM (vm0...),
      BED_INDEX, BED_RACK, BED_VMS, BED_RAILS, BED_MACS, BED_PORT (the guest
      port forwarded to the host), BED_SHARE=/run/share/bed, BED_STAGE.
    - timeout: run-in-vm's --timeout for every VM (the guest script gets 30 s
      less); the VMs power off by then whatever happens.

Running:
    start()              hubs, then every VM booting concurrently
    wait_ready(timeout)  until every VM's $BED_SHARE/<vm>/ready; returns
                         {vm: dict}; raises BedError (with the consoles'
                         tails) if a VM stops first
    wait_file(rel, timeout, vms=None)  until share/<rel> exists; "{vm}" in
                         rel waits for one file per VM. Returns the path(s)
    share_path(*parts)   host path inside the shared directory
    spawn(vm, script, timeout=600) -> Command: SCRIPT (bash, guest-lib.sh
                         sourced) handed to the VM's bed-agent, not awaited
    run(vm, script, timeout=120) -> Result(rc, out, err); Result.check()
    run_all(script, vms=None, timeout=120) -> {vm: Result}
    Command.wait(timeout) -> Result, Command.done(), Command.kill() (SIGTERM
                         to the command's process group in the guest)
    pause(vm), resume(vm)  SIGSTOP/SIGCONT of the VM's QEMU
    kill(vm)             SIGKILL of the VM's QEMU, a crashed host (run-in-vm
                         then exits 124, as for a VM that timed out)
    cut_rail(r), heal_rail(r)  the rail's hub drops every frame / forwards again
    hub_stats(r)         the rail's hub statistics as last written (at exit)
    hub_stats_now(r)     the same, written on demand while the hub runs
    hostport(vm), url(vm, path), scrape(vm, path="/metrics")
    ip(vm, rail), mac(vm, rail), names, alive(vm)
    stop(timeout=60)     $BED_SHARE/stop for every guest, waits for the VMs,
                         then terminates what is left (QEMU included) and the
                         hubs; returns {vm: exit code}; also exit_codes
    keep / dir           the staging directory (consoles, results, shared
                         directory, hub logs) is removed by close() unless
                         keep is true, an exception left the `with` block, a
                         VM exited non-zero without being killed, or
                         RDMA_VM_KEEP=1
    evidence()           a text report: exit codes, consoles' and logs' tails

Command channel (share/cmd/<vm>/, guest side: bed-agent): the host writes
<n>.sh atomically (n = 1, 2, ...; first line "#bed timeout=SECS"); the agent
starts it at once, concurrently with the others, in a session of its own, and
writes <n>.pid, <n>.out, <n>.err and last <n>.rc. <n>.kill asks for SIGTERM
to the command's process group; share/stop (stop()) or cmd/<vm>/stop ends the
agent, and the VM powers off. A suite's own guest script can prepare what it
needs, write flag files (guest-lib.sh: bed_flag, bed_wait_file,
bed_wait_ready) and end with `exec ./bed-agent --no-up` to take commands too.

Files under dir: guest/ (staged scripts and binaries), share/ (the shared
directory: <vm>/ready, <vm>/agent, cmd/<vm>/<n>.{sh,pid,out,err,rc}),
<vm>/results/ (run-in-vm's results: console.log, exit-code, bed-up.log,
steps.log), <vm>/run-in-vm.log, hubs/rail<r>.{sock,log,json}.

CLI (a demo; 3 VMs take about a minute to come up here):
    tests/vm/bed.py [--vms N] [--rails N] [--keep] [--shell]
boots the bed with the agent, prints every VM's ready JSON, pings across
every rail, and with --shell reads "vm0: command" lines from stdin.
"""
import argparse
import atexit
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from vmrun import HERE, RUN_IN_VM, new_stage, stage_files  # noqa: E402

L2HUB = os.path.join(HERE, "l2hub.py")
GUEST_FILES = ("bed-up", "bed-agent", "guest-lib.sh")
GUEST_SHARE = "/run/share/bed"
DEFAULT_RACKS = ("rack1", "rack1", "rack2")
MAX_VMS = 3  # a 2-core machine: one vCPU each is the whole budget
PR_SET_PDEATHSIG = 1
POLL = 0.1


class BedError(RuntimeError):
    """The bed failed: a VM stopped, a file did not appear, a command hung."""


def mac(index, rail):
    return f"52:54:00:be:{rail:02x}:{index + 1:02x}"


def ip(index, rail):
    return f"192.168.{100 + rail}.{index + 1}"


def free_ports(count):
    """COUNT distinct TCP ports on 127.0.0.1 that nothing listens on now."""
    socks, ports = [], []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def _die_with_parent():
    """preexec_fn: SIGTERM to the child when this process dies (Linux)."""
    try:
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _tail(path, lines=40):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()[-lines:]
    except OSError:
        return []


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped by its parent) is not running.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Result:
    """A finished guest command: rc, out, err."""

    def __init__(self, vm, n, script, rc, out, err):
        self.vm, self.n, self.script = vm, n, script
        self.rc, self.out, self.err = rc, out, err

    def __repr__(self):
        return f"Result({self.vm} #{self.n} rc={self.rc})"

    def describe(self):
        return (f"{self.vm} command {self.n} exited {self.rc}: {self.script.strip()}\n"
                f"---- stdout ----\n{self.out[-4000:]}\n---- stderr ----\n{self.err[-4000:]}")

    def check(self):
        """Raises BedError unless the command exited 0; returns self."""
        if self.rc != 0:
            raise BedError(self.describe())
        return self


class Command:
    """A command running in a guest (Bed.spawn)."""

    def __init__(self, bed, vm, n, script):
        self.bed, self.vm, self.n, self.script = bed, vm, n, script
        self.base = os.path.join(bed.share, "cmd", vm, str(n))

    def __repr__(self):
        return f"Command({self.vm} #{self.n})"

    def done(self):
        return os.path.exists(self.base + ".rc")

    def kill(self):
        """Asks the guest's agent for SIGTERM to the command's process group."""
        with open(self.base + ".kill", "w"):
            pass

    def wait(self, timeout=120):
        """The Result once the guest wrote the exit code; BedError if the VM
        stops first or after TIMEOUT seconds (then the command is killed)."""
        deadline = time.monotonic() + timeout
        while not self.done():
            if not self.bed.alive(self.vm):
                raise BedError(f"{self.vm} stopped while running command {self.n} "
                               f"({self.script.strip()[:200]})\n{self.bed.evidence([self.vm])}")
            if time.monotonic() > deadline:
                self.kill()
                raise BedError(f"{self.vm} command {self.n} did not finish within "
                               f"{timeout}s: {self.script.strip()[:200]}\n"
                               + "\n".join(_tail(self.base + ".err", 20)))
            time.sleep(POLL)
        return self.result()

    def result(self):
        def read(ext):
            try:
                with open(self.base + ext, errors="replace") as f:
                    return f.read()
            except FileNotFoundError:
                return ""
        rc = read(".rc").strip()
        return Result(self.vm, self.n, self.script, int(rc) if rc.isdigit() else -1,
                      read(".out"), read(".err"))


class Vm:
    def __init__(self, bed, index, rack):
        self.index, self.rack = index, rack
        self.name = f"vm{index}"
        self.dir = os.path.join(bed.dir, self.name)
        self.results = os.path.join(self.dir, "results")
        self.pidfile = os.path.join(self.dir, "qemu.pid")
        self.log_path = os.path.join(self.dir, "run-in-vm.log")
        self.hostport = None
        self.proc = None
        self.qemu = None  # QEMU's pid, once known
        self.paused = self.killed = False
        self.exit_code = None
        self.started = self.ready_at = None


class Bed:
    def __init__(self, vms=3, rails=2, racks=None, script="bed-agent", args=(), scripts=None,
                 files=(), binaries=None, env=None, memory=1024, smp=1, timeout=900,
                 guest_port=9879, hub_mode="switch", name="bed", boot_timeout=180):
        if not 1 <= vms <= MAX_VMS:
            raise ValueError(f"vms must be 1..{MAX_VMS}: the machine has 2 cores")
        if not 1 <= rails <= 8:
            raise ValueError("rails must be 1..8")
        racks = tuple(racks) if racks is not None else DEFAULT_RACKS[:vms]
        if len(racks) != vms:
            racks = tuple(racks) + ("rack1",) * (vms - len(racks))
        self.nvms, self.rails, self.racks = vms, rails, racks
        self.script, self.args = script, tuple(args)
        if isinstance(scripts, (list, tuple)):
            scripts = {f"vm{i}": s for i, s in enumerate(scripts)}
        self.scripts = dict(scripts or {})
        self.files, self.binaries = tuple(files), dict(binaries or {})
        self.env = dict(env or {})
        self.memory, self.smp, self.timeout = memory, smp, timeout
        self.guest_port, self.hub_mode, self.bed_name = guest_port, hub_mode, name
        self.boot_timeout = boot_timeout
        self.dir = self.share = self.guest = None
        self.vms = {}
        self.hubs = []
        self.keep = os.environ.get("RDMA_VM_KEEP") == "1"
        self.exit_codes = {}
        self.ready = {}
        self.timings = {}
        self._next = {}
        self._closed = True
        self._t0 = None

    # ------------------------------------------------------------ setup

    @property
    def names(self):
        return [f"vm{i}" for i in range(self.nvms)]

    def say(self, msg):
        t = time.monotonic() - self._t0 if self._t0 else 0.0
        print(f"bed: [{t:6.1f}s] {msg}", file=sys.stderr, flush=True)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.keep = True
            try:
                print(self.evidence(), file=sys.stderr)
            except Exception:  # noqa: BLE001 - the original error matters more
                pass
        self.close()
        return False

    def _stage(self):
        self.dir = new_stage(f"stage-{self.bed_name}-{os.getpid()}-")
        self.guest = os.path.join(self.dir, "guest")
        self.share = os.path.join(self.dir, "share")
        os.makedirs(os.path.join(self.dir, "hubs"))
        os.makedirs(self.guest)
        os.chmod(self.guest, 0o755)
        os.makedirs(os.path.join(self.share, "cmd"))
        scripts = {self.script, *self.scripts.values()}
        stage_files(self.guest, self.binaries, (*GUEST_FILES, *scripts, *self.files))

    def _start_hubs(self):
        for r in range(self.rails):
            base = os.path.join(self.dir, "hubs", f"rail{r}")
            log = open(base + ".log", "w")
            proc = subprocess.Popen(
                [sys.executable, L2HUB, "--socket", base + ".sock", "--mode", self.hub_mode,
                 "--name", f"rail{r}", "--stats", base + ".json"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent)
            log.close()
            self.hubs.append({"proc": proc, "sock": base + ".sock", "log": base + ".log",
                              "stats": base + ".json"})
        deadline = time.monotonic() + 30
        for r, hub in enumerate(self.hubs):
            while not os.path.exists(hub["sock"]):
                if hub["proc"].poll() is not None or time.monotonic() > deadline:
                    raise BedError(f"hub of rail {r} did not start:\n"
                                   + "\n".join(_tail(hub["log"])))
                time.sleep(0.02)

    def _vm_command(self, vm):
        script = self.scripts.get(vm.name, self.script)
        args = [a.replace("{stage}", self.guest) for a in self.args]
        env = {"BED_VM": vm.name, "BED_INDEX": str(vm.index), "BED_RACK": vm.rack,
               "BED_VMS": str(self.nvms), "BED_RAILS": str(self.rails),
               "BED_MACS": ",".join(mac(vm.index, r) for r in range(self.rails)),
               "BED_PORT": str(self.guest_port), "BED_SHARE": GUEST_SHARE,
               "BED_STAGE": self.guest, **self.env}
        cmd = [RUN_IN_VM, "--smp", str(self.smp), "--memory", str(self.memory),
               "--timeout", str(self.timeout), "--results", vm.results,
               "--pidfile", vm.pidfile, "--share", f"bed={self.share}",
               "--hostfwd", f"{vm.hostport}:{self.guest_port}"]
        for r, hub in enumerate(self.hubs):
            cmd += ["--nic-dgram", f"{hub['sock']},mac={mac(vm.index, r)}"]
        for k, v in env.items():
            cmd += ["--env", f"{k}={v}"]
        return cmd + ["./" + os.path.basename(script), *args]

    def start(self):
        """Stages, starts the hubs and boots every VM (concurrently)."""
        self._t0 = time.monotonic()
        self._closed = False
        _LIVE.add(self)
        try:
            self._stage()
            self._start_hubs()
            ports = free_ports(self.nvms)
            for i in range(self.nvms):
                vm = Vm(self, i, self.racks[i])
                vm.hostport = ports[i]
                os.makedirs(vm.results)
                self.vms[vm.name] = vm
                self._next[vm.name] = 1
                os.makedirs(os.path.join(self.share, "cmd", vm.name))
            env = dict(os.environ)
            env.setdefault("RDMA_VM_BOOT_TIMEOUT", str(self.boot_timeout))
            env.setdefault("RDMA_VM_KERNEL_LOG", "loglevel=4")
            for vm in self.vms.values():
                with open(vm.log_path, "w") as log:
                    vm.proc = subprocess.Popen(
                        self._vm_command(vm), cwd=self.guest, env=env,
                        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                        preexec_fn=_die_with_parent)
                vm.started = time.monotonic()
            self.say(f"{self.nvms} VMs booting ({self.smp} vCPU, {self.memory} MiB each), "
                     f"{self.rails} rails; evidence in {self.dir}")
        except BaseException:
            self.keep = True
            self.close()
            raise
        return self

    # ------------------------------------------------------------ state

    def vm(self, name):
        if isinstance(name, int):
            name = f"vm{name}"
        try:
            return self.vms[name]
        except KeyError:
            raise ValueError(f"no VM {name!r} in this bed ({', '.join(self.vms)})") from None

    def alive(self, name):
        """True while the VM's run-in-vm has not exited."""
        vm = self.vm(name)
        if vm.proc is None:
            return False
        if vm.proc.poll() is None:
            return True
        if vm.exit_code is None:
            vm.exit_code = vm.proc.returncode
        return False

    def qemu_pid(self, name, timeout=60):
        """The VM's QEMU process id (from run-in-vm's --pidfile)."""
        vm = self.vm(name)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with open(vm.pidfile) as f:
                    text = f.read().strip()
                if text.isdigit():
                    vm.qemu = int(text)
                    return vm.qemu
            except FileNotFoundError:
                pass
            if not self.alive(name):
                raise BedError(f"{vm.name} is not running")
            if time.monotonic() > deadline:
                raise BedError(f"{vm.name}: no QEMU pid in {vm.pidfile} after {timeout}s")
            time.sleep(POLL)

    def ip(self, name, rail):
        return ip(self.vm(name).index, rail)

    def mac(self, name, rail):
        return mac(self.vm(name).index, rail)

    def hostport(self, name):
        return self.vm(name).hostport

    def url(self, name, path="/metrics"):
        return f"http://127.0.0.1:{self.hostport(name)}{path}"

    def scrape(self, name, path="/metrics", timeout=30):
        """GET of the guest's BED_PORT through the host port forward: body text."""
        with urllib.request.urlopen(self.url(name, path), timeout=timeout) as resp:
            return resp.read().decode("utf-8", errors="replace")

    def share_path(self, *parts):
        return os.path.join(self.share, *parts)

    # ------------------------------------------------------------ waiting

    def _check_alive(self, names, what):
        for name in names:
            if not self.alive(name) and not self.vm(name).killed:
                raise BedError(f"{name} stopped (run-in-vm exit {self.vm(name).exit_code}) "
                               f"before {what}\n{self.evidence([name])}")

    def wait_file(self, rel, timeout=120, vms=None):
        """Waits until share/REL exists; with "{vm}" in REL, one per VM of VMS
        (default: every VM not killed). Returns the path or the list of them."""
        names = [self.vm(v).name for v in vms] if vms else \
            [n for n in self.names if not self.vm(n).killed]
        if "{vm}" in rel:
            paths = [self.share_path(rel.format(vm=n)) for n in names]
        else:
            paths = [self.share_path(rel)]
        deadline = time.monotonic() + timeout
        while True:
            missing = [p for p in paths if not os.path.exists(p)]
            if not missing:
                return paths if "{vm}" in rel else paths[0]
            self._check_alive(names, f"{', '.join(missing)} appeared")
            if time.monotonic() > deadline:
                raise BedError(f"not there after {timeout}s: {', '.join(missing)}\n"
                               + self.evidence(names))
            time.sleep(POLL)

    def wait_ready(self, timeout=300):
        """Until every VM's bed-up wrote its ready file: {vm: ready JSON}."""
        pending = [n for n in self.names if n not in self.ready]
        deadline = time.monotonic() + timeout
        while pending:
            for name in list(pending):
                path = self.share_path(name, "ready")
                if os.path.exists(path):
                    with open(path) as f:
                        self.ready[name] = json.load(f)
                    vm = self.vm(name)
                    vm.ready_at = time.monotonic() - vm.started
                    self.timings[f"{name}_ready_s"] = round(vm.ready_at, 1)
                    self.say(f"{name} ready after {vm.ready_at:.1f}s")
                    pending.remove(name)
            if not pending:
                break
            self._check_alive(pending, "it was ready")
            if time.monotonic() > deadline:
                raise BedError(f"not ready after {timeout}s: {', '.join(pending)}\n"
                               + self.evidence(pending))
            time.sleep(POLL)
        self.timings["all_ready_s"] = round(max(v.ready_at for v in self.vms.values()), 1)
        return dict(self.ready)

    # ------------------------------------------------------------ commands

    def spawn(self, name, script, timeout=600):
        """Hands SCRIPT (bash) to the VM's agent; returns a Command at once."""
        vm = self.vm(name)
        if not self.alive(vm.name):
            raise BedError(f"{vm.name} is not running (exit {vm.exit_code}); "
                           f"cannot run: {script.strip()[:200]}")
        n = self._next[vm.name]
        self._next[vm.name] += 1
        base = os.path.join(self.share, "cmd", vm.name, str(n))
        tmp = os.path.join(self.share, "cmd", vm.name, f".{n}.sh.tmp")
        with open(tmp, "w") as f:
            f.write(f"#bed timeout={int(timeout)}\n{script}\n")
        os.rename(tmp, base + ".sh")
        return Command(self, vm.name, n, script)

    def run(self, name, script, timeout=120):
        """Runs SCRIPT in the VM and waits for it: a Result (rc, out, err)."""
        return self.spawn(name, script, timeout).wait(timeout + 15)

    def run_all(self, script, vms=None, timeout=120):
        """SCRIPT in every VM of VMS (default all) at once: {vm: Result}."""
        names = [self.vm(v).name for v in (vms or self.names)]
        cmds = [self.spawn(n, script, timeout) for n in names]
        return {c.vm: c.wait(timeout + 15) for c in cmds}

    # ------------------------------------------------------------ faults

    def pause(self, name):
        """Freezes the VM (SIGSTOP to its QEMU): no CPU, no NIC, no timers."""
        pid = self.qemu_pid(name)
        os.kill(pid, signal.SIGSTOP)
        self.vm(name).paused = True
        self.say(f"{name} paused (QEMU {pid})")

    def resume(self, name):
        pid = self.qemu_pid(name)
        os.kill(pid, signal.SIGCONT)
        self.vm(name).paused = False
        self.say(f"{name} resumed")

    def kill(self, name, timeout=30):
        """Kills the VM's QEMU at once (a host crash); waits for run-in-vm,
        which exits 124 (it cannot tell this from a timed-out VM)."""
        vm = self.vm(name)
        pid = self.qemu_pid(name)
        vm.killed = True
        os.kill(pid, signal.SIGKILL)
        try:
            vm.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            vm.proc.kill()
            vm.proc.wait()
        self.alive(name)
        self.say(f"{name} killed (run-in-vm exit {vm.exit_code})")

    def cut_rail(self, rail):
        """The rail's hub drops every frame until heal_rail."""
        self.hubs[rail]["proc"].send_signal(signal.SIGUSR1)
        self.say(f"rail {rail} cut")

    def heal_rail(self, rail):
        self.hubs[rail]["proc"].send_signal(signal.SIGUSR2)
        self.say(f"rail {rail} healed")

    def hub_stats(self, rail):
        """The hub's statistics (written when it stops), None before."""
        try:
            with open(self.hubs[rail]["stats"]) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def hub_stats_now(self, rail, timeout=30):
        """The running hub's statistics: asks it to write them (SIGQUIT) and
        waits until it has."""
        before = (self.hub_stats(rail) or {}).get("dumps", 0)
        self.hubs[rail]["proc"].send_signal(signal.SIGQUIT)
        deadline = time.monotonic() + timeout
        while True:
            stats = self.hub_stats(rail)
            if stats and stats.get("dumps", 0) > before:
                return stats
            if time.monotonic() > deadline:
                raise BedError(f"rail {rail}'s hub wrote no statistics in {timeout}s")
            time.sleep(POLL)

    # ------------------------------------------------------------ teardown

    def stop(self, timeout=60):
        """Tells every guest to stop ($BED_SHARE/stop), waits up to TIMEOUT s
        for the VMs to power off, ends whatever is left, stops the hubs.
        Returns {vm: run-in-vm exit code}."""
        if self.share and os.path.isdir(self.share):
            with open(self.share_path("stop"), "w"):
                pass
        for vm in self.vms.values():
            if vm.paused and vm.qemu and _pid_alive(vm.qemu):
                os.kill(vm.qemu, signal.SIGCONT)
                vm.paused = False
        deadline = time.monotonic() + timeout
        for vm in self.vms.values():
            if vm.proc is None:
                continue
            try:
                vm.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.say(f"{vm.name} still running {timeout}s after stop; terminating it")
                self.keep = True
        self._terminate_vms()
        self._stop_hubs()
        for vm in self.vms.values():
            if vm.proc is not None:
                vm.exit_code = vm.proc.returncode
                self.exit_codes[vm.name] = vm.exit_code
                if vm.exit_code != 0 and not vm.killed:
                    self.keep = True
        self.timings["total_s"] = round(time.monotonic() - self._t0, 1) if self._t0 else None
        self.say(f"stopped: exit codes {self.exit_codes}")
        return dict(self.exit_codes)

    def _terminate_vms(self):
        for vm in self.vms.values():
            if vm.proc is not None and vm.proc.poll() is None:
                vm.proc.terminate()  # run-in-vm stops its QEMU on SIGTERM
        for vm in self.vms.values():
            if vm.proc is None:
                continue
            try:
                vm.proc.wait(20)
            except subprocess.TimeoutExpired:
                vm.proc.kill()
                vm.proc.wait()
        # Whatever run-in-vm could not end: QEMU runs in a process group of
        # its own (under timeout), so end it by its pid.
        for vm in self.vms.values():
            pid = vm.qemu
            if pid is None:
                try:
                    with open(vm.pidfile) as f:
                        pid = int(f.read().strip())
                except (OSError, ValueError):
                    pid = None
            if pid and _pid_alive(pid):
                self.say(f"{vm.name}: QEMU {pid} survived run-in-vm; killing it")
                for sig in (signal.SIGCONT, signal.SIGKILL):
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        pass

    def _stop_hubs(self):
        for hub in self.hubs:
            if hub["proc"].poll() is None:
                hub["proc"].terminate()
        for hub in self.hubs:
            try:
                hub["proc"].wait(10)
            except subprocess.TimeoutExpired:
                hub["proc"].kill()
                hub["proc"].wait()

    def close(self):
        """stop() if still running; removes the staging directory unless it
        is kept as evidence."""
        if self._closed:
            return
        try:
            if any(vm.proc is not None and vm.proc.returncode is None
                   for vm in self.vms.values()) or any(h["proc"].returncode is None
                                                        for h in self.hubs):
                self.stop(timeout=30)
        finally:
            self._closed = True
            _LIVE.discard(self)
            if self.dir:
                if self.keep:
                    self.say(f"evidence kept in {self.dir}")
                else:
                    shutil.rmtree(self.dir, ignore_errors=True)

    # ------------------------------------------------------------ evidence

    def evidence(self, names=None, lines=25):
        """Exit codes and the tails of consoles, logs and hub logs."""
        out = [f"bed directory: {self.dir}"]
        for name in names or self.names:
            vm = self.vms.get(name)
            if vm is None:
                continue
            self.alive(name)
            state = ("running" if vm.exit_code is None else f"exit {vm.exit_code}") + \
                (", paused" if vm.paused else "") + (", killed" if vm.killed else "")
            out.append(f"==== {name} ({vm.rack}, {state}) ====")
            for label, path in (("run-in-vm", vm.log_path),
                                ("bed-up.log", os.path.join(vm.results, "bed-up.log")),
                                ("steps.log", os.path.join(vm.results, "steps.log")),
                                ("console.log", os.path.join(vm.results, "console.log"))):
                tail = _tail(path, lines)
                if tail:
                    out.append(f"---- {name} {label} ----")
                    out.extend(tail)
        for r, hub in enumerate(self.hubs):
            out.append(f"---- hub rail{r} ----")
            out.extend(_tail(hub["log"], 10))
        return "\n".join(out)


_LIVE = set()


@atexit.register
def _close_live_beds():
    for bed in list(_LIVE):
        try:
            bed.close()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


# ---------------------------------------------------------------- CLI


class BedTestCase(unittest.TestCase):
    """A suite on one bed for the whole class: boots it in setUpClass (BED
    holds the Bed arguments), keeps its evidence when a test fails, and at
    the end prints RECORD (what the tests measured) and writes it to
    RESULTS_FILE in the bed's directory."""
    BED = {}
    READY_TIMEOUT = 300
    RESULTS_FILE = "bed-results.json"
    bed = None
    record = {}

    @classmethod
    def setUpClass(cls):
        # A terminated test run still stops its VMs (Bed.close at exit).
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        cls.started = time.monotonic()
        cls.bed = Bed(**cls.BED)
        cls.bed.start()
        try:
            cls.ready = cls.bed.wait_ready(cls.READY_TIMEOUT)
            cls.record = {"ready_s": cls.bed.timings.get("all_ready_s")}
            cls.set_up_bed()
        except BaseException:
            cls.bed.keep = True
            cls.bed.close()
            raise

    @classmethod
    def set_up_bed(cls):
        """What the suite starts once every VM is ready."""

    # ------------------------------------------------------------ helpers

    def scrape(self, vm):
        """The VM's exporter's /metrics, parsed (vmrun.Exposition)."""
        from vmrun import Exposition
        return Exposition(self.bed.scrape(vm), f"{vm} /metrics")

    def scrape_all(self, vms=None):
        return {vm: self.scrape(vm) for vm in (vms or self.bed.names)}

    def perftest(self, command, port, server="vm0", client="vm1", scrape="vm0"):
        """Runs perftest's COMMAND (e.g. "ib_write_lat -d rxe0 -n 1000 -F -p
        PORT", without -x and address) from CLIENT to SERVER on rail 0,
        scraping SCRAPE just before and after: (round trip in us: 2 x
        t_typical, as ib_send_lat and ib_write_lat print half of it; the
        scrape before; the scrape after)."""
        from vmrun import perftest_typical_us
        bed = self.bed
        srv = bed.spawn(server, f"exec {command} -x {self.ready[server]['rails'][0]['gid_index']}",
                        timeout=180)
        bed.run(server, f"wait_listen {port} 90", timeout=100).check()
        before = self.scrape(scrape)
        cli = bed.run(client, f"{command} -x {self.ready[client]['rails'][0]['gid_index']} "
                      f"{bed.ip(server, 0)}", timeout=180)
        after = self.scrape(scrape)
        srv.wait(60)
        cli.check()
        return perftest_typical_us(cli.out) * 2.0, before, after

    def wait_until(self, what, fn, timeout=90):
        """Polls FN (which may raise while the exporters start) until truthy."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                got = fn()
                if got:
                    return got
                last = got
            except (OSError, ValueError, AssertionError) as e:
                last = e
            time.sleep(0.5)
        self.fail(f"timed out after {timeout} s waiting for {what}: last {last!r}\n"
                  + self.bed.evidence())

    @classmethod
    def tearDownClass(cls):
        if cls.bed is None:
            return
        try:
            if cls.bed.exit_codes == {}:
                cls.bed.stop()
        finally:
            cls.record["timings"] = cls.bed.timings
            cls.record["wall_s"] = round(time.monotonic() - cls.started, 1)
            text = json.dumps(cls.record, indent=1, sort_keys=True)
            print(f"\n{cls.__name__} results:\n{text}", file=sys.stderr)
            if cls.bed.dir:
                with open(os.path.join(cls.bed.dir, cls.RESULTS_FILE), "w") as f:
                    f.write(text + "\n")
            cls.bed.close()

    def run(self, result=None):
        # Keep the bed's evidence when any test fails.
        if result is None:
            return super().run(result)
        before = len(result.failures) + len(result.errors)
        out = super().run(result)
        if len(result.failures) + len(result.errors) > before and self.bed:
            self.bed.keep = True
        return out

def main(argv=None):
    ap = argparse.ArgumentParser(description="Boot the multi-VM bed and show it working.")
    ap.add_argument("--vms", type=int, default=3)
    ap.add_argument("--rails", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="keep the staging directory")
    ap.add_argument("--shell", action="store_true",
                    help='then run "vmN: command" lines from stdin in the guests')
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with Bed(vms=args.vms, rails=args.rails) as bed:
        bed.keep = args.keep
        for name, ready in bed.wait_ready().items():
            print(name, json.dumps(ready))
        for name in bed.names:
            for r in range(args.rails):
                for other in bed.names:
                    if other != name:
                        res = bed.run(name, f"ping -c 1 -W 5 -I rail{r} {bed.ip(other, r)}")
                        print(f"{name} -> {other} rail{r}: "
                              f"{'ok' if res.rc == 0 else 'FAILED rc=%d' % res.rc}")
        if args.shell:
            print('commands: "vmN: shell command" per line; end with EOF', file=sys.stderr)
            for line in sys.stdin:
                name, _, script = line.partition(":")
                if not script.strip():
                    continue
                res = bed.run(name.strip(), script)
                sys.stdout.write(res.out)
                sys.stderr.write(res.err)
                print(f"[rc {res.rc}]")
        print(bed.stop())
        print(json.dumps(bed.timings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
