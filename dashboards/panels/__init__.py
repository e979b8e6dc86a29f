"""The panel library the dashboards are built from (see ../generate.py).

- builders: the data source reference, queries (target), thresholds, value
  mappings, the panel kinds and the table transformations.
- variables: the data source variable and the job, instance, device and
  port variables.
- layout: Board, which lays panels out and writes the dashboard.
- promql: selectors over the variables, rate() and every counter of a port.
- ports: what per-port boards share: the legend, the port states, the
  counter and traffic panels.
"""
