"""The node's safety state as metrics, read at each scrape: a reboot owed in this boot or
one the OS asks for (``mcd_reboot_required``, kured's gauge) and an update on trial
(``mcd_try_pending``); and, at agent start, what an agent before a reboot knew: the last
health gate's verdict (``mcd_health_gate_failed``: a gate that failed after the boot into a
new config rolls back and reboots, so the agent that reports it is the next one) and the last
update's duration."""

from __future__ import annotations

from collections.abc import Callable

from mcd.agent.report import timing
from mcd.agent.report.metrics import Metrics
from mcd.agent.safety import owed, trymode
from mcd.agent.safety.health import last_verdict
from mcd.host.rootfs import Root


def reboot_owed(root: Root, boot_id: Callable[[], str]) -> bool:
    """A reboot owed since this boot (the record of an earlier boot is a reboot that
    happened; the next boot check clears it)."""
    record = owed.load(root)
    return record is not None and record.boot_id == boot_id()


def on_trial(root: Root) -> bool:
    try:
        return trymode.load(root) is not None
    except trymode.TryError:
        return True  # a try state that cannot be read is still a try to resolve


def watch_node(
    metrics: Metrics, root: Root, boot_id: Callable[[], str],
    os_asks: Callable[[], bool] = lambda: False,
) -> None:  # fmt: skip
    """``os_asks``: the node's OS asks for a reboot (:mod:`mcd.agent.boot.osreboot`): the
    gauge says 1 for it too."""
    metrics.watch_node(lambda: reboot_owed(root, boot_id) or os_asks(), lambda: on_trial(root))
    timing.restore(root, metrics)
    verdict = last_verdict(root)
    if verdict is not None and isinstance(verdict.get("ok"), bool):
        metrics.health_gate_failed.set(0 if verdict["ok"] else 1)
