"""The cluster's node disruption policies as the operator publishes them (MachineConfiguration
``cluster``, ``status.nodeDisruptionPolicyStatus.clusterPolicies``): a bad entry is refused
naming its exact field, each entry says whether it is upstream's default or the admin's, and
the status counts only once the operator observed the current generation."""

from __future__ import annotations

from typing import Any

import pytest

from mcd.model.disruption.policy import (
    DAEMON_RELOAD,
    DEFAULT_POLICIES,
    NONE,
    REBOOT,
    SPECIAL,
    reload,
    restart,
)
from mcd.model.disruption.policy_status import parse_status_policies, status_ready
from mcd.model.errors import ConfigError, PolicyError

CP = "status.nodeDisruptionPolicyStatus.clusterPolicies"


def status(**cluster_policies: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "cluster"},
        "status": {"nodeDisruptionPolicyStatus": {"clusterPolicies": cluster_policies}},
    }


def refusal(doc: object) -> PolicyError:
    with pytest.raises(PolicyError) as e:
        parse_status_policies(doc, "MachineConfiguration/cluster status")
    return e.value


@pytest.mark.parametrize(
    ("doc", "field", "detail"),
    [
        (["a list"], "", "expected an object, got a list"),
        ({"status": "ready"}, "status", "expected an object, got a string"),
        ({"status": {"nodeDisruptionPolicyStatus": []}}, "status.nodeDisruptionPolicyStatus",
         "expected an object, got a list"),
        ({"status": {"nodeDisruptionPolicyStatus": {"clusterPolicies": 1}}}, CP,
         "expected an object, got an integer"),
        (status(files={}), f"{CP}.files", "expected a list, got an object"),
        (status(files=["/etc/x"]), f"{CP}.files[0]", "expected an object, got a string"),
        (status(files=[{"path": 7}]), f"{CP}.files[0].path", "expected a string, got an integer"),
        (status(files=[{"path": "/etc/x", "actions": {}}]), f"{CP}.files[0].actions",
         "expected a list, got an object"),
        (status(files=[{"path": "/a"}, {"path": "/b", "actions": [None]}]),
         f"{CP}.files[1].actions[0]", "expected an object, got null"),
        (status(files=[{"path": "/etc/x", "actions": [{"type": 1}]}]),
         f"{CP}.files[0].actions[0].type", "expected a string, got an integer"),
        (status(files=[{"path": "/etc/x", "actions": [{"type": "Explode"}]}]),
         f"{CP}.files[0].actions[0].type", 'unknown action type "Explode"'),
        (status(files=[{"path": "/etc/x", "actions": [{"type": ""}]}]),
         f"{CP}.files[0].actions[0].type", 'unknown action type ""'),
        (status(units=[{"name": "a.service"}, "b.service"]), f"{CP}.units[1]",
         "expected an object, got a string"),
        (status(units=[{"name": ["a.service"]}]), f"{CP}.units[0].name",
         "expected a string, got a list"),
        (status(units=[{"name": "a.service", "actions": [{"type": "Reload"}]}]),
         f"{CP}.units[0].actions[0]", "Reload requires reload.serviceName"),
        (status(units=[{"name": "a.service", "actions": [{"type": "Restart", "restart": []}]}]),
         f"{CP}.units[0].actions[0].restart", "expected an object, got a list"),
        (status(units=[{"name": "a", "actions": [{"type": "Restart",
                                                  "restart": {"serviceName": 5}}]}]),
         f"{CP}.units[0].actions[0].restart.serviceName", "expected a string, got an integer"),
        (status(sshkey=[]), f"{CP}.sshkey", "expected an object, got a list"),
        (status(sshkey={"actions": [{"type": "Reboot"}, {"type": "Explode"}]}),
         f"{CP}.sshkey.actions[1].type", 'unknown action type "Explode"'),
    ],
)  # fmt: skip
def test_a_bad_status_is_refused_naming_the_field(doc: object, field: str, detail: str) -> None:
    error = refusal(doc)
    assert (error.field, error.detail) == (field, detail)
    assert str(error) == (f"{field}: {detail}" if field else detail)


