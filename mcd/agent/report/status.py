"""What the agent reports on its Node: ``state``, ``reason``, ``currentConfig``, and the
matching ``mcd_state`` metric (upstream ``SetDone``/``SetWorking``/``SetDegraded``)."""

from __future__ import annotations

import logging

from mcd.agent.report.metrics import Metrics
from mcd.cluster.api import Obj
from mcd.cluster.node import NodeWriter, annotations_of
from mcd.model.text import goquote, printable
from mcd.model.vocabulary import Annotation, NodeState

log = logging.getLogger(__name__)


def node_state(node: Obj) -> str:
    """The node's ``state``; missing or empty counts as Done, as upstream."""
    return annotations_of(node).get(Annotation.STATE) or NodeState.DONE


class NodeStatus:
    def __init__(self, writer: NodeWriter, metrics: Metrics) -> None:
        self.writer = writer
        self.metrics = metrics
        self.failing = ""
        """The reason the agent last reported a failure for ('' since its last Done)."""
        self.certificates_failing = ""
        """Why the certificate writer's last sync failed ('' once one succeeds): the node
        stays Degraded with it until then, whatever the update worker finds."""

    def done(self, config_name: str, image: str = "") -> None:
        """Upstream ``SetDone``: also ``currentImage`` (image mode), removed when none."""
        self.writer.set_annotations(
            {
                Annotation.STATE: NodeState.DONE,
                Annotation.CURRENT_CONFIG: config_name,
                Annotation.REASON: "",
                Annotation.CURRENT_IMAGE: image or None,
            }
        )
        self.failing = ""
        self.metrics.set_state(NodeState.DONE)
        self.metrics.set_update_state(config_name)

    def working(self) -> None:
        """``state=Working``, unless the node is Degraded or Unreconcilable (it stays so
        while it retries, as upstream)."""
        if node_state(self.writer.current()) in (NodeState.DEGRADED, NodeState.UNRECONCILABLE):
            return
        self.writer.set_annotations({Annotation.STATE: NodeState.WORKING})
        self.metrics.set_state(NodeState.WORKING)

    def degraded(self, reason: str) -> None:
        log.error("Marking Degraded due to: %s", goquote(reason))
        self._failed(NodeState.DEGRADED, reason)

    def unreconcilable(self, reason: str) -> None:
        log.error("Marking Unreconcilable due to: %s", reason)
        self._failed(NodeState.UNRECONCILABLE, reason)

    def certificates_failed(self, reason: str) -> None:
        """The certificate writer failed (upstream ``handleControllerConfigErr``)."""
        self.certificates_failing = reason
        self.degraded(reason)

    def certificates_synced(self) -> bool:
        """The certificate writer succeeded; True if it had failed before."""
        failed, self.certificates_failing = bool(self.certificates_failing), ""
        return failed

    def progress(self, reason: str) -> None:
        """A ``reason`` while still Working (a drain blocked by a budget, say)."""
        self.writer.set_annotations({Annotation.REASON: printable(reason)})

    def _failed(self, state: NodeState, reason: str) -> None:
        reason = printable(reason)  # one line, whatever names it quotes (the Event's too)
        self.failing = reason
        node = self.writer.set_annotations({Annotation.STATE: state, Annotation.REASON: reason})
        self.metrics.set_state(state, reason)
        desired = annotations_of(node).get(Annotation.DESIRED_CONFIG, "")
        self.metrics.set_update_state(desired, reason)
