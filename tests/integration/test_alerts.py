"""The alerting rules (config/prometheus/rdma-alerts.yml), the culprit rules
(config/prometheus/rdma-culprits.yml) and the scrape configuration example:
promtool accepts them, the unit tests in tests/alerts/ pass and cover every
alert firing and not firing, every alert has its annotations and a runbook
section, and every metric is documented; config/prometheus/generate.py
writes the rules from their templates and thresholds, each threshold
changed in one place."""
import copy
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

from harness import SOURCE_DIR, one_culprit_evaluator_keep, promtool, rule_files
from metrics_doc import MetricsDoc

sys.path.insert(0, os.path.join(SOURCE_DIR, "bench"))
from promql_selectors import kinds_of, selectors, selects_kinds  # noqa: E402

RULES = os.path.join(SOURCE_DIR, "config/prometheus/rdma-alerts.yml")
RULE_TESTS = os.path.join(SOURCE_DIR, "tests/alerts/rdma-alerts.test.yml")
CULPRIT_RULES = os.path.join(SOURCE_DIR, "config/prometheus/rdma-culprits-rails.yml")
CULPRIT_ACROSS_RULES = os.path.join(SOURCE_DIR, "config/prometheus/rdma-culprits-across-rails.yml")
CULPRIT_HOST_RULES = os.path.join(SOURCE_DIR, "config/prometheus/rdma-culprits-hosts.yml")
CULPRIT_TESTS = os.path.join(SOURCE_DIR, "tests/alerts/rdma-culprits.test.yml")
# The part across rails alone, on the records it receives.
CULPRIT_ACROSS_TESTS = os.path.join(SOURCE_DIR, "tests/alerts/rdma-culprits-across-rails.test.yml")
LAST_HOP_RULES = os.path.join(SOURCE_DIR, "config/prometheus/rdma-last-hop.yml")
LAST_HOP_TESTS = os.path.join(SOURCE_DIR, "tests/alerts/rdma-last-hop.test.yml")
ROLLUP_RULES = os.path.join(SOURCE_DIR, "config/prometheus/rdma-rollups.yml")
ROLLUP_FLEET_RULES = os.path.join(SOURCE_DIR, "config/prometheus/rdma-rollups-fleet.yml")
ROLLUP_TESTS = os.path.join(SOURCE_DIR, "tests/alerts/rdma-rollups.test.yml")
# Each rule file and its promtool tests (the culprit files have theirs
# together, as the two rollup files do; rdma-culprits.yml, the two culprit
# parts in one group, is checked to agree with them).
RULE_SETS = [(RULES, RULE_TESTS), (CULPRIT_HOST_RULES, CULPRIT_TESTS),
             (CULPRIT_RULES, CULPRIT_TESTS), (CULPRIT_ACROSS_RULES, CULPRIT_TESTS),
             (LAST_HOP_RULES, LAST_HOP_TESTS),
             (ROLLUP_RULES, ROLLUP_TESTS), (ROLLUP_FLEET_RULES, ROLLUP_TESTS)]
SCRAPE_CONFIG = os.path.join(SOURCE_DIR, "config/prometheus/prometheus.yml")
RUNBOOKS = os.path.join(SOURCE_DIR, "docs/alerts.md")
RUNBOOK_PREFIX = "file:///usr/share/doc/rdma_exporter/alerts.md#"
SEVERITIES = {"critical", "warning", "info"}


def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def alerts(rules_doc):
    return [r for g in rules_doc["groups"] for r in g["rules"] if "alert" in r]


def rules_of(rules_doc):
    return [r for g in rules_doc["groups"] for r in g["rules"]]


def rule(rules_doc, record):
    """The one rule that records `record`."""
    (found,) = [r for r in rules_of(rules_doc) if r.get("record") == record]
    return found


def heading_anchors(markdown):
    """GitHub-style anchors of the headings of a markdown text."""
    anchors = set()
    for line in markdown.splitlines():
        m = re.match(r"#+\s+(.*)", line)
        if m:
            text = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower())
            anchors.add(text.replace(" ", "-"))
    return anchors


