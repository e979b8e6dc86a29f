"""The sharded layouts of docs/deployment.md on loopback, against the
single-server one, on a simulated fleet (bench/fleet_hosts: 24 hosts of
4 RNICs in 3 groups, each the exporter's own rendering, counters growing by
its model):

  single    one Prometheus scraping every host and evaluating the rule files
            (config/prometheus/prometheus.yml)
  prom      two Prometheus shards (prometheus-shard.yml, hashmod), each
            evaluating the alerting rules, the last-hop evidence, the
            culprit rules' host part and the port and host rollups over its
            own hosts and writing its series and records to
            VictoriaMetrics, and the host part's records to the culprit
            rules' evaluators: two by rail (prometheus-culprits.yml, rails
            0-1 and 2-3) and one across rails
            (prometheus-culprits-across-rails.yml), which write their own
            records there; vmalert evaluates the fleet rollups
  vmagent   two vmagents in cluster sharding (config/victoriametrics/
            vmagent.yml) writing to another VictoriaMetrics; vmalert
            evaluates every rule file

Each engine must return the hand-worked rollups below, and every query of
the fleet boards (rdma-overview.json, rdma-group.json) the same answer on
all three. The waits are for values to arrive, bounded by a deadline; no
check depends on how fast the machine is.
"""
import copy
import http.server
import json
import math
import os
import shutil
import socket
import tempfile
import threading
import time
import unittest
import urllib.request

import yaml

import dashboard_queries as dq
from harness import SOURCE_DIR, Prometheus, Server, as_shard, free_port, rule_files

FLEET_HOSTS_BIN = os.environ.get("RDMA_FLEET_HOSTS_BIN",
                                 os.path.join(SOURCE_DIR, "build", "bench", "fleet_hosts"))
RULE_FILES = rule_files()
SHARD_RULE_FILES = rule_files("prometheus-shard.yml")
# The culprit evaluators' rule files, and rdma-culprits.yml, the same rules
# in one group for one server (which vmalert must not evaluate beside them).
CULPRIT_RULE_FILES = (rule_files("prometheus-culprits.yml")
                      + rule_files("prometheus-culprits-across-rails.yml") + ["rdma-culprits.yml"])
# The rails of each culprit rules' evaluator by rail, as the shards'
# relabelling sends them (for the regexes of prometheus-shard.yml).
RAIL_EVALUATORS = {"rails-0-3": ("rail[0-3]", "rail[01]"), "rails-4-7": ("rail[4-7]", "rail[23]")}
INTERVAL = "2s"
DEADLINE_S = 300

# The fleet: hosts host0..host23, group g<h // 8>, devices mlx5_0..mlx5_3 on
# rail0..rail3. Faults injected on top of the model (bench/fleet_hosts.cpp):
HOSTS, GROUP, RNICS, REMOTE = 24, 8, 4, 2
SYMBOL_ERRORS = (5, "mlx5_1", 2)     # host 5 (g0), rail1: 2 symbol errors/s
CNP_SENT = (13, "mlx5_0", 50)        # host 13 (g1), rail0: 50 CNPs sent/s
PROBE_TIMEOUTS = (20, "*", 1)        # host 20 (g2): every scope counter 1 loss/s
PAUSED = (10, "mlx5_2", 0.75)        # host 10 (g1), rail2: paused three quarters of the time,
                                     # on every priority, both ways (the last hop reads it
                                     # over 10 minutes: above a fifth after 160 s of data)
GROWTH = [
    (SYMBOL_ERRORS[0], "rdma_port_pma_symbol_error_total", SYMBOL_ERRORS[1], SYMBOL_ERRORS[2]),
    (CNP_SENT[0], "rdma_port_hw_np_cnp_sent_total", CNP_SENT[1], CNP_SENT[2]),
    (PROBE_TIMEOUTS[0], "rdma_probe_scope_timeouts_total", PROBE_TIMEOUTS[1],
     PROBE_TIMEOUTS[2]),
    (PAUSED[0], "rdma_netdev_pfc_pause_duration_seconds_total", PAUSED[1], PAUSED[2]),
]
PRIORITIES_DIRECTIONS = [(str(p), d) for p in range(8) for d in ("rx", "tx")]


