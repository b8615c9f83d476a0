"""An in-memory systemd manager for in-process tests that apply thousands of configs:
unit-file states in a dict, every call recorded, no subprocess and no bus. Masking
does what systemd does on disk: ``/etc/systemd/system/<unit>`` becomes a symlink to
``/dev/null`` (and unmasking removes that symlink)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from mcd.host.systemd.manager import NOT_FOUND


class MemorySystemd:
    live = True

    def __init__(self, root: Path) -> None:
        self.root = root
        self.states: dict[str, str] = {}
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.active: dict[str, str] = {}
        """ActiveState by unit; every unit not named here is ``active``."""
        self.soft_reboot_count: int | None = None
        """``SoftRebootsCount`` (None: a systemd older than 256)."""

    def _set(self, verb: str, units: Sequence[str], state: str) -> None:
        self.calls.append((verb, tuple(units)))
        for unit in units:
            self.states[unit] = state

    def unit_file_state(self, unit: str) -> str:
        return self.states.get(unit, NOT_FOUND)

    def unit_files(self) -> set[str]:
        return set(self.states)

    def enable(self, units: Sequence[str]) -> None:
        self._set("enable", units, "enabled")

    def disable(self, units: Sequence[str]) -> None:
        self._set("disable", units, "disabled")

    def preset(self, units: Sequence[str]) -> None:
        self._set("preset", units, "enabled")

    def mask(self, units: Sequence[str]) -> None:
        self._set("mask", units, "masked")
        for unit in units:
            link = self.root / "etc/systemd/system" / unit
            with contextlib.suppress(FileNotFoundError):
                link.unlink()
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to("/dev/null")

    def unmask(self, units: Sequence[str]) -> None:
        self._set("unmask", units, "disabled")
        for unit in units:
            link = self.root / "etc/systemd/system" / unit
            if link.is_symlink() and os.readlink(link) == "/dev/null":
                link.unlink()

    def active_states(self, units: Sequence[str]) -> dict[str, str]:
        return {u: self.active.get(u, "active") for u in units}

    def daemon_reload(self) -> None:
        self.calls.append(("daemon-reload", ()))

    def reload(self, unit: str) -> None:
        self.calls.append(("reload", (unit,)))

    def restart(self, unit: str) -> None:
        self.calls.append(("restart", (unit,)))

    def stop(self, unit: str) -> None:
        self.calls.append(("stop", (unit,)))

    def start(self, unit: str) -> None:
        self.calls.append(("start", (unit,)))

    def reboot(self, rationale: str, soft: bool = False) -> None:
        self.calls.append(("soft-reboot" if soft else "reboot", ()))

    def soft_reboots(self) -> int | None:
        return self.soft_reboot_count

    def close(self) -> None:
        return None
