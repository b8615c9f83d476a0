"""The node's operating system, from ``/etc/os-release`` (else ``/usr/lib/os-release``)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from mcd.host.errors import HostError
from mcd.host.rootfs import Root

PATHS = ("/etc/os-release", "/usr/lib/os-release")


@dataclass(frozen=True)
class OsRelease:
    id: str
    version_id: str = ""
    variant_id: str = ""
    version: str = ""
    rhel_version: str = ""
    openshift_version: str = ""

    @property
    def is_el(self) -> bool:
        return self.id in ("rhcos", "scos") or (
            self.id in ("rhel", "centos") and self.variant_id == "coreos"
        )

    @property
    def is_coreos_variant(self) -> bool:
        return self.variant_id == "coreos" or self.is_el

    @property
    def label(self) -> str:
        """The ``os`` label of ``mcd_host_os_and_version`` (upper-cased ID, as upstream)."""
        return self.id.upper()

    @property
    def os_version(self) -> str:
        return self.rhel_version or self.openshift_version or self.version or self.version_id


def parse_os_release(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, raw = line.partition("=")
        try:
            parts = shlex.split(raw)
        except ValueError:
            continue
        values[key.strip()] = parts[0] if parts else ""
    return values


def read_os_release(root: Root) -> OsRelease:
    for path in PATHS:
        try:
            values = parse_os_release(root.read_bytes(path).decode(errors="replace"))
        except (FileNotFoundError, OSError, HostError):
            continue
        if values.get("ID"):
            return OsRelease(
                id=values["ID"],
                version_id=values.get("VERSION_ID", ""),
                variant_id=values.get("VARIANT_ID", ""),
                version=values.get("VERSION", ""),
                rhel_version=values.get("RHEL_VERSION", ""),
                openshift_version=values.get("OPENSHIFT_VERSION", ""),
            )
    raise HostError("checking operating system: no ID in /etc/os-release or /usr/lib/os-release")
