"""``--drain-mode self`` (opt-in): the agent cordons its node, evicts its pods with
:class:`mcd.cluster.drain.evict.Evictor`, and gives up after ``timeout`` with a reason that
names each pod still there and the budget blocking it (the historical upstream MCD-side
drain). Its ServiceAccount then needs to list pods and create evictions cluster-wide
(``daemonset/optional/self-drain-rbac.yaml``): a token of one node could evict any pod.

The node is uncordoned after the update only if mcd did the cordon (the annotation
``mcd-project.github.io/cordoned-by``; ``mcd/cordoned-by``, an older agent's, is read and
removed too): a node an admin cordoned stays so.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from mcd.cluster.api import Kube
from mcd.cluster.drain.errors import DEFAULT_TIMEOUT, DrainAbandoned, DrainError, StillWanted
from mcd.cluster.drain.evict import Evictor
from mcd.cluster.events import EventRecorder, Reason
from mcd.cluster.node import NodeWriter, annotations_of
from mcd.model.drain.report import not_evicted

log = logging.getLogger(__name__)

CORDONED_BY = "mcd-project.github.io/cordoned-by"
"""Set when mcd cordoned the node, so that only mcd's own cordon is undone."""
LEGACY_CORDONED_BY = "mcd/cordoned-by"
"""The same mark as mcd wrote it before its annotations shared one domain: read (a node an
older agent cordoned is still mcd's to uncordon) and removed, never written."""


def cordoned_by(annotations: Mapping[str, str]) -> str | None:
    """The config mcd cordoned the node for (either key); None when mcd did not cordon it."""
    for key in (CORDONED_BY, LEGACY_CORDONED_BY):
        if key in annotations:
            return annotations[key]
    return None


def _marks(config_name: str | None) -> dict[str, str | None]:
    """The annotation writes that leave mcd's mark set to ``config_name`` (None: removed)
    under the current key only (a key already absent costs no write)."""
    return {CORDONED_BY: config_name, LEGACY_CORDONED_BY: None}


def _human(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes}m{secs}s"


class SelfDrainer:
    """Cordon and evict through the API (the historical upstream MCD-side drain)."""

    def __init__(
        self,
        kube: Kube,
        writer: NodeWriter,
        events: EventRecorder | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry_interval: float = 5.0,
        poll_interval: float = 0.5,
        parallelism: int = 16,
        on_blocked: Callable[[str], None] | None = None,
        report_terminating_after: float = 10.0,
    ) -> None:
        self.kube = kube
        self.on_blocked = on_blocked
        self.writer = writer
        self.events = events
        self.timeout = timeout
        self.evictor = Evictor(
            kube,
            writer.node_name,
            retry_interval=retry_interval,
            poll_interval=poll_interval,
            parallelism=parallelism,
            report_terminating_after=report_terminating_after,
        )

    @property
    def node_name(self) -> str:
        return self.writer.node_name

    @property
    def evictions(self) -> int:
        return self.evictor.evictions

    def cordon(self, config_name: str) -> None:
        node = self.writer.current()
        mine = cordoned_by(annotations_of(node)) is not None
        if (node.get("spec") or {}).get("unschedulable") and not mine:
            log.info(
                "Node %s was already cordoned by someone else; it will stay cordoned",
                self.node_name,
            )
            return
        self.writer.set_unschedulable(True, _marks(config_name))
        if self.events:
            self.events.record(Reason.CORDON, "Cordoned node to apply update")

    def drain(self, config_name: str, still_wanted: StillWanted | None = None) -> None:
        start = time.monotonic()
        self.cordon(config_name)
        if self.events:
            self.events.record(Reason.DRAIN, "Draining node to update config.")
        pods = self.evictor.pods().evict
        log.info("Draining node %s: %d pod(s) to evict", self.node_name, len(pods))
        outcome = self.evictor.evict(
            pods, start + self.timeout, still_wanted, on_blocked=self._report_blocked
        )
        if outcome.abandoned:
            log.info("Drain of node %s for %s abandoned: %s",
                     self.node_name, config_name, outcome.abandoned)  # fmt: skip
            raise DrainAbandoned(outcome.abandoned)
        if outcome.left:
            message = not_evicted(self.node_name, _human(self.timeout), outcome.left)
            if self.events:
                self.events.record(Reason.FAILED_TO_DRAIN, message)
            raise DrainError(message)
        log.info("drain complete; Successful drain took %.3f seconds", time.monotonic() - start)

    def _report_blocked(self, summary: str) -> None:
        """Say which pods hold the drain, and why, while it still retries or waits."""
        if self.on_blocked is None or not summary:
            return
        if "evicted, still terminating" in summary and "blocked" not in summary:
            self.on_blocked(f"drain of node {self.node_name} waiting for pods to terminate: "
                            f"{summary}")  # fmt: skip
        else:
            self.on_blocked(f"drain of node {self.node_name} blocked, retrying: {summary}")

    def uncordon(self, config_name: str) -> None:
        node = self.writer.current()
        if cordoned_by(annotations_of(node)) is None:
            if (node.get("spec") or {}).get("unschedulable"):
                log.info("Leaving node %s cordoned: mcd did not cordon it", self.node_name)
            return
        self.writer.set_unschedulable(False, _marks(None))
        if self.events:
            self.events.record(
                Reason.UNCORDON,
                f"Update completed for config {config_name} and node has been uncordoned",
            )
