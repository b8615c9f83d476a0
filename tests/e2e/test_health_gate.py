"""The health gate of a reboot update (issue 19), on the real OSTree sysroot stand-in where the
machine has one: the new config ships a required check (an ordinary file, mode 0755) that
fails; after the boot into the new deployment the gate fails, the node rolls back to the
previous deployment (a real OSTree deployment of the old commit), its files come back, it
reboots, and after ``max_boots`` failed boots it stops and is Degraded: no reboot loop."""

from __future__ import annotations

import json
import time

from click.testing import CliRunner

from mcd.agent.safety.gateboots import BOOTS_PATH
from mcd.agent.update.journal import JOURNAL, NEW_DOC, OLD_DOC
from mcd.cli import cli
from mcd.model.node.health import GATE_ANNOTATION, REQUIRED_DIR
from mcd.model.vocabulary import Annotation
from tests.builders import file_entry
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import IMAGE_A, IMAGE_B, AgentNode
from tests.e2e.scenarios import boot_on, update_to
from tests.fakes import ostree_sysroot
from tests.fakes.kubecluster import TestCluster

MCN = "/apis/machineconfiguration.openshift.io/v1/machineconfignodes"
CHECK = f"{REQUIRED_DIR}/50-uplink"
SCRIPT = "#!/bin/sh\necho 'checking uplink'\necho 'no route to 10.0.0.1' >&2\nexit 1\n"


def booted_image(node: object) -> str:
    rpm = node.rpm()  # type: ignore[attr-defined]
    return str(next(d for d in rpm["deployments"] if d["booted"])["container-image-reference"])


def gated_update(
    node: AgentNode, cluster: TestCluster, gate: str, script: str, image: str = IMAGE_A
) -> tuple[str, str]:
    """Boot the node, give it the health gate settings ``gate``, then update it to a config
    on OS ``image`` that ships ``script`` as the required check; returns (old, new)."""
    old = boot_on(node, cluster)
    cluster.annotate(node.name, {GATE_ANNOTATION: gate})
    new = update_to(node, cluster, image=image, extra_files=[file_entry(CHECK, script, 0o755)])
    return old, new


def gave_up(new: str) -> str:
    """The reason of a node whose gate failed ``max_boots=2`` times for ``new``."""
    return (
        f"health gate failed 2 times after updates to {new}; not trying it again until "
        "desiredConfig changes or the force file is set: check required.d/50-uplink failed: "
        "exit status 1: checking uplink | no route to 10.0.0.1"
    )


