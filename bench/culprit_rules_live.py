#!/usr/bin/env python3
"""The culprit rules' cost as a live Prometheus pays it.

    bench/culprit_rules_live.py SCENARIO.yml WORK_DIR [--build-dir build] [--evals 2]
                                [--ready-in SECONDS] [--port 19091]

bench/fleet_faults measures the rules with promtool, one range query per rule
over the whole timeline. A server instead evaluates the whole group every
30 s at one instant. This tool simulates the scenario with
build/bench/fleet_faults_sim so that its timeline ends --ready-in seconds from
now (the time the simulation and the backfill are expected to take; a
timeline that ends later is only waited for), backfills it with promtool,
starts Prometheus on it with config/prometheus/rdma-culprits-hosts.yml,
rdma-culprits.yml and rdma-culprits-across-rails.yml, and once the timeline has ended (a server refuses records
older than its newest block) prints, at each evaluation of the culprit
group, every group's last duration and the slowest rules from
/api/v1/rules, then the raw series, the records and the server's peak RSS.
The first evaluations after the end read full 2-minute windows; later ones
read windows that empty as the data stops, and cost less. WORK_DIR is
removed and re-made.
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


def seconds(text):
    units = {"s": 1, "m": 60, "h": 3600}
    return int(float(text[:-1]) * units[text[-1]])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("scenario")
    ap.add_argument("work")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--ready-in", type=int, default=600)
    ap.add_argument("--evals", type=int, default=2)
    ap.add_argument("--port", type=int, default=19091)
    a = ap.parse_args()
    with open(a.scenario) as f:
        length = seconds(str(yaml.safe_load(f)["duration"]))
    shutil.rmtree(a.work, ignore_errors=True)
    sim_out, data = os.path.join(a.work, "sim"), os.path.join(a.work, "data")
    os.makedirs(sim_out)
    start = (int(time.time()) + a.ready_in - length) // STEP * STEP
    end = start + length
    t0 = time.monotonic()
    subprocess.run([os.path.join(a.build_dir, "bench", "fleet_faults_sim"), a.scenario, sim_out,
                    "--start", str(start)], check=True, stdout=subprocess.DEVNULL)
    t_sim = time.monotonic() - t0
    om = os.path.join(sim_out, "series.om")
    t0 = time.monotonic()
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", om, data],
                   check=True, stdout=subprocess.DEVNULL)
    t_backfill = time.monotonic() - t0
    os.remove(om)
    for name in ("rdma-culprits-hosts.yml", "rdma-culprits.yml", "rdma-culprits-across-rails.yml"):
        shutil.copy(os.path.join(ROOT, "config", "prometheus", name), a.work)
    with open(os.path.join(a.work, "prometheus.yml"), "w") as f:
        f.write("global: {evaluation_interval: 30s}\n"
                "rule_files: [rdma-culprits-hosts.yml, rdma-culprits.yml, "
                "rdma-culprits-across-rails.yml]\n")
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
        seen, evals, peak = set(), 0, 0
        while evals < a.evals:
            time.sleep(2)
            peak = max(peak, rss_mib())
            groups = {g["name"]: g for g in get("/api/v1/rules")["data"]["groups"]}
            group = groups["rdma-probe-culprits"]
            last = group["lastEvaluation"]
            at = datetime.datetime.fromisoformat(last[:26]).replace(
                tzinfo=datetime.timezone.utc).timestamp()
            if last in seen or at < end:
                continue
            seen.add(last)
            evals += 1
            slowest = sorted(((round(r["evaluationTime"], 2), r["name"]) for g in groups.values()
                              for r in g["rules"]), reverse=True)[:8]
            print(json.dumps({"after_end_s": round(at - end),
                              "group_s": {n: round(g["evaluationTime"], 1)
                                          for n, g in groups.items()},
                              "slowest_rules": slowest}), flush=True)

        def count(selector):
            r = get("/api/v1/query?query=" + urllib.parse.quote("count(%s)" % selector))
            return int(r["data"]["result"][0]["value"][1]) if r["data"]["result"] else 0
        print(json.dumps({"raw_series": count('{__name__=~"rdma_probe_.+"}'),
                          "records": count('{__name__=~"rdma:.+"}'),
                          "prometheus_peak_rss_mib": peak}), flush=True)
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
