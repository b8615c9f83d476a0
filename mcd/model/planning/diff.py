"""What changed between two MachineConfigs (upstream ``newMachineConfigDiff``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mcd.model.machineconfig import MachineConfig

CATEGORY_NAMES = (
    "osUpdate",
    "kargs",
    "fips",
    "passwd",
    "files",
    "units",
    "kernelType",
    "extensions",
)


@dataclass(frozen=True)
class MachineConfigDiff:
    os_update: bool = False
    kargs: bool = False
    fips: bool = False
    passwd: bool = False
    files: bool = False
    units: bool = False
    kernel_type: bool = False
    extensions: bool = False

    def categories(self) -> list[str]:
        """Names of the changed categories, in upstream order and spelling."""
        flags = (
            self.os_update, self.kargs, self.fips, self.passwd,
            self.files, self.units, self.kernel_type, self.extensions,
        )  # fmt: skip
        return [name for name, on in zip(CATEGORY_NAMES, flags, strict=True) if on]

    def is_empty(self) -> bool:
        return not self.categories()

    @property
    def os_changes(self) -> bool:
        """Anything rpm-ostree has to do."""
        return self.os_update or self.kargs or self.kernel_type or self.extensions

    def os_changes_string(self) -> str:
        parts = [
            text
            for on, text in (
                (self.os_update, "Upgrading OS"),
                (self.extensions, "Installing extensions"),
                (self.kernel_type, "Changing kernel type"),
                (self.kargs, "Changing kernel arguments"),
            )
            if on
        ]
        return "; ".join(parts)


@dataclass(frozen=True)
class Changes:
    """Names (paths or unit names) added, changed and removed, each sorted."""

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def all(self) -> tuple[str, ...]:
        return tuple(sorted(self.added + self.changed + self.removed))

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)


def diff_machine_configs(
    old: MachineConfig, new: MachineConfig, force: bool = False
) -> MachineConfigDiff:
    """The diff categories. ``force`` (the force file) marks an OS update as upstream does."""
    oi, ni = old.ignition, new.ignition
    return MachineConfigDiff(
        os_update=old.os_image_url != new.os_image_url or force,
        kargs=old.kernel_arguments != new.kernel_arguments,
        fips=old.fips != new.fips,
        passwd=oi.passwd != ni.passwd,
        files=oi.files != ni.files,
        units=oi.units != ni.units,
        kernel_type=old.canonical_kernel_type != new.canonical_kernel_type,
        extensions=old.extensions != new.extensions,
    )


def file_changes(old: MachineConfig, new: MachineConfig) -> Changes:
    """Paths only in one config, or whose whole entry differs (``CalculateConfigFileDiffs``)."""
    return _changes(old.ignition.file_index, new.ignition.file_index)


def unit_changes(old: MachineConfig, new: MachineConfig) -> Changes:
    """Unit names added, removed or updated, by whole-entry equality."""
    return _changes(
        {u.name: u for u in old.ignition.units}, {u.name: u for u in new.ignition.units}
    )


def _changes(old: Mapping[str, object], new: Mapping[str, object]) -> Changes:
    added = sorted(k for k in new if k not in old)
    removed = sorted(k for k in old if k not in new)
    changed = sorted(k for k in new if k in old and old[k] != new[k])
    return Changes(tuple(added), tuple(changed), tuple(removed))
