"""systemd for an offline root: unit files through ``systemctl --root``, no live actions."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from mcd.host.rootfs import Root
from mcd.host.runner import CommandError, Runner
from mcd.host.systemd.manager import NOT_FOUND, SystemdError, SystemdUnavailable

log = logging.getLogger(__name__)


class OfflineSystemd:
    """Unit files of an offline root through ``systemctl --root``; no live actions."""

    live = False

    def __init__(self, root: Root, runner: Runner, why: str = "") -> None:
        self._root = root
        self._runner = runner
        self._why = why or f"no systemd manager reachable for root {root.path}"

    def _systemctl(self, *args: str, check: bool = True) -> str:
        argv = ["systemctl", f"--root={self._root.path}", *args]
        try:
            return self._runner.run(argv, check=check).stdout
        except CommandError as e:
            raise SystemdError(str(e)) from e

    def unit_file_state(self, unit: str) -> str:
        out = self._systemctl("is-enabled", unit, check=False).strip()
        return out.splitlines()[-1].strip() if out else NOT_FOUND

    def unit_files(self) -> set[str]:
        out = self._systemctl("list-unit-files", "--no-legend", "--no-pager", "--full")
        return {line.split()[0] for line in out.splitlines() if line.strip()}

    def enable(self, units: Sequence[str]) -> None:
        if units:
            self._systemctl("enable", *units)

    def disable(self, units: Sequence[str]) -> None:
        if units:
            self._systemctl("disable", *units)

    def preset(self, units: Sequence[str]) -> None:
        if units:
            self._systemctl("preset", *units)

    def mask(self, units: Sequence[str]) -> None:
        if units:
            self._systemctl("mask", "--force", *units)

    def unmask(self, units: Sequence[str]) -> None:
        if units:
            self._systemctl("unmask", *units)

    def _unavailable(self, what: str) -> SystemdUnavailable:
        return SystemdUnavailable(f"cannot {what}: {self._why}")

    def daemon_reload(self) -> None:
        raise self._unavailable("reload the systemd manager configuration")

    def reload(self, unit: str) -> None:
        raise self._unavailable(f"reload {unit}")

    def restart(self, unit: str) -> None:
        raise self._unavailable(f"restart {unit}")

    def stop(self, unit: str) -> None:
        raise self._unavailable(f"stop {unit}")

    def start(self, unit: str) -> None:
        raise self._unavailable(f"start {unit}")

    def active_states(self, units: Sequence[str]) -> dict[str, str]:
        raise self._unavailable("read unit states")

    def reboot(self, rationale: str, soft: bool = False) -> None:
        raise self._unavailable("reboot")

    def soft_reboots(self) -> int | None:
        return None

    def close(self) -> None:
        return None
