"""rdma-fleet.json: every exporter and port of the selected jobs: state, link
rate, traffic, errors and drops, and the exporters' own health."""
from panels.builders import (MERGE, bargauge, organize, stat, state_timeline, table, target,
                             timeseries, unit_override)
from panels.layout import Board
from panels.ports import (PORT_LEGEND, PORT_STATES, counter_rates, packets_panel,
                          throughput_panel)
from panels.promql import INSTANCES, PORTS, rate
from panels.variables import port_variables


def dashboard():
    b = Board("rdma-fleet", "RDMA / Hosts and ports",
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
    return b.json()
