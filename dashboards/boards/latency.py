"""rdma-latency.json: the verbs probe: round-trip latency, loss and errors by
rail and NIC pair, UD network round trips, host and rack matrices, ECMP
paths, pinglists, target hosts and the probe's devices and ports."""
from panels.builders import (MERGE, heatmap, organize, stat, state_timeline, table, target,
                             timeseries)
from panels.layout import Board
from panels.promql import INSTANCES, JOB, rate, sel
from panels.variables import job_variable, query_variable


def dashboard():
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
                     "of this host's group and of others, and the UD probes the port answered "
                     "per second (`rdma_probe_ud_answered_total`).",
                     [target(f"rdma_probe_ud_peers{{{dsel}}}",
                             "{{instance}} {{device}}/{{port}} {{scope}} peers"),
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
    return b.json()
