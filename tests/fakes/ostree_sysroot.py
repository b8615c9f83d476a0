"""The rpm-ostree stand-in's deployments kept in a real OSTree sysroot in a temp dir.

Each OS image is a real commit (an ``os-release`` naming it, a kernel), each deployment a real
``ostree admin deploy --sysroot`` with its kernel arguments in the bootloader entry, each
removal a real ``ostree admin undeploy``. What rpm-ostree keeps beside OSTree's deployment (the
container image reference, requested packages and removals) is in the deployment's
``.origin`` file, in rpm-ostree's own keys. The sysroot is not booted, so which deployment is
"booted" is the stand-in's record (the harness's reboot moves it); the others follow
rpm-ostree's rules: a new deployment replaces a pending one and keeps the booted one and one
rollback.

Deployment dirs are immutable (``chattr +i``, as on a node): :func:`purge` lifts that first.
"""

from __future__ import annotations

import configparser
import hashlib
import io
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from tests.real.cache import missing

OSNAME = "rhcos"
KERNEL = "5.14.0-570.el9.x86_64"
VERSION = "9.6.20261121-0"
IMAGE_PREFIX = "ostree-unverified-registry:"

Deployment = dict[str, Any]


def available() -> bool:
    """Root with ``ostree`` installed, and real parts not turned off (``MCD_TEST_REAL_PARTS=0``)."""
    return missing("ostree", "chattr") is None


def _ostree(*args: str) -> str:
    result = subprocess.run(["ostree", *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"ostree {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout


def init(sysroot: Path, image: str, kargs: list[str]) -> str:
    """A sysroot with one deployment of ``image`` (the one the node booted); its name."""
    sysroot.mkdir(parents=True, exist_ok=True)
    _ostree("admin", "init-fs", str(sysroot))
    _ostree("admin", "os-init", f"--sysroot={sysroot}", OSNAME)
    return deploy(sysroot, image, kargs, [], [], booted="")


def _commit(sysroot: Path, image: str) -> str:
    """The commit of an OS image (made once per image and sysroot)."""
    repo = sysroot / "ostree/repo"
    ref = f"mcd/{hashlib.sha256(image.encode()).hexdigest()[:16]}"
    if (repo / "refs/heads" / ref).exists():
        return _ostree(f"--repo={repo}", "rev-parse", ref).strip()
    with tempfile.TemporaryDirectory(prefix="mcd-ostree-tree-") as tree:
        lib = Path(tree, "usr/lib")
        (lib / "modules" / KERNEL).mkdir(parents=True)
        (lib / "modules" / KERNEL / "vmlinuz").write_text(f"kernel of {image}\n")
        (lib / "os-release").write_text(
            f'NAME="Red Hat Enterprise Linux CoreOS"\nID="rhcos"\nVERSION="{VERSION}"\n'
            f'PRETTY_NAME="RHCOS {VERSION}"\nOSTREE_VERSION="{VERSION}"\n'
        )
        (Path(tree) / "usr/etc").mkdir()
        out = _ostree(f"--repo={repo}", "commit", f"--branch={ref}", f"--subject={image}",
                      f"--tree=dir={tree}")  # fmt: skip
    return out.strip()


def _origin(image: str, packages: list[str], removals: list[str]) -> str:
    parser = configparser.ConfigParser(interpolation=None)
    parser["origin"] = {"container-image-reference": IMAGE_PREFIX + image}
    if packages:
        parser["packages"] = {"requested": "".join(f"{p};" for p in packages)}
    if removals:
        parser["overrides"] = {"remove": "".join(f"{p};" for p in removals)}
    out = io.StringIO()
    parser.write(out)
    return out.getvalue()


def deploy(
    sysroot: Path, image: str, kargs: list[str], packages: list[str], removals: list[str],
    booted: str,
) -> str:  # fmt: skip
    """Deploy ``image`` with exactly ``kargs`` as the new default; a pending deployment it
    replaces is removed, the booted one and one rollback stay. Returns the new one's name."""
    before = deployments(sysroot)
    checksum = _commit(sysroot, image)
    with tempfile.NamedTemporaryFile("w", suffix=".origin") as origin:
        origin.write(_origin(image, packages, removals))
        origin.flush()
        _ostree("admin", "deploy", f"--sysroot={sysroot}", f"--os={OSNAME}", "--retain",
                "--karg-none", *(f"--karg-append={k}" for k in kargs),
                f"--origin-file={origin.name}", checksum)  # fmt: skip
    new = deployments(sysroot)[0]["name"]
    names = [d["name"] for d in before]
    keep = {new, booted}
    if booted in names and names.index(booted) + 1 < len(names):
        keep.add(names[names.index(booted) + 1])  # the rollback
    for name in names:
        if name not in keep:
            undeploy(sysroot, name)
    return str(new)


def undeploy(sysroot: Path, name: str) -> None:
    index = [d["name"] for d in deployments(sysroot)].index(name)
    _ostree("admin", "undeploy", f"--sysroot={sysroot}", str(index))


def deployments(sysroot: Path) -> list[Deployment]:
    """The sysroot's deployments in boot order (the default first), read from the bootloader
    entries, the deployment links and the origin files that OSTree wrote."""
    entries = []
    loader = sysroot / "boot/loader/entries"
    for conf in loader.glob("*.conf") if loader.is_dir() else []:
        fields = dict(line.split(" ", 1) for line in conf.read_text().splitlines() if " " in line)
        entries.append((int(fields.get("version", "0")), fields.get("options", "")))
    out = []
    for _version, options in sorted(entries, reverse=True):
        words = options.split()
        link = next(w.split("=", 1)[1] for w in words if w.startswith("ostree="))
        target = (sysroot / link.lstrip("/")).resolve()
        name = target.name  # <checksum>.<serial>
        checksum, serial = name.rsplit(".", 1)
        origin = configparser.ConfigParser(interpolation=None)
        origin.read(target.parent / f"{name}.origin")
        out.append({
            "name": name,
            "checksum": checksum,
            "serial": int(serial),
            "kargs": [w for w in words if not w.startswith(("ostree=", "init="))],
            "container-image-reference": origin.get("origin", "container-image-reference", fallback=""),
            "requested-packages": _list(origin.get("packages", "requested", fallback="")),
            "requested-base-removals": _list(origin.get("overrides", "remove", fallback="")),
        })  # fmt: skip
    return out


def _list(value: str) -> list[str]:
    return [v for v in value.split(";") if v]


def purge(sysroot: Path) -> None:
    """Remove the sysroot (deployment dirs are immutable: lifted first)."""
    deploy_dir = sysroot / "ostree/deploy" / OSNAME / "deploy"
    for d in deploy_dir.iterdir() if deploy_dir.is_dir() else []:
        if d.is_dir() and not d.is_symlink():
            subprocess.run(["chattr", "-i", str(d)], capture_output=True, check=False)
    shutil.rmtree(sysroot, ignore_errors=True)
