"""Node disruption policies published by the operator (MachineConfiguration/cluster status),
checked against upstream's own CRD schema (daemonset/kubernetes/12-machineconfiguration-crd.yaml)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcd.model.disruption.policy import (
    CRIO,
    DEFAULT_POLICIES,
    NONE,
    REBOOT,
    SPECIAL,
    merge_policies,
    parse_user_policies,
    reload,
    restart,
)
from mcd.model.disruption.policy_status import parse_status_policies, status_ready
from mcd.model.errors import PolicyError
from mcd.model.planning.plan import make_plan
from tests.builders import file_entry, mc

CRD = Path(__file__).resolve().parents[2] / "daemonset/kubernetes/12-machineconfiguration-crd.yaml"


def crd_schema() -> dict[str, Any]:
    doc = yaml.safe_load(CRD.read_text())
    (version,) = [v for v in doc["spec"]["versions"] if v["name"] == "v1"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def schema_problems(value: Any, schema: dict[str, Any], where: str = "") -> list[str]:
    """The structural part of OpenAPI v3 validation the kube-apiserver applies (types, enums,
    required, maxItems, patterns); CEL rules are checked by the real API server test."""
    kind = schema.get("type")
    types = {"object": dict, "array": list, "string": str, "boolean": bool, "integer": int}
    if kind in types and not isinstance(value, types[kind]):
        return [f"{where}: expected {kind}"]
    out: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{where}: {value!r} not in {schema['enum']}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        out.append(f"{where}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        out += [f"{where}.{r}: required" for r in schema.get("required", []) if r not in value]
        for key, sub in value.items():
            if key in props:
                out += schema_problems(sub, props[key], f"{where}.{key}")
            elif not schema.get("x-kubernetes-preserve-unknown-fields") and props:
                out.append(f"{where}.{key}: unknown field")
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            out.append(f"{where}: more than {schema['maxItems']} items")
        for i, item in enumerate(value):
            out += schema_problems(item, schema.get("items", {}), f"{where}[{i}]")
    return out


def status_object(user: dict[str, Any], generation: int = 2, observed: int = 2) -> dict[str, Any]:
    """What the operator writes: MergeClusterPolicies(spec) in the status (as JSON)."""
    merged = merge_policies(DEFAULT_POLICIES, parse_user_policies({"nodeDisruptionPolicy": user}))

    def acts(actions: Any) -> list[dict[str, Any]]:
        out = []
        for a in actions:
            item: dict[str, Any] = {"type": str(a.type)}
            if a.service:
                item[str(a.type).lower()] = {"serviceName": a.service}
            out.append(item)
        return out

    return {
        "apiVersion": "operator.openshift.io/v1",
        "kind": "MachineConfiguration",
        "metadata": {"name": "cluster", "generation": generation},
        "spec": {"managementState": "Managed", "nodeDisruptionPolicy": user},
        "status": {
            "observedGeneration": observed,
            "nodeDisruptionPolicyStatus": {"clusterPolicies": {
                "files": [{"path": p.path, "actions": acts(p.actions)} for p in merged.files],
                "units": [{"name": u.name, "actions": acts(u.actions)} for u in merged.units],
                "sshkey": {"actions": acts(merged.sshkey or ())},
            }},
        },
    }  # fmt: skip


USER = {
    "files": [{"path": "/etc/chrony.conf",
               "actions": [{"type": "Restart", "restart": {"serviceName": "chronyd.service"}}]}],
    "units": [{"name": "hello.service", "actions": [{"type": "DaemonReload"}]}],
    "sshkey": {"actions": [{"type": "None"}]},
}  # fmt: skip


def test_status_example_is_valid_under_upstreams_crd_schema() -> None:
    obj = status_object(USER)
    assert schema_problems(obj, crd_schema()) == []
    bad = status_object(USER)
    bad["status"]["nodeDisruptionPolicyStatus"]["clusterPolicies"]["files"][0]["actions"] = [
        {"type": "Explode"}
    ]
    assert schema_problems(bad, crd_schema())  # the schema itself is exercised


def test_status_policies_say_user_or_default() -> None:
    policies = parse_status_policies(status_object(USER), "MachineConfiguration/cluster status")
    chrony = policies.closest_file_policy("/etc/chrony.conf")
    assert chrony is not None and chrony.origin == "user"
    assert chrony.actions == (restart("chronyd.service"),)
    reg = policies.closest_file_policy("/etc/containers/registries.conf")
    assert reg is not None and reg.origin == "default" and reg.actions == (SPECIAL,)
    assert policies.sshkey == (NONE,) and policies.sshkey_origin == "default"
    old = mc("a", files=[file_entry("/etc/chrony.conf", "pool a"),
                         file_entry("/etc/containers/policy.json", "{}")])  # fmt: skip
    new = mc("b", files=[file_entry("/etc/chrony.conf", "pool b"),
                         file_entry("/etc/containers/policy.json", '{"x": 1}')])  # fmt: skip
    plan = make_plan(old, new, policies)
    assert plan.actions == (restart("chronyd.service"), reload(CRIO))
    assert not plan.reboot and not plan.drain
    rules = {d.subject: d.rule for d in plan.decisions}
    assert rules == {
        "file /etc/chrony.conf": "user policy for /etc/chrony.conf",
        "file /etc/containers/policy.json": "default policy for /etc/containers/policy.json",
    }
    assert plan.to_json()["policySource"] == "MachineConfiguration/cluster status"


def test_generation_must_be_observed() -> None:
    assert status_ready(status_object(USER))
    assert not status_ready(status_object(USER, generation=3, observed=2))
    assert status_ready({"metadata": {"name": "cluster"}})  # neither set: 0 == 0


def test_status_with_an_unknown_action_is_refused() -> None:
    obj = status_object(USER)
    obj["status"]["nodeDisruptionPolicyStatus"]["clusterPolicies"]["units"][0]["actions"] = [
        {"type": "Explode"}
    ]
    with pytest.raises(PolicyError, match='unknown action type "Explode"'):
        parse_status_policies(obj, "x")


def test_empty_status_reboots_for_every_file_as_upstream() -> None:
    """clusterPolicies without entries: FindClosestFilePolicyPathMatch finds nothing -> Reboot."""
    policies = parse_status_policies({"status": {}}, "x")
    old = mc("a", files=[file_entry("/var/lib/kubelet/config.json", "{}")])
    new = mc("b", files=[file_entry("/var/lib/kubelet/config.json", '{"a": 1}')])
    assert make_plan(old, new, policies).actions == (REBOOT,)
