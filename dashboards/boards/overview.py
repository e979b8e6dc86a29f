"""rdma-overview.json: the fleet at a glance from the rollups of
config/prometheus/rdma-rollups.yml and rdma-rollups-fleet.yml: traffic, errors, probe loss and round
trip for the whole fleet, the worst groups, leaves, rails and hosts, and
the culprits named now with what sits behind them. Rows link down to the
group board (a group), the fabric board (a leaf, a culprit's evidence) and
the hosts and ports board (a host).

Every panel reads recorded series (level:metric:operations), never an
exporter's per-port or per-pair series: its cost does not grow with the
number of ports."""
from panels.builders import (MERGE, board_url, field_link, organize, stat, table, target,
                             timeseries, unit_override)
from panels.layout import Board

FABRIC = board_url("rdma-fabric")
HOSTS = board_url("rdma-fleet")
GROUP = board_url("rdma-group")


def host_link():
    return field_link("instance", "Host's ports", HOSTS + "&var-instance=${__data.fields.instance}")


def worst(title, description, expr, unit, fields, links=()):
    """A table of the 10 worst rows of a recorded figure."""
    return table(title, description, [target(f"topk(10, {expr})", instant=True, fmt="table")],
                 unit, transformations=[organize(exclude=("Time", "__name__", "job"),
                                                 rename={"Value": fields})],
                 overrides=list(links))


