"""containerd for real (issue 42): the realnode kit's node root (Debian's containerd 1.6.20,
``shared/realnode``), in two ways.

- **containerd alone**: the kit's node root (``realnode.sh build``) copied to a temp dir and
  containerd run in it by ``systemd-nspawn`` (no kubelet, no bridge: nothing host-wide, so it
  runs beside another realnode cluster), its socket bound out to the temp dir.
- **a real node** (kubelet + containerd, ``realnode.sh up`` / ``node-up``): the runtime as the
  agent finds it, from the kubelet's ``containerRuntimeVersion``. Skipped while another
  realnode cluster holds this host (one per host).

Both prove, with mcd's own code: the runtime found from the node's root (crictl.yaml) and its
registry ``config_path`` read; PinnedImageSets' pulls through containerd's real CRI with mcd's
``Cri`` (``crictl inspecti`` / ``crictl pull``); a ``hosts.toml`` under
``/etc/containerd/certs.d`` read live (a file written after containerd started is used by the
next pull, no restart); and a hosts.toml without a ``[host]`` table ignored by containerd 1.6
(``failed to decode hosts.toml ... invalid `host` tree`` in its own log), which is why mcd's
plan refuses it. Images come from a registry stand-in on 127.0.0.1 (``tests/fakes/registry.py``):
the container shares the host's network. Skipped, with the kit's one-line reason, where it
cannot run (not root, no nspawn)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mcd.host import runtime
from mcd.host.cri import Cri, CriError
from mcd.host.rootfs import Root
from mcd.host.runner import Runner
from mcd.model.disruption.hosts import HostsTomlError, parse_hosts_toml
from mcd.model.node.runtime import node_runtime_version
from tests.fakes.registry import Registry, serving
from tests.nodes.kit import await_inotify_room

pytestmark = [pytest.mark.nodes, pytest.mark.xdist_group("realnode")]

NODE = "realnode-1"
REPO = Path(__file__).resolve().parents[2]
CONFIG_PATH = '    config_path = "/etc/containerd/certs.d:/etc/docker/certs.d"\n'


def _kit() -> Path:
    for d in (Path(os.environ.get("REALNODE_KIT", "/nonexistent")), REPO.parent / "shared/realnode",
              *(p / "shared/realnode" for p in REPO.parents)):  # fmt: skip
        if (d / "realnode.sh").is_file():
            return d
    pytest.skip("realnode kit not found (set REALNODE_KIT)")


def sh(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, check=False, capture_output=True, text=True, env=env, timeout=900)
    if check and done.returncode:
        raise AssertionError(f"{' '.join(args)} -> {done.returncode}\n{done.stderr[-3000:]}")
    return done


def _env(kit: Path) -> dict[str, str]:
    if os.environ.get("MCD_TEST_REAL_PARTS") == "0":
        pytest.skip("turned off by MCD_TEST_REAL_PARTS=0")
    env = {k: v for k, v in os.environ.items() if k != "REALNODE_STATE"}
    check = sh(env, f"{kit}/realnode.sh", "check", check=False)
    if check.returncode:
        pytest.skip(check.stderr.strip() or "realnode cannot run here")
    env["REALNODE_KIT"] = str(kit)
    env["REALNODE_STATE"] = tempfile.mkdtemp(prefix="realnode.")
    return env


@dataclass(frozen=True)
class Containerd:
    root: Root
    """The node's root, as the agent sees it (``--root``)."""
    socket: Path
    """containerd's CRI socket, as the host reaches it."""
    crictl: Path
    log: Path
    restart: tuple[str, ...]
    """The command that restarts containerd (the plan's Restart containerd.service)."""


def _wait_socket(path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.is_socket() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert path.is_socket(), f"{path} never appeared"


@pytest.fixture(scope="module")
def containerd_alone() -> Iterator[Containerd]:
    """The kit's node root in a temp dir, containerd run in it by systemd-nspawn (as PID 2),
    stopped by its pid; the temp dir removed."""
    env = _env(_kit())
    state = Path(env["REALNODE_STATE"])
    proc: subprocess.Popen[bytes] | None = None
    try:
        sh(env, f"{env['REALNODE_KIT']}/realnode.sh", "build")
        root = state / "ctrd-root"
        subprocess.run(["cp", "-a", (state / "rootfs").read_text().strip(), str(root)], check=True)
        (root / "etc/containerd/config.toml").write_text(
            'version = 2\n[grpc]\n  address = "/run/ctrd/containerd.sock"\n'
            '[plugins."io.containerd.grpc.v1.cri"]\n  restrict_oom_score_adj = true\n'
            '  [plugins."io.containerd.grpc.v1.cri".containerd]\n    snapshotter = "overlayfs"\n'
            f'  [plugins."io.containerd.grpc.v1.cri".registry]\n{CONFIG_PATH}'
        )  # the kit's own config without the kubelet's pieces, reading the registry directories
        (root / "etc/crictl.yaml").write_text(
            "runtime-endpoint: unix:///run/ctrd/containerd.sock\n"
        )
        sock = state / "sock"
        sock.mkdir()
        log = state / "containerd.log"
        argv = [
            "systemd-nspawn", "-q", "-D", str(root), "--register=no", "--keep-unit",
            "--link-journal=no", "--resolv-conf=off", "--timezone=off", "--capability=all",
            "--as-pid2", f"--bind={sock}:/run/ctrd", "--",
            "/usr/bin/containerd", "--config", "/etc/containerd/config.toml",
        ]  # fmt: skip
        with log.open("ab") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=out, stdin=subprocess.DEVNULL)
        _wait_socket(sock / "containerd.sock")
        yield Containerd(Root(root), sock / "containerd.sock", state / "bin/crictl", log, ())
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=20)
        shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="module")
