"""``mcd plan --pool`` names the rendered config the controller's render names: both read the
ControllerConfig's base OS and extensions images (upstream's ``GetBaseImageContainer``) through
the one :func:`mcd.cluster.controllerconfig.base_images`, used where no MachineConfig sets
``osImageURL``; without a ControllerConfig both render without them, as before. On the fake
API server and a real one (upstream's ControllerConfig CRD applied by the ``openshift``
fixture)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from typing import Any

from mcd.cluster.api import ApiError
from mcd.cluster.configs import MACHINECONFIGS
from mcd.cluster.controllerconfig import CONTROLLER_CONFIG, CONTROLLERCONFIGS
from mcd.cluster.pools import PoolWriter
from mcd.controller.sync import Snapshot, Syncer
from mcd.model.pool.render import render
from tests.e2e.controller_harness import create_pool, get_pool, pool, target
from tests.e2e.harness import REPO
from tests.e2e.test_controller import _crds  # noqa: F401 - the MachineConfig and pool CRDs
from tests.e2e.test_service_ca import complete_controller_config, openshift  # noqa: F401
from tests.fakes.kubecluster import TestCluster

Obj = dict[str, Any]
ROLE = "machineconfiguration.openshift.io/role"
OS_IMAGE = "quay.io/openshift-release-dev/rhcos@sha256:" + "1" * 64
EXTENSIONS = "quay.io/openshift-release-dev/rhcos-ext@sha256:" + "2" * 64


def _controller_pass(cluster: TestCluster, name: str) -> str:
    """One pass of the controller (a fresh one: nothing cached); the pool's target."""
    kube = cluster.kube
    configs = {c["metadata"]["name"]: c for c in kube.request("GET", MACHINECONFIGS)["items"]}
    Syncer(PoolWriter(kube), "0.1.0").sync_all(Snapshot([get_pool(cluster, name)], configs, []))
    return target(cluster, name)


def _preview(cluster: TestCluster, name: str) -> Obj:
    plan = subprocess.run(
        [sys.executable, "-m", "mcd", "plan", "--pool", name, "--json",
         "--kubeconfig", str(cluster.kubeconfig)],
        check=False, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert plan.returncode == 0, plan.stderr
    return dict(json.loads(plan.stdout))


def test_the_preview_names_the_config_the_controller_renders_with_and_without_base_images(
    kube_cluster: TestCluster,
    openshift: None,  # noqa: F811
) -> None:
    name = kube_cluster.name("prev")
    mc = {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
          "metadata": {"name": f"00-{name}", "labels": {ROLE: name}},
          "spec": {"config": {"ignition": {"version": "3.4.0"}}}}  # fmt: skip
    kube_cluster.create(MACHINECONFIGS, mc)
    create_pool(kube_cluster, pool(name, [name], name))
    had = _exists(kube_cluster)
    assert not had, "a ControllerConfig from before: this test needs the cluster without one"
    try:
        plain = _controller_pass(kube_cluster, name)  # no ControllerConfig: no base images
        assert plain == render(name, [mc]).name
        preview = _preview(kube_cluster, name)
        assert (preview["target"], preview["targetExists"]) == (plain, True)

        cc = complete_controller_config()
        cc["spec"].update(baseOSContainerImage=OS_IMAGE, baseOSExtensionsContainerImage=EXTENSIONS)
        kube_cluster.create(CONTROLLERCONFIGS, cc)
        based = _controller_pass(kube_cluster, name)
        assert based != plain, "the base images are part of the rendered spec, and its name"
        spec = kube_cluster.kube.request("GET", f"{MACHINECONFIGS}/{based}")["spec"]
        assert (spec["osImageURL"], spec["baseOSExtensionsContainerImage"]) == (
            OS_IMAGE,
            EXTENSIONS,
        )
        preview = _preview(kube_cluster, name)
        assert (preview["target"], preview["targetExists"]) == (based, True)
        assert preview["renderError"] == ""
    finally:
        with contextlib.suppress(ApiError):
            kube_cluster.kube.request("DELETE", CONTROLLER_CONFIG)


def _exists(cluster: TestCluster) -> bool:
    try:
        cluster.kube.request("GET", CONTROLLER_CONFIG)
        return True
    except ApiError as e:
        if e.status != 404:
            raise
        return False
