"""When the agent's worker syncs next, and from which Node (the level-triggered wake-ups).

The worker wakes for:

* a Node version that differs from what the agent last knew in anything the agent answers
  for (:data:`WAKE_KEYS`, and the uid: a Node registered again), unless the version is the
  agent's own write;
* :meth:`Wakeups.wake` (a drift cleared, the force file, a MachineConfig created, a retarget);
* a drift report from the monitor (with the monitor's epoch, so that a report from before
  an update is not taken for a drift of the config the update brought);
* a retry that falls due (backoff); a wake-up never cancels it, only a sync that succeeded
  from the newest Node does;
* an alarm that falls due (:meth:`Wakeups.alarm`: the deadline of a try, so that its revert
  lands at the deadline, not at the next resync); each deadline fires once;
* the periodic resync, which also asks for the Node to be read afresh.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from mcd.cluster.api import Obj
from mcd.cluster.node import annotations_of
from mcd.cluster.watch import Backoff
from mcd.model.node.health import RETRY_ANNOTATION
from mcd.model.reboots.requests import REQUESTED_ANNOTATION
from mcd.model.vocabulary import Annotation

WAKE_KEYS = (
    Annotation.DESIRED_CONFIG,
    Annotation.CURRENT_CONFIG,
    Annotation.STATE,
    Annotation.REASON,
    Annotation.DESIRED_DRAIN,
    Annotation.LAST_APPLIED_DRAIN,
    Annotation.DESIRED_IMAGE,  # image mode: the controller may change the image alone
    Annotation.CURRENT_IMAGE,
    RETRY_ANNOTATION,  # a resumed rollout asks for the health gate again
    REQUESTED_ANNOTATION,  # the controller gives the node a slot for its OS reboot
)


def wake_key(node: Obj) -> tuple[str, ...]:
    annotations = annotations_of(node)
    uid = str((node.get("metadata") or {}).get("uid") or "")
    return (uid, *(annotations.get(k, "") for k in WAKE_KEYS))


@dataclass
class Wakeup:
    """What the worker was woken for: a drift report, or a sync (``refresh``: read the Node
    afresh first)."""

    node: Obj | None
    drift: str | None = None
    drift_epoch: int = 0
    refresh: bool = False


class Wakeups:
    def __init__(self, backoff: Backoff, resync_interval: float) -> None:
        self.backoff = backoff
        self.resync_interval = resync_interval
        self._cond = threading.Condition()
        self._node: Obj | None = None
        self._key: tuple[str, ...] | None = None
        self._dirty = False
        self._drift: str | None = None
        self._drift_epoch = 0
        self._retry_at: float | None = None
        self._alarm_at: float | None = None
        self._alarm_for: float | None = None
        self._resync_at = time.monotonic() + resync_interval

    def node(self, node: Obj, own_write: bool) -> None:
        with self._cond:
            self._node = node
            key = wake_key(node)
            if key != self._key:
                self._key = key
                if not own_write:  # the agent's own write needs no second look
                    self._dirty = True
                    self._cond.notify()

    def wake(self) -> None:
        """Sync now, whatever the backoff says (the cause of a failure may be gone)."""
        with self._cond:
            self.backoff.reset()
            self._dirty = True
            self._cond.notify()

    def drift(self, reason: str, epoch: int) -> None:
        with self._cond:
            self._drift, self._drift_epoch = reason, epoch
            self._cond.notify()

    def retry_later(self) -> float:
        delay = self.backoff.next()
        with self._cond:
            self._retry_at = time.monotonic() + delay
        return delay

    def settled(self) -> None:
        """A sync succeeded from the newest Node: no retry is owed."""
        self.backoff.reset()
        with self._cond:
            self._retry_at = None

    def alarm(self, at: float | None) -> None:
        """Sync at ``at`` (seconds since the epoch; None: no alarm). Setting the deadline
        already set (pending or spent) changes nothing: a deadline fires once."""
        with self._cond:
            if at == self._alarm_for:
                return
            self._alarm_for = at
            self._alarm_at = None if at is None else time.monotonic() + (at - time.time())
            self._cond.notify()

    def next(self, stop: threading.Event) -> Wakeup:
        """Block until there is something to do (or ``stop`` is set)."""
        refresh = False
        with self._cond:
            while not stop.is_set():
                now = time.monotonic()
                if self._drift is not None or self._dirty:
                    break
                if self._retry_at is not None and now >= self._retry_at:
                    self._retry_at = None  # only a retry that fires is spent
                    break
                if self._alarm_at is not None and now >= self._alarm_at:
                    self._alarm_at = None  # spent: the same deadline does not fire again
                    break
                if now >= self._resync_at:
                    refresh = True
                    break
                due = [t for t in (self._retry_at, self._alarm_at) if t is not None]
                wait = min([1.0, *(t - now for t in due)])
                self._cond.wait(max(wait, 0.01))
            drift, self._drift = self._drift, None
            self._dirty = False
            self._resync_at = time.monotonic() + self.resync_interval
            return Wakeup(self._node, drift, self._drift_epoch, refresh)
