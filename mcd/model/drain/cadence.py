"""When a failing drain is tried again, and when it is reported (upstream's drain controller,
``pkg/controller/drain``).

One attempt evicts for at most ``attempt`` seconds (the drain helper's 90 s timeout; a 429
from a PodDisruptionBudget is retried every ``evict_retry`` seconds within it). A failed
attempt is tried again after ``retry`` (1 minute); once the drain has been failing for more
than ``slow_after`` (10 minutes) after ``slow_retry`` (5 minutes), with the Warning Event
``DrainThresholdExceeded``. An attempt that starts more than ``timeout`` (1 hour, or the
pool's ``mcd-project.github.io/drain-timeout``) after the drain began records ``DrainFailed``
and sets ``mcc_drain_err{node}`` to 1; the drain is still retried. Times are seconds on any
monotonic clock: the caller passes ``now``.
"""

from __future__ import annotations

from dataclasses import dataclass

THRESHOLD_EXCEEDED = "DrainThresholdExceeded"
DRAIN_FAILED = "DrainFailed"


@dataclass(frozen=True)
class Cadence:
    retry: float = 60.0
    slow_after: float = 600.0
    slow_retry: float = 300.0
    timeout: float = 3600.0
    attempt: float = 90.0
    evict_retry: float = 5.0


@dataclass(frozen=True)
class AttemptStart:
    elapsed: float  # since the drain began (0 for a new drain)
    timed_out: bool  # record DrainFailed and set mcc_drain_err
    message: str  # for DrainFailed; '' otherwise


@dataclass(frozen=True)
class Retry:
    delay: float  # seconds until the next attempt
    threshold_exceeded: bool  # record DrainThresholdExceeded
    message: str  # the log line, and the Event's message when threshold_exceeded


def attempt_start(cadence: Cadence, node: str, began: float | None, now: float) -> AttemptStart:
    """An attempt begins at ``now``; the drain began at ``began`` (None: it begins now)."""
    elapsed = 0.0 if began is None else max(0.0, now - began)
    if began is not None and elapsed > cadence.timeout:
        message = (
            f"node {node}: drain exceeded timeout: {go_duration(cadence.timeout)}. "
            "Will continue to retry."
        )
        return AttemptStart(elapsed, True, message)
    return AttemptStart(elapsed, False, "")


def after_failure(cadence: Cadence, elapsed: float, error: str) -> Retry:
    """The attempt that started ``elapsed`` seconds into the drain failed with ``error``."""
    if elapsed > cadence.slow_after:
        message = (
            f"Drain failed. Drain has been failing for more than {go_minutes(cadence.slow_after)} "
            f"minutes. Waiting {go_minutes(cadence.slow_retry)} minutes then retrying. "
            f"Error message from drain: {error}"
        )
        return Retry(cadence.slow_retry, True, message)
    message = (
        f"Drain failed. Waiting {go_minutes(cadence.retry)} minute then retrying. "
        f"Error message from drain: {error}"
    )
    return Retry(cadence.retry, False, message)


def go_minutes(seconds: float) -> str:
    """Go's ``%v`` of ``Duration.Minutes()``: 10, 1.5, 0.25."""
    return f"{seconds / 60:g}"


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String()`` for whole and fractional seconds: 1h0m0s, 1m30s, 1.5s."""
    if seconds == 0:
        return "0s"
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    frac = seconds - whole
    sec_text = f"{secs + frac:g}s" if frac else f"{secs}s"
    if hours:
        return f"{hours}h{minutes}m{sec_text}"
    if minutes:
        return f"{minutes}m{sec_text}"
    return sec_text
