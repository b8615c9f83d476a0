"""The ClusterRole in ``daemonset/base/02-rbac.yaml`` is exactly what ``mcd start`` uses with
``--drain-mode controller`` (the DaemonSet's default): every request the agent makes in the e2e
scenarios is recorded by the API server and compared with the rules, both ways (issue 7); the
agent reads no pod and evicts nothing (issue 28). ``--drain-mode self`` needs exactly what
``daemonset/optional/self-drain-rbac.yaml`` adds: pods listed and read, evictions."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import yaml

from mcd.cluster.api import USER_AGENT
from mcd.cluster.node import annotations_of
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import create_config
from tests.e2e.scenarios import boot_on
from tests.fakes import cri
from tests.fakes.apiserver import FakeApiServer
from tests.fakes.kubecluster import TestCluster

RBAC = Path(__file__).resolve().parents[2] / "daemonset" / "base" / "02-rbac.yaml"
SELF_DRAIN_RBAC = RBAC.parents[1] / "optional" / "self-drain-rbac.yaml"
Permission = tuple[str, str, str]  # (apiGroup, resource[/subresource], verb)


def granted(path: Path = RBAC) -> set[Permission]:
    """The ClusterRole's rules and the namespaced Role's (the Lease, in the agent's namespace)."""
    roles = [
        d
        for d in yaml.safe_load_all(path.read_text())
        if d and d["kind"] in ("ClusterRole", "Role")
    ]
    return {(g, r, v) for role in roles for rule in role["rules"] for g in rule["apiGroups"]
            for r in rule["resources"] for v in rule["verbs"]}  # fmt: skip


def permission(method: str, path: str, verb: str) -> Permission:
    parts = [p for p in path.split("/") if p]
    group, rest = ("", parts[2:]) if parts[0] == "api" else (parts[1], parts[3:])
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        rest = rest[2:]
    resource = rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "")
    return group, resource, verb


def used(fake: FakeApiServer) -> set[Permission]:
    return {permission(r.method, r.path, r.verb) for r in fake.requests
            if r.user_agent.startswith(USER_AGENT) and r.path.startswith(("/api/", "/apis/"))}  # fmt: skip


@pytest.mark.fake_only(
    "reads every request the agent made from the server's log "
    "(the real authorizer's verdict: tests/real/test_cluster_rbac.py)"
)
def test_cluster_role_covers_exactly_what_the_agent_does(
    make_node: NodeFactory, kube_cluster: TestCluster, fake_api: FakeApiServer
) -> None:
    # controller drain (the default): the test plays the drain controller, echoing desiredDrain
    other = make_node("ctl", drain_mode="controller")
    stop = threading.Event()

    def controller() -> None:
        while not stop.wait(0.05):
            a = annotations_of(kube_cluster.get_node(other.name))
            wanted = a.get(Annotation.DESIRED_DRAIN, "")
            if wanted and a.get(Annotation.LAST_APPLIED_DRAIN) != wanted:
                kube_cluster.annotate(other.name, {Annotation.LAST_APPLIED_DRAIN: wanted})

    echo = threading.Thread(target=controller, daemon=True)
    echo.start()
    # its pool pins images (issue 32): the agent reads the PinnedImageSet by name
    pinned = kube_cluster.name("set")
    kube_cluster.create("/apis/machineconfiguration.openshift.io/v1/pinnedimagesets", {
        "metadata": {"name": pinned}, "spec": {"pinnedImages": [{"name": "quay.io/a@sha256:"
                                                                  + "a" * 64}]}})  # fmt: skip
    kube_cluster.create("/apis/machineconfiguration.openshift.io/v1/machineconfigpools", {
        "metadata": {"name": "worker"}, "spec": {"pinnedImageSets": [{"name": pinned}]}})  # fmt: skip
    state = other.root.parent / "cri.json"
    cri.save(state, cri.new_state())
    other.base_env.update(MCD_FAKE_CRI_STATE=str(state), MCD_PINNED_IMAGES_INTERVAL="0.5")
    other.path("/var/lib/iri-registry").mkdir(parents=True)  # it reads the InternalReleaseImage
    try:
        boot_on(other, kube_cluster, "rendered-ctl-1")
        kube_cluster.pod(kube_cluster.namespace("ctl"), "web-1", other.name)
        target = kube_cluster.name("rendered-ctl-2")
        create_config(kube_cluster, worker(target, app="threads=8\n"))
        other.set_desired(target)
        other.wait_reboot()
        assert other.annotations()[Annotation.LAST_APPLIED_DRAIN] == f"drain-{target}"
        other.reboot()
        other.wait_state("Done", target)
        other.wait_for(
            lambda: other.annotations().get(Annotation.LAST_APPLIED_DRAIN) == f"uncordon-{target}"
        )
    finally:
        stop.set()
        echo.join(5)
    by_controller_mode = used(fake_api)
    fake_api.reset_log()

    # self drain (opt-in): boot, a missing MachineConfig, a drain of a real pod, a reboot, drift
    node = make_node()
    boot_on(node, kube_cluster)
    ns = kube_cluster.namespace()
    kube_cluster.pod(ns, "web-0", node.name)
    new = kube_cluster.name("rendered-worker-2")
    node.set_desired(new)
    node.wait_state("Degraded")
    create_config(kube_cluster, worker(new, app="threads=8\n"))
    node.wait_reboot()
    node.reboot()
    node.wait_state("Done", new)
    node.path("/etc/app/app.conf").write_text("drifted\n")
    node.wait_state("Degraded")
    by_self_mode = used(fake_api)

    pods = {p for p in by_controller_mode | by_self_mode if p[1].startswith("pods")}
    assert by_controller_mode - granted() == set(), "the default mode needs more than 02-rbac"
    assert not {p for p in by_controller_mode if p[1].startswith("pods")}, "it touched pods"
    assert pods == granted(SELF_DRAIN_RBAC), "self-drain's role is exactly what it adds"
    recorded = by_controller_mode | by_self_mode
    everything = granted() | granted(SELF_DRAIN_RBAC)
    assert recorded - everything == set(), "the agent made requests no role allows"
    assert everything - recorded == set(), "the roles allow requests the agent never makes"
    assert not granted() & granted(SELF_DRAIN_RBAC)
