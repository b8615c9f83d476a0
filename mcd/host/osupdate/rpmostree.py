"""rpm-ostree: deployments, the OS image rebase, kernel arguments, kernel type, extensions.

``status --json`` is parsed into :class:`Deployment` (only the fields the
daemon needs; everything else is ignored). Commands run through the host
runner with ``RPMOSTREE_CLIENT_ID=machine-config-operator``, inside the root
(``chroot``) when the root is a mounted host that carries rpm-ostree.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcd.host.errors import HostError
from mcd.host.osupdate.pullsecret import use_merged_pull_secrets
from mcd.host.rootfs import Root
from mcd.host.runner import CommandError, CommandResult, Runner
from mcd.model.osupdate.kargs import missing_kernel_arguments, rpm_ostree_kargs

log = logging.getLogger(__name__)

CLIENT_ID = "machine-config-operator"
UNVERIFIED_REGISTRY = "ostree-unverified-registry:"
PIVOT_PREFIX = "pivot://"
KERNEL_PACKAGES = (
    "kernel",
    "kernel-core",
    "kernel-modules",
    "kernel-modules-core",
    "kernel-modules-extra",
)
REALTIME_PACKAGES = ("kernel-rt-core", "kernel-rt-modules", "kernel-rt-modules-extra")
PAGES64K_PACKAGES = (
    "kernel-64k-core",
    "kernel-64k-modules",
    "kernel-64k-modules-core",
    "kernel-64k-modules-extra",
)


class RpmOstreeError(HostError):
    """rpm-ostree refused or failed; the message carries its last real error."""


@dataclass(frozen=True)
class Deployment:
    id: str
    checksum: str
    booted: bool = False
    staged: bool = False
    version: str = ""
    container_image_reference: str = ""
    custom_origin: tuple[str, ...] = ()
    requested_packages: tuple[str, ...] = ()
    requested_base_removals: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()

    @property
    def image_url(self) -> str:
        """The OS image this deployment came from, as upstream derives it."""
        url = self.custom_origin[0].removeprefix(PIVOT_PREFIX) if self.custom_origin else ""
        ref = self.container_image_reference
        if ref:
            url = ref.split(":", 1)[1] if ":" in ref else ref
            url = url.removeprefix("docker://")
        return url


@dataclass(frozen=True)
class Status:
    deployments: tuple[Deployment, ...]
    transaction: Any = None

    @property
    def booted(self) -> Deployment:
        for d in self.deployments:
            if d.booted:
                return d
        raise RpmOstreeError("no booted deployment found in rpm-ostree status")

    @property
    def staged(self) -> Deployment | None:
        return next((d for d in self.deployments if d.staged), None)


def parse_status(text: str) -> Status:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise RpmOstreeError(f"failed to parse rpm-ostree status --json: {e}") from e
    deployments = []
    for raw in data.get("deployments") or []:
        deployments.append(
            Deployment(
                id=str(raw.get("id", "")),
                checksum=str(raw.get("checksum", "")),
                booted=bool(raw.get("booted")),
                staged=bool(raw.get("staged")),
                version=str(raw.get("version") or ""),
                container_image_reference=str(raw.get("container-image-reference") or ""),
                custom_origin=tuple(raw.get("custom-origin") or ()),
                requested_packages=tuple(raw.get("requested-packages") or ()),
                requested_base_removals=tuple(
                    r if isinstance(r, str) else r[1]
                    for r in raw.get("requested-base-removals") or ()
                ),
                packages=tuple(raw.get("packages") or ()),
            )
        )
    return Status(tuple(deployments), data.get("transaction"))


RETRY_ENV = "MCD_REBASE_RETRY_SECONDS"


@dataclass
class Retry:
    """Upstream's rebase retry: 10 s doubling up to 60 s, 7 tries.

    ``MCD_REBASE_RETRY_SECONDS`` sets the first delay (the cap stays six times it),
    for registries known to be slow, and for tests.
    """

    attempts: int = 7
    initial: float = 10.0
    maximum: float = 60.0
    sleep: Callable[[float], None] = field(default=time.sleep)

    @classmethod
    def from_env(cls) -> Retry:
        value = os.environ.get(RETRY_ENV, "")
        try:
            initial = float(value) if value else 10.0
        except ValueError:
            log.warning("Ignoring %s=%r: not a number of seconds", RETRY_ENV, value)
            initial = 10.0
        return cls(initial=initial, maximum=initial * 6)


BOOT_ID = "/proc/sys/kernel/random/boot_id"


class RpmOstree:
    def __init__(
        self, root: Root, runner: Runner | None = None, retry: Retry | None = None
    ) -> None:
        self.root = root
        self.runner = runner or Runner(env={**os.environ, "RPMOSTREE_CLIENT_ID": CLIENT_ID})
        self.retry = retry or Retry.from_env()
        self._booted: tuple[str, str] | None = None  # (boot id, booted image)

    def initialize(self) -> None:
        """Upstream ``RpmOstreeClient.Initialize``: give rpm-ostree the registry pull secret
        (``/run/ostree/auth.json``); a failure is logged, the pull then fails on its own."""
        try:
            use_merged_pull_secrets(self.root)
        except (OSError, HostError) as e:
            log.error("error while linking rpm-ostree pull secrets %s", e)

    def _run(self, *args: str) -> CommandResult:
        argv = ["rpm-ostree", *args]
        if self.root.path != "/" and self.root.exists("/usr/bin/rpm-ostree"):
            argv = ["chroot", self.root.path, *argv]
        try:
            return self.runner.run(argv)
        except CommandError as e:
            raise RpmOstreeError(str(e)) from e

    def status(self) -> Status:
        return parse_status(self._run("status", "--json").stdout)

    def booted_image(self) -> str:
        """The booted deployment's image. Only a reboot changes it, so it is asked of
        rpm-ostree once per boot id (upstream reads ``bootedOSImageURL`` once at start):
        ``rpm-ostree status`` costs 0.1-0.5 s, and every update validates the OS image."""
        boot = self._boot_id()
        if self._booted is None or not boot or self._booted[0] != boot:
            self._booted = (boot, self.status().booted.image_url)
        return self._booted[1]

    def _boot_id(self) -> str:
        try:
            return self.root.read_bytes(BOOT_ID).decode().strip()
        except (OSError, HostError):
            return ""

    def rebase(self, image: str, *, even_if_booted: bool = False) -> bool:
        """Stage ``image``; False when the booted deployment already is that image (unless
        ``even_if_booted``: upstream's layered path always asks rpm-ostree, which pulls the
        reference afresh)."""
        if not even_if_booted and self.booted_image() == image:
            log.info("Already in desired image %s", image)
            return False
        self.initialize()
        self._with_retry(image, "rebase", "--experimental", UNVERIFIED_REGISTRY + image)
        return True

    def download(self, image: str) -> None:
        """``rpm-ostree rebase --download-only``: pull ``image`` into the OSTree repository
        and deploy nothing (no deployment is staged, the next boot is unchanged); the
        ``rebase`` that follows finds its layers there and only deploys. Upstream's
        retries, as :meth:`rebase`."""
        self.initialize()
        ref = UNVERIFIED_REGISTRY + image
        self._with_retry(image, "rebase", "--experimental", "--download-only", ref)

    def _with_retry(self, image: str, *args: str) -> None:
        delay, last = self.retry.initial, ""
        for attempt in range(1, self.retry.attempts + 1):
            try:
                self._run(*args)
                return
            except RpmOstreeError as e:
                last = str(e)
                if attempt == self.retry.attempts:
                    break
                log.warning(
                    "rebase to %s failed (attempt %d), retrying in %gs: %s",
                    image,
                    attempt,
                    delay,
                    e,
                )
                self.retry.sleep(delay)
                delay = min(delay * 2, self.retry.maximum)
        raise RpmOstreeError(f"failed to update OS to {image} after retries: {last}")

    def update_kargs(self, old: Sequence[str], new: Sequence[str]) -> None:
        """Remove every old argument and append every new one, in one transaction."""
        args = rpm_ostree_kargs(old, new)
        if args:
            self._run("kargs", *args)

    def kargs_raw(self, args: Sequence[str]) -> None:
        """``rpm-ostree kargs`` with options as given (the pivot tuning file)."""
        self._run("kargs", *args)

    def kargs_output(self) -> str:
        """``rpm-ostree kargs``: the kernel command line of the default deployment."""
        return self._run("kargs").stdout

    def check_kargs(self, expected: Sequence[str]) -> None:
        missing = missing_kernel_arguments(expected, self.kargs_output())
        if missing:
            raise RpmOstreeError(f"missing expected kernel arguments: [{' '.join(missing)}]")

    def switch_kernel(self, old_type: str, new_type: str) -> None:
        if old_type == new_type:
            return
        if old_type not in ("", "default"):
            self._run(
                "override", "reset", *KERNEL_PACKAGES, *_uninstall(_kernel_packages(old_type))
            )
        if new_type in ("realtime", "64k-pages"):
            self._run("override", "remove", *KERNEL_PACKAGES, *_install(_kernel_packages(new_type)))

    def update_extensions(self, install: Sequence[str], uninstall: Sequence[str]) -> None:
        if install or uninstall:
            self._run("update", *_install(install), *_uninstall(uninstall))

    def rollback(self) -> None:
        """``rpm-ostree rollback``: the previous deployment becomes the default for the next
        boot (the node boots it after a reboot)."""
        self._run("rollback")

    def cleanup_pending(self) -> None:
        """``rpm-ostree cleanup -p``: drop a staged deployment (never fails the caller)."""
        try:
            self._run("cleanup", "-p")
        except RpmOstreeError as e:
            log.warning("rpm-ostree cleanup -p failed: %s", e)


def _kernel_packages(kernel_type: str) -> tuple[str, ...]:
    return REALTIME_PACKAGES if kernel_type == "realtime" else PAGES64K_PACKAGES


def _install(packages: Sequence[str]) -> list[str]:
    return [arg for p in packages for arg in ("--install", p)]


def _uninstall(packages: Sequence[str]) -> list[str]:
    return [arg for p in packages for arg in ("--uninstall", p)]
