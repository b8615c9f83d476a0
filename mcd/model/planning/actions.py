"""Post-config actions and the drain decision.

Two calculators, as upstream: node disruption policies for updates in a cluster
(``calculatePostConfigChangeNodeDisruptionAction``) and the legacy table for
firstboot and once-from (``calculatePostConfigChangeAction``). Both return the
actions plus the ``Decision`` behind each, so a user can see which path matched
which policy.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from mcd.model.disruption import registries
from mcd.model.disruption.policy import (
    CRIO,
    NONE,
    REBOOT,
    SPECIAL,
    Action,
    ActionType,
    DisruptionPolicies,
    reload,
    restart,
)
from mcd.model.errors import DecodeError
from mcd.model.ignition.dataurl import decode_data_url
from mcd.model.machineconfig import MachineConfig
from mcd.model.planning.diff import Changes, MachineConfigDiff
from mcd.model.vocabulary import REGISTRIES_CONF, USER_CA_BUNDLE

OS_REASONS = (
    ("os_update", "osImageURL changed"),
    ("kargs", "kernel arguments changed"),
    ("fips", "FIPS changed"),
    ("kernel_type", "kernel type changed"),
    ("extensions", "extensions changed"),
)


@dataclass(frozen=True)
class Decision:
    """One reason in the plan: a subject, the policy that matched it, its actions."""

    subject: str
    rule: str
    actions: tuple[Action, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "subject": self.subject,
            "rule": self.rule,
            "actions": [a.to_json() for a in self.actions],
        }


@dataclass(frozen=True)
class ActionResult:
    actions: tuple[Action, ...]
    decisions: tuple[Decision, ...]


def collapse(actions: list[Action]) -> tuple[Action, ...]:
    """Upstream's rules: Reboot wins; None disappears next to real work; else as listed."""
    if any(a.type is ActionType.REBOOT for a in actions):
        return (REBOOT,)
    work = [a for a in actions if a.type is not ActionType.NONE]
    return tuple(work) if work else (NONE,)


def disruption_actions(
    diff: MachineConfigDiff,
    files: Changes,
    units: Changes,
    policies: DisruptionPolicies,
    force: bool = False,
) -> ActionResult:
    """Actions from node disruption policies (the in-cluster path)."""
    if force:
        decision = Decision("force file", "the force file forces a reboot", (REBOOT,))
        return ActionResult((REBOOT,), (decision,))
    os_decisions = _os_decisions(diff)
    if os_decisions:
        return ActionResult((REBOOT,), os_decisions)
    if not (diff.files or diff.units or diff.passwd):
        decision = Decision(
            "no changes in files, units or SSH keys",
            "no node disruption policies are in effect",
            (NONE,),
        )
        return ActionResult((NONE,), (decision,))
    decisions: list[Decision] = []
    for path in files.all():
        policy = policies.closest_file_policy(path)
        if policy is None:
            decisions.append(Decision(f"file {path}", "no policy matches", (REBOOT,)))
        else:
            how = "policy for" if policy.path == path else "policy for directory"
            rule = f"{policy.origin} {how} {policy.path}"
            decisions.append(Decision(f"file {path}", rule, policy.actions))
    for name in units.all():
        upolicy = policies.unit_policy(name)
        if upolicy is None:
            decisions.append(Decision(f"unit {name}", "no policy matches", (REBOOT,)))
        else:
            rule = f"{upolicy.origin} policy for unit {name}"
            decisions.append(Decision(f"unit {name}", rule, upolicy.actions))
    if diff.passwd:
        rule = f"{policies.sshkey_origin} sshkey policy"
        decisions.append(Decision("SSH keys / password", rule, policies.sshkey or (NONE,)))
    return ActionResult(collapse([a for d in decisions for a in d.actions]), tuple(decisions))


def _os_decisions(diff: MachineConfigDiff) -> tuple[Decision, ...]:
    return tuple(
        Decision(text, "OS changes always reboot", (REBOOT,))
        for attr, text in OS_REASONS
        if getattr(diff, attr)
    )


