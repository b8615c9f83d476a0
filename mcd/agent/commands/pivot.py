"""``mcd pivot``: the historical forced OS pivot, and the ``/etc/pivot/kernel-args`` tuning.

The image comes from the argument or ``/etc/pivot/image-pullspec`` (removed
after a successful rebase). The rebase is skipped when the booted deployment
already runs the image ("unchanged"; exit 77 with ``--unchanged-exit-77``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.lock import writer_lock
from mcd.host.osupdate.rpmostree import RpmOstree
from mcd.host.rootfs import Root
from mcd.model.ignition.values import control_problem

log = logging.getLogger(__name__)

PULLSPEC = "/etc/pivot/image-pullspec"
TUNING = "/etc/pivot/kernel-args"
CMDLINE = "/proc/cmdline"
EL_IDS = ("rhcos", "rhel", "centos", "scos")


@dataclass(frozen=True)
class PivotResult:
    image: str
    changed: bool
    kargs_changed: bool


def read_pullspec(root: Root) -> str:
    try:
        image = root.read_bytes(PULLSPEC).decode().strip()
    except FileNotFoundError as e:
        raise HostError(f"no image given and {PULLSPEC} does not exist") from e
    if not image:
        raise HostError(f"{PULLSPEC} is empty")
    return image


def _os_id(root: Root) -> str:
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            text = root.read_bytes(path).decode("utf-8", "replace")
        except (FileNotFoundError, HostError):
            continue
        for line in text.splitlines():
            if line.startswith("ID="):
                return line[3:].strip().strip('"')
    return ""


def tunable(os_id: str, karg: str) -> bool:
    """Which arguments the tuning file may change: ``nosmt`` on EL, anything on Fedora."""
    if os_id in EL_IDS:
        return karg == "nosmt"
    return os_id == "fedora"


def apply_tuning(root: Root, rpm: RpmOstree) -> bool:
    """``ADD <karg>`` / ``DELETE <karg>`` lines of the tuning file, against ``/proc/cmdline``."""
    try:
        lines = root.read_bytes(TUNING).decode("utf-8", "replace").splitlines()
    except FileNotFoundError:
        return False
    try:
        cmdline = set(root.read_bytes(CMDLINE).decode().split())
    except FileNotFoundError:
        cmdline = set()
    os_id, args = _os_id(root), []
    for line in lines:
        verb, _, karg = line.strip().partition(" ")
        karg = karg.strip()
        if not karg or not tunable(os_id, karg):
            continue
        if verb == "ADD" and karg not in cmdline:
            args.append(f"--append={karg}")
        elif verb == "DELETE" and karg in cmdline:
            args.append(f"--delete={karg}")
    if args:
        rpm.kargs_raw(args)
    return bool(args)


def pivot(root: Root, rpm: RpmOstree, image: str | None) -> PivotResult:
    """Rebase to ``image`` (or the pullspec file's) and apply the tuning file, holding the
    node's writer lock."""
    with writer_lock(root, "mcd pivot"):
        return _pivot(root, rpm, image)


def _pivot(root: Root, rpm: RpmOstree, image: str | None) -> PivotResult:
    from_file = image is None
    target = image or read_pullspec(root)
    bad = control_problem(target)
    if bad:
        where = PULLSPEC if from_file else "the image argument"
        raise HostError(f"invalid image reference in {where}: {bad}")
    changed = rpm.rebase(target)
    if changed and from_file:
        fsops.remove(root, PULLSPEC)
    if not changed:
        log.info("Already at target pivot; exiting...")
    kargs_changed = apply_tuning(root, rpm)
    return PivotResult(target, changed, kargs_changed)
