"""Draining a node: cordon, evictions that honour PodDisruptionBudgets, uncordon.

* ``evict``: the one eviction engine (list a node's pods, evict them in parallel through the
  eviction subresource, retry a 429 while a budget forbids it, wait for them to be gone, say
  which pod holds the drain and why), used by both drains below;
* ``selfdrain``: the agent drains its own node (``--drain-mode self``, opt-in: its
  ServiceAccount then needs cluster-wide evictions);
* ``handshake``: the agent asks the drain controller (``--drain-mode controller``, the
  default): ``desiredDrain`` = ``drain-<config>`` / ``uncordon-<config>``, answered in
  ``lastAppliedDrain``;
* ``nodes``: the drain controller's writes to the Node it drains (cordon, uncordon, the
  answer).

Which pods go, the retry cadence and the wording are pure (:mod:`mcd.model.drain`). The
agent's names are re-exported here.
"""

from mcd.cluster.drain.errors import (
    DEFAULT_TIMEOUT,
    DrainAbandoned,
    Drainer,
    DrainError,
    StillWanted,
)
from mcd.cluster.drain.handshake import ControllerDrainer
from mcd.cluster.drain.selfdrain import CORDONED_BY, LEGACY_CORDONED_BY, SelfDrainer, cordoned_by

__all__ = [
    "CORDONED_BY",
    "DEFAULT_TIMEOUT",
    "LEGACY_CORDONED_BY",
    "ControllerDrainer",
    "DrainAbandoned",
    "DrainError",
    "Drainer",
    "SelfDrainer",
    "StillWanted",
    "cordoned_by",
]
