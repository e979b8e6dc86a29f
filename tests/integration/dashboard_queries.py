"""Evaluates every query of the Grafana dashboards against a Prometheus server,
the way Grafana would run them. Used by test_dashboards.py (fixtures and the
fake nldev kernel) and tests/vm/test_dashboards_vm.py (a real Soft-RoCE
kernel).

Variables are resolved like Grafana resolves them: label_values() through the
HTTP API, each variable seeing the values of the ones before it. Every query
is run with every variable at "All" and with every concrete combination of
values, at one instant.
"""
import json
import os
import re
import time

import yaml

from harness import SOURCE_DIR

DASHBOARD_DIR = os.path.join(SOURCE_DIR, "dashboards")
DASHBOARDS = ("rdma-overview.json", "rdma-group.json", "rdma-fleet.json", "rdma-port.json", "rdma-congestion.json",
              "rdma-workloads.json", "rdma-latency.json", "rdma-fabric.json",
              "rdma-optics.json", "rdma-pods.json")
DATASOURCE_REF = {"type": "prometheus", "uid": "${datasource}"}

# What Grafana substitutes, for a Prometheus data source whose scrape interval
# is set to the tests' 1 s and a "last 10 seconds" time range:
# $__rate_interval = max($__interval + scrape interval, 4 * scrape interval).
SCRAPE_INTERVAL_S = 1
GRAFANA_VARIABLES = {
    "__interval": "5s", "__interval_ms": "5000", "__interval_s": "5",
    "__rate_interval": "6s",
    "__range": "10s", "__range_s": "10", "__range_ms": "10000",
}
# The data must cover $__range (and $__interval before it) when queries run.
MIN_SAMPLES_PER_TARGET = 14
MAX_COMBINATIONS = 64

LABEL_VALUES_RE = re.compile(r"^label_values\((.*),\s*(\w+)\)$", re.S)
REGEX_SPECIAL = re.compile(r"[$^*{}\[\]'+?.()|]")
VARIABLE_RE = re.compile(r"\$(\w+)|\$\{(\w+)(?::(\w+))?\}|\[\[(\w+)\]\]")
ALL = object()  # a variable set to "All"


def load(name):
    with open(os.path.join(DASHBOARD_DIR, name), encoding="utf-8") as f:
        return json.load(f)


def panels(dashboard):
    """Every panel, including those inside collapsed rows."""
    for p in dashboard["panels"]:
        yield p
        yield from p.get("panels", [])


def variables(dashboard):
    return dashboard["templating"]["list"]


def variable_query(v):
    q = v.get("query")
    return q["query"] if isinstance(q, dict) else q


def allowed_empty(allow, dashboard_name, title):
    """The reason ALLOW ({(dashboard, title or "*"): reason}) gives, and its key."""
    for key in ((dashboard_name, title), (dashboard_name, "*")):
        if key in allow:
            return allow[key], key
    return None, None


def grafana_escape(value):
    """What Grafana's Prometheus data source writes for one value of a
    multi-value variable: regular-expression characters escaped (twice,
    since the result sits in a PromQL string)."""
    return REGEX_SPECIAL.sub(lambda m: "\\\\" + m.group(0), value.replace("\\", "\\" * 4))


def format_value(var, value, known_values):
    if var.get("multi") or var.get("includeAll"):
        if value is ALL:
            if var.get("allValue"):
                return var["allValue"]
            return "(" + "|".join(grafana_escape(v) for v in known_values) + ")"
        return grafana_escape(value)
    return value


def substitute(expr, assignment, defined):
    """Replaces $var, ${var} and [[var]]; returns (text, unknown variables).
    `$1`-style group references (label_replace) are left alone."""
    unknown = set()

    def repl(m):
        name = m.group(1) or m.group(2) or m.group(4)
        if name.isdigit():
            return m.group(0)
        if name in GRAFANA_VARIABLES:
            return GRAFANA_VARIABLES[name]
        if name in assignment:
            return assignment[name]
        if name not in defined:
            unknown.add(name)
        return m.group(0)

    return VARIABLE_RE.sub(repl, expr), unknown


