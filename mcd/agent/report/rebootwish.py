"""What the node's OS asks for: a reboot (:mod:`mcd.host.checks.sentinel`), looked at on
every sync and every ``period`` seconds by its own thread. Kept in memory: the gauge
``mcd_reboot_required`` reads it at each scrape; the sync puts it on the Node and its
MachineConfigNode (:mod:`mcd.agent.sync.osreboot`). The agent never reboots for it on its
own: the controller gives the node a slot."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from mcd.host.checks.sentinel import reboot_required
from mcd.host.rootfs import Root
from mcd.model.reboots.requests import DEFAULT_SENTINEL

log = logging.getLogger(__name__)


@dataclass
class RebootWish:
    root: Root
    sentinel: str = DEFAULT_SENTINEL
    command: str = ""
    period: float = 60.0
    source: str = ""
    """What asks for a reboot now ('' when nothing does)."""
    since: str = ""
    """When the agent first saw it ask (RFC 3339, UTC)."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def check(self) -> str:
        """Look again; what asks now ('' when nothing does). Logged when it changes."""
        source = reboot_required(self.root, self.sentinel, self.command)
        with self._lock:
            if source == self.source:
                return source
            before, self.source = self.source, source
            self.since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) if source else ""
        if source:
            log.info("The OS asks for a reboot (%s); waiting for the controller's slot", source)
        elif before:
            log.info("The OS no longer asks for a reboot (%s is gone)", before)
        return source

    def keep(self, since: str) -> None:
        """``since`` from the Node's annotation: the wish was seen before this agent started."""
        with self._lock:
            if self.source and since:
                self.since = min(self.since, since)

    def watch(self, stop: threading.Event, changed: Callable[[], None]) -> None:
        """Look now and every ``period`` seconds; ``changed()`` when the answer changes."""
        while not stop.is_set():
            before = self.source
            try:
                if self.check() != before:
                    changed()
            except Exception:  # a check that breaks must not end the thread
                log.exception("Looking for a reboot the OS asks for failed")
            stop.wait(self.period)
