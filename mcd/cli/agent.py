"""The agent and its view of the cluster: ``start``, ``status``."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import click

from mcd.agent.daemon import Agent, Options
from mcd.agent.inspect import node_report, render_report
from mcd.cli import pools
from mcd.cli.common import (
    fail,
)
from mcd.cluster.api import ApiError, Kube, load_client
from mcd.cluster.api import ConfigurationError as ApiConfigError
from mcd.host.journal import configure_logging
from mcd.host.kubelet import DEFAULT_ENDPOINT as KUBELET_HEALTHZ


@click.command("start")
@click.option("--node-name", envvar="NODE_NAME", help="This node's name (default: $NODE_NAME).")
@click.option("--root-mount", type=click.Path(file_okay=False, path_type=Path), default="/rootfs",
              show_default=True, help="Where the node's root filesystem is mounted.")  # fmt: skip
@click.option("--kubeconfig", type=click.Path(dir_okay=False), help="Default: in-cluster config.")
@click.option(
    "--drain-mode",
    type=click.Choice(["self", "controller"]),
    default="self",
    show_default=True,
    help="Drain here, or ask a drain controller by annotation.",
)
@click.option(
    "--drain-timeout",
    type=float,
    default=3600.0,
    show_default=True,
    help="Seconds before a drain that cannot finish marks the node Degraded.",
)
@click.option("--metrics-url", default="127.0.0.1:8797", show_default=True,
              help="Listen address for /metrics, /healthz and /readyz.")  # fmt: skip
@click.option("--kubelet-healthz-enabled/--no-kubelet-healthz", default=True, show_default=True)
@click.option("--kubelet-healthz-endpoint", default=KUBELET_HEALTHZ, show_default=True)
@click.option("--kubelet-healthz-interval", type=float, default=30.0, show_default=True,
              help="Seconds between kubelet health checks.")  # fmt: skip
def start_command(
    node_name: str | None,
    root_mount: Path,
    kubeconfig: str | None,
    drain_mode: str,
    drain_timeout: float,
    metrics_url: str,
    kubelet_healthz_enabled: bool,
    kubelet_healthz_endpoint: str,
    kubelet_healthz_interval: float,
) -> None:
    """Run the agent: keep this node on its desiredConfig until stopped."""
    configure_logging()
    if not node_name:
        fail("node-name is required")
    options = Options(
        node_name=node_name, root_mount=str(root_mount), kubeconfig=kubeconfig,
        drain_mode=drain_mode, drain_timeout=drain_timeout, metrics_url=metrics_url,
        kubelet_healthz_enabled=kubelet_healthz_enabled,
        kubelet_healthz_endpoint=kubelet_healthz_endpoint,
        kubelet_interval=kubelet_healthz_interval,
    )  # fmt: skip
    try:
        agent = Agent(options)
    except (ValueError, OSError, ApiConfigError) as e:
        fail(f"cannot start: {e}")
    sys.exit(agent.run())


@click.command("status")
@click.option(
    "--node", "node_name", envvar="NODE_NAME", help="Default: $NODE_NAME, else this host."
)
@click.option("--kubeconfig", type=click.Path(dir_okay=False), help="Default: $KUBECONFIG.")
@click.option(
    "--namespace", help="Where the node's Events are (default: $POD_NAMESPACE or default)."
)
@click.option("--events", "event_count", type=int, default=10, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def status_command(
    node_name: str | None,
    kubeconfig: str | None,
    namespace: str | None,
    event_count: int,
    as_json: bool,
) -> None:
    """Current and desired config, state and reason, drain state, the pending update and what
    it will cost, and the node's last Events."""
    name = node_name or socket.gethostname()
    try:
        kube = Kube(load_client(kubeconfig))
        report = node_report(kube, name, namespace, event_count)
    except ApiConfigError as e:
        fail(str(e))
    except ApiError as e:
        fail(f"cannot read node {name}: {e}")
    pool_lines, pool = pools.status_pool_lines(kube, name)
    if as_json:
        click.echo(json.dumps({**report.to_json(), **({"pool": pool} if pool else {})}, indent=2))
    else:
        click.echo(render_report(report) + "".join(f"{line}\n" for line in pool_lines), nl=False)