def prometheus_config(targets):
    """config/prometheus/prometheus.yml, scraping TARGETS every second."""
    with open(os.path.join(SOURCE_DIR, "config/prometheus/prometheus.yml")) as f:
        config = yaml.safe_load(f)
    config["global"] = {"scrape_interval": f"{SCRAPE_INTERVAL_S}s",
                        "evaluation_interval": f"{SCRAPE_INTERVAL_S}s"}
    config.pop("alerting")  # the alerts are not sent anywhere
    job = config["scrape_configs"][0]
    job["scrape_timeout"] = f"{SCRAPE_INTERVAL_S}s"
    job["static_configs"] = [{"targets": list(targets)}]
    rules = {}
    for name in config["rule_files"]:
        with open(os.path.join(SOURCE_DIR, "config/prometheus", name)) as f:
            rules[name] = f.read()
    return yaml.safe_dump(config), rules


def wait_for_data(prometheus, targets, timeout=90):
    """Until every target is up and has MIN_SAMPLES_PER_TARGET scrapes."""
    deadline = time.monotonic() + timeout
    while True:
        r = prometheus.query("min(count_over_time(up[1m]) and up == 1)")
        up = prometheus.query("count(up == 1)")
        samples = float(r["data"]["result"][0]["value"][1]) if r["data"]["result"] else 0
        live = float(up["data"]["result"][0]["value"][1]) if up["data"]["result"] else 0
        if live == targets and samples >= MIN_SAMPLES_PER_TARGET:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"no data after {timeout}s (targets up {live} of {targets}, "
                               f"samples {samples}):\n{prometheus.log()}")
        time.sleep(1)


class QueryResult:
    def __init__(self, dashboard, panel, ref, expr):
        self.dashboard, self.panel, self.ref, self.expr = dashboard, panel, ref, expr
        self.errors = []        # "with <combination>: <error>\n    <query>"
        self.all_has_data = None  # None: the dashboard has no "All" combination
        self.any_has_data = False

    @property
    def where(self):
        return f"{self.dashboard}: {self.panel} [{self.ref}]"

    def empty(self):
        """No data: for "All" (when the dashboard has it) or for any combination."""
        return self.all_has_data is False or not self.any_has_data


