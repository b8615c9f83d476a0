"""``mcd status --cluster``: the one screen a person reads first, like ``oc get co
machine-config`` plus ``oc get mcp``: each pool's progress and conditions, the alerts that
would fire, and the next step (what it says: :mod:`mcd.cli.fleet.report`). The command reads
the pools and Nodes once, and Prometheus' ``/api/v1/alerts`` with ``--prometheus URL``.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from typing import Any

from mcd.cli.common import fail, say, warn
from mcd.cli.fleet.agents import AGENT_SELECTOR, LEASES, PODS, agent_of
from mcd.cli.fleet.report import fleet_report
from mcd.cli.fleet.shapes import FleetReport, NodeAgent
from mcd.cli.output import clean, columns, emit, output_format
from mcd.cluster.api import ApiError, Kube
from mcd.cluster.pools import NODES, POOLS

Obj = dict[str, Any]


def render(report: FleetReport, now: datetime, wide: bool = False) -> str:
    lines = columns(
        [
            ["NAME", "AVAILABLE", "PROGRESSING", "DEGRADED", "MESSAGE"],
            [
                "machine-config",
                str(report.available),
                str(report.progressing),
                str(report.degraded),
                report.message,
            ],
        ]
    )
    lines.append("")
    if report.pools:
        head = [
            "NAME",
            "CONFIG",
            "UPDATED",
            "UPDATING",
            "DEGRADED",
            "MACHINECOUNT",
            "READYMACHINECOUNT",
            "UPDATEDMACHINECOUNT",
            "DEGRADEDMACHINECOUNT",
            "LEFT",
            "TARGET",
            "STOPPED",
        ] + (["AGENTS"] if wide else [])
        body = [
            [
                r.name,
                r.config or "-",
                r.updated or "-",
                r.updating or "-",
                r.degraded or "-",
                str(r.machines),
                str(r.ready),
                str(r.updated_count),
                str(r.degraded_count),
                str(r.left),
                r.target if r.target != r.config else "=",
                r.stopped or "-",
            ]
            + ([r.agents or "<unknown>"] if wide else [])
            for r in report.pools
        ]
        lines += columns([head, *body])
        for r in report.pools:
            lines += [f"  {clean(r.name)}: {clean(note)}" for note in r.notes]
        if report.agents_unknown:
            lines.append(f"  whether the agents run is unknown: {clean(report.agents_unknown)}")
        lines.append("")
    if wide and report.agents:
        lines += columns(
            [
                ["NODE", "AGENT", "POD", "REASON"],
                *(
                    [a.node, "Running" if a.running else "NotRunning", a.pod or "-", a.reason]
                    for a in report.agents
                ),
            ]
        )
        lines.append("")
    if report.alerts:
        lines.append(
            "ALERTS"
            + (
                ""
                if report.alerts[0].source == "prometheus"
                else " (worked out from the cluster's objects; --prometheus URL shows what fires)"
            )
        )
        lines += columns(
            [
                [
                    a.name,
                    a.subject,
                    a.why + (" (possible)" if a.source == "possible" else ""),
                    a.runbook,
                ]
                for a in report.alerts
            ]
        )
    else:
        lines.append("ALERTS: none would fire")
    lines.append("")
    lines.append(f"Next: {clean(report.next_step)}")
    return "\n".join(lines) + "\n"


def prometheus_alerts(url: str) -> list[Mapping[str, Any]]:
    """The firing alerts of a Prometheus (its ``/api/v1/alerts``); ValueError naming the URL."""
    address = url.rstrip("/") + "/api/v1/alerts"
    try:
        with urllib.request.urlopen(address, timeout=10) as response:
            doc = json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise ValueError(f"{address}: {getattr(e, 'reason', e)}") from e
    alerts = (doc.get("data") or {}).get("alerts") if isinstance(doc, dict) else None
    if not isinstance(alerts, list):
        raise ValueError(f"{address}: not a Prometheus alerts answer")
    return [a for a in alerts if isinstance(a, dict) and a.get("state") == "firing"]


def read_cluster(kube: Kube) -> tuple[list[Obj], list[Obj]]:
    """The pools and Nodes (ApiError as the API server answers)."""
    pools = kube.request("GET", POOLS).get("items") or []
    nodes = kube.request("GET", NODES).get("items") or []
    return list(pools), list(nodes)


def read_agents(kube: Kube, nodes: Sequence[Obj], now: datetime) -> list[NodeAgent] | str:
    """Whether each Node's agent runs, from the DaemonSet's pods (its label, every namespace)
    and the agents' node Leases; or why they cannot be read (the caller's account may not
    list pods or Leases)."""
    try:
        pods = kube.request("GET", PODS, {"labelSelector": AGENT_SELECTOR}).get("items") or []
        leases = kube.request("GET", LEASES).get("items") or []
    except ApiError as e:
        return str(e)
    return [agent_of(str((n.get("metadata") or {}).get("name") or ""), pods, leases, now)
            for n in nodes]  # fmt: skip


def cluster_status(
    kube: Kube,
    prometheus: str | None,
    now: datetime | None = None,
    watch: bool = False,
    interval: float = 2.0,
) -> None:
    """Print the screen (or the object, with -o json|yaml); ``fail`` naming what cannot be
    read. With ``watch``: read again every ``interval`` s and print again when it changed,
    until interrupted (as ``kubectl get -w``)."""
    shown = ""
    while True:
        try:
            pools, nodes = read_cluster(kube)
        except ApiError as e:
            if not watch:
                fail(f"cannot read the pools and nodes: {e}")
            warn(f"cannot read the pools and nodes: {e}; retrying")
            time.sleep(interval)
            continue
        firing = None
        if prometheus:
            try:
                firing = prometheus_alerts(prometheus)
            except ValueError as e:
                fail(f"--prometheus: {e}")
        when = now or datetime.now(UTC)
        agents = read_agents(kube, nodes, when)
        report = fleet_report(
            pools, nodes, when, firing, None if isinstance(agents, str) else agents
        )
        if isinstance(agents, str):
            report = replace(report, agents_unknown=agents)
        seen = json.dumps(report.to_json(), sort_keys=True)
        if seen != shown:
            if shown and output_format() not in ("json", "yaml"):
                say("")
            emit(report.to_json(), partial(render, report, when), compact=watch)
            shown = seen
        if not watch:
            return
        time.sleep(interval)