def realnode() -> Iterator[tuple[dict[str, str], Containerd]]:
    """A control plane and one real node (``realnode.sh up``, ``node-up``); always ``down``."""
    env = _env(_kit())
    kit = env["REALNODE_KIT"]
    up = sh(env, f"{kit}/realnode.sh", "up", check=False)
    for line in up.stdout.splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        env[key] = value.strip("'\"")
    if up.returncode == 4:  # the lock: one realnode cluster per host; nothing was started
        shutil.rmtree(env["REALNODE_STATE"], ignore_errors=True)
        pytest.skip("another realnode cluster holds this host")
    assert up.returncode == 0, up.stderr[-3000:]
    try:
        await_inotify_room()
        sh(env, f"{kit}/realnode.sh", "node-up", NODE)
        node = Path(env["REALNODE_STATE"]) / "nodes" / NODE
        restart = (f"{kit}/realnode.sh", "exec", NODE, "systemctl", "restart", "containerd")
        yield env, Containerd(
            Root(node / "root"), node / "sock/containerd.sock", Path(env["REALNODE_STATE"]) / "bin/crictl",
            node / "root/var/log/containerd.log", restart,
        )  # fmt: skip
    finally:
        sh(env, f"{kit}/realnode.sh", "down", "--purge", check=False)


def _hosts(address: str) -> str:
    return f'server = "http://{address}"\n[host."http://{address}"]\n  capabilities = ["pull", "resolve"]\n'


def _prove(ctrd: Containerd, version: str, env: dict[str, str] | None = None) -> None:
    """The proof both ways share (module docstring)."""
    choice = runtime.detect(ctrd.root, version)
    assert choice.name == "containerd" and ctrd.socket.name == "containerd.sock"
    path = f"{ctrd.crictl.parent}:{os.environ.get('PATH', '')}"
    cri = Cri(Root("/"), Runner(env={**os.environ, "PATH": path}), str(ctrd.socket))
    if ctrd.restart:  # the node's config reads no registry directory: set config_path, restart
        assert runtime.registry_warnings(ctrd.root, choice)[0].startswith(
            "containerd does not read /etc/containerd/certs.d (registry config_path: unset)"
        )
        config = Path(ctrd.root.host_path("/etc/containerd/config.toml"))
        text = config.read_text()
        table = '[plugins."io.containerd.grpc.v1.cri"]\n'
        assert table in text
        config.write_text(text.replace(
            table, f'{table}  [plugins."io.containerd.grpc.v1.cri".registry]\n{CONFIG_PATH}', 1
        ))  # fmt: skip
        sh(env or dict(os.environ), *ctrd.restart)  # the plan's Restart containerd.service
        deadline = time.monotonic() + 60
        while cri.runner.run(cri._argv("version"), check=False).returncode:
            assert time.monotonic() < deadline, "containerd did not come back"
            time.sleep(0.5)
    assert runtime.registry_warnings(ctrd.root, choice) == []
    registry = Registry()
    registry.add_image("test/app", "1")
    registry.add_image("test/live", "1")
    with serving(registry) as address:
        with pytest.raises(CriError, match="failed to resolve reference"):
            cri.pull("mirror-a.test/test/app:1")  # no hosts.toml: no such registry
        for namespace, image in (("mirror-a.test", "test/app:1"), ("mirror-b.test", "test/live:1")):
            parse_hosts_toml(_hosts(address).encode(), namespace)  # what mcd's plan accepts
            target = Path(ctrd.root.host_path(f"/etc/containerd/certs.d/{namespace}/hosts.toml"))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(_hosts(address))  # containerd has been running all along
            ref = f"{namespace}/{image}"
            assert not cri.image_present(ref)
            cri.pull(ref)
            assert cri.image_present(ref)
        assert any(r.startswith("GET /v2/test/live/blobs/") for r in registry.requests)
        # a file with no [host] table: containerd 1.6 ignores it, mcd refuses it
        bad = f'server = "http://{address}"\n'
        with pytest.raises(HostsTomlError, match="invalid `host` tree"):
            parse_hosts_toml(bad.encode(), "mirror-c.test")
        target = Path(ctrd.root.host_path("/etc/containerd/certs.d/mirror-c.test/hosts.toml"))
        target.parent.mkdir(parents=True)
        target.write_text(bad)
        with pytest.raises(CriError, match="failed to resolve reference"):
            cri.pull("mirror-c.test/test/app:1")
    logged = ctrd.log.read_text(errors="replace")
    assert "failed to decode hosts.toml" in logged and "invalid `host` tree" in logged


def test_containerd_alone_pulls_through_mcds_cri_and_reads_hosts_toml_live(
    containerd_alone: Containerd,
) -> None:
    _prove(containerd_alone, "")  # no kubelet: the root's crictl.yaml names containerd
    choice = runtime.detect(containerd_alone.root)
    assert choice.source == "/etc/crictl.yaml runtime-endpoint unix:///run/ctrd/containerd.sock"


def test_a_real_node_reports_containerd_and_pulls_through_it(
    realnode: tuple[dict[str, str], Containerd],
) -> None:
    env, ctrd = realnode
    node = json.loads(sh(env, "kubectl", "get", "node", NODE, "-o", "json").stdout)
    version = node_runtime_version(node)
    assert version.startswith("containerd://1.6")
    choice = runtime.detect(ctrd.root, version)
    assert (choice.name, choice.socket) == ("containerd", "/run/realnode/containerd.sock")
    assert choice.source == f"the Node's containerRuntimeVersion {version}"
    _prove(ctrd, version, env)