LEGACY_KEEP = frozenset({"/etc/kubernetes/kubelet-ca.crt", "/var/lib/kubelet/config.json"})
LEGACY_RELOAD = frozenset(
    {
        REGISTRIES_CONF,
        "/etc/machine-config-daemon/no-reboot/containers-gpg.pub",
        "/etc/containers/policy.json",
    }
)


def legacy_actions(diff: MachineConfigDiff, files: Changes, force: bool = False) -> ActionResult:
    """Actions from the fixed table used for firstboot and once-from."""
    if force:
        decision = Decision("force file", "the force file forces a reboot", (REBOOT,))
        return ActionResult((REBOOT,), (decision,))
    os_decisions = _os_decisions(diff)
    if diff.units:
        os_decisions += (
            Decision("systemd units", "unit changes reboot (legacy table)", (REBOOT,)),
        )
    if os_decisions:
        return ActionResult((REBOOT,), os_decisions)
    result: Action = NONE
    decisions: list[Decision] = []
    for path in files.removed + files.added + files.changed:
        if path in LEGACY_KEEP:
            decisions.append(Decision(f"file {path}", "no action needed", (NONE,)))
        elif path in LEGACY_RELOAD or posixpath.dirname(path) == "/etc/containers/registries.d":
            if result != restart(CRIO):
                result = reload(CRIO)
            decisions.append(Decision(f"file {path}", "crio reads it on reload", (reload(CRIO),)))
        elif path == USER_CA_BUNDLE:
            result = restart(CRIO)
            decisions.append(
                Decision(f"file {path}", "crio must restart for CA changes", (result,))
            )
        elif posixpath.dirname(path) == "/etc/nmstate/openshift":
            decisions.append(Decision(f"file {path}", "no action needed", (NONE,)))
        else:
            decisions.append(Decision(f"file {path}", "not in the no-reboot list", (REBOOT,)))
            return ActionResult((REBOOT,), tuple(decisions))
    return ActionResult((result,), tuple(decisions))


def registries_change_reason(old: MachineConfig, new: MachineConfig) -> str:
    """Why the registries.conf change needs a drain, or empty when it is safe.

    ``RegistriesConfError`` when either side cannot be decoded: upstream's
    ``isSafeContainerRegistryConfChanges`` fails the update then.
    """
    before = _registries_data(old, ": ")
    after = _registries_data(new, " ")
    return registries.unsafe_change(before, after)


def _registries_data(mc: MachineConfig, sep: str) -> bytes | None:
    """Upstream ``GetIgnitionFileDataByPath``: the first entry with a source, data URL
    decoded but never decompressed (a gzip file is then not TOML)."""
    for f in mc.ignition.files:
        if f.path == REGISTRIES_CONF and f.contents.source is not None:
            try:
                return decode_data_url(f.contents.source)
            except DecodeError as e:
                # upstream's two messages differ by a colon
                raise registries.RegistriesConfError(
                    f"failed decoding Data URL scheme string{sep}{e.detail}"
                ) from e
    return None


@dataclass(frozen=True)
class DrainDecision:
    required: bool
    reason: str


def drain_decision(
    actions: tuple[Action, ...],
    old: MachineConfig,
    new: MachineConfig,
    files: Changes,
    legacy: bool = False,
) -> DrainDecision:
    """Drain before the update?

    Upstream ``isDrainRequiredForNodeDisruptionActions``, or ``isDrainRequired`` for ``legacy``.
    """
    types = {a.type for a in actions}
    if ActionType.REBOOT in types:
        return DrainDecision(True, "the update reboots the node")
    if ActionType.DRAIN in types:
        return DrainDecision(True, "a policy asks for a drain")
    special = ActionType.SPECIAL in types or (
        legacy
        and REGISTRIES_CONF in files.all()
        and types & {ActionType.RELOAD, ActionType.RESTART}
    )
    if special:
        reason = registries_change_reason(old, new)
        if reason:
            return DrainDecision(True, reason)
        return DrainDecision(False, f"{REGISTRIES_CONF}: changes made are safe to skip drain")
    return DrainDecision(False, "no action needs a drain")


def executed_actions(actions: tuple[Action, ...]) -> tuple[Action, ...]:
    """What the executor runs: ``Special`` is a reload of crio, as upstream."""
    return tuple(reload(CRIO) if a == SPECIAL else a for a in actions)
