#!/usr/bin/env python3
"""A simulated fleet's load on its metrics pipeline, and the fleet boards'
query times with the rollups and on raw series.

    bench/fleet_load.py --hosts N --layout single|shards|vmagent [--build-dir build]
                        [--rnics 8] [--processes 8] [--group-size 32] [--remote 4]
                        [--interval 15] [--warm-minutes 8] [--window-minutes 3]
                        [--report FILE]

build/bench/fleet_hosts serves N rail hosts (the exporter's own rendering of
the fake kernel and the fleet-mode probe, counters growing by its model) on
loopback. The layout scrapes them every --interval seconds and evaluates
config/prometheus/'s rule files at the same interval (the groups with an
interval of their own at theirs):

  single   one Prometheus (config/prometheus/prometheus.yml)
  shards   two Prometheus shards (prometheus-shard.yml: the alerting rules,
           the last-hop evidence, the culprit rules' host part and the port
           and host rollups over each one's hosts) writing to
           VictoriaMetrics, and the host part's records to the culprit
           rules' Prometheus (prometheus-culprits.yml), which writes its
           records there; vmalert for the fleet rollups
  vmagent  two vmagents in cluster sharding (config/victoriametrics/vmagent.yml)
           writing to VictoriaMetrics, the culprit rules' Prometheus
           scraping the probe series (prometheus-culprits-scrape.yml), and
           vmalert for the other rule files

After --warm-minutes it measures, over --window-minutes: samples ingested per
second, active series, each process's CPU and resident memory, each rule
group's evaluation time on each evaluator (Prometheus: its last
evaluations, sampled every interval; vmalert: the mean over the window and
its 0.99 quantile). Then
every query of the fleet boards (rdma-overview.json, rdma-group.json with
$group at All), as Grafana sends it (instant for stat, table and bar gauge
panels; a range over the last 10 minutes at the interval's step for time
series), three times each; and the same query on raw series: each rollup
record replaced by its definition, down to the collectors' series (and the
culprit rules' records, which the rollups read). The median of each goes in
the report (docs/deployment.md, docs/benchmarks.md).
"""

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import yaml

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(SOURCE, "tests", "integration"))
import dashboard_queries as dq  # noqa: E402
from harness import (Server, as_shard, free_port, one_culprit_evaluator_keep,  # noqa: E402
                     rule_files)
from promql_selectors import sub_selectors  # noqa: E402

RULE_FILES = rule_files()
BOARDS = ("rdma-overview.json", "rdma-group.json")
INSTANT_PANELS = {"stat", "table", "bargauge", "gauge"}
CLK_TCK = os.sysconf("SC_CLK_TCK")


def get(url, timeout=300):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


