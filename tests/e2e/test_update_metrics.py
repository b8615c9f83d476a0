"""The agent's update metrics as Prometheus scrapes them from a real ``mcd start`` (issue 33):
a reboot update is timed from Working to Done across the agent restart the reboot makes,
its drain is timed, ``mcd_reboot_required`` is 1 exactly while the reboot is owed, the gate
after the boot counts as passed, and a later agent start exports the last duration again;
a try on trial and its result."""

from __future__ import annotations

import time

from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.configs import KEY_B
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import IMAGE_B, AgentNode
from tests.e2e.scenarios import boot_on, update_to
from tests.e2e.test_health_gate import SCRIPT, gated_update
from tests.e2e.test_try_annotation import started, try_update
from tests.fakes.kubecluster import TestCluster


def scrape(node: AgentNode) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    out = {}
    for family in text_string_to_metric_families(node.metrics()):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(node: AgentNode, name: str, **labels: str) -> float | None:
    return scrape(node).get((name, frozenset(labels.items())))


def test_a_reboot_update_is_timed_across_the_reboot(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node(fake_systemd=True)
    boot_on(node, kube_cluster)
    assert value(node, "mcd_reboot_required") == 0
    assert value(node, "mcd_update_duration_seconds_count", kind="reboot") == 0
    ns = kube_cluster.namespace()
    kube_cluster.pod(ns, "web-0", node.name)
    started = time.monotonic()
    new = update_to(node, kube_cluster, app="threads=8\n")
    node.wait_reboot()
    assert value(node, "mcd_reboot_required") == 1  # committed, waiting for the reboot
    assert value(node, "mcd_drain_duration_seconds_count") == 1
    time.sleep(1.0)  # the reboot takes a while
    node.reboot()
    node.wait_state("Done", new)
    elapsed = time.monotonic() - started
    node.wait_for(lambda: value(node, "mcd_update_duration_seconds_count", kind="reboot") == 1,
                  10, "the update observed by the agent after the reboot")  # fmt: skip
    took = value(node, "mcd_update_duration_seconds_sum", kind="reboot")
    assert took is not None and 1.0 <= took <= elapsed
    assert value(node, "mcd_update_last_duration_seconds", kind="reboot") == took
    assert value(node, "mcd_reboot_required") == 0
    assert value(node, "mcd_health_gate_runs_total", result="pass") == 1  # after the boot
    assert value(node, "mcd_update_duration_seconds_count", kind="rebootless") == 0

    node.stop()
    node.start()  # a later start: nothing to time, the last duration exported again
    node.wait_ready()
    assert value(node, "mcd_update_last_duration_seconds", kind="reboot") == took
    assert value(node, "mcd_update_duration_seconds_count", kind="reboot") == 0


def test_a_rebootless_update_is_timed_as_rebootless(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node(fake_systemd=True)
    boot_on(node, kube_cluster)
    new = update_to(node, kube_cluster, key=KEY_B)
    node.wait_state("Done", new)
    node.wait_for(lambda: value(node, "mcd_update_duration_seconds_count", kind="rebootless") == 1,
                  10, "a rebootless update observed")  # fmt: skip
    assert value(node, "mcd_drain_duration_seconds_count") == 0
    assert node.reboots_requested() == 0
    assert value(node, "mcd_health_gate_runs_total", result="pass") == 1


def test_try_results_and_the_try_on_trial(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    """A try reverted at its deadline, then a confirmed one (issue 19's try mode)."""
    node, _old = started(make_node, kube_cluster)
    try_update(node, kube_cluster, "3s")
    assert value(node, "mcd_try_pending") == 1  # on trial
    node.wait_state("Degraded", timeout=60)
    node.wait_for(lambda: value(node, "mcd_try_results_total", result="reverted") == 1, 10,
                  "the revert counted")  # fmt: skip
    assert value(node, "mcd_try_pending") == 0
    assert value(node, "mcd_try_results_total", result="confirmed") == 0


def test_a_gate_that_failed_before_the_reboot_is_reported_after_it(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    """The gate fails in the boot into the new deployment and rolls back with a reboot: the
    agent of the next boot reports the failed verdict (what MCDHealthGateFailed reads)."""
    node = make_node(fake_systemd=True)
    gated_update(node, kube_cluster, "max_boots=2,settle=0", SCRIPT, image=IMAGE_B)
    node.wait_reboot(count=1, timeout=60)  # into the new deployment
    node.reboot()
    node.wait_reboot(count=2, timeout=60)  # the gate failed: back to the old one
    assert value(node, "mcd_health_gate_failed") == 1
    assert value(node, "mcd_health_gate_runs_total", result="fail") == 1
    node.reboot()
    node.wait_ready()
    assert value(node, "mcd_health_gate_failed") == 1  # a new agent, the verdict from disk
    assert value(node, "mcd_health_gate_runs_total", result="fail") == 0
