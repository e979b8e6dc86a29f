"""The metric selectors of a PromQL expression, rewritten by name.

bench/fleet_faults reads the host records late (`offset`), bench/fleet_load
expands the rollup records into their definitions, and the tests check
which records a rule file reads; all walk the same selectors, and a record
name that several rules write is told apart by their `kind` label. Enough
PromQL for the shipped rules, not a parser: a selector is a metric name
that is not part of another name, not inside a label value and not a
function call, with its optional {matchers} and [range]."""
import re

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SELECTOR = re.compile(r'(?<![\w:"])(%s)(\{[^}]*\})?(\[\w+\])?(?![\w:("])' % NAME)


def sub_selectors(expr, replace):
    """EXPR with every selector replaced by REPLACE(name, matchers, range,
    text): matchers and range as written ("" when absent), text the whole
    selector; REPLACE returns the text to put in its place."""
    return SELECTOR.sub(
        lambda m: replace(m.group(1), m.group(2) or "", m.group(3) or "", m.group(0)), expr)


def selectors(expr):
    """The selectors of EXPR, as (name, matchers, range), as written."""
    return [(m.group(1), m.group(2) or "", m.group(3) or "") for m in SELECTOR.finditer(expr)]


def kinds_of(groups):
    """{record: the values of its rules' `kind` label (None without one)}
    of the rule GROUPS."""
    kinds = {}
    for g in groups:
        for r in g["rules"]:
            if "record" in r:
                kinds.setdefault(r["record"], set()).add(r.get("labels", {}).get("kind"))
    return kinds


def selects_kinds(matchers, kinds):
    """Which of KINDS the `kind` matcher in MATCHERS (as written) selects."""
    m = re.search(r'\bkind\s*(=~|!~|!=|=)\s*"([^"]*)"', matchers)
    if not m:
        return set(kinds)
    op, value = m.groups()
    hit = {k for k in kinds if re.fullmatch(value, k or "")} if "~" in op else \
        {k for k in kinds if (k or "") == value}
    return hit if op in ("=", "=~") else set(kinds) - hit
