"""A new node joins already configured (issue 29): the real CoreOS Ignition fetches the pool's
config from ``mcd server`` with a join token and writes the node's root, then ``mcd start``
runs for the first time on the node: it takes the node-annotations file, finds the node on
its config, and reports ``Done`` with no drain and no reboot. The node's systemd is a real one
(nspawn) where the machine can run it.

A node joining a custom pool with a pool-scoped token (issue 43) is labelled into that pool
by the controller and joins with no drain and no reboot too.

Against it, the way it was before the server: the same node installed by the agent alone
from an empty current config drains and reboots right after joining."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.pools import POOLS
from mcd.controller.joining.labels import APPLIED, FIRST_PIVOT
from mcd.model.vocabulary import Annotation
from tests.builders import file_entry
from tests.e2e.configs import worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.controller_harness import (
    NODE_ROLE,
    ControllerProc,
    create_pool,
    get_pool,
    label_node,
    machine_config,
    pool,
    target,
    wait,
)
from tests.e2e.harness import create_config
from tests.e2e.test_controller import _crds  # noqa: F401 - the CRD fixture
from tests.fakes.kubecluster import TestCluster
from tests.integration.test_server_ignition import IGNITION, MCD, ensure_pool_crd, start_server

INFRA_CONF = "/etc/infra.conf"

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


def _status_config(cluster: TestCluster, pool: str) -> str:
    status = get_pool(cluster, pool).get("status") or {}
    return str((status.get("configuration") or {}).get("name") or "")


@pytest.mark.usefixtures("_crds")
def test_a_fleet_token_joins_a_node_to_a_custom_pool_with_no_drain_and_no_reboot(
    kube_cluster: TestCluster, make_node: NodeFactory, tmp_path: Path
) -> None:
    """Issue 43 item 3, the journey: ``mcd controller`` renders ``worker`` and a custom pool
    (``worker`` + its own MachineConfig); one pool-scoped token (``--uses 2``, no node
    name) is the pointer config an autoscaling group would share. A new machine registers
    as a worker (the controller targets it with ``worker``'s config at once), the real
    Ignition fetches the custom pool's config with the token, the agent starts: the
    controller labels the node into the custom pool from the pool's nodeSelector (upstream
    ``applyCustomPoolLabels``) and it ends Done on the custom pool's config with no drain,
    no cordon and no reboot; ``join-token list`` names it as the token's first use."""
    cluster = kube_cluster
    infra = cluster.name("infra")
    cluster.create(MACHINECONFIGS, machine_config(cluster.name("00-worker"), "worker",
                                                  worker("base")))  # fmt: skip
    extra = {"spec": {"config": {"ignition": {"version": "3.4.0"}, "storage": {"files": [
        file_entry(INFRA_CONF, "role=infra\n", 0o644)]}}}}  # fmt: skip
    cluster.create(MACHINECONFIGS, machine_config(cluster.name("50-infra"), infra, extra))
    create_pool(cluster, pool("worker", ["worker"], "worker"))
    create_pool(cluster, pool(infra, ["worker", infra], infra))
    ctl = ControllerProc(cluster, tmp_path, "a", cluster.namespace("ctl")).start()
    try:
        wait(lambda: bool(target(cluster, "worker") and _status_config(cluster, infra)), 90,
             "both pools rendered", ctl.log)  # fmt: skip
        rendered_worker, rendered_infra = target(cluster, "worker"), target(cluster, infra)
        assert _status_config(cluster, infra) == rendered_infra
        node = make_node("joiner")
        label_node(cluster, node.name, "worker")  # registered as a worker, no custom label
        node.wait_for(lambda: node.annotations().get(Annotation.DESIRED_CONFIG) == rendered_worker,
                      60, "the controller targets the new worker")  # fmt: skip
        namespace = cluster.namespace("mcs")
        with start_server(cluster, tmp_path / "mcs", namespace, pool=infra) as served:
            created = subprocess.run(
                [*MCD, "join-token", "create", "--pool", infra, "--uses", "2", "--server",
                 served.url, "--ca", str(served.ca), "--kubeconfig", str(cluster.kubeconfig),
                 "--namespace", served.namespace],
                check=False, capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert created.returncode == 0, created.stderr
            assert "for up to 2 nodes, pool " + infra in created.stderr
            _ignition(node.root, tmp_path / "ign", created.stdout)
            assert node.path(INFRA_CONF).read_text() == "role=infra\n"
            node.start()
            node.wait_ready()
            node.wait_for(lambda: (node.node()["metadata"].get("labels") or {}).get(
                NODE_ROLE + infra) == "", 60, "the custom pool's label")  # fmt: skip
            node.wait_state("Done", rendered_infra, timeout=60)
            wait(lambda: (get_pool(cluster, infra).get("status") or {}).get(
                "updatedMachineCount") == 1, 60, "the custom pool counts it", ctl.log)  # fmt: skip
            listed = subprocess.run(
                [*MCD, "join-token", "list", "--kubeconfig", str(cluster.kubeconfig),
                 "--namespace", served.namespace],
                check=False, capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert listed.returncode == 0, listed.stderr
            row = listed.stdout.splitlines()[1].split()
            assert row[1:5] == [infra, node.name, "1/2", "1"], listed.stdout
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]
    annotations = node.annotations()
    assert annotations[Annotation.CURRENT_CONFIG] == rendered_infra
    assert annotations[Annotation.DESIRED_CONFIG] == rendered_infra
    assert annotations[FIRST_PIVOT] == rendered_infra and APPLIED in annotations
    assert (get_pool(cluster, "worker").get("status") or {}).get("machineCount", 0) == 0
    assert not node.events("Drain") and not node.events("Cordon") and not node.events("Reboot")
    assert not node.node().get("spec", {}).get("unschedulable")
    assert Annotation.LAST_APPLIED_DRAIN not in annotations
    assert node.reboots_requested() == 0
    assert f"Node {node.name} was booted into custom pool {infra}" in ctl.log()
