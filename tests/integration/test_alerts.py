"""The alerting rules (config/prometheus/rdma-alerts.yml), the culprit rules
(config/prometheus/rdma-culprits.yml) and the scrape configuration example:
promtool accepts them, the unit tests in tests/alerts/ pass and cover every
alert firing and not firing, every alert has its annotations and a runbook
section, and every metric is documented."""
import copy
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import yaml

from harness import SOURCE_DIR, promtool, rule_files
from metrics_doc import MetricsDoc

RULES = os.path.join(SOURCE_DIR, "config/prometheus/rdma-alerts.yml")
RULE_TESTS = os.path.join(SOURCE_DIR, "tests/alerts/rdma-alerts.test.yml")
CULPRIT_RULES = os.path.join(SOURCE_DIR, "config/prometheus/rdma-culprits.yml")
CULPRIT_HOST_RULES = os.path.join(SOURCE_DIR, "config/prometheus/rdma-culprits-hosts.yml")
CULPRIT_TESTS = os.path.join(SOURCE_DIR, "tests/alerts/rdma-culprits.test.yml")
LAST_HOP_RULES = os.path.join(SOURCE_DIR, "config/prometheus/rdma-last-hop.yml")
LAST_HOP_TESTS = os.path.join(SOURCE_DIR, "tests/alerts/rdma-last-hop.test.yml")
ROLLUP_RULES = os.path.join(SOURCE_DIR, "config/prometheus/rdma-rollups.yml")
ROLLUP_FLEET_RULES = os.path.join(SOURCE_DIR, "config/prometheus/rdma-rollups-fleet.yml")
ROLLUP_TESTS = os.path.join(SOURCE_DIR, "tests/alerts/rdma-rollups.test.yml")
# Each rule file and its promtool tests (the two culprit files have theirs
# together, as the two rollup files do).
RULE_SETS = [(RULES, RULE_TESTS), (CULPRIT_HOST_RULES, CULPRIT_TESTS),
             (CULPRIT_RULES, CULPRIT_TESTS), (LAST_HOP_RULES, LAST_HOP_TESTS),
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


def heading_anchors(markdown):
    """GitHub-style anchors of the headings of a markdown text."""
    anchors = set()
    for line in markdown.splitlines():
        m = re.match(r"#+\s+(.*)", line)
        if m:
            text = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower())
            anchors.add(text.replace(" ", "-"))
    return anchors


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
        for tests in dict.fromkeys(tests for _, tests in RULE_SETS):
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

    def test_the_culprit_rules_read_what_the_shards_send_them(self):
        # Behind Prometheus shards, the culprit rules' evaluator receives the
        # records the shards' regex keeps, and writes on to the store those
        # its own regex does not drop: both must be the host part's records
        # exactly, or it would miss some or write some twice.
        config = os.path.join(SOURCE_DIR, "config/prometheus")
        shard = load_yaml(os.path.join(config, "prometheus-shard.yml"))
        evaluator = load_yaml(os.path.join(config, "prometheus-culprits.yml"))
        (sent,) = [r["regex"] for w in shard["remote_write"]
                   for r in w.get("write_relabel_configs", []) if r.get("action") == "keep"]
        (kept,) = [r["regex"] for w in evaluator["remote_write"]
                   for r in w["write_relabel_configs"] if r["action"] == "drop"]
        self.assertEqual(evaluator["rule_files"], ["rdma-culprits.yml"])
        self.assertNotIn("scrape_configs", evaluator)
        records = {}
        for name in os.listdir(config):
            if name.startswith("rdma-"):
                for rule in rules_of(load_yaml(os.path.join(config, name))):
                    if "record" in rule:
                        records.setdefault(rule["record"], set()).add(name)
        host_records = {r for r, files in records.items() if "rdma-culprits-hosts.yml" in files}
        self.assertEqual(len(host_records), 9)
        for regex in (sent, kept):
            self.assertEqual({r for r in records if re.fullmatch(regex, r)}, host_records)
        self.assertIn("rdma-culprits-hosts.yml", rule_files("prometheus-shard.yml"))
        self.assertNotIn("rdma-culprits.yml", rule_files("prometheus-shard.yml"))

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
