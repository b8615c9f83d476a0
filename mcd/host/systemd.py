"""The systemd interface the agent uses, and how it is reached.

Two implementations share :class:`SystemdManager`:

* :class:`~mcd.host.dbus_systemd.DBusSystemd` talks to the node's running
  systemd over the system bus (``<root>/run/dbus/system_bus_socket`` or
  ``DBUS_SYSTEM_BUS_ADDRESS``): unit files, daemon-reload, reload / restart
  jobs awaited to their result, and the reboot.
* :class:`OfflineSystemd` serves an offline root (an image being prepared, a
  host with no manager reachable): unit-file changes go through
  ``systemctl --root``, and anything that needs a running manager fails with
  a clear error instead of pretending it happened.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Protocol

from mcd.host.errors import HostError
from mcd.host.rootfs import Root
from mcd.host.runner import CommandError, Runner

log = logging.getLogger(__name__)

SYSTEM_BUS_SOCKET = "/run/dbus/system_bus_socket"
FINALIZE_STAGED = "ostree-finalize-staged.service"
REBOOT_UNIT = "machine-config-daemon-reboot.service"
NOT_FOUND = "not-found"


class SystemdError(HostError):
    """A systemd operation failed."""


class SystemdUnavailable(SystemdError):
    """The operation needs a running systemd manager and none is reachable."""


class JobFailed(SystemdError):
    def __init__(self, verb: str, unit: str, result: str) -> None:
        self.unit = unit
        self.result = result
        super().__init__(f"{verb} {unit} failed: job result {result!r}")


class SystemdManager(Protocol):
    """What the host layer and the agent ask of systemd."""

    @property
    def live(self) -> bool:
        """True when a running manager answers (jobs and reboot are possible)."""
        ...

    def unit_file_state(self, unit: str) -> str:
        """``systemctl is-enabled``: enabled, disabled, static, masked, ... or ``not-found``."""
        ...

    def unit_files(self) -> set[str]:
        """Names of every unit file systemd knows."""
        ...

    def enable(self, units: Sequence[str]) -> None: ...

    def disable(self, units: Sequence[str]) -> None: ...

    def preset(self, units: Sequence[str]) -> None: ...

    def mask(self, units: Sequence[str]) -> None: ...

    def unmask(self, units: Sequence[str]) -> None: ...

    def daemon_reload(self) -> None: ...

    def reload(self, unit: str) -> None:
        """Reload ``unit`` and wait for the job; :class:`JobFailed` on a bad result."""
        ...

    def restart(self, unit: str) -> None:
        """Restart ``unit`` and wait for the job; :class:`JobFailed` on a bad result."""
        ...

    def stop(self, unit: str) -> None:
        """``systemctl stop``: stop ``unit`` and wait for the job."""
        ...

    def start(self, unit: str) -> None:
        """``systemctl start``: start ``unit`` and wait for the job."""
        ...

    def reboot(self, rationale: str) -> None:
        """Queue the reboot as upstream's ``systemd-run --unit machine-config-daemon-reboot``."""
        ...

    def active_states(self, units: Sequence[str]) -> dict[str, str]:
        """Each unit's ``ActiveState`` (active, failed, inactive, ...) as the manager sees it,
        ``auto-restart`` for one that died and waits to be restarted."""
        ...

    def close(self) -> None: ...


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

    def reboot(self, rationale: str) -> None:
        raise self._unavailable("reboot")

    def close(self) -> None:
        return None


def bus_address(root: Root, environ: Mapping[str, str] | None = None) -> str:
    """The system bus of the node: ``DBUS_SYSTEM_BUS_ADDRESS``, else the root's socket."""
    env = os.environ if environ is None else environ
    explicit = env.get("DBUS_SYSTEM_BUS_ADDRESS")
    if explicit:
        return explicit
    return f"unix:path={root.host(SYSTEM_BUS_SOCKET)}"


def connect(
    root: Root,
    runner: Runner,
    address: str | None = None,
    environ: Mapping[str, str] | None = None,
    timeout: float = 10.0,
) -> SystemdManager:
    """The node's running systemd over D-Bus, or :class:`OfflineSystemd` when none answers.

    A bus socket that does not exist is answered without loading the D-Bus client, so the
    offline commands (``validate`` on a plain directory) start fast.
    """
    address = address or bus_address(root, environ)
    socket_path = address.removeprefix("unix:path=").split(",")[0]
    if address.startswith("unix:path=") and not os.path.exists(socket_path):
        why = f"no systemd manager at {address} (no such socket)"
        log.info("Using systemctl --root for unit files: %s", why)
        return OfflineSystemd(root, runner, why)
    from mcd.host.dbus_systemd import DBusSystemd, ManagerNotOnBus  # noqa: PLC0415

    try:
        return DBusSystemd(address, timeout=timeout)
    except (OSError, ManagerNotOnBus, TimeoutError) as e:
        why = f"no systemd manager at {address} ({e})"
        log.info("Using systemctl --root for unit files: %s", why)
        return OfflineSystemd(root, runner, why)