class Proc(Server):
    """A server of the run, in the run's directory (NAME.log kept there),
    with what the report reads of it."""

    def __init__(self, name, argv, workdir, port=None, ready=None, timeout=300):
        super().__init__(name, argv, ready, port, timeout, workdir)

    def cpu_seconds(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def memory(self):
        out = {}
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    out[line.split(":")[0]] = int(line.split()[1]) * 1024
        return out

    def metrics(self):
        """This process's own /metrics: {name{labels}: value}."""
        out = {}
        for line in get(self.url + "/metrics").decode().splitlines():
            if line and not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                try:
                    out[key] = float(value)
                except ValueError:
                    pass
        return out

    def timed_query(self, expr, range_minutes=None, step=None):
        """Runs EXPR; (seconds, status, result count)."""
        params = {"query": expr}
        path = "/api/v1/query"
        if range_minutes:
            now = time.time()
            params.update(start=f"{now - 60 * range_minutes:.3f}", end=f"{now:.3f}", step=step)
            path = "/api/v1/query_range"
        t = time.perf_counter()
        try:
            body = json.loads(get(self.url + path + "?" + urllib.parse.urlencode(params)))
        except urllib.error.HTTPError as e:
            text = e.read()
            try:
                body = json.loads(text)
            except ValueError:
                # VictoriaMetrics answers some errors in plain text.
                body = {"status": "error: " + text.decode(errors="replace")[:300]}
        elapsed = time.perf_counter() - t
        return elapsed, body.get("status"), len(body.get("data", {}).get("result", []))

    def stop(self, timeout=60):
        super().stop(timeout)


def scrape_config(path, targets, interval):
    with open(os.path.join(SOURCE, path)) as f:
        config = yaml.safe_load(f)
    config["global"]["scrape_interval"] = f"{interval}s"
    for job in config.get("scrape_configs", []):
        job.pop("static_configs", None)
        job["scrape_timeout"] = f"{min(10, interval)}s"
        job["file_sd_configs"] = [{"files": [targets]}]
    return config


def seconds(duration):
    """A Prometheus duration of one unit ("15s", "1m") in seconds."""
    m = re.fullmatch(r"(\d+)([smh])", str(duration))
    if not m:
        raise ValueError(f"a rule group interval this benchmark does not read: {duration!r}")
    return int(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[m.group(2)]


def group_intervals(default):
    """{group: its evaluation interval in seconds} of the rule files."""
    out = {}
    for name in RULE_FILES:
        with open(os.path.join(SOURCE, "config/prometheus", name)) as f:
            for g in yaml.safe_load(f)["groups"]:
                out[g["name"]] = seconds(g.get("interval", f"{default}s"))
    return out


def records():
    """{record: [definitions]} of the rollup rules (the culprit rules'
    records are left as they are: the rollups read them)."""
    out = {}
    for name in ("rdma-rollups.yml", "rdma-rollups-fleet.yml"):
        with open(os.path.join(SOURCE, "config/prometheus", name)) as f:
            for g in yaml.safe_load(f)["groups"]:
                for r in g["rules"]:
                    out.setdefault(r["record"], []).append(r["expr"].strip())
    return out


MATCHER = re.compile(r'\s*(\w+)\s*(=~|!=|!~|=)\s*"((?:[^"\\]|\\.)*)"\s*,?')


def raw(expr, defs):
    """EXPR with every rollup record replaced by its definition, recursively;
    None when a record is selected by a matcher that cannot be put on an
    expression (a regex other than .*, a negative matcher)."""
    def expand(name, selector, range_, text):
        if name not in defs:
            return text
        expanded = [raw(d, defs) for d in defs[name]]
        if None in expanded:
            raise ValueError(name)
        body = " or ".join(f"({e})" for e in expanded)
        text = f"({body})"
        for label, op, value in MATCHER.findall(selector.strip("{}")):
            if op == "=~" and value == ".*":
                continue
            if op != "=":
                raise ValueError(f"{label}{op}{value}")
            # Keeps the samples whose LABEL is VALUE.
            text = f'({text} and on ({label}) label_replace(vector(1), "{label}", "{value}", "", ""))'
        return text + range_

    try:
        return sub_selectors(expr, expand)
    except ValueError:
        return None


def board_queries():
    """[(board, panel title, refId, expr, instant)] of the fleet boards,
    variables at All."""
    out = []
    for board in BOARDS:
        d = dq.load(board)
        names = {v["name"] for v in dq.variables(d)}
        for p in dq.panels(d):
            for t in p.get("targets", []):
                expr, _ = dq.substitute(t["expr"], {n: ".*" for n in names}, names)
                out.append((board, p["title"], t["refId"], expr, p.get("type") in INSTANT_PANELS))
    return out


def timed(engine, expr, instant, interval, repeat=3):
    times, status, n = [], None, 0
    for _ in range(repeat):
        t, status, n = engine.timed_query(expr, None if instant else 10, None if instant else f"{interval}s")
        times.append(t)
        if status != "success":
            break
    return {"median_s": round(statistics.median(times), 4), "max_s": round(max(times), 4),
            "status": status, "series": n}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts", type=int, required=True)
    ap.add_argument("--layout", choices=("single", "shards", "vmagent"), required=True)
    ap.add_argument("--build-dir", default=os.path.join(SOURCE, "build"))
    ap.add_argument("--rnics", type=int, default=8)
    ap.add_argument("--processes", type=int, default=8)
    ap.add_argument("--group-size", type=int, default=32)
    ap.add_argument("--remote", type=int, default=4)
    ap.add_argument("--interval", type=int, default=15)
    ap.add_argument("--warm-minutes", type=float, default=8)
    ap.add_argument("--window-minutes", type=float, default=3)
    ap.add_argument("--report")
    a = ap.parse_args()

    work = tempfile.mkdtemp(prefix="fleet_load_")
    targets = os.path.join(work, "targets.json")
    procs = []
    report = {"hosts": a.hosts, "rnics": a.rnics, "processes": a.processes,
              "group_size": a.group_size, "remote": a.remote, "layout": a.layout,
              "interval_s": a.interval}
    try:
        fleet = Proc("fleet_hosts", [os.path.join(a.build_dir, "bench", "fleet_hosts"),
                                     "--hosts", str(a.hosts), "--rnics", str(a.rnics),
                                     "--processes", str(a.processes), "--group-size",
                                     str(a.group_size), "--remote", str(a.remote),
                                     "--targets", targets], work)
        procs.append(fleet)
        while not os.path.exists(targets):
            if fleet.proc.poll() is not None:
                raise RuntimeError("fleet_hosts exited")
            time.sleep(1)
        with open(os.path.join(work, "fleet_hosts.log")) as f:
            ready = [line for line in f if line.startswith("ready")]
        report["series_served"] = int(ready[0].split()[2]) if ready else None
        print(f"fleet_hosts: {ready[0].strip() if ready else '?'}", flush=True)
        for name in RULE_FILES:
            shutil.copy(os.path.join(SOURCE, "config/prometheus", name), work)

        def prometheus(name, config_path, remote_write=(), shard=None, args=(), rules=None,
                       culprit_keep=None):
            """CONFIG_PATH with the scrape targets, writing to the URLs
            REMOTE_WRITE (its other remote_writes dropped), RULES for its
            rule files if given, and its second remote_write keeping the
            series whose name matches CULPRIT_KEEP if given."""
            config = scrape_config(config_path, targets, a.interval)
            config["global"]["evaluation_interval"] = f"{a.interval}s"
            config.pop("alerting", None)  # alerts are not sent anywhere
            config["remote_write"] = config.get("remote_write", [])[:len(remote_write)]
            for w, url in zip(config["remote_write"], remote_write):
                w["url"] = url
            if culprit_keep is not None:
                config["remote_write"][1]["write_relabel_configs"] = [
                    {"source_labels": ["__name__"], "regex": culprit_keep, "action": "keep"}]
            if not config["remote_write"]:
                del config["remote_write"]
            if rules is not None:
                config["rule_files"] = rules
            if shard is not None:
                as_shard(config, shard)
            with open(os.path.join(work, f"{name}.yml"), "w") as f:
                yaml.safe_dump(config, f)
            port = free_port()
            proc = Proc(name, ["prometheus", "--config.file", f"{name}.yml",
                               "--storage.tsdb.path", f"{name}-data",
                               "--web.listen-address", f"127.0.0.1:{port}",
                               "--log.level", "warn", *args], work, port, "/-/ready")
            procs.append(proc)
            return proc

        def vmalert(rules):
            notifier = free_port()  # nothing listens: alerts are dropped with an error
            p = free_port()
            procs.append(Proc("vmalert", [
                "vmalert", f"-datasource.url={engine.url}", f"-remoteWrite.url={engine.url}",
                f"-notifier.url=http://127.0.0.1:{notifier}",
                f"-evaluationInterval={a.interval}s", f"-httpListenAddr=127.0.0.1:{p}",
                "-loggerLevel=ERROR"] + [f"-rule={r}" for r in rules], work, p, "/health"))

        if a.layout == "single":
            engine = prometheus("prometheus", "config/prometheus/prometheus.yml")
        else:
            port = free_port()
            engine = Proc("victoria-metrics", ["victoria-metrics", "-storageDataPath=vmdata",
                                               f"-httpListenAddr=127.0.0.1:{port}",
                                               "-loggerLevel=WARN"], work, port, "/health")
            procs.append(engine)
        store = engine.url + "/api/v1/write"
        if a.layout == "shards":
            # One culprit rules' evaluator of every rail, as a fleet of this
            # size runs it (prometheus-shard.yml's comment): rdma-culprits.yml,
            # receiving every host record of the culprit rules.
            culprits = prometheus("prometheus-culprits", "config/prometheus/prometheus-culprits.yml",
                                  remote_write=[store], rules=["rdma-culprits.yml"],
                                  args=["--web.enable-remote-write-receiver"])
            for n in range(2):
                prometheus(f"prometheus-shard{n}", "config/prometheus/prometheus-shard.yml",
                           remote_write=[store, culprits.url + "/api/v1/write"], shard=n,
                           culprit_keep=one_culprit_evaluator_keep())
            central = set(rule_files("prometheus-shard.yml") + ["rdma-culprits.yml"])
        elif a.layout == "vmagent":
            central = set(rule_files("prometheus-culprits-scrape.yml"))
            prometheus("prometheus-culprits", "config/prometheus/prometheus-culprits-scrape.yml",
                       remote_write=[store])
        if a.layout != "single":
            vmalert([r for r in RULE_FILES if r not in central])
        if a.layout == "vmagent":
            with open(os.path.join(work, "vmagent.yml"), "w") as f:
                yaml.safe_dump(scrape_config("config/victoriametrics/vmagent.yml", targets,
                                             a.interval), f)
            for n in range(2):
                p = free_port()
                procs.append(Proc(f"vmagent{n}", [
                    "vmagent", "-promscrape.config=vmagent.yml",
                    "-promscrape.cluster.membersCount=2", f"-promscrape.cluster.memberNum={n}",
                    f"-remoteWrite.url={engine.url}/api/v1/write",
                    f"-remoteWrite.tmpDataPath=queue{n}", f"-httpListenAddr=127.0.0.1:{p}",
                    "-loggerLevel=WARN"], work, p, "/health"))

        print(f"warming up {a.warm_minutes} min", flush=True)
        time.sleep(60 * a.warm_minutes)

        # The window: CPU and ingestion counters at both ends, rule groups
        # sampled every interval.
        def ingested():
            m = engine.metrics()
            if a.layout == "single":
                return m.get("prometheus_tsdb_head_samples_appended_total", 0) + sum(
                    v for k, v in m.items()
                    if k.startswith("prometheus_tsdb_head_samples_appended_total{"))
            return sum(v for k, v in m.items() if k.startswith("vm_rows_inserted_total{"))

        # Every rule evaluator: the Prometheus servers (sampled every
        # interval) and vmalert (its counters at both ends of the window).
        evaluators = [p for p in procs if p.name.startswith("prometheus")]
        alert = next((p for p in procs if p.name == "vmalert"), None)
        intervals = group_intervals(a.interval)

        def key(proc, group):
            return group if a.layout == "single" else f"{proc.name}/{group}"

        cpu0 = {p.name: p.cpu_seconds() for p in procs}
        rows0, t0 = ingested(), time.monotonic()
        rule_samples, rule_times = {}, {}
        alert0 = alert.metrics() if alert else None
        while time.monotonic() - t0 < 60 * a.window_minutes:
            for proc in evaluators:
                groups = json.loads(get(proc.url + "/api/v1/rules"))["data"]["groups"]
                for g in groups:
                    k = key(proc, g["name"])
                    rule_samples.setdefault(k, (g["name"], []))[1].append(g["evaluationTime"])
                    for r in g["rules"]:
                        rule_times.setdefault((k, r["name"]), []).append(r["evaluationTime"])
            time.sleep(a.interval)
        rows1, t1 = ingested(), time.monotonic()
        cpu1 = {p.name: p.cpu_seconds() for p in procs}
        report["samples_ingested_per_s"] = round((rows1 - rows0) / (t1 - t0))
        report["components"] = {p.name: {"cpu_cores": round((cpu1[p.name] - cpu0[p.name]) / (t1 - t0), 3),
                                        "rss_bytes": p.memory().get("VmRSS"),
                                        "peak_rss_bytes": p.memory().get("VmHWM")} for p in procs}
        for p in evaluators:  # each Prometheus' own series (a shard's share of the fleet)
            report["components"][p.name]["head_series"] = int(
                p.metrics().get("prometheus_tsdb_head_series", 0))
        m = engine.metrics()
        if a.layout == "single":
            report["active_series"] = int(m.get("prometheus_tsdb_head_series", 0))
        else:
            report["active_series"] = int(sum(v for k, v in m.items()
                                              if k.startswith('vm_cache_entries{type="storage/hour_metric_ids"')))
        groups = {
            k: {"median_s": round(statistics.median(v), 4), "max_s": round(max(v), 4),
                "interval_s": intervals[name],
                "slowest_rules": sorted(
                    ((r, round(statistics.median(t), 4)) for (gk, r), t in rule_times.items()
                     if gk == k), key=lambda x: -x[1])[:5]}
            for k, (name, v) in rule_samples.items()}
        if alert:
            vm_groups = {}
            for k, v in alert.metrics().items():
                g = re.search(r'group="([^"]*)"', k)
                if not g or not k.startswith("vmalert_iteration_duration_seconds"):
                    continue
                entry = vm_groups.setdefault(f"vmalert/{g.group(1)}",
                                             {"interval_s": intervals[g.group(1)]})
                if k.startswith("vmalert_iteration_duration_seconds_sum"):
                    entry["sum"] = v - alert0.get(k, 0)
                elif k.startswith("vmalert_iteration_duration_seconds_count"):
                    entry["count"] = v - alert0.get(k, 0)
                elif 'quantile="0.99"' in k:
                    entry["p99_s"] = round(v, 4)
            for g in vm_groups.values():
                g["mean_s"] = round(g.pop("sum", 0) / max(1, g.pop("count", 0)), 4)
            groups.update(vm_groups)
        report["rule_groups"] = groups

        if a.report:  # what was measured so far, in case a query fails
            with open(a.report, "w") as f:
                json.dump(report, f, indent=1)
        defs = records()
        panels = []
        for board, title, ref, expr, instant in board_queries():
            entry = {"board": board, "panel": title, "ref": ref,
                     "query": "instant" if instant else "range 10m",
                     "rollups": timed(engine, expr, instant, a.interval)}
            r = raw(expr, defs)
            entry["raw"] = timed(engine, r, instant, a.interval) if r else None
            panels.append(entry)
            print(f"{board} {title} [{ref}]: rollups {entry['rollups']['median_s']} s, raw "
                  f"{entry['raw']['median_s'] if entry['raw'] else '-'} s", flush=True)
        report["panels"] = panels
    finally:
        for p in reversed(procs):
            p.stop()
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(report, indent=1)
    if a.report:
        with open(a.report, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
