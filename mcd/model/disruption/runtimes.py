"""The container runtime's own files, per runtime: what a change to each costs.

CRI-O's are upstream's default cluster policies (:data:`~mcd.model.disruption.policy.
DEFAULT_POLICIES`), unchanged. On a containerd node (:mod:`mcd.model.node.runtime`) these
defaults are added after them; an administrator's policy for the same path still wins, and
a CRI-O node never sees them:

- ``/etc/containerd/certs.d`` (directory): None. containerd's CRI plugin reads
  ``hosts.toml`` and the CA and client files it names on every pull (its
  ``registry.config_path``), so nothing restarts; whether the change needs a drain is
  decided as upstream decides it for ``registries.conf`` (:mod:`mcd.model.disruption.hosts`).
- ``/etc/containerd/config.toml`` and ``/etc/containerd/conf.d`` (drop-ins a
  config.toml ``imports``): Drain, then Restart ``containerd.service``. containerd reads
  its config only at start; a restart keeps running containers (their shims live on), so
  no reboot, but the new settings (runtimes, sandbox image, snapshotter, cgroups) apply to
  containers started after it: the drain moves the pods off first, so none straddles two
  configurations. Upstream has no policy for CRI-O's ``crio.conf`` and reboots for it.
"""

from __future__ import annotations

import dataclasses

from mcd.model.disruption.policy import (
    DRAIN,
    NONE,
    DisruptionPolicies,
    FilePolicy,
    restart,
)
from mcd.model.vocabulary import CONTAINERD_RUNTIME

__all__ = ["CONTAINERD_RUNTIME", "RUNTIME_POLICIES", "for_runtime", "reads_hosts_live"]

CONTAINERD = "containerd.service"
CONTAINERD_CERTS_D = "/etc/containerd/certs.d"
CONTAINERD_CONFIG = "/etc/containerd/config.toml"
CONTAINERD_CONF_D = "/etc/containerd/conf.d"
RUNTIME_ORIGIN = "containerd default"
"""The ``origin`` of these policies: the plan's reader sees where a rule came from."""

RUNTIME_POLICIES: dict[str, tuple[FilePolicy, ...]] = {
    CONTAINERD_RUNTIME: (
        FilePolicy(CONTAINERD_CERTS_D, (NONE,), RUNTIME_ORIGIN),
        FilePolicy(CONTAINERD_CONFIG, (DRAIN, restart(CONTAINERD)), RUNTIME_ORIGIN),
        FilePolicy(CONTAINERD_CONF_D, (DRAIN, restart(CONTAINERD)), RUNTIME_ORIGIN),
    ),
}


def for_runtime(policies: DisruptionPolicies, runtime: str) -> DisruptionPolicies:
    """``policies`` with ``runtime``'s own defaults appended, each only where no policy for
    the same path exists (the administrator's wins); unchanged for CRI-O or an unknown
    runtime."""
    extra = RUNTIME_POLICIES.get(runtime, ())
    have = {p.path for p in policies.files}
    added = tuple(p for p in extra if p.path not in have)
    if not added:
        return policies
    return dataclasses.replace(
        policies,
        files=policies.files + added,
        source=f"{policies.source}, with containerd's defaults",
    )


def reads_hosts_live(policies: DisruptionPolicies, path: str) -> bool:
    """Whether ``path`` falls under containerd's own certs.d policy (not an administrator's):
    only then is a hosts.toml change judged by the registry no-drain rules."""
    policy = policies.closest_file_policy(path)
    return policy is not None and policy.origin == RUNTIME_ORIGIN and policy.path == (
        CONTAINERD_CERTS_D
    )
