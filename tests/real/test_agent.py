"""``mcd start`` end to end on a real systemd: the update paths a node takes, with the units,
jobs and the reboot carried out by systemd itself (PID 1 of an nspawn container)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcd.model.vocabulary import Annotation
from tests.builders import file_entry
from tests.e2e.configs import worker
from tests.e2e.harness import create_config
from tests.e2e.scenarios import install
from tests.fakes.kubecluster import TestCluster
from tests.real.agent_node import RealSystemdNode, real_node

CRIO = """[Unit]
Description=CRI-O stand-in
[Service]
ExecStart=/bin/sh -c 'echo start >>/var/tmp/crio.log; exec sleep infinity'
ExecReload=/bin/sh -c 'echo reload >>/var/tmp/crio.log'
[Install]
WantedBy=multi-user.target
"""
POLICY = "/etc/containers/policy.json"


@pytest.fixture
def node(kube_cluster: TestCluster, tmp_path: Path) -> Iterator[RealSystemdNode]:
    with real_node(kube_cluster, tmp_path / "node", "real") as n:
        yield n


def boot_on(node: RealSystemdNode, cluster: TestCluster, **kw: object) -> str:
    name = install(node, cluster, worker(cluster.name("rendered-worker-1"), **kw))  # type: ignore[arg-type]
    node.start()
    node.wait_ready()
    node.wait_state("Done", name)
    return name


def test_file_change_needing_reboot_reboots_the_real_node_and_completes_on_the_next_boot(
    node: RealSystemdNode, kube_cluster: TestCluster
) -> None:
    boot_on(node, kube_cluster)
    assert node.container.unit_property("app.service", "UnitFileState") == "enabled"
    new = kube_cluster.name("rendered-worker-2")
    create_config(kube_cluster, worker(new, app="threads=8\n"))
    node.set_desired(new)
    node.wait_reboot(timeout=60)  # systemd ran the reboot unit: nspawn ended with 133
    assert node.container.exits == [133]
    assert node.annotations()[Annotation.POST_CONFIG_ACTION] == "Rebooting"
    assert node.path("/etc/app/app.conf").read_text() == "threads=8\n"
    node.reboot()  # the next boot: same root, new PID 1, the agent started again
    node.wait_state("Done", new, timeout=60)
    assert node.container.boots == 2 and node.starts == 2
    assert node.annotations()[Annotation.POST_CONFIG_ACTION] == ""
    assert node.current_on_disk() == new
    assert node.container.unit_property("app.service", "UnitFileState") == "enabled"
    node.wait_events("Reboot")


def test_rebootless_reload_runs_the_reload_job_in_systemd(
    node: RealSystemdNode, kube_cluster: TestCluster
) -> None:
    crio = node.root / "etc/systemd/system/crio.service"
    crio.write_text(CRIO)
    boot_on(node, kube_cluster)
    node.container.busctl(
        "call", "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
        "org.freedesktop.systemd1.Manager", "StartUnit", "ss", "crio.service", "replace",
    )  # fmt: skip
    log = node.path("/var/tmp/crio.log")
    node.wait_for(lambda: log.exists() and log.read_text() == "start\n", 10, "crio started")
    pid = node.container.unit_property("crio.service", "MainPID", "Service")
    new = kube_cluster.name("rendered-worker-2")
    policy = file_entry(POLICY, '{"default":[{"type":"insecureAcceptAnything"}]}\n', 0o644)
    create_config(kube_cluster, worker(new, extra_files=[policy]))
    node.set_desired(new)
    node.wait_state("Done", new, timeout=60)
    assert log.read_text() == "start\nreload\n"  # systemd ran ExecReload, nothing restarted
    assert node.container.unit_property("crio.service", "MainPID", "Service") == pid
    assert node.container.running and node.container.exits == []  # no reboot
    assert node.reboots_requested() == 0
    assert node.path(POLICY).exists()
    assert node.current_on_disk() == new
