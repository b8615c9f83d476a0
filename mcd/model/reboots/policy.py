"""The rollout policy's OS reboot keys (beside the canary's, in the same annotation
``mcd-project.github.io/rollout-policy``). Pure.

* ``osReboots``: ``true`` lets the controller give the pool's nodes whose OS asks for a
  reboot a slot for it (default ``false``: the wish is only reported);
* ``osRebootInterval``: the least time between two OS reboots in the pool (``30m``, ``1h``;
  default none); with it, one OS reboot at a time, the next only that long after the last
  one ended.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcd.model.errors import ConfigError
from mcd.model.node.health import parse_duration

OS_REBOOTS = "osReboots"
INTERVAL = "osRebootInterval"
KEYS = frozenset({OS_REBOOTS, INTERVAL})


class RebootPolicyError(ValueError):
    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(field_name, message)
        self.field_name, self.message = field_name, message


@dataclass(frozen=True)
class RebootPolicy:
    enabled: bool = False
    interval: float = 0.0
    """Seconds (0: none)."""

    def describe(self) -> str:
        if not self.enabled:
            return "OS reboots not scheduled"
        if not self.interval:
            return "OS reboots scheduled"
        return f"OS reboots scheduled, at least {_span(self.interval)} apart"


def _span(seconds: float) -> str:
    whole = int(seconds)
    if whole % 3600 == 0:
        return f"{whole // 3600}h"
    if whole % 60 == 0:
        return f"{whole // 60}m"
    return f"{whole}s"


def reboot_policy(doc: Mapping[str, Any]) -> RebootPolicy:
    """The OS reboot keys of a parsed rollout policy object; :class:`RebootPolicyError`
    names the field that cannot be used."""
    enabled = doc.get(OS_REBOOTS, False)
    if not isinstance(enabled, bool):
        raise RebootPolicyError(OS_REBOOTS, f"expected true or false, got {str(enabled)[:40]!r}")
    interval = 0.0
    if INTERVAL in doc:
        value = doc[INTERVAL]
        try:
            interval = parse_duration(value) if isinstance(value, str) else -1.0
        except ConfigError:
            interval = -1.0
        if interval <= 0:
            expected = "expected a duration such as 90s, 30m or 1h (at most 7 days)"
            raise RebootPolicyError(INTERVAL, f"{expected}, got {str(value)[:40]!r}")
    return RebootPolicy(enabled, interval)
