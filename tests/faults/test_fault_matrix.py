"""The fault matrix: each fault against each update kind (rebootless, reboot, OS pivot), with
``mcd start`` running for real against the fake API server, the D-Bus test bus and the
rpm-ostree stand-in.

Every cell asserts the node ends Done on the target config, or on the old config with an
exact reason (and, once the fault is gone, reaches the target); that no file is torn (the
disk matches the final config exactly, no temporary file is left); that no
desiredConfig change is lost (where a cell changes desiredConfig during the fault, the node
ends on the last one); and the number of reboots the node went through (a reboot owed is
never skipped, none is done twice). The table is printed at the end of the run.

By default the reduced matrix runs (one update kind per fault, a few SIGKILL points);
``MCD_FAULTS=full`` (``make faults``) runs every cell.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mcd.cluster.api import USER_AGENT
from mcd.host.osupdate.rpmostree import RETRY_ENV
from mcd.model.vocabulary import Annotation
from tests.e2e.configs import worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.harness import AgentNode, create_config
from tests.fakes import rpm_ostree
from tests.fakes.apiserver import FakeApiServer
from tests.fakes.kubecluster import TestCluster
from tests.faults.drive import (
    KINDS,
    Obj,
    Supervisor,
    assert_exactly_on,
    base_doc,
    new_config,
    policy,
)
from tests.faults.results import RESULTS

FULL = os.environ.get("MCD_FAULTS") == "full"
AGENT = USER_AGENT  # faults aimed at the agent's requests, not the test's own

# SIGKILL points per update kind (see mcd/agent/update/failpoints.py and transaction.py)
KILL_POINTS = {
    "rebootless": ["begin", "files:1", "files", "passwd", "actions", "commit"],
    "reboot": ["begin", "files:1", "files", "actions", "awaiting-reboot", "reboot"],
    "os": ["files", "os", "actions", "awaiting-reboot", "reboot"],
}
REDUCED_KILLS = {("rebootless", "files:1"), ("reboot", "reboot"), ("os", "os")}
REBOOTS = {"rebootless": 0, "reboot": 1, "os": 1}
"""Reboots one update of each kind costs, whatever the fault."""


def assert_reboots(c: Cell, expected: int) -> None:
    assert c.sup.reboots == expected, (
        f"{c.sup.reboots} reboot(s), expected {expected}; states seen: {c.sup.states}"
    )


@dataclass
class Cell:
    node: AgentNode
    cluster: TestCluster
    fake: FakeApiServer | None  # None on a real cluster: the host faults only
    kind: str
    old: str
    old_doc: Obj
    sup: Supervisor

    @property
    def api(self) -> FakeApiServer:
        """The fake API server, for the cells that inject faults into it (``fake_only``)."""
        assert self.fake is not None, "an API fault needs the fake API server"
        return self.fake

    def update(self, base: str = "rendered-worker-2", variant: int = 1) -> tuple[str, Obj]:
        return new_config(self.cluster, self.kind, base, variant)


def node_patch(node: str, marker: bytes) -> Callable[[str, str, bytes], bool]:
    """Matches the agent's PATCH of its Node carrying ``marker`` (e.g. ``b'"Working"'``)."""
    return lambda m, p, body: m == "PATCH" and p == f"/api/v1/nodes/{node}" and marker in body


@pytest.fixture
def cell_for(make_node: NodeFactory, kube_cluster: TestCluster) -> Iterator[Callable[[str], Cell]]:
    def make(kind: str) -> Cell:
        node = make_node(fake_systemd=True)  # faults are injected into the D-Bus test service
        node.base_env[RETRY_ENV] = "0.2"  # upstream's 10 s first delay, scaled down
        name = kube_cluster.name("rendered-worker-1")
        doc = base_doc(name)
        create_config(kube_cluster, doc)
        crio = node.path("/usr/lib/systemd/system/crio.service")  # a vendor unit, as on RHCOS
        crio.parent.mkdir(parents=True, exist_ok=True)
        crio.write_text("[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n")
        node.provision(doc)
        kube_cluster.annotate(node.name, {Annotation.CURRENT_CONFIG: name,
                                          Annotation.DESIRED_CONFIG: name,
                                          Annotation.STATE: "Done"})  # fmt: skip
        if kind != "rebootless":
            ns = kube_cluster.namespace()
            kube_cluster.pod(ns, "web-0", node.name)
        node.start()
        node.wait_ready()
        node.wait_state("Done", name)
        return Cell(node, kube_cluster, kube_cluster.fake, kind, name, doc, Supervisor(node))

    yield make


