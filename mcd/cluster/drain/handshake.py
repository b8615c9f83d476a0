"""``--drain-mode controller`` (the DaemonSet's default): the upstream handshake. The agent
sets ``desiredDrain`` to ``drain-<config>`` (``uncordon-<config>``) and waits for the drain
controller (``mcd controller``, or upstream's machine-config-controller) to echo it in
``lastAppliedDrain``. The agent evicts nothing and needs no right on pods.
"""

from __future__ import annotations

import logging
import time

from mcd.cluster.drain.errors import DEFAULT_TIMEOUT, DrainAbandoned, DrainError, StillWanted
from mcd.cluster.events import EventRecorder, Reason
from mcd.cluster.node import NodeWriter, annotations_of
from mcd.model.vocabulary import Annotation, drain_request, uncordon_request

log = logging.getLogger(__name__)


UNCORDON_TIMEOUT = 600.0
"""Upstream waits 10 minutes for the controller to confirm an uncordon."""


def _duration(seconds: float) -> str:
    """``10 minutes``, ``1 hour``, ``3 seconds``: the wait as upstream's messages say it."""
    for unit, size in (("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds:g} second{'s' if seconds != 1 else ''}"


def _failed(events: EventRecorder | None, reason: Reason, message: str) -> DrainError:
    """The error to raise, once the Warning event saying the same has been recorded."""
    if events:
        events.record(reason, message)
    return DrainError(message)


class ControllerDrainer:
    """The upstream handshake: the controller answers ``desiredDrain`` in ``lastAppliedDrain``."""

    def __init__(
        self,
        writer: NodeWriter,
        events: EventRecorder | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        poll_interval: float = 10.0,
    ) -> None:
        self.writer = writer
        self.events = events
        self.timeout = timeout
        self.poll_interval = poll_interval

    def drain(self, config_name: str, still_wanted: StillWanted | None = None) -> None:
        request = drain_request(config_name)
        if annotations_of(self.writer.get()).get(Annotation.LAST_APPLIED_DRAIN) == request:
            log.info("drain is already completed on this node")
            return
        log.info("Update prepared; requesting cordon and drain via annotation to controller")
        if self.events:
            self.events.record(Reason.CORDON, "Cordoned node to apply update")
            self.events.record(Reason.DRAIN, "Draining node to update config.")
        self.writer.set_annotations({Annotation.DESIRED_DRAIN: request})
        if not self._wait(request, still_wanted):
            message = (
                f"failed to drain node: {self.writer.node_name} after {_duration(self.timeout)}. "
                "Please see "
                "machine-config-controller logs for more information"
            )
            raise _failed(self.events, Reason.FAILED_TO_DRAIN, message)
        log.info("drain complete")

    def uncordon(self, config_name: str) -> None:
        """Upstream's ``performDrain`` uncordon half: at most 10 minutes (less with a shorter
        ``--drain-timeout``), then ``FailedToUncordon`` with upstream's text."""
        request = uncordon_request(config_name)
        self.writer.set_annotations({Annotation.DESIRED_DRAIN: request})
        timeout = min(self.timeout, UNCORDON_TIMEOUT)
        if not self._wait(request, timeout=timeout):
            message = (
                f"failed to uncordon node: {self.writer.node_name} after {_duration(timeout)}. "
                "Please see machine-config-controller logs for more information"
            )
            raise _failed(self.events, Reason.FAILED_TO_UNCORDON, message)

    def _wait(
        self, request: str, still_wanted: StillWanted | None = None, timeout: float | None = None
    ) -> bool:
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            if annotations_of(self.writer.get()).get(Annotation.LAST_APPLIED_DRAIN) == request:
                return True
            if time.monotonic() >= deadline:
                return False
            why = still_wanted() if still_wanted is not None else ""
            if why:
                log.info("Drain request %s abandoned: %s", request, why)
                raise DrainAbandoned(why)
            time.sleep(self.poll_interval)