def test_each_entry_is_the_default_only_when_it_is_exactly_upstreams() -> None:
    """The status carries no origin: upstream's exact entry is ``default``; the same path or
    unit with other actions (the admin's override) is ``user``."""
    iri = {"type": "Restart", "restart": {"serviceName": "iri-registry.service"}}
    policies = parse_status_policies(
        status(
            files=[
                {"path": "/etc/containers/registries.conf", "actions": [{"type": "Special"}]},
                {"path": "/etc/containers/policy.json", "actions": [{"type": "Reboot"}]},
                {"path": "/etc/chrony.conf",
                 "actions": [{"type": "Restart", "restart": {"serviceName": "chronyd.service"}}]},
            ],
            units=[
                {"name": "iri-registry.service", "actions": [{"type": "DaemonReload"}, iri]},
                {"name": "iri-registry.service", "actions": [iri]},
                {"name": "crio.service",
                 "actions": [{"type": "Reload", "reload": {"serviceName": "crio.service"}}]},
            ],
            sshkey={"actions": [{"type": "Reboot"}]},
        ),
        "MachineConfiguration/cluster status",
    )  # fmt: skip
    assert [(p.path, p.actions, p.origin) for p in policies.files] == [
        ("/etc/containers/registries.conf", (SPECIAL,), "default"),
        ("/etc/containers/policy.json", (REBOOT,), "user"),
        ("/etc/chrony.conf", (restart("chronyd.service"),), "user"),
    ]
    assert [(u.name, u.actions, u.origin) for u in policies.units] == [
        ("iri-registry.service", (DAEMON_RELOAD, restart("iri-registry.service")), "default"),
        ("iri-registry.service", (restart("iri-registry.service"),), "user"),
        ("crio.service", (reload("crio.service"),), "user"),
    ]
    # upstream's default for SSH keys is None; Reboot is the admin's choice
    assert DEFAULT_POLICIES.sshkey == (NONE,)
    assert (policies.sshkey, policies.sshkey_origin) == ((REBOOT,), "user")
    assert policies.source == "MachineConfiguration/cluster status"


def test_the_default_sshkey_policy_is_called_default() -> None:
    policies = parse_status_policies(status(sshkey={"actions": [{"type": "None"}]}), "s")
    assert (policies.sshkey, policies.sshkey_origin) == ((NONE,), "default")


def test_an_entry_without_a_path_or_name_keeps_an_empty_one() -> None:
    policies = parse_status_policies(
        status(files=[{"actions": [{"type": "Special"}]}], units=[{"actions": []}]), "s"
    )
    assert [(p.path, p.actions) for p in policies.files] == [("", (SPECIAL,))]
    assert [(u.name, u.actions) for u in policies.units] == [("", ())]


@pytest.mark.parametrize(
    ("doc", "ready"),
    [
        ({"metadata": {"generation": 4}, "status": {"observedGeneration": 4}}, True),
        ({"metadata": {"generation": 4}, "status": {"observedGeneration": 3}}, False),
        ({"metadata": {"generation": 1}, "status": {}}, False),
        ({"metadata": {}, "status": {"observedGeneration": 1}}, False),
        ({}, True),
    ],
)
def test_the_status_counts_once_the_generation_is_observed(doc: Any, ready: bool) -> None:
    assert status_ready(doc) is ready


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"metadata": []}, "metadata"),
        ({"status": "x"}, "status"),
        ({"metadata": {"generation": "4"}}, "metadata.generation"),
        ({"status": {"observedGeneration": True}}, "status.observedGeneration"),
    ],
)
def test_a_malformed_generation_names_the_field(doc: Any, field: str) -> None:
    with pytest.raises(ConfigError) as e:
        status_ready(doc)
    assert e.value.field == field
