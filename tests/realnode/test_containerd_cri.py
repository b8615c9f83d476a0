"""containerd on a real node (issue 42; ``shared/realnode``: kubelet + containerd 1.6.20 in a
systemd-nspawn container): mcd finds the runtime the way the agent does (the kubelet's
``containerRuntimeVersion`` and the node's crictl.yaml), pulls through containerd's real CRI
with mcd's own ``Cri`` (``crictl inspecti`` / ``crictl pull``, as PinnedImageSets do), and a
``hosts.toml`` under ``/etc/containerd/certs.d`` is read live: once containerd's
``config_path`` names the directory (the one restart the plan asks for config.toml), a file
written afterwards is used by the next pull without any restart. The images come from a
registry stand-in on 127.0.0.1 (``tests/fakes/registry.py``): the node shares the host's
network. Skipped, with the kit's one-line reason, where real nodes cannot run (not root, no
nspawn) or while another realnode cluster holds this host."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcd.host import runtime
from mcd.host.cri import Cri
from mcd.host.rootfs import Root
from mcd.host.runner import Runner
from mcd.model.disruption.hosts import parse_hosts_toml
from mcd.model.node.runtime import node_runtime_version
from tests.fakes.registry import Registry, serving

NODE = "realnode-1"
REPO = Path(__file__).resolve().parents[2]


def _kit() -> Path:
    for d in (Path(os.environ.get("REALNODE_KIT", "/nonexistent")), REPO.parent / "shared/realnode",
              *(p / "shared/realnode" for p in REPO.parents)):  # fmt: skip
        if (d / "realnode.sh").is_file():
            return d
    pytest.skip("realnode kit not found (set REALNODE_KIT)")


def sh(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, check=False, capture_output=True, text=True, env=env, timeout=600)
    if check and done.returncode:
        raise AssertionError(f"{' '.join(args)} -> {done.returncode}\n{done.stderr[-3000:]}")
    return done


@pytest.fixture(scope="module")
def realnode() -> Iterator[dict[str, str]]:
    kit = _kit()
    env = {k: v for k, v in os.environ.items() if k != "REALNODE_STATE"}
    check = sh(env, f"{kit}/realnode.sh", "check", check=False)
    if check.returncode:
        pytest.skip(check.stderr.strip() or "realnode cannot run here")
    env["REALNODE_STATE"] = tempfile.mkdtemp(prefix="realnode.")
    up = sh(env, f"{kit}/realnode.sh", "up", check=False)
    for line in up.stdout.splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        env[key] = value.strip("'\"")
    if up.returncode == 4:  # the lock: one realnode cluster per host; nothing was started
        shutil.rmtree(env["REALNODE_STATE"], ignore_errors=True)
        pytest.skip("another realnode cluster holds this host")
    assert up.returncode == 0, up.stderr[-3000:]
    env["REALNODE_KIT"] = str(kit)
    try:
        sh(env, f"{kit}/realnode.sh", "node-up", NODE)
        yield env
    finally:
        sh(env, f"{kit}/realnode.sh", "down", "--purge", check=False)


def _node_exec(env: dict[str, str], *args: str) -> None:
    sh(env, f"{env['REALNODE_KIT']}/realnode.sh", "exec", NODE, *args)


def _wait_socket(path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.is_socket() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert path.is_socket(), f"{path} never came back"


def test_containerd_found_pulled_through_and_its_hosts_toml_read_live(
    realnode: dict[str, str],
) -> None:
    env = realnode
    state = Path(env["REALNODE_STATE"])
    root = Root(state / "nodes" / NODE / "root")
    node = json.loads(sh(env, "kubectl", "get", "node", NODE, "-o", "json").stdout)
    version = node_runtime_version(node)
    assert version.startswith("containerd://1.6")

    # the runtime, as the agent finds it: the kubelet's report, the node's own crictl.yaml
    choice = runtime.detect(root, version)
    assert (choice.name, choice.socket) == ("containerd", "/run/realnode/containerd.sock")
    assert choice.source == f"the Node's containerRuntimeVersion {version}"
    assert runtime.registry_warnings(root, choice)[0].startswith(
        "containerd does not read /etc/containerd/certs.d (registry config_path: unset)"
    )

    # containerd's config names the registry directories: the restart the plan asks for
    config = root.host_path("/etc/containerd/config.toml")
    text = Path(config).read_text()
    Path(config).write_text(text.replace(
        '[plugins."io.containerd.grpc.v1.cri".cni]',
        '[plugins."io.containerd.grpc.v1.cri".registry]\n'
        '    config_path = "/etc/containerd/certs.d:/etc/docker/certs.d"\n'
        '  [plugins."io.containerd.grpc.v1.cri".cni]'))  # fmt: skip
    assert runtime.registry_warnings(root, choice) == []
    socket = state / "nodes" / NODE / "sock" / "containerd.sock"
    _node_exec(env, "systemctl", "restart", "containerd.service")
    _wait_socket(socket)

    # mcd's Cri on containerd's real socket (the host's crictl: the node's root has none)
    crictl_dir = str(state / "bin")
    cri = Cri(Root("/"), Runner(env={**env, "PATH": f"{crictl_dir}:{env['PATH']}"}), str(socket))
    registry = Registry()
    registry.add_image("test/app", "1")
    registry.add_image("test/live", "1")
    with serving(registry) as address:
        for namespace, image in (("mirror-a.test", "test/app:1"), ("mirror-b.test", "test/live:1")):
            hosts = (f'server = "http://{address}"\n[host."http://{address}"]\n'
                     '  capabilities = ["pull", "resolve"]\n')  # fmt: skip
            parse_hosts_toml(hosts.encode(), namespace)  # what mcd's plan accepts
            path = Path(root.host_path(f"/etc/containerd/certs.d/{namespace}/hosts.toml"))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(hosts)  # the second one: after containerd started, no restart
            ref = f"{namespace}/{image}"
            assert not cri.image_present(ref)
            cri.pull(ref)
            assert cri.image_present(ref)
        assert "GET /v2/test/live/blobs/" in " ".join(registry.requests)
    images = sh(env, f"{env['REALNODE_KIT']}/realnode.sh", "crictl", NODE, "images", "-o", "json")
    tags = {t for i in json.loads(images.stdout)["images"] for t in i.get("repoTags") or []}
    assert {"mirror-a.test/test/app:1", "mirror-b.test/test/live:1"} <= tags
