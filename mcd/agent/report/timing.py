"""How long an update takes, across the reboot in the middle of one.

The start of an update (the node set ``Working``) is kept in
``/etc/machine-config-daemon/update-timing.json`` (the config, the kind, the wall-clock
start; no config content), so the agent that starts after the reboot can say how long the
whole update took when it reports ``Done``: ``mcd_update_duration_seconds{kind}`` and
``mcd_update_last_duration_seconds{kind}`` (the last one is kept in the same file and
exported again by every later agent start). A retry of the same config keeps the first
start: the duration is how long the node took to get there. Timing is bookkeeping: a file
that cannot be read or written is logged and never fails an update.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from mcd.agent.report.metrics import Metrics
from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.fs.sealing import STATE_FILE_MODE
from mcd.host.rootfs import Root
from mcd.model.planning.plan import UpdatePlan

log = logging.getLogger(__name__)

TIMING = "/etc/machine-config-daemon/update-timing.json"

Clock = Callable[[], float]


def kind_of(plan: UpdatePlan) -> str:
    """``os`` (the OS image, kernel arguments, kernel type or extensions change), ``reboot``,
    ``drain`` (drained, no reboot) or ``rebootless``."""
    d = plan.diff
    if d.os_update or d.kargs or d.kernel_type or d.extensions:
        return "os"
    if plan.reboot:
        return "reboot"
    return "drain" if plan.drain else "rebootless"


def _load(root: Root) -> dict[str, Any]:
    try:
        data = json.loads(root.read_bytes(TIMING))
    except FileNotFoundError:
        return {}
    except (OSError, HostError, ValueError) as e:
        log.warning("Ignoring unreadable %s: %s", TIMING, e)
        return {}
    return data if isinstance(data, dict) else {}


def _save(root: Root, data: dict[str, Any]) -> None:
    try:
        fsops.write_file(root, TIMING, json.dumps(data).encode(), mode=STATE_FILE_MODE)
    except (OSError, HostError) as e:
        log.warning("Could not record the update's timing in %s: %s", TIMING, e)


def restore(root: Root, metrics: Metrics) -> None:
    """At agent start: export the last completed update's duration again."""
    last = _load(root).get("last")
    if isinstance(last, dict) and isinstance(last.get("seconds"), int | float):
        metrics.last_update(str(last.get("kind", "")), float(last["seconds"]))


def started(root: Root, config: str, kind: str, clock: Clock = time.time) -> None:
    """The update to ``config`` starts now (kept if one to the same config already started)."""
    data = _load(root)
    pending = data.get("pending")
    if isinstance(pending, dict) and pending.get("config") == config:
        return
    data["pending"] = {"config": config, "kind": kind, "started": clock()}
    _save(root, data)


def finished(root: Root, metrics: Metrics, config: str, clock: Clock = time.time) -> float | None:
    """The node is Done on ``config``: observe the update's duration (None when no update
    to ``config`` was timed, e.g. a restart with nothing to do)."""
    data = _load(root)
    pending = data.get("pending")
    if not isinstance(pending, dict) or pending.get("config") != config:
        return None
    start = pending.get("started")
    if not isinstance(start, int | float):
        return None
    seconds = max(0.0, clock() - float(start))
    kind = str(pending.get("kind") or "rebootless")
    metrics.update_finished(kind, seconds)
    data = {"last": {"config": config, "kind": kind, "seconds": seconds, "finished": clock()}}
    _save(root, data)
    log.info("Update to %s (%s) took %.1fs", config, kind, seconds)
    return seconds
