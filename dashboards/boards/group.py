"""rdma-group.json: one group of hosts (a rack, a pod: the probe's group)
from the rollups of config/prometheus/rdma-rollups.yml and
rdma-rollups-fleet.yml: its leaves (the
group on each rail), its hosts ranked by traffic, errors and probe loss,
and the culprits in it. Reached from the fleet overview; a host links down
to the hosts and ports board, a leaf to the fabric board.

Every panel reads recorded series, per leaf or per host, never an
exporter's per-port or per-pair series."""
from panels.builders import board_url, field_link, organize, table, target, timeseries
from panels.layout import Board
from panels.variables import query_variable

FABRIC = board_url("rdma-fabric")
HOSTS = board_url("rdma-fleet")
# A host's figure with its group, for the hosts of the selected groups.
IN_GROUP = ('* on (job, instance) group_left (group) '
            'instance:rdma_topology:info{group=~"$group"}')


def host_link():
    return field_link("instance", "Host's ports", HOSTS + "&var-instance=${__data.fields.instance}")


def hosts_table(title, description, expr, unit, value):
    return table(title, description,
                 [target(f"topk(20, {expr} {IN_GROUP})", instant=True, fmt="table")], unit,
                 transformations=[organize(exclude=("Time", "__name__", "job"),
                                           rename={"Value": value})],
                 overrides=[host_link()])


def dashboard():
    variables = [query_variable(
        "group", "Group", "label_values(instance:rdma_topology:info, group)",
        description="Groups of hosts (the probe's `probe.pinglist` groups: racks, pods).")]
    b = Board("rdma-group", "RDMA / Group",
              "One group of hosts from the rollup rules (rdma-rollups.yml, "
              "rdma-rollups-fleet.yml): its leaves (the "
              "group on each rail), its hosts ranked by traffic, errors and probe loss, and the "
              "culprits in it. Reads only recorded series. Drill down: a host to the hosts and "
              "ports board, a leaf to the fabric board.", variables)

    b.row("Leaves")
    b.add(timeseries("Traffic per leaf", "Bytes per second the group's ports sent, per rail.",
                     [target('group_rail:rdma_transmit_bytes:rate2m{group=~"$group"}',
                             "{{group}} {{rail}}")], "Bps"))
    b.add(timeseries("Probe loss per leaf", "Share of the UD probes of the group's RNICs "
                     "lost, per rail.",
                     [target('group_rail:rdma_probe_loss:ratio_rate2m{group=~"$group"}',
                             "{{group}} {{rail}}")], "percentunit",
                     limits=((0.001, "orange"), (0.01, "red"))))
    b.add(table(
        "Culprits in the group",
        "Culprits named now whose element is in the group (a leaf, an uplink or a path of "
        "it, an RNIC or a host of it), with the hosts behind each. The evidence: the fabric "
        "board.",
        [target('culprit:rdma_impact_hosts:count and on (culprit) '
                'max by (culprit) (culprit_instance_device_port:rdma_impact:info{group=~"$group"})'
                ' or culprit:rdma_impact_hosts:count{kind="path", culprit=~"path/($group)/.*"}',
                instant=True, fmt="table")],
        "none", transformations=[organize(exclude=("Time", "__name__"),
                                          rename={"Value": "hosts"})],
        overrides=[field_link("culprit", "Evidence (fabric board)",
                        FABRIC + "&var-group=${group}")]))
    b.add(table(
        "Leaves by time paused",
        "The group's leaves whose most paused port spent the largest share of its time "
        "paused (PFC, its most paused priority), by direction.",
        [target('group_rail_direction:rdma_netdev_pfc_pause_duration_seconds:max_rate2m'
                '{group=~"$group"} > 0', instant=True, fmt="table")],
        "percentunit", transformations=[organize(exclude=("Time", "__name__", "job"),
                                                 rename={"Value": "paused"})]))
    b.add(timeseries("Time paused per priority",
                     "The largest share of time a port of the group spent paused (PFC) on "
                     "each priority, per direction: whether the latency priority or a bulk "
                     "one is held back.",
                     [target('group_priority_direction:rdma_netdev_pfc_pause_duration_seconds:'
                             'max_rate2m{group=~"$group"}',
                             "{{group}} prio {{priority}} {{direction}}")], "percentunit"))

    b.row("Hosts")
    b.add(hosts_table("Hosts by traffic", "The group's hosts that sent the most bytes per "
                      "second.", "instance:rdma_transmit_bytes:rate2m", "Bps", "sent"), w=8)
    b.add(hosts_table("Hosts by probe loss", "The group's hosts whose RNICs lost the largest "
                      "share of their probes.", "instance:rdma_probe_loss:ratio_rate2m",
                      "percentunit", "loss"), w=8)
    b.add(hosts_table("Hosts by link errors", "The group's hosts whose ports count the most "
                      "link errors per second.", "(instance:rdma_link_errors:rate2m > 0)",
                      "short", "link errors/s"), w=8)
    b.add(hosts_table("Hosts by retransmissions", "The group's hosts whose ports retransmit "
                      "the most per second.", "(instance:rdma_retransmissions:rate2m > 0)",
                      "short", "retransmissions/s"), w=8)
    b.add(hosts_table("Hosts by discards", "The group's hosts whose ports discard the most "
                      "packets per second.", "(instance:rdma_discards:rate2m > 0)", "short",
                      "discards/s"), w=8)
    b.add(hosts_table("Hosts by time paused", "The group's hosts whose most paused port "
                      "spent the largest share of its time paused (PFC), per priority and "
                      "direction.",
                      "(instance_priority_direction:rdma_netdev_pfc_pause_duration_seconds:"
                      "max_rate2m > 0)", "percentunit", "paused"), w=8)
    b.add(hosts_table("Hosts by p99 round trip", "The group's hosts with the slowest p99 UD "
                      "probe round trip inside the group (the default class).",
                      'max by (job, instance) (instance_scope_tclass:rdma_probe_group_latency_'
                      'seconds:p99_rate2m{scope="group"})', "s", "p99"), w=8)
    return b.json()
