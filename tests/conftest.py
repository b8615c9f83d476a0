"""Shared fixtures: a node root in a temp dir, and a private D-Bus with a fake systemd."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.fakes.apiserver import FakeApiServer
from tests.fakes.bus import SystemdBus
from tests.fakes.kubecluster import TestCluster
from tests.fakes.realcluster import RealClusterSession

# Machine load never fails a property test: no per-example deadline, no "too slow" health
# check (make unit runs the suite over several workers on a busy 2-core machine). A test's own
# @settings still sets its example count; it inherits these for what it leaves out.
settings.register_profile("mcd", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("mcd")


@pytest.fixture(scope="session", autouse=True)
def _real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """``MCD_TEST_KUBECONFIG``: install what the suites need in that cluster, remove it after."""
    real = os.environ.get("MCD_TEST_KUBECONFIG")
    if not real:
        yield
        return
    session = RealClusterSession(Path(real), tmp_path_factory.mktemp("realcluster"))
    try:
        session.install()
        yield
    finally:
        session.close()


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
    """A real cluster is one for the whole run: its cluster-scoped objects (MachineConfigs
    such as ``00-worker``, the controller's Lease) would be shared by xdist workers."""
    workers = getattr(config.option, "numprocesses", None)
    if os.environ.get("MCD_TEST_KUBECONFIG") and workers:
        raise pytest.UsageError(
            f"MCD_TEST_KUBECONFIG: a run against a real cluster is serial (-n 0), not -n {workers}"
        )
