"""The alerting rules as shipped (``daemonset/kubernetes/monitoring/`` and ``daemonset/openshift/monitoring/``),
checked and unit-tested by Prometheus' own ``promtool`` with input series that fire each alert
and series that must not; upstream's alerts keep upstream's names, expressions and durations;
every rule reads only metrics mcd exports; every alert's runbook section exists."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.monitoring import (
    MISSING,
    OPENSHIFT_RULES,
    RULES,
    RULES_TEST,
    RUNBOOK,
    exported_names,
    heading_anchors,
    metric_names,
    prometheus_tool,
    recorded_names,
    rule_groups,
    rules,
)

RUNBOOK_URL = "https://github.com/mcd-project/mcd/blob/main/docs/runbook.md#"

# Upstream's install/0000_90_machine-config_01_prometheus-rules.yaml, for the alerts whose
# metric mcd has: (expression, for, severity).
UPSTREAM = {
    "MCDRebootError": ("mcd_reboots_failed_total > 0", "5m", "critical"),
    "MCDPivotError": ("mcd_pivot_errors_total > 0", "2m", "warning"),
    "KubeletHealthState": ("mcd_kubelet_state > 2", None, "warning"),
    "MCCDrainError": ("mcc_drain_err > 0", None, "warning"),
    "MCCPoolAlert": ("mcc_pool_alert > 0", None, "warning"),
}
NEW = {"MCDRolloutNoProgress", "MCDPoolRolloutHalted", "MCDPoolPaused", "MCDHealthGateFailed",
       "MCDNodeUpdateSlow", "MCDRebootPending"}  # fmt: skip


@pytest.fixture(scope="module")
def promtool() -> str:
    found = prometheus_tool("promtool")
    if found is None:
        pytest.skip(MISSING)
    return found


def alerts() -> dict[str, dict[str, object]]:
    return {r["alert"]: r for r in rules() if "alert" in r}


def test_both_manifest_sets_ship_the_same_rules() -> None:
    assert rule_groups(RULES) == rule_groups(OPENSHIFT_RULES)
    assert set(alerts()) == set(UPSTREAM) | NEW


def test_upstreams_alerts_keep_upstreams_expressions_and_durations() -> None:
    for name, (expr, duration, severity) in UPSTREAM.items():
        rule = alerts()[name]
        assert str(rule["expr"]).strip() == expr
        assert rule.get("for") == duration
        assert rule["labels"] == {"namespace": "mcd", "severity": severity}


def test_every_alert_points_at_its_runbook_section() -> None:
    anchors = heading_anchors(RUNBOOK.read_text())
    for name, rule in alerts().items():
        annotations = rule["annotations"]
        assert isinstance(annotations, dict)
        url = annotations["runbook_url"]
        assert url == RUNBOOK_URL + name.lower()
        assert name.lower() in anchors, f"docs/runbook.md has no section {name}"
        assert annotations["summary"] and annotations["description"]


def test_rules_read_only_metrics_mcd_exports() -> None:
    exported = exported_names() | recorded_names()
    for rule in rules():
        names = metric_names(str(rule["expr"]))
        assert names, rule
        assert names <= exported, f"{rule.get('alert') or rule.get('record')}: {names - exported}"


def test_metric_names_are_read_from_expressions() -> None:
    expr = 'a_b{x="y(z)"} * on (node) group_left (pool) max by (node) (rate(c_total[5m])) > 3'
    assert metric_names(expr) == {"a_b", "c_total"}


def test_promtool_checks_the_rules(promtool: str, tmp_path: Path) -> None:
    for path in (RULES, OPENSHIFT_RULES):
        out = tmp_path / "rules.yaml"
        out.write_text(yaml.safe_dump(rule_groups(path)))
        done = subprocess.run([promtool, "check", "rules", str(out)], capture_output=True,
                              text=True, timeout=60, check=False)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"SUCCESS: {len(rules(path))} rules found" in done.stdout


def test_promtool_unit_tests_fire_and_do_not_fire(promtool: str, tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rule_groups(RULES)))
    spec = yaml.safe_load(RULES_TEST.read_text())
    spec["rule_files"] = ["rules.yaml"]
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(spec))
    done = subprocess.run([promtool, "test", "rules", "test.yaml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout
    # each alert is seen firing, and at an earlier time or for other series not firing
    cases = [c for t in spec["tests"] for c in t.get("alert_rule_test", [])]
    firing = {c["alertname"] for c in cases if c["exp_alerts"]}
    assert firing == set(alerts())
    quiet = {c["alertname"] for c in cases if not c["exp_alerts"]}
    assert quiet >= {a for a, r in alerts().items() if r.get("for")} | {"MCDRolloutNoProgress"}


def test_a_broken_rule_fails_promtool(promtool: str, tmp_path: Path) -> None:
    """The check is real: promtool refuses an expression it cannot parse."""
    groups = rule_groups(RULES)
    groups["groups"][0]["rules"][0]["expr"] = "mcd_reboots_failed_total >"
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(groups))
    done = subprocess.run([promtool, "check", "rules", str(tmp_path / "bad.yaml")],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode != 0
