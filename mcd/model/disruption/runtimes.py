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

Upstream's defaults that reload CRI-O (``policy.json``, ``registries.conf`` and
``registries.d``, ``/etc/crio/policies``, the ``containers-gpg.pub`` key) are None on a
containerd node: containerd reads none of those files, and there is no ``crio.service`` to
reload (the reload would fail the update). The user CA bundle restarts containerd instead
of CRI-O: containerd, as any Go program, loads the system trust store once.
"""

from __future__ import annotations

import dataclasses

from mcd.model.disruption.policy import (
    DEFAULT,
    DRAIN,
    NONE,
    UPDATE_CA_TRUST,
    DisruptionPolicies,
    FilePolicy,
    restart,
)
from mcd.model.vocabulary import CONTAINERD_RUNTIME, USER_CA_BUNDLE

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
        # upstream's CRI-O defaults, as they stand on a containerd node
        FilePolicy(
            "/etc/machine-config-daemon/no-reboot/containers-gpg.pub", (NONE,), RUNTIME_ORIGIN
        ),
        FilePolicy("/etc/containers/policy.json", (NONE,), RUNTIME_ORIGIN),
        FilePolicy("/etc/containers/registries.conf", (NONE,), RUNTIME_ORIGIN),
        FilePolicy("/etc/containers/registries.d", (NONE,), RUNTIME_ORIGIN),
        FilePolicy("/etc/crio/policies", (NONE,), RUNTIME_ORIGIN),
        FilePolicy(USER_CA_BUNDLE, (restart(UPDATE_CA_TRUST), restart(CONTAINERD)), RUNTIME_ORIGIN),
    ),
}


def for_runtime(policies: DisruptionPolicies, runtime: str) -> DisruptionPolicies:
    """``policies`` with ``runtime``'s own defaults: each replaces a default policy for the
    same path, or is appended; an administrator's policy for the path wins. Unchanged for
    CRI-O or an unknown runtime."""
    extra = RUNTIME_POLICIES.get(runtime, ())
    if not extra:
        return policies
    files = list(policies.files)
    for policy in extra:
        at = next((i for i, p in enumerate(files) if p.path == policy.path), None)
        if at is None:
            files.append(policy)
        elif files[at].origin == DEFAULT:
            files[at] = policy
    return dataclasses.replace(
        policies, files=tuple(files), source=f"{policies.source}, with containerd's defaults"
    )


def reads_hosts_live(policies: DisruptionPolicies, path: str) -> bool:
    """Whether ``path`` falls under containerd's own certs.d policy (not an administrator's):
    only then is a hosts.toml change judged by the registry no-drain rules."""
    policy = policies.closest_file_policy(path)
    return (
        policy is not None
        and policy.origin == RUNTIME_ORIGIN
        and policy.path == (CONTAINERD_CERTS_D)
    )
