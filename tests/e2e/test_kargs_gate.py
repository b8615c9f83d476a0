"""``mcd start`` given a config whose kernel argument GRUB would read as a comment (issue 41,
8): the update is refused before anything is written (``Unreconcilable``, the reason naming
``spec.kernelArguments[i]``): no drain, no file, no ``rpm-ostree kargs``, no reboot; a good
config afterwards applies as usual."""

from __future__ import annotations

from tests.e2e.configs import APP_CONF
from tests.e2e.conftest import NodeFactory
from tests.e2e.scenarios import boot_on, update_to
from tests.fakes.kubecluster import TestCluster


def test_a_kernel_argument_grub_would_drop_is_refused_and_nothing_changes(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    boot_on(node, kube_cluster)
    kargs = [d["kargs"] for d in node.rpm()["deployments"]]
    bad = update_to(node, kube_cluster, app="threads=8\n", kargs=["nosmt", "#quiet", "debug"])
    node.wait_state("Unreconcilable")
    reason = node.reason()
    assert 'spec.kernelArguments[1]: invalid kernel argument "#quiet": ' in reason, reason
    assert "starts with #: GRUB reads it and every argument after it as a comment" in reason
    assert node.path(APP_CONF).read_text() == "threads=4\n"
    assert node.current_on_disk() != bad
    assert [d["kargs"] for d in node.rpm()["deployments"]] == kargs
    assert node.reboots_requested() == 0
    assert not node.events("Drain") and not (node.node().get("spec") or {}).get("unschedulable")
    good = update_to(node, kube_cluster, base="rendered-worker-3", app="threads=8\n",
                     kargs=["nosmt", "quiet", "debug"])  # fmt: skip
    node.wait_reboot()
    node.reboot()
    node.wait_state("Done", good)
    assert node.path(APP_CONF).read_text() == "threads=8\n"
    booted = next(d for d in node.rpm()["deployments"] if d["booted"])
    assert {"nosmt", "quiet", "debug"} <= set(booted["kargs"])
