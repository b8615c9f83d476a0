"""What the monitoring tests share: where Prometheus' own tools are, the rules as shipped, the
metric names mcd exports (derived from the agent's and the controller's registries, never a
hand list) and the metric names a PromQL expression reads."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry

from mcd.agent.report.metrics import Metrics
from mcd.controller.poolalert import PoolAlertMetric
from mcd.controller.service import ControllerMetrics
from tests.manifests import objects

REPO = Path(__file__).resolve().parents[1]
RULES = REPO / "daemonset" / "kubernetes" / "monitoring" / "20-prometheusrule.yaml"
OPENSHIFT_RULES = REPO / "daemonset" / "openshift" / "monitoring" / "20-prometheusrule.yaml"
RULES_TEST = REPO / "tests" / "data" / "monitoring" / "rules.test.yaml"
DASHBOARD = REPO / "dashboards" / "mcd-rollouts.json"
RUNBOOK = REPO / "docs" / "runbook.md"

SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}


def prometheus_tool(name: str) -> str | None:
    """``promtool`` or ``prometheus`` (Debian package ``prometheus``, which
    ``scripts/setup.sh`` installs as root); None when absent or turned off."""
    if os.environ.get("MCD_TEST_REAL_PARTS") == "0":
        return None
    return shutil.which(name)


MISSING = (
    "needs the Debian package prometheus (promtool, prometheus); scripts/setup.sh installs it "
    "as root, or set MCD_TEST_REAL_PARTS=1 unset"
)


def exported_names() -> set[str]:
    """Every sample name a scrape of an agent or the controller can show."""
    names: set[str] = set()
    controller = ControllerMetrics()
    PoolAlertMetric(controller.registry)  # registered beside it, as mcd.controller.run does
    registries: list[CollectorRegistry] = [Metrics().registry, controller.registry]
    for registry in registries:
        for family in registry.collect():
            names.add(family.name)
            names.update(family.name + s for s in SUFFIXES.get(family.type, ()))
    return names


def rule_groups(path: Path = RULES) -> dict[str, Any]:
    """The ``spec`` of the PrometheusRule in ``path`` as its overlay renders it (each
    ``runbook_url`` from the overlay's ConfigMap ``mcd-runbooks``): a Prometheus rules file."""
    name = yaml.safe_load(path.read_text())["metadata"]["name"]
    (doc,) = [d for d in objects(path.parent)
              if d["kind"] == "PrometheusRule" and d["metadata"]["name"] == name]  # fmt: skip
    spec: dict[str, Any] = doc["spec"]
    return spec


def rules(path: Path = RULES) -> list[dict[str, Any]]:
    return [r for g in rule_groups(path)["groups"] for r in g["rules"]]


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_MATCHERS = re.compile(r"\{[^}]*\}")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_NAMES = re.compile(r"(?<![\w:.$])([a-zA-Z_:][a-zA-Z0-9_:]*)(?![\w:])(?!\s*\()")
KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
            "group_right", "offset", "bool", "inf", "nan", "e"}  # fmt: skip


def metric_names(expr: str) -> set[str]:
    """The series names an expression selects (strings, label matchers, grouping labels,
    function names and durations taken out first)."""
    text = _STRINGS.sub('""', expr)
    text = _MATCHERS.sub("", text)
    text = _GROUPING.sub("", text)
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges and subqueries
    text = re.sub(r"\$\{?\w+\}?", "", text)  # Grafana variables
    return {n for n in _NAMES.findall(text) if n.lower() not in KEYWORDS and not n[0].isdigit()}


def recorded_names(path: Path = RULES) -> set[str]:
    return {r["record"] for r in rules(path) if "record" in r}


def heading_anchors(markdown: str) -> set[str]:
    """GitHub's anchors for the headings of a Markdown text."""
    anchors = set()
    for line in markdown.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors
