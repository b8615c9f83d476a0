"""systemd units and dropins of a MachineConfig (upstream ``writeUnits``)."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.fs.backups import Backups
from mcd.host.rootfs import Root
from mcd.host.systemd.manager import SystemdError, SystemdManager
from mcd.model.ignition.config import DEFAULT_FILE_MODE, Unit
from mcd.model.text import goquote
from mcd.model.vocabulary import dropin_path, unit_path

log = logging.getLogger(__name__)

DEV_NULL = "/dev/null"


class UnitWriter:
    """Writes unit files and dropins, masks, and sets enablement as the config says."""

    def __init__(self, root: Root, systemd: SystemdManager, backups: Backups) -> None:
        self._root = root
        self._systemd = systemd
        self._backups = backups
        self._known: set[str] | None = None

    def write(self, units: Iterable[Unit]) -> None:
        enable: list[str] = []
        disable: list[str] = []
        for unit in units:
            self._write_dropins(unit)
            path = unit_path(unit.name)
            if unit.mask:
                log.info("Systemd unit masked: %s", unit.name)
                fsops.remove(self._root, path)
                self._systemd.mask([unit.name])
                continue
            if unit.contents:
                self._backup(path)
                if self._systemd.unit_file_state(unit.name) == "enabled":
                    # WantedBy= may change with the new contents (OCPBUGS-33694)
                    log.info("Disabling systemd unit %s before re-writing it", unit.name)
                    self._systemd.disable([unit.name])
                log.info("Writing systemd unit %s", goquote(unit.name))
                fsops.write_file(self._root, path, unit.contents.encode(), DEFAULT_FILE_MODE)
            elif unit.mask is False:
                self._unmask(unit.name, path)
            else:
                log.info("Unit %s has no content, skipping write", goquote(unit.name))
            if unit.enabled is None:
                self._preset(unit.name)
            elif unit.contents or unit.name in self._unit_files():
                (enable if unit.enabled else disable).append(unit.name)
            else:
                verb = "enable" if unit.enabled else "disable"
                log.info(
                    "Could not %s unit %s, because it has no contents, skipping",
                    verb,
                    goquote(unit.name),
                )
        if enable:
            try:
                self._systemd.enable(enable)
            except SystemdError as e:
                raise SystemdError(f"error enabling units: {e}") from e
            log.info("Enabled systemd units: %s", enable)
        if disable:
            try:
                self._systemd.disable(disable)
            except SystemdError as e:
                raise SystemdError(f"error disabling unit: {e}") from e
            log.info("Disabled systemd units %s", disable)

    def _write_dropins(self, unit: Unit) -> None:
        for dropin in unit.dropins:
            path = dropin_path(unit.name, dropin.name)
            if not dropin.contents:
                fsops.remove(self._root, path)
                log.info("Dropin for %s has no content, skipping write", dropin.name)
                continue
            self._backup(path)
            log.info("Writing systemd unit dropin %s", goquote(dropin.name))
            fsops.write_file(self._root, path, dropin.contents.encode(), DEFAULT_FILE_MODE)

    def _backup(self, path: str) -> None:
        vendor = "/usr" + path  # the pristine copy on ostree systems
        self._backups.preserve(path, vendor if self._root.exists(vendor) else path)

    def _unmask(self, name: str, path: str) -> None:
        try:
            masked = self._root.symlink_target(path) == DEV_NULL
        except (OSError, HostError):
            masked = False
        if masked:
            self._systemd.unmask([name])
        fsops.remove(self._root, path)  # upstream removes whatever was there

    def _preset(self, name: str) -> None:
        try:
            self._systemd.preset([name])
        except SystemdError as e:
            log.warning("Preset of %s failed: %s", name, e)

    def _unit_files(self) -> set[str]:
        if self._known is None:
            self._known = self._systemd.unit_files()
        return self._known
