"""A pool's drain settings: the annotation ``mcd-project.github.io/drain-timeout`` on a
MachineConfigPool (``90m``, ``2h``, ``1h30m``; at most 7 days) sets how long its nodes' drains
may fail before the drain controller reports ``DrainFailed`` and ``mcc_drain_err`` (upstream's
fixed 1 hour otherwise). A value that cannot be used is said in the pool's ``DrainTimeout``
condition, naming the annotation; the default then applies."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from mcd.model.drain.cadence import Cadence, go_duration

DRAIN_TIMEOUT_ANNOTATION = "mcd-project.github.io/drain-timeout"
MAX_TIMEOUT = 7 * 24 * 3600.0
_DURATION = re.compile(r"^(?:(\d{1,9})d)?(?:(\d{1,9})h)?(?:(\d{1,9})m)?(?:(\d{1,9})s)?$")


@dataclass(frozen=True)
class DrainSettings:
    timeout: float
    set: bool  # the annotation is there (valid or not)
    error: str  # why it cannot be used; '' when it can

    def describe(self) -> str:
        if self.error:
            return self.error
        return (
            f"drains of this pool's nodes are reported failed (DrainFailed, mcc_drain_err) after "
            f"{go_duration(self.timeout)} (annotation {DRAIN_TIMEOUT_ANNOTATION})"
        )


def drain_settings(annotations: Mapping[str, str], default: Cadence | None = None) -> DrainSettings:
    fallback = (default or Cadence()).timeout
    value = annotations.get(DRAIN_TIMEOUT_ANNOTATION)
    if value is None:
        return DrainSettings(fallback, False, "")
    try:
        return DrainSettings(parse_timeout(value), True, "")
    except ValueError as e:
        error = (
            f"annotation {DRAIN_TIMEOUT_ANNOTATION}: {e}; "
            f"the default {go_duration(fallback)} applies"
        )
        return DrainSettings(fallback, True, error)


def parse_timeout(value: object) -> float:
    """Seconds from ``90m``, ``2h``, ``1h30m``, ``1d``; ValueError names what is wrong."""
    text = value.strip() if isinstance(value, str) and len(value) <= 64 else ""
    match = _DURATION.match(text) if text else None
    if match is None or not any(match.groups()):
        raise ValueError(f"expected a duration such as 90m, 2h or 1h30m, got {_short(value)}")
    d, h, m, s = (int(g or 0) for g in match.groups())
    seconds = float(((d * 24 + h) * 60 + m) * 60 + s)
    if not 0 < seconds <= MAX_TIMEOUT:
        raise ValueError(f"must be more than 0 and at most 7 days, got {_short(value)}")
    return seconds


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 64 else text[:60] + "...'"
