"""Panels and their parts: the data source, queries, thresholds, value
mappings, the panel kinds and table transformations."""

DS = {"type": "prometheus", "uid": "${datasource}"}


def target(expr, legend="", instant=False, fmt=None):
    t = {"datasource": DS, "editorMode": "code", "expr": expr, "legendFormat": legend,
         "range": not instant, "instant": instant}
    if fmt:
        t["format"] = fmt
    return t


def thresholds(*steps, base="green"):
    """thresholds(( 1, "red")) -> base colour below 1, red from 1."""
    out = [{"color": base, "value": None}]
    out += [{"color": c, "value": v} for v, c in steps]
    return {"mode": "absolute", "steps": out}


def value_mappings(states):
    return [{"type": "value",
             "options": {str(n): {"text": text, "color": color, "index": i}
                         for i, (n, text, color) in enumerate(states)}}]


def panel(kind, title, description, targets, unit, **extra):
    p = {"type": kind, "title": title, "description": description, "datasource": DS,
         "targets": targets,
         "fieldConfig": {"defaults": {"unit": unit, "thresholds": thresholds()},
                         "overrides": []},
         "options": {}}
    for key, value in extra.items():
        p[key] = value
    return p


def timeseries(title, description, targets, unit, stack=False, negative_refs=(), min_zero=True,
               limits=None, legend_calcs=("mean", "max")):
    p = panel("timeseries", title, description, targets, unit)
    custom = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10, "showPoints": "never",
              "spanNulls": False, "axisSoftMin": 0 if min_zero and not negative_refs else None,
              "stacking": {"mode": "normal" if stack else "none", "group": "A"},
              "thresholdsStyle": {"mode": "off"}}
    if custom["axisSoftMin"] is None:
        del custom["axisSoftMin"]
    p["fieldConfig"]["defaults"]["custom"] = custom
    p["fieldConfig"]["defaults"]["color"] = {"mode": "palette-classic"}
    if limits:
        p["fieldConfig"]["defaults"]["thresholds"] = thresholds(*limits)
        custom["thresholdsStyle"] = {"mode": "dashed"}
    for ref in negative_refs:
        p["fieldConfig"]["overrides"].append({
            "matcher": {"id": "byFrameRefID", "options": ref},
            "properties": [{"id": "custom.transform", "value": "negative-Y"}]})
    p["options"] = {"legend": {"displayMode": "table", "placement": "bottom", "showLegend": True,
                               "calcs": list(legend_calcs)},
                    "tooltip": {"mode": "multi", "sort": "desc"}}
    return p


def stat(title, description, expr, unit, limits=(), base="green", mappings=None, legend="",
         text_mode="auto", instant=True):
    p = panel("stat", title, description, [target(expr, legend, instant=instant)], unit)
    p["fieldConfig"]["defaults"]["thresholds"] = thresholds(*limits, base=base)
    if mappings:
        p["fieldConfig"]["defaults"]["mappings"] = mappings
    p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                    "colorMode": "background", "graphMode": "none", "justifyMode": "auto",
                    "orientation": "auto", "textMode": text_mode, "wideLayout": True}
    return p


def table(title, description, targets, unit, transformations=(), overrides=(), mappings=None,
          limits=(), color_cells=False):
    p = panel("table", title, description, targets, unit)
    p["fieldConfig"]["defaults"]["thresholds"] = thresholds(*limits)
    p["fieldConfig"]["defaults"]["custom"] = {
        "align": "auto", "cellOptions": {"type": "color-background" if color_cells else "auto"}}
    if mappings:
        p["fieldConfig"]["defaults"]["mappings"] = mappings
    p["fieldConfig"]["overrides"] = list(overrides)
    p["options"] = {"showHeader": True, "cellHeight": "sm",
                    "footer": {"show": False, "reducer": ["sum"], "fields": ""}}
    p["transformations"] = list(transformations)
    return p


def bargauge(title, description, expr, legend, unit, limits=()):
    p = panel("bargauge", title, description, [target(expr, legend, instant=True)], unit)
    p["fieldConfig"]["defaults"]["thresholds"] = thresholds(*limits)
    p["fieldConfig"]["defaults"]["min"] = 0
    p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                    "displayMode": "gradient", "orientation": "horizontal", "showUnfilled": True,
                    "valueMode": "color", "namePlacement": "auto", "minVizHeight": 16,
                    "minVizWidth": 8, "maxVizHeight": 300, "sizing": "auto"}
    return p


def state_timeline(title, description, targets, mappings_by_ref):
    p = panel("state-timeline", title, description, targets, "none")
    p["fieldConfig"]["defaults"]["custom"] = {"fillOpacity": 80, "lineWidth": 0}
    p["fieldConfig"]["defaults"]["color"] = {"mode": "thresholds"}
    for ref, states in mappings_by_ref.items():
        p["fieldConfig"]["overrides"].append({
            "matcher": {"id": "byFrameRefID", "options": ref},
            "properties": [{"id": "mappings", "value": value_mappings(states)}]})
    p["options"] = {"mergeValues": True, "showValue": "auto", "alignValue": "left",
                    "rowHeight": 0.9, "legend": {"displayMode": "list", "placement": "bottom",
                                                 "showLegend": False},
                    "tooltip": {"mode": "single", "sort": "none"}}
    return p


def heatmap(title, description, expr):
    p = panel("heatmap", title, description,
              [target(expr, "{{le}}", fmt="heatmap")], "s")
    p["options"] = {"calculate": False, "cellGap": 1,
                    "color": {"mode": "scheme", "scheme": "Spectral", "steps": 64,
                              "exponent": 0.5, "fill": "dark-orange", "reverse": False},
                    "yAxis": {"axisPlacement": "left", "unit": "s", "reverse": False},
                    "rowsFrame": {"layout": "auto"}, "showValue": "never",
                    "tooltip": {"mode": "single", "yHistogram": True, "showColorScale": True},
                    "legend": {"show": True}, "exemplars": {"color": "rgba(255,0,255,0.7)"},
                    "filterValues": {"le": 1e-9}, "cellValues": {"unit": "short"}}
    return p


def organize(exclude=(), rename=None):
    return {"id": "organize", "options": {"excludeByName": {name: True for name in exclude},
                                          "renameByName": rename or {}, "indexByName": {}}}


MERGE = {"id": "merge", "options": {}}


def board_url(uid):
    """A link to another dashboard that keeps the data source and time range."""
    return f"/d/{uid}/{uid}?${{datasource:queryparam}}&${{__url_time_range}}"


def field_link(field, title, url):
    """A table field override that links each cell of FIELD to URL."""
    return {"matcher": {"id": "byName", "options": field},
            "properties": [{"id": "links", "value": [{"title": title, "url": url}]}]}


def unit_override(field, unit):
    return {"matcher": {"id": "byName", "options": field},
            "properties": [{"id": "unit", "value": unit}]}
