"""SIGTERM protection while an update runs (upstream ``catchIgnoreSIGTERM``).

A SIGTERM that arrives during an update is not acted on until the update step
ends: the agent records a ``GotSigtermDuringUpdate`` Warning and stops once the
protection is lifted. Lifting it before a reboot lets the reboot's own SIGTERM
stop the agent at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from mcd.cluster.events import EventRecorder, Reason

log = logging.getLogger(__name__)


class SigtermGuard:
    def __init__(self, events: EventRecorder | None) -> None:
        self.events = events
        self._lock = threading.Lock()
        self.active = False
        self.deferred = False

    @contextmanager
    def protect(self) -> Iterator[None]:
        with self._lock:
            self.active = True
        self._record(Reason.ADD_SIGTERM_PROTECTION, "Adding SIGTERM protection")
        try:
            yield
        finally:
            self.release()

    def release(self) -> None:
        with self._lock:
            was_active, self.active = self.active, False
        if was_active:
            self._record(Reason.REMOVE_SIGTERM_PROTECTION, "Removing SIGTERM protection")

    def sigterm(self) -> bool:
        """Called on SIGTERM: True when the agent may stop now, False when it is deferred."""
        with self._lock:
            if not self.active:
                return True
            self.deferred = True
        log.warning("Got SIGTERM, but actively updating")
        self._record(Reason.GOT_SIGTERM_DURING_UPDATE, "Got SIGTERM but actively updating")
        return False

    def _record(self, reason: Reason, message: str) -> None:
        if self.events is not None:
            self.events.record(reason, message)