def dashboard():
    b = Board("rdma-overview", "RDMA / Fleet overview",
              "The fleet at a glance, from the rollup rules (rdma-rollups.yml, "
              "rdma-rollups-fleet.yml): traffic, "
              "errors, probe loss and round trip, the worst groups, leaves, rails and hosts, "
              "and the culprits named now with the hosts and traffic behind them. Reads only "
              "recorded series, so it costs the same at any fleet size. Drill down: a group "
              "to the group board, a leaf to the fabric board, a host to the hosts and ports "
              "board.", [])

    b.row("The fleet now")
    b.add(stat("Traffic sent", "Bytes per second all RNIC ports sent (IB PMA counters), over "
               "2 minutes.", "sum(job:rdma_transmit_bytes:rate2m)", "Bps"), w=4, h=4)
    b.add(stat("Probe loss", "Share of the fleet's UD probes lost over 2 minutes.",
               "max(job:rdma_probe_loss:ratio_rate2m)", "percentunit",
               limits=((0.001, "orange"), (0.01, "red"))), w=4, h=4)
    b.add(stat("Link errors", "Link errors per second, every port together: symbol errors, "
               "link recoveries, receive errors, local link integrity, buffer overruns.",
               "sum(job:rdma_link_errors:rate2m) or vector(0)", "short",
               limits=((0.001, "orange"),)), w=4, h=4)
    b.add(stat("Retransmissions", "Retransmissions per second, every port together: "
               "sequence errors, implied NAKs, local ACK timeouts, adaptive retransmissions.",
               "sum(job:rdma_retransmissions:rate2m) or vector(0)", "short"), w=4, h=4)
    b.add(stat("Culprits", "Fabric elements the culprit rules name now, every kind.",
               "sum(kind:rdma_probe_culprits:count) or vector(0)", "none",
               limits=((1, "red"),)), w=4, h=4)
    b.add(stat("p99 round trip, own group", "The fleet's p99 UD probe round trip inside "
               "groups (the default class), over 2 minutes.",
               'max(job_scope_tclass:rdma_probe_group_latency_seconds:p99_rate2m{scope="group"})',
               "s"), w=4, h=4)

    b.row("Culprits")
    b.add(table(
        "Culprits and what sits behind them",
        "Each culprit named now (`culprit`: its kind and element), the hosts whose RDMA "
        "ports sit behind it, their traffic (sent and received) and their errors (link "
        "errors, discards, retransmissions). The evidence and the pairs: the fabric board.",
        [target("culprit:rdma_impact_hosts:count", instant=True, fmt="table"),
         target("culprit:rdma_impact_traffic_bytes:rate2m", instant=True, fmt="table"),
         target("culprit:rdma_impact_errors:rate2m", instant=True, fmt="table")],
        "none",
        transformations=[MERGE, organize(
            exclude=("Time", "__name__"),
            rename={"Value #A": "hosts", "Value #B": "traffic", "Value #C": "errors"})],
        overrides=[unit_override("traffic", "Bps"), unit_override("errors", "short"),
                   field_link("culprit", "Evidence (fabric board)", FABRIC)]), w=16)
    b.add(table(
        "Pods behind culprits",
        "Pods whose containers hold an RDMA device behind a culprit (where the pods "
        "collector runs); a device behind two culprits is listed under the more specific.",
        [target("culprit_instance_pod:rdma_impact:info", instant=True, fmt="table")], "none",
        transformations=[organize(exclude=("Time", "__name__", "Value", "job"))]), w=8)

    b.row("Worst groups, leaves, rails and hosts")
    b.add(worst("Groups by probe loss", "Groups whose RNICs lost the largest share of their "
                "UD probes over 2 minutes.", "group:rdma_probe_loss:ratio_rate2m",
                "percentunit", "loss",
                [field_link("group", "The group", GROUP + "&var-group=${__data.fields.group}")]),
          w=8)
    b.add(worst("Leaves by probe loss", "Leaves (a group on one rail) whose RNICs lost the "
                "largest share of their probes.", "group_rail:rdma_probe_loss:ratio_rate2m",
                "percentunit", "loss",
                [field_link("group", "Leaf on the fabric board", FABRIC
                      + "&var-group=${__data.fields.group}&var-rail=${__data.fields.rail}")]),
          w=8)
    b.add(worst("Hosts by probe loss", "Hosts whose RNICs lost the largest share of their "
                "probes.", "instance:rdma_probe_loss:ratio_rate2m", "percentunit", "loss",
                [host_link()]),
          w=8)
    b.add(worst("Hosts by link errors", "Hosts whose ports count the most link errors per "
                "second.", "instance:rdma_link_errors:rate2m > 0", "short", "link errors/s",
                [host_link()]),
          w=8)
    b.add(worst("Leaves by time paused", "Leaves whose most paused port spent the largest "
                "share of its time paused (PFC, its most paused priority), by direction.",
                "group_rail_direction:rdma_netdev_pfc_pause_duration_seconds:max_rate2m > 0",
                "percentunit", "paused"), w=8)
    b.add(worst("Groups by discards", "Groups whose ports discard the most packets per "
                "second (transmit discards, receive buffer drops).",
                "group:rdma_discards:rate2m > 0", "short", "discards/s"), w=8)

    b.row("Rails")
    b.add(timeseries("Traffic per rail", "Bytes per second sent on each rail.",
                     [target("rail:rdma_transmit_bytes:rate2m", "{{rail}}")], "Bps"))
    b.add(timeseries("Probe loss per rail", "Share of each rail's UD probes lost.",
                     [target("rail:rdma_probe_loss:ratio_rate2m", "{{rail}}")], "percentunit",
                     limits=((0.001, "orange"), (0.01, "red"))))
    b.add(timeseries("p99 round trip per rail", "p99 UD probe round trip per rail, scope "
                     "(own group, remote) and class.",
                     [target("rail_scope_tclass:rdma_probe_group_latency_seconds:p99_rate2m",
                             "{{rail}} {{scope}} tclass {{tclass}}")], "s"))
    b.add(timeseries("Time paused per rail", "The largest share of time a port of the rail "
                     "spent paused, per direction.",
                     [target("rail_direction:rdma_netdev_pfc_pause_duration_seconds:max_rate2m",
                             "{{rail}} {{direction}}")], "percentunit"))
    b.add(timeseries("Time paused per priority", "The largest share of time a port of the "
                     "fleet spent paused (PFC) on each priority, per direction: whether the "
                     "latency priority or a bulk one is held back (rx: the peer paused the "
                     "port; tx: the port paused its peer).",
                     [target("job_priority_direction:rdma_netdev_pfc_pause_duration_seconds:"
                             "max_rate2m", "prio {{priority}} {{direction}}")], "percentunit"))
    return b.json()
