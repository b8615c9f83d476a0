"""The boot loader update before an OS pivot on Secure Boot systems (upstream
``pkg/daemon/bootupd.go``, ``runBootloaderUpdate``, called by ``updateLayeredOS`` before the
rebase): the boot loader must trust the new image's Secure Boot signing keys before its
signed kernel is booted.

Upstream's order, commands and log lines:

1. only on a CoreOS host (``/etc/os-release``: ``VARIANT_ID=coreos``, or ``ID`` rhcos or scos)
   on x86_64 or aarch64 (and, as mcd guesses no tool, one whose root has ``bootupctl``, as
   every CoreOS has);
2. ``mokutil --sb-state``: nothing to do unless it says ``SecureBoot enabled``; when mokutil
   is missing or fails, Secure Boot is assumed (failing open);
3. on RHEL 9.6 and later (``RHEL_VERSION``, else ``VERSION_ID``: upstream's base version):
   ``systemctl start bootloader-update.service``,
   the node's own bootupctl; done when it succeeds;
4. else, or when it failed: bootupctl from the new image, through ``systemd-run ... podman``
   (the image pulled first unless podman has it: ``--authfile`` the merged or the kubelet's
   pull secret), ``podman run ... IMAGE bootupctl update`` with ``/boot`` and ``/dev``.

When ``bootupctl update`` fails, the image's EFI files are copied onto the ESP(s) by hand,
as upstream (:mod:`mcd.host.bootloader.espcopy`). As upstream, a failure is a warning
(``bootloader update failed: ...``) and the pivot goes on.
"""

from __future__ import annotations

import logging
import platform
import uuid
from collections.abc import Callable

from mcd.host.bootloader import espcopy
from mcd.host.bootloader.detect import find_tool
from mcd.host.errors import HostError
from mcd.host.osupdate.osrelease import OsRelease, read_os_release
from mcd.host.rootfs import Root
from mcd.host.runner import Runner

log = logging.getLogger(__name__)

ARCHES = ("x86_64", "aarch64")
SERVICE = "bootloader-update.service"
PROXY_ENV = "EnvironmentFile=-/etc/mco/proxy.env"
INTERNAL_REGISTRY_AUTH = "/etc/mco/internal-registry-pull-secret.json"
KUBELET_AUTH = "/var/lib/kubelet/config.json"


class BootloaderUpdateFailed(HostError):
    """The update failed; the caller warns and pivots anyway, as upstream."""


def run_bootloader_update(
    root: Root,
    image: str,
    runner: Runner | None = None,
    arch: Callable[[], str] = platform.machine,
) -> bool:
    """Upstream ``runBootloaderUpdate``; True when an update ran. Raises
    :class:`BootloaderUpdateFailed` when one was needed and failed."""
    try:
        release = read_os_release(root)
    except (HostError, OSError):
        return False  # no readable os-release: not a CoreOS host
    if not release.is_coreos_variant or arch() not in ARCHES:
        return False
    if not find_tool(root, "bootupctl"):  # mcd guesses no tool: CoreOS ships it
        log.info("runBootloaderUpdate: no bootupctl on this host, bootloader update skipped")
        return False
    run = runner or Runner()
    if not _secure_boot(run):
        log.info("runBootloaderUpdate: Secure Boot not enabled, bootloader update not required")
        return False
    major, minor = _version(release)
    if major > 9 or (major == 9 and minor >= 6):
        log.info(
            "runBootloaderUpdate: RHEL 9.6+ detected, attempting node-level bootloader update "
            "via %s",
            SERVICE,
        )
        try:
            run.run(["systemctl", "start", SERVICE])
        except HostError as e:
            log.info(
                "runBootloaderUpdate: %s failed with error: %s, falling back to "
                "container-based update",
                SERVICE,
                e,
            )
        else:
            log.info("runBootloaderUpdate: node-level %s succeeded", SERVICE)
            return True
    _via_container(root, run, image)
    return True


def _via_container(root: Root, run: Runner, image: str) -> None:
    """Upstream ``runBootupdViaContainer``."""
    log.info("runBootupdViaContainer: attempting bootloader update")
    unit = ["systemd-run", "--unit", "machine-config-daemon-bootupd", "-p", PROXY_ENV,
            "--collect", "--wait", "--", "podman"]  # fmt: skip
    if run.run(["podman", "image", "exists", image], check=False).returncode != 0:
        pull = [*unit, "pull"]
        for auth in (INTERNAL_REGISTRY_AUTH, KUBELET_AUTH):
            if root.exists(auth):
                pull += ["--authfile", auth]
                break
        try:
            run.run([*pull, image])
        except HostError as e:
            raise BootloaderUpdateFailed(f"pulling image for bootupctl: {e}") from e
    log.info("bootupctl: running update from container image")
    try:
        run.run([
            "systemd-run", "--unit", "machine-config-daemon-bootupd-update", "-p", PROXY_ENV,
            "--collect", "--wait", "--", "podman", "run",
            "--env", f"INVOCATION_ID={uuid.uuid4()}",
            "--privileged", "--pid=host", "--net=host", "--rm",
            "-v", "/boot:/boot:rslave", "-v", "/dev:/dev",
            image, "bootupctl", "update",
        ])  # fmt: skip
    except HostError as e:
        log.info("bootupctl update failed (%s); falling back to manual EFI copy", e)
        try:
            espcopy.run_fallback(root, run, image)
        except HostError as err:
            raise BootloaderUpdateFailed(f"bootupctl fallback EFI copy: {err}") from err
        log.info("bootupctl: fallback EFI copy completed")


def _secure_boot(run: Runner) -> bool:
    """Upstream ``isSecureBootEnabled``: failing open when mokutil cannot tell."""
    try:
        out = run.run(["mokutil", "--sb-state"]).stdout
    except HostError as e:
        log.info("isSecureBootEnabled: mokutil failed, assuming Secure Boot may be enabled: %s", e)
        return True
    return "SecureBoot enabled" in out


def _version(release: OsRelease) -> tuple[int, int]:
    """Upstream ``BaseVersionMajor``/``Minor`` (-1 when unparsable) of the base version
    (``RHEL_VERSION``, else from ``OPENSHIFT_VERSION``, else ``VERSION_ID``)."""
    parts = release.os_version.split(".", 1)
    major = int(parts[0]) if parts[0].isdecimal() else -1
    minor = int(parts[1]) if len(parts) > 1 and parts[1].isdecimal() else -1
    return major, minor
