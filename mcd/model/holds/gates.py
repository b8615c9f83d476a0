"""The gates of a pool's rollout policy (beyond upstream; kured's blockers): keys of the
annotation ``mcd-project.github.io/rollout-policy`` beside the canary's::

    {"blockingPods": ["app=database", {"matchLabels": {"backup": "running"}}],
     "alerts": {"prometheusURL": "http://prometheus.monitoring:9090",
                "filter": "^(Watchdog|InfoInhibitor)$", "matchOnly": false,
                "firingOnly": false}}

* ``blockingPods``: a label selector string (kured's ``--blocking-pod-selector``), a label
  selector object (``matchLabels`` / ``matchExpressions``), or a list of them: a node with a
  pod matching any of them (not Succeeded, Failed or Unknown) is not disrupted; the next node
  is taken instead;
* ``alerts``: kured's ``--prometheus-url``, ``--alert-filter-regexp``,
  ``--alert-filter-match-only`` and ``--alert-firing-only``: while Prometheus' ``ALERTS``
  holds an alert that counts, no node of the pool is disrupted, and a Prometheus that does
  not answer holds the pool too. Without ``matchOnly`` the filter names the alerts to ignore;
  with it, only the alerts it matches count. Without ``firingOnly`` pending alerts count too.

A gate holds only an update that drains or reboots (or whose cost is unknown) and OS reboots;
an update that needs neither goes on. What is running when a gate closes finishes.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcd.model.holds.selector import SelectorSyntaxError, parse_selector
from mcd.model.pool.canary import _KEYS as POLICY_KEYS
from mcd.model.pool.canary import POLICY_ANNOTATION
from mcd.model.pool.pools import SelectorError, selector_matches
from mcd.model.pool.windows import annotation_object
from mcd.model.text import printable, selector_string

HELD = "RolloutHeld"
"""The pool condition naming what holds its rollout."""
BLOCKING_PODS = "BlockingPods"
ALERTS_FIRING = "AlertsFiring"
PROMETHEUS_UNREACHABLE = "PrometheusUnreachable"
INVALID_GATES = "InvalidPolicy"
GATE_KEYS = frozenset({"blockingPods", "alerts"})
_ALERT_KEYS = frozenset({"prometheusURL", "filter", "matchOnly", "firingOnly"})
MAX_SELECTORS = 20
MAX_FILTER = 512
DONE_PHASES = frozenset({"Succeeded", "Failed", "Unknown"})
"""kured's field selector: such pods do not block."""
SHOWN = 10
"""Names shown in a message before "and N more" (kured logs ten alert names)."""


class GateError(ValueError):
    """A gate of the rollout policy that cannot be used; the text names the field."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"annotation {POLICY_ANNOTATION}: {field_name}: {message}")


@dataclass(frozen=True)
class AlertGate:
    url: str
    filter: str = ""
    match_only: bool = False
    firing_only: bool = False

    def counts(self, name: str, state: str) -> bool:
        """kured's ``matchesRegex`` and ``firingOnly``: does this alert hold the pool?"""
        if self.firing_only and state != "firing":
            return False
        if not self.filter:
            return True
        return (re.search(self.filter, name) is not None) == self.match_only

    def describe(self) -> str:
        text = f"alerts in Prometheus {shown_url(self.url)}"
        if self.filter:
            verb = "only alerts matching" if self.match_only else "ignoring alerts matching"
            text += f" ({verb} {self.filter!r})"
        return text + (", firing only" if self.firing_only else ", pending or firing")


@dataclass(frozen=True)
class Gates:
    blocking_pods: tuple[Mapping[str, Any], ...] = ()
    alerts: AlertGate | None = None

    def describe(self) -> str:
        parts = []
        if self.blocking_pods:
            shown = "; ".join(selector_string(s) for s in self.blocking_pods)
            parts.append(f"nodes with pods matching {shown} wait")
        if self.alerts is not None:
            parts.append(f"the pool waits for {self.alerts.describe()}")
        return ", ".join(parts)


def shown_url(url: str) -> str:
    """The URL without a user or password (never shown)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return printable(urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", "")))


def parse_gates(text: str) -> Gates | None:
    """The gates of a rollout policy annotation; None when it sets none. The other keys are
    the canary's (:func:`mcd.model.pool.canary.parse_policy` judges them)."""
    doc = annotation_object(text, POLICY_KEYS | GATE_KEYS, GateError)
    if not GATE_KEYS & set(doc):
        return None
    pods: tuple[Mapping[str, Any], ...] = ()
    if "blockingPods" in doc:
        pods = _selectors(doc["blockingPods"])
    alerts = _alerts(doc["alerts"]) if "alerts" in doc else None
    return Gates(pods, alerts)


def _selectors(value: object) -> tuple[Mapping[str, Any], ...]:
    items = value if isinstance(value, list) else [value]
    if not items or len(items) > MAX_SELECTORS:
        raise GateError("blockingPods", f"expected 1 to {MAX_SELECTORS} label selectors")
    return tuple(_selector(item) for item in items)


