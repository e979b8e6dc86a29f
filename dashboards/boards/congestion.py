"""rdma-congestion.json: congestion control and its symptoms: CNPs and ECN
marks, retransmissions, PFC pauses and QoS per priority, InfiniBand credit
stalls."""
from panels.builders import MERGE, bargauge, organize, table, target, timeseries
from panels.layout import Board
from panels.ports import PORT_LEGEND, counters_panel
from panels.promql import PORTS, rate, sel
from panels.variables import port_variables


def dashboard():
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
    return b.json()
