"""A pool waiting for its maintenance window says so where ``kubectl get mcp -w`` and
``kubectl get events -w`` show it: the ``Updating`` message names the nodes held
(:func:`mcd.model.pool.rollout.calculate_status`), and one Event a window and target
(``WaitingForMaintenanceWindow``: how many nodes wait for which config, and when the window
opens)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from mcd.cluster.api import Obj
from mcd.cluster.pools import PoolWriter
from mcd.model.pool.pools import name_of, target_of
from mcd.model.pool.rollout import Rollout
from mcd.model.pool.windows import WindowState

log = logging.getLogger(__name__)

WAITING = "WaitingForMaintenanceWindow"


@dataclass
class WindowWaits:
    """What each pool was last told about its window (the Event goes once a window and
    target)."""

    _told: dict[str, tuple[str, str]] = field(default_factory=dict)

    def __call__(
        self, writer: PoolWriter, pool: Obj, rollout: Rollout, window: WindowState | None
    ) -> None:
        name, target = name_of(pool), target_of(pool)
        if window is None or window.open or not rollout.held:
            self._told.pop(name, None)
            return
        key = (target, window.describe())
        if self._told.get(name) == key:
            return
        self._told[name] = key
        noun = "node waits" if len(rollout.held) == 1 else "nodes wait"
        message = (f"{len(rollout.held)} {noun} for the maintenance window to update to "
                   f"{target} ({window.describe()})")  # fmt: skip
        log.info("Pool %s: %s", name, message)
        writer.event(pool, WAITING, message)
