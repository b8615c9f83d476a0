"""The agent and its view of the cluster: ``start``, ``status``."""

from __future__ import annotations

import json
import logging
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from mcd.agent.daemon import Agent
from mcd.agent.options import Options
from mcd.agent.sync.ownership import StartRefused
from mcd.cli.common import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    connect,
    fail,
    kube_options,
    output_options,
    quiet,
    root_exists,
    say,
    verbosity,
    warn,
)
from mcd.cli.mountedroot import mounted_root
from mcd.cli.output import clean, emit, output_format, output_option
from mcd.cluster.api import ApiError, Kube, load_client
from mcd.cluster.api import ConfigurationError as ApiConfigError
from mcd.host.checks.kubelet import DEFAULT_ENDPOINT as KUBELET_HEALTHZ
from mcd.host.systemd.journal import LOG_FORMATS, configure_logging
from mcd.model.reboots.requests import DEFAULT_SENTINEL

if TYPE_CHECKING:
    from mcd.agent.commands.inspect import NodeReport

# ``status`` imports what only it uses (the node report, pools, the fleet view) when it runs:
# ``start``, a process that lives on every node, never holds them in memory (issue 46).


@click.command("start")
@click.option("--node-name", envvar="NODE_NAME", help="This node's name (default: $NODE_NAME).")
@mounted_root("/rootfs", "The node's root filesystem: /rootfs in the DaemonSet's pod, / on the "
              "host itself (--root-mount, its old name, still works).")  # fmt: skip
@click.option("--kubeconfig", type=click.Path(dir_okay=False), help="Default: in-cluster config.")
@click.option(
    "--drain-mode",
    type=click.Choice(["self", "controller"]),
    default="controller",
    show_default=True,
    help="Ask the drain controller (mcd controller) by annotation, as upstream's daemon "
    "does; or drain here (self: needs daemonset/optional/self-drain-rbac.yaml).",
)
@click.option(
    "--drain-timeout",
    type=float,
    default=3600.0,
    show_default=True,
    help="Seconds before a drain that cannot finish marks the node Degraded.",
)
@click.option("--lease-duration", type=int, default=600, show_default=True,
              help="Seconds a silent agent on another machine holds the node's Lease.")  # fmt: skip
@click.option("--resync-interval", type=float, default=300.0, show_default=True,
              help="Seconds between resyncs (Node read afresh, corrected).")  # fmt: skip
@click.option("--metrics-url", default="127.0.0.1:8797", show_default=True,
              help="Listen address for /metrics, /healthz and /readyz.")  # fmt: skip
@click.option("--kubelet-healthz-enabled/--no-kubelet-healthz", default=True, show_default=True,
              help="Poll the kubelet's health endpoint and count failures.")  # fmt: skip
@click.option("--kubelet-healthz-endpoint", default=KUBELET_HEALTHZ, show_default=True,
              help="The kubelet health URL to poll.")  # fmt: skip
@click.option("--kubelet-healthz-interval", type=float, default=30.0, show_default=True,
              help="Seconds between kubelet health checks.")  # fmt: skip
@click.option("--log-format", type=click.Choice(LOG_FORMATS), default="text", show_default=True,
              help="Log lines on stderr as text, or one JSON object each.")  # fmt: skip
@click.option("--reboot-sentinel", default=DEFAULT_SENTINEL, show_default=True,
              help="A file under the root whose presence means the OS asks for a reboot "
              "(kured's --reboot-sentinel); '' for none.")  # fmt: skip
@click.option("--reboot-sentinel-command", default="", metavar="COMMAND",
              help="A shell command run in the node's root; exit 0 means the OS asks for a "
              "reboot (kured's --reboot-sentinel-command; replaces the file's test).")  # fmt: skip
@click.option("--reboot-check-period", type=click.FloatRange(min=1), default=60.0,
              show_default=True, help="Seconds between looks for a reboot the OS asks for "
              "(kured's --period).")  # fmt: skip