def record(fault: str, kind: str, outcome: str, started: float) -> None:
    RESULTS.append((fault, kind, outcome, time.monotonic() - started))


def cells(pairs: list[tuple[str, str]], reduced: set[tuple[str, str]]) -> list[object]:
    return [pytest.param(a, b, id=f"{a}-{b}") for a, b in pairs if FULL or (a, b) in reduced]


def kinds(every: tuple[str, ...], reduced: str) -> list[object]:
    """The update kinds a fault is tried against: ``every`` in the full matrix."""
    return [pytest.param(k, id=k) for k in every if FULL or k == reduced]


# -- agent SIGKILL at each transaction step -------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "point"),
    cells([(k, p) for k in KINDS for p in KILL_POINTS[k]], REDUCED_KILLS),
)
def test_sigkill_at_step(kind: str, point: str, cell_for: Callable[[str], Cell]) -> None:
    started = time.monotonic()
    c = cell_for(kind)
    c.node.stop()
    c.node.start(MCD_CRASH_AT=point)  # this agent dies at the point; systemd restarts it clean
    c.node.wait_ready()
    new, doc = c.update()
    c.node.set_desired(new)
    c.node.wait_for(lambda: not c.node.running, 30, f"SIGKILL at {point}")
    assert c.node.proc is not None and c.node.proc.returncode == -9
    c.sup.done_on(new)
    assert c.sup.restarts >= 1
    assert_exactly_on(c.node, doc)
    assert_reboots(c, REBOOTS[kind])
    record(f"SIGKILL at {point}", kind, "Done on target", started)


# -- API server faults ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", kinds(KINDS, "reboot"))
@pytest.mark.fake_only("restarts the API server mid-update (history compacted)")
def test_api_server_restart_mid_update(kind: str, cell_for: Callable[[str], Cell]) -> None:
    """The API server goes away the moment the agent reports Working and comes back with a
    compacted history (every watch resumes into 410 Gone)."""
    started = time.monotonic()
    c = cell_for(kind)
    new, doc = c.update()
    c.api.when(node_patch(c.node.name, b'"Working"'), lambda: c.api.restart(compact=True))
    c.node.set_desired(new)
    c.sup.done_on(new)
    assert_exactly_on(c.node, doc)
    assert_reboots(c, REBOOTS[kind])
    record("API server restart", kind, "Done on target", started)


def _change_during(c: Cell, fault: Callable[[], None], label: str) -> None:
    """``fault`` hits the agent's watch when it reports Working on v2; while the watch is down
    the controller moves desiredConfig on to v3: v3 must not be lost."""
    started = time.monotonic()
    v2, _ = c.update("rendered-worker-2")
    v3, doc3 = c.update("rendered-worker-3", variant=2)

    def strike() -> None:
        fault()
        c.node.set_desired(v3)

    c.api.when(node_patch(c.node.name, b'"Working"'), strike)
    c.node.set_desired(v2)
    c.sup.done_on(v3)
    assert_exactly_on(c.node, doc3)
    # v3 arrives while v2 is planned or draining: the node retargets; only v3 reboots it
    assert_reboots(c, REBOOTS[c.kind])
    record(label, c.kind, "Done on last desired", started)


@pytest.mark.parametrize("kind", kinds(KINDS, "rebootless"))
@pytest.mark.fake_only("drops the agent's watch while desiredConfig changes")
def test_watch_drop_with_desired_change(kind: str, cell_for: Callable[[str], Cell]) -> None:
    c = cell_for(kind)
    _change_during(c, c.api.drop_watches, "watch drop + desired change")


@pytest.mark.parametrize("kind", kinds(KINDS, "os"))
@pytest.mark.fake_only("answers the agent's watch with 410 Gone while desiredConfig changes")
def test_410_gone_with_desired_change(kind: str, cell_for: Callable[[str], Cell]) -> None:
    c = cell_for(kind)

    def gone() -> None:
        watch = lambda m, p: m == "GET" and p.endswith("/nodes")  # noqa: E731
        c.api.fail_next(2, 410, watch, AGENT)
        c.api.drop_watches()

    _change_during(c, gone, "410 Gone + desired change")