def test_a_reboot_update_whose_gate_fails_rolls_back_the_os_and_stops_after_max_boots(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    old, new = gated_update(node, kube_cluster, "max_boots=2,settle=0", SCRIPT, image=IMAGE_B)
    for boot in (1, 2):
        node.wait_reboot(count=2 * boot - 1, timeout=60)  # into the new deployment
        node.reboot()
        assert booted_image(node).endswith(IMAGE_B)
        node.wait_reboot(count=2 * boot, timeout=60)  # the gate failed: back to the old one
        assert node.path(CHECK).exists() is False  # the previous files are back
        assert node.current_on_disk() == old
        metrics = node.metrics()  # the agent that rolled back, before the reboot stops it
        assert 'mcd_health_gate_rollbacks_total{kind="reboot"} 1.0' in metrics
        assert 'mcd_health_gate_failures_total{check="required.d/50-uplink"} 1.0' in metrics
        node.reboot()
        assert booted_image(node).endswith(IMAGE_A)
    node.wait_state("Degraded", timeout=60)
    reason = node.annotations()[Annotation.REASON]
    assert reason == gave_up(new)
    assert node.annotations()[Annotation.CURRENT_CONFIG] == old
    time.sleep(2)
    assert node.reboots_requested() == 4  # two boots into the broken config, no more
    events = [e["message"] for e in node.wait_events("HealthGateFailed", 2)]
    assert len(events) == 2
    assert events[0] == (
        f"health gate failed after update to {new}: check required.d/50-uplink failed: exit "
        f"status 1: checking uplink | no route to 10.0.0.1; rolled back to {old}"
    )
    assert node.path(BOOTS_PATH).stat().st_mode & 0o077 == 0
    # the MachineConfigNode says why, in upstream's NodeDegraded words
    mcn = kube_cluster.kube.request("GET", f"{MCN}/{node.name}")
    degraded = next(c for c in mcn["status"]["conditions"] if c["type"] == "NodeDegraded")
    assert degraded["status"] == "True"
    assert degraded["message"] == f"Node {node.name} upgrade failure. {reason}"
    # mcd status: the last gate and the runbook section
    args = ["status", "--node", node.name, "--kubeconfig", str(kube_cluster.kubeconfig)]
    out = CliRunner().invoke(cli, args).output
    assert f"Health gate:     failed for {new}: check required.d/50-uplink failed at " in out
    assert "Next:            see docs/runbook.md#17-health-gates-and-rollback" in out
    gate = json.loads(CliRunner().invoke(cli, [*args, "--json"]).output)["healthGate"]
    assert (gate["config"], gate["result"], gate["check"]) == (
        new,
        "failed",
        "required.d/50-uplink",
    )
    if node.sysroot is not None:  # OSTree itself: the default deployment is the old commit
        default = ostree_sysroot.deployments(node.sysroot)[0]
        assert default["container-image-reference"].endswith(IMAGE_A)


# -- a reboot update without an OS change: the journal and its backups are kept through the
#    reboot (currentconfig is promoted by the boot's gate), so the gate can roll it back too

PASSING = "#!/bin/sh\necho 'uplink fine'\nexit 0\n"


def test_a_file_only_reboot_update_whose_gate_fails_restores_the_files_and_stops(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    # the check is a file that needs a reboot; the OS is unchanged
    old, new = gated_update(node, kube_cluster, "max_boots=2,settle=0", SCRIPT)
    for boot in (1, 2):
        node.wait_reboot(count=2 * boot - 1, timeout=60)  # into the new files
        assert node.path(CHECK).exists()
        assert node.current_on_disk() == old  # promoted only by the gate after the boot
        assert node.path(JOURNAL).exists()
        node.reboot()
        node.wait_reboot(count=2 * boot, timeout=60)  # the gate failed: the old files, reboot
        assert node.path(CHECK).exists() is False
        assert node.current_on_disk() == old
        assert not node.path(JOURNAL).exists()
        metrics = node.metrics()
        assert 'mcd_health_gate_rollbacks_total{kind="reboot"} 1.0' in metrics
        node.reboot()
        assert booted_image(node).endswith(IMAGE_A)
    node.wait_state("Degraded", timeout=60)
    assert node.annotations()[Annotation.REASON] == gave_up(new)
    assert node.annotations()[Annotation.CURRENT_CONFIG] == old
    time.sleep(2)
    assert node.reboots_requested() == 4  # two boots into the broken files, no more
    assert node.path(CHECK).exists() is False
    assert len(node.wait_events("HealthGateFailed", 2)) == 2


def test_a_file_only_reboot_update_whose_gate_passes_is_promoted_and_cleans_up(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    _old, new = gated_update(node, kube_cluster, "settle=0", PASSING)
    node.wait_reboot(count=1, timeout=60)
    assert node.path(JOURNAL).exists() and node.path(OLD_DOC).exists()  # kept for a rollback
    node.reboot()
    node.wait_state("Done", new, timeout=60)
    assert node.current_on_disk() == new
    for kept in (JOURNAL, OLD_DOC, NEW_DOC):
        assert not node.path(kept).exists()
    assert node.path(CHECK).exists()
    time.sleep(1)
    assert node.reboots_requested() == 1
    assert not node.events("HealthGateFailed")
