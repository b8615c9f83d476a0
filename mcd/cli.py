"""The ``mcd`` command line.

This is the only layer that turns errors into exit codes. Bad input prints one
clear line on stderr (never a traceback) and exits 1.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import NoReturn, ParamSpec, TypeVar

import click

from mcd import __version__
from mcd.agent.daemon import Agent, Options
from mcd.agent.firstboot import ENCAPSULATED, firstboot_complete
from mcd.agent.once import node_for, once_from
from mcd.agent.pivot import PULLSPEC, pivot
from mcd.agent.transaction import UpdateError
from mcd.cluster.api import ConfigurationError as ApiConfigError
from mcd.host.errors import HostError
from mcd.host.journal import configure_logging
from mcd.host.kubelet import DEFAULT_ENDPOINT as KUBELET_HEALTHZ
from mcd.host.rootfs import Root
from mcd.host.runner import Runner
from mcd.host.systemd import connect as connect_systemd
from mcd.host.validation import validate_on_disk
from mcd.model.describe import describe_plan
from mcd.model.errors import ConfigError
from mcd.model.machineconfig import MachineConfig, decode_document, load_machine_config
from mcd.model.plan import make_plan
from mcd.model.policy import DEFAULT_POLICIES, merge_policies, parse_user_policies

EXIT_OK = 0
EXIT_BAD_INPUT = 1
EXIT_UNRECONCILABLE = 2

P = ParamSpec("P")
R = TypeVar("R")


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_BAD_INPUT)


def reports_config_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn ``ConfigError`` and unreadable files into one line on stderr and exit 1."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except ConfigError as e:
            _fail(str(e))
        except OSError as e:
            _fail(f"{e.filename or ''}: {e.strerror or e}")

    return wrapper


def read_config(path: Path) -> MachineConfig:
    """Load a MachineConfig file; errors name the file."""
    data = path.read_bytes()
    try:
        return load_machine_config(data, default_name=path.stem)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from e


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mcd")
def cli() -> None:
    """mcd: keep a node's OS configuration equal to a rendered MachineConfig."""


