"""Where the real parts keep what is slow to make: a Debian rootfs for the systemd container,
a base image for podman. Built once (debootstrap, about 100 s each), then reused.

The cache lives outside the checkout: ``$MCD_TEST_CACHE``, else ``$XDG_CACHE_HOME/mcd-test``,
else ``~/.cache/mcd-test``. Each artefact is built under an exclusive ``flock`` into a temp
name and renamed into place only when complete, so concurrent test processes wait for one
build and never see half of one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path


def cache_dir() -> Path:
    explicit = os.environ.get("MCD_TEST_CACHE")
    if explicit:
        path = Path(explicit)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        path = Path(base) / "mcd-test"
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def locked(name: str) -> Iterator[Path]:
    """Hold ``<cache>/.<name>.lock`` exclusively (blocks while another process builds)."""
    cache = cache_dir()
    with (cache / f".{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield cache
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def missing(*tools: str) -> str | None:
    """Why this machine cannot run a real part, or None when it can."""
    if os.environ.get("MCD_TEST_REAL_PARTS") == "0":
        return "turned off by MCD_TEST_REAL_PARTS=0"
    if os.geteuid() != 0:
        return "needs root"
    absent = [t for t in tools if shutil.which(t) is None]
    if absent:
        return f"{', '.join(absent)} not installed (bash scripts/setup.sh as root installs it)"
    return None


def host_suite() -> str:
    text = Path("/etc/os-release").read_text()
    match = re.search(r"^VERSION_CODENAME=\"?([a-z]+)", text, re.M)
    return os.environ.get("MCD_TEST_SUITE") or (match.group(1) if match else "bookworm")


def host_mirror() -> str:
    """The first non-security Debian URI the machine's apt uses (never hard-coded)."""
    explicit = os.environ.get("MCD_TEST_MIRROR")
    if explicit:
        return explicit
    sources = Path("/etc/apt/sources.list.d")
    for f in sorted(sources.glob("*.sources")) if sources.is_dir() else []:
        for line in f.read_text().splitlines():
            if line.startswith("URIs:"):
                for uri in line.split()[1:]:
                    if "security" not in uri:
                        return uri
    lists = [Path("/etc/apt/sources.list"), *sorted(sources.glob("*.list"))]
    for f in lists:
        if not f.is_file():
            continue
        for line in f.read_text().splitlines():
            words = line.split()
            if words[:1] == ["deb"]:
                for word in words[1:]:
                    if word.startswith(("http://", "https://")) and "security" not in word:
                        return word
    raise RuntimeError("no Debian mirror in the apt sources; set MCD_TEST_MIRROR")


def debootstrap(target: Path, include: list[str], log: Path, suite: str = "") -> None:
    """A minbase Debian of the host's own release (or ``suite``) into ``target`` (which must
    not exist)."""
    argv = ["debootstrap", "--variant=minbase", f"--include={','.join(include)}",
            suite or host_suite(), str(target), host_mirror()]  # fmt: skip
    with log.open("w") as out:
        result = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, check=False)
    if result.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"debootstrap failed ({result.returncode}); {log}:\n{tail}")
    for junk in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man",
                 "usr/share/locale"):  # fmt: skip
        for entry in (target / junk).glob("*"):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            elif entry.name not in ("lock", "partial"):
                entry.unlink(missing_ok=True)
