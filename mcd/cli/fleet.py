"""``mcd status --cluster``: the one screen a person reads first, like ``oc get co
machine-config`` plus ``oc get mcp``: each pool's progress and conditions, the alerts that
would fire, and the next step (what it says: :mod:`mcd.cli.fleetreport`). The command reads
the pools and Nodes once, and Prometheus' ``/api/v1/alerts`` with ``--prometheus URL``.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from mcd.cli.common import fail, say
from mcd.cli.fleetreport import FleetReport, fleet_report
from mcd.cluster.api import ApiError, Kube
from mcd.cluster.pools import NODES, POOLS

Obj = dict[str, Any]


def render(report: FleetReport, now: datetime) -> str:
    def table(rows: list[list[str]]) -> list[str]:
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        return [
            "   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
        ]

    lines = table(
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
        ]
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
            for r in report.pools
        ]
        lines += table([head, *body])
        for r in report.pools:
            lines += [f"  {r.name}: {note}" for note in r.notes]
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
        lines += table(
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
    lines.append(f"Next: {report.next_step}")
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


def cluster_status(
    kube: Kube, as_json: bool, prometheus: str | None, now: datetime | None = None
) -> None:
    """Print the screen (or one JSON object); ``fail`` naming what cannot be read."""
    try:
        pools, nodes = read_cluster(kube)
    except ApiError as e:
        fail(f"cannot read the pools and nodes: {e}")
    firing = None
    if prometheus:
        try:
            firing = prometheus_alerts(prometheus)
        except ValueError as e:
            fail(f"--prometheus: {e}")
    when = now or datetime.now(UTC)
    report = fleet_report(pools, nodes, when, firing)
    if as_json:
        say(json.dumps(report.to_json(), indent=2))
    else:
        say(render(report, when), nl=False)