@cli.command()
@click.argument("old", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("new", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--policy",
    "policy_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="MachineConfiguration YAML whose spec.nodeDisruptionPolicy is merged over the defaults.",
)
@click.option("--force", is_flag=True, help="Plan as if /run/machine-config-daemon-force existed.")
@click.option("--legacy", is_flag=True, help="Use the firstboot/once-from action table.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@reports_config_errors
def plan(
    old: Path, new: Path, policy_file: Path | None, force: bool, legacy: bool, as_json: bool
) -> None:
    """Show what moving a node from OLD to NEW changes, costs, and why.

    Exit 0 when the change is reconcilable, 2 when it is not, 1 on bad input.
    """
    policies = DEFAULT_POLICIES
    if policy_file is not None:
        try:
            user = parse_user_policies(decode_document(policy_file.read_bytes()))
        except ConfigError as e:
            raise ConfigError(f"{policy_file}: {e}") from e
        policies = merge_policies(DEFAULT_POLICIES, user)
    result = make_plan(read_config(old), read_config(new), policies, force=force, legacy=legacy)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        click.echo(describe_plan(result), nl=False)
    sys.exit(EXIT_OK if result.reconcilable else EXIT_UNRECONCILABLE)


@cli.command()
@click.argument("config", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default="/",
    show_default=True,
    help="The node's root directory.",
)
@reports_config_errors
def validate(config: Path, root: Path) -> None:
    """Check that the files, units, dropins and masks of CONFIG are on disk under ROOT.

    Unit enablement is asked of the node's systemd (over D-Bus, or ``systemctl
    --root`` for an offline root). Prints every mismatch (never file contents).
    Exit 0 when the node matches, 1 otherwise.
    """
    mc = read_config(config)
    node = Root(root)
    systemd = connect_systemd(node, Runner())
    try:
        report = validate_on_disk(mc, node, systemd)
    finally:
        systemd.close()
    for reason in report.reasons():
        click.echo(reason)
    if not report.ok:
        sys.exit(EXIT_BAD_INPUT)
    click.echo(
        f"on-disk state matches {mc.name}: {report.files_checked} files, "
        f"{report.units_checked} units checked"
    )


@cli.command("once-from")
@click.argument("source")
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default="/",
    show_default=True,
    help="The node's root directory (created if missing).",
)
@click.option("--skip-reboot", is_flag=True, help="Apply everything but do not reboot.")
@reports_config_errors
def once_from_command(source: str, root: Path, skip_reboot: bool) -> None:
    """Apply SOURCE (a MachineConfig or Ignition config, path or http(s) URL) once, with no cluster.

    Exit 0 when applied (or the reboot is queued or skipped), 2 when the change
    cannot be applied to this node, 1 on any other failure (everything rolled back).
    """
    configure_logging()
    root.mkdir(parents=True, exist_ok=True)
    node = node_for(Root(root))
    try:
        outcome = once_from(source, node, skip_reboot=skip_reboot)
    except UpdateError as e:
        click.echo(f"error: {e}", err=True)
        unreconcilable = str(e).startswith("can't reconcile")
        sys.exit(EXIT_UNRECONCILABLE if unreconcilable else EXIT_BAD_INPUT)
    finally:
        node.effects.systemd.close()
    click.echo(f"{outcome}: {source} applied to {root}")


EXIT_UNCHANGED = 77


@cli.command("pivot")
@click.argument("image", required=False)
@click.option("-P", "--from-etc-pullspec", is_flag=True, help=f"Read the image from {PULLSPEC}.")
@click.option("-r", "--reboot", is_flag=True, help="Reboot if the OS changed.")
@click.option("--unchanged-exit-77", is_flag=True, help="Exit 77 when already on the image.")
@click.option(
    "--root", type=click.Path(file_okay=False, path_type=Path), default="/", show_default=True
)
def pivot_command(
    image: str | None, from_etc_pullspec: bool, reboot: bool, unchanged_exit_77: bool, root: Path
) -> None:
    """Force an OS pivot to IMAGE (or the pullspec file) with rpm-ostree."""
    configure_logging()
    if image and from_etc_pullspec:
        _fail("give an IMAGE or --from-etc-pullspec, not both")
    node = node_for(Root(root))
    try:
        assert node.rpm is not None
        result = pivot(node.root, node.rpm, image)
        if (result.changed or result.kargs_changed) and reboot:
            node.effects.systemd.reboot(f"pivot to {result.image}")
    except HostError as e:
        _fail(str(e))
    finally:
        node.effects.systemd.close()
    if not result.changed and not result.kargs_changed and unchanged_exit_77:
        sys.exit(EXIT_UNCHANGED)
    click.echo(f"{'pivoted' if result.changed else 'unchanged'}: {result.image}")


@cli.command("firstboot-complete-machineconfig")
@click.option("--machineconfig-file", default=ENCAPSULATED, show_default=True)
@click.option("--root-mount", type=click.Path(file_okay=False, path_type=Path), default="/rootfs",
              show_default=True)  # fmt: skip
@click.option("--skip-reboot", is_flag=True, help="Apply, but do not reboot.")
@reports_config_errors
def firstboot_command(machineconfig_file: str, root_mount: Path, skip_reboot: bool) -> None:
    """Apply the MachineConfig encapsulated at install time, then reboot (firstboot service)."""
    configure_logging()
    node = node_for(Root(root_mount))
    try:
        outcome = firstboot_complete(node, machineconfig_file, skip_reboot=skip_reboot)
    except (UpdateError, HostError) as e:
        _fail(str(e))
    finally:
        node.effects.systemd.close()
    click.echo(f"{outcome}: {machineconfig_file}")


@cli.command("start")
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
        _fail("node-name is required")
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
        _fail(f"cannot start: {e}")
    sys.exit(agent.run())


def main() -> None:
    cli(prog_name="mcd")
