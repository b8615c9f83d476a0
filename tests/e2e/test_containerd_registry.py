"""A containerd node's registry journey (issue 42), as its agent lives it: the node's crictl.yaml
names containerd, so a digest-only mirror in ``/etc/containerd/certs.d/<registry>/hosts.toml``
lands live (no drain, no reboot, no service touched), a mirror that may resolve tags drains
first (still no reboot), ``/etc/containerd/config.toml`` drains and restarts containerd, and a
hosts.toml containerd would silently ignore ends Degraded with the reason, until the admin
goes back. Also on a real kube-apiserver."""

from __future__ import annotations

import json

from tests.builders import file_entry
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import AgentNode
from tests.e2e.scenarios import boot_on, update_to
from tests.fakes.kubecluster import TestCluster

HOSTS = "/etc/containerd/certs.d/quay.io/hosts.toml"
DIGEST = '[host."https://mirror.example.com"]\n  capabilities = ["pull"]\n'
TAGS = DIGEST + '[host."https://tags.example.com"]\n  capabilities = ["pull", "resolve"]\n'


def _units(node: AgentNode, member: str, unit: str) -> list[object]:
    return [c for c in node.bus.calls(member) if unit in json.dumps(c)]


def test_a_containerd_nodes_registry_changes_apply_as_the_plan_says(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node(fake_systemd=True)
    crictl = node.path("/etc/crictl.yaml")
    crictl.parent.mkdir(parents=True, exist_ok=True)
    crictl.write_text("runtime-endpoint: unix:///run/containerd/containerd.sock\n")
    unit = node.path("/usr/lib/systemd/system/containerd.service")  # as Debian's package has it
    unit.parent.mkdir(parents=True, exist_ok=True)
    unit.write_text("[Service]\nExecStart=/usr/bin/containerd\n")
    boot_on(node, kube_cluster)
    assert "Container runtime: containerd, from /etc/crictl.yaml" in node.log()
    # said at start: containerd has no config here, so it would read no hosts.toml
    assert "/etc/containerd/config.toml is missing: containerd reads no hosts.toml" in node.log()

    # a digest-only mirror: live, nothing drained, rebooted, restarted or reloaded
    live = update_to(
        node, kube_cluster, "rendered-worker-2", extra_files=[file_entry(HOSTS, DIGEST)]
    )
    node.wait_state("Done", live)
    assert node.path(HOSTS).read_text() == DIGEST
    assert node.reboots_requested() == 0
    assert not node.events("Drain") and not node.events("Reboot")
    assert not node.bus.calls("RestartUnit", "ReloadUnit")

    # a mirror that may resolve tags: drained first, still no reboot
    tags = update_to(node, kube_cluster, "rendered-worker-3", extra_files=[file_entry(HOSTS, TAGS)])
    node.wait_state("Done", tags)
    assert node.path(HOSTS).read_text() == TAGS
    assert node.events("Drain") and node.reboots_requested() == 0

    # containerd's own config: a drain, then a restart of containerd (not of CRI-O)
    drains = len(node.events("Drain"))
    config = update_to(node, kube_cluster, "rendered-worker-4", extra_files=[
        file_entry(HOSTS, TAGS), file_entry("/etc/containerd/config.toml", "version = 2\n")])  # fmt: skip
    node.wait_state("Done", config)
    assert len(node.events("Drain")) > drains and node.reboots_requested() == 0
    assert _units(node, "RestartUnit", "containerd.service")
    assert not _units(node, "RestartUnit", "crio.service")
    assert not _units(node, "ReloadUnit", "crio.service")

    # a hosts.toml containerd 1.6 would ignore: refused before anything is written
    bad = update_to(node, kube_cluster, "rendered-worker-5", extra_files=[
        file_entry(HOSTS, 'server = "https://quay.io"\n'),
        file_entry("/etc/containerd/config.toml", "version = 2\n")])  # fmt: skip
    node.wait_state("Degraded")
    assert node.reason().startswith(
        f"failed decoding TOML content from file {HOSTS}: invalid `host` tree"
    ), node.reason()
    assert node.path(HOSTS).read_text() == TAGS  # nothing was written
    node.set_desired(config)  # the admin goes back
    node.wait_state("Done", config)
    assert bad != config
