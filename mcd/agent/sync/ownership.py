"""One agent per node: its listener first, then the host's agent lock
(:mod:`mcd.host.agentlock`), then the node's Lease (:mod:`mcd.cluster.nodelease`).

A second agent for the same node waits on the lock or the Lease, saying so in one line, and
takes over when the first stops. A second agent whose ``--metrics-url`` address is taken (by
default every agent listens on 127.0.0.1:8797) cannot start: one line names the address,
and the agent of this host that holds the lock when there is one (:class:`StartRefused`).
"""

from __future__ import annotations

import errno
import logging
import threading

from prometheus_client import CollectorRegistry

from mcd.cluster.nodelease import NodeLease
from mcd.host.agentlock import AGENT_LOCK, AgentLock
from mcd.host.errors import HostError
from mcd.host.statusserver import Probe, StatusServer

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


class StartRefused(Exception):
    """The agent cannot start; the message is one line saying why."""


def listen(
    address: str, lock: AgentLock, registry: CollectorRegistry, healthz: Probe, readyz: Probe
) -> StatusServer:
    """The listener for ``/metrics``, ``/healthz`` and ``/readyz``, taken before anything else
    (the probes answer while the agent waits for the node)."""
    try:
        return StatusServer(address, registry, healthz, readyz).start()
    except OSError as e:
        why = f"cannot listen on {address} for /metrics, /healthz and /readyz: "
        if e.errno != errno.EADDRINUSE:
            raise StartRefused(f"{why}{e.strerror or e} (--metrics-url)") from e
        holder = other_agent(lock)
        if holder:
            raise StartRefused(
                f"{why}address already in use: another agent runs on this host and holds "
                f"{AGENT_LOCK} ({holder}); stop it, or give --metrics-url a free address"
            ) from e
        raise StartRefused(
            f"{why}address already in use by another process; give --metrics-url a free address"
        ) from e


def other_agent(lock: AgentLock) -> str:
    """Who holds the host's agent lock ('' when no other agent does); never waits."""
    try:
        if lock.try_hold("mcd start: checking for another agent"):
            lock.release()
            return ""
    except HostError:
        return ""
    return lock.holder() or "unknown"
