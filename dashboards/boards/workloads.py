"""rdma-workloads.json: requests and errors per process, container and QP
type from the per-QP counter sets, the QP inventory and counter modes."""
from panels.builders import MERGE, bargauge, organize, table, target, thresholds, timeseries
from panels.layout import Board
from panels.ports import PORT_LEGEND
from panels.promql import INSTANCES, PORTS, rate, sel
from panels.variables import port_variables, query_variable

WORKLOAD_LABELS = "instance, comm, pid"
WORKLOAD_LEGEND = "{{instance}} {{comm}} ({{pid}})"


def dashboard():
    variables = port_variables() + [query_variable(
        "comm", "Process",
        'label_values({__name__=~"rdma_qp_stat_.+_total", job=~"$job", '
        'instance=~"$instance"}, comm)',
        description="Process names of the per-QP counter sets.")]
    b = Board("rdma-workloads", "RDMA / Workloads",
              "Traffic and errors per process, container and QP type from the kernel's per-QP "
              "counter sets (mlx5 and ionic fill them; the port must be in auto mode or have "
              "bound QPs), and the QP inventory.", variables)
    wsel = sel(PORTS, 'comm=~"$comm"')

    def by(labels, name, window="$__rate_interval"):
        return f"sum by ({labels}) ({rate(f'rdma_qp_stat_{name}_total', wsel, window)})"

    requests = ("rx_write_requests", "rx_read_requests", "rx_atomic_requests")
    b.row("Traffic by process")
    for name, what in zip(requests, ("RDMA writes", "RDMA reads", "Atomic operations")):
        b.add(timeseries(
            f"{what} received by process",
            f"{what} that the process's QPs received as responder per second "
            f"(`rdma_qp_stat_{name}_total`), summed over its counter sets.",
            [target(by(WORKLOAD_LABELS, name), WORKLOAD_LEGEND)], "reqps"),
            w=8)
    b.add(bargauge(
        "Top processes by requests received", "Writes, reads and atomics received, averaged over "
        "the selected time range.",
        "topk(10, " + " + ".join(by(WORKLOAD_LABELS, n, "$__range") for n in requests) + ")",
        WORKLOAD_LEGEND, "reqps"))
    for label, title, detail in (
            ("qp_type", "QP type", "by QP type (RC, UD, ...)."),
            ("cgroup", "container (cgroup)",
             "by the process's cgroup. Needs `qp_counters.cgroup_label: true`.")):
        b.add(timeseries(
            f"Requests received by {title}",
            f"Writes, reads and atomics received per second, {detail}",
            [target(" + ".join(by(label, n) for n in requests), f"{{{{{label}}}}}")], "reqps",
            stack=True))
    b.add(timeseries(
        "Share of the port's requests in counter sets",
        "What the counter sets account for of the port's own `rx_write_requests`: below 100% "
        "when QPs are not bound to sets (created before auto mode, kernel QPs).",
        [target(f"sum by (instance, device, port) ({rate('rdma_qp_stat_rx_write_requests_total', PORTS)})"
                f" / sum by (instance, device, port) ({rate('rdma_port_hw_rx_write_requests_total', PORTS)})",
                PORT_LEGEND)], "percentunit"))

    errors = ("packet_seq_err", "local_ack_timeout_err", "out_of_sequence", "rnr_nak_retry_err",
              "duplicate_request", "out_of_buffer")
    b.row("Errors by process")
    b.add(timeseries(
        "Transport errors by process",
        "Per-QP error counters summed by process: sequence-error NAKs, ACK timeouts, "
        "out-of-sequence packets, RNR retries exhausted, duplicates and receive buffer drops. "
        "Tells which application suffers from (or causes) the port's retransmissions.",
        [target(by(WORKLOAD_LABELS, n), f"{WORKLOAD_LEGEND} {n}") for n in errors], "cps"),
        w=24, h=9)
    b.add(table(
        "Errors by process and QP type", "Errors over the selected time range.",
        [target(f"sum by (instance, comm, pid, qp_type) "
                f"(increase(rdma_qp_stat_{n}_total{{{wsel}}}[$__range]))", instant=True,
                fmt="table") for n in errors],
        "short", transformations=[MERGE, organize(
            exclude=("Time",), rename={f"Value #{chr(ord('A') + i)}": n
                                       for i, n in enumerate(errors)})]), w=24, h=8)

    b.row("QP inventory")
    b.add(timeseries("QPs by state", "QPs in the kernel's resource tracker by state. ERR and "
                     "SQE are QPs that stopped working.",
                     [target(f"sum by (state) (rdma_qps{{{PORTS}}})", "{{state}}")], "short",
                     stack=True), w=8)
    b.add(timeseries("QPs by type", "QPs by type (RC, UD, GSI, ...).",
                     [target(f"sum by (qp_type) (rdma_qps{{{PORTS}}})", "{{qp_type}}")], "short",
                     stack=True), w=8)
    b.add(timeseries("Device resources", "Objects per device (`rdma_device_resources`): QPs, "
                     "CQs, MRs, PDs, contexts, CM IDs. A steady climb is a leak.",
                     [target(f'rdma_device_resources{{{INSTANCES}, device=~"$device"}}',
                             "{{instance}} {{device}} {{resource}}")], "short"), w=8)
    b.add(table(
        "QPs by process", "QPs per process, type and state. The process name needs "
        "`qp_counters.inventory_by_comm: true`.",
        [target(f'sum by (instance, comm, qp_type, state) (rdma_qps{{{PORTS}, comm=~"$comm"}})',
                instant=True, fmt="table")], "short",
        transformations=[organize(exclude=("Time",), rename={"Value": "QPs"})]), w=24, h=8)

    b.row("Counter sets")
    b.add(table(
        "Counter mode per port", "Each port's mode (none, auto, manual), auto criteria, the "
        "sets bound, sets folded into the overflow series (`qp_counters.max_series` reached), "
        "and drift (1: a port the exporter manages is not in the configured mode; alert "
        "RdmaCounterModeDrift).",
        [target(f"rdma_qp_stat_mode_info{{{PORTS}}}", instant=True, fmt="table"),
         target(f"rdma_qp_stat_sets{{{PORTS}}}", instant=True, fmt="table"),
         target(f"rdma_qp_stat_overflow_sets{{{PORTS}}}", instant=True, fmt="table"),
         target(f"rdma_qp_stat_mode_drift{{{PORTS}}}", instant=True, fmt="table")],
        "none", transformations=[MERGE, organize(
            exclude=("Time", "__name__", "job", "Value #A"),
            rename={"Value #B": "sets", "Value #C": "overflow sets", "Value #D": "drift",
                    "auto_by": "auto by"})],
        overrides=[{"matcher": {"id": "byName", "options": "drift"}, "properties": [
            {"id": "thresholds", "value": thresholds((1, "red"))},
            {"id": "custom.cellOptions", "value": {"type": "color-background"}}]}]))
    b.add(timeseries(
        "Counter management writes", "Kernel writes the exporter made to manage counters, by "
        "operation and result (`ok` or the errno's name), in each rate interval.",
        [target(f"sum by (instance, device, port, operation, result) "
                f"(increase(rdma_qp_stat_writes_total{{{PORTS}}}[$__rate_interval]))",
                f"{PORT_LEGEND} {{{{operation}}}} {{{{result}}}}")], "short"))
    return b.json()
