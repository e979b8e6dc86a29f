"""PromQL: selectors over the dashboard variables, rates, every counter of a
port."""


def sel(*parts):
    return ", ".join(parts)


JOB = 'job=~"$job"'
INSTANCES = sel(JOB, 'instance=~"$instance"')
PORTS = sel(INSTANCES, 'device=~"$device"', 'port=~"$port"')
ONE_PORT = sel(JOB, 'instance="$instance"', 'device="$device"', 'port="$port"')
# The device of the selected port: its PCI function's series have no port.
ONE_DEVICE = sel(JOB, 'instance="$instance"', 'device="$device"')


def rate(metric, selector, window="$__rate_interval"):
    return f"rate({metric}{{{selector}}}[{window}])"


def all_counters(family, selector, window=None):
    """Every rdma_port_<family>_*_total of a port, told apart by a `counter` label.

    With a window (("$__interval", "$__interval_ms") or ("$__range",
    "$__range_ms")): the average rate over it. rate() cannot be used here:
    it drops the metric name before label_replace could keep the counters
    apart (Prometheus then reports duplicate series). The difference of two
    instants keeps the label; a counter reset (driver reload) gives a
    negative difference, which is dropped."""
    def named(offset=""):
        return (f'label_replace({{__name__=~"rdma_port_{family}_.+_total", {selector}}}{offset}, '
                f'"counter", "$1", "__name__", "rdma_port_{family}_(.+)_total")')
    if window is None:
        return named()
    span, span_ms = window
    return f"({named()} - {named(' offset ' + span)} >= 0) / ({span_ms} / 1000)"