class Evaluation:
    """Runs every query of every dashboard; results in .results, counts in
    .counts ({dashboard: (combinations, queries)}), problems with the
    variables themselves in .variable_errors."""

    def __init__(self, prometheus, dashboards=DASHBOARDS):
        self.prometheus = prometheus
        self.results, self.counts, self.variable_errors = [], {}, []
        self.concrete = {}  # dashboard -> number of concrete combinations
        started = time.monotonic()
        now = time.time()
        for name in dashboards:
            self._dashboard(name, load(name), now)
        self.seconds = time.monotonic() - started

    def label_values(self, query):
        """Grafana's label_values(selector, label) through the HTTP API."""
        m = LABEL_VALUES_RE.match(query)
        if m is None:
            raise AssertionError(f"not a label_values() query: {query}")
        selector, label = m.groups()
        now = time.time()
        r = self.prometheus.get(f"/api/v1/label/{label}/values",
                                {"match[]": selector, "start": f"{now - 300:.0f}",
                                 "end": f"{now:.0f}"})
        if r.get("status") != "success":
            self.variable_errors.append(f"{query}: {r.get('error')}")
            return []
        return sorted(v for v in r["data"] if v != "")

    def combinations(self, d):
        """(the "All" combination or None, [concrete combinations]); each is
        (description, {variable: text}). Concrete combinations follow every
        value of every variable (up to MAX_COMBINATIONS); a variable without
        values ends that path, as it leaves the dashboard empty in Grafana."""
        vs = variables(d)[1:]
        names = {v["name"] for v in variables(d)}
        out = []

        def walk(i, assignment, chosen):
            if len(out) >= MAX_COMBINATIONS:
                return
            if i == len(vs):
                out.append((", ".join(f"{k}={c}" for k, c in chosen.items()), dict(assignment)))
                return
            v = vs[i]
            query, _ = substitute(variable_query(v), assignment, names)
            values = self.label_values(query)
            for value in values:
                walk(i + 1, {**assignment, v["name"]: format_value(v, value, values)},
                     {**chosen, v["name"]: value})

        def all_combination():
            assignment = {}
            for v in vs:
                if not v.get("includeAll"):
                    return None
                query, _ = substitute(variable_query(v), assignment, names)
                assignment[v["name"]] = format_value(v, ALL, self.label_values(query))
            return ("every variable All", assignment)

        walk(0, {}, {})
        return all_combination(), out

    def _dashboard(self, name, d, now):
        names = {v["name"] for v in variables(d)}
        every, concrete = self.combinations(d)
        self.concrete[name] = len(concrete)
        combos = ([every] if every else []) + concrete
        evaluated = 0
        for p in panels(d):
            for t in p.get("targets", []):
                res = QueryResult(name, p["title"], t["refId"], t["expr"])
                for i, (label, assignment) in enumerate(combos):
                    expr, unknown = substitute(t["expr"], assignment, names)
                    if unknown:
                        res.errors.append(f"unknown variables {sorted(unknown)}")
                        continue
                    r = self.prometheus.query(expr, at=now)
                    evaluated += 1
                    if r.get("status") != "success":
                        res.errors.append(f"with {label}: {r.get('error')}\n    {expr}")
                        continue
                    has_data = bool(r["data"]["result"])
                    res.any_has_data |= has_data
                    if every is not None and i == 0:
                        res.all_has_data = has_data
                self.results.append(res)
        self.counts[name] = (len(combos), evaluated)

    # ----------------------------------------------------------- verdicts

    def query_failures(self, allow):
        """Errors, and queries without data that ALLOW does not excuse.
        Returns (failures, excused [(where, reason)], keys of ALLOW used)."""
        failures, excused, used = [], [], set()
        for res in self.results:
            failures += [f"{res.where} {e}" for e in res.errors]
            if res.errors or not res.empty():
                continue
            reason, key = allowed_empty(allow, res.dashboard, res.panel)
            if reason:
                excused.append((res.where, reason))
                used.add(key)
            else:
                which = "All" if res.all_has_data is False else "any combination"
                failures.append(f"{res.where}: no data for {which}\n    {res.expr}")
        return failures, excused, used

    def panel_failures(self, allow):
        """Like query_failures, but a panel passes when one of its queries has
        data (a panel with one query per driver family shows something)."""
        failures, excused, used = [], [], set()
        by_panel = {}
        for res in self.results:
            failures += [f"{res.where} {e}" for e in res.errors]
            by_panel.setdefault((res.dashboard, res.panel), []).append(res)
        for (dashboard, panel), results in by_panel.items():
            if any(not r.empty() for r in results):
                continue
            reason, key = allowed_empty(allow, dashboard, panel)
            if reason:
                excused.append((f"{dashboard}: {panel}", reason))
                used.add(key)
            else:
                failures.append(f"{dashboard}: {panel}: no query has data\n    "
                                + "\n    ".join(r.expr for r in results))
        return failures, excused, used

    def verdict(self, lists, what, per_panel=False):
        """(failures, summary to print). LISTS names the needs-hardware lists
        ({name: {(dashboard, title): reason}}) whose panels may lack data; an
        entry that is not needed any more is a failure too."""
        allow = {key: reason for entries in lists.values() for key, reason in entries.items()}
        check = self.panel_failures if per_panel else self.query_failures
        failures, excused, used = check(allow)
        failures += self.variable_errors
        for name, entries in lists.items():
            failures += [f"{name} entry {key} is not needed any more: it has data"
                         for key in entries if key not in used]
        return failures, self.summary(excused, what)

    def summary(self, excused, what):
        lines = [f"\nDashboard queries against Prometheus ({what}), "
                 f"evaluated in {self.seconds:.1f}s:"]
        lines += [f"  {n}: {c} variable combinations, {e} queries"
                  for n, (c, e) in self.counts.items()]
        if excused:
            lines.append("Without data, allowed by the needs-hardware list:")
            by_reason = {}
            for where, reason in excused:
                by_reason.setdefault(reason, []).append(where)
            for reason, wheres in by_reason.items():
                lines.append(f"  {len(wheres)} need {reason}:")
                lines += [f"    {w}" for w in wheres]
        return "\n".join(lines)
