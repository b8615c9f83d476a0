"""Stage before you drain (issue 46 item 3): an update that changes the OS image pulls it
(``rpm-ostree rebase --download-only``) while the node still runs its pods, and only then asks
the drain controller for the drain (``desiredDrain``); the rebase that deploys it comes after
the drain. A stage that fails, or that the disk space check refuses, fails the update with
its reason and nothing is drained."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcd.host.osupdate.rpmostree import RETRY_ENV
from mcd.host.osupdate.space import MIN_FREE_ENV
from mcd.model.vocabulary import Annotation
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import IMAGE_B, AgentNode
from tests.e2e.scenarios import boot_on, update_to
from tests.fakes import rpm_ostree
from tests.fakes.kubecluster import TestCluster

DOWNLOAD = ["rebase", "--experimental", "--download-only", f"ostree-unverified-registry:{IMAGE_B}"]
DEPLOY = ["rebase", "--experimental", f"ostree-unverified-registry:{IMAGE_B}"]


def rebases(node: AgentNode) -> list[list[str]]:
    return [c["argv"] for c in node.rpm()["calls"] if c["argv"][:1] == ["rebase"]]


@contextmanager
def drain_controller(node: AgentNode, cluster: TestCluster) -> Iterator[list[Any]]:
    """Answers the agent's drain and uncordon requests as the drain controller does; for each
    drain request it first sees, the rebase calls rpm-ostree had had by then."""
    seen: list[Any] = []
    stop = threading.Event()

    def answer() -> None:
        while not stop.wait(0.05):
            a = node.annotations()
            wanted = a.get(Annotation.DESIRED_DRAIN, "")
            if wanted and a.get(Annotation.LAST_APPLIED_DRAIN) != wanted:
                if wanted.startswith("drain-"):
                    seen.append((wanted, rebases(node)))
                cluster.annotate(node.name, {Annotation.LAST_APPLIED_DRAIN: wanted})

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join(5)


def test_the_os_image_is_staged_before_the_drain_and_deployed_after_it(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    node = make_node(drain_mode="controller")
    gate = tmp_path / "pull-gate"
    node.base_env["MCD_FAKE_PULL_GATE"] = str(gate)
    with drain_controller(node, kube_cluster) as drains:
        boot_on(node, kube_cluster)
        new = update_to(node, kube_cluster, image=IMAGE_B)
        # the pull is under way, held by the registry: no drain asked for yet
        node.wait_for(lambda: Path(f"{gate}.pulling").exists(), 30, "the pull to start")
        node.wait_for(lambda: node.reason() == f"staging OS image {IMAGE_B}", 15, "the reason")
        a = node.annotations()
        assert a[Annotation.STATE] == "Working"
        assert a.get(Annotation.DESIRED_DRAIN, "") != f"drain-{new}"
        assert (node.node().get("spec") or {}).get("unschedulable") is not True
        gate.write_text("")  # the pull completes
        node.wait_reboot(timeout=60)
        # the drain was asked for once the image was on disk, not deployed yet
        assert [d for d, _ in drains] == [f"drain-{new}"]
        assert drains[0][1] == [DOWNLOAD]
        assert rebases(node) == [DOWNLOAD, DEPLOY]  # the deploy after the drain
        node.reboot()
        node.wait_state("Done", new, timeout=60)
    booted = next(d for d in node.rpm()["deployments"] if d["booted"])
    assert booted["container-image-reference"].endswith(IMAGE_B)


def test_a_failed_stage_never_drains(make_node: NodeFactory, kube_cluster: TestCluster) -> None:
    node = make_node(drain_mode="controller")
    node.base_env[RETRY_ENV] = "0.01"
    with drain_controller(node, kube_cluster) as drains:
        boot_on(node, kube_cluster)
        with rpm_ostree.edit(node.rpm_state) as state:
            state["fail"]["rebase"] = f"error: writing {IMAGE_B}: no space left on device"
            state["fail_times"]["rebase"] = 1_000
        new = update_to(node, kube_cluster, image=IMAGE_B)
        node.wait_state("Degraded", timeout=60)
        assert node.reason() == (  # upstream's words for a pull that keeps failing
            f"failed to update OS to {IMAGE_B} after retries: error running rpm-ostree "
            f"{' '.join(DOWNLOAD)}: error: writing {IMAGE_B}: no space left on device: "
            "exit status 1"
        )
        assert set(map(tuple, rebases(node))) == {tuple(DOWNLOAD)}  # the deploy never ran
        assert drains == []
        assert not node.annotations().get(Annotation.DESIRED_DRAIN, "").startswith("drain-")
        assert (node.node().get("spec") or {}).get("unschedulable") is not True
        assert not [d for d in node.rpm()["deployments"] if d["staged"]]
        assert node.reboots_requested() == 0
        with rpm_ostree.edit(node.rpm_state) as state:  # the registry is back: the retry goes on
            state["fail"].pop("rebase")
        node.wait_reboot(timeout=60)
        assert rebases(node)[-2:] == [DOWNLOAD, DEPLOY]
        assert [d for d, _ in drains] == [f"drain-{new}"]
        node.reboot()
        node.wait_state("Done", new, timeout=60)


def test_a_stage_that_would_not_fit_fails_before_any_pull_or_drain(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node(drain_mode="controller")
    with drain_controller(node, kube_cluster) as drains:
        boot_on(node, kube_cluster)
        node.stop()
        node.start(**{MIN_FREE_ENV: str(2**62)})
        update_to(node, kube_cluster, image=IMAGE_B)
        node.wait_state("Degraded", timeout=60)
        reason = node.reason()
        assert reason.startswith(f"not enough disk space to stage OS image {IMAGE_B}: ")
        assert reason.endswith(f" bytes free on /, {2**62} required ({MIN_FREE_ENV})")
        assert rebases(node) == []
        assert drains == []
        assert (node.node().get("spec") or {}).get("unschedulable") is not True
        assert node.reboots_requested() == 0
