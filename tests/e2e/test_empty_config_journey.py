"""Journey (issue 40, 1): a node with no install-time config joins and applies its pool's config.

No machine-config-server laid down ``node-annotations.json`` and no ``currentconfig`` is on
disk: the agent starts from upstream's in-memory empty config (``canonicalizeEmptyMC``), says
``currentConfig=mco-empty-mc``, and applies whatever ``desiredConfig`` names from there. That
name is never fetched from the API server (no MachineConfig of that name exists anywhere).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcd.cluster.configs import MACHINECONFIGS
from mcd.model.vocabulary import CURRENT_CONFIG_PATH, EMPTY_CONFIG_NAME, Annotation
from tests.e2e.configs import APP_CONF, KEY_A, PULL_SECRET, worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.controller_harness import (
    ControllerProc,
    Rebooter,
    create_pool,
    label_node,
    machine_config,
    pool,
    pool_condition,
    target,
    wait,
)
from tests.e2e.harness import AgentNode, create_config
from tests.e2e.test_controller import _crds  # noqa: F401 - the CRD fixture (autouse there)
from tests.fakes.kubecluster import TestCluster

NOT_FOUND = f'"{EMPTY_CONFIG_NAME}" not found'


def _never_fetched_empty(node: AgentNode) -> None:
    assert NOT_FOUND not in node.log(), node.log()[-3000:]
    assert NOT_FOUND not in node.reason()


def _on_config(node: AgentNode, name: str) -> None:
    a = node.annotations()
    assert (a[Annotation.CURRENT_CONFIG], a[Annotation.STATE], a[Annotation.REASON]) == (
        name,
        "Done",
        "",
    )
    assert node.current_on_disk() == name
    assert node.path(APP_CONF).read_text() == "threads=4\n"
    assert json.loads(node.path(PULL_SECRET).read_text())["auths"]
    assert KEY_A in node.path("/home/core/.ssh/authorized_keys.d/ignition").read_text()
    assert node.path("/etc/systemd/system/app.service").exists()


def test_node_without_install_config_applies_desired_from_the_empty_config(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()  # a Node with no annotations; nothing on disk but the OS
    assert not node.path(CURRENT_CONFIG_PATH).exists()
    node.start()
    node.wait_ready()
    node.wait_state("Done", EMPTY_CONFIG_NAME)  # the empty config, in memory
    node.stop()  # and again from a restart, where the annotation names the empty config
    node.start()
    node.wait_ready()
    rendered = kube_cluster.name("rendered-worker-1")
    create_config(kube_cluster, worker(rendered))
    node.set_desired(rendered)
    with Rebooter([node]):  # every file is new: the plan may reboot
        node.wait_state("Done", rendered, timeout=90)
    _on_config(node, rendered)
    _never_fetched_empty(node)


def as_on_a_host(node: AgentNode, monkeypatch: pytest.MonkeyPatch) -> None:
    """Start ``node``'s agent as the README's "Run on a host" does: ``--root`` and no
    ``--drain-mode`` (the default, controller: ``mcd controller`` drains)."""
    harness_command = node.command

    def command(metrics_port: int | None = None) -> list[str]:
        argv, out = harness_command(metrics_port), []
        while argv:
            arg = argv.pop(0)
            if arg == "--drain-mode":
                argv.pop(0)
            else:
                out.append("--root" if arg == "--root-mount" else arg)
        return out

    monkeypatch.setattr(node, "command", command)


@pytest.mark.usefixtures("_crds")
def test_new_node_in_a_pool_applies_the_pools_config_with_the_controller(
    make_node: NodeFactory,
    kube_cluster: TestCluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The README's "Add a node" without ``mcd server``, on a host: the node's agent
    (``mcd start --root DIR``, drained by the controller by default) runs on the empty
    config, the node is labelled into the pool, the controller targets and drains it, it
    ends Done."""
    cluster = kube_cluster
    ns = cluster.namespace("ctl")
    cluster.create(MACHINECONFIGS, machine_config("00-worker", "worker", worker("base")))
    create_pool(cluster, pool("worker", ["worker"], "worker"))
    ctl = ControllerProc(cluster, tmp_path, "a", ns).start()
    try:
        wait(lambda: target(cluster, "worker") != "", 60, "pool worker rendered", ctl.log)
        rendered = target(cluster, "worker")
        node = make_node("worker")
        as_on_a_host(node, monkeypatch)
        node.start()  # registered, its agent running, in no pool yet
        node.wait_state("Done", EMPTY_CONFIG_NAME, timeout=60)
        with Rebooter([node]) as rebooter:
            label_node(cluster, node.name, "worker")  # the administrator adds it to the pool
            node.wait_state("Done", rendered, timeout=120)
            assert not rebooter.errors, rebooter.errors
        wait(
            lambda: pool_condition(cluster, "worker", "Updated").get("status") == "True",
            60,
            "worker Updated",
            ctl.log,
            node.log,
        )
    finally:
        assert ctl.stop() == 0, ctl.log()[-3000:]
    _on_config(node, rendered)
    _never_fetched_empty(node)
    assert NOT_FOUND not in ctl.log()
    assert "--root-mount" not in " ".join(node.command()) and "--drain-mode" not in node.log()
    # every file is new: drained by the controller (asked by annotation), rebooted, uncordoned
    assert node.reboots_requested() == 1
    assert node.annotations()[Annotation.LAST_APPLIED_DRAIN] == f"uncordon-{rendered}"
