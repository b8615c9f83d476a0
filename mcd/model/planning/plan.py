"""The update plan: everything later layers need to move a node between two configs."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from mcd.model.disruption import runtimes
from mcd.model.disruption.policy import DEFAULT_POLICIES, Action, ActionType, DisruptionPolicies
from mcd.model.errors import ConfigError, UnreconcilableError
from mcd.model.machineconfig import MachineConfig, machine_config_from_object
from mcd.model.osupdate.kargs import rpm_ostree_kargs
from mcd.model.planning import applicability, rebootkind, registryhosts
from mcd.model.planning.actions import (
    Decision,
    disruption_actions,
    drain_decision,
    legacy_actions,
)
from mcd.model.planning.applicability import HostSupport
from mcd.model.planning.diff import (
    Changes,
    MachineConfigDiff,
    diff_machine_configs,
    file_changes,
    unit_changes,
)
from mcd.model.planning.rebootkind import RebootChoice
from mcd.model.planning.reconcile import Overrides, check_diffable, check_reconcilable


class Cost(IntEnum):
    """How disruptive an update is, from nothing to a reboot."""

    NONE = 0
    RELOAD = 1
    RESTART = 2
    DRAIN = 3
    REBOOT = 4

    @property
    def label(self) -> str:
        return self.name.lower()


_ACTION_COST = {
    ActionType.NONE: Cost.NONE,
    ActionType.RELOAD: Cost.RELOAD,
    ActionType.DAEMON_RELOAD: Cost.RELOAD,
    ActionType.SPECIAL: Cost.RELOAD,
    ActionType.RESTART: Cost.RESTART,
    ActionType.DRAIN: Cost.DRAIN,
    ActionType.REBOOT: Cost.REBOOT,
}


@dataclass(frozen=True)
class UpdatePlan:
    old: MachineConfig
    new: MachineConfig
    reconcilable: bool
    reason: str
    diff: MachineConfigDiff
    files: Changes
    units: Changes
    actions: tuple[Action, ...] = ()
    decisions: tuple[Decision, ...] = ()
    drain: bool = False
    drain_reason: str = ""
    kernel_arguments: tuple[str, ...] = field(default=())
    """``rpm-ostree kargs`` options; empty when the kernel arguments do not change."""
    force: bool = False
    policy_source: str = ""
    """Where the node disruption policies came from ('' with the legacy table)."""
    host: HostSupport | None = None
    """What the node can apply (None: not known, upstream's CoreOS assumption)."""
    inapplicable: tuple[applicability.Inapplicable, ...] = ()
    """Changed fields the node cannot apply (the plan is then not reconcilable)."""
    reboot_choice: RebootChoice = rebootkind.NO_REBOOT

    @property
    def reboot(self) -> bool:
        return any(a.type is ActionType.REBOOT for a in self.actions)

    @property
    def cost(self) -> Cost:
        costs = [_ACTION_COST[a.type] for a in self.actions]
        if self.drain:
            costs.append(Cost.DRAIN)
        return max(costs, default=Cost.NONE)

    @property
    def needs_nothing(self) -> bool:
        return self.reconcilable and self.cost is Cost.NONE and self.diff.is_empty()

    def to_json(self) -> dict[str, object]:
        return {
            "old": self.old.name,
            "new": self.new.name,
            "reconcilable": self.reconcilable,
            "reason": self.reason,
            "diff": self.diff.categories(),
            "actions": [a.to_json() for a in self.actions],
            "drain": self.drain,
            "drainReason": self.drain_reason,
            "reboot": self.reboot,
            "cost": self.cost.label,
            "files": _changes_json(self.files),
            "units": _changes_json(self.units),
            "kernelArguments": list(self.kernel_arguments),
            "osChanges": self.diff.os_changes_string(),
            "decisions": [d.to_json() for d in self.decisions],
            "force": self.force,
            "policySource": self.policy_source,
            "host": self.host.to_json() if self.host is not None else None,
            "notApplicable": [{"field": f.field, "why": f.why} for f in self.inapplicable],
            "rebootKind": self.reboot_choice.to_json(),
        }


def _changes_json(c: Changes) -> dict[str, list[str]]:
    return {"added": list(c.added), "changed": list(c.changed), "removed": list(c.removed)}


def make_plan(
    old: MachineConfig,
    new: MachineConfig,
    policies: DisruptionPolicies = DEFAULT_POLICIES,
    *,
    force: bool = False,
    legacy: bool = False,
    overrides: Overrides | None = None,
    node_fips: bool | None = None,
    host: HostSupport | None = None,
    soft_reboot: bool = False,
) -> UpdatePlan:
    """Plan the move from ``old`` to ``new``.

    ``force`` is the force file; ``legacy`` selects the firstboot/once-from action
    table instead of node disruption policies. An unreconcilable change yields a
    plan with ``reconcilable=False``, the upstream reason and no actions.
    ``host`` is what the node can apply (:mod:`mcd.model.planning.applicability`): a
    changed field it cannot apply makes the plan not reconcilable on that node, naming
    the field and the OS. ``soft_reboot`` is the pool's setting
    (:mod:`mcd.model.planning.rebootkind`).
    """
    check_diffable(old, new)
    if node_fips is not None and new.fips == node_fips:
        # Upstream checkFIPS sets the current config's FIPS to the node's before diffing.
        old = dataclasses.replace(old, fips=node_fips)
    diff = diff_machine_configs(old, new, force=force)
    files = file_changes(old, new)
    units = unit_changes(old, new)
    try:
        check_reconcilable(old, new, overrides, node_fips)
    except UnreconcilableError as e:
        return UpdatePlan(old, new, False, str(e), diff, files, units, force=force, host=host)
    missing = applicability.inapplicable(old, new, host) if host is not None else []
    if host is not None and missing and host.known_os:
        detail = applicability.refusal(new.name, host, missing)
        reason = str(UnreconcilableError(old.name, new.name, detail))
        return UpdatePlan(
            old, new, False, reason, diff, files, units,
            force=force, host=host, inapplicable=tuple(missing),
        )  # fmt: skip
    runtime = host.container_runtime if host is not None else ""
    if not legacy:  # containerd's own files, on a containerd node
        policies = runtimes.for_runtime(policies, runtime)
    result = (
        legacy_actions(diff, files, force)
        if legacy
        else disruption_actions(diff, files, units, policies, force)
    )
    if legacy and runtime == runtimes.CONTAINERD_RUNTIME:
        result = registryhosts.legacy_on_containerd(result)
    drain = drain_decision(result.actions, old, new, files, legacy=legacy)
    if not drain.required and not legacy and runtime == runtimes.CONTAINERD_RUNTIME:
        drain = registryhosts.hosts_drain(old, new, files, policies) or drain
    kargs = rpm_ostree_kargs(old.kernel_arguments, new.kernel_arguments) if diff.kargs else []
    reboot = any(a.type is ActionType.REBOOT for a in result.actions)
    return UpdatePlan(
        old=old,
        new=new,
        reconcilable=True,
        reason="",
        diff=diff,
        files=files,
        units=units,
        actions=result.actions,
        decisions=result.decisions,
        drain=drain.required,
        drain_reason=drain.reason,
        kernel_arguments=tuple(kargs),
        force=force,
        policy_source="" if legacy else policies.source,
        host=host,
        inapplicable=tuple(missing),
        reboot_choice=rebootkind.choose(reboot, diff, host, soft_reboot),
    )


def update_cost(configs: Mapping[str, Mapping[str, Any]], current: str, target: str) -> Cost | None:
    """What moving a node from ``current`` to ``target`` costs (``mcd plan``); None when
    either config is missing or unreadable (the caller then assumes the worst)."""
    old, new = config_named(configs, current), config_named(configs, target)
    if old is None or new is None:
        return None
    plan = make_plan(old, new)
    return plan.cost if plan.reconcilable else None


def config_named(configs: Mapping[str, Mapping[str, Any]], name: str) -> MachineConfig | None:
    """The MachineConfig ``name`` of ``configs`` (objects by name), parsed; None when it is
    missing or unreadable."""
    doc = configs.get(name) if name else None
    if doc is None:
        return None
    try:
        return machine_config_from_object(doc, name)
    except ConfigError:
        return None
