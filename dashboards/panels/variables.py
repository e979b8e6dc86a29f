"""Dashboard variables: the data source and the ones the queries filter by."""
from .builders import DS


def datasource_variable():
    return {"name": "datasource", "label": "Data source", "type": "datasource",
            "query": "prometheus", "current": {}, "hide": 0, "includeAll": False,
            "multi": False, "options": [], "refresh": 1, "regex": "", "skipUrlSync": False}


def query_variable(name, label, query, multi=True, description=""):
    """A variable filled from `label_values(selector, label)`.

    Multi-value variables offer "All" as `.*`; single-value ones do not."""
    v = {"name": name, "label": label, "type": "query", "datasource": DS,
         "definition": query, "query": {"query": query, "refId": "StandardVariableQuery"},
         "current": {}, "hide": 0, "includeAll": multi, "multi": multi, "options": [],
         "refresh": 2, "regex": "", "skipUrlSync": False, "sort": 1}
    if multi:
        v["allValue"] = ".*"
    if description:
        v["description"] = description
    return v


def job_variable():
    # No allValue: "All" expands to the exporters' jobs only, so up{job=~"$job"}
    # never picks up other targets.
    v = query_variable("job", "Job", "label_values(rdma_exporter_build_info, job)",
                       description="Scrape jobs that scrape rdma_exporter.")
    del v["allValue"]
    return v


def port_variables(multi=True):
    """job, instance, device and port, each depending on the ones before."""
    if multi:
        return [job_variable(),
                query_variable("instance", "Instance",
                               'label_values(rdma_exporter_build_info{job=~"$job"}, instance)'),
                query_variable("device", "Device",
                               'label_values(rdma_port_info{job=~"$job", instance=~"$instance"}, device)'),
                query_variable("port", "Port",
                               'label_values(rdma_port_info{job=~"$job", instance=~"$instance", '
                               'device=~"$device"}, port)')]
    return [job_variable(),
            query_variable("instance", "Instance",
                           'label_values(rdma_exporter_build_info{job=~"$job"}, instance)',
                           multi=False),
            query_variable("device", "Device",
                           'label_values(rdma_port_info{job=~"$job", instance="$instance"}, device)',
                           multi=False),
            query_variable("port", "Port",
                           'label_values(rdma_port_info{job=~"$job", instance="$instance", '
                           'device="$device"}, port)', multi=False)]
