#!/usr/bin/env python3
"""The culprit rules' cost as a live Prometheus pays it.

    bench/culprit_rules_live.py SCENARIO.yml WORK_DIR [--build-dir build] [--evals 2]
                                [--ready-in SECONDS] [--port 19091]
                                [--part one-server|rails|across-rails]

bench/fleet_faults measures the rules with promtool, one range query per rule
over the whole timeline. A server instead evaluates the whole group every
30 s at one instant. This tool simulates the scenario with
build/bench/fleet_faults_sim so that its timeline ends --ready-in seconds from
now (the time the simulation and the backfill are expected to take; a
timeline that ends later is only waited for), backfills it with promtool,
starts Prometheus on it with config/prometheus/rdma-culprits-hosts.yml and
rdma-culprits.yml (--part rails: rdma-culprits-rails.yml, what an evaluator
by rail evaluates, beside the host part), and once the timeline has ended
(a server refuses records older than its newest block) prints, at each
evaluation of the culprit group, every group's last duration and the
slowest rules from /api/v1/rules, then the raw series and the records the
server held at the first of those evaluations, the culprits named and the
server's peak RSS. The first evaluations after the end read full 2-minute
windows; later ones read windows that empty as the data stops, and cost
less (and the records of pairs go). WORK_DIR is removed and re-made.

With --part across-rails it measures the evaluator across rails alone
(config/prometheus/prometheus-culprits-across-rails.yml), at a size no
simulation of every pair fits on one machine: instead of simulating, it
writes what that evaluator receives for the scenario's fleet, every 30 s
(per RNIC its probes sent and pairs, 35 pairs of 4,200 probes in 2
minutes; its requests lost, 0; every host's address) and, from the
scenario's faults as the rules by rail would record them, the RNICs that
lose (a dead RNIC, every RNIC of a host down, every RNIC of a leaf, all
suspects, and the leaf a candidate), and evaluates
rdma-culprits-across-rails.yml alone. Its cost follows the RNICs, not the
pairs.
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import time
import urllib.parse
import urllib.request

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEP = 30


def fail(message):
    raise SystemExit("culprit_rules_live: " + message)


def seconds(text):
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        return int(float(text[:-1]) * units[text[-1]])
    except (ValueError, KeyError, IndexError):
        fail("%r is not a duration (s, m or h)" % text)


def read_scenario(path, part):
    """The scenario at PATH and its duration in seconds; what --part
    across-rails reads of it checked (the simulator checks the rest)."""
    try:
        with open(path) as f:
            scenario = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        fail("cannot read the scenario %s: %s" % (path, e))
    if not isinstance(scenario, dict) or "duration" not in scenario:
        fail("%s: a scenario is a mapping with a duration" % path)
    length = seconds(str(scenario["duration"]))
    if part == "across-rails":
        fleet = scenario.get("fleet")
        if not isinstance(fleet, dict) or not all(
                isinstance(fleet.get(k), int) and fleet[k] > 0
                for k in ("hosts", "rails", "group_size")):
            fail("%s: fleet needs hosts, rails and group_size, each a positive integer" % path)
        needs = {"rnic": ("host", "rail"), "host_down": ("host",), "leaf": ("group", "rail")}
        for fault in scenario.get("faults") or []:
            if not isinstance(fault, dict):
                fail("%s: a fault is a mapping: %r" % (path, fault))
            for k in needs.get(fault.get("kind"), ()):
                if not isinstance(fault.get(k), int) or fault[k] < 0:
                    fail("%s: a %s fault needs %s, a non-negative integer: %r"
                         % (path, fault["kind"], k, fault))
    return scenario, length


def write_across_rails_inputs(scenario, start, end, path):
    """The records rdma-culprits-across-rails.yml reads, for SCENARIO's fleet
    and faults, every STEP from START to END, as OpenMetrics at PATH."""
    fleet = scenario["fleet"]
    hosts, rails, size = fleet["hosts"], fleet["rails"], fleet["group_size"]
    group = ["g%04d" % (h // size) for h in range(hosts)]
    losing = {}  # (host, rail): (lost, blamed)
    leaves = set()
    for f in scenario.get("faults", []):
        if f["kind"] == "rnic":
            losing[(f["host"], f["rail"])] = (4200, 4000)
        elif f["kind"] == "host_down":
            losing.update({(f["host"], r): (4200, 4000) for r in range(rails)})
        elif f["kind"] == "leaf":
            leaves.add((f["group"], f["rail"]))
            losing.update({(h, f["rail"]): (84, 42)
                           for h in range(f["group"] * size, min(hosts, (f["group"] + 1) * size))})
    times = range(start, end + 1, STEP)

    def rnic(h, r):
        return 'host="h%05d:10911",device="mlx5_%d",group="%s",rail="rail%d"' % (h, r, group[h], r)

    with open(path, "w") as f:
        def family(name, series):
            f.write("# TYPE %s gauge\n" % name)
            for labels, value in series:
                for t in times:
                    f.write("%s{%s} %s %d\n" % (name, labels, value, t))

        every = [(h, r) for h in range(hosts) for r in range(rails)]
        family("rdma:probe_rnic:sent:increase2m", ((rnic(h, r), 4200) for h, r in every))
        family("rdma:probe_rnic:pairs:2m", ((rnic(h, r), 35) for h, r in every))
        family("rdma:probe_rnic:requests_lost_ratio:2m",
               (('host="h%05d:10911",device="mlx5_%d",group="%s"' % (h, r, group[h]), 0)
                for h, r in every))
        family("rdma:probe_host:instance",
               (('host="h%05d:10911",group="%s",job="rdma_exporter",instance="h%05d:10910"'
                 % (h, group[h], h), 1) for h in range(hosts)))
        family("rdma:probe_rnic:lost:increase2m", ((rnic(h, r), v[0]) for (h, r), v in losing.items()))
        family("rdma:probe_rnic:lost_blamed:increase2m",
               ((rnic(h, r), v[1]) for (h, r), v in losing.items()))
        family("rdma:probe_rnic:suspect:2m",
               ((rnic(h, r), v[1] / 4200) for (h, r), v in losing.items()))
        family("rdma:probe_rnic:pairs_failing:2m", ((rnic(h, r), 35) for (h, r) in losing))
        family("rdma:probe_rnic:target_loss_ratio:2m",
               ((rnic(h, r), v[0] / 4200) for (h, r), v in losing.items()))
        family("rdma:probe_culprit_candidate:2m",
               (('kind="leaf",group="g%04d",rail="rail%d"' % (g, r), 0.02) for g, r in leaves))
        f.write("# EOF\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("scenario")
    ap.add_argument("work")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--ready-in", type=int, default=600)
    ap.add_argument("--evals", type=int, default=2)
    ap.add_argument("--port", type=int, default=19091)
    ap.add_argument("--part", choices=("one-server", "rails", "across-rails"),
                    default="one-server",
                    help="the culprit rules for one server (default), the part inside rails, or "
                         "the part across rails alone, on the records it receives")
    a = ap.parse_args()
    scenario, length = read_scenario(a.scenario, a.part)
    shutil.rmtree(a.work, ignore_errors=True)
    sim_out, data = os.path.join(a.work, "sim"), os.path.join(a.work, "data")
    os.makedirs(sim_out)
    start = (int(time.time()) + a.ready_in - length) // STEP * STEP
    end = start + length
    om = os.path.join(sim_out, "series.om")
    t0 = time.monotonic()
    if a.part == "across-rails":
        write_across_rails_inputs(scenario, start, end, om)
    else:
        subprocess.run([os.path.join(a.build_dir, "bench", "fleet_faults_sim"), a.scenario,
                        sim_out, "--start", str(start)], check=True, stdout=subprocess.DEVNULL)
    t_sim = time.monotonic() - t0
    t0 = time.monotonic()
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", om, data],
                   check=True, stdout=subprocess.DEVNULL)
    t_backfill = time.monotonic() - t0
    os.remove(om)
    rule_files, watched = {
        "one-server": (["rdma-culprits-hosts.yml", "rdma-culprits.yml"], "rdma-probe-culprits"),
        "rails": (["rdma-culprits-hosts.yml", "rdma-culprits-rails.yml"],
                  "rdma-probe-culprits-rails"),
        "across-rails": (["rdma-culprits-across-rails.yml"], "rdma-probe-culprits-across-rails"),
    }[a.part]
    for name in rule_files:
        shutil.copy(os.path.join(ROOT, "config", "prometheus", name), a.work)
    with open(os.path.join(a.work, "prometheus.yml"), "w") as f:
        f.write("global: {evaluation_interval: 30s}\n"
                "rule_files: [%s]\n" % ", ".join(rule_files))
    log = open(os.path.join(a.work, "prometheus.log"), "w")
    proc = subprocess.Popen(
        ["prometheus", "--config.file=prometheus.yml", "--storage.tsdb.path=data",
         "--storage.tsdb.retention.time=100y", "--web.listen-address=127.0.0.1:%d" % a.port,
         "--log.level=error"], cwd=a.work, stdout=log, stderr=log)
    url = "http://127.0.0.1:%d" % a.port

    def get(path):
        with urllib.request.urlopen(url + path, timeout=600) as r:
            return json.load(r)

    def rss_mib():
        with open("/proc/%d/status" % proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS"):
                    return int(line.split()[1]) // 1024
        return 0

    try:
        for _ in range(4800):
            try:
                urllib.request.urlopen(url + "/-/ready", timeout=2)
                break
            except OSError:
                time.sleep(0.25)
        print(json.dumps({"simulate_s": round(t_sim), "backfill_s": round(t_backfill),
                          "ready_before_end_s": round(end - time.time())}), flush=True)

        def count(selector):
            r = get("/api/v1/query?query=" + urllib.parse.quote("count(%s)" % selector))
            return int(r["data"]["result"][0]["value"][1]) if r["data"]["result"] else 0

        seen, evals, peak, held = set(), 0, 0, {}
        while evals < a.evals:
            time.sleep(2)
            peak = max(peak, rss_mib())
            groups = {g["name"]: g for g in get("/api/v1/rules")["data"]["groups"]}
            group = groups[watched]
            last = group["lastEvaluation"]
            at = datetime.datetime.fromisoformat(last[:26]).replace(
                tzinfo=datetime.timezone.utc).timestamp()
            if last in seen or at < end:
                continue
            seen.add(last)
            evals += 1
            if evals == 1:
                # What the server holds while the windows are full: later,
                # as they empty, the records of pairs go.
                held = {"raw_series": count('{__name__=~"rdma_probe_.+"}'),
                        "records": count('{__name__=~"rdma:.+"}')}
            slowest = sorted(((round(r["evaluationTime"], 2), r["name"]) for g in groups.values()
                              for r in g["rules"]), reverse=True)[:8]
            print(json.dumps({"after_end_s": round(at - end),
                              "group_s": {n: round(g["evaluationTime"], 2)
                                          for n, g in groups.items()},
                              "slowest_rules": slowest}), flush=True)

        r = get("/api/v1/query?query=" + urllib.parse.quote("count by (kind) (rdma:probe_culprit)"))
        print(json.dumps({**held,
                          "culprits": {s["metric"]["kind"]: int(s["value"][1])
                                       for s in r["data"]["result"]},
                          "prometheus_peak_rss_mib": peak}), flush=True)
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