@pytest.mark.parametrize("kind", kinds(KINDS, "reboot"))
@pytest.mark.fake_only("answers 10 of the agent's Node patches with 409 Conflict")
def test_409_storm(kind: str, cell_for: Callable[[str], Cell]) -> None:
    """Ten Conflicts in a row on the agent's Node writes."""
    started = time.monotonic()
    c = cell_for(kind)
    new, doc = c.update()
    node_path = f"/api/v1/nodes/{c.node.name}"
    c.api.fail_next(10, 409, lambda m, p: m == "PATCH" and p == node_path, AGENT)
    c.node.set_desired(new)
    c.sup.done_on(new)
    assert_exactly_on(c.node, doc)
    assert_reboots(c, REBOOTS[kind])
    record("409 storm (10 conflicts)", kind, "Done on target", started)


@pytest.mark.parametrize("kind", kinds(("reboot", "os"), "reboot"))
@pytest.mark.fake_only("answers 3 of the agent's evictions with 500")
def test_500s_on_eviction(kind: str, cell_for: Callable[[str], Cell]) -> None:
    started = time.monotonic()
    c = cell_for(kind)
    new, doc = c.update()
    c.api.fail_next(3, 500, lambda m, p: m == "POST" and p.endswith("/eviction"), AGENT)
    c.node.set_desired(new)
    c.sup.done_on(new)
    assert not c.cluster.pods_on(c.node.name) or "web-0" not in c.cluster.pods_on(c.node.name)
    assert_exactly_on(c.node, doc)
    assert_reboots(c, REBOOTS[kind])
    record("500s on eviction (3)", kind, "Done on target", started)


# -- host faults ----------------------------------------------------------------------------


def _old_then_target(c: Cell, reason: str, clear: Callable[[], None], label: str) -> None:
    """The update fails with ``reason``: Degraded, still exactly on the old config. Once the
    fault is cleared the agent's retry reaches the target."""
    started = time.monotonic()
    new, doc = c.update()
    c.node.set_desired(new)
    c.sup.degraded_with(reason)
    a = c.node.annotations()
    assert a[Annotation.CURRENT_CONFIG] == c.old and a[Annotation.DESIRED_CONFIG] == new
    assert c.node.current_on_disk() == c.old
    assert_exactly_on(c.node, c.old_doc)
    assert_reboots(c, 0)
    clear()
    c.sup.done_on(new)
    assert_exactly_on(c.node, doc)
    assert_reboots(c, REBOOTS[c.kind])
    record(label, c.kind, "old + exact reason, then target", started)


@pytest.mark.parametrize("kind", kinds(("os",), "os"))
def test_rpm_ostree_rebase_fails_once(kind: str, cell_for: Callable[[str], Cell]) -> None:
    """A pull that fails once is retried in place (upstream's rebase retry): no Degraded. The
    pull is the stage before the drain (``--download-only``); the deploy follows once."""
    started = time.monotonic()
    c = cell_for(kind)
    with rpm_ostree.edit(c.node.rpm_state) as state:
        state["fail"]["rebase"] = "error: Writing OSTree commit: No space left on device"
        state["fail_times"]["rebase"] = 1
    new, doc = c.update()
    c.node.set_desired(new)
    c.sup.done_on(new)
    assert not any(s[0] == "Degraded" for s in c.sup.states), c.sup.states
    rebases = [call["argv"] for call in c.node.rpm()["calls"] if call["argv"][:1] == ["rebase"]]
    assert ["--download-only" in r for r in rebases] == [True, True, False], rebases
    assert_exactly_on(c.node, doc)
    assert_reboots(c, REBOOTS[kind])
    record("rpm-ostree rebase fails once", kind, "Done on target (rebase retried)", started)


@pytest.mark.parametrize("kind", kinds(("os",), "os"))
def test_rpm_ostree_rebase_keeps_failing(kind: str, cell_for: Callable[[str], Cell]) -> None:
    c = cell_for(kind)
    message = "error: Pulling image: manifest unknown"
    with rpm_ostree.edit(c.node.rpm_state) as state:
        state["fail"]["rebase"] = message
        state["fail_times"]["rebase"] = 1_000_000

    def clear() -> None:
        with rpm_ostree.edit(c.node.rpm_state) as fixed:
            fixed["fail"] = {}

    _old_then_target(c, REASONS["rpm-ostree"], clear, "rpm-ostree keeps failing")


