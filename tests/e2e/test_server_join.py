"""A new node joins already configured (issue 29): the real CoreOS Ignition fetches the pool's
config from ``mcd server`` with a join token and writes the node's root, then ``mcd start``
runs for the first time on the node: it takes the node-annotations file, finds the node on
its config, and reports ``Done`` with no drain and no reboot. The node's systemd is a real one
(nspawn) where the machine can run it.

Against it, the way it was before the server: the same node installed by the agent alone
from an empty current config drains and reboots right after joining."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mcd.cluster.pools import POOLS
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import create_config
from tests.fakes.kubecluster import TestCluster
from tests.integration.test_server_ignition import IGNITION, ensure_pool_crd, start_server

pytestmark = pytest.mark.skipif(
    not IGNITION.exists() or os.geteuid() != 0,
    reason="the real Ignition needs the `ignition` package (scripts/setup.sh, as root)",
)


def _pool(cluster: TestCluster, config: str) -> str:
    ensure_pool_crd(cluster)
    name = cluster.name("joiners")
    cluster.create(POOLS, {
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": name}, "spec": {"configuration": {"name": config}},
    })  # fmt: skip
    cluster.kube.request(
        "PATCH", f"{POOLS}/{name}/status",
        body={"status": {"configuration": {"name": config}, "updatedMachineCount": 0}},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    return name


def _ignition(node_root: Path, work: Path, pointer: str) -> None:
    from tests.integration.test_server_ignition import run_ignition  # noqa: PLC0415

    for d in ("etc/selinux/targeted/contexts/files",):
        (node_root / d).mkdir(parents=True, exist_ok=True)
    (node_root / "etc/selinux/config").write_text("SELINUX=disabled\nSELINUXTYPE=targeted\n")
    (node_root / "etc/selinux/targeted/contexts/files/file_contexts").write_text("")
    home = node_root / "home/core"  # core's home is core's, as the OS image has it (Ignition
    home.mkdir(parents=True, exist_ok=True)  # writes the SSH keys as that user)
    os.chown(home, 1000, 1000)
    for parent in (node_root, *node_root.parents):  # and it can reach it (a temp dir is 0700)
        if parent.stat().st_mode & 0o001 == 0:
            parent.chmod(parent.stat().st_mode | 0o111)
    code, out, _ = run_ignition(work, pointer, root=node_root)
    assert code == 0, "\n".join(line for line in out.splitlines() if "CRITICAL" in line)
    # Ignition enables units through a preset file; systemd applies presets on the first
    # boot, which follows Ignition on a real node (this container booted before it ran)
    preset = subprocess.run(
        ["systemctl", f"--root={node_root}", "preset-all"],
        check=False, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert preset.returncode == 0, preset.stderr


def test_a_node_joins_with_no_drain_and_no_reboot(
    kube_cluster: TestCluster, make_node: NodeFactory, tmp_path: Path
) -> None:
    config = kube_cluster.name("rendered-worker-1")
    create_config(kube_cluster, worker(config))
    pool = _pool(kube_cluster, config)
    namespace = kube_cluster.namespace("mcs")
    node = make_node("joiner")
    with start_server(kube_cluster, tmp_path / "mcs", namespace, pool=pool) as served:
        pointer = served.token(node.name, pointer=True)
        _ignition(node.root, tmp_path / "ign", pointer)
    assert node.path("/etc/machine-config-daemon/node-annotations.json").exists()
    node.start()
    node.wait_ready()
    node.wait_state("Done", config, timeout=60)
    annotations = node.annotations()
    assert (
        annotations[Annotation.CURRENT_CONFIG] == annotations[Annotation.DESIRED_CONFIG] == config
    )
    assert not node.events("Drain") and not node.events("Cordon") and not node.events("Reboot")
    assert not node.node().get("spec", {}).get("unschedulable")
    assert node.reboots_requested() == 0


def test_without_the_server_the_same_node_drains_and_reboots_after_joining(
    kube_cluster: TestCluster, make_node: NodeFactory
) -> None:
    """The issue's 'before': the agent applies the pool's config from an empty current
    config, every file is new, and the node drains and reboots right after joining."""
    config = kube_cluster.name("rendered-worker-1")
    create_config(kube_cluster, worker(config))
    node = make_node("bare")
    kube_cluster.annotate(node.name, {Annotation.DESIRED_CONFIG: config})
    node.start()
    node.wait_reboot(timeout=60)
    assert node.events("Drain") or node.node().get("spec", {}).get("unschedulable")
