"""The steps the e2e tests share: a node installed on a config, booted on it, sent to a new
config, an update whose drain a budget holds, and a kind the API server serves at last.

Each step does what an administrator or the controller would (through the harness); none
asserts more than it says it waits for, so the tests keep their own assertions.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from mcd.cluster.api import ApiError, Kube
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import worker
from tests.e2e.harness import AgentNode, Obj, create_config
from tests.fakes.kubecluster import TestCluster
from tests.patience import patient


def install(
    node: AgentNode, cluster: TestCluster, doc: Obj, annotations: Mapping[str, str] | None = None
) -> str:
    """Install time, as the machine-config-server leaves a node: the config in the cluster and
    on the node (``once-from``), the Node's annotations naming it, ``Done`` (and
    ``annotations``); the agent not started yet. Returns the config's name."""
    name = str(doc["metadata"]["name"])
    create_config(cluster, doc)
    node.provision(doc)
    cluster.annotate(
        node.name,
        {
            Annotation.CURRENT_CONFIG: name,
            Annotation.DESIRED_CONFIG: name,
            Annotation.STATE: "Done",
            **(annotations or {}),
        },
    )
    return name


def boot_on(
    node: AgentNode, cluster: TestCluster, base: str = "rendered-worker-1", **kw: object
) -> str:
    """Provision the node with a config, point the annotations at it, start the agent, wait Done."""
    name = install(node, cluster, worker(cluster.name(base), **kw))  # type: ignore[arg-type]
    node.start()
    node.wait_ready()
    node.wait_state("Done", name)
    node.wait_events("NodeDone")
    return name


def update_to(
    node: AgentNode,
    cluster: TestCluster,
    base: str = "rendered-worker-2",
    desired_image: str | None = None,
    **kw: object,
) -> str:
    """A new rendered config (``worker(**kw)``: ``image`` is its osImageURL) in the cluster
    and the node's desiredConfig naming it, with ``desiredImage`` in the same write when
    ``desired_image`` is given."""
    new = cluster.name(base)
    create_config(cluster, worker(new, **kw))  # type: ignore[arg-type]
    wanted: dict[str, str | None] = {Annotation.DESIRED_CONFIG: new}
    if desired_image is not None:
        wanted[Annotation.DESIRED_IMAGE] = desired_image
    cluster.annotate(node.name, wanted)
    return new


def blocked_update(
    node: AgentNode, cluster: TestCluster, desired_image: str | None = None
) -> tuple[str, str]:
    """Boot the node, then start a reboot-needing update (to ``desired_image`` too, when given) whose
    drain a budget blocks; returns (namespace, new config) once the node's reason names the
    budget."""
    boot_on(node, cluster)
    ns = cluster.namespace()
    cluster.pod(ns, "db-0", node.name, labels={"app": "db"})
    cluster.pdb(ns, "db-pdb", {"app": "db"}, min_available=1)
    new = update_to(node, cluster, desired_image=desired_image, app="threads=8\n")
    node.wait_for(lambda: "db-pdb" in node.reason(), 15, "a reason naming the budget")
    return ns, new


def release_and_reboot(node: AgentNode, cluster: TestCluster, ns: str) -> None:
    """The budget of :func:`blocked_update` lets the drain go on: wait for the reboot request."""
    cluster.set_min_available(ns, "db-pdb", 0)
    node.wait_reboot(timeout=30)


def release_and_no_reboot(node: AgentNode, cluster: TestCluster, ns: str) -> None:
    """The budget of :func:`blocked_update` lets a drain go on, and none does: after 3 s the
    agent has asked for no reboot."""
    cluster.set_min_available(ns, "db-pdb", 0)
    time.sleep(3)
    assert node.reboots_requested() == 0


def wait_served(kube: Kube, path: str, what: str, timeout: float = 60.0) -> None:
    """Wait until discovery catches up with a new kind: a GET of ``path`` answers."""
    deadline = time.monotonic() + patient(timeout)
    while True:
        try:
            kube.request("GET", path)
            return
        except ApiError:
            assert time.monotonic() < deadline, f"{what} never served"
            time.sleep(0.2)
