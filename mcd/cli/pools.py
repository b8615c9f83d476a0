"""The cluster half: ``controller``, and ``plan --pool`` (``plan OLD NEW`` otherwise)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from mcd.cli import configs
from mcd.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    config_file,
    connect,
    fail,
    from_cluster_option,
    kube_options,
    output_options,
    plan_flags,
    policy_option,
)
from mcd.cli.output import emit

if TYPE_CHECKING:
    from mcd.cluster.api import Kube
    from mcd.model.pool.windows import WindowState

# The cluster client and the controller load inside the commands that use them, so that
# ``mcd plan OLD NEW`` starts without them.


@click.command("controller")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), help="Default: in-cluster config.")
@click.option(
    "--metrics-url",
    default="127.0.0.1:8798",
    show_default=True,
    help="Listen address for /metrics, /healthz and /readyz.",
)
@click.option(
    "--metrics-auth",
    type=click.Choice(["auto", "token", "none"]),
    default="auto",
    show_default=True,
    help="token: /metrics only for a bearer token the API server says may get /metrics "
    "(TokenReview + SubjectAccessReview, as kube-rbac-proxy); auto: token unless the "
    "listener is on loopback.",
)
@click.option(
    "--metrics-cert",
    type=click.Path(dir_okay=False, exists=True),
    help="TLS certificate for the listener (with --metrics-key).",
)
@click.option(
    "--metrics-key",
    type=click.Path(dir_okay=False, exists=True),
    help="TLS private key for the listener (with --metrics-cert).",
)
@click.option(
    "--namespace",
    envvar="POD_NAMESPACE",
    help="Where the Lease mcd-controller and the controller's Events are (default: "
    "$POD_NAMESPACE, in a pod its namespace, else mcd: the Deployment's).",
)
@click.option(
    "--take-over-from",
    "take_over_from",
    multiple=True,
    metavar="NAMESPACE/NAME",
    help="Take the pools another controller's Lease paces once that Lease is no longer held "
    "(a pool is paced by one controller only: mcd-project.github.io/pacer).",
)
@click.option(
    "--lease-duration",
    type=int,
    default=15,
    show_default=True,
    help="Seconds a leader's Lease lasts without renewal.",
)
@click.option(
    "--resync",
    type=float,
    default=30.0,
    show_default=True,
    help="Seconds between passes when nothing changes.",
)
@click.option(
    "--prune-grace",
    default="24h",
    show_default=True,
    help="Delete rendered configs no node, pool or revision uses once older than this "
    "(90m, 4h, 7d; 0 never deletes).",
)
@click.option(
    "--prune-interval",
    type=float,
    default=300.0,
    show_default=True,
    help="Seconds between those prunes.",
)
@output_options
def controller_command(
    kubeconfig: str | None,
    metrics_url: str,
    metrics_auth: str,
    metrics_cert: str | None,
    metrics_key: str | None,
    namespace: str | None,
    take_over_from: tuple[str, ...],
    lease_duration: int,
    resync: float,
    prune_grace: str,
    prune_interval: float,
) -> None:
    """Render MachineConfigPools and roll them out to their nodes (one leader at a time)."""
    from mcd.cluster.api import ConfigurationError as ApiConfigError  # noqa: PLC0415
    from mcd.controller.run import Controller, ControllerOptions  # noqa: PLC0415
    from mcd.host.systemd.journal import configure_logging  # noqa: PLC0415

    configure_logging()
    if bool(metrics_cert) != bool(metrics_key):
        fail("--metrics-cert and --metrics-key go together")
    grace = _grace(prune_grace)
    for lease in take_over_from:
        if lease.count("/") != 1 or not all(lease.split("/")):
            fail(f"--take-over-from: {lease!r} is not NAMESPACE/NAME (e.g. default/mcd-controller)",
                 EXIT_USAGE)  # fmt: skip
    options = ControllerOptions(
        kubeconfig=kubeconfig,
        metrics_url=metrics_url,
        metrics_auth=metrics_auth,
        metrics_tls=(metrics_cert, metrics_key) if metrics_cert and metrics_key else None,
        namespace=namespace or "",
        lease_duration=lease_duration,
        retry=max(1.0, lease_duration / 5),
        resync=resync,
        prune_grace=grace,
        prune_every=max(1.0, prune_interval),
        take_over_from=take_over_from,
    )
    try:
        controller = Controller(options)
    except (ValueError, OSError, ApiConfigError) as e:
        fail(f"cannot start: {e}")
    sys.exit(controller.run())


def _grace(text: str) -> float:
    """``--prune-grace`` in seconds (``0``: off)."""
    from mcd.model.pool.windows import WindowError, parse_duration  # noqa: PLC0415

    if text.strip() == "0":
        return 0.0
    try:
        return parse_duration(text).total_seconds()
    except WindowError as e:  # a bad flag value: usage (64), as in every command
        raise click.BadParameter(
            str(e).split("duration: ", 1)[-1], param_hint="'--prune-grace'"
        ) from None


@click.command("plan")
@click.argument("old", required=False, type=config_file)
@click.argument("new", required=False, type=config_file)
@click.option("--pool", help="Plan a pool's rollout against the cluster instead of OLD and NEW.")
@from_cluster_option
@kube_options
@policy_option
@click.option(
    "--root",
    "host_root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Plan for the host under this root: what it can apply (OS image tool, boot loader).",
)
@plan_flags
@output_options
@click.pass_context
def plan_command(
    ctx: click.Context,
    old: Path | None,
    new: Path | None,
    pool: str | None,
    node_name: str | None,
    kubeconfig: str | None,
    policy_file: Path | None,
    host_root: Path | None,
    force: bool,
    legacy: bool,
) -> None:
    """Show what moving a node from OLD to NEW changes, costs, and why; with --pool POOL,
    what the pool's rollout would do on each of its nodes, before anything rolls out.

    Exit 0 when the change is reconcilable, 2 when it is not, 1 on bad input.
    """
    if pool is None:
        if node_name is None and (old is None or new is None):
            raise click.UsageError("plan needs OLD and NEW, --pool POOL or --from-cluster NODE")
        ctx.invoke(
            configs.plan,
            old=old,
            new=new,
            policy_file=policy_file,
            node_name=node_name,
            kubeconfig=kubeconfig,
            host_root=host_root,
            force=force,
            legacy=legacy,
        )
        return
    if old is not None or new is not None or node_name is not None or host_root is not None:
        raise click.UsageError("--pool takes no OLD, NEW, --root or --from-cluster")
    from mcd.cluster.api import ApiError, Kube  # noqa: PLC0415
    from mcd.cluster.configs import MACHINECONFIGS  # noqa: PLC0415
    from mcd.cluster.controllerconfig import base_images  # noqa: PLC0415
    from mcd.cluster.policies import PoliciesNotReady, cluster_policies  # noqa: PLC0415
    from mcd.cluster.pools import NODES, POOLS  # noqa: PLC0415
    from mcd.controller.preview import describe_preview, preview_pool  # noqa: PLC0415
    from mcd.model.pool.pools import SelectorError  # noqa: PLC0415

    kube = Kube(connect(kubeconfig))
    try:
        doc = kube.request("GET", f"{POOLS}/{pool}")
        pools = kube.request("GET", POOLS).get("items") or []
        mcs = {
            c["metadata"]["name"]: c for c in kube.request("GET", MACHINECONFIGS).get("items") or []
        }
        nodes = kube.request("GET", NODES).get("items") or []
        base = base_images(kube)  # the controller's render uses them too
    except ApiError as e:
        fail(f"cannot read pool {pool}: {e}")
    try:  # the policies the agents will plan with (MachineConfiguration/cluster status)
        policies = cluster_policies(kube, timeout=0)
    except (ApiError, PoliciesNotReady) as e:
        fail(f"cannot read the node disruption policies: {e}")
    try:
        result = preview_pool(doc, pools, mcs, nodes, _window(doc), base, policies)
    except (SelectorError, ValueError) as e:
        fail(f"pool {pool}: {e}")
    emit(result.to_json(), lambda _: describe_preview(result))
    unreconcilable = any(n.action == "unreconcilable" for n in result.nodes)
    sys.exit(2 if unreconcilable else 1 if result.render_error else EXIT_OK)


def _window(pool: dict[str, object]) -> WindowState | None:
    """The pool's window now; one that cannot be used previews as none."""
    from datetime import UTC, datetime  # noqa: PLC0415

    from mcd.model.pool.windows import pool_window  # noqa: PLC0415

    state, error = pool_window(pool, datetime.now(UTC))
    return None if error else state


def status_pool_lines(kube: Kube, node_name: str) -> tuple[list[str], dict[str, str]]:
    """``mcd status``'s pool lines and JSON: the node's pool and when its window opens.
    Nothing when pools cannot be read (no CRD, or the agent's own account may not)."""
    from mcd.cluster.api import ApiError  # noqa: PLC0415
    from mcd.cluster.pools import NODES, POOLS  # noqa: PLC0415
    from mcd.controller.preview import describe_pool_summary, node_pool_summary  # noqa: PLC0415

    try:
        node = kube.request("GET", f"{NODES}/{node_name}")
        pools = kube.request("GET", POOLS).get("items") or []
    except ApiError:
        return [], {}
    summary = node_pool_summary(node, pools)
    return describe_pool_summary(summary), summary
