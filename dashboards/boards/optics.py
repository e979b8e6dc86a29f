"""rdma-optics.json: the last hop of each port: which part the last-hop rules
(config/prometheus/rdma-last-hop.yml) suspect, the modules' receive and
transmit power per lane against their own thresholds, bias, temperature and
flags, FEC and carrier flaps of the netdev, and the PCIe link and errors of
the device.

The suspects and the weakest margins are ranked (records and bottomk), so
they hold with every host selected; the per-lane panels are for the few
ports one looks at."""
from panels.builders import (MERGE, bargauge, organize, stat, table, target, timeseries,
                             unit_override)
from panels.layout import Board
from panels.promql import INSTANCES, PORTS, sel
from panels.variables import port_variables

LANE = "{{instance}} {{device}}/{{port}} lane {{lane}}"
MODULE = "{{instance}} {{device}}/{{port}}"
DEVICES = sel(INSTANCES, 'device=~"$device"')
MODULE_KEYS = "job, instance, device, port, netdev"
# The weakest lane of each module against its own low warning, in dB (0:
# at the threshold; below 0: under it).
RX_MARGIN = (f"10 * log10(min by ({MODULE_KEYS}) (rdma_transceiver_rx_power_watts{{{PORTS}}}) "
             f"/ on ({MODULE_KEYS}) "
             f"rdma_transceiver_rx_power_threshold_watts{{{PORTS}, level=\"low_warning\"}})")
EVIDENCE_COLUMNS = ("Time", "__name__")


def lanes_with_thresholds(title, description, metric, threshold, unit, levels):
    return timeseries(
        title, description,
        [target(f"{metric}{{{PORTS}}}", LANE),
         target(f'{threshold}{{{PORTS}, level=~"{levels}"}}', MODULE + " {{level}}")], unit)