class GeneratorCopy:
    """config/prometheus/generate.py with its thresholds, templates and the
    files it writes, copied to a folder of its own."""

    WRITES = ("rdma-culprits-rails.yml", "rdma-culprits-across-rails.yml", "rdma-culprits.yml",
              "rdma-alerts.yml")

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="rdma_rules_generate_")
        source = os.path.join(SOURCE_DIR, "config/prometheus")
        for name in ("generate.py", "culprit-thresholds.yml", "alert-thresholds.yml", *self.WRITES):
            shutil.copy(os.path.join(source, name), self.dir)
        shutil.copytree(os.path.join(source, "templates"), os.path.join(self.dir, "templates"))
        return self

    def set_threshold(self, name, old, new, thresholds="culprit-thresholds.yml"):
        path = os.path.join(self.dir, thresholds)
        with open(path) as f:
            text = f.read()
        line = f"\n{name}: {old}\n"
        if text.count(line) != 1:
            raise AssertionError(f"{name}: {old} is not in {path}")
        with open(path, "w") as f:
            f.write(text.replace(line, f"\n{name}: {new}\n"))

    def run(self, *args):
        return subprocess.run([sys.executable, os.path.join(self.dir, "generate.py"), *args],
                              capture_output=True, text=True, timeout=60)

    def __exit__(self, *exc):
        shutil.rmtree(self.dir)


class AlertRulesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if promtool() is None:
            raise RuntimeError("promtool not found (scripts/setup installs prometheus)")
        cls.rule_docs = {path: load_yaml(path) for path, _ in RULE_SETS}
        cls.alerts = [a for doc in cls.rule_docs.values() for a in alerts(doc)]

    def promtool(self, *args, cwd=None):
        return subprocess.run([promtool(), *args], capture_output=True, text=True, timeout=120,
                              cwd=cwd)

    def test_promtool_check_rules(self):
        for path, doc in self.rule_docs.items():
            r = self.promtool("check", "rules", path)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn(f"SUCCESS: {len(rules_of(doc))} rules found", r.stdout)

    def test_promtool_unit_tests_pass(self):
        suites = list(dict.fromkeys([*(tests for _, tests in RULE_SETS), CULPRIT_ACROSS_TESTS]))
        alerts_dir = os.path.dirname(RULE_TESTS)
        self.assertEqual(sorted(os.path.basename(t) for t in suites),
                         sorted(n for n in os.listdir(alerts_dir) if n.endswith(".test.yml")),
                         "a suite in tests/alerts/ that no test runs")
        for tests in suites:
            r = self.promtool("test", "rules", os.path.basename(tests), cwd=os.path.dirname(tests))
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("SUCCESS", r.stdout)

    def test_every_alert_has_a_firing_and_a_quiet_case(self):
        for tests in dict.fromkeys(tests for _, tests in RULE_SETS):
            cases = {}
            for test in load_yaml(tests)["tests"]:
                for case in test.get("alert_rule_test", []):
                    kind = "fires" if case.get("exp_alerts") else "quiet"
                    cases.setdefault(case["alertname"], set()).add(kind)
            own = [a for path, t in RULE_SETS if t == tests for a in alerts(self.rule_docs[path])]
            for alert in own:
                name = alert["alert"]
                self.assertEqual(cases.get(name), {"fires", "quiet"}, f"{name} in {tests}")
            self.assertEqual(set(cases), {a["alert"] for a in own}, "tests of unknown alerts")

    def test_the_unit_tests_notice_an_alert_that_never_or_always_fires(self):
        # The tests can fail: for every alert, a rule file in which it never
        # fires, and one in which it fires for everything, each checked by
        # that alert's cases only, beside the other files its tests load (the
        # culprit rules read the host part's records). One promtool run takes
        # all the files.
        d = tempfile.mkdtemp(prefix="rdma_alerts_")
        try:
            files = []
            for path, test_path in RULE_SETS:
                tests = load_yaml(test_path)
                for alert in alerts(self.rule_docs[path]):
                    name = alert["alert"]
                    own = []
                    for test in tests["tests"]:
                        cases = [c for c in test.get("alert_rule_test", [])
                                 if c["alertname"] == name]
                        if cases:
                            own.append({**test, "alert_rule_test": cases})
                    for kind, expr in (("never", "vector(1) == 2"), ("always", "vector(1)")):
                        rules = copy.deepcopy(self.rule_docs[path])
                        for rule in alerts(rules):
                            if rule["alert"] == name:
                                rule["expr"] = expr
                        stem = f"{name}-{kind}"
                        with open(os.path.join(d, stem + ".rules.yml"), "w") as f:
                            yaml.safe_dump(rules, f)
                        loaded = [stem + ".rules.yml" if os.path.basename(r) == os.path.basename(path)
                                  else os.path.normpath(os.path.join(os.path.dirname(test_path), r))
                                  for r in tests["rule_files"]]
                        with open(os.path.join(d, stem + ".test.yml"), "w") as f:
                            yaml.safe_dump({"rule_files": loaded,
                                            "evaluation_interval": tests["evaluation_interval"],
                                            **({"group_eval_order": tests["group_eval_order"]}
                                               if "group_eval_order" in tests else {}),
                                            "tests": own}, f)
                        files.append(stem + ".test.yml")
            # One stream, so that each verdict follows its file name.
            r = subprocess.run([promtool(), "test", "rules", *files], cwd=d, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
            self.assertNotEqual(r.returncode, 0)
            results = dict(re.findall(r"Unit Testing:\s+(\S+)\s+(SUCCESS|FAILED)", r.stdout))
            self.assertEqual(set(results), set(files), r.stdout[-2000:])
            survivors = [f for f, result in results.items() if result != "FAILED"]
            self.assertEqual(survivors, [], "mutated rules these tests do not notice")
        finally:
            shutil.rmtree(d)

    def test_annotations_labels_and_runbooks(self):
        with open(RUNBOOKS, encoding="utf-8") as f:
            runbooks = f.read()
        anchors = heading_anchors(runbooks)
        names = [a["alert"] for a in self.alerts]
        self.assertEqual(len(names), len(set(names)), "alert names are unique")
        for alert in self.alerts:
            name = alert["alert"]
            self.assertRegex(name, r"^Rdma[A-Za-z]+$")
            self.assertIn(alert.get("labels", {}).get("severity"), SEVERITIES, name)
            ann = alert.get("annotations", {})
            self.assertEqual(set(ann), {"summary", "description", "runbook_url"}, name)
            self.assertTrue(ann["summary"] and ann["description"], name)
            self.assertEqual(ann["runbook_url"], RUNBOOK_PREFIX + name.lower(), name)
            self.assertIn(name.lower(), anchors, f"docs/alerts.md has no section {name}")
            # The section says what to do, not only what it means.
            section = runbooks.split(f"### {name}\n", 1)[1].split("\n### ", 1)[0]
            self.assertGreater(len(section.split()), 60, f"runbook of {name} is too thin")
        documented = {a.lower() for a in re.findall(r"^### (Rdma\w+)$", runbooks, re.M)}
        self.assertEqual(documented, {n.lower() for n in names}, "runbooks without an alert")

    def test_every_metric_is_documented(self):
        # Every exporter metric a rule reads; the culprit rules' own records
        # are defined in their file.
        doc = MetricsDoc(os.path.join(SOURCE_DIR, "docs/metrics.md"))
        problems = []
        # A rule file may read another's records (the last-hop rules read
        # the culprits').
        records = {r["record"] for rules_doc in self.rule_docs.values()
                   for r in rules_of(rules_doc) if "record" in r}
        for rules_doc in self.rule_docs.values():
            for rule in rules_of(rules_doc):
                names, _, found = doc.expression_problems(rule["expr"])
                what = rule.get("alert") or rule.get("record")
                self.assertTrue(names, what)
                problems += [f"{what}: {p}" for p in found
                             if p.split(" ", 1)[0] not in records]
        self.assertEqual(problems, [])

    def test_the_shards_rules_read_one_host_at_a_time(self):
        # A Prometheus shard evaluates these files over its own hosts only:
        # a rule that aggregates over hosts would give each shard's part as
        # if it were the fleet's. Such a record must be a part, named so
        # that prometheus-shard.yml labels it with the shard on the way out,
        # and the fleet rules sum the parts. (`host`, the culprit rules'
        # name of a host, is its address: one exporter's too.)
        shard = load_yaml(os.path.join(SOURCE_DIR, "config/prometheus/prometheus-shard.yml"))
        (part,) = [r["regex"] for w in shard["remote_write"]
                   for r in w.get("write_relabel_configs", []) if r.get("target_label") == "shard"]
        parts = set()
        aggregation = re.compile(
            r"\b(sum|min|max|avg|count|group|stddev|stdvar|topk|bottomk|quantile|count_values)"
            r"\s*(?:(by|without)\s*\(([^)]*)\))?\s*\(")
        crossing = []
        for name in rule_files("prometheus-shard.yml"):
            doc = load_yaml(os.path.join(SOURCE_DIR, "config/prometheus", name))
            for rule in rules_of(doc):
                what = rule.get("alert") or rule.get("record")
                if re.fullmatch(part, rule.get("record", "")):
                    parts.add(what)
                for m in aggregation.finditer(rule["expr"]):
                    kind, labels = m.group(2), [x.strip() for x in (m.group(3) or "").split(",")]
                    keeps_host = (kind == "by" and ("instance" in labels or "host" in labels)) or (
                        kind == "without" and "instance" not in labels)
                    if not keeps_host:
                        crossing.append(what)
        self.assertEqual(sorted(set(crossing)), sorted(parts))
        self.assertEqual(len(parts), 26)

    def test_the_culprit_rules_read_what_is_sent_them(self):
        # Behind Prometheus shards, each rails' evaluator receives what the
        # shards send it of its rails, the evaluator across rails what the
        # shards and the rails' evaluators send it, and each writes on to the
        # store only its own records. Every flow must carry exactly what its
        # reader reads of its writer's records (a record matched by name and
        # kind, as the write relabelling sees it: "name;kind"), or a rule
        # would miss some or a series be written twice.
        config = os.path.join(SOURCE_DIR, "config/prometheus")
        shard = load_yaml(os.path.join(config, "prometheus-shard.yml"))
        rails = load_yaml(os.path.join(config, "prometheus-culprits.yml"))
        across = load_yaml(os.path.join(config, "prometheus-culprits-across-rails.yml"))
        self.assertEqual(rails["rule_files"], ["rdma-culprits-rails.yml"])
        self.assertEqual(across["rule_files"], ["rdma-culprits-across-rails.yml"])
        self.assertNotIn("scrape_configs", rails)
        self.assertNotIn("scrape_configs", across)

        def records(name):
            # {record: {its kinds ("" without a kind label)}}
            groups = load_yaml(os.path.join(config, name))["groups"]
            return {r: {k or "" for k in kinds} for r, kinds in kinds_of(groups).items()}

        def reads(name, of):
            # The records of OF that the rules of NAME read, as "name;kind"
            # (every kind of OF's record, but those a kind matcher excludes).
            return {"%s;%s" % (record, k)
                    for rule in rules_of(load_yaml(os.path.join(config, name)))
                    for record, matchers, _ in selectors(rule["expr"]) if record in of
                    for k in selects_kinds(matchers, of[record])}

        def keeps(config_doc, url_part):
            (write,) = [w for w in config_doc["remote_write"] if url_part in w["url"]]
            (rule,) = [r for r in write["write_relabel_configs"] if r["action"] == "keep"]
            return rule["source_labels"], rule["regex"]

        hosts = records("rdma-culprits-hosts.yml")
        inside = records("rdma-culprits-rails.yml")
        across_records = records("rdma-culprits-across-rails.yml")
        self.assertEqual(len(hosts), 9)
        host_rules = {r["record"]: r["expr"] for r in rules_of(
            load_yaml(os.path.join(config, "rdma-culprits-hosts.yml"))) if "record" in r}
        railed = {r for r, expr in host_rules.items() if re.search(r"\brail\b", expr)}
        self.assertEqual(len(railed), 6)

        # The shards to each rails' evaluator: the records of its rails
        # (as rail "rail1" or "rail5") and every host's.
        sent = set()
        for url, rail in (("rails-0-3", "rail1"), ("rails-4-7", "rail5")):
            labels, regex = keeps(shard, url)
            self.assertEqual(labels, ["__name__", "rail"])
            got = {r for r in hosts if re.fullmatch(regex, "%s;%s" % (r, rail if r in railed else ""))}
            self.assertFalse({r for r in railed if re.fullmatch(regex, "%s;%s" % (r, "rail9"))})
            sent |= got
        self.assertEqual(sent, {k.split(";")[0] for k in reads("rdma-culprits-rails.yml", hosts)})
        # Or every host record the one-server rules read, to one evaluator of
        # every rail (the shard configuration's comment).
        self.assertEqual({r for r in hosts if re.fullmatch(one_culprit_evaluator_keep(), r)},
                         {k.split(";")[0] for k in reads("rdma-culprits.yml", hosts)})
        # The shards to the evaluator across rails.
        labels, regex = keeps(shard, "across-rails")
        self.assertEqual(labels, ["__name__"])
        self.assertEqual({r for r in hosts if re.fullmatch(regex, r)},
                         {k.split(";")[0] for k in reads("rdma-culprits-across-rails.yml", hosts)})
        # The rails' evaluators to the evaluator across rails.
        labels, regex = keeps(rails, "across-rails")
        self.assertEqual(labels, ["__name__", "kind"])
        keys = {"%s;%s" % (r, k) for r, kinds in inside.items() for k in kinds}
        self.assertEqual({k for k in keys if re.fullmatch(regex, k)},
                         reads("rdma-culprits-across-rails.yml", inside))
        # Each evaluator to the store: its own records and nothing it receives.
        (store,) = [w for w in rails["remote_write"] if "victoria" in w["url"]]
        (keep,) = [r["regex"] for r in store["write_relabel_configs"] if r["action"] == "keep"]
        (drop,) = [r["regex"] for r in store["write_relabel_configs"] if r["action"] == "drop"]
        self.assertEqual({r for r in sent | set(inside)
                          if re.fullmatch(keep, r) and not re.fullmatch(drop, r)}, set(inside))
        labels, regex = keeps(across, "victoria")
        self.assertEqual(labels, ["__name__", "kind"])
        for r, kinds in across_records.items():
            # A record without a kind label takes its culprit's (host or rnic).
            for k in kinds - {""} or {"host", "rnic"}:
                self.assertRegex("%s;%s" % (r, k), "^(%s)$" % regex)
        received = {"%s;%s" % (r, k) for r, kinds in inside.items() for k in kinds}
        received |= {"%s;" % r for r in hosts}
        self.assertFalse({k for k in received if re.fullmatch(regex, k)})
        self.assertIn("rdma-culprits-hosts.yml", rule_files("prometheus-shard.yml"))
        self.assertNotIn("rdma-culprits.yml", rule_files("prometheus-shard.yml"))

    def test_every_server_that_evaluates_alerts_sends_them(self):
        # Each example configuration whose rule files hold alerting rules
        # names an Alertmanager; those without none.
        config = os.path.join(SOURCE_DIR, "config/prometheus")
        names = sorted(n for n in os.listdir(config) if n.startswith("prometheus"))
        self.assertEqual(len(names), 5, names)
        for name in names:
            doc = load_yaml(os.path.join(config, name))
            alerting = any(alerts(load_yaml(os.path.join(config, r))) for r in doc["rule_files"])
            with self.subTest(config=name):
                self.assertTrue(alerting)
                targets = [t for am in doc.get("alerting", {}).get("alertmanagers", [])
                           for sc in am["static_configs"] for t in sc["targets"]]
                self.assertEqual(len(targets), 1, targets)

    def test_the_culprit_rules_for_one_server_are_their_parts_in_one_group(self):
        # rdma-culprits.yml is written by config/prometheus/generate.py: the
        # rules of the part inside rails, then across rails, unchanged, in
        # one group of the same interval; and --check notices a difference,
        # in it or in rdma-alerts.yml, which it writes too.
        script = os.path.join(SOURCE_DIR, "config/prometheus/generate.py")
        r = subprocess.run([script, "--check"], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        one = load_yaml(os.path.join(SOURCE_DIR, "config/prometheus/rdma-culprits.yml"))
        parts = [load_yaml(CULPRIT_RULES), load_yaml(CULPRIT_ACROSS_RULES)]
        (group,) = one["groups"]
        self.assertEqual(group["name"], "rdma-probe-culprits")
        self.assertEqual(group["rules"], [r for p in parts for r in rules_of(p)])
        self.assertEqual({group["interval"]} | {p["groups"][0]["interval"] for p in parts}, {"30s"})
        r = self.promtool("check", "rules", os.path.join(SOURCE_DIR, "config/prometheus/rdma-culprits.yml"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("SUCCESS: %d rules found" % len(group["rules"]), r.stdout)
        with GeneratorCopy() as g:
            with open(os.path.join(g.dir, "templates", "rdma-culprits-across-rails.yml"), "a") as f:
                f.write("      - record: rdma:probe_new\n        expr: vector(1)\n")
            r = g.run("--check")
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("differs from its template and thresholds", r.stderr)
        with GeneratorCopy() as g:
            self.assertEqual(g.run("--check").returncode, 0)
            g.set_threshold("probe_loss_ratio", "0.01", "0.02", "alert-thresholds.yml")
            r = g.run("--check")
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("rdma-alerts.yml differs from its template and thresholds", r.stderr)

    def test_a_culprit_threshold_is_changed_in_one_place(self):
        # One number in culprit-thresholds.yml, the generator run: the rules
        # that use it read the new value in both layouts, nothing else moves.
        with GeneratorCopy() as g:
            g.set_threshold("suspect_loss_ratio", "0.005", "0.02")
            g.set_threshold("culprit_lookback", "80s", "110s")
            r = g.run()
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            for name in ("rdma-culprits-rails.yml", "rdma-culprits.yml"):
                suspect = rule(load_yaml(os.path.join(g.dir, name)), "rdma:probe_rnic:suspect:2m")
                self.assertIn("rdma:probe_rnic:sent:increase2m >= 0.02)", suspect["expr"])
                shipped = rule(load_yaml(CULPRIT_RULES), "rdma:probe_rnic:suspect:2m")
                self.assertEqual(suspect["expr"].replace("0.02", "0.005"), shipped["expr"])
            across = load_yaml(os.path.join(g.dir, "rdma-culprits-across-rails.yml"))
            text = "\n".join(r["expr"] for r in rules_of(across))
            self.assertNotIn("[80s]", text)
            self.assertEqual(text.count("[110s]"), 8)
            r = self.promtool("check", "rules", os.path.join(g.dir, "rdma-culprits.yml"))
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_an_alert_threshold_is_changed_in_one_place(self):
        # Two values in alert-thresholds.yml, a threshold and a `for:`, the
        # generator run: the alerts that use them read the new values, the
        # text that repeats the duration too, and nothing else moves.
        with GeneratorCopy() as g:
            g.set_threshold("symbol_errors_per_hour", "10", "20", "alert-thresholds.yml")
            g.set_threshold("exporter_down_for", "5m", "7m", "alert-thresholds.yml")
            r = g.run()
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            shipped = {a["alert"]: a for a in alerts(load_yaml(RULES))}
            generated = load_yaml(os.path.join(g.dir, "rdma-alerts.yml"))
            changed = {a["alert"]: a for a in alerts(generated)}
            self.assertEqual(list(changed), list(shipped))
            symbol = changed.pop("RdmaSymbolErrors")
            self.assertIn("> 20", symbol["expr"])
            self.assertEqual(symbol["expr"].replace("> 20", "> 10"), shipped["RdmaSymbolErrors"]["expr"])
            self.assertEqual({**symbol, "expr": None}, {**shipped.pop("RdmaSymbolErrors"), "expr": None})
            down = changed.pop("RdmaExporterDown")
            self.assertEqual(down["for"], "7m")
            description = down["annotations"]["description"]
            self.assertIn("(job {{ $labels.job }}) for 7 minutes: the host", description)
            expected = copy.deepcopy(shipped.pop("RdmaExporterDown"))
            expected["for"] = "7m"
            expected["annotations"]["description"] = expected["annotations"]["description"].replace(
                "for 5 minutes:", "for 7 minutes:")
            self.assertEqual(down, expected)
            # The correctable PCIe errors, also more than 10 an hour, are
            # another parameter.
            self.assertIn("[1h]) > 10", changed["RdmaPcieCorrectableErrors"]["expr"])
            self.assertEqual(changed, shipped)
            self.assertEqual([g["name"] for g in generated["groups"]],
                             [g["name"] for g in load_yaml(RULES)["groups"]])
            # The culprit rules, from the other thresholds file, do not move.
            for name in [n for n in GeneratorCopy.WRITES if n != "rdma-alerts.yml"]:
                with open(os.path.join(g.dir, name)) as a, \
                        open(os.path.join(SOURCE_DIR, "config/prometheus", name)) as b:
                    self.assertEqual(a.read(), b.read(), name)
            r = self.promtool("check", "rules", os.path.join(g.dir, "rdma-alerts.yml"))
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_the_generator_refuses_what_it_cannot_use(self):
        # Each thresholds file and its own templates: a placeholder of the
        # other file is unknown.
        for template, thresholds, name in (
                ("rdma-culprits-rails.yml", "culprit-thresholds.yml", "no_such_threshold"),
                ("rdma-alerts.yml", "alert-thresholds.yml", "no_such_threshold"),
                ("rdma-alerts.yml", "alert-thresholds.yml", "suspect_loss_ratio"),
                ("rdma-culprits-across-rails.yml", "culprit-thresholds.yml", "exporter_down_for")):
            with self.subTest(template=template, name=name), GeneratorCopy() as g:
                # a template asks for a threshold that is not set
                with open(os.path.join(g.dir, "templates", template), "a") as f:
                    f.write(f"      # @{name}@\n")
                r = g.run()
                self.assertEqual(r.returncode, 1)
                self.assertIn(f"templates/{template}: @{name}@ is not in {thresholds}", r.stderr)
        for thresholds in ("culprit-thresholds.yml", "alert-thresholds.yml"):
            with self.subTest(thresholds=thresholds), GeneratorCopy() as g:
                # a threshold no template uses
                with open(os.path.join(g.dir, thresholds), "a") as f:
                    f.write("forgotten_threshold: 7\n")
                r = g.run()
                self.assertEqual(r.returncode, 1)
                self.assertIn(f"{thresholds}: forgotten_threshold used by no template", r.stderr)
        for missing in ("alert-thresholds.yml", "templates/rdma-culprits-rails.yml"):
            with self.subTest(missing=missing), GeneratorCopy() as g:
                os.unlink(os.path.join(g.dir, missing))
                r = g.run()
                self.assertEqual(r.returncode, 1)
                self.assertEqual(r.stderr.strip(), "generate.py: %s: No such file or directory"
                                 % os.path.join(g.dir, missing))
        with GeneratorCopy() as g:  # --check of a file never written
            os.unlink(os.path.join(g.dir, "rdma-alerts.yml"))
            r = g.run("--check")
            self.assertEqual(r.returncode, 1)
            self.assertIn("rdma-alerts.yml differs from its template and thresholds", r.stderr)
        with GeneratorCopy() as g:  # a number shown as a duration in words
            with open(os.path.join(g.dir, "templates", "rdma-alerts.yml"), "a") as f:
                f.write("      # @symbol_errors_per_hour~@\n")
            r = g.run()
            self.assertEqual(r.returncode, 1)
            self.assertIn("templates/rdma-alerts.yml: @symbol_errors_per_hour~@ is 10, not a duration",
                          r.stderr)
        with GeneratorCopy() as g:  # a value that is not a number or a duration
            g.set_threshold("path_share", "0.8", "most")
            r = g.run()
            self.assertEqual(r.returncode, 1)
            self.assertIn("expected `name: value`", r.stderr)
        with GeneratorCopy() as g:
            g.set_threshold("exporter_down_for", "5m", "five minutes", "alert-thresholds.yml")
            r = g.run()
            self.assertEqual(r.returncode, 1)
            self.assertIn("alert-thresholds.yml:", r.stderr)
            self.assertIn("expected `name: value`", r.stderr)
        # Nothing is written when the generator refuses.
        with GeneratorCopy() as g:
            with open(os.path.join(g.dir, "alert-thresholds.yml"), "a") as f:
                f.write("forgotten_threshold: 7\n")
            g.set_threshold("suspect_loss_ratio", "0.005", "0.02")
            g.set_threshold("exporter_down_for", "5m", "7m", "alert-thresholds.yml")
            self.assertEqual(g.run().returncode, 1)
            for name in GeneratorCopy.WRITES:
                with open(os.path.join(g.dir, name)) as a, \
                        open(os.path.join(SOURCE_DIR, "config/prometheus", name)) as b:
                    self.assertEqual(a.read(), b.read(), name)

    def test_every_threshold_is_in_its_tuning_table(self):
        # Each thresholds file's parameters, with their defaults, in the
        # table of its "Tuning" section (a row may hold several).
        for thresholds, doc in (("alert-thresholds.yml", "docs/alerts.md"),
                                ("culprit-thresholds.yml", "docs/fabric.md")):
            with open(os.path.join(SOURCE_DIR, "config/prometheus", thresholds)) as f:
                values = dict(re.findall(r"^([a-z][a-z0-9_]*): (\S+)$", f.read(), re.M))
            with open(os.path.join(SOURCE_DIR, doc), encoding="utf-8") as f:
                section = re.search(r"^#+ Tuning\n(.*?)(?=^#+ )", f.read(), re.M | re.S).group(1)
            documented = {}
            for names, defaults in re.findall(r"^\| (`[^|]*`) \| ([^|]*) \|", section, re.M):
                names = re.findall(r"`(\w+)`", names)
                defaults = [d.strip() for d in defaults.split(",")]
                self.assertEqual(len(names), len(defaults), (doc, names))
                documented.update(zip(names, defaults))
            with self.subTest(thresholds=thresholds):
                self.assertGreater(len(values), 10)
                self.assertEqual(documented, values)

    def test_the_installed_generator_writes_the_shipped_rules(self):
        # The package installs generate.py, its thresholds and templates in
        # one examples folder (CMakeLists.txt); run there, it writes the
        # rule files as they are in config/prometheus.
        with open(os.path.join(SOURCE_DIR, "CMakeLists.txt")) as f:
            cmake = f.read()
        installs = re.findall(r"install\(FILES\s+([^)]*?)\s+DESTINATION "
                              r"\$\{RDMA_EXPORTER_DOCDIR\}/examples/culprit-rules(/templates)?\)", cmake)
        self.assertEqual(len(installs), 2, installs)
        d = tempfile.mkdtemp(prefix="rdma_rules_installed_")
        try:
            for files, folder in installs:
                os.makedirs(d + folder, exist_ok=True)
                for name in files.split():
                    shutil.copy(os.path.join(SOURCE_DIR, name), d + folder)
            r = subprocess.run([sys.executable, "generate.py"], cwd=d, capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            for name in GeneratorCopy.WRITES:
                with open(os.path.join(d, name)) as a, \
                        open(os.path.join(SOURCE_DIR, "config/prometheus", name)) as b:
                    self.assertEqual(a.read(), b.read(), name)
        finally:
            shutil.rmtree(d)

    def test_the_culprit_rules_inside_rails_read_one_rail_at_a_time(self):
        # rdma-culprits-rails.yml runs on some rails' records: each of its
        # aggregations must keep `rail` (or host, device and group alone, per
        # RNIC or host), else it would sum over rails it cannot see.
        doc = load_yaml(CULPRIT_RULES)
        aggregation = re.compile(r"\b(sum|min|max|count|topk)\s*by\s*\(([^)]*)\)")
        for rule in rules_of(doc):
            for m in aggregation.finditer(rule["expr"]):
                labels = {x.strip() for x in m.group(2).split(",")}
                with self.subTest(rule=rule.get("record") or rule.get("alert"), by=sorted(labels)):
                    self.assertTrue("rail" in labels or labels <= {"host", "device", "group"},
                                    labels)

    def test_scrape_config_example_is_valid(self):
        # promtool also loads the rule files the configuration names.
        r = self.promtool("check", "config", SCRAPE_CONFIG)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        config = load_yaml(SCRAPE_CONFIG)
        jobs = {j["job_name"]: j for j in config["scrape_configs"]}
        self.assertIn("rdma_exporter", jobs)
        self.assertIn("rdma-alerts.yml", config["rule_files"])
        self.assertIn("rdma-culprits-hosts.yml", config["rule_files"])
        self.assertIn("rdma-culprits.yml", config["rule_files"])
        self.assertIn("rdma-last-hop.yml", config["rule_files"])
        self.assertIn("rdma-rollups.yml", config["rule_files"])
        self.assertIn("rdma-rollups-fleet.yml", config["rule_files"])
        targets = [t for sc in jobs["rdma_exporter"]["static_configs"] for t in sc["targets"]]
        self.assertTrue(all(t.endswith(":10910") for t in targets), targets)


if __name__ == "__main__":
    unittest.main()
