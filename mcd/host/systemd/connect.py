"""How the node's systemd is reached: over D-Bus when a manager answers, else offline."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from mcd.host.rootfs import Root
from mcd.host.runner import Runner
from mcd.host.systemd.manager import SYSTEM_BUS_SOCKET, SystemdManager
from mcd.host.systemd.offline import OfflineSystemd

log = logging.getLogger(__name__)


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
    from mcd.host.systemd.dbus import DBusSystemd, ManagerNotOnBus  # noqa: PLC0415

    try:
        return DBusSystemd(address, timeout=timeout)
    except (OSError, ManagerNotOnBus, TimeoutError) as e:
        why = f"no systemd manager at {address} ({e})"
        log.info("Using systemctl --root for unit files: %s", why)
        return OfflineSystemd(root, runner, why)
