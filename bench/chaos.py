#!/usr/bin/python3
"""Faults on purpose, together and over time, on the multi-VM bed.

    bench/chaos.py                      # 30 minutes, seed 1
    bench/chaos.py --duration 5m --seed 3 --report /var/tmp/chaos

Three VMs (tests/vm/bed.py: two rails, rxe0 and rxe1 in each) each run
rdma_exporter with the probe on (an RC write class, every other VM's ports
from a file_sd file) and the OTLP push to a receiver of their own
(tests/vm/otlp_sink.py). A real Prometheus on the host scrapes every
exporter through its port forward, and the harness scrapes each one every
few seconds itself. A seeded random schedule of faults then runs for the
duration, several at once (at most --max-concurrent), on one element each:

    pause          SIGSTOP of a VM's QEMU, SIGCONT after the hold
    exporter_kill  SIGKILL or SIGTERM of an exporter (the probe's responder
                   and prober), started again after the hold; never vm0's,
                   so that one exporter process lives through every other
                   fault for the whole run (the resources check)
    link_cycle     `rdma link delete rxe<r>` in a VM, `rdma link add` after
    rail_cut       a rail's hub drops every frame, forwards again after
    reload_valid   a changed valid configuration and SIGHUP (instant)
    reload_broken  a configuration that does not load (bad YAML or a bad
                   value) and SIGHUP; the valid one and SIGHUP after the hold
    file_sd        the probe's file_sd file rewritten in place: the same
                   targets written differently, truncated, or garbage; the
                   original after the hold
    otlp_down      the VM's OTLP receiver stopped, started after the hold

The first faults cover every kind once (in a seeded order); a fault waits
while its element is already faulted, while --max-concurrent faults run, or
while its VM is paused (nothing can be done inside a frozen guest); no fault
starts in the last --settle seconds. What is checked, from every scrape:

    answering   every scrape of a VM is answered, except while the VM is
                paused (and --resume-grace after) or its exporter is down
                (from the kill to the restarted exporter's first answer);
                the same for Prometheus' `up` over the run
    crashes     no exporter exits unless killed by the schedule; no
                sanitizer or fatal report in their logs; every VM's guest
                script exits 0
    monotonic   every counter sample (TYPE counter, histogram buckets,
                counts and sums) never decreases between two scrapes of the
                same exporter process, except at a documented reset: the
                exporter restarted (process_start_time_seconds changed) or a
                device deleted and added again (the device's series, and
                its peers' pairs toward it); a series that was absent from a
                scrape in between is a new series (its start marks it)
    honesty     while a pair's path is cut (rail cut, responder's VM paused,
                responder killed, responder's device deleted), from --margin
                seconds after the cut (in time the prober ran: a prober
                frozen through the cut's start has not looked yet), no
                scrape shows the pair's successful probe count growing or
                rdma_probe_up at 1
    effects     a broken reload shows rdma_exporter_config_last_reload_successful
                0; a malformed file_sd file shows the probe collector failing;
                through both, the pairs the fault does not cut keep probing
                (the previous configuration and targets stay)
    bounded     rdma_exporter_otlp_queue_length never exceeds otlp.queue_size
    recovery    after each fault ends (with the faults it overlapped, on
                the same elements), the time until its pairs are up again,
                its VM's collectors succeed, its reload is reported
                successful and its OTLP pushes succeed; a fault not
                recovered within --recovery-bound is a failure
    resources   each exporter process's resident memory, file descriptors
                and threads at settled moments (no fault in the last
                --settle-window seconds): the first against the last, so
                vm0's from before the first fault to after the last

The schedule, every fault's times and effects and every check's counts and
failures go to REPORT/chaos-report.json, a summary to
REPORT/chaos-report.txt (and stdout). Exit status 1 when any check failed,
2 on a usage error. The bed's directory (consoles, exporter logs) is kept
with --keep or when a check failed.
"""
import argparse
import json
import os
import random
import re
import signal
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "vm"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

from bed import Bed, BedError  # noqa: E402
from vmrun import BIN  # noqa: E402

CONTROL_PORT = 10911
OTLP_PORT = 4318
OTLP_QUEUE = 8
PROBE_TIMEOUT_S = 1.0
RAILS = 2
VMS = 3
KINDS = ("pause", "exporter_kill", "link_cycle", "rail_cut", "reload_valid", "reload_broken",
         "file_sd", "otlp_down")
# Hold of each kind, seconds (min, max).
HOLDS = {"pause": (5, 25), "exporter_kill": (3, 20), "link_cycle": (5, 30), "rail_cut": (5, 30),
         "reload_valid": (0, 0), "reload_broken": (10, 30), "file_sd": (10, 30),
         "otlp_down": (15, 60)}
GUEST_KINDS = {"exporter_kill", "link_cycle", "reload_valid", "reload_broken", "otlp_down"}
FATAL_LOG = re.compile(r"AddressSanitizer|UndefinedBehaviorSanitizer|runtime error:|"
                       r"terminate called|Segmentation fault|Aborted|\bpanic\b")


def parse_duration(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(s|m|h)?", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 90s, 5m, 1h)")
    return float(m.group(1)) * {"s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)]


# ---------------------------------------------------------------- expositions

SAMPLE_RE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{.*\})?[ \t]+(\S+)(?:[ \t]+-?\d+)?$")
LABEL_RE = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """{(name, label text): value} of every sample, and the set of sample
    names that are monotonic (counters; histogram and summary counts, sums
    and buckets)."""
    types, samples = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(None, 3)
            types[name] = kind.strip()
            continue
        if not line or line.startswith("#"):
            continue
        m = SAMPLE_RE.match(line)
        if not m:
            raise ValueError(f"not a sample line: {line!r}")
        samples[(m.group(1), m.group(2) or "")] = float(m.group(3))
    monotonic = set()
    for name, _ in samples:
        kind = types.get(name)
        if kind is None and name.endswith("_total"):
            kind = types.get(name[:-6])
        if kind == "counter":
            monotonic.add(name)
            continue
        for suffix in ("_bucket", "_count", "_sum"):
            if name.endswith(suffix) and types.get(name[:-len(suffix)]) in ("histogram",
                                                                              "summary"):
                monotonic.add(name)
    return samples, monotonic