@pytest.mark.parametrize("kind", kinds(("rebootless",), "rebootless"))
@pytest.mark.parametrize("how", ["job", "call"])
def test_dbus_reload_fails(kind: str, how: str, cell_for: Callable[[str], Cell]) -> None:
    """crio's reload fails: its job ends ``failed``, or systemd refuses the D-Bus call."""
    c = cell_for(kind)
    if how == "job":
        c.node.bus.fail_job("crio.service")
    else:
        c.node.bus.fail_method("ReloadUnit")
    label = "D-Bus reload job fails" if how == "job" else "D-Bus ReloadUnit call fails"
    _old_then_target(c, REASONS[f"crio-{how}"], c.node.bus.clear_faults, label)


@pytest.mark.parametrize("kind", kinds(("reboot", "os"), "reboot"))
def test_reboot_command_fails(kind: str, cell_for: Callable[[str], Cell]) -> None:
    c = cell_for(kind)
    c.node.bus.fail_method("StartTransientUnit")
    _old_then_target(c, REASONS["reboot"], c.node.bus.clear_faults, "reboot command fails")


@contextlib.contextmanager
def small_tmpfs(path: Path) -> Iterator[bool]:
    """A 64 KiB tmpfs over ``path`` (its files copied in); False when mounting is not allowed."""
    saved = path.parent / f".{path.name}.saved"
    shutil.copytree(path, saved, symlinks=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "mcd-full", str(path)],
                             capture_output=True, check=False).returncode == 0  # fmt: skip
    if mounted:
        shutil.copytree(saved, path, symlinks=True, dirs_exist_ok=True)
    shutil.rmtree(saved)
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(path)], check=False)


@pytest.mark.parametrize("kind", kinds(("rebootless", "reboot"), "rebootless"))
def test_disk_full_while_writing(kind: str, cell_for: Callable[[str], Cell]) -> None:
    """The file system fills up mid-update: a real 64 KiB tmpfs under the node's
    ``/var/lib/kubelet`` (the pull secret's directory) and a 200 KB pull secret, or an
    injected ENOSPC where this machine does not allow mounting."""
    started = time.monotonic()
    c = cell_for(kind)
    big = '{"auths":{"big.example.com":{"auth":"%s"}}}' % ("A" * 200_000)
    new = c.cluster.name("rendered-worker-2")
    app = "threads=8\n" if kind == "reboot" else "threads=4\n"
    doc = worker(new, secret=big, app=app, extra_files=policy())
    create_config(c.cluster, doc)
    with small_tmpfs(c.node.path("/var/lib/kubelet")) as mounted:
        if not mounted:
            c.node.stop()
            c.node.start(MCD_ENOSPC_AT="files:1")
            c.node.wait_ready()
        c.node.set_desired(new)
        c.sup.degraded_with(REASONS["enospc-tmpfs" if mounted else "enospc-injected"])
        assert c.node.annotations()[Annotation.CURRENT_CONFIG] == c.old
        assert c.node.current_on_disk() == c.old
        assert_exactly_on(c.node, c.old_doc)
        assert_reboots(c, 0)
    # the space is back (tmpfs gone; or the agent restarted without the injection)
    if not mounted:
        c.node.stop()
        c.node.start()
    c.sup.done_on(new)
    assert_exactly_on(c.node, doc)
    assert_reboots(c, REBOOTS[kind])
    how = "tmpfs" if mounted else "injected"
    record(f"disk full ({how})", kind, "old + exact reason, then target", started)


REASONS = {
    "rpm-ostree": (
        "failed to update OS to quay.io/openshift/os@sha256:bbbb after retries: error running "
        "rpm-ostree rebase --experimental --download-only ostree-unverified-registry:"
        "quay.io/openshift/os@sha256:bbbb: error: Pulling image: manifest unknown: exit status 1"
    ),
    "crio-call": (
        "could not apply update: reloading crio.service configuration failed. Error: "
        "ReloadUnit: org.freedesktop.DBus.Error.Failed: injected failure of ReloadUnit"
    ),
    "crio-job": (
        "could not apply update: reloading crio.service configuration failed. Error: "
        "reloading crio.service failed: job result 'failed'"
    ),
    "reboot": (
        "reboot command failed, something is seriously wrong: StartTransientUnit: "
        "org.freedesktop.DBus.Error.Failed: injected failure of StartTransientUnit"
    ),
    "enospc-tmpfs": 'failed to write file "/var/lib/kubelet/config.json": No space left on device',
    "enospc-injected": 'failed to write file "/etc/app/app.conf": No space left on device',
}
