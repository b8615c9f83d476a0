"""Commands on config files alone: ``plan``, ``validate``, ``diff``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from mcd.cli.common import (
    EXIT_MISMATCH,
    EXIT_OK,
    config_file,
    connect,
    existing_root,
    fail,
    from_cluster_option,
    kube_options,
    output_options,
    plan_flags,
    policy_option,
    read_config,
    reports_config_errors,
    say,
)
from mcd.cli.output import emit
from mcd.model.errors import ConfigError
from mcd.model.machineconfig import decode_document

if TYPE_CHECKING:
    from mcd.model.planning.applicability import HostSupport
    from mcd.model.planning.plan import UpdatePlan

# Each command imports what only it uses inside its body (PLC0415): start-up is most of
# what these commands cost, and `mcd diff` need not load the planner or the host layer.


@click.command()
@click.argument("old", required=False, type=config_file)
@click.argument("new", required=False, type=config_file)
@policy_option
@from_cluster_option
@kube_options
@click.option(
    "--root",
    "host_root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Plan for the host under this root: what it can apply (OS image tool, boot loader).",
)
@plan_flags
@output_options
@reports_config_errors
def plan(
    old: Path | None,
    new: Path | None,
    policy_file: Path | None,
    node_name: str | None,
    kubeconfig: str | None,
    host_root: Path | None,
    force: bool,
    legacy: bool,
) -> None:
    """Show what moving a node from OLD to NEW changes, costs, and why.

    With --from-cluster NODE, OLD and NEW are the node's current and desired
    configs and the policies come from MachineConfiguration/cluster. With --root,
    a change the host there cannot apply (an OS image, kernel type or extensions
    without rpm-ostree or bootc, kernel arguments with no boot loader mcd drives)
    is not reconcilable, naming the field and the OS.
    Exit 0 when the change is reconcilable, 2 when it is not, 1 on bad or missing input.
    """
    import dataclasses  # noqa: PLC0415

    from mcd.model.disruption.policy import (  # noqa: PLC0415
        DEFAULT_POLICIES,
        merge_policies,
        parse_user_policies,
    )
    from mcd.model.planning.describe import describe_plan  # noqa: PLC0415
    from mcd.model.planning.plan import make_plan  # noqa: PLC0415

    if node_name is not None:
        if old is not None or policy_file is not None or force or legacy or host_root:
            raise click.UsageError(
                "--from-cluster takes no OLD/NEW, --policy, --root, --force or --legacy"
            )
        result = cluster_plan(node_name, kubeconfig)
    else:
        if old is None or new is None:
            raise click.UsageError("plan needs OLD and NEW, --pool POOL or --from-cluster NODE")
        policies = DEFAULT_POLICIES
        if policy_file is not None:
            try:
                user = parse_user_policies(decode_document(policy_file.read_bytes()))
            except ConfigError as e:
                raise ConfigError(f"{policy_file}: {e}") from e
            policies = merge_policies(DEFAULT_POLICIES, user)
            policies = dataclasses.replace(policies, source=f"{policy_file}: {policies.source}")
        host = _host_support(host_root) if host_root is not None else None
        result = make_plan(
            read_config(old), read_config(new), policies, force=force, legacy=legacy, host=host
        )
    emit(result.to_json(), lambda _: describe_plan(result))
    sys.exit(EXIT_OK if result.reconcilable else EXIT_MISMATCH)


def _host_support(root: Path) -> HostSupport:
    from mcd.host.bootloader.detect import detect  # noqa: PLC0415
    from mcd.host.rootfs import Root  # noqa: PLC0415

    return detect(Root(root), rpm_ostree=True)  # as the agent: an ostree host is rpm-ostree's


def cluster_plan(node: str, kubeconfig: str | None) -> UpdatePlan:
    """The agent's plan for NODE, from the cluster (``mcd plan --from-cluster``)."""
    from mcd.agent.commands.inspect import pending_plan  # noqa: PLC0415
    from mcd.cluster.api import ApiError, Kube  # noqa: PLC0415
    from mcd.cluster.configs import MachineConfigNotFound  # noqa: PLC0415
    from mcd.cluster.policies import PoliciesNotReady  # noqa: PLC0415

    try:
        return pending_plan(Kube(connect(kubeconfig)), node)
    except (ApiError, MachineConfigNotFound, PoliciesNotReady) as e:
        fail(f"cannot plan node {node}: {e}")


@click.command()
@click.argument("config", type=config_file)
@existing_root
@output_options
@reports_config_errors
def validate(config: Path, root: Path) -> None:
    """Check that the files, units, dropins and masks of CONFIG are on disk under ROOT.

    Unit enablement and masks are asked of the node's systemd (over D-Bus, or
    ``systemctl --root`` for an offline root). Prints every mismatch (never file
    contents). Exit 0 when the node matches, 2 when it does not, 1 on bad input.
    """
    from mcd.host.bootloader.kargs import dropin_problem  # noqa: PLC0415
    from mcd.host.ondisk.validation import validate_on_disk  # noqa: PLC0415
    from mcd.host.rootfs import Root  # noqa: PLC0415
    from mcd.host.runner import Runner  # noqa: PLC0415
    from mcd.host.systemd.connect import connect as connect_systemd  # noqa: PLC0415

    mc = read_config(config)
    node = Root(root)
    systemd = connect_systemd(node, Runner())
    try:
        report = validate_on_disk(mc, node, systemd)
    finally:
        systemd.close()
    for reason in report.reasons():
        say(reason)
    grub = _host_support(root).kernel_arguments == "grub"
    boot = grub and dropin_problem(node, mc.kernel_arguments)
    if boot:  # the managed GRUB drop-in, changed by hand
        say(f"unexpected on-disk state validating against {mc.name}: {boot}")
    if not report.ok or boot:
        sys.exit(EXIT_MISMATCH)
    say(
        f"on-disk state matches {mc.name}: {report.files_checked} files, "
        f"{report.units_checked} units checked"
    )


@click.command("diff")
@click.argument("config_a", type=config_file)
@click.argument("config_b", type=config_file)
@click.option("--exit-code", is_flag=True, help="Exit 2 when the configs differ.")
@output_options
@reports_config_errors
def diff(config_a: Path, config_b: Path, exit_code: bool) -> None:
    """The file-level unified diff from CONFIG_A to CONFIG_B (units, dropins, OS fields too).

    Files that look secret (pull secrets, keys, certificates, kubeconfigs) are
    shown as changed, never printed; so are SSH keys and password hashes.
    Exit 0, or with --exit-code 2 when the configs differ; 1 on bad or missing input.
    """
    from mcd.model.planning.filediff import render_diff  # noqa: PLC0415

    text, differs = render_diff(read_config(config_a), read_config(config_b))
    say(text or "no differences\n", nl=False)
    if differs and exit_code:
        sys.exit(EXIT_MISMATCH)