def labels_of(label_text):
    return dict(LABEL_RE.findall(label_text))


def value(samples, name, **want):
    """The one sample of NAME whose labels include WANT (None if none)."""
    found = [v for (n, lt), v in samples.items()
             if n == name and all(labels_of(lt).get(k) == w for k, w in want.items())]
    return found[0] if len(found) == 1 else None


# ---------------------------------------------------------------- the plan


class Fault:
    def __init__(self, fid, kind, planned, hold, vm=None, rail=None, variant=None):
        self.id, self.kind, self.planned, self.hold = fid, kind, planned, hold
        self.vm, self.rail, self.variant = vm, rail, variant
        self.start = self.end = None     # run time (s) when it began and ended
        self.cut_from = self.cut_to = None  # the window the pairs' path was cut
        self.notes = []
        self.effects = {}
        self.recovery = None

    @property
    def keys(self):
        """The elements the fault holds: no two faults hold one at once."""
        if self.kind == "rail_cut":
            return {("rail", self.rail)}
        if self.kind == "link_cycle":
            return {("link", self.vm, self.rail)}
        if self.kind in ("reload_valid", "reload_broken", "exporter_kill"):
            return {("config", self.vm), ("exporter", self.vm)}
        return {(self.kind, self.vm)}

    def cut_pairs(self, vms):
        """(prober, responder, rail) whose path the fault cuts."""
        if self.kind == "rail_cut":
            return {(p, q, self.rail) for p in vms for q in vms if p != q}
        if self.kind in ("pause", "exporter_kill"):
            return {(p, self.vm, r) for p in vms if p != self.vm for r in range(RAILS)}
        if self.kind == "link_cycle":
            return {(p, self.vm, self.rail) for p in vms if p != self.vm}
        return set()

    def scope_pairs(self, vms):
        """The pairs that must be up again once the fault is over."""
        pairs = self.cut_pairs(vms)
        if self.kind in ("pause", "exporter_kill", "reload_valid", "reload_broken", "file_sd"):
            pairs |= {(self.vm, q, r) for q in vms if q != self.vm for r in range(RAILS)}
        if self.kind == "link_cycle":
            pairs |= {(self.vm, q, self.rail) for q in vms if q != self.vm}
        return pairs

    def scope_vms(self):
        """VMs whose own state (collectors, reload, OTLP) the fault touches."""
        return {self.vm} if self.vm is not None else set()

    def describe(self):
        where = self.vm if self.vm is not None else ""
        if self.rail is not None:
            where += f"{'/' if where else ''}rail{self.rail}"
        return f"#{self.id} {self.kind}{'(' + self.variant + ')' if self.variant else ''} {where}"

    def as_dict(self):
        return {"id": self.id, "kind": self.kind, "variant": self.variant, "vm": self.vm,
                "rail": self.rail, "planned_s": round(self.planned, 1), "hold_s": round(self.hold, 1),
                "start_s": _r(self.start), "end_s": _r(self.end), "cut_from_s": _r(self.cut_from),
                "cut_to_s": _r(self.cut_to), "effects": self.effects, "recovery": self.recovery,
                "notes": self.notes}


def _r(x):
    return None if x is None else round(x, 2)


def plan(seed, duration, warmup, settle, vms, gap=(4, 20)):
    """The seeded schedule: every kind once first, then kinds at random."""
    rng = random.Random(seed)
    order = list(KINDS)
    rng.shuffle(order)
    faults, t, n = [], warmup, 0
    while t < duration - settle:
        kind = order[n] if n < len(order) else rng.choice(KINDS)
        lo, hi = HOLDS[kind]
        f = Fault(n + 1, kind, t, rng.uniform(lo, hi))
        if kind in ("rail_cut", "link_cycle"):
            f.rail = rng.randrange(RAILS)
        if kind == "exporter_kill":
            f.vm = rng.choice(vms[1:])  # vm0's exporter lives through the whole run
        elif kind != "rail_cut":
            f.vm = rng.choice(vms)
        f.variant = {"exporter_kill": lambda: rng.choice(("KILL", "TERM")),
                     "file_sd": lambda: rng.choice(("rewritten", "truncated", "garbage")),
                     "reload_broken": lambda: rng.choice(("yaml", "value")),
                     "reload_valid": lambda: rng.choice(("interval", "discovery"))
                     }.get(kind, lambda: None)()
        faults.append(f)
        t += rng.uniform(*gap)
        n += 1
    return faults, rng


# ---------------------------------------------------------------- the run


def exporter_config(bed, vm, variant="interval", flip=False):
    interval = "250ms" if flip and variant == "interval" else "200ms"
    discovery = "4s" if flip and variant == "discovery" else "3s"
    return ("probe:\n"
            "  enabled: true\n"
            f"  listen_address: \":{CONTROL_PORT}\"\n"
            f"  discovery_interval: {discovery}\n"
            "  backoff_initial: 200ms\n"
            "  backoff_max: 2s\n"
            f"  file_sd: [\"{Chaos.GUEST_DIR}/{vm}-peers.json\"]\n"
            "  file_sd_refresh: 2s\n"
            "  classes:\n"
            f"    - {{name: w, op: write, size: 64, interval: {interval}, timeout: 1s}}\n"
            "otlp:\n"
            "  enabled: true\n"
            f"  endpoint: http://127.0.0.1:{OTLP_PORT}/v1/metrics\n"
            "  interval: 5s\n"
            "  timeout: 2s\n"
            "  max_backoff: 5s\n"
            f"  queue_size: {OTLP_QUEUE}\n")


BROKEN_CONFIGS = {
    "yaml": "probe:\n  enabled: true\n  classes: [{name: w, op: write\n",
    "value": "probe:\n  enabled: true\n  classes:\n    - {name: w, op: teleport, size: 64}\n",
}


def peers_file(bed, vm, rewritten=False):
    groups = [{"targets": [f"{bed.ip(q, 0)}:{CONTROL_PORT}"], "labels": {"peer": q}}
              for q in bed.names if q != vm]
    if rewritten:  # the same targets, in another order and layout
        return json.dumps(list(reversed(groups)), indent=4, sort_keys=True) + "\n"
    return json.dumps(groups) + "\n"