def _selector(item: object) -> Mapping[str, Any]:
    if isinstance(item, str):
        try:
            return parse_selector(item)
        except SelectorSyntaxError as e:
            raise GateError("blockingPods", f"invalid label selector: {e}") from None
    if isinstance(item, dict) and (item.get("matchLabels") or item.get("matchExpressions")):
        if set(item) - {"matchLabels", "matchExpressions"}:
            raise GateError("blockingPods",
                            "a label selector has only matchLabels, matchExpressions")  # fmt: skip
        labels = item.get("matchLabels") or {}
        if not isinstance(labels, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
        ):
            raise GateError("blockingPods", "matchLabels: expected an object of strings")
        try:
            selector_matches(item, {})
        except (SelectorError, AttributeError, TypeError) as e:
            raise GateError("blockingPods", f"invalid label selector: {str(e)[:120]}") from None
        return item
    raise GateError(
        "blockingPods",
        "expected a label selector such as app=database, an object with matchLabels or "
        f"matchExpressions, or a list of them, got {_short(item)}",
    )


def _alerts(value: object) -> AlertGate:
    if not isinstance(value, dict):
        raise GateError("alerts", f"expected an object with prometheusURL, got {_short(value)}")
    unknown = sorted(str(k) for k in value if k not in _ALERT_KEYS)
    if unknown:
        expected = ", ".join(sorted(_ALERT_KEYS))
        raise GateError(f"alerts.{unknown[0][:64]}", f"unknown field; expected one of {expected}")
    url = value.get("prometheusURL")
    parts = urllib.parse.urlsplit(url) if isinstance(url, str) and len(url) <= 2048 else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise GateError("alerts.prometheusURL",
                        f"expected an http or https URL, got {_short(url)}")  # fmt: skip
    if parts.query or parts.fragment:
        raise GateError("alerts.prometheusURL", "expected no query and no fragment")
    pattern = value.get("filter", "")
    if not isinstance(pattern, str) or len(pattern) > MAX_FILTER:
        raise GateError("alerts.filter", f"expected a regular expression of at most "
                                         f"{MAX_FILTER} characters")  # fmt: skip
    try:
        re.compile(pattern)
    except re.error as e:
        raise GateError("alerts.filter", f"invalid regular expression: {e}") from None
    flags = {}
    for key in ("matchOnly", "firingOnly"):
        flag = value.get(key, False)
        if not isinstance(flag, bool):
            raise GateError(f"alerts.{key}", f"expected true or false, got {_short(flag)}")
        flags[key] = flag
    return AlertGate(str(url), pattern, flags["matchOnly"], flags["firingOnly"])


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 64 else text[:60] + "...'"


# -- what holds the rollout now ---------------------------------------------------------------


def active_alerts(answer: Mapping[str, Any], gate: AlertGate) -> tuple[str, ...]:
    """The names of the alerts that hold the pool, from Prometheus' answer to the instant
    query ``ALERTS`` (kured's ``ActiveAlerts``: a sample with ``alertname`` and a value other
    than 0), sorted, each once. ValueError: not such an answer."""
    data = answer.get("data") if answer.get("status") == "success" else None
    if not isinstance(data, Mapping) or data.get("resultType") != "vector":
        raise ValueError(f"unexpected answer to the query ALERTS: {_short(answer)[:200]}")
    names = set()
    for sample in data.get("result") or []:
        metric = sample.get("metric") if isinstance(sample, Mapping) else None
        value = sample.get("value") if isinstance(sample, Mapping) else None
        if not isinstance(metric, Mapping) or not isinstance(metric.get("alertname"), str):
            continue
        try:
            nonzero = float(value[1]) != 0 if isinstance(value, list) else False
        except (IndexError, TypeError, ValueError):
            nonzero = False
        if nonzero and gate.counts(metric["alertname"], str(metric.get("alertstate", ""))):
            names.add(metric["alertname"])
    return tuple(sorted(names))


def blocking_pods(
    pods: Sequence[Mapping[str, Any]], selectors: Sequence[Mapping[str, Any]]
) -> tuple[str, ...]:
    """The pods (``namespace/name``, sorted) that block their node: matching any selector,
    and not Succeeded, Failed or Unknown (kured's field selector)."""
    out = []
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in DONE_PHASES:
            continue
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        if any(selector_matches(s, labels) for s in selectors):
            out.append(f"{meta.get('namespace', '')}/{meta.get('name', '')}")
    return tuple(sorted(out))


def _names(names: Sequence[str]) -> str:
    more = len(names) - SHOWN
    return ", ".join(names[:SHOWN]) + (f" and {more} more" if more > 0 else "")


def alerts_message(gate: AlertGate, names: Sequence[str]) -> str:
    noun = "alert" if len(names) == 1 else "alerts"
    return (f"{len(names)} active {noun} in Prometheus {shown_url(gate.url)}: {_names(names)}; "
            "no node of the pool is drained or rebooted until they resolve")  # fmt: skip


def unreachable_message(gate: AlertGate, error: str) -> str:
    return (f"Prometheus {shown_url(gate.url)} did not answer the query ALERTS "
            f"({printable(error)[:200]}); no node of the pool is drained or rebooted until "
            "it does")  # fmt: skip


def pods_message(blocked: Mapping[str, Sequence[str]]) -> str:
    """``node a: pods ns/x, ns/y; node b: ...``: the nodes passed over for their pods."""
    lines = [f"node {n}: pods {_names(list(p))}" for n, p in sorted(blocked.items())[:SHOWN]]
    more = len(blocked) - SHOWN
    tail = f"; and {more} more nodes" if more > 0 else ""
    return ("blocking pods hold " + "; ".join(lines) + tail +
            " (the other nodes are taken instead)")  # fmt: skip
