"""``mcd start`` end to end (issue 6): the agent as a subprocess against the API server, with
the D-Bus test bus, the rpm-ostree stand-in and simulated reboots."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcd.cli import cli
from mcd.host.lock import LOCK_PATH
from mcd.model.vocabulary import Annotation
from tests.builders import file_entry
from tests.e2e.configs import KEY_B, PULL_SECRET, worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import IMAGE_B, create_config, free_port
from tests.e2e.scenarios import blocked_update, boot_on, release_and_reboot, update_to
from tests.fakes import rpm_ostree
from tests.fakes.apiserver import FakeApiServer
from tests.fakes.kubecluster import TestCluster
from tests.integration.test_login_monitor import needs_journald, write_logins
from tests.patience import patient


def test_rebootless_update_of_pull_secret_and_ssh_key(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    boot_on(node, kube_cluster)
    new = kube_cluster.name("rendered-worker-2")
    create_config(
        kube_cluster, worker(new, secret='{"auths":{"r.example.com":{"auth":"bmV3"}}}', key=KEY_B)
    )
    node.set_desired(new)
    node.wait_state("Done", new)
    assert json.loads(node.path(PULL_SECRET).read_text()) == {
        "auths": {"r.example.com": {"auth": "bmV3"}}
    }
    keys = node.path("/home/core/.ssh/authorized_keys.d/ignition").read_text()
    assert KEY_B in keys
    assert node.current_on_disk() == new
    assert node.reboots_requested() == 0
    assert not node.events("Drain") and not node.events("Cordon")
    assert not node.node().get("spec", {}).get("unschedulable")
    assert node.reason() == ""


def test_file_change_needing_reboot_drains_reboots_and_completes(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    boot_on(node, kube_cluster)
    ns = kube_cluster.namespace()
    kube_cluster.pod(ns, "web-0", node.name)
    new = update_to(node, kube_cluster, app="threads=8\n")
    node.wait_reboot()
    assert node.state() == "Working"
    assert node.annotations()[Annotation.POST_CONFIG_ACTION] == "Rebooting"
    assert node.node()["spec"].get("unschedulable") is True
    assert "web-0" not in kube_cluster.pods_on(node.name)
    assert node.path("/etc/app/app.conf").read_text() == "threads=8\n"
    node.wait_events("Drain")
    node.wait_events("Reboot")
    node.reboot()
    node.wait_state("Done", new)
    assert node.annotations()[Annotation.POST_CONFIG_ACTION] == ""
    assert not node.node()["spec"].get("unschedulable")
    assert node.current_on_disk() == new
    assert node.reboots_requested() == 1
    node.wait_events("Uncordon")


def test_os_pivot_and_kernel_arguments_reboot_into_the_new_deployment(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    boot_on(node, kube_cluster)
    new = update_to(node, kube_cluster, image=IMAGE_B, kargs=["nosmt", "mitigations=auto"])
    node.wait_reboot()
    assert node.current_on_disk() != new  # promoted only once the new deployment boots
    node.reboot()
    node.wait_state("Done", new)
    booted = next(d for d in node.rpm()["deployments"] if d["booted"])
    assert booted["container-image-reference"].endswith(IMAGE_B)
    assert {"nosmt", "mitigations=auto"} <= set(booted["kargs"])
    assert node.current_on_disk() == new


def test_missing_machineconfig_degrades_then_recovers_when_created(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    boot_on(node, kube_cluster)
    new = kube_cluster.name("rendered-worker-2")
    node.set_desired(new)
    node.wait_state("Degraded")
    assert node.reason() == f'machineconfig.machineconfiguration.openshift.io "{new}" not found'
    # let the backoff grow (retries 1, 2, 4, 8, 16 s apart: after 16 s the next is ~15 s away),
    # so a recovery that waited for it is told from one the MachineConfig's creation woke,
    # with room for a loaded machine
    time.sleep(16)
    started = time.monotonic()
    create_config(kube_cluster, worker(new, key=KEY_B))
    node.wait_state("Done", new, timeout=30)
    assert time.monotonic() - started < 12
    assert node.reboots_requested() == 0


def test_drifted_file_degrades_at_once_and_recovers_when_restored(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    name = boot_on(node, kube_cluster)
    conf = node.path("/etc/app/app.conf")
    original = conf.read_bytes()
    node.wait_for(lambda: "Config Drift Monitor started" in node.log(), 10, "drift monitor")
    started = time.monotonic()
    conf.write_text("threads=400\n")
    node.wait_state("Degraded", timeout=30)
    took = time.monotonic() - started
    # inotify, not the resync (300 s): well under a second on a quiet machine; the bound
    # leaves room for a loaded one
    assert took < patient(10), f"drift noticed after {took:.2f}s"
    assert node.reason() == (
        f'unexpected on-disk state validating against {name}: content mismatch for file "/etc/app/app.conf"'
    )
    node.wait_events("ConfigDriftDetected")
    drift = [line for line in node.metrics().splitlines() if line.startswith("mcd_config_drift ")]
    assert drift and float(drift[0].split()[1]) > 0
    conf.write_bytes(original)
    node.wait_state("Done", name, timeout=10)
    assert node.reboots_requested() == 0
    drift = [line for line in node.metrics().splitlines() if line.startswith("mcd_config_drift ")]
    assert float(drift[0].split()[1]) == 0

    # drift again, then repair with the force file: re-applied with a reboot
    conf.chmod(0o600)
    node.wait_state("Degraded", timeout=5)
    assert "mode mismatch for file" in node.reason()
    node.path("/run/machine-config-daemon-force").write_text("")
    node.wait_reboot(timeout=10)
    node.reboot()
    node.wait_state("Done", name)
    assert conf.stat().st_mode & 0o777 == 0o644
    assert not node.path("/run/machine-config-daemon-force").exists()


def _tree(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every file's mode and bytes; the writer lock's file (who last held it) is left out."""
    out = {}
    lock = root / LOCK_PATH.lstrip("/")
    for path in sorted(root.rglob("*")):
        if path == lock:
            continue
        if path.is_file() and not path.is_symlink() and "proc" not in path.parts:
            out[str(path.relative_to(root))] = (path.stat().st_mode, path.read_bytes())
    return out