class Chaos:
    GUEST_DIR = "/run/share/bed/chaos"

    def __init__(self, args):
        self.args = args
        self.vms = [f"vm{i}" for i in range(VMS)]
        self.vm_exit_codes = {}
        self.faults, self.rng = plan(args.seed, args.duration, args.warmup, args.settle, self.vms,
                                     args.gap)
        self.lock = threading.Lock()
        self.t0 = None
        self.wall0 = None
        self.stop = threading.Event()
        self.violations = []
        self.counts = {k: 0 for k in ("scrapes", "scrapes_failed", "scrapes_excused",
                                      "scrapes_compared", "monotonic_samples",
                                      "documented_resets", "series_ended",
                                      "honesty_checks", "queue_checks")}
        self.scrapes = {vm: [] for vm in self.vms}  # (t0, t1, ok, state dict or error)
        self.last = {vm: None for vm in self.vms}     # previous successful scrape's samples
        self.incarnation = {vm: None for vm in self.vms}
        self.baseline = {}  # {vm: collectors that succeeded in the first scrape}
        self.decreases = []
        self.exporters = {}
        self.sinks = {}
        self.killed = {vm: False for vm in self.vms}
        # An exporter is ready once it answered a scrape after its start: a
        # reload (SIGHUP) waits for that, as systemd's ExecReload waits for
        # READY=1 (a SIGHUP before the daemon set up its handler ends it).
        self.ready = {vm: False for vm in self.vms}
        self.spawned = {vm: 0.0 for vm in self.vms}
        self.down = {vm: [] for vm in self.vms}    # [from, to] the exporter was down on purpose
        self.paused = {vm: [] for vm in self.vms}  # [from, to] the VM was paused
        self.link_resets = []  # (vm, rail, t_delete, t_add)
        self.restarts = {vm: 0 for vm in self.vms}
        self.config_flip = {vm: False for vm in self.vms}
        self.bed = None
        self.prometheus = None

    def now(self):
        return time.monotonic() - self.t0

    def say(self, msg):
        print(f"chaos: [{self.now():7.1f}s] {msg}", file=sys.stderr, flush=True)

    def violation(self, check, text, **detail):
        with self.lock:
            self.violations.append({"check": check, "t": _r(self.now()), "what": text, **detail})
        self.say(f"VIOLATION {check}: {text}")

    # ------------------------------------------------------------ guests

    def share(self, *parts):
        return self.bed.share_path("chaos", *parts)

    def write_share(self, name, text, atomic=True):
        path = self.share(name)
        if atomic:
            tmp = path + ".tmp"
            with open(tmp, "w" if isinstance(text, str) else "wb") as f:
                f.write(text)
            os.replace(tmp, path)
        else:  # in place: a reader may see it empty or half written
            with open(path, "w" if isinstance(text, str) else "wb") as f:
                f.write(text)

    def start_exporter(self, vm):
        self.exporters[vm] = self.bed.spawn(
            vm, f"exec \"$BED_STAGE/rdma_exporter\" --config.file=\"{self.GUEST_DIR}/{vm}.yml\" "
            f"--web.listen-address=\"0.0.0.0:$BED_PORT\" --log.level=info "
            f">>\"{self.GUEST_DIR}/{vm}-exporter.log\" 2>&1",
            timeout=int(self.args.duration + 900))
        self.killed[vm] = False
        with self.lock:
            self.ready[vm] = False
            self.spawned[vm] = self.now() if self.t0 is not None else 0.0

    def start_sink(self, vm):
        self.sinks[vm] = self.bed.spawn(
            vm, f"exec python3 \"$BED_STAGE/otlp_sink.py\" --listen 127.0.0.1:{OTLP_PORT} "
            f"--stats \"{self.GUEST_DIR}/{vm}-otlp.json\"", timeout=int(self.args.duration + 900))

    def hup(self, vm):
        self.bed.run(vm, "kill -HUP $(pidof rdma_exporter)", timeout=30).check()

    # ------------------------------------------------------------ scraping

    def scraper(self, vm):
        while not self.stop.is_set():
            t0 = self.now()
            try:
                with urllib.request.urlopen(self.bed.url(vm), timeout=self.args.scrape_timeout) as r:
                    text = r.read().decode("utf-8", errors="replace")
                samples, monotonic = parse(text)
                ok, err = True, None
            except Exception as e:  # noqa: BLE001 - every failure is an observation
                ok, err, samples, monotonic = False, f"{type(e).__name__}: {e}", None, None
            t1 = self.now()
            with self.lock:
                self.counts["scrapes"] += 1
                if ok:
                    self.observe(vm, t0, t1, samples, monotonic)
                else:
                    self.scrapes[vm].append((t0, t1, False, err))
            self.stop.wait(max(0.0, self.args.check_interval - (self.now() - t0)))

    def observe(self, vm, t0, t1, samples, monotonic):
        """Under the lock: the monotonic check, and the scrape's state kept."""
        if t0 >= self.spawned[vm]:
            self.ready[vm] = True
        start = value(samples, "process_start_time_seconds")
        prev = self.last[vm]
        if prev is not None and self.incarnation[vm] == start:
            prev_t, prev_samples = prev
            self.counts["scrapes_compared"] += 1
            for key, v in samples.items():
                if key[0] not in monotonic:
                    continue
                self.counts["monotonic_samples"] += 1
                old = prev_samples.get(key)
                if old is not None and v < old - 1e-9 * max(1.0, abs(old)):
                    self.decreases.append({"vm": vm, "series": key[0] + key[1], "from": old,
                                           "to": v, "t_prev": _r(prev_t), "t": _r(t0)})
            self.counts["series_ended"] += sum(1 for k in prev_samples
                                               if k[0] in monotonic and k not in samples)
        elif prev is not None:
            self.counts["documented_resets"] += 1
        self.incarnation[vm] = start
        self.last[vm] = (t0, {k: v for k, v in samples.items() if k[0] in monotonic})
        state = {"start": start,
                 "rss": value(samples, "process_resident_memory_bytes"),
                 "fds": value(samples, "process_open_fds"),
                 "threads": value(samples, "process_threads"),
                 "reload_ok": value(samples, "rdma_exporter_config_last_reload_successful"),
                 "reload_ts": value(samples, "rdma_exporter_config_last_reload_success_timestamp_seconds"),
                 "otlp_ok": value(samples, "rdma_exporter_otlp_exports_total", result="success"),
                 "otlp_failed": sum(v for (n, lt), v in samples.items()
                                    if n == "rdma_exporter_otlp_exports_total"
                                    and labels_of(lt).get("result") != "success"),
                 "otlp_queue": value(samples, "rdma_exporter_otlp_queue_length"),
                 "collectors": {labels_of(lt)["collector"]: v for (n, lt), v in samples.items()
                                if n == "rdma_exporter_collector_success"},
                 "pairs": {}}
        for (n, lt), v in samples.items():
            if n in ("rdma_probe_up", "rdma_probe_latency_seconds_count"):
                lab = labels_of(lt)
                if lab.get("op") != "write" or not lab.get("device", "").startswith("rxe"):
                    continue
                pair = (lab.get("peer"), int(lab["device"][3:]))
                state["pairs"].setdefault(pair, {})["up" if n == "rdma_probe_up" else "ok"] = v
        if vm not in self.baseline:
            self.baseline[vm] = {c for c, v in state["collectors"].items() if v == 1}
        q = state["otlp_queue"]
        self.counts["queue_checks"] += 1
        if q is not None and q > OTLP_QUEUE:
            self.violations.append({"check": "bounded", "t": _r(t0), "vm": vm,
                                    "what": f"OTLP queue {q} > {OTLP_QUEUE}"})
        self.scrapes[vm].append((t0, t1, True, state))

    # ------------------------------------------------------------ faults

    def blocked(self, f, active):
        held = set().union(*(g.keys for g in active)) if active else set()
        if f.keys & held or len(active) >= self.args.max_concurrent:
            return True
        if f.vm is not None and f.kind != "pause" and self.bed.vm(f.vm).paused:
            return True
        if f.kind in ("reload_valid", "reload_broken", "exporter_kill") and not self.ready[f.vm]:
            return True
        return False

    def begin(self, f):
        bed, vm = self.bed, f.vm
        f.start = self.now()
        self.say(f"begin {f.describe()} for {f.hold:.0f}s")
        if f.kind == "pause":
            bed.pause(vm)
            f.cut_from = self.now()
            self.paused[vm].append([f.cut_from, None])
        elif f.kind == "exporter_kill":
            self.killed[vm] = True
            self.down[vm].append([self.now(), None])
            bed.run(vm, f"pkill -{f.variant} -x rdma_exporter", timeout=30)
            try:
                self.exporters[vm].wait(60)
            except BedError as e:
                f.notes.append(f"the exporter did not exit within 60 s of SIG{f.variant}")
                self.violation("crashes", f"{f.describe()}: exporter did not exit", detail=str(e)[:400])
            f.cut_from = self.now()
        elif f.kind == "link_cycle":
            f.effects["delete"] = bed.spawn(vm, f"timeout 60 rdma link delete rxe{f.rail}", timeout=90)
        elif f.kind == "rail_cut":
            bed.cut_rail(f.rail)
            f.cut_from = self.now()
        elif f.kind == "reload_valid":
            self.config_flip[vm] = not self.config_flip[vm]
            self.write_share(f"{vm}.yml", exporter_config(bed, vm, f.variant, self.config_flip[vm]))
            with self.lock:
                before = [s["reload_ts"] for _, _, ok, s in self.scrapes[vm] if ok]
            f.effects["reload_ts_before"] = before[-1] if before else 0
            self.hup(vm)
        elif f.kind == "reload_broken":
            self.write_share(f"{vm}.yml", BROKEN_CONFIGS[f.variant])
            self.hup(vm)
        elif f.kind == "file_sd":
            good = peers_file(bed, vm).encode()
            text = {"rewritten": peers_file(bed, vm, rewritten=True).encode(),
                    "truncated": good[:len(good) // 2],
                    "garbage": bytes(self.rng.randrange(256) for _ in range(300))}[f.variant]
            self.write_share(f"{vm}-peers.json", text, atomic=False)
        elif f.kind == "otlp_down":
            self.sinks[vm].kill()
            try:
                self.sinks[vm].wait(30)
            except BedError:
                f.notes.append("the OTLP receiver did not stop within 30 s")

    def poll(self, f):
        """Progress of a fault between its begin and end (the link delete)."""
        if f.kind == "link_cycle" and f.cut_from is None:
            cmd = f.effects["delete"]
            if cmd.done():
                res = cmd.result()
                f.cut_from = self.now()
                f.effects["delete"] = {"rc": res.rc, "s": round(f.cut_from - f.start, 1)}
                if res.rc != 0:
                    self.violation("recovery", f"{f.describe()}: rdma link delete exited {res.rc}",
                                   err=res.err[-400:])

    def finish(self, f):
        bed, vm = self.bed, f.vm
        if f.kind == "link_cycle" and f.cut_from is None:
            return False  # the delete has not returned yet
        if f.vm is not None and f.kind != "pause" and bed.vm(vm).paused:
            return False
        if f.kind == "pause":
            bed.resume(vm)
            self.paused[vm][-1][1] = self.now()
        elif f.kind == "exporter_kill":
            self.start_exporter(vm)
            self.down[vm][-1][1] = self.now()  # until its first answer: see answering()
            self.restarts[vm] += 1
        elif f.kind == "link_cycle":
            res = bed.run(vm, f"timeout 60 rdma link add rxe{f.rail} type rxe netdev rail{f.rail}",
                          timeout=90)
            if res.rc != 0:
                self.violation("recovery", f"{f.describe()}: rdma link add exited {res.rc}",
                               err=res.err[-400:])
            self.link_resets.append((vm, f.rail, f.start, self.now()))
        elif f.kind == "rail_cut":
            bed.heal_rail(f.rail)
        elif f.kind == "reload_broken":
            self.write_share(f"{vm}.yml", exporter_config(bed, vm, "interval", self.config_flip[vm]))
            self.hup(vm)
        elif f.kind == "file_sd":
            self.write_share(f"{vm}-peers.json", peers_file(bed, vm), atomic=False)
        elif f.kind == "otlp_down":
            self.start_sink(vm)
        f.end = self.now()
        if f.cut_from is not None:
            f.cut_to = f.end
        self.say(f"end {f.describe()}")
        return True

    def check_exporters(self):
        for vm, cmd in self.exporters.items():
            if not self.killed[vm] and cmd.done():
                res = cmd.result()
                self.violation("crashes", f"the exporter in {vm} exited {res.rc} unasked",
                               log=self.log_tail(vm))
                self.killed[vm] = True
                self.start_exporter(vm)

    def log_tail(self, vm, lines=30):
        try:
            with open(self.share(f"{vm}-exporter.log"), errors="replace") as f:
                return f.read().splitlines()[-lines:]
        except OSError:
            return []

    # ------------------------------------------------------------ the run

    def run(self):
        args = self.args
        files = ("otlp_sink.py",)
        with Bed(vms=VMS, rails=RAILS, binaries={"rdma_exporter": args.binary}, files=files,
                 timeout=int(args.duration + 1200), name="chaos") as bed:
            self.bed = bed
            bed.keep = args.keep
            bed.wait_ready(300)
            os.makedirs(self.share(), exist_ok=True)
            for vm in self.vms:
                self.write_share(f"{vm}.yml", exporter_config(bed, vm))
                self.write_share(f"{vm}-peers.json", peers_file(bed, vm))
                self.start_sink(vm)
                self.start_exporter(vm)
            self.start_prometheus()
            self.wait_all_up()
            self.t0 = time.monotonic()
            self.wall0 = time.time()
            threads = [threading.Thread(target=self.scraper, args=(vm,), daemon=True)
                       for vm in self.vms]
            for t in threads:
                t.start()
            try:
                self.loop()
            finally:
                self.stop.set()
                for t in threads:
                    t.join(args.scrape_timeout + 5)
                self.wall1 = time.time()
                self.end = self.now()
                prom_up = self.prometheus_up()
                self.stop_prometheus()
                logs = {vm: self.fatal_lines(vm) for vm in self.vms}
                codes = bed.stop()
            self.evaluate(prom_up, logs, codes)
            report = self.report()
            if self.violations:
                bed.keep = True
            report["bed_dir"] = bed.dir if bed.keep else None
        return report

    def wait_all_up(self, timeout=300):
        """Until every VM probes every other on both rails (the run's start)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                good = 0
                for vm in self.vms:
                    samples, _ = parse(self.bed.scrape(vm, timeout=self.args.scrape_timeout))
                    good += sum(1 for q in self.vms if q != vm for r in range(RAILS)
                                if value(samples, "rdma_probe_up", peer=q, device=f"rxe{r}") == 1)
                if good == VMS * (VMS - 1) * RAILS:
                    return
            except (OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise BedError(f"not every pair up within {timeout}s\n{self.bed.evidence()}")
            time.sleep(1)

    def loop(self):
        pending = list(self.faults)
        active = []
        while self.now() < self.args.duration:
            now = self.now()
            while pending and pending[0].planned <= now and not self.blocked(pending[0], active):
                f = pending.pop(0)
                if now > self.args.duration - self.args.settle:
                    f.notes.append("not started: blocked into the settling time")
                    continue
                self.begin(f)
                active.append(f)
            for f in list(active):
                self.poll(f)
                if self.now() >= f.start + f.hold and self.finish(f):
                    active.remove(f)
            self.check_exporters()
            time.sleep(0.2)
        for f in pending:
            f.notes.append("not started: the run ended first")
        # Whatever still runs at the end is ended (and its recovery not measured).
        deadline = time.monotonic() + 120
        while active and time.monotonic() < deadline:
            for f in list(active):
                self.poll(f)
                if self.finish(f):
                    f.notes.append("ended by the end of the run")
                    active.remove(f)
            time.sleep(0.2)

    # ------------------------------------------------------------ Prometheus

    def start_prometheus(self):
        import yaml
        from harness import Prometheus
        interval = f"{int(self.args.prometheus_interval)}s"
        config = {"global": {"scrape_interval": interval, "scrape_timeout": interval},
                  "scrape_configs": [{"job_name": "rdma", "static_configs": [
                      {"targets": [f"127.0.0.1:{self.bed.hostport(vm)}"], "labels": {"vm": vm}}
                      for vm in self.vms]}]}
        self.prometheus = Prometheus(yaml.safe_dump(config))

    def prometheus_up(self):
        """{vm: [(run time, up)]} of Prometheus' scrapes over the run."""
        out = {vm: [] for vm in self.vms}
        try:
            r = self.prometheus.get("/api/v1/query", {
                "query": f"up[{int(self.wall1 - self.wall0) + 1}s]", "time": f"{self.wall1:.3f}"})
            for series in r["data"]["result"]:
                vm = series["metric"]["vm"]
                out[vm] = [(float(ts) - self.wall0, float(v)) for ts, v in series["values"]]
        except Exception as e:  # noqa: BLE001
            self.violation("answering", f"Prometheus could not be asked: {e}")
        return out

    def stop_prometheus(self):
        if self.prometheus is not None:
            self.prometheus.stop()

    def fatal_lines(self, vm):
        try:
            with open(self.share(f"{vm}-exporter.log"), errors="replace") as f:
                return [line.rstrip() for line in f if FATAL_LOG.search(line)][:20]
        except OSError:
            return ["(no log)"]

    # ------------------------------------------------------------ evaluation

    def excused(self, vm, t0, t1, grace):
        """Is a failed scrape over [t0, t1] of VM explained by a fault?"""
        for start, end in self.paused[vm]:
            if start - 1 <= t1 and (end is None or t0 <= end + self.args.resume_grace):
                return True
        for start, end in self.down[vm]:
            if start - 1 <= t1 and (end is None or t0 <= self.first_answer(vm, end) + grace):
                return True
        return False

    def first_answer(self, vm, after):
        for t0, _, ok, _ in self.scrapes[vm]:
            if ok and t0 >= after:
                return t0
        return self.end

    def evaluate(self, prom_up, logs, codes):
        args = self.args
        self.vm_exit_codes = codes
        for vm, code in sorted(codes.items()):
            if code != 0:
                self.violations.append({"check": "crashes", "vm": vm,
                                        "what": f"the VM's guest script exited {code}"})
        # answering: the harness' scrapes, then Prometheus'
        for vm in self.vms:
            for t0, t1, ok, err in self.scrapes[vm]:
                if ok:
                    continue
                self.counts["scrapes_failed"] += 1
                if self.excused(vm, t0, t1, 0):
                    self.counts["scrapes_excused"] += 1
                else:
                    self.violations.append({"check": "answering", "t": _r(t0), "vm": vm,
                                            "what": f"scrape failed: {err}"})
            for t, up in prom_up.get(vm, []):
                if up != 1 and not self.excused(vm, t - args.prometheus_interval, t,
                                                args.prometheus_interval):
                    self.violations.append({"check": "answering", "t": _r(t), "vm": vm,
                                            "what": "Prometheus: up 0"})
        self.prom_up = {vm: {"scrapes": len(v), "down": sum(1 for _, u in v if u != 1)}
                        for vm, v in prom_up.items()}
        # crashes: the logs
        for vm, lines in logs.items():
            if lines:
                self.violations.append({"check": "crashes", "vm": vm, "what": "fatal log lines",
                                        "lines": lines})
        # monotonic: every decrease must be a documented reset
        self.documented_decreases = []
        for d in self.decreases:
            why = self.reset_reason(d)
            if why:
                self.documented_decreases.append({**d, "reason": why})
            else:
                self.violations.append({"check": "monotonic", **d,
                                        "what": f"{d['series']} fell {d['from']} -> {d['to']}"})
        self.check_honesty()
        self.check_effects()
        self.check_recovery()
        self.resources = self.check_resources()

    def reset_reason(self, d):
        labels = labels_of(d["series"][d["series"].find("{"):] if "{" in d["series"] else "")
        for vm, rail, t_del, t_add in self.link_resets:
            if not (d["t_prev"] <= t_add + 1 and d["t"] >= t_del - 1):
                continue
            dev = f"rxe{rail}"
            if d["vm"] == vm and labels.get("device") == dev:
                return f"{vm} {dev} deleted and added again"
            if labels.get("peer") == vm and labels.get("remote_device") == dev:
                return f"the peer's {dev} ({vm}) deleted and added again"
        return None

    def ran(self, vm, a, b):
        """Did VM run (was it not paused) over the whole of [A, B]?"""
        return not any(start <= b and (end is None or end >= a) for start, end in self.paused[vm])

    def pair_cut(self, pair, t, margin):
        """The faults that cut PAIR's path at run time T, from MARGIN seconds
        on, counted in time the prober ran: a prober frozen when the cut came
        has not looked yet (its first scrape after SIGCONT shows the state of
        before the freeze, and its probes in flight time out only now)."""
        if not self.ran(pair[0], t - margin, t):
            return []
        out = []
        for f in self.faults:
            if f.cut_from is None or pair not in f.cut_pairs(self.vms):
                continue
            if f.cut_from + margin <= t and (f.cut_to is None or t <= f.cut_to) \
                    and self.ran(pair[0], max(f.cut_from, t - margin), t):
                out.append(f)
        return out

    def check_honesty(self):
        m = self.args.margin
        for p in self.vms:
            states = [(t0, s) for t0, _, ok, s in self.scrapes[p] if ok]
            for (t1, s1), (t2, s2) in zip(states, states[1:]):
                if s1["start"] != s2["start"]:
                    continue
                for pair, now in s2["pairs"].items():
                    q, r = pair
                    cut = self.pair_cut((p, q, r), t2, m)
                    if not cut:
                        continue
                    self.counts["honesty_checks"] += 1
                    before = s1["pairs"].get(pair, {}).get("ok")
                    if now.get("up") == 1:
                        self.violations.append({"check": "honesty", "t": _r(t2), "vm": p,
                                                "what": f"{p}->{q} rail {r} up while cut by "
                                                        f"{cut[0].describe()}"})
                    if (self.pair_cut((p, q, r), t1, m) and before is not None
                            and now.get("ok", 0) > before):
                        self.violations.append({"check": "honesty", "t": _r(t2), "vm": p,
                                                "what": f"{p}->{q} rail {r}: {now['ok'] - before:.0f} "
                                                        f"successful probes while cut by "
                                                        f"{cut[0].describe()}"})

    def states_between(self, vm, a, b):
        return [(t0, s) for t0, _, ok, s in self.scrapes[vm] if ok and a <= t0 <= b]

    def check_effects(self):
        m = self.args.margin
        for f in self.faults:
            if f.start is None or f.end is None:
                continue
            if f.kind in ("reload_broken", "file_sd", "reload_valid"):
                window = self.states_between(f.vm, f.start + m, f.end)
            if f.kind == "reload_broken":
                seen = [s["reload_ok"] for _, s in window]
                f.effects["reload_ok_seen"] = sorted(set(seen))
                if seen and 0 not in seen:
                    self.violations.append({"check": "effects", "fault": f.id,
                                            "what": f"{f.describe()}: the failed reload not reported"})
            if f.kind == "file_sd" and f.variant != "rewritten":
                seen = [s["collectors"].get("probe") for _, s in window]
                f.effects["probe_collector_seen"] = sorted({x for x in seen if x is not None})
                if seen and 0 not in seen:
                    self.violations.append({"check": "effects", "fault": f.id,
                                            "what": f"{f.describe()}: the malformed file not reported"})
            if f.kind == "otlp_down":
                # The receiver is gone from the start: by the end, failed
                # pushes were counted (a push takes at most interval + timeout).
                window = self.states_between(f.vm, f.start, f.end)
                if window and window[-1][0] - window[0][0] >= 10:
                    (ta, a), (tb, b) = window[0], window[-1]
                    if a["start"] == b["start"]:
                        f.effects["failed_pushes"] = b["otlp_failed"] - a["otlp_failed"]
                        if b["otlp_failed"] <= a["otlp_failed"]:
                            self.violations.append({"check": "effects", "fault": f.id,
                                                    "what": f"{f.describe()}: no failed push counted"})
            if f.kind in ("reload_broken", "file_sd") and len(window) >= 2:
                (ta, a), (tb, b) = window[0], window[-1]
                kept, stalled = 0, []
                for pair in {(q, r) for q in self.vms if q != f.vm for r in range(RAILS)}:
                    q, r = pair
                    if any(g is not f and g.start is not None and g.start <= tb
                           and (g.end is None or g.end + 30 >= ta)
                           and (f.vm, q, r) in g.scope_pairs(self.vms)
                           for g in self.faults):
                        continue  # another fault touches the pair
                    if a["start"] != b["start"]:
                        continue
                    before = a["pairs"].get(pair, {}).get("ok")
                    after = b["pairs"].get(pair, {}).get("ok")
                    if before is not None and after is not None and after > before:
                        kept += 1
                    else:
                        stalled.append(f"{f.vm}->{q} rail {r}")
                f.effects["pairs_kept_probing"] = kept
                if stalled:
                    self.violations.append({"check": "effects", "fault": f.id,
                                            "what": f"{f.describe()}: pairs stopped probing: "
                                                    f"{', '.join(sorted(stalled))}"})

    def healthy(self, f, vm, state):
        """Is VM's scrape STATE healthy for fault F's scope?"""
        for (p, q, r) in f.scope_pairs(self.vms):
            if p == vm and state["pairs"].get((q, r), {}).get("up") != 1:
                return False
        if vm in f.scope_vms():
            if any(state["collectors"].get(c) != 1 for c in self.baseline.get(vm, ())):
                return False
            if state["reload_ok"] != 1:
                return False
            if f.kind == "reload_valid" and (state["reload_ts"] or 0) <= f.effects["reload_ts_before"]:
                return False
        return True

    def green_after(self, f, ref):
        """The first time after REF when every VM F touches looks healthy."""
        vms = {p for p, _, _ in f.scope_pairs(self.vms)} | f.scope_vms()
        first = {}
        otlp_base = None
        for vm in vms:
            for t0, _, ok, s in self.scrapes[vm]:
                if not ok or t0 < ref:
                    continue
                if f.kind == "otlp_down":
                    if otlp_base is None:
                        otlp_base = s["otlp_ok"] or 0
                        continue
                    if (s["otlp_ok"] or 0) <= otlp_base:
                        continue
                if self.healthy(f, vm, s):
                    first[vm] = t0
                    break
        if len(first) < len(vms):
            return None
        return max(first.values())

    def check_recovery(self):
        bound = self.args.recovery_bound
        for f in self.faults:
            if f.end is None:
                continue
            ref, combined = f.end, []
            for _ in range(10):
                green = self.green_after(f, ref)
                until = green if green is not None else self.end
                others = [g for g in self.faults
                          if g is not f and g.start is not None and g.start <= until
                          and (g.end is None or g.end > ref)
                          and (g.scope_pairs(self.vms) & f.scope_pairs(self.vms)
                               or g.scope_vms() & f.scope_vms())]
                if not others:
                    break
                ref = max([ref] + [g.end if g.end is not None else self.end for g in others])
                combined.extend(g.id for g in others if g.id not in combined)
            green = self.green_after(f, ref)
            f.recovery = {"from_s": _r(ref), "combined_with": combined,
                          "seconds": None if green is None else round(green - ref, 1)}
            if "ended by the end of the run" in f.notes:
                continue
            if green is None:
                self.violations.append({"check": "recovery", "fault": f.id,
                                        "what": f"{f.describe()}: not recovered by the run's end"})
            elif green - ref > bound:
                self.violations.append({"check": "recovery", "fault": f.id,
                                        "what": f"{f.describe()}: recovered after "
                                                f"{green - ref:.0f}s > {bound:.0f}s"})

    def check_resources(self):
        """Per exporter process: the settled samples' first and last values."""
        window = self.args.settle_window
        busy = [(f.start, f.end if f.end is not None else self.end) for f in self.faults
                if f.start is not None]
        out = []
        for vm in self.vms:
            by_start = {}
            for t0, _, ok, s in self.scrapes[vm]:
                if not ok or t0 < self.args.warmup / 3:
                    continue
                if any(a - 1 <= t0 and b + window >= t0 for a, b in busy):
                    continue
                by_start.setdefault(s["start"], []).append((t0, s))
            for start, samples in by_start.items():
                (ta, a), (tb, b) = samples[0], samples[-1]
                row = {"vm": vm, "process_start": start, "settled_samples": len(samples),
                       "from_s": _r(ta), "to_s": _r(tb)}
                for k in ("rss", "fds", "threads"):
                    row[k] = [a[k], b[k]]
                out.append(row)
                if len(samples) < 2:
                    continue
                if b["fds"] > a["fds"] + self.args.fd_slack:
                    self.violations.append({"check": "resources", "vm": vm,
                                            "what": f"open fds {a['fds']:.0f} -> {b['fds']:.0f}"})
                if b["threads"] != a["threads"]:
                    self.violations.append({"check": "resources", "vm": vm,
                                            "what": f"threads {a['threads']:.0f} -> {b['threads']:.0f}"})
                if b["rss"] > a["rss"] * (1 + self.args.rss_growth):
                    self.violations.append({"check": "resources", "vm": vm,
                                            "what": f"resident memory {a['rss'] / 2**20:.1f} -> "
                                                    f"{b['rss'] / 2**20:.1f} MiB"})
        return out

    # ------------------------------------------------------------ report

    def report(self):
        recov = {}
        for f in self.faults:
            if f.recovery and f.recovery["seconds"] is not None:
                recov.setdefault(f.kind, []).append(f.recovery["seconds"])
        kinds_run = sorted({f.kind for f in self.faults if f.end is not None})
        rep = {
            "seed": self.args.seed, "duration_s": self.args.duration,
            "prometheus_interval_s": self.args.prometheus_interval,
            "binary": self.args.binary,
            "faults": [f.as_dict() for f in self.faults],
            "kinds_run": kinds_run,
            "faults_run": sum(1 for f in self.faults if f.end is not None),
            "max_concurrent_seen": self.max_concurrent_seen(),
            "counts": self.counts,
            "prometheus_up": self.prom_up,
            "exporter_restarts": self.restarts,
            "documented_decreases": self.documented_decreases[:50],
            "documented_decrease_count": len(self.documented_decreases),
            "recovery_s": {k: {"n": len(v), "min": min(v), "median": sorted(v)[len(v) // 2],
                               "max": max(v)} for k, v in sorted(recov.items())},
            "resources": self.resources,
            "vm_exit_codes": self.vm_exit_codes,
            "violations": self.violations,
        }
        for f in self.faults:  # Command objects are not JSON
            if not isinstance(f.effects.get("delete", {}), dict):
                f.effects["delete"] = "pending"
        rep["faults"] = [f.as_dict() for f in self.faults]
        return rep

    def max_concurrent_seen(self):
        events = []
        for f in self.faults:
            if f.start is not None:
                events += [(f.start, 1), (f.end if f.end is not None else self.end, -1)]
        n = best = 0
        for _, d in sorted(events):
            n += d
            best = max(best, n)
        return best


def summary(rep):
    lines = [f"chaos run: seed {rep['seed']}, {rep['duration_s'] / 60:.1f} min, "
             f"{rep['faults_run']} faults ({', '.join(rep['kinds_run'])}), "
             f"at most {rep['max_concurrent_seen']} at once"]
    c = rep["counts"]
    lines.append(f"scrapes {c['scrapes']} (failed {c['scrapes_failed']}, all but "
                 f"{c['scrapes_failed'] - c['scrapes_excused']} while paused or killed); "
                 f"Prometheus {rep['prometheus_up']}")
    lines.append(f"counter samples checked {c['monotonic_samples']}, documented resets: "
                 f"{c['documented_resets']} restarts, {rep['documented_decrease_count']} "
                 f"device re-adds; series ended {c['series_ended']}")
    lines.append(f"honesty checks {c['honesty_checks']}, OTLP queue checks {c['queue_checks']}")
    lines.append("recovery (s) by kind: " + "; ".join(
        f"{k} n={v['n']} median {v['median']} max {v['max']}"
        for k, v in rep["recovery_s"].items()))
    for row in rep["resources"]:
        if row["settled_samples"] >= 2:
            lines.append(f"{row['vm']} process {row['process_start']:.0f}: "
                         f"{row['settled_samples']} settled samples {row['from_s']}..{row['to_s']} s: "
                         f"RSS {row['rss'][0] / 2**20:.1f} -> {row['rss'][1] / 2**20:.1f} MiB, "
                         f"fds {row['fds'][0]:.0f} -> {row['fds'][1]:.0f}, "
                         f"threads {row['threads'][0]:.0f} -> {row['threads'][1]:.0f}")
    for f in rep["faults"]:
        rec = f["recovery"] or {}
        lines.append(f"  #{f['id']:>3} {f['kind']:<14} {f['variant'] or '':<10} "
                     f"{(f['vm'] or '') + ('/rail%d' % f['rail'] if f['rail'] is not None else ''):<11} "
                     f"{f['start_s']!s:>7}..{f['end_s']!s:<7} recovery {rec.get('seconds')} s"
                     + (f" (with #{rec['combined_with']})" if rec.get("combined_with") else "")
                     + (f" {'; '.join(f['notes'])}" if f["notes"] else ""))
    lines.append(f"violations: {len(rep['violations'])}")
    for v in rep["violations"][:40]:
        lines.append(f"  {v['check']}: {v.get('vm', '')} t={v.get('t')} {v['what']}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description="A seeded chaos run on the multi-VM bed.")
    ap.add_argument("--duration", type=parse_duration, default=1800.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--report", default=None, help="directory for the report "
                    "(default /var/tmp/rdma-chaos-SEED)")
    ap.add_argument("--binary", default=BIN, help="the rdma_exporter to run (default: build/)")
    ap.add_argument("--warmup", type=parse_duration, default=60.0,
                    help="time before the first fault (60s)")
    ap.add_argument("--settle", type=parse_duration, default=180.0,
                    help="no fault starts in the run's last SETTLE (180s)")
    ap.add_argument("--gap", default="4-20",
                    help="seconds between planned fault starts, MIN-MAX (4-20)")
    ap.add_argument("--max-concurrent", type=int, default=3)
    ap.add_argument("--check-interval", type=parse_duration, default=3.0)
    ap.add_argument("--scrape-timeout", type=parse_duration, default=10.0)
    ap.add_argument("--prometheus-interval", type=parse_duration, default=5.0)
    ap.add_argument("--margin", type=parse_duration, default=4.0,
                    help="after a cut begins, when no probe may succeed any more (4s)")
    ap.add_argument("--resume-grace", type=parse_duration, default=15.0)
    ap.add_argument("--recovery-bound", type=parse_duration, default=120.0)
    ap.add_argument("--settle-window", type=parse_duration, default=30.0,
                    help="a settled moment has had no fault for this long (30s)")
    ap.add_argument("--fd-slack", type=int, default=2)
    ap.add_argument("--rss-growth", type=float, default=0.25)
    ap.add_argument("--keep", action="store_true", help="keep the bed's directory")
    args = ap.parse_args(argv)
    try:
        args.gap = tuple(float(x) for x in args.gap.split("-", 1))
        assert len(args.gap) == 2 and 0 < args.gap[0] <= args.gap[1]
    except (ValueError, AssertionError):
        ap.error("--gap is MIN-MAX seconds, e.g. 4-20")
    if args.duration < args.warmup + args.settle + 30:
        ap.error("--duration must leave time for faults after --warmup and before --settle")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the bed stops its VMs
    report_dir = args.report or f"/var/tmp/rdma-chaos-{args.seed}"
    os.makedirs(report_dir, exist_ok=True)
    rep = Chaos(args).run()
    with open(os.path.join(report_dir, "chaos-report.json"), "w") as f:
        json.dump(rep, f, indent=1, default=str)
    text = summary(rep)
    with open(os.path.join(report_dir, "chaos-report.txt"), "w") as f:
        f.write(text + "\n")
    print(text)
    print(f"report: {report_dir}/chaos-report.json", file=sys.stderr)
    return 1 if rep["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
