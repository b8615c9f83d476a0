"""The host handles an update needs, and the config documents on the node's disk."""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from dataclasses import dataclass, field

from mcd.agent.update import imagemode
from mcd.agent.update.journal import StateError
from mcd.host.bootloader import detect
from mcd.host.bootloader.kargs import BootLoader
from mcd.host.effects import HostEffects
from mcd.host.errors import HostError
from mcd.host.osupdate.rpmostree import RpmOstree
from mcd.host.rootfs import Root
from mcd.model.errors import ConfigError
from mcd.model.machineconfig import MachineConfig, load_machine_config
from mcd.model.osupdate.imagemode import CURRENT_IMAGE_PATH, embed
from mcd.model.planning.applicability import BOOTC, GRUB, GRUBBY, HostSupport
from mcd.model.text import goquote
from mcd.model.vocabulary import CURRENT_CONFIG_PATH

log = logging.getLogger(__name__)

_PARSED: dict[bytes, MachineConfig] = {}
_PARSED_KEPT = 2
_PARSED_LOCK = threading.Lock()
"""The last documents parsed (current and desired): parsing is pure and a MachineConfig is
frozen, so the same bytes give the same config; the next update's current is this one's
desired."""

OSTREE_BOOTED = "/run/ostree-booted"
BOOT_ID = "/proc/sys/kernel/random/boot_id"
FIPS_ENABLED = "/proc/sys/crypto/fips_enabled"


@dataclass
class Node:
    """The host handles an update needs."""

    root: Root
    effects: HostEffects
    rpm: RpmOstree | None = None
    host_support: HostSupport | None = field(default=None, repr=False, compare=False)
    """What the host can apply; detected on first use when not given."""

    @property
    def ostree(self) -> bool:
        """rpm-ostree's host (a bootc host without rpm-ostree is not: ``support()``)."""
        ostree = self.rpm is not None and self.root.exists(OSTREE_BOOTED)
        return ostree and self.support().os_image != BOOTC

    def support(self) -> HostSupport:
        """What this host can apply (:mod:`mcd.host.bootloader.detect`), detected once: the
        planner gets it as data (:mod:`mcd.model.planning.applicability`)."""
        if self.host_support is None:
            rpm = self.rpm is not None and self.root.exists(OSTREE_BOOTED)
            self.host_support = detect.detect(self.root, rpm_ostree=rpm)
        return self.host_support

    def with_runtime(self, runtime: str) -> HostSupport:
        """What this host can apply, its container runtime set to ``runtime`` (the one the
        kubelet reports: :mod:`mcd.model.node.runtime`), kept for the plans that follow."""
        self.host_support = dataclasses.replace(self.support(), container_runtime=runtime)
        return self.host_support

    def bootloader(self) -> BootLoader | None:
        """The boot loader that takes kernel arguments where rpm-ostree does not (None:
        rpm-ostree's deployments, or none mcd can drive)."""
        tool = self.support().kernel_arguments
        if tool not in (GRUB, GRUBBY):
            return None
        return BootLoader(self.root, tool, self.effects.runner)

    def fips(self) -> bool | None:
        """Upstream ``processFips``: the node's FIPS mode, None when the file is absent.

        A value ``strconv.ParseBool`` would refuse is a ``HostError``."""
        try:
            text = self.root.read_bytes(FIPS_ENABLED).decode("ascii", "replace")
        except FileNotFoundError:
            log.info("no %s on this system, skipping FIPS check", FIPS_ENABLED)
            return None
        except OSError as e:
            raise HostError(f"error reading FIPS file at {FIPS_ENABLED}: {e}") from e
        value = text.removesuffix("\n")
        if value in ("1", "t", "T", "true", "TRUE", "True"):
            return True
        if value in ("0", "f", "F", "false", "FALSE", "False"):
            return False
        raise HostError(
            f"error parsing FIPS file at {FIPS_ENABLED}: strconv.ParseBool: parsing "
            f"{goquote(value)}: invalid syntax"
        )

    def fips_for(self, new: MachineConfig) -> bool:
        """The FIPS value to plan with: the node's; with no FIPS file upstream skips the
        check, which is planning as if the node already had ``new``'s setting."""
        fips = self.fips()
        return new.fips if fips is None else fips

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
        image = imagemode.current_image(root)
    except (OSError, HostError) as e:
        raise StateError(f"unreadable state file {CURRENT_IMAGE_PATH}: {e}") from e
    data = embed(data, image)  # image mode: the node follows the image (currentimage)
    try:
        return parse_config(data), data
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


def parse_config(document: bytes) -> MachineConfig:
    """``load_machine_config`` of a config document, remembering the last two parsed (an
    update parses its desired config; the next one reads the same bytes back as current)."""
    with _PARSED_LOCK:
        mc = _PARSED.get(document)
    if mc is None:
        mc = load_machine_config(document)  # a ConfigError is never remembered
        with _PARSED_LOCK:
            _PARSED[document] = mc
            while len(_PARSED) > _PARSED_KEPT:
                del _PARSED[next(iter(_PARSED))]
    return mc
