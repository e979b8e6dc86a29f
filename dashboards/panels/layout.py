"""The dashboard: panels laid out in rows, the links, time and variables."""
from .variables import datasource_variable

SCHEMA_VERSION = 39
TAGS = ["rdma", "rdma_exporter"]


class Board:
    """Lays panels out left to right in rows of 24 columns, numbering them."""

    def __init__(self, uid, title, description, variables):
        self.uid, self.title, self.description = uid, title, description
        self.variables = [datasource_variable()] + variables
        self.panels = []
        self.x = self.y = self.row_height = 0

    def _next_line(self):
        if self.x:
            self.y += self.row_height
        self.x = self.row_height = 0

    def row(self, title):
        self._next_line()
        self.panels.append({"type": "row", "title": title, "collapsed": False, "panels": [],
                            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y}})
        self.y += 1

    def add(self, p, w=12, h=8):
        if self.x + w > 24:
            self._next_line()
        p["gridPos"] = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.panels.append(p)
        self.x += w
        self.row_height = max(self.row_height, h)
        if self.x == 24:
            self._next_line()

    def json(self):
        for number, p in enumerate(self.panels, 1):
            p["id"] = number
            for i, t in enumerate(p.get("targets", [])):
                t["refId"] = chr(ord("A") + i)
        ordered = []
        for p in self.panels:
            # A stable key order reads better in diffs.
            head = {k: p[k] for k in ("id", "type", "title", "description", "gridPos",
                                       "datasource") if k in p}
            ordered.append({**head, **{k: v for k, v in p.items() if k not in head}})
        return {
            "annotations": {"list": [{
                "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
                "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
                "name": "Annotations & Alerts", "type": "dashboard"}]},
            "description": self.description,
            "editable": True,
            "fiscalYearStartMonth": 0,
            "graphTooltip": 1,
            "id": None,
            "links": [{"title": "RDMA dashboards", "type": "dashboards", "tags": ["rdma"],
                       "asDropdown": True, "includeVars": True, "keepTime": True,
                       "icon": "external link", "targetBlank": False, "tooltip": "",
                       "url": ""}],
            "panels": ordered,
            "refresh": "30s",
            "schemaVersion": SCHEMA_VERSION,
            "tags": TAGS,
            "templating": {"list": self.variables},
            "time": {"from": "now-1h", "to": "now"},
            "timepicker": {},
            "timezone": "",
            "title": self.title,
            "uid": self.uid,
            "version": 1,
            "weekStart": "",
        }
