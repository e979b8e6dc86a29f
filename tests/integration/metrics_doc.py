"""What docs/metrics.md documents, and the metric names a PromQL expression uses.

Shared by the dashboard and alerting-rule tests: every metric a dashboard or
rule names must be documented. Documented names come from the first column
of the tables in docs/metrics.md. A name with a `<name>` placeholder
(`rdma_port_hw_<name>_total`) stands for the kernel counters listed in
backquotes in the same table row (`out_of_sequence`, `unicast_*`, ...), so a
misspelt counter name fails the check just like a misspelt metric does.
"""
import fnmatch
import os
import re

# Series Prometheus itself adds to every scrape.
PROMETHEUS_SERIES = ("up", "scrape_duration_seconds", "scrape_samples_scraped",
                     "scrape_samples_post_metric_relabeling", "scrape_series_added")

PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool",
                   "and", "or", "unless", "offset", "inf", "nan", "atan2"}

HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


class MetricsDoc:
    def __init__(self, path):
        self.path = path
        self.exact = {}     # name -> type
        self.patterns = []  # (regex, allowed kernel names (globs), pattern text, type)
        self.sections = {}  # entry (name or pattern text) -> its "## " heading, up to " — "
        section = ""
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("## "):
                    section = line[3:].split(" — ")[0].strip()
                self._row(line, section)

    def _row(self, line, section):
        if not line.startswith("|"):
            return
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2:
            return
        names = [n for n in re.findall(r"`([^`]+)`", cells[0])
                 if n.startswith(("rdma_", "process_"))]
        if not names:
            return
        kind = cells[1].split()[0] if cells[1] else ""
        listed = [t for t in re.findall(r"`([^`]+)`", " ".join(cells[1:]))
                  if re.fullmatch(r"[A-Za-z0-9_*]+", t)]
        for name in names:
            if "<name>" in name:
                head, tail = name.split("<name>")
                regex = re.compile(re.escape(head) + r"(?P<name>[A-Za-z0-9_]+)" + re.escape(tail))
                self.patterns.append((regex, listed, name, kind))
            else:
                self.exact[name] = kind
            self.sections.setdefault(name, section)

    def documented(self, name):
        """The docs entry that covers NAME (exact name or pattern), else None."""
        if name in self.exact:
            return name
        for regex, listed, text, _ in self.patterns:
            m = regex.fullmatch(name)
            if m and any(fnmatch.fnmatchcase(m.group("name"), g) for g in listed):
                return text
        return None

    def section_of(self, name):
        """The heading of the section that documents series NAME (a
        histogram's _bucket, _sum and _count too) first, else None: a name
        a later table quotes (the OTLP names) stays in its collector's."""
        candidates = [name] + [name[:-len(x)] for x in HISTOGRAM_SUFFIXES if name.endswith(x)]
        entries = []
        for n in candidates:
            if n in self.exact:
                entries.append(n)
            entries += [text for regex, listed, text, _ in self.patterns
                        if (m := regex.fullmatch(n))
                        and any(fnmatch.fnmatchcase(m.group("name"), g) for g in listed)]
        order = list(self.sections)
        entries = sorted((e for e in entries if e in self.sections), key=order.index)
        return self.sections[entries[0]] if entries else None

    def type_of(self, entry):
        if entry in self.exact:
            return self.exact[entry]
        return next((kind for _, _, text, kind in self.patterns if text == entry), "")

    def problem(self, name):
        """None when NAME is documented."""
        if name in PROMETHEUS_SERIES:
            return None
        if self.documented(name):
            return None
        for suffix in HISTOGRAM_SUFFIXES:
            base = name[:-len(suffix)] if name.endswith(suffix) else None
            entry = self.documented(base) if base else None
            if entry and self.type_of(entry) in ("histogram", "summary"):
                return None
        return f"{name} is not in {os.path.relpath(self.path)}"

    def name_regex_problem(self, regex):
        """A `__name__=~"..."` matcher must be exactly a documented pattern."""
        for _, _, text, _ in self.patterns:
            if regex == text.replace("<name>", ".+"):
                return None
        return f'__name__=~"{regex}" is not a pattern of {os.path.relpath(self.path)}'

    def expression_problems(self, expr):
        """(metric names, __name__ regexes, problems) of a PromQL expression."""
        names, regexes = metric_names(expr)
        problems = [p for p in map(self.problem, names) if p]
        problems += [p for p in map(self.name_regex_problem, regexes) if p]
        return names, regexes, problems


def strip_strings(expr):
    return re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)


def metric_names(expr):
    """(metric names, __name__ regexes) an expression selects."""
    name_regexes = re.findall(r'__name__\s*=~\s*"((?:[^"\\]|\\.)*)"', expr)
    text = strip_strings(expr)
    text = re.sub(r"\$\{?\w+\}?", " ", text)                    # dashboard variables
    text = re.sub(r"\{[^{}]*\}", " ", text)                       # label matchers
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)                       # ranges, subqueries
    names = []
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        token = m.group(0)
        rest = text[m.end():].lstrip()
        if rest.startswith("("):
            continue  # a function or aggregation
        before = text[:m.start()]
        if re.search(r"[0-9.]$", before):
            continue  # exponent or duration unit (1e-05, 5m)
        if token.lower() in PROMQL_KEYWORDS:
            continue
        names.append(token)
    return names, name_regexes
