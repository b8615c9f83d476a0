"""Health gates, the pure part: settings, check results, the verdict and its words.

After an update's actions (rebootless) or after the boot into a new config (reboot), mcd runs
a gate of health checks; a gate that fails rolls the node back to its previous config
(:mod:`mcd.agent.safety.health`). This module holds what needs no I/O: parsing the gate's settings
from their three sources (a Node annotation, a MachineConfigPool annotation, a file under the
root), a check's result and the gate's verdict, the Degraded reason, the summary of a check's
output (bounded, control characters escaped), and the boot counter's arithmetic that keeps a
broken reboot update from looping.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from mcd.model.errors import ConfigError
from mcd.model.text import printable
from mcd.model.vocabulary import Annotation, NodeState

GATE_ANNOTATION = "mcd-project.github.io/health-gate"
"""On a Node or a MachineConfigPool: the gate's settings, ``key=value`` pairs separated by
commas (``enabled=false``, ``timeout=120,settle=2``); ``off`` alone turns the gate off."""

TRY_ANNOTATION = "mcd-project.github.io/try"
"""On a Node: apply the next config in try mode for this long (``10m``); reverted unless
confirmed."""

STATE_ANNOTATION = "mcd-project.github.io/health-gate-state"
"""Written by the agent on its Node: the last gate's result, as JSON (``config``, ``result``,
``check`` when one failed, ``time``); ``mcd status`` shows it."""

RETRY_ANNOTATION = "mcd-project.github.io/health-gate-retry"
"""Written by the controller on a Node when a halted rollout is resumed (the pool's
``rollout-halted`` annotation removed): ``{"config": ..., "time": ...}``, run the health gate
of ``config`` again. The agent honours each request once (its gate counter for that config
starts afresh) and echoes it as ``retry`` in the gate's next ``health-gate-state``: a verdict
given after the resume. Until then the controller does not count the node's earlier failure."""

SETTINGS_FILE = "/etc/mcd/health.conf"
"""The node's own settings: ``key = value`` lines, ``#`` comments."""

REQUIRED_DIR = "/etc/mcd/health.d/required.d"
"""Admin-defined required checks: every executable regular file here is run, in name order."""

KUBELET_HEALTHZ = "http://localhost:10248/healthz"

SUMMARY_LINES = 3
SUMMARY_CHARS = 400


