"""The MachineConfigNode of an image-mode node (issue 32), as upstream's
ImageModeStatusReporting reports it (``pkg/upgrademonitor``, ``update()``,
``applyLayeredOSChanges``): ``spec.configImage.desiredImage`` and ``status.configImage``
from the Node's image annotations, ``AppliedFiles`` and ``AppliedOSImage`` in place of
``AppliedFilesAndOS``, and ``ImagePulledFromRegistry`` around the pull of the image."""

from __future__ import annotations

from typing import Any

import pytest

from mcd.host.osupdate.rpmostree import RETRY_ENV
from tests.e2e.conftest import NodeFactory
from tests.e2e.scenarios import boot_on, update_to
from tests.e2e.test_image_mode import OCL_IMAGE
from tests.e2e.test_machineconfignode import MCN, record_status_writes
from tests.fakes import rpm_ostree
from tests.fakes.kubecluster import TestCluster

Obj = dict[str, Any]


@pytest.mark.fake_too("the pull's progress as written, from the fake's request log")
def test_image_mode_node_reports_config_image_and_its_conditions(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    """Also on a real kube-apiserver: daemonset/kubernetes/08's CRD holds configImage, so the writes
    pass its schema (and its image reference rules)."""
    node = make_node(fake_systemd=True)
    boot_on(node, kube_cluster)
    fake = kube_cluster.fake
    writes = record_status_writes(fake, node.name) if fake is not None else []
    new = update_to(node, kube_cluster, desired_image=OCL_IMAGE, app="threads=8\n")
    node.wait_reboot()
    node.reboot()
    node.wait_state("Done", new)

    def mcn() -> Obj:
        return kube_cluster.kube.request("GET", f"{MCN}/{node.name}")

    node.wait_for(
        lambda: (mcn().get("status") or {}).get("configImage", {}).get("currentImage")
        == OCL_IMAGE, 15, "status.configImage.currentImage")  # fmt: skip
    got = mcn()
    assert got["spec"]["configImage"] == {"desiredImage": OCL_IMAGE}
    assert got["status"]["configImage"] == {"currentImage": OCL_IMAGE, "desiredImage": OCL_IMAGE}
    conditions = {c["type"]: c for c in got["status"]["conditions"]}
    pulled = conditions["ImagePulledFromRegistry"]
    assert pulled["reason"] == "ImagePulledFromRegistry"
    assert pulled["message"].endswith(f"Successfully pulled OS image {OCL_IMAGE} from registry")
    assert conditions["AppliedOSImage"]["reason"] == "UpdateExecutedAppliedOSImage"
    assert conditions["AppliedOSImage"]["message"].endswith("Applied new OS config to node.")
    assert conditions["AppliedFiles"]["message"].endswith(
        "Applied files. SSH Keys did need an update"
    )
    assert conditions["Updated"]["status"] == "True"
    if fake is not None:  # the pull as it went: Unknown while pulling, then True
        seen = [
            (c["status"], c["message"])
            for w in writes
            for c in w.get("conditions", [])
            if c["type"] == "ImagePulledFromRegistry"
        ]
        assert ("Unknown", f"Pulling OS image {OCL_IMAGE} from registry") in seen
        assert ("True", f"Successfully pulled OS image {OCL_IMAGE} from registry") in seen
        executed = [
            c["reason"]
            for w in writes
            for c in w.get("conditions", [])
            if c["type"] == "UpdateExecuted"
        ]
        assert "AppliedOSImage" in executed and "AppliedFiles" in executed


def test_an_image_that_cannot_be_pulled_is_said_on_the_mcn(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    """Upstream ``applyLayeredOSChanges``: ImagePulledFromRegistry False with the error."""
    node = make_node(fake_systemd=True)
    node.base_env[RETRY_ENV] = "0.01"
    boot_on(node, kube_cluster)
    error = f"error: reading manifest in {OCL_IMAGE}: manifest unknown"
    with rpm_ostree.edit(node.rpm_state) as state:
        state["fail"]["rebase"] = error
        state["fail_times"]["rebase"] = 10_000
    update_to(node, kube_cluster, desired_image=OCL_IMAGE, app="threads=8\n")
    node.wait_state("Degraded", timeout=60)

    def pulled() -> Obj:
        got = kube_cluster.kube.request("GET", f"{MCN}/{node.name}")
        found: Obj = {c["type"]: c for c in got["status"]["conditions"]}
        condition: Obj = found["ImagePulledFromRegistry"]
        return condition

    node.wait_for(lambda: pulled()["status"] == "False", 15, "ImagePulledFromRegistry False")
    message = pulled()["message"]
    assert message.startswith(f"Failed to pull OS image {OCL_IMAGE} from registry: ")
    assert "manifest unknown" in message
