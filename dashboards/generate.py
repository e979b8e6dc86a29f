#!/usr/bin/env python3
"""Writes the Grafana dashboards in this directory (rdma-*.json).

The JSON files are generated so that every dashboard uses the same
variables, selectors, legends and layout rules; edit this file, run it, and
commit both (a test checks that they agree):

    dashboards/generate.py            # rewrites dashboards/rdma-*.json
    dashboards/generate.py --check    # exit 1 if a file differs

Conventions:
- Every panel and query uses the data source variable `${datasource}` (no
  `__inputs`): the dashboards import as they are and follow whichever
  Prometheus the viewer picks.
- Selectors always carry `job` and `instance`; per-port panels also `device`
  and `port`. Multi-value variables with "All" use `.*`, so a fleet of any
  size does not expand into a huge regular expression.
- Rates use `$__rate_interval`; panels that summarise the time picker's range
  use `$__range`. Panels over every counter of a port use differences over
  `$__interval` (see all_counters).
Only the Python standard library is used.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DS = {"type": "prometheus", "uid": "${datasource}"}
SCHEMA_VERSION = 39
TAGS = ["rdma", "rdma_exporter"]

PORT_LEGEND = "{{instance}} {{device}}/{{port}}"

# Port states as rdma_port_state / rdma_port_phys_state report them.
PORT_STATES = [(1, "DOWN", "red"), (2, "INIT", "orange"), (3, "ARMED", "yellow"),
               (4, "ACTIVE", "green"), (5, "ACTIVE_DEFER", "green")]
PHYS_STATES = [(1, "SLEEP", "red"), (2, "POLLING", "orange"), (3, "DISABLED", "red"),
               (4, "TRAINING", "yellow"), (5, "LINK_UP", "green"),
               (6, "ERROR_RECOVERY", "orange"), (7, "PHY_TEST", "purple")]


# --------------------------------------------------------------- variables

def datasource_variable():
    return {"name": "datasource", "label": "Data source", "type": "datasource",
            "query": "prometheus", "current": {}, "hide": 0, "includeAll": False,
            "multi": False, "options": [], "refresh": 1, "regex": "", "skipUrlSync": False}


def query_variable(name, label, query, multi=True, description=""):
    """A variable filled from `label_values(selector, label)`.

    Multi-value variables offer "All" as `.*`; single-value ones do not."""
    v = {"name": name, "label": label, "type": "query", "datasource": DS,
         "definition": query, "query": {"query": query, "refId": "StandardVariableQuery"},
         "current": {}, "hide": 0, "includeAll": multi, "multi": multi, "options": [],
         "refresh": 2, "regex": "", "skipUrlSync": False, "sort": 1}
    if multi:
        v["allValue"] = ".*"
    if description:
        v["description"] = description
    return v


def job_variable():
    # No allValue: "All" expands to the exporters' jobs only, so up{job=~"$job"}
    # never picks up other targets.
    v = query_variable("job", "Job", "label_values(rdma_exporter_build_info, job)",
                       description="Scrape jobs that scrape rdma_exporter.")
    del v["allValue"]
    return v


def port_variables(multi=True):
    """job, instance, device and port, each depending on the ones before."""
    if multi:
        return [job_variable(),
                query_variable("instance", "Instance",
                               'label_values(rdma_exporter_build_info{job=~"$job"}, instance)'),
                query_variable("device", "Device",
                               'label_values(rdma_port_info{job=~"$job", instance=~"$instance"}, device)'),
                query_variable("port", "Port",
                               'label_values(rdma_port_info{job=~"$job", instance=~"$instance", '
                               'device=~"$device"}, port)')]
    return [job_variable(),
            query_variable("instance", "Instance",
                           'label_values(rdma_exporter_build_info{job=~"$job"}, instance)',
                           multi=False),
            query_variable("device", "Device",
                           'label_values(rdma_port_info{job=~"$job", instance="$instance"}, device)',
                           multi=False),
            query_variable("port", "Port",
                           'label_values(rdma_port_info{job=~"$job", instance="$instance", '
                           'device="$device"}, port)', multi=False)]


# ------------------------------------------------------------------ panels

def target(expr, legend="", instant=False, fmt=None):
    t = {"datasource": DS, "editorMode": "code", "expr": expr, "legendFormat": legend,
         "range": not instant, "instant": instant}
    if fmt:
        t["format"] = fmt
    return t


def thresholds(*steps, base="green"):
    """thresholds(( 1, "red")) -> base colour below 1, red from 1."""
    out = [{"color": base, "value": None}]
    out += [{"color": c, "value": v} for v, c in steps]
    return {"mode": "absolute", "steps": out}


def value_mappings(states):
    return [{"type": "value",
             "options": {str(n): {"text": text, "color": color, "index": i}
                         for i, (n, text, color) in enumerate(states)}}]


def panel(kind, title, description, targets, unit, **extra):
    p = {"type": kind, "title": title, "description": description, "datasource": DS,
         "targets": targets,
         "fieldConfig": {"defaults": {"unit": unit, "thresholds": thresholds()},
                         "overrides": []},
         "options": {}}
    for key, value in extra.items():
        p[key] = value
    return p


def timeseries(title, description, targets, unit, stack=False, negative_refs=(), min_zero=True,
               limits=None, legend_calcs=("mean", "max")):
    p = panel("timeseries", title, description, targets, unit)
    custom = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10, "showPoints": "never",
              "spanNulls": False, "axisSoftMin": 0 if min_zero and not negative_refs else None,
              "stacking": {"mode": "normal" if stack else "none", "group": "A"},
              "thresholdsStyle": {"mode": "off"}}
    if custom["axisSoftMin"] is None:
        del custom["axisSoftMin"]
    p["fieldConfig"]["defaults"]["custom"] = custom
    p["fieldConfig"]["defaults"]["color"] = {"mode": "palette-classic"}
    if limits:
        p["fieldConfig"]["defaults"]["thresholds"] = thresholds(*limits)
        custom["thresholdsStyle"] = {"mode": "dashed"}
    for ref in negative_refs:
        p["fieldConfig"]["overrides"].append({
            "matcher": {"id": "byFrameRefID", "options": ref},
            "properties": [{"id": "custom.transform", "value": "negative-Y"}]})
    p["options"] = {"legend": {"displayMode": "table", "placement": "bottom", "showLegend": True,
                               "calcs": list(legend_calcs)},
                    "tooltip": {"mode": "multi", "sort": "desc"}}
    return p


def stat(title, description, expr, unit, limits=(), base="green", mappings=None, legend="",
         text_mode="auto", instant=True):
    p = panel("stat", title, description, [target(expr, legend, instant=instant)], unit)
    p["fieldConfig"]["defaults"]["thresholds"] = thresholds(*limits, base=base)
    if mappings:
        p["fieldConfig"]["defaults"]["mappings"] = mappings
    p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                    "colorMode": "background", "graphMode": "none", "justifyMode": "auto",
                    "orientation": "auto", "textMode": text_mode, "wideLayout": True}
    return p


def table(title, description, targets, unit, transformations=(), overrides=(), mappings=None,
          limits=(), color_cells=False):
    p = panel("table", title, description, targets, unit)
    p["fieldConfig"]["defaults"]["thresholds"] = thresholds(*limits)
    p["fieldConfig"]["defaults"]["custom"] = {
        "align": "auto", "cellOptions": {"type": "color-background" if color_cells else "auto"}}
    if mappings:
        p["fieldConfig"]["defaults"]["mappings"] = mappings
    p["fieldConfig"]["overrides"] = list(overrides)
    p["options"] = {"showHeader": True, "cellHeight": "sm",
                    "footer": {"show": False, "reducer": ["sum"], "fields": ""}}
    p["transformations"] = list(transformations)
    return p


def bargauge(title, description, expr, legend, unit, limits=()):
    p = panel("bargauge", title, description, [target(expr, legend, instant=True)], unit)
    p["fieldConfig"]["defaults"]["thresholds"] = thresholds(*limits)
    p["fieldConfig"]["defaults"]["min"] = 0
    p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                    "displayMode": "gradient", "orientation": "horizontal", "showUnfilled": True,
                    "valueMode": "color", "namePlacement": "auto", "minVizHeight": 16,
                    "minVizWidth": 8, "maxVizHeight": 300, "sizing": "auto"}
    return p


def state_timeline(title, description, targets, mappings_by_ref):
    p = panel("state-timeline", title, description, targets, "none")
    p["fieldConfig"]["defaults"]["custom"] = {"fillOpacity": 80, "lineWidth": 0}
    p["fieldConfig"]["defaults"]["color"] = {"mode": "thresholds"}
    for ref, states in mappings_by_ref.items():
        p["fieldConfig"]["overrides"].append({
            "matcher": {"id": "byFrameRefID", "options": ref},
            "properties": [{"id": "mappings", "value": value_mappings(states)}]})
    p["options"] = {"mergeValues": True, "showValue": "auto", "alignValue": "left",
                    "rowHeight": 0.9, "legend": {"displayMode": "list", "placement": "bottom",
                                                 "showLegend": False},
                    "tooltip": {"mode": "single", "sort": "none"}}
    return p


def heatmap(title, description, expr):
    p = panel("heatmap", title, description,
              [target(expr, "{{le}}", fmt="heatmap")], "s")
    p["options"] = {"calculate": False, "cellGap": 1,
                    "color": {"mode": "scheme", "scheme": "Spectral", "steps": 64,
                              "exponent": 0.5, "fill": "dark-orange", "reverse": False},
                    "yAxis": {"axisPlacement": "left", "unit": "s", "reverse": False},
                    "rowsFrame": {"layout": "auto"}, "showValue": "never",
                    "tooltip": {"mode": "single", "yHistogram": True, "showColorScale": True},
                    "legend": {"show": True}, "exemplars": {"color": "rgba(255,0,255,0.7)"},
                    "filterValues": {"le": 1e-9}, "cellValues": {"unit": "short"}}
    return p


def organize(exclude=(), rename=None):
    return {"id": "organize", "options": {"excludeByName": {name: True for name in exclude},
                                          "renameByName": rename or {}, "indexByName": {}}}


MERGE = {"id": "merge", "options": {}}


def unit_override(field, unit):
    return {"matcher": {"id": "byName", "options": field},
            "properties": [{"id": "unit", "value": unit}]}


# ------------------------------------------------------------------ layout

class Board:
    """Lays panels out left to right in rows of 24 columns, numbering them."""

    def __init__(self, uid, title, description, variables):
        self.uid, self.title, self.description = uid, title, description
        self.variables = [datasource_variable()] + variables
        self.panels = []
        self.x = self.y = self.row_height = 0

    def _next_line(self):
        if self.x:
            self.y += self.row_height
        self.x = self.row_height = 0

    def row(self, title):
        self._next_line()
        self.panels.append({"type": "row", "title": title, "collapsed": False, "panels": [],
                            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y}})
        self.y += 1

    def add(self, p, w=12, h=8):
        if self.x + w > 24:
            self._next_line()
        p["gridPos"] = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.panels.append(p)
        self.x += w
        self.row_height = max(self.row_height, h)
        if self.x == 24:
            self._next_line()

    def json(self):
        for number, p in enumerate(self.panels, 1):
            p["id"] = number
            for i, t in enumerate(p.get("targets", [])):
                t["refId"] = chr(ord("A") + i)
        ordered = []
        for p in self.panels:
            # A stable key order reads better in diffs.
            head = {k: p[k] for k in ("id", "type", "title", "description", "gridPos",
                                       "datasource") if k in p}
            ordered.append({**head, **{k: v for k, v in p.items() if k not in head}})
        return {
            "annotations": {"list": [{
                "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
                "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
                "name": "Annotations & Alerts", "type": "dashboard"}]},
            "description": self.description,
            "editable": True,
            "fiscalYearStartMonth": 0,
            "graphTooltip": 1,
            "id": None,
            "links": [{"title": "RDMA dashboards", "type": "dashboards", "tags": ["rdma"],
                       "asDropdown": True, "includeVars": True, "keepTime": True,
                       "icon": "external link", "targetBlank": False, "tooltip": "",
                       "url": ""}],
            "panels": ordered,
            "refresh": "30s",
            "schemaVersion": SCHEMA_VERSION,
            "tags": TAGS,
            "templating": {"list": self.variables},
            "time": {"from": "now-1h", "to": "now"},
            "timepicker": {},
            "timezone": "",
            "title": self.title,
            "uid": self.uid,
            "version": 1,
            "weekStart": "",
        }


# ------------------------------------------------------------- expressions

def sel(*parts):
    return ", ".join(parts)


JOB = 'job=~"$job"'
INSTANCES = sel(JOB, 'instance=~"$instance"')
PORTS = sel(INSTANCES, 'device=~"$device"', 'port=~"$port"')
ONE_PORT = sel(JOB, 'instance="$instance"', 'device="$device"', 'port="$port"')


def rate(metric, selector, window="$__rate_interval"):
    return f"rate({metric}{{{selector}}}[{window}])"


def counter_rates(selector, family, names, legend_prefix=PORT_LEGEND):
    """One query per counter: rate(rdma_port_<family>_<name>_total)."""
    return [target(rate(f"rdma_port_{family}_{n}_total", selector),
                   f"{legend_prefix} {n}".strip()) for n in names]


def counters_panel(title, description, family, names, unit="cps"):
    """A time series of rate(rdma_port_<family>_<name>_total) per port, one
    query per counter."""
    return timeseries(title, description, counter_rates(PORTS, family, names), unit)


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


# ------------------------------------------------------------- dashboards

PMA_ERRORS = ["symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
              "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
              "port_xmit_discards", "port_xmit_constraint_errors", "port_rcv_constraint_errors",
              "local_link_integrity_errors", "excessive_buffer_overrun_errors", "VL15_dropped"]


def throughput_panel(selector, title="Throughput"):
    return timeseries(
        title,
        "Bytes per second from the IB PMA data counters (`rdma_port_pma_port_xmit_data_bytes_total`,"
        " `..._rcv_data_bytes_total`; the kernel counts 4-byte words, the exporter multiplies "
        "by 4). Transmit above zero, receive below. Drivers without PMA counters (Soft-RoCE) "
        "have none: see Packets.",
        [target(rate("rdma_port_pma_port_xmit_data_bytes_total", selector), PORT_LEGEND + " tx"),
         target(rate("rdma_port_pma_port_rcv_data_bytes_total", selector), PORT_LEGEND + " rx")],
        "Bps", negative_refs=("B",))


def packets_panel(selector):
    return timeseries(
        "Packets",
        "Packets per second: IB PMA packet counters where the driver has them, Soft-RoCE's "
        "`sent_pkts`/`rcvd_pkts` hw counters otherwise. Transmit above zero, receive below.",
        [target(rate("rdma_port_pma_port_xmit_packets_total", selector), PORT_LEGEND + " tx"),
         target(rate("rdma_port_pma_port_rcv_packets_total", selector), PORT_LEGEND + " rx"),
         target(rate("rdma_port_hw_sent_pkts_total", selector), PORT_LEGEND + " tx"),
         target(rate("rdma_port_hw_rcvd_pkts_total", selector), PORT_LEGEND + " rx")],
        "pps", negative_refs=("B", "D"))


def fleet():
    b = Board("rdma-fleet", "RDMA / Fleet overview",
              "Hosts and ports of every rdma_exporter: state, link rate, traffic, errors and the "
              "exporter's own health.", port_variables())
    b.row("Overview")
    b.add(stat("Exporters up", "Scrape targets of the selected jobs that answered the last "
               "scrape (`up`).", f"sum(up{{{INSTANCES}}})", "none", base="blue"), w=4, h=4)
    b.add(stat("Exporters down", "Scrape targets whose last scrape failed: the host, the "
               "exporter or the network is down. Alert: RdmaExporterDown.",
               f"count(up{{{INSTANCES}}} == 0) or vector(0)", "none", limits=((1, "red"),)),
          w=4, h=4)
    b.add(stat("Ports active", "Ports in logical state ACTIVE or ACTIVE_DEFER.",
               f"count(rdma_port_state{{{PORTS}}} >= 4)", "none", base="blue"), w=4, h=4)
    b.add(stat("Ports not active", "Ports in DOWN, INIT or ARMED: no traffic passes. A port "
               "that was ACTIVE raises RdmaPortDown.",
               f"count(rdma_port_state{{{PORTS}}} < 4) or vector(0)", "none",
               limits=((1, "orange"),)), w=4, h=4)
    b.add(stat("Link-down events", "Times links went down in the selected time range (IB PMA "
               "`link_downed`, and the hw counter of drivers that have one, like Soft-RoCE).",
               f"(sum(increase(rdma_port_pma_link_downed_total{{{PORTS}}}[$__range])) or vector(0))"
               f" + (sum(increase(rdma_port_hw_link_downed_total{{{PORTS}}}[$__range])) "
               "or vector(0))", "none", limits=((1, "orange"), (5, "red"))), w=4, h=4)
    b.add(stat("Collectors failing", "Exporter collectors whose last run met an error "
               "(`rdma_exporter_collector_success == 0`). See the exporter's log.",
               f"count(rdma_exporter_collector_success{{{INSTANCES}}} == 0) or vector(0)", "none",
               limits=((1, "red"),)), w=4, h=4)

    b.row("Ports")
    ports = table(
        "Ports", "Every port: logical and physical state, the network device behind it (RoCE), "
        "link layer and the rate the link trained to.",
        [target(f"rdma_port_info{{{PORTS}}}", instant=True, fmt="table"),
         target(f"rdma_port_rate_bytes_per_second{{{PORTS}}} * 8", instant=True, fmt="table"),
         target(f"rdma_port_link_layer_info{{{PORTS}}}", instant=True, fmt="table")],
        "none",
        transformations=[MERGE, organize(
            exclude=("Time", "__name__", "job", "Value #A", "Value #C"),
            rename={"Value #B": "link rate", "phys_state": "physical state",
                    "link_layer": "link layer"})],
        overrides=[unit_override("link rate", "bps"), {
            "matcher": {"id": "byName", "options": "port"},
            "properties": [{"id": "links", "value": [{
                "title": "Port detail",
                "url": "/d/rdma-port/rdma-port-detail?${datasource:queryparam}&${job:queryparam}"
                       "&var-instance=${__data.fields.instance}&var-device=${__data.fields.device}"
                       "&var-port=${__data.fields.port}&${__url_time_range}"}]}]}])
    b.add(ports, w=24, h=8)
    b.add(state_timeline("Port state", "Logical state of every port over time (DOWN, INIT, "
                         "ARMED, ACTIVE, ACTIVE_DEFER).",
                         [target(f"rdma_port_state{{{PORTS}}}", PORT_LEGEND)],
                         {"A": PORT_STATES}), w=24, h=8)

    b.row("Traffic")
    b.add(throughput_panel(PORTS))
    b.add(packets_panel(PORTS))
    b.add(timeseries(
        "Link utilization",
        "PMA data rate over the rate the link trained to (`rdma_port_rate_bytes_per_second`), "
        "per direction. Sustained values near 100% mean the link is the bottleneck.",
        [target(f"{rate('rdma_port_pma_port_xmit_data_bytes_total', PORTS)} / "
                f"rdma_port_rate_bytes_per_second{{{PORTS}}}", PORT_LEGEND + " tx"),
         target(f"{rate('rdma_port_pma_port_rcv_data_bytes_total', PORTS)} / "
                f"rdma_port_rate_bytes_per_second{{{PORTS}}}", PORT_LEGEND + " rx")],
        "percentunit", limits=((0.8, "orange"), (0.95, "red"))))
    b.add(bargauge(
        "Top talkers", "The 10 ports that moved the most bytes (transmit plus receive, IB PMA "
        "data counters), averaged over the selected time range.",
        f"topk(10, {rate('rdma_port_pma_port_xmit_data_bytes_total', PORTS, '$__range')} + "
        f"{rate('rdma_port_pma_port_rcv_data_bytes_total', PORTS, '$__range')})",
        PORT_LEGEND, "Bps"))

    b.row("Errors and drops")
    b.add(timeseries(
        "Physical and link errors",
        "IB PMA error counters per second. Symbol errors and link error recovery point at "
        "cables, transceivers or dirty connectors; receive errors at corrupted packets. Any "
        "sustained rate needs a look. Alerts: RdmaSymbolErrors, RdmaLinkErrorRecovery, "
        "RdmaPortReceiveErrors.",
        counter_rates(PORTS, "pma", ["symbol_error", "link_error_recovery", "port_rcv_errors",
                                     "port_rcv_remote_physical_errors",
                                     "local_link_integrity_errors",
                                     "excessive_buffer_overrun_errors"]),
        "cps", limits=((1, "red"),)))
    b.add(timeseries(
        "Drops and discards",
        "Packets dropped: transmit discards (IB PMA: link down or congestion), VL15 drops, and "
        "mlx5's `out_of_buffer` (received with no receive WQE posted: the application is not "
        "keeping up).",
        counter_rates(PORTS, "pma", ["port_xmit_discards", "VL15_dropped"])
        + counter_rates(PORTS, "hw", ["out_of_buffer"]),
        "cps", limits=((1, "red"),)))
    b.add(timeseries(
        "Transport errors and retransmissions",
        "Retransmission triggers of reliable connections per second: NAKs for sequence errors "
        "(mlx5 `packet_seq_err`, `implied_nak_seq_err`), packets received out of sequence "
        "(`out_of_sequence`), ACK timeouts (`local_ack_timeout_err`), RNR retries exhausted; "
        "Soft-RoCE's `rcvd_seq_err`, `out_of_seq_request`, `retry_exceeded_err`. On a lossless "
        "fabric these stay near zero; a sustained rate means packet loss.",
        counter_rates(PORTS, "hw", ["packet_seq_err", "implied_nak_seq_err", "out_of_sequence",
                                    "local_ack_timeout_err", "rnr_nak_retry_err",
                                    "rcvd_seq_err", "out_of_seq_request",
                                    "retry_exceeded_err"]),
        "cps"))
    b.add(timeseries(
        "Completion errors",
        "Work completions with errors per second, requester (`req_*`) and responder "
        "(`resp_*`) side (mlx5), and Soft-RoCE's `send_err`. Remote access errors usually "
        "mean a wrong rkey or a freed memory region in the application.",
        counter_rates(PORTS, "hw", ["req_cqe_error", "resp_cqe_error", "req_remote_access_errors",
                                    "resp_remote_access_errors", "req_remote_invalid_request",
                                    "resp_local_length_error", "send_err"]),
        "cps"))

    b.row("Exporter health")
    b.add(table(
        "Collectors", "Each collector's last run: OK or FAILED, and its failures in the "
        "selected range. A failing collector's metrics are missing or stale; its log line "
        "names the device, file or netlink command.",
        [target(f"rdma_exporter_collector_success{{{INSTANCES}}}", instant=True, fmt="table"),
         target(f"increase(rdma_exporter_collector_failures_total{{{INSTANCES}}}[$__range])",
                instant=True, fmt="table")],
        "none", transformations=[MERGE, organize(
            exclude=("Time", "__name__", "job"),
            rename={"Value #A": "last run", "Value #B": "failures in range"})],
        overrides=[{"matcher": {"id": "byName", "options": "last run"}, "properties": [
            {"id": "mappings", "value": [{"type": "value", "options": {
                "0": {"text": "FAILED", "color": "red", "index": 0},
                "1": {"text": "OK", "color": "green", "index": 1}}}]},
            {"id": "custom.cellOptions", "value": {"type": "color-background"}}]},
            {"matcher": {"id": "byName", "options": "failures in range"},
             "properties": [{"id": "decimals", "value": 0}]}]))
    b.add(table(
        "Exporters", "Version of every exporter, whether the kernel answers on rdma netlink (0: "
        "no RDMA modules, or no netlink access in a container; only sysfs data is exported) "
        "and the samples of the last scrape.",
        [target(f"rdma_exporter_build_info{{{INSTANCES}}}", instant=True, fmt="table"),
         target(f"rdma_exporter_netlink_available{{{INSTANCES}}}", instant=True, fmt="table"),
         target(f"scrape_samples_scraped{{{INSTANCES}}}", instant=True, fmt="table")],
        "none", transformations=[MERGE, organize(
            exclude=("Time", "__name__", "job", "Value #A"),
            rename={"Value #B": "netlink", "Value #C": "samples"})],
        overrides=[{"matcher": {"id": "byName", "options": "netlink"}, "properties": [
            {"id": "mappings", "value": [{"type": "value", "options": {
                "0": {"text": "unavailable", "color": "orange", "index": 0},
                "1": {"text": "available", "color": "green", "index": 1}}}]},
            {"id": "custom.cellOptions", "value": {"type": "color-background"}}]}]))
    b.add(timeseries(
        "Scrape and collection duration",
        "How long Prometheus waited for /metrics (`scrape_duration_seconds`) and how long "
        "the exporter's last collection took. A collection near the scrape timeout means a slow "
        "kernel interface; see Collector duration.",
        [target(f"scrape_duration_seconds{{{INSTANCES}}}", "{{instance}} scrape"),
         target(f"rdma_exporter_collection_duration_seconds{{{INSTANCES}}}",
                "{{instance}} collection")],
        "s", limits=((1, "orange"), (5, "red"))))
    b.add(timeseries(
        "Collector duration", "Wall time of each collector's last run.",
        [target(f"rdma_exporter_collector_duration_seconds{{{INSTANCES}}}",
                "{{instance}} {{collector}}")], "s"))
    return b


def port_detail():
    b = Board("rdma-port", "RDMA / Port detail",
              "One port in depth: state history, every hw counter of the driver, the IB PMA "
              "counters and the QPs on it.", port_variables(multi=False))
    b.row("State")
    b.add(stat("State", "Logical port state: DOWN, INIT, ARMED, ACTIVE or ACTIVE_DEFER.", f"rdma_port_state{{{ONE_PORT}}}", "none",
               mappings=value_mappings(PORT_STATES), base="text"), w=4, h=4)
    b.add(stat("Physical state", "Physical port state: LINK_UP when the link trained; "
               "POLLING without a link partner, DISABLED when switched off.", f"rdma_port_phys_state{{{ONE_PORT}}}",
               "none", mappings=value_mappings(PHYS_STATES), base="text"), w=4, h=4)
    b.add(stat("Link rate", "The rate the link trained to (sysfs `rate`).",
               f"rdma_port_rate_bytes_per_second{{{ONE_PORT}}} * 8", "bps", base="blue"),
          w=4, h=4)
    b.add(stat("Link layer", "InfiniBand or Ethernet (RoCE).",
               f"rdma_port_link_layer_info{{{ONE_PORT}}}", "none", legend="{{link_layer}}",
               text_mode="name", base="blue"), w=4, h=4)
    b.add(stat("Network device", "The netdev behind the port (RoCE); empty on InfiniBand.",
               f"rdma_port_info{{{ONE_PORT}}}", "none", legend="{{netdev}}", text_mode="name",
               base="blue"), w=4, h=4)
    b.add(stat("LID", "InfiniBand local identifier (InfiniBand ports only).",
               f"rdma_port_lid{{{ONE_PORT}}}", "none", base="blue"), w=4, h=4)
    b.add(state_timeline("State history", "Logical and physical state over time: flaps show as "
                         "short DOWN or POLLING stretches.",
                         [target(f"rdma_port_state{{{ONE_PORT}}}", "logical"),
                          target(f"rdma_port_phys_state{{{ONE_PORT}}}", "physical")],
                         {"A": PORT_STATES, "B": PHYS_STATES}), w=24, h=5)

    b.row("Traffic")
    b.add(throughput_panel(ONE_PORT))
    b.add(packets_panel(ONE_PORT))

    b.row("Hardware counters")
    b.add(timeseries(
        "Every hw counter (per second)",
        "Every counter the driver reports for the port (`rdma_port_hw_<name>_total`), as a "
        "rate. The names are the driver's: see the kernel's documentation of the driver "
        "(mlx5, rxe, ...).",
        [target(all_counters("hw", ONE_PORT, ("$__interval", "$__interval_ms")), "{{counter}}")],
        "cps"),
        w=24, h=10)
    b.add(table(
        "Hardware counters", "Every hw counter of the port: its value now and its average rate "
        "over the selected time range.",
        [target(all_counters("hw", ONE_PORT), instant=True, fmt="table"),
         target(all_counters("hw", ONE_PORT, ("$__range", "$__range_ms")), instant=True,
                fmt="table")],
        "none", transformations=[MERGE, organize(
            exclude=("Time", "__name__", "job", "instance", "device", "port"),
            rename={"Value #A": "total", "Value #B": "per second"})],
        overrides=[unit_override("per second", "cps")]), w=24, h=10)

    b.row("InfiniBand PMA counters")
    b.add(timeseries(
        "PMA error counters (per second)",
        "The IB PMA error counters (sysfs `counters/`). Drivers without PMA (Soft-RoCE) have "
        "none.", counter_rates(ONE_PORT, "pma", PMA_ERRORS, legend_prefix=""), "cps",
        limits=((1, "red"),)))
    b.add(timeseries(
        "Transmit wait (per second)",
        "`port_xmit_wait`: ticks in which the port had data to send but no flow-control "
        "credits from the other end. A rising rate means congestion downstream of this port.",
        [target(rate("rdma_port_pma_port_xmit_wait_total", ONE_PORT), "xmit_wait")], "cps"))
    b.add(table(
        "PMA counters", "Every IB PMA counter of the port, current value (data counters in "
        "bytes).", [target(all_counters("pma", ONE_PORT), instant=True, fmt="table")], "none",
        transformations=[organize(exclude=("Time", "__name__", "job", "instance", "device",
                                           "port"), rename={"Value": "total"})]), w=24, h=10)

    b.row("Queue pairs")
    b.add(timeseries("QPs by type and state", "QPs on this port in the kernel's resource "
                     "tracker (`rdma_qps`), by type and state. QPs in ERR or SQE stopped "
                     "working.", [target(f"sum by (qp_type, state) (rdma_qps{{{ONE_PORT}}})",
                                         "{{qp_type}} {{state}}")], "short", stack=True))
    b.add(stat("Counter sets", "Per-QP counter sets bound on the port (mlx5 and ionic fill "
               "them; rxe binds none).", f"rdma_qp_stat_sets{{{ONE_PORT}}}", "none", base="blue"),
          w=6, h=8)
    b.add(stat("Counter mode", "The port's per-QP counter mode and auto criteria.",
               f"rdma_qp_stat_mode_info{{{ONE_PORT}}}", "none", legend="{{mode}} {{auto_by}}",
               text_mode="name", base="blue"), w=6, h=8)
    return b


def congestion():
    b = Board("rdma-congestion", "RDMA / Congestion",
              "Congestion control and its symptoms: CNPs and ECN marks (RoCE DCQCN), "
              "retransmissions, out-of-sequence packets, RNR and ACK timeouts, PFC pauses "
              "and the QoS configuration per priority, InfiniBand credit stalls.",
              port_variables())
    b.row("Congestion notification (RoCE ECN / DCQCN)")
    b.add(counters_panel(
        "CNPs sent (notification point)",
        "Congestion notification packets this port sent (mlx5 `np_cnp_sent`) because it "
        "received ECN-marked packets: the fabric marks packets on its way here. Alert: "
        "RdmaCnpStorm.",
        "hw", ["np_cnp_sent"], unit="pps"))
    b.add(counters_panel(
        "CNPs handled (reaction point)",
        "CNPs this port received and acted on by lowering its send rate (mlx5 "
        "`rp_cnp_handled`), and ones it ignored (`rp_cnp_ignored`). Its senders are being "
        "throttled.",
        "hw", ["rp_cnp_handled", "rp_cnp_ignored"], unit="pps"))
    b.add(counters_panel(
        "ECN-marked packets received",
        "RoCE packets that arrived with the ECN congestion-experienced mark (mlx5 "
        "`np_ecn_marked_roce_packets`). Alert: RdmaEcnMarkedPackets.",
        "hw", ["np_ecn_marked_roce_packets"], unit="pps"))
    b.add(bargauge(
        "Top ports by CNPs sent", "The 10 ports that sent the most CNPs, averaged over the "
        "selected time range: where congestion is felt.",
        f"topk(10, {rate('rdma_port_hw_np_cnp_sent_total', PORTS, '$__range')})", PORT_LEGEND,
        "pps"))

    b.row("Retransmissions and ordering")
    b.add(counters_panel(
        "Retransmissions",
        "Events that make a reliable connection resend: NAKs for sequence errors "
        "(`packet_seq_err`, `implied_nak_seq_err`), adaptive retransmissions "
        "(`roce_adp_retrans`), and Soft-RoCE's completer retries (`completer_retry_err`). "
        "Alert: RdmaPacketSequenceErrors.",
        "hw", ["packet_seq_err", "implied_nak_seq_err", "roce_adp_retrans",
               "completer_retry_err"]))
    b.add(counters_panel(
        "Local ACK timeouts",
        "The sender's ACK timer expired (mlx5 `local_ack_timeout_err`, adaptive retransmission "
        "timeouts `roce_adp_retrans_to`): a packet or its ACK was lost. Each costs a timeout of "
        "milliseconds. Alert: RdmaLocalAckTimeouts.",
        "hw", ["local_ack_timeout_err", "roce_adp_retrans_to"]))
    b.add(counters_panel(
        "Out of sequence and duplicates",
        "Packets that arrived out of sequence (mlx5 `out_of_sequence`, Soft-RoCE "
        "`out_of_seq_request`) and duplicate requests (a retransmission of something already "
        "received). Alert: RdmaOutOfSequence.",
        "hw", ["out_of_sequence", "out_of_seq_request",
               "duplicate_request"]))
    b.add(counters_panel(
        "Receiver not ready (RNR)",
        "RNR NAK retries exhausted (mlx5 `rnr_nak_retry_err`, Soft-RoCE "
        "`retry_rnr_exceeded_err`) and RNR NAKs received or sent (Soft-RoCE `rcvd_rnr_err`, "
        "`send_rnr_err`): a receiver had no receive WQE posted.",
        "hw", ["rnr_nak_retry_err", "retry_rnr_exceeded_err",
               "rcvd_rnr_err", "send_rnr_err"]))
    b.add(counters_panel(
        "Receive buffer drops",
        "Packets dropped because no receive WQE was posted (mlx5 `out_of_buffer`).",
        "hw", ["out_of_buffer"]))
    b.add(counters_panel(
        "ICRC errors",
        "RoCE packets received with a bad invariant CRC (mlx5 `rx_icrc_encapsulated`): "
        "corruption on the path.",
        "hw", ["rx_icrc_encapsulated"]))

    b.row("Priority flow control and QoS (RoCE: ethtool and DCB)")
    prio_legend = PORT_LEGEND + " {{netdev}} prio {{priority}} {{direction}}"
    rx_bytes = rate("rdma_netdev_priority_bytes_total", sel(PORTS, 'direction="rx"'))
    tx_bytes = rate("rdma_netdev_priority_bytes_total", sel(PORTS, 'direction="tx"'))
    b.add(timeseries(
        "PFC pause frames per priority",
        "Pause frames per priority from the NIC's ethtool statistics "
        "(`rdma_netdev_pfc_pause_frames_total`): rx, the link partner paused this port's "
        "sending on that priority; tx, this port paused its partner because its receive "
        "buffer filled. Sustained pauses on the RoCE priority spread congestion backwards "
        "through the fabric.",
        [target(f"sum by (instance, device, port, netdev, priority, direction) "
                f"({rate('rdma_netdev_pfc_pause_frames_total', PORTS)})", prio_legend)],
        "pps"))
    b.add(timeseries(
        "Time paused per priority",
        "Share of time a priority was paused (`rdma_netdev_pfc_pause_duration_seconds_total`, "
        "where the driver counts it, as mlx5 does): rx, this port could not send; tx, it "
        "held its partner back. 1 means paused all the time. Alert: RdmaPfcPauseStorm.",
        [target(f"sum by (instance, device, port, netdev, priority, direction) "
                f"({rate('rdma_netdev_pfc_pause_duration_seconds_total', PORTS)})",
                prio_legend)],
        "percentunit", limits=((0.1, "orange"), (0.5, "red"))))
    b.add(timeseries(
        "Traffic per priority",
        "Bytes per second per priority on the physical port "
        "(`rdma_netdev_priority_bytes_total`): shows which priority RoCE, TCP and the latency "
        "flows really ride on. Transmit is drawn below the axis.",
        [target(f"sum by (instance, device, port, netdev, priority) "
                f"({rx_bytes})",
                PORT_LEGEND + " {{netdev}} prio {{priority}} rx"),
         target(f"sum by (instance, device, port, netdev, priority) "
                f"({tx_bytes})",
                PORT_LEGEND + " {{netdev}} prio {{priority}} tx")],
        "Bps", negative_refs=("B",)))
    b.add(timeseries(
        "Discards and ECN marks per priority",
        "Received packets dropped per priority and reason "
        "(`rdma_netdev_priority_discards_total`), port-level discards "
        "(`rdma_netdev_discards_total`: out of buffer, physical rx/tx), and packets the NIC "
        "saw with ECN congestion-experienced (`rdma_netdev_ecn_marked_packets_total`).",
        [target(f"sum by (instance, device, port, netdev, priority, reason) "
                f"({rate('rdma_netdev_priority_discards_total', PORTS)})",
                PORT_LEGEND + " {{netdev}} prio {{priority}} {{reason}}"),
         target(f"sum by (instance, device, port, netdev, reason) "
                f"({rate('rdma_netdev_discards_total', PORTS)})",
                PORT_LEGEND + " {{netdev}} {{reason}}"),
         target(f"sum by (instance, device, port, netdev, priority) "
                f"({rate('rdma_netdev_ecn_marked_packets_total', PORTS)})",
                PORT_LEGEND + " {{netdev}} prio {{priority}} ECN marked")],
        "pps"))
    b.add(table(
        "QoS configuration (DCB)",
        "Per port: the priorities with PFC on (`rdma_netdev_pfc_enabled`), the traffic class "
        "each priority maps to (`rdma_netdev_priority_traffic_class`) and the ETS share of "
        "each traffic class (`rdma_netdev_ets_bandwidth_percent`), from the netdev's IEEE DCB "
        "settings over rtnetlink. A port whose row differs from the rest of the fleet has "
        "drifted. Empty for netdevs without DCB.",
        [target(f"sum by (instance, device, port, netdev) "
                f"(rdma_netdev_pfc_enabled{{{PORTS}}})", instant=True, fmt="table"),
         target(f"count by (instance, device, port, netdev) "
                f"(rdma_netdev_priority_traffic_class{{{PORTS}}} > 0)", instant=True,
                fmt="table"),
         target(f"max by (instance, device, port, netdev) "
                f"(rdma_netdev_ets_bandwidth_percent{{{PORTS}}})", instant=True, fmt="table")],
        "none",
        transformations=[MERGE, organize(exclude=("Time",), rename={
            "Value #A": "PFC priorities", "Value #B": "priorities off TC 0",
            "Value #C": "largest ETS share %"})]), w=24)

    b.row("InfiniBand credit stalls")
    b.add(counters_panel(
        "Transmit wait",
        "IB PMA `port_xmit_wait`: ticks in which the port had data but no flow-control credits "
        "from the link partner. The InfiniBand counterpart of PFC pauses.",
        "pma", ["port_xmit_wait"]))
    b.add(counters_panel(
        "Transmit discards",
        "IB PMA `port_xmit_discards`: packets dropped on transmit because the port was down "
        "or congested past its timeout.",
        "pma", ["port_xmit_discards"]))
    return b


WORKLOAD_LABELS = "instance, comm, pid"
WORKLOAD_LEGEND = "{{instance}} {{comm}} ({{pid}})"


def workloads():
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
    return b


def latency():
    series_of = 'job=~"$job", instance=~"$instance"'
    rails = f"rdma_probe_port_rail_info{{{series_of}}}"
    probe = (f'rdma_probe_sent_total{{{series_of}, rail=~"$rail", device=~"$device", '
             'target=~"$target"}')
    variables = [
        job_variable(),
        query_variable("instance", "Source",
                       'label_values(rdma_probe_responder_sessions{job=~"$job"}, instance)',
                       description="Exporters with the probe enabled: the hosts that send "
                                   "the probes (and answer other hosts' probes)."),
        query_variable("rail", "Rail", f"label_values({rails}, rail)",
                       description="The rail of the local port: probe.rails, else the subnet "
                                   "of the port's GID. A port probes the target ports on its "
                                   "own rail."),
        query_variable("device", "Device",
                       f'label_values(rdma_probe_port_rail_info{{{series_of}, rail=~"$rail"}}, '
                       'device)',
                       description="The local RDMA device the probes leave from."),
        query_variable("target", "Target",
                       f"label_values(rdma_probe_target_up{{{series_of}}}, target)",
                       description="The target host (its probe control port, host:port), "
                                   "or loopback."),
        query_variable("op", "Operation", f"label_values({probe}, op)"),
        query_variable("tclass", "Traffic class", f"label_values({probe}, tclass)")]
    b = Board("rdma-latency", "RDMA / Latency",
              "Round-trip latency measured by the exporter's verbs probe between hosts, rail by "
              "rail and NIC pair by NIC pair: every local port probes the target's ports on its "
              "own rail. RC classes per NIC pair (percentiles, the distribution), UD classes "
              "per local port and scope (network round trip, the hosts' delays), loss and "
              "errors, source × target and rack × rack matrices, ECMP paths, pinglists, target "
              "hosts, and which devices and ports the probe uses.",
              variables)
    lsel = sel(JOB, 'instance=~"$instance"', 'rail=~"$rail"', 'device=~"$device"',
               'target=~"$target"', 'op=~"$op"', 'tclass=~"$tclass"')
    tsel = sel(JOB, 'instance=~"$instance"', 'target=~"$target"')
    rsel = INSTANCES
    # UD histograms are per local port (no target); UD port series have no rail.
    usel = sel(JOB, 'instance=~"$instance"', 'rail=~"$rail"', 'device=~"$device"', 'op=~"$op"',
               'tclass=~"$tclass"')
    dsel = sel(JOB, 'instance=~"$instance"', 'device=~"$device"')
    udsel = sel(lsel, 'op="ud"')
    bucket = "rdma_probe_latency_seconds_bucket"
    nic_pair = "instance, device, target, remote_device"
    port_pair = "instance, device, port, target, remote_device, remote_port"
    series = f"{nic_pair}, op, size, tclass"
    pair_legend = "{{instance}} {{device}} → {{target}} {{remote_device}}"
    legend = pair_legend + " {{op}} {{size}} B tc {{tclass}}"

    def quantile(q, labels=series, window="$__rate_interval"):
        return f"histogram_quantile({q}, sum by ({labels}, le) ({rate(bucket, lsel, window)}))"

    def loss(labels, window):
        return (f"sum by ({labels}) ({rate('rdma_probe_timeouts_total', lsel, window)}) / "
                f"sum by ({labels}) ({rate('rdma_probe_sent_total', lsel, window)})")

    def ud_quantile(metric, q, labels):
        return (f"histogram_quantile({q}, sum by ({labels}, le) "
                f"({rate(metric + '_bucket', usel)}))")

    def increase_by(metric, labels, selector, by_group=False):
        """sum by (labels) of increase over the range; with by_group, each
        series first gets its exporter's pinglist group."""
        inc = f"increase({metric}{{{selector}}}[$__range])"
        if by_group:
            inc = (f"{inc} * on (job, instance) group_left (group) "
                   f"rdma_probe_pinglist_info{{{rsel}}}")
        return f"sum by ({labels}) ({inc})"

    ud_silent = (f"rdma_probe_sent_total{{{udsel}}} unless "
                 f"rdma_probe_last_success_timestamp_seconds{{{udsel}}} > time() - 300")

    def nic_matrix(expr):
        """One row per source NIC ("instance device"), one column per target NIC."""
        return (f'label_join(label_join({expr}, "source", " ", "instance", "device"), '
                f'"destination", " ", "target", "remote_device")')

    slo = ((0.00005, "orange"), (0.0001, "red"))
    loss_limits = ((0.001, "orange"), (0.01, "red"))
    b.row("Summary")
    b.add(stat("Probe series up", "RC probe series (local port → target port, class) whose "
               "last probe succeeded (`rdma_probe_up`; UD classes have none: see UD pairs not "
               "answering).", f"sum(rdma_probe_up{{{lsel}}})", "none", base="blue"),
          w=4, h=4)
    b.add(stat("Probe series failing", "RC probe series whose last probe failed. Alerts: "
               "RdmaProbePairDown (no class of a NIC pair answers), RdmaProbeClassFailing (one "
               "class fails where others pass).",
               f"count(rdma_probe_up{{{lsel}}} == 0) or vector(0)",
               "none", limits=((1, "red"),)), w=4, h=4)
    b.add(stat("Target hosts not answering", "Target hosts whose probe control port did not "
               "answer the last discovery (`rdma_probe_target_up == 0`): their ports cannot be "
               "learnt; ports learnt before stay probed. Alert: RdmaProbeTargetDown.",
               f"count(rdma_probe_target_up{{{tsel}}} == 0) or vector(0)", "none",
               limits=((1, "red"),)), w=4, h=4)
    b.add(stat("Devices lost", "RDMA devices the probe used and that left (`rdma link "
               "delete`, a fatal event, a driver unload): their ports probe nothing until the "
               "device returns. Alert: RdmaProbeDeviceGone.",
               f'count(rdma_probe_device_state{{{rsel}, state="gone"}} == 1) or vector(0)', "none",
               limits=((1, "red"),)), w=4, h=4)
    b.add(stat("Loss in range", "Probes that timed out (UD: got no reply) over probes sent, in "
               "the selected range. Alerts: RdmaProbeLoss (RC, 1%), RdmaProbeUdLoss (UD, 1%).",
               f"sum({rate('rdma_probe_timeouts_total', lsel, '$__range')}) / "
               f"sum({rate('rdma_probe_sent_total', lsel, '$__range')})", "percentunit",
               limits=loss_limits), w=4, h=4)
    b.add(stat("p99 round-trip in range", "99th percentile of every selected RC probe's "
               "round-trip time in the selected range (UD: the network round trip panels). The "
               "thresholds are the alert's example SLO (100 µs).",
               f"histogram_quantile(0.99, sum by (le) ({rate(bucket, lsel, '$__range')}))", "s",
               limits=slo), w=4, h=4)

    b.row("Rails")
    down_pairs = (f"count by (rail) (max by (rail, {port_pair}) (rdma_probe_up{{{lsel}}}) == 0)"
                  f" or 0 * count by (rail) (max by (rail, {port_pair}) (rdma_probe_up{{{lsel}}}))")
    ud_down = (f"count by (rail) ({ud_silent}) or 0 * count by (rail) "
               f"(rdma_probe_sent_total{{{udsel}}})")
    b.add(timeseries("NIC pairs not answering", "Per rail, pairs of a local port and a target "
                     "port of which no RC class succeeded at its last probe, and (UD) pairs and "
                     "UD classes without an answer in the last 5 minutes (0 for a rail whose "
                     "pairs all answer). A whole rail failing points at its switches; one "
                     "source or target NIC at that NIC, its cable or its leaf port. Alerts: "
                     "RdmaProbePairDown, RdmaProbeUdPairDown.",
                     [target(down_pairs, "{{rail}}"), target(ud_down, "{{rail}} UD")], "short",
                     limits=((1, "red"),)))
    b.add(timeseries("p99 round-trip per rail", "99th percentile of the round-trip time of "
                     "every selected probe on each rail. Rails share nothing but the hosts: one "
                     "rail slower than the others points at its own switches.",
                     [target(quantile(0.99, "rail"), "{{rail}}")], "s", limits=slo))

    b.row("Latency")
    for q, name in ((0.5, "Median"), (0.99, "p99"), (0.999, "p99.9")):
        b.add(timeseries(
            f"{name} round-trip", f"{name} of the probe round-trip time per NIC pair (source "
            "host and device → target host and device), operation, message size and traffic "
            "class (from `rdma_probe_latency_seconds`, buckets from 1 µs to 1 s).",
            [target(quantile(q), legend)], "s", limits=slo), w=8)
    b.add(heatmap(
        "Round-trip time distribution", "How many probes fell into each latency bucket per "
        "interval, over every selected series. Two bands mean two paths (or a congested "
        "one).", f"sum by (le) (increase({bucket}{{{lsel}}}[$__rate_interval]))"), w=16, h=9)
    b.add(timeseries(
        "Mean round-trip", "Sum of round-trip times over their count per NIC pair and class.",
        [target(f"sum by ({series}) ({rate('rdma_probe_latency_seconds_sum', lsel)}) / "
                f"sum by ({series}) ({rate('rdma_probe_latency_seconds_count', lsel)})",
                legend)], "s", limits=slo), w=8, h=9)

    b.row("UD: network round trip and the hosts' delays")
    port_scope = "instance, device, port, scope"
    port_only = "instance, device, port"
    b.add(timeseries(
        "UD network round trip per port and scope", "Median and p99 of the network round trip "
        "of UD probes per local port and scope (`rdma_probe_group_latency_seconds`): `group`, "
        "the hosts of this host's own rack; `remote`, the hosts of other racks the pinglist "
        "picked. The probe's round trip less the responder's delay: with `clock=\"device\"` "
        "nothing of either host's software is in it. `remote` above `group` is what the layers "
        "above the leaves add. Alert: RdmaProbeUdLatencyHigh.",
        [target(ud_quantile("rdma_probe_group_latency_seconds", 0.5, port_scope),
                "{{instance}} {{device}}/{{port}} {{scope}} p50"),
         target(ud_quantile("rdma_probe_group_latency_seconds", 0.99, port_scope),
                "{{instance}} {{device}}/{{port}} {{scope}} p99")], "s", limits=slo), w=12)
    b.add(stat("UD pairs not answering", "UD probe series (local port → target port, UD "
               "class) without an answer in the last 5 minutes (`rdma_probe_sent_total` without "
               "a recent `rdma_probe_last_success_timestamp_seconds`). Alerts: "
               "RdmaProbeUdPairDown, RdmaProbeClassFailing.",
               f"count({ud_silent}) or vector(0)", "none", limits=((1, "red"),)), w=4)
    b.add(timeseries(
        "Responder delay", "Median and p99 of the targets' delay between receiving a UD probe "
        "and answering it, as their replies report it (`rdma_probe_responder_delay_seconds`), "
        "per local port: the time the targets' software takes, which the network round trip "
        "leaves out. It rises with the targets' CPU load, interrupt moderation and power "
        "states.",
        [target(ud_quantile("rdma_probe_responder_delay_seconds", 0.5, port_only),
                "{{instance}} {{device}}/{{port}} p50"),
         target(ud_quantile("rdma_probe_responder_delay_seconds", 0.99, port_only),
                "{{instance}} {{device}}/{{port}} p99")], "s"), w=4)
    b.add(timeseries(
        "Prober delay", "Median and p99 of the time a UD probe spent on this host outside the "
        "device (`rdma_probe_prober_delay_seconds`: host round trip less device round trip), "
        "per local port. Only devices with completion timestamps have it (`clock` "
        "`completion_timestamp` in Probe devices).",
        [target(ud_quantile("rdma_probe_prober_delay_seconds", 0.5, port_only),
                "{{instance}} {{device}}/{{port}} p50"),
         target(ud_quantile("rdma_probe_prober_delay_seconds", 0.99, port_only),
                "{{instance}} {{device}}/{{port}} p99")], "s"), w=4)

    b.row("Loss and errors")
    b.add(timeseries("Loss", "Probes that timed out over probes sent, per NIC pair (summed "
                     "over classes).",
                     [target(loss(nic_pair, "$__rate_interval"), pair_legend)], "percentunit",
                     limits=loss_limits), w=8)
    b.add(timeseries("Errors by reason", "Probes and session set-ups that failed other than by "
                     "timing out, per NIC pair and reason (`rdma_probe_errors_total`).",
                     [target(f"sum by ({nic_pair}, reason) "
                             f"({rate('rdma_probe_errors_total', lsel)})",
                             pair_legend + " {{reason}}")], "cps"), w=8)
    b.add(timeseries("Time since last success", "Seconds since each probe series last "
                     "succeeded.",
                     [target(f"time() - rdma_probe_last_success_timestamp_seconds{{{lsel}}}",
                             legend)], "s", limits=((60, "orange"), (300, "red"))), w=8)

    b.row("Host pairs")
    matrix = {"id": "groupingToMatrix", "options": {"columnField": "target",
                                                    "rowField": "instance",
                                                    "valueField": "Value"}}
    b.add(table("p99 round-trip, source × target", "p99 round-trip time over the selected range "
                "for every pair of hosts: rows are sources (instance), columns targets.",
                [target(quantile(0.99, "instance, target", "$__range"), instant=True,
                        fmt="table")],
                "s", transformations=[matrix], limits=slo, color_cells=True))
    b.add(table("Loss, source × target", "Probe loss over the selected range for every pair of "
                "hosts.", [target(loss("instance, target", "$__range"), instant=True,
                                  fmt="table")],
                "percentunit", transformations=[matrix], limits=loss_limits, color_cells=True))
    nic_grid = {"id": "groupingToMatrix", "options": {"columnField": "destination",
                                                      "rowField": "source",
                                                      "valueField": "Value"}}
    b.add(table("p99 round-trip, source NIC × target NIC", "p99 round-trip time over the "
                "selected range for every NIC pair: rows are source host and device, columns "
                "target host and device. Pick a rail to see one rail's mesh; an empty cell is "
                "a pair not probed (another rail, unless probe.cross_rail).",
                [target(nic_matrix(quantile(0.99, nic_pair, "$__range")), instant=True,
                        fmt="table")],
                "s", transformations=[nic_grid], limits=slo, color_cells=True))
    b.add(table("Loss, source NIC × target NIC", "Probe loss over the selected range for every "
                "NIC pair.",
                [target(nic_matrix(loss(nic_pair, "$__range")), instant=True, fmt="table")],
                "percentunit", transformations=[nic_grid], limits=loss_limits,
                color_cells=True))

    b.row("Racks and paths")
    rack_grid = {"id": "groupingToMatrix", "options": {"columnField": "rack",
                                                       "rowField": "group",
                                                       "valueField": "Value"}}
    b.add(table("Loss, rack × rack", "Probes lost over probes sent in the selected range, from "
                "the hosts of one rack (rows: each exporter's own group, "
                "`rdma_probe_pinglist_info`) to the hosts of another (columns: the targets' "
                "`rack` label, the default `probe.pinglist.group_label`). Pairs towards other "
                "racks change every epoch; over a range of a few epochs every rack pair is "
                "covered. A row losing everywhere is that rack's uplinks, a column its "
                "downlinks, one cell the path between two racks.",
                [target(f"{increase_by('rdma_probe_timeouts_total', 'group, rack', lsel, True)} / "
                        f"{increase_by('rdma_probe_sent_total', 'group, rack', lsel, True)}",
                        instant=True, fmt="table")],
                "percentunit", transformations=[rack_grid], limits=loss_limits,
                color_cells=True))
    worst = "instance, device, port, target, rack, remote_device, remote_port"
    worst_table = table(
        "Worst NIC pairs by UD loss", "The 20 UD NIC pairs that lost the largest share of their "
        "probes in the selected range (probes without a reply over probes sent, summed over "
        "UD classes), including pairs that have left the pinglist since.",
        [target(f"topk(20, {increase_by('rdma_probe_timeouts_total', worst, udsel)} / "
                f"{increase_by('rdma_probe_sent_total', worst, udsel)})",
                instant=True, fmt="table")],
        "percentunit", transformations=[organize(exclude=("Time",),
                                                 rename={"Value": "loss in range"})],
        limits=loss_limits)
    worst_table["options"]["sortBy"] = [{"displayName": "loss in range", "desc": True}]
    b.add(worst_table)
    b.add(timeseries("Lost UD probes by path", "UD probes without a reply per NIC pair and "
                     "path (`rdma_probe_path_timeouts_total`: the flow label, so on RoCE v2 the "
                     "UDP source port, the probe went out with; a path has a series once it "
                     "lost one). One path losing while the pair's others do not is one ECMP "
                     "route. Alert: RdmaProbeUdPathLoss.",
                     [target(f"sum by ({nic_pair}, path) "
                             f"({rate('rdma_probe_path_timeouts_total', udsel)})",
                             pair_legend + " path {{path}}")], "cps"))
    b.add(timeseries("UD datagrams dropped by reason", "Datagrams each local port's UD queue "
                     "pair dropped or could not send (`rdma_probe_ud_dropped_total`): "
                     "`not_admitted` (a request from a queue pair without an open session; "
                     "alert: RdmaProbeUdNotAdmitted), `unexpected` (a reply no session waits "
                     "for), `malformed`, `send_queue_full`, `send_error`, `queue_pair_failed`.",
                     [target(f"sum by (instance, device, port, reason) "
                             f"({rate('rdma_probe_ud_dropped_total', dsel)})",
                             "{{instance}} {{device}}/{{port}} {{reason}}")], "cps"))

    b.row("Pinglists and the UD responder")
    b.add(timeseries("Pinglist hosts", "Target hosts each exporter probes in the current "
                     "epoch (`rdma_probe_pinglist_hosts`): `group`, the other hosts of its own "
                     "rack; `remote`, the hosts of other racks picked for the epoch (up to "
                     "`remote_per_rail` per local port); and the hosts of the whole target list "
                     "(`rdma_probe_pinglist_fleet_hosts`).",
                     [target(f"rdma_probe_pinglist_hosts{{{rsel}}}", "{{instance}} {{scope}}"),
                      target(f"rdma_probe_pinglist_fleet_hosts{{{rsel}}}",
                             "{{instance}} fleet")], "short"), w=8)
    b.add(table("Pinglist groups", "Each exporter's group (rack) and whether it found itself "
                "in the target list (`rdma_probe_pinglist_info`): `listed` false with no group "
                "means its address in the list is not one of its own (alert: "
                "RdmaProbeHostNotListed).",
                [target(f"rdma_probe_pinglist_info{{{rsel}}}", instant=True, fmt="table")],
                "none", transformations=[organize(exclude=("Time", "__name__", "job",
                                                           "Value"))]), w=8)
    b.add(timeseries("UD peers admitted and probes answered", "Probers admitted to each local "
                     "port's UD queue pair (`rdma_probe_ud_peers`, one per open UD session), "
                     "and the UD probes the port answered per second "
                     "(`rdma_probe_ud_answered_total`).",
                     [target(f"rdma_probe_ud_peers{{{dsel}}}",
                             "{{instance}} {{device}}/{{port}} peers"),
                      target(f"sum by (instance, device, port) "
                             f"({rate('rdma_probe_ud_answered_total', dsel)})",
                             "{{instance}} {{device}}/{{port}} answered/s")], "short"), w=8)

    b.row("Target hosts")
    b.add(state_timeline("Target hosts answering", "Whether each target host's probe control "
                         "port answered the last discovery (`rdma_probe_target_up`): the hello "
                         "that lists its ports. A host that does not answer keeps the ports it "
                         "listed before probed (they fail too if the host is down); one that "
                         "never answered has no NIC pairs at all. Alert: RdmaProbeTargetDown.",
                         [target(f"rdma_probe_target_up{{{tsel}}}", "{{instance}} → {{target}}")],
                         {"A": [(0, "no answer", "red"), (1, "answering", "green")]}))
    b.add(timeseries("Ports per target", "RDMA ports each target host listed in its last "
                     "answer (`rdma_probe_target_ports`): a host that lost a NIC lists one "
                     "fewer.",
                     [target(f"rdma_probe_target_ports{{{tsel}}}", "{{instance}} → {{target}}")],
                     "short"))
    b.add(timeseries("Discovery errors", "Failed discoveries of target hosts' ports, by reason "
                     "(`rdma_probe_discovery_errors_total`): `refused` (no probe listening), "
                     "`unreachable`, `connect_timeout`, `rejected` (its session or rate caps), "
                     "`protocol` (another protocol version), `disconnected`.",
                     [target(f"sum by (instance, target, reason) "
                             f"({rate('rdma_probe_discovery_errors_total', tsel)})",
                             "{{instance}} → {{target}} {{reason}}")], "cps"))
    b.add(timeseries("Targets", "Target hosts each exporter probes, by where they come from "
                     "(`static`, `file_sd`, `loopback`).",
                     [target(f"sum by (instance, source) (rdma_probe_targets{{{rsel}}})",
                             "{{instance}} {{source}}")], "short", stack=True))

    b.row("Local devices and ports")
    state_colours = {"in_use": "green", "probing": "green", "excluded": "blue",
                     "inactive": "blue", "down": "red", "failed": "red", "gone": "red",
                     "no_gid": "orange"}
    state_cells = {"matcher": {"id": "byName", "options": "state"}, "properties": [
        {"id": "mappings", "value": [{"type": "value", "options": {
            s: {"text": s, "color": c, "index": i}
            for i, (s, c) in enumerate(state_colours.items())}}]},
        {"id": "custom.cellOptions", "value": {"type": "color-background"}}]}
    b.add(table("Device states", "Every RDMA device of each source host and what the probe "
                "does with it (`rdma_probe_device_state`): `in_use`, `excluded` (probe.device "
                "does not match), `failed` (cannot be opened; tried again every 2 s) or `gone` "
                "(left while in use; used again when a device of that name returns), and how "
                "often it was released in the selected range. Not filtered by rail or device.",
                [target(f"rdma_probe_device_state{{{rsel}}} == 1", instant=True, fmt="table"),
                 target(f"sum by (job, instance, device) "
                        f"(increase(rdma_probe_device_releases_total{{{rsel}}}[$__range]))",
                        instant=True, fmt="table")],
                "none", transformations=[MERGE, organize(
                    exclude=("Time", "__name__", "job", "Value #A"),
                    rename={"Value #B": "releases in range"})],
                overrides=[state_cells]))
    port_state = f"rdma_probe_port_state{{{rsel}}} == 1"
    b.add(table("Port states", "Every port of the devices in use (`rdma_probe_port_state`) and "
                "its rail (`rdma_probe_port_rail_info`): `probing`, `down` (in use, its link "
                "went down: its pairs fail and show it), `excluded` (probe.port, "
                "probe.link_layer), `inactive` (never active yet: not used) or `no_gid` (no "
                "RoCEv2 IPv4 GID: give the netdev an IPv4 address or set probe.gid_index). "
                "Not filtered by rail or device.",
                [target(f"({port_state}) * on (job, instance, device, port) group_left (rail) "
                        f"rdma_probe_port_rail_info{{{rsel}}} or on (job, instance, device, port) "
                        f"({port_state})", instant=True, fmt="table")],
                "none", transformations=[organize(exclude=("Time", "__name__", "job", "Value"))],
                overrides=[state_cells]))
    b.add(table("Probe devices", "The devices in use and how they time: `clock` "
                "`completion_timestamp` is the NIC's clock (the host's wake-up is not in the "
                "numbers), `host` the host's monotonic clock (Soft-RoCE, older NICs); `domain` "
                "`thread_domain` when the probe's queue pairs have dedicated resources.",
                [target(f"rdma_probe_device_info{{{rsel}}}", instant=True, fmt="table")],
                "none", transformations=[organize(exclude=("Time", "__name__", "job", "Value"))]))
    b.add(timeseries("Responder sessions", "Probe sessions this host's responder serves for "
                     "other hosts: one per (source port, port of this host, class).",
                     [target(f"rdma_probe_responder_sessions{{{rsel}}}", "{{instance}}")],
                     "short"))
    b.add(timeseries("Responder rejections", "Sessions the responder refused, by reason "
                     "(session or rate caps, authentication, sizes or ports it does not offer, "
                     "no device).",
                     [target(f"sum by (instance, reason) "
                             f"({rate('rdma_probe_responder_rejected_total', rsel)})",
                             "{{instance}} {{reason}}")], "cps"))
    return b


DASHBOARDS = {
    "rdma-fleet.json": fleet,
    "rdma-port.json": port_detail,
    "rdma-congestion.json": congestion,
    "rdma-workloads.json": workloads,
    "rdma-latency.json": latency,
}


def render(build):
    return json.dumps(build().json(), indent=2, ensure_ascii=False) + "\n"


def main(argv):
    check = argv[1:] == ["--check"]
    if argv[1:] and not check:
        sys.stderr.write(__doc__)
        return 2
    stale = []
    for name, build in DASHBOARDS.items():
        path = os.path.join(HERE, name)
        text = render(build)
        try:
            with open(path, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = None
        if current == text:
            continue
        if check:
            stale.append(name)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"wrote {path}")
    if stale:
        print("out of date (run dashboards/generate.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
