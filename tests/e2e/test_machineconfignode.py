"""The agent's MachineConfigNode through a whole update (issue 17): every status write the
agent sends is recorded by the fake API server, and the phases appear in upstream's order with
upstream's messages; the config versions follow in spec and status."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from mcd.cluster.api import USER_AGENT
from tests.e2e.configs import worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import create_config
from tests.e2e.scenarios import boot_on
from tests.fakes.apiserver import FakeApiServer
from tests.fakes.kubecluster import TestCluster

MCN = "/apis/machineconfiguration.openshift.io/v1/machineconfignodes"
Obj = dict[str, Any]


def record_status_writes(fake: FakeApiServer, node: str) -> list[Obj]:
    """Every MachineConfigNode status body written for ``node``, in order."""
    writes: list[Obj] = []
    lock = threading.Lock()

    def match(method: str, path: str, body: bytes) -> bool:
        if method == "PATCH" and path == f"{MCN}/{node}/status":
            with lock:
                writes.append(json.loads(body)["status"])
        return False  # never fires: the trigger only watches

    fake.when(match, lambda: None)
    return writes


def changes(start: Obj, writes: list[Obj]) -> list[list[tuple[str, str]]]:
    """For each write, the conditions it changed from ``start`` on (type, status), in the
    list's order."""
    seen = {c["type"]: (c["status"], c["message"]) for c in start["conditions"]}
    out = []
    for status in writes:
        changed = []
        for c in status["conditions"]:
            key = (c["status"], c["message"])
            if seen.get(c["type"]) != key:
                changed.append((c["type"], c["status"]))
            seen[c["type"]] = key
        out.append(changed)
    return out


@pytest.mark.fake_only("reads every MachineConfigNode status write from the server's request log")
def test_machineconfignode_reports_each_phase_of_an_update_in_order(
    make_node: NodeFactory, kube_cluster: TestCluster, fake_api: FakeApiServer
) -> None:
    node = make_node()
    first = boot_on(node, kube_cluster)
    mcn = kube_cluster.kube.request("GET", f"{MCN}/{node.name}")
    assert mcn["spec"]["node"]["name"] == node.name and mcn["spec"]["pool"]["name"] == "worker"
    assert mcn["metadata"]["ownerReferences"][0]["kind"] == "Node"
    kinds = {c["type"]: c for c in mcn["status"]["conditions"]}
    assert kinds["Updated"]["status"] == "True"
    assert kinds["Updated"]["message"] == f"Node {node.name} Updated"
    assert mcn["status"]["configVersion"] == {"desired": first, "current": first}

    writes = record_status_writes(fake_api, node.name)
    before = len(fake_api.requests)
    target = kube_cluster.name("rendered-worker-2")
    create_config(kube_cluster, worker(target, app="threads=8\n"))
    node.set_desired(target)
    node.wait_reboot()
    node.reboot()
    node.wait_state("Done", target)

    def updated() -> bool:
        got = kube_cluster.kube.request("GET", f"{MCN}/{node.name}")
        conds = {c["type"]: c for c in got["status"]["conditions"]}
        current = got["status"]["configVersion"].get("current")
        return bool(conds["Updated"]["status"] == "True" and current == target)

    node.wait_for(updated, what="MachineConfigNode Updated")
    phases = changes(mcn["status"], writes)
    # upstream's phases in order; phases a moment apart share one write (the agent defers a
    # phase until the next step that takes time): needs update + prepared; cordoned, drained
    # and files and OS in progress; applied + reboot required; rebooted; then uncordoned,
    # resumed and updated, which sets every phase the update went through back to False
    went_through = ["UpdatePrepared", "UpdateExecuted", "Cordoned", "Drained", "AppliedFilesAndOS",
                    "RebootedNode", "UpdateComplete", "Uncordoned", "Resumed"]  # fmt: skip
    assert [set(p) for p in phases] == [
        {("Updated", "False"), ("UpdatePrepared", "True")},
        {("UpdateExecuted", "Unknown"), ("Cordoned", "True"), ("Drained", "True"),
         ("AppliedFilesAndOS", "Unknown")},
        {("UpdateExecuted", "True"), ("AppliedFilesAndOS", "True"), ("RebootedNode", "Unknown"),
         ("NodeDegraded", "False")},  # upstream update()'s deferred report, before the reboot
        {("RebootedNode", "True")},
        {("Updated", "True")} | {(t, "False") for t in went_through},
    ], phases  # fmt: skip
    assert (
        writes[1]["conditions"]
        and {c["type"]: c["message"] for c in writes[1]["conditions"]}["UpdateExecuted"]
        == "Updating the Files and OS on disk as a part of the in progress phase"
    )
    last = {c["type"]: c for c in writes[-1]["conditions"]}
    assert last["Updated"] == {
        **last["Updated"],
        "status": "True",
        "message": f"Node {node.name} Updated",
    }
    assert {t for t, c in last.items() if c["status"] == "True"} == {"Updated"}
    assert last["UpdatePrepared"]["message"] == (
        f"Action during update to {target}: Update Compatible. Post Cfg Actions: [Reboot] "
        "Drain Required: true"
    )
    assert last["Drained"]["message"].endswith(f"current drainer: drain-{target}")
    assert last["Drained"]["reason"] == "UpdateExecutedDrained"
    assert writes[-1]["configVersion"] == {"desired": target, "current": target}
    mcn = kube_cluster.kube.request("GET", f"{MCN}/{node.name}")
    assert mcn["spec"]["configVersion"]["desired"] == target

    # requests: one status write per phase, one spec write for the new desired config, one
    # read (by the agent started after the reboot; a running agent keeps what it wrote)
    agent = [r for r in fake_api.requests[before:] if r.user_agent.startswith(USER_AGENT)]
    on_mcn = [(r.method, r.path.rsplit("/", 1)[-1]) for r in agent if r.path.startswith(MCN)]
    assert on_mcn.count(("PATCH", "status")) == len(phases) == 5
    assert on_mcn.count(("PATCH", node.name)) == 1
    assert [m for m, _ in on_mcn if m == "GET"] == ["GET"]
    assert len(on_mcn) == 7