def dashboard():
    b = Board("rdma-optics", "RDMA / Optics and links",
              "The last hop of each port: whether the optic or cable, the RNIC or the switch "
              "side is suspect (the rules of rdma-last-hop.yml), the modules' power per lane "
              "against their own thresholds, their flags, FEC, carrier flaps and PCIe. "
              "Runbooks: docs/alerts.md, \"Last hop\".", port_variables(multi=True))

    b.row("Suspects")
    for suspect, record, title, what in (
            ("optic", "rdma:port_last_hop:evidence", "Optic or cable",
             "ports whose module or cable is suspect: low receive power, module alarms, "
             "uncorrectable FEC or symbol errors"),
            ("rnic", "rdma:device_last_hop:evidence", "RNIC or PCIe",
             "devices whose PCIe link trained down or reports AER errors"),
            ("switch", "rdma:port_last_hop:evidence", "Switch side",
             "ports that lost their link with a clean local optic, or that the switch "
             "pauses most of the time")):
        b.add(stat(title, f"How many {what} (`{record}{{suspect=\"{suspect}\"}}`).",
                   f'count(count by (instance, device, port) ({record}{{suspect="{suspect}", '
                   f'{INSTANCES}}})) or vector(0)', "none", limits=((1, "orange"),)), w=4, h=4)
    b.add(table(
        "Last-hop evidence",
        "Every piece of evidence the last-hop rules hold now, by port (by device for the "
        "RNIC), with its value: lanes under the low warning (`rx_power_low`), module alarms, "
        "uncorrectable FEC blocks or symbol errors, AER messages, the share of the card's PCIe "
        "width or speed, carrier losses, the share of time paused.",
        [target(f"rdma:port_last_hop:evidence{{{INSTANCES}}} or "
                f"rdma:device_last_hop:evidence{{{INSTANCES}}}", instant=True, fmt="table")],
        "none", transformations=[organize(exclude=EVIDENCE_COLUMNS, rename={"Value": "value"})]),
        w=12, h=8)

    b.row("Modules")
    b.add(table(
        "Modules", "The pluggable module of each port's netdev: type, standard of its memory "
        "map, vendor, part and serial number, its temperature and supply voltage, and how long "
        "ago it was read (modules are read every transceiver.interval, 60 s by default).",
        [target(f"rdma_transceiver_info{{{PORTS}}}", instant=True, fmt="table"),
         target(f"rdma_transceiver_temperature_celsius{{{PORTS}}}", instant=True, fmt="table"),
         target(f"rdma_transceiver_supply_voltage_volts{{{PORTS}}}", instant=True, fmt="table"),
         target(f"time() - rdma_transceiver_read_timestamp_seconds{{{PORTS}}}", instant=True,
                fmt="table")],
        "none", transformations=[MERGE, organize(
            exclude=("Time", "__name__", "job", "Value #A"),
            rename={"Value #B": "temperature", "Value #C": "supply", "Value #D": "read ago"})],
        overrides=[unit_override("temperature", "celsius"), unit_override("supply", "volt"),
                   unit_override("read ago", "s")]), w=24, h=8)
    b.add(bargauge(
        "Weakest receive margins",
        "The 20 modules whose weakest lane receives least above the module's own low warning, "
        "in dB (10 log10 of lane power over the threshold): below 0, the lane is under it "
        "(RdmaLastHopOptic, rx_power_low); a lane with no light at all shows as -Inf.",
        f"bottomk(20, {RX_MARGIN})", MODULE, "dB", limits=((3, "green"),)), w=12, h=8)
    b.add(table(
        "Raised flags", "The flags the modules raised in their latest read "
        "(`rdma_transceiver_flag`): alarms and warnings of a monitored quantity, loss of "
        "signal (`rx_los`, `tx_los`), transmitter fault, loss of lock; on a lane, or the whole "
        "module (empty lane). SFF-8636 and CMIS modules latch them until read.",
        [target(f"rdma_transceiver_flag{{{PORTS}}}", instant=True, fmt="table")], "none",
        transformations=[organize(exclude=("Time", "__name__", "job", "Value"))]), w=12, h=8)
    b.add(lanes_with_thresholds(
        "Receive power per lane", "Optical power each lane receives, with the module's own "
        "low warning and alarm thresholds. A lane sinking towards its warning is a dirty "
        "connector, a bent or broken fiber, or a failing far-end transmitter.",
        "rdma_transceiver_rx_power_watts", "rdma_transceiver_rx_power_threshold_watts", "watt",
        "low_warning|low_alarm"))
    b.add(lanes_with_thresholds(
        "Transmit power per lane", "Optical power each lane sends, with the module's low "
        "thresholds. Falling transmit power with rising bias is an ageing laser.",
        "rdma_transceiver_tx_power_watts", "rdma_transceiver_tx_power_threshold_watts", "watt",
        "low_warning|low_alarm"))
    b.add(lanes_with_thresholds(
        "Laser bias per lane", "Bias current of each lane's laser, with the module's high "
        "thresholds: a laser keeps its power up by drawing more current as it ages.",
        "rdma_transceiver_tx_bias_amperes", "rdma_transceiver_tx_bias_threshold_amperes", "amp",
        "high_warning|high_alarm"))
    b.add(timeseries(
        "Module temperature", "Each module's temperature, with its high warning threshold. "
        "Several hot modules on one host are its airflow.",
        [target(f"rdma_transceiver_temperature_celsius{{{PORTS}}}", MODULE),
         target(f'rdma_transceiver_temperature_threshold_celsius{{{PORTS}, '
                f'level="high_warning"}}', MODULE + " high warning")], "celsius"))

    b.row("FEC and flaps")
    b.add(timeseries(
        "FEC corrected blocks (per second)", "Blocks forward error correction repaired: "
        "normal at 25G lanes and up; a rising rate marks a degrading optic or cable before "
        "frames are lost.",
        [target(f"rate(rdma_netdev_fec_corrected_blocks_total{{{PORTS}}}[$__rate_interval])",
                MODULE)], "cps"))
    b.add(timeseries(
        "FEC uncorrectable blocks (per second)", "Blocks FEC could not repair: their frames "
        "were lost (RdmaFecUncorrectable, and the last-hop evidence fec_uncorrectable).",
        [target(f"rate(rdma_netdev_fec_uncorrectable_blocks_total{{{PORTS}}}"
                "[$__rate_interval])", MODULE)], "cps", limits=((1e-9, "red"),)))
    b.add(timeseries(
        "Carrier losses", "Times each netdev's carrier went down per interval, flaps between "
        "two scrapes included (`carrier_down_count`).",
        [target(f"increase(rdma_netdev_carrier_down_changes_total{{{PORTS}}}"
                "[$__rate_interval])", MODULE)], "short"))
    b.add(table(
        "Links down and why", "Netdevs whose link is down, with the driver's reason "
        "(ethtool netlink's extended state: no_cable, link_training_failure, "
        "bad_signal_integrity, module, ...).",
        [target(f"rdma_netdev_link_ext_state_info{{{PORTS}}}", instant=True, fmt="table")],
        "none", transformations=[organize(exclude=("Time", "__name__", "job", "Value"))]))

    b.row("PCIe")
    b.add(table(
        "PCIe links", "The PCIe link of each device's PCI function: speed per lane and width "
        "against the card's maxima (RdmaPcieLinkDegraded).",
        [target(f"rdma_pcie_link_speed_transfers_per_second{{{DEVICES}}} / 1e9", instant=True,
                fmt="table"),
         target(f"rdma_pcie_link_max_speed_transfers_per_second{{{DEVICES}}} / 1e9",
                instant=True, fmt="table"),
         target(f"rdma_pcie_link_width_lanes{{{DEVICES}}}", instant=True, fmt="table"),
         target(f"rdma_pcie_link_max_width_lanes{{{DEVICES}}}", instant=True, fmt="table")],
        "none", transformations=[MERGE, organize(
            exclude=("Time", "__name__", "job"),
            rename={"Value #A": "speed", "Value #B": "max speed", "Value #C": "lanes",
                    "Value #D": "max lanes"})],
        overrides=[unit_override("speed", "suffix: GT/s"),
                   unit_override("max speed", "suffix: GT/s")]))
    b.add(timeseries(
        "PCIe error messages", "AER messages of each device's PCI function per interval, by "
        "severity (RdmaPcieUncorrectableErrors, RdmaPcieCorrectableErrors).",
        [target(f"increase(rdma_pcie_aer_messages_total{{{DEVICES}}}[$__rate_interval])",
                "{{instance}} {{device}} {{aer_severity}}")], "short", limits=((1, "red"),)))
    return b.json()
