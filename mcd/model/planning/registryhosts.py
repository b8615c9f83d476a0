"""The drain decision for containerd's registry hosts (``certs.d/<namespace>/hosts.toml``):
upstream's no-drain ``registries.conf`` rules carried over (:mod:`mcd.model.disruption.hosts`),
for the files containerd's own certs.d policy covers (an administrator's policy for them is
taken as it stands, as upstream takes a user policy for ``registries.conf``)."""

from __future__ import annotations

from mcd.model.disruption import hosts, runtimes
from mcd.model.disruption.policy import DisruptionPolicies
from mcd.model.errors import DecodeError
from mcd.model.machineconfig import MachineConfig
from mcd.model.planning.actions import DrainDecision
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
