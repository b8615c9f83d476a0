"""Shared fixtures: a node root in a temp dir, and a private D-Bus with a fake systemd."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

from tests.fakes.apiserver import FakeApiServer
from tests.fakes.bus import SystemdBus
from tests.fakes.kubecluster import TestCluster
from tests.fakes.realcluster import (
    REAL_CLUSTERS_ENV,
    RealClusterSession,
    ThrowAwayCluster,
    ensure_binaries,
    inotify_instances,
    kit_dir,
    kit_missing,
)

# Machine load never fails a property test: no per-example deadline, no "too slow" health
# check (make unit runs the suite over several workers on a busy 2-core machine). A test's own
# @settings still sets its example count; it inherits these for what it leaves out.
settings.register_profile("mcd", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("mcd")
# Under a mutation run (mutmut sets MUTANT_UNDER_TEST) a property test that fails has killed
# its mutant: the shrinking that would find the smallest failing example only costs time.
settings.register_profile(
    "mutation",
    parent=settings.get_profile("mcd"),
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
)
_CLUSTER = pytest.StashKey[ThrowAwayCluster]()


@pytest.fixture(scope="session", autouse=True)
def _real_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """``MCD_TEST_KUBECONFIG``: install what the suites need in that cluster, remove it after
    (a throw-away cluster of this process is left as it is: it is stopped next)."""
    real = os.environ.get("MCD_TEST_KUBECONFIG")
    if not real:
        yield
        return
    own = request.config.stash.get(_CLUSTER, None)
    session = RealClusterSession(Path(real), tmp_path_factory.mktemp("realcluster"))
    try:
        session.install()
        if own is not None and session.kubelet is not None:
            own.guard(session.kubelet.pid, "fake-kubelet")
        yield
    finally:
        session.close(uninstall=own is None)


@pytest.fixture(autouse=True)
def _no_machine_bus(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never reach the machine's own system bus or journal from a test by accident."""
    monkeypatch.delenv("DBUS_SYSTEM_BUS_ADDRESS", raising=False)
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)


@pytest.fixture
def node_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "etc/systemd/system").mkdir(parents=True)
    (root / "etc/passwd").write_text(
        "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000:CoreOS Admin:/home/core:/bin/bash\n"
        "etcd:x:1001:1001::/var/lib/etcd:/sbin/nologin\n"
    )
    (root / "etc/group").write_text("root:x:0:\ncore:x:1000:\netcd:x:1001:\nwheel:x:10:core\n")
    shadow = root / "etc/shadow"
    shadow.write_text("root:*:19000:0:99999:7:::\ncore:*:19000:0:99999:7:::\netcd:!!:19000::::::\n")
    shadow.chmod(0o640)
    (root / "home/core").mkdir(parents=True)
    return root


@pytest.fixture
def systemd_bus(tmp_path: Path, node_root: Path) -> Iterator[SystemdBus]:
    bus = SystemdBus(tmp_path / "bus", node_root)
    bus.start()
    try:
        yield bus
    finally:
        bus.stop()


@pytest.fixture
def kube_cluster(tmp_path: Path) -> Iterator[TestCluster]:
    cluster = TestCluster(tmp_path)
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def fake_api(kube_cluster: TestCluster) -> FakeApiServer:
    """Fault injection needs the fake: skipped against a real cluster."""
    if kube_cluster.fake is None:
        pytest.skip("fault injection needs the fake API server")
    return kube_cluster.fake


