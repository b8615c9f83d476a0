"""A pool whose MachineConfigs set an ``osImageURL`` other than the ControllerConfig's base image
is marked as upstream's render controller marks it: the rendered config carries
``machineconfiguration.openshift.io/os-image-url-overridden: "true"``
(``generateRenderedMachineConfig``), an ``OSImageURLOverridden`` Event names the rendered
config with the base and the new image (``syncGeneratedMachineConfig``), and the controller's
``os_image_url_override{pool}`` is 1 (0 for a pool on the base image), so upstream's recording
rule ``sum(os_image_url_override)`` reads mcd's controller too. On the fake API server and a
real one."""

from __future__ import annotations

import contextlib
from typing import Any

from prometheus_client import generate_latest

from mcd.cluster.api import ApiError
from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.controllerconfig import CONTROLLER_CONFIG, CONTROLLERCONFIGS
from mcd.cluster.pools import PoolWriter
from mcd.controller.rendering import RenderStep
from mcd.controller.service import ControllerMetrics
from mcd.controller.sync import Snapshot, Syncer
from tests.e2e.controller_harness import create_pool, get_pool, pool, target
from tests.e2e.test_controller import _crds  # noqa: F401 - the MachineConfig and pool CRDs
from tests.e2e.test_service_ca import complete_controller_config, openshift  # noqa: F401
from tests.fakes.kubecluster import TestCluster

Obj = dict[str, Any]
ROLE = "machineconfiguration.openshift.io/role"
OVERRIDDEN = "machineconfiguration.openshift.io/os-image-url-overridden"
BASE = "quay.io/openshift-release-dev/rhcos@sha256:" + "1" * 64
CUSTOM = "registry.example.com/custom-os@sha256:" + "3" * 64


def _mc(name: str, role: str, spec: Obj) -> Obj:
    return {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
            "metadata": {"name": name, "labels": {ROLE: role}},
            "spec": {"config": {"ignition": {"version": "3.4.0"}}, **spec}}  # fmt: skip


def _pass(cluster: TestCluster, pools: list[str], metrics: ControllerMetrics) -> None:
    """One controller pass over ``pools``, its render reporting to ``metrics``."""
    kube = cluster.kube
    configs = {c["metadata"]["name"]: c for c in kube.request("GET", MACHINECONFIGS)["items"]}
    writer = PoolWriter(kube)
    step = RenderStep(writer, "0.1.0", observe_override=metrics.os_image_url_override)
    snap = Snapshot([get_pool(cluster, p) for p in pools], configs, [])
    Syncer(writer, "0.1.0", render_step=step).sync_all(snap)


def _gauge(metrics: ControllerMetrics, pool_name: str) -> str:
    text = generate_latest(metrics.registry).decode()
    found = [line.rsplit(" ", 1)[1] for line in text.splitlines()
             if line.startswith(f'os_image_url_override{{pool="{pool_name}"}} ')]  # fmt: skip
    return found[0] if found else "absent"


def test_an_overridden_os_image_is_annotated_evented_and_counted_as_upstream(
    kube_cluster: TestCluster,
    openshift: None,  # noqa: F811
) -> None:
    kube = kube_cluster.kube
    plain, custom = kube_cluster.name("osbase"), kube_cluster.name("oscustom")
    kube_cluster.create(MACHINECONFIGS, _mc(f"00-{plain}", plain, {}))
    kube_cluster.create(MACHINECONFIGS, _mc(f"00-{custom}", custom, {}))
    kube_cluster.create(MACHINECONFIGS, _mc(f"99-{custom}-os", custom, {"osImageURL": CUSTOM}))
    create_pool(kube_cluster, pool(plain, [plain], plain))
    create_pool(kube_cluster, pool(custom, [custom], custom))
    cc = complete_controller_config()
    cc["spec"]["baseOSContainerImage"] = BASE
    with contextlib.suppress(ApiError):
        kube.request("DELETE", CONTROLLER_CONFIG)
    kube_cluster.create(CONTROLLERCONFIGS, cc)
    metrics = ControllerMetrics()
    try:
        _pass(kube_cluster, [plain, custom], metrics)
    finally:
        with contextlib.suppress(ApiError):
            kube.request("DELETE", CONTROLLER_CONFIG)

    on_base = kube.request("GET", f"{MACHINECONFIGS}/{target(kube_cluster, plain)}")
    assert on_base["spec"]["osImageURL"] == BASE
    assert OVERRIDDEN not in (on_base["metadata"].get("annotations") or {})
    rendered = target(kube_cluster, custom)
    overridden = kube.request("GET", f"{MACHINECONFIGS}/{rendered}")
    assert overridden["spec"]["osImageURL"] == CUSTOM
    assert overridden["metadata"]["annotations"][OVERRIDDEN] == "true"
    assert (_gauge(metrics, plain), _gauge(metrics, custom)) == ("0.0", "1.0")

    events = kube.request("GET", "/api/v1/events")["items"]
    about = [e for e in events if e["reason"] == "OSImageURLOverridden"
             and e["involvedObject"].get("name") == rendered]  # fmt: skip
    assert [(e["involvedObject"]["kind"], e["type"], e["message"]) for e in about] == [
        ("MachineConfig", "Normal",
         f"OSImageURL was overridden via machineconfig in {rendered} (was: {BASE} is: {CUSTOM})")
    ]  # fmt: skip
    assert not [e for e in events if e["reason"] == "OSImageURLOverridden"
                and e["involvedObject"].get("name") == on_base["metadata"]["name"]]  # fmt: skip


def test_without_a_controller_config_any_os_image_is_an_override(
    kube_cluster: TestCluster,
) -> None:
    """Plain Kubernetes: no base image, so a pool whose configs set one overrides it (as
    upstream compares with an empty ``GetBaseImageContainer``); a pool that sets none does not."""
    name = kube_cluster.name("osplain")
    kube_cluster.create(MACHINECONFIGS, _mc(f"00-{name}", name, {}))
    create_pool(kube_cluster, pool(name, [name], name))
    metrics = ControllerMetrics()
    _pass(kube_cluster, [name], metrics)
    first = kube_cluster.kube.request("GET", f"{MACHINECONFIGS}/{target(kube_cluster, name)}")
    assert OVERRIDDEN not in (first["metadata"].get("annotations") or {})
    assert _gauge(metrics, name) == "0.0"

    kube_cluster.create(MACHINECONFIGS, _mc(f"99-{name}-os", name, {"osImageURL": CUSTOM}))
    _pass(kube_cluster, [name], metrics)
    second = kube_cluster.kube.request("GET", f"{MACHINECONFIGS}/{target(kube_cluster, name)}")
    assert second["metadata"]["annotations"][OVERRIDDEN] == "true"
    assert _gauge(metrics, name) == "1.0"
