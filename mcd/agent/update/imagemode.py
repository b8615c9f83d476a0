"""Image mode and extensions on the node: the OS step of an update, and the on-disk
``currentconfig`` + ``currentimage`` pair.

Upstream ``applyLayeredOSChanges`` (reference 2.12.2), in order: the extensions
repository extracted from ``baseOSExtensionsContainerImage`` when either config has
extensions or a non-default kernel (not when the node follows an image), ``rpm-ostree
cleanup -p``, the rebase (to ``osImageURL``, which in image mode is the image:
:mod:`mcd.model.osupdate.imagemode`), the kernel arguments; then, for a node that does not
follow an image, the kernel type and the extension packages. An image carries its
own kernel and packages, so in image mode those two are not applied on the node.

Leaving image mode (``desiredImage`` removed) rebases back to the config's
``osImageURL``. Upstream stages that through ``machine-config-daemon-revert.service``,
which re-applies the config at the next boot and reboots a second time; mcd applies
the config's kernel type and extensions in the same update instead (one reboot, the
same end state).

On disk, upstream ``storeCurrentConfigOnDisk``: ``currentconfig`` holds the config as
the cluster has it (the image annotations removed, its own ``osImageURL`` back) and
``/etc/machine-config-daemon/currentimage`` the image alone (empty when none).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext

from mcd.host.bootloader import bootupd
from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.fs.sealing import STATE_FILE_MODE
from mcd.host.osupdate import extensions
from mcd.host.osupdate.rpmostree import RpmOstree, RpmOstreeError
from mcd.host.rootfs import Root
from mcd.model.machineconfig import MachineConfig, load_machine_config
from mcd.model.osupdate import imagemode
from mcd.model.osupdate.extensions import (
    extension_packages,
    not_installed,
    package_changes,
    package_sets,
)
from mcd.model.osupdate.imagemode import CURRENT_IMAGE_PATH
from mcd.model.planning.plan import UpdatePlan
from mcd.model.text import goquote
from mcd.model.vocabulary import CURRENT_CONFIG_PATH, Annotation

log = logging.getLogger(__name__)

IMAGE_FILE_MODE = 0o644


class ImageRefused(Exception):
    """``desiredImage`` is not an image reference mcd will hand to rpm-ostree."""


def desired_image(annotations: Mapping[str, str]) -> str:
    return annotations.get(Annotation.DESIRED_IMAGE, "")


def follow(annotations: Mapping[str, str], document: bytes) -> tuple[MachineConfig, bytes] | None:
    """The desired config with ``desiredImage`` embedded as its osImageURL (None when the
    node has no desiredImage); a hostile reference is refused in one line."""
    image = desired_image(annotations)
    if not image:
        return None
    refusal = imagemode.reference_refusal(f"node annotation {Annotation.DESIRED_IMAGE}", image)
    if refusal:
        raise ImageRefused(refusal)
    embedded = imagemode.embed(document, image)
    return load_machine_config(embedded), embedded


def needs_repository(plan: UpdatePlan) -> bool:
    """Upstream: an extensions image is given, either config has extensions or a
    non-default kernel, and the node does not end up following an image."""
    old, new = plan.old, plan.new
    have = bool(old.extensions or new.extensions) or (
        old.canonical_kernel_type != "default" or new.canonical_kernel_type != "default"
    )
    return bool(new.base_os_extensions_container_image) and have and not new.ocl_image


def apply_os(rpm: RpmOstree, root: Root, plan: UpdatePlan) -> None:
    """The OS step; a failure leaves no staged deployment (the caller's undo drops it)."""
    repo: AbstractContextManager[object] = nullcontext()
    if needs_repository(plan):
        repo = extensions.repository(root, plan.new.base_os_extensions_container_image)
    with repo:
        _apply(rpm, root, plan)


def _apply(rpm: RpmOstree, root: Root, plan: UpdatePlan) -> None:
    d, old, new = plan.diff, plan.old, plan.new
    rpm.cleanup_pending()
    if d.os_update:
        if new.ocl_image:
            log.info("Rebasing to the image %s (image mode)", new.ocl_image)
        elif old.ocl_image:
            log.info("Leaving image mode: rebasing to osImageURL %s", new.os_image_url)
        try:  # upstream updateLayeredOS: the boot loader first, on Secure Boot systems
            bootupd.run_bootloader_update(root, new.os_image_url)
        except HostError as e:
            log.warning("bootloader update failed: %s", e)
        # upstream updateLayeredOS asks rpm-ostree even for the booted image (the force file)
        rpm.rebase(new.os_image_url, even_if_booted=bool(new.ocl_image))
    if d.kargs:
        rpm.update_kargs(old.kernel_arguments, new.kernel_arguments)
    if new.ocl_image:
        return  # the image carries its kernel and packages
    if d.kernel_type or d.os_update:
        rpm.switch_kernel(old.canonical_kernel_type, new.canonical_kernel_type)
    if d.extensions or d.os_update:
        install, uninstall = package_changes(rpm.status().booted.requested_packages, new.extensions)
        if install or uninstall:
            rpm.update_extensions(install, uninstall)
            verify_staged(rpm, new.extensions)
        else:
            log.info("No extension updates required")


def verify_staged(rpm: RpmOstree, wanted: Sequence[str]) -> None:
    """Upstream ``verifyExtensionsStaged`` (OCPBUGS-65645): every package of the config's
    extensions is requested in the staged deployment before the node reboots."""
    expected = extension_packages(wanted)
    if not expected:
        return
    staged = rpm.status().staged
    if staged is None:
        raise RpmOstreeError("no staged deployment found after applying extensions")
    missing = [p for p in expected if p not in staged.requested_packages]
    if missing:
        raise RpmOstreeError(
            "the following extension packages are missing from the staged deployment: "
            f"[{' '.join(missing)}]"
        )


def verify_installed(root: Root, mc: MachineConfig) -> str:
    """Upstream ``verifyExtensionPackages`` (OCPBUGS-65645), at boot in the desired config:
    each extension's packages are installed in the booted deployment (``rpm -q``; one
    valid package set per extension, the legacy set counts). '' when they are, else
    upstream's Degraded reason."""
    if not mc.extensions:
        return ""
    log.info("Verifying extension packages are installed for config %s", mc.name)
    for extension in mc.extensions:
        sets = package_sets(extension)
        if not sets:
            return f"extension {goquote(extension)} has no valid package sets defined"
        missing_per_set: list[list[str]] = []
        for packages in sets:
            missing = [p for p in packages if not extensions.installed(root, p)]
            if not missing:
                log.info("Extension %s verified with package set: [%s]", goquote(extension),
                         " ".join(packages))  # fmt: skip
                break
            missing_per_set.append(missing)
        else:
            return not_installed(extension, missing_per_set)
    log.info("Successfully verified all extension packages are installed")
    return ""


def store_current(root: Root, document: bytes) -> None:
    """``currentconfig`` and ``currentimage`` from a (possibly image-embedding) document."""
    config, image = imagemode.extract(document)
    fsops.write_file(root, CURRENT_CONFIG_PATH, config, STATE_FILE_MODE)
    if image or root.exists(CURRENT_IMAGE_PATH):
        fsops.write_file(root, CURRENT_IMAGE_PATH, image.encode(), IMAGE_FILE_MODE)


def is_current(root: Root, document: bytes) -> bool:
    """Whether ``document`` is what ``currentconfig`` + ``currentimage`` hold."""
    config, image = imagemode.extract(document)
    try:
        return root.read_bytes(CURRENT_CONFIG_PATH) == config and current_image(root) == image
    except (OSError, HostError):
        return False


def current_image(root: Root) -> str:
    """The image the node is on (``currentimage``, trimmed); '' when none."""
    try:
        return root.read_bytes(CURRENT_IMAGE_PATH).decode(errors="replace").strip()
    except FileNotFoundError:
        return ""


def undo_os(rpm: RpmOstree | None, staged: str) -> None:
    """Undo an update's OS step: drop what it staged, or, after the boot into the deployment
    it staged (a failed health gate), roll rpm-ostree back once."""
    if rpm is None:
        return
    status = rpm.status()
    if staged and status.booted.checksum == staged:
        if status.deployments[0].booted:  # once: a second rollback would toggle back
            rpm.rollback()
        return
    rpm.cleanup_pending()  # the booted deployment never changed
