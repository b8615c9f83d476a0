"""The project's ``Containerfile`` built and run with podman, with no registry.

The base the Containerfile names (``docker.io/library/python:<ver>-slim-<suite>``) cannot be
pulled here, so a stand-in is made once from a debootstrap of the host's release with Debian's
Python of the same version, pip and the Python headers (what the slim image carries; no
compiler), and imported under that name into a podman store private to the tests. Both stages
then build from it with ``--pull=never`` (``podman build --from`` would replace the first
``FROM`` only, and the runtime stage has its own).

Everything podman keeps (images, layers, run state) is under the test cache
(:func:`tests.real.cache.cache_dir`), never in ``/var/lib/containers``. Builds use
``--isolation=chroot`` (no OCI runtime) and the host network with the host's CA bundle (pip and
apt inside the build); runs use runc with no network, in a cgroup of their own removed after.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path

from tests.real import cgroups
from tests.real.cache import cache_dir, debootstrap, host_suite, locked, missing

REPO = Path(__file__).resolve().parents[2]
BASE_PACKAGES = ["python3", "python3-pip", "libpython3-dev", "ca-certificates"]
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def unavailable() -> str | None:
    return missing("podman", "buildah", "runc", "debootstrap")


def python_version() -> str:
    match = re.search(r"^ARG PYTHON_VERSION=(\S+)$", (REPO / "Containerfile").read_text(), re.M)
    assert match, "Containerfile has no ARG PYTHON_VERSION"
    return match.group(1)


def base_name() -> str:
    """The base the Containerfile asks for, made here under that name."""
    return f"docker.io/library/python:{python_version()}-slim-{host_suite()}"


def _driver(store: Path) -> str:
    """overlay where this filesystem takes it (probed once, in a private mount namespace)."""
    record = store / "driver"
    if record.exists():
        return record.read_text().strip()
    probe = store / "probe"
    for d in ("l", "u", "w", "m"):
        (probe / d).mkdir(parents=True, exist_ok=True)
    options = f"lowerdir={probe}/l,upperdir={probe}/u,workdir={probe}/w"
    ok = subprocess.run(["unshare", "-m", "mount", "-t", "overlay", "o", "-o", options,
                         str(probe / "m")], capture_output=True, check=False).returncode == 0  # fmt: skip
    shutil.rmtree(probe, ignore_errors=True)
    record.write_text("overlay" if ok else "vfs")
    return record.read_text()


def podman_argv() -> list[str]:
    """``podman`` with every option that keeps its state in the test cache."""
    store = cache_dir() / "podman"
    for d in ("storage", "run", "tmp", "net"):
        (store / d).mkdir(parents=True, exist_ok=True)
    argv = ["podman", "--root", str(store / "storage"), "--runroot", str(store / "run"),
            "--tmpdir", str(store / "tmp"), "--network-config-dir", str(store / "net"),
            "--storage-driver", _driver(store), "--cgroup-manager", "cgroupfs",
            "--events-backend", "file"]  # fmt: skip
    if Path("/sys/fs/cgroup/unified").is_dir():  # hybrid cgroups: crun 1.8 refuses them
        argv += ["--runtime", "runc"]
    return argv


def podman(
    *args: str, check: bool = True, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    argv = podman_argv()
    result = subprocess.run([*argv, *args], capture_output=True, text=True, check=False,
                            timeout=timeout)  # fmt: skip
    if check and result.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args[:3])}... failed ({result.returncode}):\n"
                           f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")  # fmt: skip
    return result


def base() -> str:
    """Import the stand-in base once (debootstrap about 100 s); concurrent callers wait."""
    name = base_name()
    with locked("podman-base") as cache:
        if podman("image", "exists", name, check=False).returncode == 0:
            return name
        tar = cache / f"python-base-{host_suite()}.tar"
        if not tar.exists():
            tmp = cache / f"python-base.tmp.{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            debootstrap(tmp, BASE_PACKAGES, cache / "python-base.log")
            found = sorted(p.name for p in (tmp / "usr/lib").glob("python3.*"))
            if f"python{python_version()}" not in found:
                shutil.rmtree(tmp, ignore_errors=True)
                raise RuntimeError(
                    f"the Containerfile wants Python {python_version()}; "
                    f"{host_suite()} has {', '.join(found)}"
                )
            # pip may install into the system Python, as in the python images
            for marker in (tmp / "usr/lib").glob("python3.*/EXTERNALLY-MANAGED"):
                marker.unlink()
            subprocess.run(["tar", "--numeric-owner", "--xattrs", "-C", str(tmp), "-cf",
                            f"{tar}.tmp", "."], check=True)  # fmt: skip
            os.replace(f"{tar}.tmp", tar)
            shutil.rmtree(tmp, ignore_errors=True)
        podman("import", "--quiet", "--change", f"ENV PATH={PATH}",
               "--change", 'CMD ["python3"]', str(tar), name)  # fmt: skip
    return name


def ca_bundle() -> str | None:
    for env in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        value = os.environ.get(env)
        if value and Path(value).is_file():
            return value
    default = Path("/etc/ssl/certs/ca-certificates.crt")
    return str(default) if default.is_file() else None


def build(tag: str) -> subprocess.CompletedProcess[str]:
    """``podman build`` of the repository's Containerfile, as it is."""
    base()
    ca = ca_bundle()
    mount = ["--volume", f"{ca}:/etc/ssl/certs/ca-certificates.crt:ro"] if ca else []
    return podman("build", "--isolation=chroot", "--network=host", "--pull=never", *mount,
                  "--file", str(REPO / "Containerfile"), "--tag", tag, str(REPO), timeout=1800)  # fmt: skip


def run(tag: str, *args: str, entrypoint: str | None = None,
        volumes: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``podman run --rm`` with no network, in a cgroup of its own (removed after)."""
    cgroup = f"mcd-test-{uuid.uuid4().hex[:10]}"
    nofile = min(int(subprocess.run(["sh", "-c", "ulimit -Hn"], capture_output=True, text=True,
                                    check=True).stdout.strip().replace("unlimited", "1048576")),
                 1048576)  # fmt: skip
    argv = ["run", "--rm", "--network=none", f"--cgroup-parent=/{cgroup}",
            "--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", "nproc=32768:32768"]  # fmt: skip
    for v in volumes:
        argv += ["--volume", v]
    if entrypoint is not None:
        argv += ["--entrypoint", entrypoint]
    try:
        return podman(*argv, tag, *args, check=False, timeout=300)
    finally:
        for d in Path("/sys/fs/cgroup").glob(f"*/{cgroup}"):  # runc leaves empty ones behind
            cgroups.remove_empty(d)
