"""rdma-fabric.json: the culprits the rules of config/prometheus/rdma-culprits.yml
and rdma-culprits-across-rails.yml name (an RNIC, a host, a leaf on one
rail, a leaf's uplink, a path between two groups), the evidence behind each,
and the pairs that fail, linking down to the latency board's matrices.

Every panel reads the rules' records (rdma:...), never the exporters' raw
series: the board costs the same at 10 hosts as at 10,000. Without a culprit
most panels are empty, and the counts read 0."""
from panels.builders import (MERGE, board_url, field_link, organize, stat, table, target,
                             timeseries, unit_override)
from panels.layout import Board
from panels.variables import query_variable

RNICS = "rdma:probe_rnic:sent:increase2m"
# Host culprits have no rail: they match any rail.
SEL = 'group=~"$group", rail=~"$rail|"'
RNIC_SEL = 'group=~"$group", rail=~"$rail"'
CULPRIT_LABELS = "kind, host, device, group, rail, to_group"
LATENCY = board_url("rdma-latency")


def dashboard():
    variables = [
        query_variable("group", "Group", f"label_values({RNICS}, group)",
                       description="Groups of hosts behind one leaf per rail (the `rack` label "
                                   "of the target list by default)."),
        query_variable("rail", "Rail", f'label_values({RNICS}{{group=~"$group"}}, rail)',
                       description="The rails of the selected groups.")]
    b = Board("rdma-fabric", "RDMA / Fabric health",
              "Which fabric element explains the failing probe pairs: the culprits named by the "
              "culprit rules (an RNIC, a host, the leaf of a group on one rail, an "
              "uplink of that leaf, a path between two groups), the evidence behind each, and "
              "the failing pairs. Reads only the rules' records, so it costs the same at any "
              "fleet size. Runbooks: docs/alerts.md; the model: docs/fabric.md.", variables)

    b.row("Culprits")
    b.add(stat("Culprits", "Fabric elements named as culprits now (`rdma:probe_culprit`): each "
               "was a candidate in at least 2 of the rules' last 3 evaluations. Each raises one "
               "RdmaFabric*Culprit alert, which mutes the pair and port alerts it explains.",
               f"count(rdma:probe_culprit{{{SEL}}}) or vector(0)", "none",
               limits=((1, "red"),)), w=4, h=4)
    for kind, title, what in (("rnic", "RNICs", "one RNIC loses while its peers and its leaf "
                               "are answered"),
                              ("host", "Hosts", "most RNICs of one host lose, across rails: "
                               "the host is down or its own fault"),
                              ("leaf", "Leaves", "at least half the RNICs of a group on one "
                               "rail lose: its leaf switch"),
                              ("uplink", "Uplinks", "a leaf loses between groups, not inside "
                               "its group: one of its links to the spines"),
                              ("path", "Paths", "two groups lose only with each other: a route "
                               "or an ECMP entry between their leaves")):
        b.add(stat(title, f"Culprits of kind `{kind}`: {what}.",
                   f'count(rdma:probe_culprit{{kind="{kind}", {SEL}}}) or vector(0)', "none",
                   limits=((1, "red"),)), w=4, h=4)
    b.add(table(
        "Culprits now",
        "Each culprit with its evidence over the rules' 2-minute window: `lost` is the share "
        "of the probes through it that were lost (for an RNIC, those blamed on it); `pairs "
        "failing` of `pairs` are the pairs of RNICs through it that lost at least one probe; "
        "`direction` (RNICs) says which way it loses: receive (its requests never arrive), "
        "transmit (its replies are lost), both, or unknown (nothing arrived to count, as for a "
        "dead RNIC). A host links to the latency board's pairs that probe it; every row to "
        "its matrices.",
        [target(f"rdma:probe_culprit{{{SEL}}} * on ({CULPRIT_LABELS}) group_left (direction) "
                f"rdma:probe_culprit:direction or (rdma:probe_culprit{{{SEL}}} unless on "
                f"({CULPRIT_LABELS}) rdma:probe_culprit:direction)", instant=True, fmt="table"),
         target(f"rdma:probe_culprit:pairs_failing{{{SEL}}}", instant=True, fmt="table"),
         target(f"rdma:probe_culprit:pairs{{{SEL}}}", instant=True, fmt="table")],
        "none",
        transformations=[MERGE, organize(
            exclude=("Time", "__name__"),
            rename={"Value #A": "lost", "Value #B": "pairs failing", "Value #C": "pairs",
                    "to_group": "to group"})],
        overrides=[unit_override("lost", "percentunit"),
                   field_link("host", "Pairs probing this host",
                               LATENCY + "&var-target=${__data.fields.host}"),
                   field_link("kind", "Probe matrices (latency board)", LATENCY)]),
        w=24, h=8)

    b.row("Evidence")
    worst = f"topk(20, rdma:probe_rnic:loss_ratio:2m{{{RNIC_SEL}}} > 0)"
    b.add(table(
        "RNICs losing probes",
        "The 20 RNICs whose pairs (probing and probed) lost the largest share in the rules' "
        "window: `loss`; `blamed`: the share of its probes whose losses the rules blame on it "
        "rather than on the other end (an RNIC is a suspect from 0.5 %); `in group`: the loss "
        "of its pairs inside its group (near 0 while it loses: the losses are between groups, "
        "a path or an uplink); `requests lost`: of the requests sent to it, the share that "
        "never arrived (read beside `loss`: which way it loses); `pairs failing` of `pairs`: "
        "the pairs through it that lost a probe.",
        [target(worst, instant=True, fmt="table"),
         target(f"(rdma:probe_rnic:lost_blamed:increase2m{{{RNIC_SEL}}} or 0 * "
                f"rdma:probe_rnic:sent:increase2m{{{RNIC_SEL}}}) / "
                f"rdma:probe_rnic:sent:increase2m{{{RNIC_SEL}}} and on (host, device) {worst}",
                instant=True, fmt="table"),
         target(f"rdma:probe_rnic:within_group_loss_ratio:2m{{{RNIC_SEL}}} and on (host, "
                f"device) {worst}", instant=True, fmt="table"),
         target(f'rdma:probe_rnic:requests_lost_ratio:2m{{group=~"$group"}} and on (host, '
                f"device) {worst}", instant=True, fmt="table"),
         target(f"rdma:probe_rnic:pairs_failing:2m{{{RNIC_SEL}}} and on (host, device) {worst}",
                instant=True, fmt="table"),
         target(f"rdma:probe_rnic:pairs:2m{{{RNIC_SEL}}} and on (host, device) {worst}",
                instant=True, fmt="table")],
        "percentunit",
        transformations=[MERGE, organize(
            exclude=("Time", "__name__"),
            rename={"Value #A": "loss", "Value #B": "blamed", "Value #C": "in group",
                    "Value #D": "requests lost", "Value #E": "pairs failing",
                    "Value #F": "pairs"})],
        overrides=[field_link("host", "Pairs probing this host",
                               LATENCY + "&var-target=${__data.fields.host}"),
                   {"matcher": {"id": "byRegexp", "options": "pairs.*"},
                    "properties": [{"id": "unit", "value": "none"}]}]))
    b.add(timeseries(
        "Loss per leaf",
        "The 10 leaves (a group on one rail) whose RNICs lose the largest share of their "
        "probes. One leaf far above the others, spread over its RNICs, is what the leaf "
        "culprit looks for.",
        [target(f"topk(10, sum by (group, rail) (rdma:probe_rnic:lost:increase2m{{{RNIC_SEL}}}) "
                f"/ sum by (group, rail) (rdma:probe_rnic:sent:increase2m{{{RNIC_SEL}}}))",
                "{{group}} {{rail}}")],
        "percentunit", limits=((0.005, "orange"), (0.05, "red"))))
    b.add(timeseries(
        "Culprits by kind", "How many culprits of each kind were named over time.",
        [target(f"count by (kind) (rdma:probe_culprit{{{SEL}}})", "{{kind}}")], "none",
        stack=True))
    b.add(table(
        "Loss between leaves",
        "Probes lost in the rules' window between two leaves of one rail (either way) that "
        "no suspect RNIC or stalled host explains: the evidence of paths and uplinks. Losses "
        "spread over many other groups point at the leaf's uplink; concentrated on one other "
        "group, at the path between the two.",
        [target(f'topk(20, rdma:probe_leaf_pair:lost:increase2m{{{RNIC_SEL}}} > 0)',
                instant=True, fmt="table")],
        "none", transformations=[organize(
            exclude=("Time", "__name__"),
            rename={"Value": "lost probes", "other_group": "other group"})]))

    b.row("Pairs and host noise")
    b.add(table(
        "Failing pairs",
        "The 50 pairs of RNICs (prober in the selected groups) that lost the largest share of "
        "their probes in the rules' window: the pairs behind the culprits. The target links "
        "to the latency board's pairs that probe it.",
        [target(f"topk(50, rdma:probe_pair:lost:increase2m{{{RNIC_SEL}}} / "
                f"rdma:probe_pair:sent:increase2m{{{RNIC_SEL}}} > 0)", instant=True,
                fmt="table")],
        "percentunit", transformations=[organize(
            exclude=("Time", "__name__"),
            rename={"Value": "lost", "target_group": "target group",
                    "remote_device": "remote device"})],
        overrides=[field_link("target", "Pairs probing this host",
                               LATENCY + "&var-target=${__data.fields.target}")]), w=16)
    b.add(table(
        "Hosts that stalled",
        "Hosts whose exporter's probe stalled for 2 s or more in all over the last 3 minutes "
        "(CPU starved, stopped, a paused VM): host noise, not the fabric. Their RNICs are no "
        "suspects and their pairs between groups are left out. Alert: RdmaProbeStalls.",
        [target("rdma:probe_host:stalled:3m", instant=True, fmt="table")], "s",
        transformations=[organize(exclude=("Time", "__name__"),
                                  rename={"Value": "stalled in 3m"})]), w=8)
    return b.json()
