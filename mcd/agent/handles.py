"""The host handles an update needs, and the config documents on the node's disk."""

from __future__ import annotations

import json
from dataclasses import dataclass

from mcd.agent.journal import StateError
from mcd.host.effects import HostEffects
from mcd.host.errors import HostError
from mcd.host.rootfs import Root
from mcd.host.rpmostree import RpmOstree
from mcd.model.errors import ConfigError
from mcd.model.machineconfig import MachineConfig, load_machine_config
from mcd.model.vocabulary import CURRENT_CONFIG_PATH

OSTREE_BOOTED = "/run/ostree-booted"
BOOT_ID = "/proc/sys/kernel/random/boot_id"


@dataclass
class Node:
    """The host handles an update needs."""

    root: Root
    effects: HostEffects
    rpm: RpmOstree | None = None

    @property
    def ostree(self) -> bool:
        return self.rpm is not None and self.root.exists(OSTREE_BOOTED)

    def boot_id(self) -> str:
        try:
            return self.root.read_bytes(BOOT_ID).decode().strip()
        except (OSError, HostError):
            return ""


CURRENT_RECOVERY = (
    "if the node is on a known rendered config, write it back with `mcd recover --current CONFIG`"
)


def current_config_on_disk(root: Root) -> tuple[MachineConfig, bytes] | None:
    """The node's ``currentconfig`` and its bytes; None when there is none.

    An unreadable or corrupt one is a :class:`StateError` naming the file and the way out.
    """
    try:
        data = root.read_bytes(CURRENT_CONFIG_PATH)
    except FileNotFoundError:
        return None
    except (OSError, HostError) as e:
        why = (e.strerror or str(e)) if isinstance(e, OSError) else str(e)
        raise StateError(
            f"unreadable state file {CURRENT_CONFIG_PATH}: {why}; {CURRENT_RECOVERY}"
        ) from e
    try:
        return load_machine_config(data), data
    except ConfigError as e:
        raise StateError(
            f"corrupt state file {CURRENT_CONFIG_PATH}: {e}; {CURRENT_RECOVERY}"
        ) from e


def document_of(mc: MachineConfig, raw: bytes | None) -> bytes:
    """The bytes stored for a config: its document, or a minimal one for the empty config."""
    if raw is not None:
        return raw
    doc = {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": mc.name},
        "spec": {"config": {"ignition": {"version": "3.5.0"}}},
    }
    return json.dumps(doc).encode()
