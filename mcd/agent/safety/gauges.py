"""The node's safety state as metrics, read at each scrape: a reboot owed in this boot
(``mcd_reboot_required``, kured's gauge) and an update on trial (``mcd_try_pending``); and the
last update's duration exported again at agent start."""

from __future__ import annotations

from collections.abc import Callable

from mcd.agent.report import timing
from mcd.agent.report.metrics import Metrics
from mcd.agent.safety import owed, trymode
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


def watch_node(metrics: Metrics, root: Root, boot_id: Callable[[], str]) -> None:
    metrics.watch_node(lambda: reboot_owed(root, boot_id), lambda: on_trial(root))
    timing.restore(root, metrics)
