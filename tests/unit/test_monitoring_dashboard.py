"""The Grafana dashboard (``dashboards/mcd-rollouts.json``) imports as it is (its data source is
a variable, nothing left to fill in), every query parses (Prometheus' own ``promtool``) and
names only metrics mcd exports (derived from the registries), and it shows what the issue
asks: pools and their progress, update durations, nodes Working/Degraded, drains in flight
and blocked, health gates and rollbacks, reboots owed. The e2e
(``tests/e2e/test_prometheus.py``) runs the same queries against a real Prometheus."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.monitoring import DASHBOARD, MISSING, exported_names, metric_names, prometheus_tool

Obj = dict[str, Any]
GRAFANA = {"$__rate_interval": "5m", "$__range": "1h", "$__interval": "1m", "$pool": ".*"}


def dashboard() -> Obj:
    doc: Obj = json.loads(DASHBOARD.read_text())
    return doc


def panels() -> list[Obj]:
    return [p for p in dashboard()["panels"] if p["type"] != "row"]


def queries() -> list[str]:
    """Every query, as Grafana sends it (its variables filled in), the pool variable's too."""
    exprs = [t["expr"] for p in panels() for t in p["targets"]]
    for var in dashboard()["templating"]["list"]:
        if var["type"] == "query":
            found = re.fullmatch(r"label_values\((.+), \w+\)", var["query"]["query"])
            assert found, var
            exprs.append(found.group(1))
    out = []
    for expr in exprs:
        filled = expr
        for name, value in GRAFANA.items():
            filled = filled.replace(name, value)
        assert "$" not in filled, expr
        out.append(filled)
    return out


def test_it_imports_as_it_is() -> None:
    doc = dashboard()
    assert doc["uid"] == "mcd-rollouts" and doc["title"] and doc["schemaVersion"] >= 36
    assert doc["__inputs"] == []  # nothing to fill in on import
    (source,) = [v for v in doc["templating"]["list"] if v["type"] == "datasource"]
    assert source["query"] == "prometheus"
    for panel in panels():
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["targets"] and all(t["expr"] for t in panel["targets"])
        assert len({t["refId"] for t in panel["targets"]}) == len(panel["targets"])
    ids = [p["id"] for p in doc["panels"]]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for panel in doc["panels"]:  # no two panels drawn over each other
        g = panel["gridPos"]
        assert g["x"] + g["w"] <= 24
        mine = {
            (x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])
        }
        assert not mine & cells, panel["title"]
        cells |= mine


def test_queries_name_only_metrics_mcd_exports() -> None:
    exported = exported_names()
    for expr in queries():
        names = metric_names(expr)
        assert names, expr
        assert names <= exported, f"{expr}: {names - exported}"


def test_it_shows_what_an_operator_looks_for() -> None:
    used = set().union(*(metric_names(q) for q in queries()))
    assert {
        "mco_updated_machine_count", "mcd_pool_nodes_left", "mcd_pool_target_config",
        "mcd_pool_paused", "mcd_pool_last_progress_timestamp_seconds",  # pools and progress
        "mcd_update_duration_seconds_bucket", "mcd_update_last_duration_seconds",  # durations
        "mcd_pool_nodes_by_state",  # Working / Degraded
        "mcd_pool_drains", "mcc_drain_err", "mcd_drain_duration_seconds_bucket",  # drains
        "mcd_health_gate_runs_total", "mcd_health_gate_rollbacks_total",  # gates, rollbacks
        "mcd_reboot_required",  # reboots owed
    } <= used  # fmt: skip


def test_every_query_parses(tmp_path: Path) -> None:
    promtool = prometheus_tool("promtool")
    if promtool is None:
        pytest.skip(MISSING)
    rules = [{"record": f"dashboard:query_{i}", "expr": q} for i, q in enumerate(queries())]
    path = tmp_path / "queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    done = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(rules)} rules found" in done.stdout