def tx(host, device_index):
    """The model's transmit bytes per second of a port: 1,000,000 * (N + 1) + 1,000 * h."""
    return 1e6 * (device_index + 1) + 1e3 * host


def host_tx(host):
    return sum(tx(host, i) for i in range(RNICS))


def group_hosts(g):
    return range(g * GROUP, (g + 1) * GROUP)


# The probe round trip: every observation 10 us, in the bucket (5 us, 10 us]:
# p99 interpolates 99% of the way up that bucket.
P99 = 5e-6 + 0.99 * (10e-6 - 5e-6)
# Host 20 probes on 4 ports, 2 scopes each (group, remote): 8 scope
# counters at 10 probes/s sent and 1/s lost.
LOSS_RATIO = 8 * 1 / (8 * 10)
FLEET_TX = sum(host_tx(h) for h in range(HOSTS))

# (query, [(labels that must match, value)]): the whole answer, by hand. An
# instance label "hostN" stands for host N's address; %(hostN)s in a query too.
EXPECTED = [
    ("count by (group) (instance:rdma_topology:info)",
     [({"group": f"g{g}"}, GROUP) for g in range(3)]),
    ("count by (group, rail) (instance_device_port:rdma_topology:info)",
     [({"group": f"g{g}", "rail": f"rail{r}"}, GROUP) for g in range(3) for r in range(RNICS)]),
    ('instance_device_port:rdma_transmit_bytes:rate2m{instance="%(host7)s"}',
     [({"device": f"mlx5_{i}", "port": "1"}, tx(7, i)) for i in range(RNICS)]),
    ('instance:rdma_transmit_bytes:rate2m{instance="%(host7)s"}', [({}, host_tx(7))]),
    ("group:rdma_transmit_bytes:rate2m",
     [({"group": f"g{g}"}, sum(host_tx(h) for h in group_hosts(g))) for g in range(3)]),
    ('group_rail:rdma_transmit_bytes:rate2m{group="g1"}',
     [({"rail": f"rail{r}"}, sum(tx(h, r) for h in group_hosts(1))) for r in range(RNICS)]),
    ("rail:rdma_transmit_bytes:rate2m",
     [({"rail": f"rail{r}"}, sum(tx(h, r) for h in range(HOSTS))) for r in range(RNICS)]),
    ("job:rdma_transmit_bytes:rate2m", [({"job": "rdma_exporter"}, FLEET_TX)]),
    ("instance:rdma_link_errors:rate2m > 0", [({"instance": "host5"}, 2)]),
    ("group_rail:rdma_link_errors:rate2m > 0", [({"group": "g0", "rail": "rail1"}, 2)]),
    ("group:rdma_link_errors:rate2m", [({"group": "g0"}, 2), ({"group": "g1"}, 0),
                                       ({"group": "g2"}, 0)]),
    ("group_rail:rdma_cnp_sent:rate2m > 0", [({"group": "g1", "rail": "rail0"}, 50)]),
    # Time paused per priority: every host's (the fake kernel's 8
    # priorities, both ways); host 10's port paused on each, its group's
    # and the fleet's most paused.
    ("count(instance_priority_direction:rdma_netdev_pfc_pause_duration_seconds:max_rate2m)",
     [({}, HOSTS * len(PRIORITIES_DIRECTIONS))]),
    ("group_priority_direction:rdma_netdev_pfc_pause_duration_seconds:max_rate2m > 0",
     [({"group": "g1", "priority": p, "direction": d}, PAUSED[2])
      for p, d in PRIORITIES_DIRECTIONS]),
    ("job_priority_direction:rdma_netdev_pfc_pause_duration_seconds:max_rate2m > 0",
     [({"priority": p, "direction": d}, PAUSED[2]) for p, d in PRIORITIES_DIRECTIONS]),
    ('group_rail_direction:rdma_netdev_pfc_pause_duration_seconds:max_rate2m > 0',
     [({"group": "g1", "rail": "rail2", "direction": d}, PAUSED[2]) for d in ("rx", "tx")]),
    # The last-hop evidence, wherever its host is evaluated: every port of
    # the fake kernel's module raises alarms and reads less light than its
    # low warning; host 5's mlx5_1 has symbol errors (more than 10 within
    # the hour); host 10's mlx5_2 is paused by its peer (the switch) more
    # than a fifth of the time. (Not the FEC evidence: vmalert reads a counter that holds
    # a few blocks when it first appears as grown by them, for the rule's
    # 10 minutes; docs/deployment.md, "The rule files under vmalert".)
    ('count by (evidence) (rdma:port_last_hop:evidence{evidence!="fec_uncorrectable"})',
     [({"evidence": "module_alarm"}, HOSTS * RNICS), ({"evidence": "rx_power_low"}, HOSTS * RNICS),
      ({"evidence": "symbol_errors"}, 1), ({"evidence": "paused_by_peer"}, 1)]),
    ('count by (instance, device, port, suspect) (rdma:port_last_hop:evidence{evidence="symbol_errors"})',
     [({"instance": "host5", "device": "mlx5_1", "port": "1", "suspect": "optic"}, 1)]),
    ('count by (instance, device, port, suspect) (rdma:port_last_hop:evidence{evidence="paused_by_peer"})',
     [({"instance": "host10", "device": PAUSED[1], "port": "1", "suspect": "switch"}, 1)]),
    ("instance:rdma_probe_loss:ratio_rate2m > 0", [({"instance": "host20"}, LOSS_RATIO)]),
    ("group:rdma_probe_loss:ratio_rate2m > 0", [({"group": "g2"}, LOSS_RATIO / GROUP)]),
    ('instance_scope_tclass:rdma_probe_group_latency_seconds:p99_rate2m{instance="%(host7)s"}',
     [({"scope": s, "tclass": "0"}, P99) for s in ("group", "remote")]),
    # Summed from every host's ports: each shard's part stays apart in the
    # store, and the rail level counts every probe of the fleet once (as
    # the group, leaf and fleet levels above count every port once).
    ("rail_scope_tclass:rdma_probe_group_latency_seconds:p99_rate2m",
     [({"rail": f"rail{r}", "scope": s, "tclass": "0"}, P99)
      for r in range(RNICS) for s in ("group", "remote")]),
    ('sum(shard_rail_scope_tclass_le:rdma_probe_group_latency_seconds_bucket:rate2m{le="+Inf"})'
     ' / sum(instance_scope_tclass_le:rdma_probe_group_latency_seconds_bucket:rate2m{le="+Inf"})',
     [({}, 1)]),
    # Every port probes the 7 others of its group and 2 hosts of the other
    # groups: the culprit rules' host records, one per pair and one per
    # RNIC and scope (the prober end), wherever the hosts are evaluated;
    # their records, one per RNIC, and every RNIC's target end inside its
    # group, wherever they are evaluated.
    ("count(rdma_probe_sent_total)", [({}, HOSTS * RNICS * (GROUP - 1 + REMOTE))]),
    ("count(rdma:probe_pair:sent:increase2m)", [({}, HOSTS * RNICS * (GROUP - 1 + REMOTE))]),
    ("count by (scope) (rdma:probe_rnic_prober:sent:increase2m)",
     [({"scope": s}, HOSTS * RNICS) for s in ("group", "remote")]),
    ("count(rdma:probe_rnic:sent:increase2m)", [({}, HOSTS * RNICS)]),
    ('count(rdma:probe_rnic_end:sent:increase2m{end="target", scope="group"})',
     [({}, HOSTS * RNICS)]),
]