@output_options
def start_command(
    node_name: str | None,
    root: Path,
    kubeconfig: str | None,
    drain_mode: str,
    drain_timeout: float,
    lease_duration: int,
    resync_interval: float,
    metrics_url: str,
    kubelet_healthz_enabled: bool,
    kubelet_healthz_endpoint: str,
    kubelet_healthz_interval: float,
    log_format: str,
    reboot_sentinel: str,
    reboot_sentinel_command: str,
    reboot_check_period: float,
) -> None:
    """Run the agent: keep this node on its desiredConfig until stopped.

    Logs to journald where it runs, else to stderr (--log-format); started from a
    terminal, its warnings (such as waiting for another agent) show there too. -v adds
    debug lines, -q keeps only warnings and errors. Exit 0 when stopped, 1 when it cannot
    start (one line says why: the --metrics-url address in use, naming the other agent of
    this host when one holds it), 255 after re-bootstrapping the kubelet on an x509 error
    (upstream's ErrAuxiliary).
    """
    level = {-1: logging.WARNING, 0: logging.INFO}.get(verbosity(), logging.DEBUG)
    where = configure_logging(
        level, fields={"MCD_NODE": node_name} if node_name else None, log_format=log_format
    )
    if where == "journal" and sys.stderr.isatty():  # by hand: the person sees the warnings
        console = logging.StreamHandler(sys.stderr)
        console.setLevel(logging.WARNING)
        logging.getLogger().addHandler(console)
    if not node_name:
        raise click.UsageError("--node-name (or $NODE_NAME) is required")
    options = Options(
        node_name=node_name, root_mount=str(root), kubeconfig=kubeconfig,
        drain_mode=drain_mode, drain_timeout=drain_timeout, metrics_url=metrics_url,
        kubelet_healthz_enabled=kubelet_healthz_enabled,
        kubelet_healthz_endpoint=kubelet_healthz_endpoint,
        kubelet_interval=kubelet_healthz_interval, resync_interval=resync_interval,
        lease_duration=lease_duration, reboot_sentinel=reboot_sentinel,
        reboot_sentinel_command=reboot_sentinel_command, reboot_check_period=reboot_check_period,
    )  # fmt: skip
    try:
        kube = Kube(load_client(kubeconfig, root_mount=str(root)))
    except (ValueError, OSError, ApiConfigError) as e:
        fail(f"cannot start: {e}")
    root_exists(root)
    try:
        agent = Agent(options, kube)
    except (ValueError, OSError, ApiConfigError) as e:
        fail(f"cannot start: {e}")
    try:
        code = agent.run()
    except StartRefused as e:
        fail(str(e))
    sys.exit(code)


@click.command("status")
@click.option(
    "--node", "node_name", envvar="NODE_NAME", help="Default: $NODE_NAME, else this host."
)
@kube_options
@click.option("--namespace", help="Where the node's Events are (default: every namespace).")
@click.option("--events", "event_count", type=int, default=10, show_default=True,
              help="How many of the node's last Events to show.")  # fmt: skip
@output_option()
@click.option("--wait", is_flag=True,
              help="Wait until the node is Done on its desired config, Degraded or "
                   "Unreconcilable; the exit code tells which.")  # fmt: skip
@click.option("--timeout", type=click.FloatRange(min=0), default=None,
              help="With --wait: give up after this many seconds (exit 1).")  # fmt: skip
@click.option("--watch", is_flag=True,
              help="Print the status again each time it changes, until interrupted "
                   "(with --wait: until the wait ends).")  # fmt: skip
@click.option("--interval", type=click.FloatRange(min=0.1), default=2.0, show_default=True,
              help="Seconds between reads with --wait or --watch.")  # fmt: skip
@click.option("--cluster", is_flag=True,
              help="Every pool instead of one node: progress, conditions, the alerts that "
                   "would fire, the next step.")  # fmt: skip
@click.option("--prometheus", metavar="URL",
              help="With --cluster: the alerts firing in this Prometheus.")  # fmt: skip
