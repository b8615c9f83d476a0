"""bootc: image mode on a host that has bootc and no rpm-ostree (``bootc switch``, ``bootc
upgrade``, ``bootc status --format=json``).

Upstream has a bootc client in ``pkg/daemon/bootc.go`` (``QueryStatus``, ``Switch``) that is
not wired into its update path; mcd drives it for ``osImageURL`` on a bootc-only host. Only
the fields mcd needs are read from ``status``: each boot entry's image reference and digest.
A bootc image carries its own kernel and packages, so ``kernelType`` and ``extensions`` are
refused on such a host (:mod:`mcd.model.planning.applicability`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from mcd.host.errors import HostError
from mcd.host.rootfs import Root
from mcd.host.runner import CommandError, CommandResult, Runner

log = logging.getLogger(__name__)


class BootcError(HostError):
    """bootc refused or failed; the message carries its error."""


@dataclass(frozen=True)
class BootEntry:
    image: str
    digest: str = ""


@dataclass(frozen=True)
class BootcStatus:
    booted: BootEntry | None
    staged: BootEntry | None = None
    rollback: BootEntry | None = None


def _entry(raw: Any) -> BootEntry | None:
    if not isinstance(raw, dict):
        return None
    image = raw.get("image")
    if not isinstance(image, dict):
        return None
    ref = image.get("image")
    reference = ref.get("image") if isinstance(ref, dict) else None
    if not isinstance(reference, str):
        return None
    digest = image.get("imageDigest")
    return BootEntry(reference, digest if isinstance(digest, str) else "")


def parse_status(text: str) -> BootcStatus:
    """``bootc status --format=json`` (a ``BootcHost``): the booted, staged and rollback
    entries' image references and digests."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise BootcError(f"failed to parse `bootc status --format=json` output: {e}") from e
    status = data.get("status") if isinstance(data, dict) else None
    if not isinstance(status, dict):
        raise BootcError("failed to parse `bootc status --format=json` output: no status")
    return BootcStatus(
        _entry(status.get("booted")), _entry(status.get("staged")), _entry(status.get("rollback"))
    )


class Bootc:
    def __init__(self, root: Root, runner: Runner | None = None) -> None:
        self.root = root
        self.runner = runner or Runner()

    def _run(self, *args: str) -> CommandResult:
        argv = ["bootc", *args]
        if self.root.path != "/":
            argv = ["chroot", self.root.path, *argv]
        try:
            return self.runner.run(argv)
        except CommandError as e:
            raise BootcError(str(e)) from e

    def status(self) -> BootcStatus:
        return parse_status(self._run("status", "--format=json").stdout)

    def booted_image(self) -> str:
        booted = self.status().booted
        if booted is None:
            raise BootcError("no booted image in bootc status")
        return booted.image

    def switch(self, image: str) -> bool:
        """Stage ``image`` for the next boot; False when it is booted already."""
        if self.booted_image() == image:
            log.info("Already in desired image %s", image)
            return False
        log.info("Executing switch to %s", image)
        self._run("switch", "--transport", "registry", image)
        return True

    def download(self, image: str) -> None:
        """``bootc switch --download-only``: pull ``image`` and stage it locked (a download-only
        deployment is not queued for the next boot); the ``switch`` that follows finds it
        pulled and unlocks it."""
        log.info("Downloading %s (download-only)", image)
        self._run("switch", "--download-only", "--transport", "registry", image)

    def restage(self, image: str) -> None:
        """``bootc switch`` to ``image`` even when it is booted: the next boot is that image
        (the undo of a switch not booted yet)."""
        self._run("switch", "--transport", "registry", image)

    def upgrade(self) -> None:
        """``bootc upgrade``: stage the newest image of the booted reference (the force file)."""
        self._run("upgrade")

    def rollback(self) -> None:
        """``bootc rollback``: the previous deployment boots next."""
        self._run("rollback")
