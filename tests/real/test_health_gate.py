"""Health gates on a real systemd (issue 19): ``mcd start`` applies a rebootless update whose
new file kills a service when systemd reloads it; the gate sees the unit failed (asked of
systemd over D-Bus), the update is rolled back, the service runs again on the old file, and
the Node says Degraded with the check that failed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcd.model.node.health import GATE_ANNOTATION
from mcd.model.vocabulary import Annotation
from tests.builders import file_entry
from tests.e2e.configs import worker
from tests.e2e.harness import create_config
from tests.e2e.scenarios import install
from tests.fakes.kubecluster import TestCluster
from tests.real.agent_node import RealSystemdNode, real_node
from tests.real.test_agent import POLICY

# crio.service (the default policy reloads it when policy.json changes) exits with an error
# when a reload finds its policy "broken", as a daemon that cannot use its new config does;
# the reload itself succeeds, so only the gate can notice
CRIO = """[Unit]
Description=CRI-O stand-in
[Service]
ExecStart=/bin/sh -c 'rm -f /run/crio-reloaded; echo start >>/var/tmp/crio.log; \\
  while ! [ -e /run/crio-reloaded ] || ! grep -q broken /etc/containers/policy.json; \\
  do sleep 0.2; done; exit 1'
ExecReload=/bin/touch /run/crio-reloaded
[Install]
WantedBy=multi-user.target
"""
GOOD = '{"default":[{"type":"insecureAcceptAnything"}]}\n'
BROKEN = '{"default":[{"type":"broken"}]}\n'


@pytest.fixture
def node(kube_cluster: TestCluster, tmp_path: Path) -> Iterator[RealSystemdNode]:
    with real_node(kube_cluster, tmp_path / "node", "gate19") as n:
        yield n


def with_crio(doc: dict[str, object], policy: str) -> dict[str, object]:
    spec = doc["spec"]
    assert isinstance(spec, dict)
    spec["config"]["systemd"]["units"].append(
        {"name": "crio.service", "contents": CRIO, "enabled": True}
    )
    spec["config"]["storage"]["files"].append(file_entry(POLICY, policy, 0o644))
    return doc


def test_a_unit_that_fails_after_a_rebootless_update_rolls_it_back(
    node: RealSystemdNode, kube_cluster: TestCluster
) -> None:
    before = kube_cluster.name("rendered-worker-1")
    doc = with_crio(worker(before), GOOD)  # the node's first config runs crio on a good policy
    # a loaded CI machine: give crio time to see its policy
    install(node, kube_cluster, doc, {GATE_ANNOTATION: "settle=3"})
    node.container.busctl(
        "call", "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
        "org.freedesktop.systemd1.Manager", "StartUnit", "ss", "crio.service", "replace",
    )  # fmt: skip
    node.start()
    node.wait_ready()
    node.wait_state("Done", before)
    assert node.container.unit_property("crio.service", "ActiveState") == "active"
    broken_name = kube_cluster.name("rendered-worker-3")
    create_config(kube_cluster, with_crio(worker(broken_name), BROKEN))
    node.set_desired(broken_name)
    node.wait_state("Degraded", timeout=90)
    reason = node.annotations()[Annotation.REASON]
    assert reason == (
        f"health gate failed after update to {broken_name}: check units failed: "
        f"crio.service is failed; rolled back to {before}"
    )
    assert node.path(POLICY).read_text() == GOOD  # the file is back
    assert node.current_on_disk() == before
    assert node.annotations()[Annotation.CURRENT_CONFIG] == before
    # systemd runs crio again, on the old policy (restarted: a dead unit cannot reload)
    assert node.container.unit_property("crio.service", "ActiveState") == "active"
    assert node.path("/var/tmp/crio.log").read_text().count("start") == 2
    events = node.wait_events("HealthGateFailed")
    assert "check units failed: crio.service is failed" in events[0]["message"]
    assert 'mcd_health_gate_rollbacks_total{kind="rebootless"} 1.0' in node.metrics()
    assert node.container.exits == []  # no reboot
