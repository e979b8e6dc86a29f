"""rdma-port.json: one port in depth: its state and state history, its link
(carrier flaps of its netdev, the PCIe link and errors of its device), every
hw counter of its driver, the IB PMA counters, its QPs and counter mode."""
from panels.builders import (MERGE, organize, stat, state_timeline, table, target, timeseries,
                             unit_override, value_mappings)
from panels.layout import Board
from panels.ports import (PHYS_STATES, PORT_STATES, counter_rates, packets_panel,
                          throughput_panel)
from panels.promql import ONE_DEVICE, ONE_PORT, all_counters, rate
from panels.variables import port_variables

CARRIER = [(0, "NO CARRIER", "red"), (1, "UP", "green")]
PCIE_LINK = ("rdma_pcie_link_speed_transfers_per_second", "rdma_pcie_link_max_speed_transfers_per_second",
             "rdma_pcie_link_width_lanes", "rdma_pcie_link_max_width_lanes")

PMA_ERRORS = ["symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
              "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
              "port_xmit_discards", "port_xmit_constraint_errors", "port_rcv_constraint_errors",
              "local_link_integrity_errors", "excessive_buffer_overrun_errors", "VL15_dropped"]


def dashboard():
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

    b.row("Link and PCIe")
    b.add(stat("Carrier", "Whether the netdev behind the port has a carrier "
               "(`rdma_netdev_carrier`; RoCE ports only, absent while the netdev is "
               "administratively down).", f"rdma_netdev_carrier{{{ONE_PORT}}}", "none",
               mappings=value_mappings(CARRIER), base="text"), w=4, h=4)
    b.add(stat("Carrier losses in range", "Times the netdev's carrier went down in the "
               "selected time range, flaps between two scrapes included "
               "(`carrier_down_count`). A healthy link has none.",
               f"increase(rdma_netdev_carrier_down_changes_total{{{ONE_PORT}}}[$__range])",
               "none", limits=((1, "red"),)), w=4, h=4)
    b.add(table(
        "PCIe link", "The link between the host and the device's PCI function: the speed "
        "(per lane) and width it trained to against the card's maxima. Below them, the RNIC "
        "cannot reach line rate (RdmaPcieLinkDegraded).",
        [target(f"{m}{{{ONE_DEVICE}}}" + (" / 1e9" if "speed" in m else ""), instant=True,
                fmt="table") for m in PCIE_LINK],
        "none", transformations=[MERGE, organize(
            exclude=("Time", "__name__", "job", "instance", "device"),
            rename={"Value #A": "speed", "Value #B": "max speed", "Value #C": "lanes",
                    "Value #D": "max lanes"})],
        overrides=[unit_override("speed", "suffix: GT/s"),
                   unit_override("max speed", "suffix: GT/s")]),
        w=16, h=4)
    b.add(timeseries(
        "Carrier changes", "Carrier losses and recoveries of the netdev per interval, from "
        "its counts: a flap shows even when no scrape saw the link down.",
        [target(f"increase(rdma_netdev_carrier_down_changes_total{{{ONE_PORT}}}"
                "[$__rate_interval])", "down"),
         target(f"increase(rdma_netdev_carrier_up_changes_total{{{ONE_PORT}}}"
                "[$__rate_interval])", "up")], "short"))
    b.add(timeseries(
        "FEC blocks", "Forward error correction on the netdev's link per interval: blocks "
        "corrected (normal at 25G lanes and up, a rising rate marks a degrading optic or "
        "cable) and blocks it could not correct, whose frames were lost "
        "(RdmaFecUncorrectable). From ethtool netlink; drivers without FEC have none.",
        [target(f"increase(rdma_netdev_fec_corrected_blocks_total{{{ONE_PORT}}}"
                "[$__rate_interval])", "corrected"),
         target(f"increase(rdma_netdev_fec_uncorrectable_blocks_total{{{ONE_PORT}}}"
                "[$__rate_interval])", "uncorrectable")], "short"))
    b.add(stat("Link down reason", "Why the link is down, as the driver says (ethtool "
               "netlink's extended link state: no_cable, link_training_failure, "
               "bad_signal_integrity, ...). Empty while the link is up.",
               f"rdma_netdev_link_ext_state_info{{{ONE_PORT}}}", "none",
               legend="{{ext_state}} {{ext_substate}}", text_mode="name", base="red"),
          w=12, h=8)
    b.add(timeseries(
        "PCIe errors", "AER error messages of the device's PCI function per interval, by "
        "severity: correctable ones cost replays, nonfatal and fatal ones lose transactions "
        "(RdmaPcieUncorrectableErrors). `rdma_pcie_aer_errors_total` names the errors.",
        [target(f"increase(rdma_pcie_aer_messages_total{{{ONE_DEVICE}}}[$__rate_interval])",
                "{{aer_severity}}")], "short", limits=((1, "red"),)))

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
    return b.json()
