"""The metric selectors of a PromQL expression, rewritten by name.

bench/fleet_faults reads the host records late (`offset`), bench/fleet_load
expands the rollup records into their definitions; both walk the same
selectors. Enough PromQL for the shipped rules, not a parser: a selector is
a metric name that is not part of another name, not inside a label value
and not a function call, with its optional {matchers} and [range]."""
import re

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SELECTOR = re.compile(r'(?<![\w:"])(%s)(\{[^}]*\})?(\[\w+\])?(?![\w:("])' % NAME)


def sub_selectors(expr, replace):
    """EXPR with every selector replaced by REPLACE(name, matchers, range,
    text): matchers and range as written ("" when absent), text the whole
    selector; REPLACE returns the text to put in its place."""
    return SELECTOR.sub(
        lambda m: replace(m.group(1), m.group(2) or "", m.group(3) or "", m.group(0)), expr)
