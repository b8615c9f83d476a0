"""The drain decision for containerd's registry hosts (``certs.d/<namespace>/hosts.toml``):
upstream's no-drain ``registries.conf`` rules carried over (:mod:`mcd.model.disruption.hosts`),
for the files containerd's own certs.d policy covers (an administrator's policy for them is
taken as it stands, as upstream takes a user policy for ``registries.conf``)."""

from __future__ import annotations

import dataclasses

from mcd.model.disruption import hosts, runtimes
from mcd.model.disruption.policy import CRIO, NONE, Action, DisruptionPolicies, reload, restart
from mcd.model.errors import DecodeError
from mcd.model.machineconfig import MachineConfig
from mcd.model.planning.actions import ActionResult, DrainDecision, collapse
from mcd.model.planning.diff import Changes


def hosts_drain(
    old: MachineConfig, new: MachineConfig, files: Changes, policies: DisruptionPolicies
) -> DrainDecision | None:
    """Drain for the changed ``hosts.toml`` files? None when none changed under containerd's
    certs.d policy; :class:`~mcd.model.disruption.hosts.HostsTomlError` when one cannot be
    decoded (the update fails, as upstream's for ``registries.conf``)."""
    changed = {}
    for path in files.all():
        namespace = hosts.namespace_of(path)
        if namespace is not None and runtimes.reads_hosts_live(policies, path):
            changed[namespace] = path
    if not changed:
        return None
    for namespace, path in sorted(changed.items()):
        reason = hosts.unsafe_change(namespace, _data(old, path), _data(new, path))
        if reason:
            return DrainDecision(True, reason)
    return DrainDecision(False, f"{hosts.CERTS_D}: changes made are safe to skip drain")


def _data(mc: MachineConfig, path: str) -> bytes | None:
    found = None
    for f in mc.ignition.files:
        if f.path == path:
            found = f
    if found is None:
        return None
    try:
        return found.contents.decode()
    except DecodeError as e:
        raise hosts.HostsTomlError(f"failed decoding Data URL scheme string: {e.detail}") from e


def _on_containerd(action: Action) -> Action:
    if action == reload(CRIO):  # containerd reads none of the files CRI-O reloads for
        return NONE
    if action == restart(CRIO):  # the user CA bundle: containerd loads the trust store once
        return restart(runtimes.CONTAINERD)
    return action


def legacy_on_containerd(result: ActionResult) -> ActionResult:
    """The legacy table (firstboot, ``once-from``) on a containerd node: its ``reload crio``
    is None and its ``restart crio`` a restart of containerd, as the policies have them
    (:mod:`mcd.model.disruption.runtimes`); containerd's own files are not in the table and
    reboot, as every file the table does not name."""
    decisions = tuple(
        dataclasses.replace(d, actions=tuple(_on_containerd(a) for a in d.actions))
        if any(a != _on_containerd(a) for a in d.actions)
        else d
        for d in result.decisions
    )
    changed = [
        dataclasses.replace(d, rule=f"{d.rule} (on containerd)") if d != old else d
        for d, old in zip(decisions, result.decisions, strict=True)
    ]
    actions = collapse([_on_containerd(a) for a in result.actions])
    return ActionResult(actions, tuple(changed))
