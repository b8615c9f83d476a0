"""KubeletConfig and ContainerRuntimeConfig checks, drop-ins, names and status (upstream's
kubelet-config and container-runtime-config controllers, their messages word for word)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import yaml

from mcd.model.generated import kubelet, runtime
from mcd.model.generated.objects import (
    SUFFIX_ANNOTATION,
    GenerateError,
    machine_config,
    managed_key,
    selected_pools,
)
from mcd.model.generated.status import kubelet_status, runtime_status

Obj = dict[str, Any]
LABEL = "pools.operator.machineconfiguration.openshift.io/worker"
WORKER = {"metadata": {"name": "worker", "labels": {LABEL: ""}}, "spec": {}}
MASTER = {"metadata": {"name": "master", "labels": {}}, "spec": {}}


def kc(name: str = "kc", suffix: str | None = None, **spec: Any) -> Obj:
    meta: Obj = {"name": name, "uid": f"uid-{name}", "generation": 1}
    if suffix is not None:
        meta["annotations"] = {SUFFIX_ANNOTATION: suffix}
    return {"kind": "KubeletConfig", "metadata": meta,
            "spec": {"machineConfigPoolSelector": {"matchLabels": {LABEL: ""}}, **spec}}  # fmt: skip


def refusal(check: Any, *args: Any) -> str:
    with pytest.raises(GenerateError) as e:
        check(*args)
    return e.value.condition_message


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"cgroupDriver": "systemd"}, "cgroupDriver is not allowed to be set, but contains: systemd"),
        ({"clusterDNS": ["10.0.0.10", "10.0.0.11"]},
         "clusterDNS is not allowed to be set, but contains: [10.0.0.10 10.0.0.11]"),
        ({"clusterDomain": "cluster.local"},
         "clusterDomain is not allowed to be set, but contains: cluster.local"),
        ({"featureGates": {"B": False, "A": True}},
         "featureGates is not allowed to be set, but contains: map[A:true B:false]"),
        ({"failSwapOn": False}, "failSwapOn is not allowed to be set, but contains: false"),
        ({"memorySwap": {"swapBehavior": "LimitedSwap"}},
         "swapBehavior is not allowed to be set, but contains: LimitedSwap"),
        ({"systemReservedCgroup": "/a", "systemCgroups": "/b"},
         "systemReservedCgroup (/a) must match systemCgroups (/b)"),
    ],
)  # fmt: skip
def test_forbidden_kubelet_fields_are_refused_naming_the_field(config: Obj, message: str) -> None:
    assert refusal(kubelet.validate, kc(kubeletConfig=config)) == (
        f"Error: KubeletConfiguration: {message}"
    )


def test_kubelet_type_errors_and_log_level_in_upstreams_words() -> None:
    assert refusal(kubelet.validate, kc(kubeletConfig={"maxPods": "many"})) == (
        "Error: KubeletConfig could not be unmarshalled, err: json: cannot unmarshal string "
        "into Go struct field KubeletConfiguration.maxPods of type int32"
    )
    assert refusal(kubelet.validate, kc(logLevel=11)) == (
        "Error: KubeletConfig's LogLevel is not valid [0,10]: 11"
    )
    both = kc(autoSizingReserved=True, kubeletConfig={"systemReserved": {"cpu": "1"}})
    assert refusal(kubelet.validate, both) == (
        "Error: KubeletConfiguration: autoSizingReserved and systemdReserved cannot be set together"
    )


def test_static_pod_path_per_pool() -> None:
    assert refusal(kubelet.validate_for_pool, kc(kubeletConfig={"staticPodPath": ""}), MASTER) == (
        "Error: KubeletConfiguration: staticPodPath is not allowed to be set for control plane "
        'pool "master"'
    )
    odd = kc(kubeletConfig={"staticPodPath": "/etc/x"})
    assert refusal(kubelet.validate_for_pool, odd, WORKER) == (
        'Error: KubeletConfiguration: staticPodPath must be empty for pool "worker", but '
        "contains: /etc/x"
    )
    kubelet.validate_for_pool(kc(kubeletConfig={"staticPodPath": ""}), WORKER)


def test_the_kubelet_dropin_holds_the_fields_and_the_log_level() -> None:
    cfg = kc(logLevel=4, kubeletConfig={"maxPods": 42, "systemReserved": {"memory": "1Gi"}})
    kubelet.validate(cfg)
    (dropin,) = kubelet.files(cfg)
    assert dropin.path == "/etc/kubernetes/kubelet.conf.d/90-mcd-generated-kubelet.conf"
    assert yaml.safe_load(dropin.data) == {
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "maxPods": 42, "systemReserved": {"memory": "1Gi"}, "logging": {"verbosity": 4},
    }  # fmt: skip
    mc = machine_config("99-worker-generated-kubelet", "worker", [dropin], cfg, "v9")
    (entry,) = mc["spec"]["config"]["storage"]["files"]
    assert base64.b64decode(entry["contents"]["source"].partition("base64,")[2]) == dropin.data
    assert (entry["mode"], entry["overwrite"]) == (0o644, True)
    assert mc["metadata"]["ownerReferences"][0]["uid"] == "uid-kc"


def test_names_follow_upstreams_suffixes() -> None:
    first, second = kc("a", suffix=""), kc("b")
    assert managed_key("kubelet", WORKER, first, [first]) == "99-worker-generated-kubelet"
    assert managed_key("kubelet", WORKER, second, [first, second]) == (
        "99-worker-generated-kubelet-1"
    )
    third = kc("c", suffix="9")
    with pytest.raises(GenerateError, match=r"max number of supported kubelet config \(10\)"):
        managed_key("kubelet", WORKER, kc("d"), [first, third, kc("d")])
    assert selected_pools(kc(), [MASTER, WORKER]) == [WORKER]
    assert selected_pools({"spec": {"machineConfigPoolSelector": {}}}, [WORKER]) == []


def test_runtime_checks_and_dropins() -> None:
    def spec(**fields: Any) -> Obj:
        return {"spec": {"containerRuntimeConfig": fields}}

    assert refusal(runtime.validate, spec(pidsLimit=5)) == "Error: invalid PidsLimit 5"
    assert refusal(runtime.validate, spec(logSizeMax="4Ki")) == (
        'Error: invalid LogSizeMax "4Ki", cannot be less than 8kB'
    )
    assert refusal(runtime.validate, spec(logLevel="chatty")) == (
        'Error: invalid LogLevel "chatty", must be one of error, fatal, panic, warn, info, '
        "debug, or trace"
    )
    assert "overlaySize" in refusal(runtime.validate, spec(overlaySize="10G"))
    files = {f.path: f.data.decode() for f in runtime.files(spec(logLevel="warn",
                                                                 defaultRuntime="crun"))}  # fmt: skip
    assert files["/etc/crio/crio.conf.d/01-ctrcfg-logLevel"] == (
        '[crio]\n  [crio.runtime]\n    log_level = "warn"\n'
    )
    assert 'default_runtime_name = "crun"' in files[runtime.CONTAINERD_DROPIN]


def test_status_conditions_and_no_rewrite_of_the_same_outcome() -> None:
    cfg = kc()
    status = kubelet_status(cfg, None, "t1")
    assert status is not None
    assert [(c["type"], c["status"], c["message"]) for c in status["conditions"]] == [
        ("Accepted", "True", "Success"), ("Success", "True", "Success")]  # fmt: skip
    assert kubelet_status({**cfg, "status": status}, None, "t2") is None
    failed = kubelet_status({**cfg, "status": status}, "Error: x", "t3")
    assert failed is not None
    assert [(c["type"], c["status"]) for c in failed["conditions"]] == [
        ("Accepted", "True"), ("Accepted", "False"), ("Failure", "True")]  # fmt: skip
    ctr = runtime_status({"metadata": {"generation": 2}}, "Error: y", "t1")
    assert ctr == {"observedGeneration": 2, "conditions": [
        {"type": "Failure", "status": "True", "lastTransitionTime": "t1", "message": "Error: y"}]}  # fmt: skip


def test_a_tls_profile_becomes_the_kubelets_min_version_and_iana_ciphers() -> None:
    modern = kc(tlsSecurityProfile={"type": "Modern", "modern": {}})
    kubelet.validate(modern)
    body = yaml.safe_load(kubelet.files(modern)[0].data)
    assert body["tlsMinVersion"] == "VersionTLS13"
    assert body["tlsCipherSuites"] == [
        "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"]  # fmt: skip
    custom = kc(tlsSecurityProfile={"type": "Custom", "custom": {
        "minTLSVersion": "VersionTLS12",
        "ciphers": ["ECDHE-RSA-AES128-GCM-SHA256", "DHE-RSA-AES256-GCM-SHA384"]}})  # fmt: skip
    body = yaml.safe_load(kubelet.files(custom)[0].data)
    assert (body["tlsMinVersion"], body["tlsCipherSuites"]) == (
        "VersionTLS12", ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"])  # fmt: skip
