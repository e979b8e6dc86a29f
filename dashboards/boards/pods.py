"""rdma-pods.json: RDMA traffic and errors per Kubernetes namespace and pod,
from the per-QP counter sets' pod labels, and the RDMA devices allocated to
pods (rdma_device_pod_info). Needs kubernetes.enabled on the exporters."""
from panels.builders import MERGE, bargauge, organize, table, target, timeseries
from panels.layout import Board
from panels.promql import INSTANCES, rate, sel
from panels.variables import job_variable, query_variable

REQUESTS = ("rx_write_requests", "rx_read_requests", "rx_atomic_requests")
ERRORS = ("packet_seq_err", "local_ack_timeout_err", "out_of_sequence", "rnr_nak_retry_err",
          "duplicate_request", "out_of_buffer")
POD_LEGEND = "{{namespace}}/{{pod}}"


def dashboard():
    stat = '{__name__=~"rdma_qp_stat_.+_total", job=~"$job", instance=~"$instance"'
    variables = [
        job_variable(),
        query_variable("instance", "Instance",
                       'label_values(rdma_exporter_build_info{job=~"$job"}, instance)'),
        query_variable("namespace", "Namespace", f"label_values({stat}}}, namespace)",
                       description="Namespaces of the pods whose processes have per-QP "
                                   "counter sets."),
        query_variable("pod", "Pod",
                       f'label_values({stat}, namespace=~"$namespace"}}, pod)',
                       description="Pods of the selected namespaces."),
    ]
    b = Board("rdma-pods", "RDMA / Pods",
              "RDMA traffic and errors per Kubernetes namespace and pod, from the per-QP counter "
              "sets of the pods' processes (kubernetes.enabled on the exporters; the port must "
              "count per process), and the RDMA devices the kubelet allocated to pods.",
              variables)
    in_pods = sel(INSTANCES, 'namespace!=""', 'namespace=~"$namespace"', 'pod=~"$pod"')

    def by(labels, names, window="$__rate_interval"):
        return " + ".join(f"sum by ({labels}) ({rate(f'rdma_qp_stat_{n}_total', in_pods, window)})"
                          for n in names)

    b.row("By namespace")
    b.add(timeseries(
        "Requests received by namespace",
        "RDMA writes, reads and atomics that the namespace's pods' QPs received as responder, "
        "per second (`rdma_qp_stat_rx_*_requests_total`), summed over their counter sets.",
        [target(by("namespace", REQUESTS), "{{namespace}}")], "reqps", stack=True), w=12)
    b.add(timeseries(
        "Transport errors by namespace",
        "Sequence-error NAKs, ACK timeouts, out-of-sequence packets, RNR retries exhausted, "
        "duplicates and receive buffer drops of the namespace's pods' QPs, per second.",
        [target(by("namespace", ERRORS), "{{namespace}}")], "cps", stack=True), w=12)

    b.row("By pod")
    b.add(timeseries(
        "Requests received by pod", "Writes, reads and atomics received per second by each "
        "pod's QPs, on every selected exporter (a pod's processes are on its node).",
        [target(by("namespace, pod", REQUESTS), POD_LEGEND)], "reqps"), w=12)
    b.add(timeseries(
        "Transport errors by pod", "The error counters above, summed by pod.",
        [target(by("namespace, pod", ERRORS), POD_LEGEND)], "cps"), w=12)
    b.add(bargauge(
        "Top pods by requests received", "Writes, reads and atomics received, averaged over the "
        "selected time range.", f"topk(10, {by('namespace, pod', REQUESTS, '$__range')})",
        POD_LEGEND, "reqps"), w=12)
    b.add(table(
        "Errors by container", "Each container's errors over the selected time range, by "
        "counter.",
        [target(f"sum by (instance, namespace, pod, container) "
                f"(increase(rdma_qp_stat_{n}_total{{{in_pods}}}[$__range]))", instant=True,
                fmt="table") for n in ERRORS],
        "short", transformations=[MERGE, organize(
            exclude=("Time",), rename={f"Value #{chr(ord('A') + i)}": n
                                       for i, n in enumerate(ERRORS)})]), w=12)
    b.add(timeseries(
        "QPs by pod", "The pods' QPs in the kernel's resource tracker (`rdma_qps`; needs "
        "`qp_counters.inventory_by_pod: true`).",
        [target(f"sum by (namespace, pod) (rdma_qps{{{in_pods}}})", POD_LEGEND)], "short"),
        w=24)

    b.row("Devices allocated to pods")
    alloc = sel(INSTANCES, 'namespace=~"$namespace"', 'pod=~"$pod"')
    b.add(table(
        "RDMA devices allocated to pods", "Which RDMA device the kubelet allocated to which "
        "container (`rdma_device_pod_info`): the device plugin's resource and the ID it "
        "allocated (a virtual function's PCI address, a device name). A shared device plugin's "
        "slots name no device and are not listed.",
        [target(f"rdma_device_pod_info{{{alloc}}}", instant=True, fmt="table")], "none",
        transformations=[organize(exclude=("Time", "__name__", "job", "Value"))]), w=24)
    # Devices of exactly one pod: the device's port counters are that pod's.
    one_pod = (f"(max by (instance, device, namespace, pod) (rdma_device_pod_info{{{alloc}}}) "
               f"and on (instance, device) (count by (instance, device) (count by (instance, "
               f"device, namespace, pod) (rdma_device_pod_info{{{INSTANCES}}})) == 1))")
    b.add(timeseries(
        "Port throughput of pods' own devices",
        "Bytes per second through the ports of the RDMA devices allocated to one pod only "
        "(virtual functions), from the IB PMA data counters, by pod. A device shared by "
        "several pods cannot be split here: see the per-process series above.",
        [target(f"sum by (namespace, pod) ({rate('rdma_port_pma_port_xmit_data_bytes_total', INSTANCES)} "
                f"* on (instance, device) group_left (namespace, pod) {one_pod})",
                POD_LEGEND + " tx"),
         target(f"sum by (namespace, pod) ({rate('rdma_port_pma_port_rcv_data_bytes_total', INSTANCES)} "
                f"* on (instance, device) group_left (namespace, pod) {one_pod})",
                POD_LEGEND + " rx")], "Bps"), w=24)
    offered = f"rdma_device_allocatable_info{{{INSTANCES}}}"
    b.add(table(
        "Free RDMA devices by resource", "Per device plugin resource, the RDMA devices the "
        "kubelets can allocate (`rdma_device_allocatable_info`) and those of them no container "
        "holds (not in `rdma_device_pod_info`), over the selected instances.",
        [target(f"count by (resource) ({offered})", instant=True, fmt="table"),
         target(f"count by (resource) ({offered} unless on (instance, device, resource, device_id) "
                f"rdma_device_pod_info{{{INSTANCES}}})", instant=True, fmt="table")],
        "short", transformations=[MERGE, organize(
            exclude=("Time",), rename={"Value #A": "allocatable", "Value #B": "free"})]), w=24)
    return b.json()
