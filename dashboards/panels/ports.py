"""What the per-port boards share: the legend, the port states, and panels
of port counters and traffic."""
from .builders import target, timeseries
from .promql import PORTS, rate

PORT_LEGEND = "{{instance}} {{device}}/{{port}}"

# Port states as rdma_port_state / rdma_port_phys_state report them.
PORT_STATES = [(1, "DOWN", "red"), (2, "INIT", "orange"), (3, "ARMED", "yellow"),
               (4, "ACTIVE", "green"), (5, "ACTIVE_DEFER", "green")]
PHYS_STATES = [(1, "SLEEP", "red"), (2, "POLLING", "orange"), (3, "DISABLED", "red"),
               (4, "TRAINING", "yellow"), (5, "LINK_UP", "green"),
               (6, "ERROR_RECOVERY", "orange"), (7, "PHY_TEST", "purple")]


def counter_rates(selector, family, names, legend_prefix=PORT_LEGEND):
    """One query per counter: rate(rdma_port_<family>_<name>_total)."""
    return [target(rate(f"rdma_port_{family}_{n}_total", selector),
                   f"{legend_prefix} {n}".strip()) for n in names]


def counters_panel(title, description, family, names, unit="cps"):
    """A time series of rate(rdma_port_<family>_<name>_total) per port, one
    query per counter."""
    return timeseries(title, description, counter_rates(PORTS, family, names), unit)


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
