"""The systemd interface the agent uses: its protocol, errors and unit names.

Two implementations share :class:`SystemdManager`:

* :class:`~mcd.host.systemd.dbus.DBusSystemd` talks to the node's running
  systemd over the system bus (``<root>/run/dbus/system_bus_socket`` or
  ``DBUS_SYSTEM_BUS_ADDRESS``): unit files, daemon-reload, reload / restart
  jobs awaited to their result, and the reboot.
* :class:`~mcd.host.systemd.offline.OfflineSystemd` serves an offline root (an image
  being prepared, a host with no manager reachable): unit-file changes go through
  ``systemctl --root``, and anything that needs a running manager fails with
  a clear error instead of pretending it happened.

:func:`mcd.host.systemd.connect.connect` picks one of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from mcd.host.errors import HostError

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

    def reboot(self, rationale: str, soft: bool = False) -> None:
        """Queue the reboot as upstream's ``systemd-run --unit machine-config-daemon-reboot``;
        ``soft``: ``systemctl soft-reboot`` (userspace only, the kernel and boot id stay)."""
        ...

    def soft_reboots(self) -> int | None:
        """The manager's ``SoftRebootsCount`` (systemd 256+), None when it has none."""
        ...

    def active_states(self, units: Sequence[str]) -> dict[str, str]:
        """Each unit's ``ActiveState`` (active, failed, inactive, ...) as the manager sees it,
        ``auto-restart`` for one that died and waits to be restarted."""
        ...

    def close(self) -> None: ...
