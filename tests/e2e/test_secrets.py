"""No secret on any channel of the agent (issue 14, item 6): Node annotations, Events and
its log (the journald records), through an update, drift of a private file and a refusal."""

from __future__ import annotations

import json
from typing import Any

from mcd.model.vocabulary import Annotation
from tests.builders import file_entry
from tests.e2e.configs import worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import create_config
from tests.fakes.kubecluster import TestCluster

MARKERS = ("MARKER-FILE", "MARKER-SSH", "MARKER-HASH", "MARKER-PULL", "MARKER-DB")


def planted(name: str, kargs: list[str] | None = None) -> dict[str, Any]:
    doc = worker(
        name,
        app="threads=4\n# MARKER-FILE\n",
        secret='{"auths":{"quay.io":{"auth":"MARKER-PULL"}}}',
        key="ssh-ed25519 AAAAMARKER-SSH core@x",
        extra_files=[file_entry("/etc/app/db.conf", "password=MARKER-DB\n", 0o640)],
        kargs=kargs,
    )
    doc["spec"]["config"]["passwd"]["users"][0]["passwordHash"] = "$6$salt$MARKER-HASH"
    return doc


def test_annotations_events_and_logs_carry_no_secret(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    one = kube_cluster.name("rendered-worker-1")
    create_config(kube_cluster, planted(one))
    node.provision(planted(one))
    kube_cluster.annotate(
        node.name,
        {Annotation.CURRENT_CONFIG: one, Annotation.DESIRED_CONFIG: one, Annotation.STATE: "Done"},
    )
    node.start()
    node.wait_state("Done", one)
    # an update that passes, then drift of a private file, then a refused config
    two = kube_cluster.name("rendered-worker-2")
    create_config(kube_cluster, planted(two, kargs=["nosmt"]))
    node.set_desired(two)
    node.wait_reboot()
    node.reboot()
    node.wait_state("Done", two)
    node.path("/etc/app/db.conf").write_text("password=MARKER-DB-changed\n")
    node.wait_state("Degraded")
    assert 'content mismatch for file "/etc/app/db.conf"' in node.reason()
    node.path("/etc/app/db.conf").write_text("password=MARKER-DB\n")
    node.wait_state("Done", two)
    three = kube_cluster.name("rendered-worker-3")
    create_config(kube_cluster, planted(three, kargs=["nosmt", "bad\narg"]))
    node.set_desired(three)
    node.wait_state("Unreconcilable")
    assert "spec.kernelArguments[1]: invalid kernel argument" in node.reason()
    channels = {
        "annotations": json.dumps(node.annotations()),
        "events": json.dumps(node.events()),
        "log": node.log(),
    }
    for channel, text in channels.items():
        for marker in MARKERS:
            assert marker not in text, f"{marker} in {channel}"