def pytest_configure(config: pytest.Config) -> None:
    settings.load_profile("mutation" if os.environ.get("MUTANT_UNDER_TEST") else "mcd")
    config.addinivalue_line(
        "markers", "cluster: talks to the API server (the fake, or a real one); added to every "
        "test that uses kube_cluster: make test-real selects these (-m cluster)",
    )  # fmt: skip
    config.addinivalue_line(
        "markers", "nodes: needs real nodes (../shared/realnode, tests/nodes): make test-nodes "
        "selects these; skipped with the kit's reason where it cannot run",
    )  # fmt: skip
    config.addinivalue_line(
        "markers", "fake_only(reason): needs the fake API server (fault injection, its request "
        "log); skipped on a real cluster with that reason",
    )  # fmt: skip
    config.addinivalue_line(
        "markers", "fake_too(reason): a cluster test with assertions only the fake can make "
        "(its request log): kept in make test's fake stage, which otherwise leaves the "
        "cluster tests to the real-cluster stage",
    )  # fmt: skip
    workers = getattr(config.option, "numprocesses", None)
    if os.environ.get(REAL_CLUSTERS_ENV):
        _start_own_cluster(config, workers)
    elif os.environ.get("MCD_TEST_KUBECONFIG") and workers:
        # one cluster for the whole run: its cluster-scoped objects (MachineConfigs such as
        # 00-worker, the controller's Lease) would be shared by the xdist workers
        raise pytest.UsageError(
            f"MCD_TEST_KUBECONFIG: a run against one real cluster is serial (-n 0), not "
            f"-n {workers}; {REAL_CLUSTERS_ENV}=1 gives each worker a cluster of its own"
        )


def _start_own_cluster(config: pytest.Config, workers: object) -> None:
    """``MCD_TEST_REAL_CLUSTERS=1``: each test process (each xdist worker, or the only one)
    starts a throw-away cluster of its own from ``../shared/realcluster`` and points
    ``MCD_TEST_KUBECONFIG`` (and the kubelet stand-in) at it; it is stopped by its pids at the
    end. The xdist controller runs no test: it only unpacks the binaries once, before the
    workers start."""
    if os.environ.get("MCD_TEST_KUBECONFIG"):
        raise pytest.UsageError(
            f"{REAL_CLUSTERS_ENV} starts its own clusters: unset MCD_TEST_KUBECONFIG"
        )
    why = kit_missing()
    if why:
        raise pytest.UsageError(f"{REAL_CLUSTERS_ENV}: {why}")
    worker = getattr(config, "workerinput", None)
    if worker is None:
        ensure_binaries()
        if workers:
            return
    name = worker["workerid"] if worker else "main"
    # start.sh picks free ports, then binds them: one taken in between is worth one more try
    for attempt in (1, 2):
        kas_dir = Path(tempfile.mkdtemp(prefix=f"mcd-kas-{name}-"))
        try:
            cluster = ThrowAwayCluster(kas_dir).start()
            break
        except RuntimeError:
            if attempt == 2:
                raise
    config.stash[_CLUSTER] = cluster
    os.environ["MCD_TEST_KUBECONFIG"] = str(cluster.kubeconfig)
    os.environ.setdefault("MCD_TEST_FAKE_KUBELET", str(kit_dir() / "fake-kubelet.py"))


def pytest_report_header(config: pytest.Config) -> str | None:
    if not os.environ.get(REAL_CLUSTERS_ENV):
        return None
    used, limit = inotify_instances()
    return (
        f"real clusters: one per worker from {kit_dir()}; inotify instances in use {used} of "
        f"{limit} (a cluster takes 5, a systemd container about 10: concurrent runs share them)"
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    cluster = config.stash.get(_CLUSTER, None)
    if cluster is not None:
        del config.stash[_CLUSTER]
        os.environ.pop("MCD_TEST_KUBECONFIG", None)
        cluster.stop()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests that talk to an API server (``-m cluster`` selects them), and on a real
    cluster skip those only the fake can do, each with its own reason."""
    real = bool(os.environ.get("MCD_TEST_KUBECONFIG"))
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "kube_cluster" in fixtures:
            item.add_marker(pytest.mark.cluster)
        if "fake_api" in fixtures and item.get_closest_marker("fake_only") is None:
            item.add_marker(pytest.mark.fake_only("fault injection needs the fake API server"))
        fake_only = item.get_closest_marker("fake_only")
        if real and fake_only is not None:
            item.add_marker(pytest.mark.skip(reason=f"fake API server only: {fake_only.args[0]}"))
