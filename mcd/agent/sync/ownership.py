"""One agent per node: the host's agent lock (:mod:`mcd.host.agentlock`), then the node's
Lease (:mod:`mcd.cluster.nodelease`). A second agent for the same node waits, saying so in
one line, and takes over when the first stops."""

from __future__ import annotations

import logging
import threading

from mcd.cluster.nodelease import NodeLease
from mcd.host.agentlock import AgentLock
from mcd.host.errors import HostError

log = logging.getLogger(__name__)


def say(line: str) -> None:
    log.warning("%s", line)


def take_node(lock: AgentLock, lease: NodeLease, stop: threading.Event, node_name: str) -> bool:
    """The host's agent lock, then the node's Lease; False when stopped while waiting."""
    told = False
    while not stop.is_set():
        try:
            alone = lock.try_hold(f"mcd start --node-name {node_name}")
        except HostError as e:
            log.warning("%s; relying on the Lease alone", e)
            return lease.acquire(stop, say)
        if alone:
            return lease.acquire(stop, say, predecessor_dead=True)
        if not told:
            say(
                f"node {node_name} is managed by another agent on this host "
                f"({lock.holder() or 'unknown'}); waiting until it stops"
            )
            told = True
        stop.wait(1.0)
    return False