def close(a, b):
    return math.isclose(a, b, rel_tol=0.01, abs_tol=1e-12) or (math.isnan(a) and math.isnan(b))


def matches(result, expected):
    """Whether an instant vector is exactly EXPECTED: as many samples, each
    with the labels given and the value within 1%."""
    if len(result) != len(expected):
        return False
    left = list(result)
    for labels, value in expected:
        for s in left:
            v = float(s["value"][1])
            if all(s["metric"].get(k) == w for k, w in labels.items()) and close(v, value):
                left.remove(s)
                break
        else:
            return False
    return True


class Notifier(http.server.BaseHTTPRequestHandler):
    """Where vmalert sends its alerts: accepted and dropped."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def config_file(path):
    with open(os.path.join(SOURCE_DIR, path)) as f:
        return yaml.safe_load(f)


def with_targets(config, targets_file):
    """CONFIG with every scrape job reading TARGETS_FILE, at the test's interval."""
    config = copy.deepcopy(config)
    config["global"]["scrape_interval"] = INTERVAL
    for job in config["scrape_configs"]:
        job.pop("static_configs", None)
        job["scrape_timeout"] = INTERVAL
        job["file_sd_configs"] = [{"files": [targets_file]}]
    return config


class ShardedLayoutTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.procs = []
        cls.tmp = tempfile.mkdtemp(prefix="rdma_sharded_")
        try:
            cls.start()
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def start(cls):
        targets = os.path.join(cls.tmp, "targets.json")
        argv = [FLEET_HOSTS_BIN, "--hosts", str(HOSTS), "--rnics", str(RNICS), "--processes", "2",
                "--group-size", str(GROUP), "--remote", str(REMOTE), "--targets", targets,
                "--idle-timeout", "10"]
        for host, metric, device, rate in GROWTH:
            argv += ["--grow", f"{host},{metric},{device},{rate}"]
        fleet = Server("fleet_hosts", argv)
        cls.procs.append(fleet)
        deadline = time.monotonic() + 120
        while not os.path.exists(targets):
            if fleet.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"fleet_hosts did not start:\n{fleet.log()}")
            time.sleep(0.2)
        with open(targets) as f:
            cls.instances = {f"host{h}": t["targets"][0] for h, t in enumerate(json.load(f))}

        cls.notifier = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Notifier)
        threading.Thread(target=cls.notifier.serve_forever, daemon=True).start()
        rules = {}
        for name in RULE_FILES:
            with open(os.path.join(SOURCE_DIR, "config/prometheus", name)) as f:
                rules[name] = f.read()

        # The single server: the shipped configuration, rules and all.
        single = with_targets(config_file("config/prometheus/prometheus.yml"), targets)
        single["global"]["evaluation_interval"] = INTERVAL
        notifier = [f"127.0.0.1:{cls.notifier.server_address[1]}"]
        single["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] = notifier
        cls.single = Prometheus(yaml.safe_dump(single), files=rules)

        # Prometheus shards into one VictoriaMetrics, each evaluating the
        # rules of its own hosts, and sending the culprit rules' host
        # records to their evaluators: by rail, two rails each, and across
        # rails, which the ones by rail send theirs to.
        cls.vm_prom = cls.victoria_metrics("vm_prom")

        def evaluator(path, writes_to):
            config = config_file(path)
            config["global"]["evaluation_interval"] = INTERVAL
            config["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] = notifier
            config["rule_files"] = [os.path.join(SOURCE_DIR, "config/prometheus", r)
                                    for r in config["rule_files"]]
            for w, url in zip(config["remote_write"], writes_to):
                w["url"] = url + "/api/v1/write"
                w["queue_config"] = {"batch_send_deadline": "1s"}
            server = Prometheus(yaml.safe_dump(config), args=["--web.enable-remote-write-receiver"])
            cls.culprit_evaluators.append(server)
            return server

        cls.culprit_evaluators = []
        cls.across_rails = evaluator("config/prometheus/prometheus-culprits-across-rails.yml",
                                     [cls.vm_prom.url])
        cls.by_rail = {name: evaluator("config/prometheus/prometheus-culprits.yml",
                                       [cls.vm_prom.url, cls.across_rails.url])
                       for name in RAIL_EVALUATORS}
        shard = with_targets(config_file("config/prometheus/prometheus-shard.yml"), targets)
        shard["global"]["evaluation_interval"] = INTERVAL
        shard["rule_files"] = [os.path.join(SOURCE_DIR, "config/prometheus", r)
                               for r in SHARD_RULE_FILES]
        shard["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] = notifier
        for w in shard["remote_write"]:
            w["queue_config"] = {"batch_send_deadline": "1s"}
            if "victoria-metrics" in w["url"]:
                w["url"] = cls.vm_prom.url + "/api/v1/write"
            elif "across-rails" in w["url"]:
                w["url"] = cls.across_rails.url + "/api/v1/write"
            else:
                (name,) = [n for n in RAIL_EVALUATORS if n in w["url"]]
                shipped, ours = RAIL_EVALUATORS[name]
                (keep,) = w["write_relabel_configs"]
                assert keep["regex"].count(shipped) == 1, keep["regex"]
                keep["regex"] = keep["regex"].replace(shipped, ours)
                w["url"] = cls.by_rail[name].url + "/api/v1/write"
        for n in range(2):
            cfg = as_shard(copy.deepcopy(shard), n)
            path = os.path.join(cls.tmp, f"shard{n}.yml")
            with open(path, "w") as f:
                yaml.safe_dump(cfg, f)
            port = free_port()
            cls.procs.append(Server(
                f"prometheus_shard{n}",
                ["prometheus", "--config.file", path, "--storage.tsdb.path", "{dir}/data",
                 "--web.listen-address", f"127.0.0.1:{port}", "--log.level", "warn"],
                "/-/ready", port))
        cls.vmalert("vmalert_prom", cls.vm_prom,
                    [r for r in RULE_FILES
                     if r not in SHARD_RULE_FILES and r not in CULPRIT_RULE_FILES])

        # vmagent shards into another VictoriaMetrics.
        cls.vm_agent = cls.victoria_metrics("vm_agent")
        agent = with_targets(config_file("config/victoriametrics/vmagent.yml"), targets)
        path = os.path.join(cls.tmp, "vmagent.yml")
        with open(path, "w") as f:
            yaml.safe_dump(agent, f)
        for n in range(2):
            port = free_port()
            cls.procs.append(Server(
                f"vmagent{n}",
                ["vmagent", f"-promscrape.config={path}", "-promscrape.cluster.membersCount=2",
                 f"-promscrape.cluster.memberNum={n}",
                 f"-remoteWrite.url={cls.vm_agent.url}/api/v1/write",
                 "-remoteWrite.flushInterval=1s", "-remoteWrite.tmpDataPath={dir}/queue",
                 f"-httpListenAddr=127.0.0.1:{port}", "-loggerLevel=WARN"], "/health", port))
        cls.vmalert("vmalert_agent", cls.vm_agent, RULE_FILES)
        cls.engines = {"single": cls.single, "prom": cls.vm_prom, "vmagent": cls.vm_agent}

    @classmethod
    def victoria_metrics(cls, name):
        port = free_port()
        # Samples are visible to queries at once (the default waits 30 s for
        # late samples, which only delays every rollup by as much).
        vm = Server(name, ["victoria-metrics", "-storageDataPath={dir}/data",
                            f"-httpListenAddr=127.0.0.1:{port}", "-search.latencyOffset=1s",
                            "-search.disableCache", "-loggerLevel=WARN"], "/health", port)
        cls.procs.append(vm)
        return vm

    @classmethod
    def vmalert(cls, name, vm, rule_files):
        port = free_port()
        argv = ["vmalert", f"-datasource.url={vm.url}", f"-remoteWrite.url={vm.url}",
                "-remoteWrite.flushInterval=1s",
                f"-notifier.url=http://127.0.0.1:{cls.notifier.server_address[1]}",
                f"-evaluationInterval={INTERVAL}", f"-httpListenAddr=127.0.0.1:{port}",
                "-loggerLevel=WARN"]
        argv += [f"-rule={os.path.join(SOURCE_DIR, 'config/prometheus', r)}" for r in rule_files]
        cls.procs.append(Server(name, argv, "/health", port))

    @classmethod
    def tearDownClass(cls):
        for p in [getattr(cls, "single", None)] + getattr(cls, "culprit_evaluators", []):
            if p:
                p.stop()
        for p in reversed(cls.procs):
            p.stop()
        if getattr(cls, "notifier", None):
            cls.notifier.shutdown()
            cls.notifier.server_close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def logs(self):
        return "\n".join(f"--- {p.name}\n{p.log()}" for p in self.procs)

    def wait_for(self, engine, expr, expected, wait_s=DEADLINE_S):
        """Polls ENGINE until EXPR returns EXPECTED, for up to WAIT_S seconds;
        fails with the last answer otherwise."""
        expr = expr % self.instances
        expected = [({k: self.instances[w] if k == "instance" else w for k, w in labels.items()},
                     value) for labels, value in expected]
        deadline = time.monotonic() + wait_s
        while True:
            r = engine.query(expr)
            self.assertEqual(r["status"], "success", f"{expr}: {r}")
            if matches(r["data"]["result"], expected):
                return
            if time.monotonic() > deadline:
                self.fail(f"{expr} on {engine}: {r['data']['result']}\nexpected {expected}")
            time.sleep(1)

    def test_every_engine_returns_the_hand_worked_rollups(self):
        # Once a row has failed after the full wait, every engine has had
        # that long to settle: the rest are asked once each, so that wrong
        # rows cost one wait, not one per row and engine (which would run
        # into ctest's timeout and lose the report).
        waited_out = False
        for expr, expected in EXPECTED:
            for name, engine in self.engines.items():
                with self.subTest(engine=name, expr=expr):
                    try:
                        self.wait_for(engine, expr, expected, 0 if waited_out else DEADLINE_S)
                    except AssertionError:
                        waited_out = True
                        raise

    def test_the_culprit_evaluators_get_their_rails(self):
        # Each evaluator by rail holds the pairs of its two rails and every
        # host's address, and records per RNIC of those rails; the one across
        # rails gets every rail's RNICs from them and every host's address
        # from the shards. Every port probes the 7 others of its group and 2
        # remote hosts.
        pairs = HOSTS * (GROUP - 1 + REMOTE)
        for (name, (_, rails)), rail_numbers in zip(RAIL_EVALUATORS.items(), ((0, 1), (2, 3))):
            engine = self.by_rail[name]
            with self.subTest(evaluator=name):
                self.wait_for(engine, "count by (rail) (rdma:probe_pair:sent:increase2m)",
                              [({"rail": f"rail{r}"}, pairs) for r in rail_numbers])
                self.wait_for(engine, "count by (rail) (rdma:probe_rnic:sent:increase2m)",
                              [({"rail": f"rail{r}"}, HOSTS) for r in rail_numbers])
                self.wait_for(engine, "count(rdma:probe_host:instance)", [({}, HOSTS)])
        for expr, expected in (
                ("count by (rail) (rdma:probe_rnic:sent:increase2m)",
                 [({"rail": f"rail{r}"}, HOSTS) for r in range(RNICS)]),
                ("count by (rail) (rdma:probe_rnic:pairs:2m)",
                 [({"rail": f"rail{r}"}, HOSTS) for r in range(RNICS)]),
                ("count(rdma:probe_host:instance)", [({}, HOSTS)]),
                ("count(rdma:probe_pair:sent:increase2m) or vector(0)", [({}, 0)])):
            with self.subTest(evaluator="across rails", expr=expr):
                self.wait_for(self.across_rails, expr, expected)

    def test_every_series_is_written_once(self):
        # The culprit evaluator scrapes the probe series too, and must write
        # only its records: a probe series written twice would hold twice
        # the samples of a port counter of the same host, which only the
        # shards write. Counted once every host has been scraped 20 times.
        scrapes = "min(count_over_time(rdma_port_pma_port_xmit_data_bytes_total[1h]))"
        ratio = ("max(max by (instance) (count_over_time(rdma_probe_scope_sent_total[1h]))"
                 " / max by (instance) (count_over_time("
                 "rdma_port_pma_port_xmit_data_bytes_total[1h])))")
        for name, engine in self.engines.items():
            with self.subTest(engine=name):
                deadline = time.monotonic() + DEADLINE_S
                while True:
                    low = engine.query(scrapes)["data"]["result"]
                    if low and float(low[0]["value"][1]) >= 20:
                        break
                    self.assertLess(time.monotonic(), deadline, f"{name}: {low}")
                    time.sleep(1)
                (r,) = engine.query(ratio)["data"]["result"]
                # The two are scraped together; the ends of the window can
                # differ by a sample.
                self.assertLess(float(r["value"][1]), 1.1, name)

    def test_fleet_panels_answer_alike_on_every_engine(self):
        # Once the rollups have settled everywhere (the test above's last
        # records, the highest level)...
        for engine in self.engines.values():
            self.wait_for(engine, "job:rdma_transmit_bytes:rate2m",
                          [({"job": "rdma_exporter"}, FLEET_TX)])
            self.wait_for(engine, "group:rdma_probe_loss:ratio_rate2m > 0",
                          [({"group": "g2"}, LOSS_RATIO / GROUP)])
        for board in ("rdma-overview.json", "rdma-group.json"):
            d = dq.load(board)
            names = {v["name"] for v in dq.variables(d)}
            for p in dq.panels(d):
                for t in p.get("targets", []):
                    expr, unknown = dq.substitute(t["expr"], {n: ".*" for n in names}, names)
                    self.assertEqual(unknown, set(), p["title"])
                    with self.subTest(board=board, panel=p["title"], ref=t["refId"]):
                        single = self.answer(self.single, expr)
                        for n in ("prom", "vmagent"):
                            self.assertTrue(same_answer(self.answer(self.engines[n], expr), single),
                                            f"{n}: {expr}\n{self.answer(self.engines[n], expr)}"
                                            f"\nsingle: {single}")

    def test_fleet_hosts_closes_idle_connections_and_answers_on(self):
        """A connection that sends nothing, and one that sends half a
        request, are closed after --idle-timeout (10 s); the host answers a
        new one."""
        address = self.instances["host0"]
        host, port = address.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=120) as idle, \
                socket.create_connection((host, int(port)), timeout=120) as partial:
            partial.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            # Each blocks until fleet_hosts closes the connection.
            self.assertEqual(idle.recv(1), b"")
            self.assertEqual(partial.recv(1), b"")
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=30) as r:
            self.assertIn(b"rdma_probe_sent_total", r.read())

    def answer(self, engine, expr):
        """EXPR's answer on ENGINE: [(sorted labels, value)]."""
        r = engine.query(expr)
        self.assertEqual(r["status"], "success", f"{expr}: {r}")
        return [(tuple(sorted(s["metric"].items())), float(s["value"][1]))
                for s in r["data"]["result"]]


def same_answer(a, b):
    """Whether two answers agree: the same values (within 1%), and the same
    labels for every value that only one sample has (topk() picks any of
    equal ones)."""
    if len(a) != len(b) or not all(close(x, y) for x, y in zip(sorted(v for _, v in a),
                                                                   sorted(v for _, v in b))):
        return False
    for labels, v in a:
        if sum(close(v, w) for _, w in a) == 1 and not any(
                labels == m and close(v, w) for m, w in b):
            return False
    return True


if __name__ == "__main__":
    unittest.main()
