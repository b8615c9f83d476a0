"""RHCOS extensions and the packages each installs (upstream ``common/helpers.go``; ``wasm``
left upstream's list with MCO-2088)."""

from __future__ import annotations

from collections.abc import Iterable

from mcd.model.text import goquote

EXTENSION_PACKAGES: dict[str, tuple[str, ...]] = {
    "two-node-ha": ("pacemaker", "pcs", "fence-agents-all"),
    "ipsec": ("NetworkManager-libreswan", "libreswan", "openvswitch3.5-ipsec"),
    "usbguard": ("usbguard",),
    "kerberos": ("krb5-workstation", "libkadm5"),
    "kernel-devel": ("kernel-devel", "kernel-headers"),
    "sandboxed-containers": ("kata-containers",),
    "sysstat": ("sysstat",),
}
LEGACY_EXTENSION_PACKAGES: dict[str, tuple[str, ...]] = {
    "ipsec": ("NetworkManager-libreswan", "libreswan"),  # <= 4.x releases
}
"""Upstream ``LegacyExtensionPackages``: a booted OS older than the agent may carry these."""
MANAGED_PACKAGES = frozenset(p for packages in EXTENSION_PACKAGES.values() for p in packages)


def extension_packages(extensions: Iterable[str]) -> list[str]:
    return sorted({p for e in extensions for p in EXTENSION_PACKAGES.get(e, ())})


def package_changes(
    installed: Iterable[str], wanted_extensions: Iterable[str]
) -> tuple[list[str], list[str]]:
    """(install, uninstall): required packages missing, managed packages no longer required."""
    have = set(installed)
    required = extension_packages(wanted_extensions)
    install = [p for p in required if p not in have]
    uninstall = sorted(p for p in have if p in MANAGED_PACKAGES and p not in required)
    return install, uninstall


def package_sets(extension: str) -> list[tuple[str, ...]]:
    """Upstream ``GetAllValidPackageSetsForExtension``: the current set, then the legacy one;
    an extension counts as installed when every package of one set is."""
    return [
        packages
        for packages in (
            EXTENSION_PACKAGES.get(extension),
            LEGACY_EXTENSION_PACKAGES.get(extension),
        )
        if packages
    ]


def not_installed(extension: str, missing_per_set: list[list[str]]) -> str:
    """Upstream ``verifyExtensionPackages``' failure, Go's ``%q`` and ``%v`` included."""
    shown = "[" + " ".join("[" + " ".join(m) + "]" for m in missing_per_set) + "]"
    return (
        f"extension {goquote(extension)} verification failed: no valid package set is fully "
        f"installed. Tried {len(missing_per_set)} package set(s), missing packages per set: "
        f"{shown}"
    )