class Status(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class GateSettings:
    enabled: bool = True
    timeout: float = 60.0
    """Seconds the kubelet check and the Node Ready check wait for success."""
    check_timeout: float = 30.0
    """Seconds a required check may run (a check's own ``<name>.timeout`` file overrides it)."""
    settle: float = 1.0
    """Seconds waited before the units are looked at, so a unit that dies at once is seen dead."""
    kubelet_url: str = KUBELET_HEALTHZ
    max_boots: int = 3
    """Boots into a config whose gate fails before mcd stops rolling back and stays Degraded."""
    source: str = "defaults"


_FIELDS = ("enabled", "timeout", "check_timeout", "settle", "kubelet_url", "max_boots")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _seconds(value: str, origin: str, key: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0 or seconds > 86400:
        raise ConfigError(f"{origin}: {key}: want seconds between 0 and 86400, have {value!r}")
    return seconds


def apply_pairs(base: GateSettings, pairs: Mapping[str, str], origin: str) -> GateSettings:
    """``base`` with the given ``key: value`` settings; an unknown key or a bad value is a
    :class:`ConfigError` naming ``origin`` and the field."""
    changes: dict[str, object] = {}
    for key, raw in pairs.items():
        value = raw.strip()
        if key not in _FIELDS:
            raise ConfigError(f"{origin}: unknown setting {key!r} (known: {', '.join(_FIELDS)})")
        if key == "enabled":
            if value.lower() not in _TRUE + _FALSE:
                raise ConfigError(f"{origin}: enabled: want true or false, have {value!r}")
            changes[key] = value.lower() in _TRUE
        elif key == "kubelet_url":
            if not value.startswith(("http://", "https://")) or len(value) > 512:
                raise ConfigError(f"{origin}: kubelet_url: want an http(s) URL, have {value!r}")
            changes[key] = value
        elif key == "max_boots":
            if not value.isdigit() or not 1 <= int(value) <= 100:
                raise ConfigError(f"{origin}: max_boots: want 1 to 100, have {value!r}")
            changes[key] = int(value)
        else:
            changes[key] = _seconds(value, origin, key)
    if not changes:
        return base
    return replace(base, source=origin, **changes)  # type: ignore[arg-type]


def parse_annotation(base: GateSettings, value: str, origin: str) -> GateSettings:
    """An annotation's value: ``off``/``on``, or ``key=value`` pairs separated by commas."""
    text = value.strip()
    if text.lower() in _TRUE + _FALSE:
        return apply_pairs(base, {"enabled": text}, origin)
    pairs: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, sep, val = item.partition("=")
        if not sep:
            raise ConfigError(f"{origin}: want key=value, have {item!r}")
        pairs[key.strip()] = val
    return apply_pairs(base, pairs, origin)


def parse_file(base: GateSettings, text: str, origin: str) -> GateSettings:
    """The settings file: ``key = value`` lines; blank lines and ``#`` comments ignored."""
    pairs: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, val = line.partition("=")
        if not sep:
            raise ConfigError(f"{origin}:{number}: want key = value")
        pairs[key.strip()] = val
    return apply_pairs(base, pairs, origin)


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: Status
    note: str = ""
    """Why it failed or was skipped, with a summary of its output (never file contents)."""
    seconds: float = 0.0


@dataclass(frozen=True)
class Verdict:
    config: str
    results: tuple[CheckResult, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return self.failed is None

    @property
    def failed(self) -> CheckResult | None:
        return next((r for r in self.results if r.status is Status.FAILED), None)

    def reason(self) -> str:
        """The Degraded reason for a failed gate ('' when it passed)."""
        bad = self.failed
        if bad is None:
            return ""
        return gate_failed(self.config, bad)

    def as_dict(self) -> dict[str, object]:
        return {
            "config": self.config,
            "ok": self.ok,
            "checks": [
                {"name": r.name, "status": str(r.status), "note": r.note,
                 "seconds": round(r.seconds, 3)}
                for r in self.results
            ],
        }  # fmt: skip


def state_annotation(verdict: Verdict, when: str, retry: str = "") -> str:
    """The Node annotation's value for a verdict (names only: never a check's output);
    ``retry``: the retry request (:data:`RETRY_ANNOTATION`) the gate ran after."""
    doc: dict[str, str] = {"config": verdict.config, "result": "passed" if verdict.ok else "failed"}
    if verdict.failed is not None:
        doc["check"] = verdict.failed.name
    doc["time"] = when
    if retry:
        doc["retry"] = retry
    return json.dumps(doc, separators=(",", ":"))


def describe_state(value: str) -> dict[str, str] | None:
    """The annotation read back (None when absent or not ours)."""
    try:
        doc = json.loads(value)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    keys = ("config", "result", "check", "time", "retry")
    return {k: str(v) for k, v in doc.items() if k in keys}


def retry_request(config: str, when: str) -> str:
    """The value of :data:`RETRY_ANNOTATION` asking for ``config``'s gate again."""
    return json.dumps({"config": config, "time": when}, separators=(",", ":"))


def requested_config(value: str | None) -> str:
    """The config a retry request names ('' when absent or not ours)."""
    try:
        doc = json.loads(value or "")
    except ValueError:
        return ""
    config = doc.get("config") if isinstance(doc, dict) else None
    return config if isinstance(config, str) else ""


def retry_pending(annotations: Mapping[str, str], config: str) -> bool:
    """A retry of ``config``'s gate was requested and the node has not answered it yet: its
    failure (Degraded, a failed gate) predates the request and does not count. Answered: a
    verdict that names the request and failed (a fresh failure), or one that passed once the
    node no longer says Degraded (the passing verdict may reach the Node a moment before
    the agent's Done does)."""
    request = annotations.get(RETRY_ANNOTATION) or ""
    if not request or requested_config(request) != config:
        return False
    state = describe_state(annotations.get(STATE_ANNOTATION) or "") or {}
    if state.get("retry") != request:
        return True
    failing = annotations.get(Annotation.STATE) in (NodeState.DEGRADED, NodeState.UNRECONCILABLE)
    return state.get("result") == "passed" and failing


def stale_state(value: str | None, config: str) -> bool:
    """A failed verdict kept on a node now Done on another config (``config``): the node
    moved on (a rollback, a new target), so the failure says nothing about it any more."""
    state = describe_state(value or "") or {}
    return bool(state) and state.get("result") == "failed" and state.get("config") != config


def gate_failed(config: str, check: CheckResult) -> str:
    note = f": {check.note}" if check.note else ""
    return f"health gate failed after update to {config}: check {check.name} failed{note}"


def rolled_back(reason: str, previous: str) -> str:
    """The Degraded reason once the failed gate's rollback is done."""
    return f"{reason}; rolled back to {previous}"


def boots_exhausted(config: str, attempts: int, reason: str) -> str:
    return (
        f"health gate failed {attempts} times after updates to {config}; not trying it again "
        f"until desiredConfig changes or the force file is set: {reason}"
    )


def summarize(output: str, lines: int = SUMMARY_LINES, limit: int = SUMMARY_CHARS) -> str:
    """A check's output in a few words: its first and last lines joined by `` | ``, control
    characters escaped, at most ``limit`` characters."""
    rows = [printable(r.strip()) for r in output.splitlines() if r.strip()]
    if len(rows) > 2 * lines:
        rows = [*rows[:lines], "...", *rows[-lines:]]
    text = " | ".join(rows)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``10m``, ``1h`` in seconds; a :class:`ConfigError` otherwise."""
    value = text.strip().lower()
    units = {"s": 1, "m": 60, "h": 3600}
    scale = units.get(value[-1:], 0)
    number = value[:-1] if scale else value
    try:
        seconds = float(number) * (scale or 1)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0 or seconds > 7 * 86400:
        raise ConfigError(f"invalid duration {text!r}: want e.g. 90s, 10m or 1h (at most 7 days)")
    return seconds


# -- the boot counter ------------------------------------------------------------------------


@dataclass(frozen=True)
class BootCount:
    """Boots into ``config`` whose gate failed, each on its own boot id."""

    config: str
    boot_ids: tuple[str, ...] = ()

    def add(self, config: str, boot_id: str) -> BootCount:
        """The count after a failed gate in ``boot_id`` (one boot counts once; another config
        starts a new count)."""
        if config != self.config:
            return BootCount(config, (boot_id,))
        if boot_id in self.boot_ids:
            return self
        return BootCount(config, (*self.boot_ids, boot_id))

    @property
    def boots(self) -> int:
        return len(self.boot_ids)

    def exhausted(self, limit: int) -> bool:
        return self.boots >= limit

    def as_dict(self) -> dict[str, object]:
        return {"config": self.config, "boot_ids": list(self.boot_ids)}


def boot_count_of(data: Mapping[str, object]) -> BootCount:
    config = data.get("config")
    ids = data.get("boot_ids")
    if not isinstance(config, str) or not isinstance(ids, list):
        raise ConfigError("want config (string) and boot_ids (list)")
    if not all(isinstance(i, str) for i in ids):
        raise ConfigError("boot_ids: want strings")
    return BootCount(config, tuple(str(i) for i in ids))


def enabled_units(units: Sequence[tuple[str, bool | None, bool]]) -> list[str]:
    """The units a config enables, from ``(name, enabled, mask)``; templates are left out
    (``foo@.service`` names no unit that can run)."""
    return sorted({n for n, enabled, mask in units if enabled and not mask and "@." not in n})
