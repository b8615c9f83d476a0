"""Upstream's MachineConfiguration CRD on a real kube-apiserver (MCD_TEST_KUBECONFIG): its
schema and CEL rules accept what mcd reads and refuse what mcd refuses, with the same words,
and the status the operator would publish is what the agent plans with."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcd.cluster.api import ApiError, Kube, load_client
from mcd.cluster.policies import MACHINECONFIGURATION, SOURCE, cluster_policies
from mcd.model.disruption.policy import parse_user_policies, restart
from mcd.model.errors import PolicyError
from tests.fakes.realcluster import install_crd
from tests.unit.test_policy_status import CRD, USER, status_object

KUBECONFIG = os.environ.get("MCD_TEST_KUBECONFIG", "")
pytestmark = [
    pytest.mark.cluster,  # no kube_cluster: marked by hand for make test-real
    pytest.mark.skipif(not KUBECONFIG, reason="needs a real API server"),
]
CRD_NAME = "machineconfigurations.operator.openshift.io"


@pytest.fixture(scope="module")
def kube() -> Iterator[Kube]:
    kube = Kube(load_client(KUBECONFIG))
    install_crd(kube, yaml.safe_load(CRD.read_text()), MACHINECONFIGURATION.rsplit("/", 1)[0])
    yield kube
    with contextlib.suppress(ApiError):
        kube.request("DELETE", MACHINECONFIGURATION)


def _create(kube: Kube, spec_policy: dict[str, Any]) -> dict[str, Any]:
    with contextlib.suppress(ApiError):
        kube.request("DELETE", MACHINECONFIGURATION)
    body = {
        "apiVersion": "operator.openshift.io/v1",
        "kind": "MachineConfiguration",
        "metadata": {"name": "cluster"},
        "spec": {"managementState": "Managed", "nodeDisruptionPolicy": spec_policy},
    }
    for _ in range(50):
        try:
            return kube.request("POST", MACHINECONFIGURATION.rsplit("/", 1)[0], body=body)
        except ApiError as e:
            if e.status != 409:  # still being deleted
                raise
            time.sleep(0.1)
    raise AssertionError("MachineConfiguration/cluster never went away")


def test_operator_status_is_read_once_observed(kube: Kube) -> None:
    created = _create(kube, USER)
    generation = created["metadata"]["generation"]
    obj = status_object(USER, generation=generation, observed=generation)
    created["status"] = obj["status"]
    kube.request("PUT", MACHINECONFIGURATION + "/status", body=created)
    policies = cluster_policies(kube, timeout=0)
    assert policies.source == SOURCE
    chrony = policies.closest_file_policy("/etc/chrony.conf")
    assert chrony is not None and chrony.actions == (restart("chronyd.service"),)
    assert chrony.origin == "user"


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        ([{"type": "Reboot"}, {"type": "Drain"}],
         "Reboot action can only be specified standalone"),
        ([{"type": "None"}, {"type": "Drain"}], "None action can only be specified standalone"),
        ([{"type": "Restart", "restart": {"serviceName": "a/b.service"}}],
         "Invalid ${NAME} in service name"),
        ([{"type": "Restart", "restart": {"serviceName": "chronyd"}}],
         "Invalid ${SERVICETYPE} in service name"),
    ],
)  # fmt: skip
def test_the_api_server_and_mcd_refuse_the_same_policies(
    kube: Kube, actions: list[dict[str, object]], message: str
) -> None:
    spec = {"files": [{"path": "/etc/x", "actions": actions}]}
    with pytest.raises(ApiError) as server:
        _create(kube, spec)
    assert server.value.status == 422 and message in str(server.value)
    with pytest.raises(PolicyError) as ours:
        parse_user_policies({"nodeDisruptionPolicy": spec})
    assert message in str(ours.value)


def test_a_policy_for_root_is_accepted_by_both(kube: Kube) -> None:
    spec = {"files": [{"path": "/", "actions": [{"type": "None"}]}]}
    _create(kube, spec)
    assert parse_user_policies({"nodeDisruptionPolicy": spec}).files[0].path == "/"


def test_crd_file_is_upstreams() -> None:
    assert "openshift/machine-config-operator@7ff337a" in Path(CRD).read_text().splitlines()[0]