@pytest.mark.parametrize("change", ["disks", "fips"])
def test_unreconcilable_config_changes_nothing_and_says_why(
    make_node: NodeFactory, kube_cluster: TestCluster, change: str
) -> None:
    node = make_node()
    name = boot_on(node, kube_cluster)
    before = _tree(node.root)
    new = kube_cluster.name("rendered-worker-2")
    if change == "disks":
        doc = worker(new, app="threads=8\n")
        doc["spec"]["config"]["storage"]["disks"] = [{"device": "/dev/sdb", "wipeTable": True}]
        detail = "ignition disks section contains changes"
    else:
        doc = worker(new, app="threads=8\n", fips=True)
        detail = "detected change to FIPS flag; refusing to modify FIPS on a running cluster"
    create_config(kube_cluster, doc)
    node.set_desired(new)
    node.wait_state("Unreconcilable")
    reason = node.reason()
    assert reason.startswith(f"can't reconcile config {name} with {new}: ") and reason.endswith(
        detail
    )
    node.wait_events("FailedToReconcile")
    assert _tree(node.root) == before
    assert node.reboots_requested() == 0
    node.set_desired(name)  # the admin goes back: the node recovers by itself
    node.wait_state("Done", name)


def test_drain_blocked_by_a_budget_names_pod_and_budget_then_completes(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    ns, new = blocked_update(node, kube_cluster)
    reason = node.reason()
    assert f"{ns}/db-0" in reason and f"PodDisruptionBudget {ns}/db-pdb" in reason
    assert node.state() == "Working"
    assert node.reboots_requested() == 0
    release_and_reboot(node, kube_cluster, ns)
    node.reboot()
    node.wait_state("Done", new)
    assert node.reason() == ""


@pytest.mark.fake_only("stops and restarts the API server mid-update")
def test_api_server_restarts_in_the_middle_of_an_update(
    make_node: NodeFactory, kube_cluster: TestCluster, fake_api: FakeApiServer
) -> None:
    node = make_node()
    ns, new = blocked_update(node, kube_cluster)
    fake_api.restart(compact=True)  # watches cut, history compacted (410 on resume)
    release_and_reboot(node, kube_cluster, ns)
    fake_api.stop()  # the API server is away while the node reboots
    node.reboot()
    time.sleep(1.5)
    fake_api.start()
    node.wait_state("Done", new, timeout=30)
    assert node.current_on_disk() == new


def test_agent_killed_during_an_update_finishes_it_after_restart(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    boot_on(node, kube_cluster)
    node.stop()
    node.start(MCD_CRASH_AT="files:1")
    new = kube_cluster.name("rendered-worker-2")
    create_config(
        kube_cluster,
        worker(new, app="threads=8\n", extra_files=[file_entry("/etc/app/extra", "x\n")]),
    )
    node.set_desired(new)
    node.wait_for(lambda: not node.running, 15, "the agent to be killed")
    assert node.proc is not None and node.proc.returncode == -signal.SIGKILL
    node.start()
    node.wait_reboot(timeout=30)
    node.reboot()
    node.wait_state("Done", new)
    assert node.path("/etc/app/app.conf").read_text() == "threads=8\n"
    assert node.path("/etc/app/extra").read_text() == "x\n"
    assert not node.path("/etc/machine-config-daemon/transaction.json").exists()


def test_sigterm_during_an_update_waits_for_the_update_step(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    ns, _new = blocked_update(node, kube_cluster)
    assert node.proc is not None
    node.proc.send_signal(signal.SIGTERM)
    node.wait_for(lambda: bool(node.events("GotSigtermDuringUpdate")), 10, "GotSigtermDuringUpdate")
    time.sleep(0.5)
    assert node.running  # deferred
    release_and_reboot(node, kube_cluster, ns)
    node.wait_for(lambda: not node.running, 15, "the agent to stop after the update step")
    assert node.proc.returncode == 0
    node.wait_events("AddSigtermProtection")
    node.wait_events("RemoveSigtermProtection")


def test_booting_the_old_deployment_retries_the_update(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    boot_on(node, kube_cluster)
    new = update_to(node, kube_cluster, image=IMAGE_B)
    node.wait_reboot()
    with rpm_ostree.edit(node.rpm_state) as state:  # ostree-finalize-staged failed
        state["deployments"] = [d for d in state["deployments"] if not d["staged"]]
    node.reboot(boot_staged=False)
    node.wait_reboot(count=2)  # staged again and rebooted again, never declared Done
    assert node.state() == "Working"
    assert node.current_on_disk() != new
    node.reboot()
    node.wait_state("Done", new)
    booted = next(d for d in node.rpm()["deployments"] if d["booted"])
    assert booted["container-image-reference"].endswith(IMAGE_B)


def test_boot_validation_failure_degrades_and_a_restore_recovers(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    name = boot_on(node, kube_cluster)
    node.stop()
    conf = node.path("/etc/app/app.conf")
    original = conf.read_bytes()
    conf.write_text("edited while the agent was down\n")
    node.start()
    node.wait_state("Degraded")
    expected = f'unexpected on-disk state validating against {name}: content mismatch for file "/etc/app/app.conf"'
    assert node.reason() == expected
    found = node.wait_events("OnDiskStateValidationFailed")
    assert [e["message"] for e in found] == [expected]
    conf.write_bytes(original)
    node.wait_state("Done", name, timeout=10)


def test_metrics_and_probes(make_node: NodeFactory, kube_cluster: TestCluster) -> None:
    node = make_node(
        extra_args=(
            "--kubelet-healthz-enabled",
            "--kubelet-healthz-interval",
            "0.2",
            "--kubelet-healthz-endpoint",
            f"http://127.0.0.1:{free_port()}/healthz",
        )
    )
    boot_on(node, kube_cluster)
    assert node.probe("/healthz") == (200, "ok\n")
    assert node.probe("/readyz") == (200, "ok\n")
    node.wait_for(
        lambda: "mcd_kubelet_state 0.0" not in node.metrics(), 10, "kubelet failures counted"
    )
    text = node.metrics()
    assert 'mcd_host_os_and_version{os="RHCOS",version="9.6"} 1.0' in text
    assert 'mcd_state{reason="",state="Done"}' in text
    assert "mcd_pivot_errors_total 0.0" in text
    assert "mcd_reboots_failed_total 0.0" in text
    assert "mcd_config_drift 0.0" in text
    assert (
        f'mcd_update_state{{config="MachineConfig: {kube_cluster.name("rendered-worker-1")}",err=""}}'
        in text
    )
    assert (
        float(
            next(
                line for line in text.splitlines() if line.startswith("mcd_kubelet_state ")
            ).split()[1]
        )
        >= 1
    )


@needs_journald
def test_a_login_sets_ssh_accessed_once_and_counts_it(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    """Two logins this boot before the agent started: one annotation, two counted, and
    ``mcd status`` shows the login beside the state."""
    node = make_node(
        fake_systemd=True
    )  # logins come from a journal written here, not the container's
    write_logins(node.root / "run/log/journal", "logind:4", "logind:5", "fake:6")
    boot_on(node, kube_cluster)
    node.wait_for(lambda: node.annotations().get(Annotation.SSH) == "accessed", 10, "ssh=accessed")
    node.wait_for(lambda: "ssh_accesses_total 2.0" in node.metrics(), 10, "two logins counted")
    out = (
        CliRunner()
        .invoke(cli, ["status", "--node", node.name, "--kubeconfig", str(kube_cluster.kubeconfig)])
        .output
    )
    assert "Logins:          accessed" in out
    assert "Detected a new login session: New session 4 of user core." in node.log()