@output_options
def status_command(
    node_name: str | None,
    kubeconfig: str | None,
    namespace: str | None,
    event_count: int,
    wait: bool,
    timeout: float | None,
    watch: bool,
    interval: float,
    cluster: bool,
    prometheus: str | None,
) -> None:
    """Current and desired config, state and reason, logins, drain state, the pending update
    and what it will cost, the next command to run on a Degraded node, and its last Events.

    Exit 0 after printing. With --wait (as cloud-init status --wait): 0 Done on the desired
    config, 1 Unreconcilable, an error or the --timeout, 2 Degraded. With --cluster: every
    pool (as oc get co machine-config plus oc get mcp), whether each node's agent runs, the
    alerts that would fire and the next step; exit 0, or 1 when the cluster or --prometheus
    cannot be read; with --watch, printed again on every change until interrupted.
    """
    from mcd.agent.commands.inspect import node_report  # noqa: PLC0415  (status only)
    from mcd.cli import pools  # noqa: PLC0415
    from mcd.cli.fleet import command as fleet  # noqa: PLC0415

    if prometheus and not cluster:
        raise click.UsageError("--prometheus needs --cluster")
    if cluster and wait:
        raise click.UsageError("--wait waits for one node; not with --cluster")
    as_json = output_format() in ("json", "yaml")
    name = node_name or socket.gethostname()
    kube = Kube(connect(kubeconfig))
    if cluster:
        try:
            fleet.cluster_status(kube, prometheus, watch=watch, interval=interval)
        except KeyboardInterrupt:
            sys.exit(EXIT_INTERRUPTED)
        return
    if not (wait or watch):
        try:
            report = node_report(kube, name, namespace, event_count)
        except ApiError as e:
            fail(f"cannot read node {name}: {e}")
        pool_lines, pool = pools.status_pool_lines(kube, name)
        _show(report, as_json, watch=False, pool_lines=pool_lines, pool=pool)
        return
    try:
        sys.exit(
            _follow(kube, name, namespace, event_count, as_json, wait, timeout, watch, interval)
        )
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)


def _show(
    report: NodeReport,
    as_json: bool,
    watch: bool,
    pool_lines: list[str] | None = None,
    pool: dict[str, str] | None = None,
) -> None:
    from mcd.agent.commands.inspect import render_report  # noqa: PLC0415  (status only)

    doc = {**report.to_json(), **({"pool": pool} if pool else {})}
    emit(
        doc,
        lambda _: render_report(report) + "".join(f"{line}\n" for line in pool_lines or []),
        compact=watch,
    )


def _follow(
    kube: Kube,
    name: str,
    namespace: str | None,
    event_count: int,
    as_json: bool,
    wait: bool,
    timeout: float | None,
    watch: bool,
    interval: float,
) -> int:
    """Read the node every ``interval`` s; print changes (--watch); end on a final state."""
    from mcd.agent.commands.inspect import (  # noqa: PLC0415  (status only)
        node_report,
        render_report,
        wait_code,
    )

    deadline = None if timeout is None else time.monotonic() + timeout
    shown, progress, failing = "", "", ""
    report: NodeReport | None = None
    while True:
        try:
            report = node_report(kube, name, namespace, event_count)
            failing = ""
        except ApiError as e:
            if str(e) != failing:  # one line per failure, not one per retry
                warn(f"cannot read node {name}: {e}; retrying")
                failing = str(e)
        if report is not None:
            text = json.dumps(report.to_json()) if as_json else render_report(report)
            if watch and text != shown:
                if shown and not as_json:
                    say("")
                _show(report, as_json, watch=True)
                shown = text
            code = wait_code(report) if wait else None
            if code is not None:
                if not watch:
                    _show(report, as_json, watch=False)
                return code
            configs = f"{report.current or '-'} -> {report.desired or '-'}"
            line = clean(f"waiting for node {name}: {report.state} ({configs})")
            if wait and not watch and line != progress and not quiet():
                click.echo(line, err=True)
                progress = line
        if deadline is not None and time.monotonic() >= deadline:
            state = report.state if report is not None else "unknown"
            if report is not None and not watch:
                _show(report, as_json, watch=False)
            fail(
                f"timed out after {timeout:g} s waiting for node {name} (state {state})", EXIT_ERROR
            )
        pause = (
            interval if deadline is None else max(0.0, min(interval, deadline - time.monotonic()))
        )
        time.sleep(pause)
