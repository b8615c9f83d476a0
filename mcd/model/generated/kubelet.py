"""A KubeletConfig as a drop-in of the node's kubelet (upstream ``validateUserKubeletConfig``,
``validateStaticPodPathGivenPool``, ``generateKubeletIgnFiles``).

Upstream rewrites OpenShift's whole ``/etc/kubernetes/kubelet.conf`` from its template. A plain
Kubernetes node has its own kubelet configuration, which mcd does not know, so the object's
``kubeletConfig`` goes, as written, into one file of the kubelet's drop-in directory
(``--config-dir``): :data:`DROPIN`. The kubelet merges it over its ``--config`` file, field by
field, when it starts. ``logLevel`` becomes the drop-in's ``logging.verbosity`` (upstream
writes ``KUBELET_LOG_LEVEL`` for OpenShift's unit, which plain kubelets do not read)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from mcd.model.generated.objects import GeneratedFile, GenerateError
from mcd.model.generated.tls import kubelet_tls
from mcd.model.pool.pools import name_of

DROPIN_DIR = "/etc/kubernetes/kubelet.conf.d"
DROPIN = f"{DROPIN_DIR}/90-mcd-generated-kubelet.conf"
KUBELET_API = "kubelet.config.k8s.io/v1beta1"
MASTER_LABEL = "node-role.kubernetes.io/master"
CONTROL_PLANE_POOLS = ("master", "arbiter")

_INT32 = "int32"
_TYPES: dict[str, str] = {
    **dict.fromkeys(
        ("maxPods", "port", "readOnlyPort", "healthzPort", "kubeAPIQPS", "kubeAPIBurst",
         "registryPullQPS", "registryBurst", "eventRecordQPS", "eventBurst",
         "imageGCHighThresholdPercent", "imageGCLowThresholdPercent", "podsPerCore",
         "containerLogMaxFiles", "containerLogMaxWorkers", "maxParallelImagePulls",
         "oomScoreAdj", "nodeLeaseDurationSeconds", "maxOpenFiles"), _INT32),
    "podPidsLimit": "int64",
    **dict.fromkeys(
        ("cgroupDriver", "clusterDomain", "staticPodPath", "systemReservedCgroup",
         "systemCgroups", "kubeReservedCgroup", "cgroupRoot", "containerLogMaxSize",
         "cpuManagerPolicy", "memoryManagerPolicy", "topologyManagerPolicy",
         "topologyManagerScope", "reservedSystemCPUs", "resolvConf", "address",
         "hairpinMode", "providerID", "containerRuntimeEndpoint", "imageServiceEndpoint",
         "nodeStatusUpdateFrequency", "nodeStatusReportFrequency", "syncFrequency",
         "imageMinimumGCAge", "imageMaximumGCAge", "evictionPressureTransitionPeriod",
         "shutdownGracePeriod", "shutdownGracePeriodCriticalPods", "streamingConnectionIdleTimeout",
         "runtimeRequestTimeout", "cpuManagerReconcilePeriod", "tlsMinVersion"), "string"),
    **dict.fromkeys(
        ("failSwapOn", "protectKernelDefaults", "serializeImagePulls", "cgroupsPerQOS",
         "makeIPTablesUtilChains", "enableControllerAttachDetach", "enableServer",
         "enableDebuggingHandlers", "rotateCertificates", "serverTLSBootstrap",
         "enableSystemLogHandler", "localStorageCapacityIsolation", "registerNode",
         "kernelMemcgNotification", "failCgroupV1"), "bool"),
    **dict.fromkeys(("clusterDNS", "tlsCipherSuites", "enforceNodeAllocatable",
                     "allowedUnsafeSysctls", "registerWithTaints"), "list"),
    **dict.fromkeys(("featureGates", "systemReserved", "kubeReserved", "evictionHard",
                     "evictionSoft", "evictionSoftGracePeriod", "evictionMinimumReclaim",
                     "memorySwap", "logging", "authentication", "authorization"), "object"),
}  # fmt: skip
"""KubeletConfiguration (v1beta1) fields whose JSON type the Go decoder would check."""
_GO_NAMES = {"string": "string", "bool": "bool", "list": "[]string", "object": "map[string]string",
             "int32": "int32", "int64": "int64"}  # fmt: skip
_JSON_KINDS = {str: "string", bool: "bool", int: "number", float: "number", list: "array",
               dict: "object", type(None): "null"}  # fmt: skip


def _fits(kind: str, value: Any) -> bool:
    if value is None:
        return True  # null leaves the Go field at its zero value
    if kind in (_INT32, "int64"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        limit = 2**31 if kind == _INT32 else 2**63
        return float(value).is_integer() and -limit <= value < limit
    return isinstance(value, {"string": str, "bool": bool, "list": list, "object": dict}[kind])


def decode(cfg: Mapping[str, Any]) -> dict[str, Any] | None:
    """``spec.kubeletConfig`` (None when unset), with the Go decoder's type checks of the
    fields named in :data:`_TYPES`; :class:`GenerateError` in upstream's words else."""
    raw = (cfg.get("spec") or {}).get("kubeletConfig")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        kind = _JSON_KINDS.get(type(raw), "value")
        raise GenerateError("KubeletConfig could not be unmarshalled, err: json: cannot "
                            f"unmarshal {kind} into Go value of type "
                            "v1beta1.KubeletConfiguration")  # fmt: skip
    for key, kind in _TYPES.items():
        if key in raw and not _fits(kind, raw[key]):
            got = _JSON_KINDS.get(type(raw[key]), "value")
            raise GenerateError(
                "KubeletConfig could not be unmarshalled, err: json: cannot unmarshal "
                f"{got} into Go struct field KubeletConfiguration.{key} of type {_GO_NAMES[kind]}"
            )
    return dict(raw)


def _go(value: Any) -> str:
    """Go's ``%v`` of a decoded value (lists ``[a b]``, maps ``map[k:v]`` by key)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + " ".join(_go(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go(value[k])}" for k in sorted(value)) + "]"
    return str(value)


def validate(cfg: Mapping[str, Any]) -> None:
    """Upstream ``validateUserKubeletConfig``: fields a user may not set, since a node could
    not come back from them (:class:`GenerateError` naming the field); and what plain
    Kubernetes nodes cannot take (OpenShift's node sizing)."""
    spec = cfg.get("spec") or {}
    level = spec.get("logLevel")
    if level is not None and (not isinstance(level, int) or not 0 <= level <= 10):
        raise GenerateError(f"KubeletConfig's LogLevel is not valid [0,10]: {level}")
    auto = spec.get("autoSizingReserved") is True
    kc = decode(cfg)
    if kc is not None:
        for key in ("cgroupDriver", "clusterDNS", "clusterDomain", "featureGates"):
            if kc.get(key):
                raise GenerateError(f"KubeletConfiguration: {key} is not allowed to be set, "
                                    f"but contains: {_go(kc[key])}")  # fmt: skip
        if kc.get("failSwapOn") is not None:
            raise GenerateError("KubeletConfiguration: failSwapOn is not allowed to be set, "
                                f"but contains: {_go(kc['failSwapOn'])}")  # fmt: skip
        swap = (kc.get("memorySwap") or {}).get("swapBehavior")
        if swap:
            raise GenerateError("KubeletConfiguration: swapBehavior is not allowed to be set, "
                                f"but contains: {swap}")  # fmt: skip
        if kc.get("systemReserved") and auto:
            raise GenerateError("KubeletConfiguration: autoSizingReserved and systemdReserved "
                                "cannot be set together")  # fmt: skip
        reserved, system = kc.get("systemReservedCgroup"), kc.get("systemCgroups")
        if reserved and system and reserved != system:
            raise GenerateError(f"KubeletConfiguration: systemReservedCgroup ({reserved}) "
                                f"must match systemCgroups ({system})")  # fmt: skip
    if auto:
        raise GenerateError(
            "KubeletConfig: autoSizingReserved needs OpenShift's node sizing service, which "
            "plain Kubernetes nodes do not run: set kubeletConfig.systemReserved instead"
        )


def _control_plane(pool: Mapping[str, Any]) -> bool:
    """Upstream ``isControlPlanePool``: named master or arbiter, or selecting master nodes."""
    if name_of(pool) in CONTROL_PLANE_POOLS:
        return True
    selector = (pool.get("spec") or {}).get("nodeSelector") or {}
    if MASTER_LABEL in (selector.get("matchLabels") or {}):
        return True
    return any(e.get("key") == MASTER_LABEL and e.get("operator") in ("Exists", "In")
               for e in selector.get("matchExpressions") or [])  # fmt: skip


def validate_for_pool(cfg: Mapping[str, Any], pool: Mapping[str, Any]) -> None:
    """Upstream ``validateStaticPodPathGivenPool``: a control-plane pool may not set
    ``staticPodPath`` at all; other pools only to '' (no static pods)."""
    kc = decode(cfg)
    if kc is None:
        return
    name = name_of(pool)
    if _control_plane(pool):
        if "staticPodPath" in kc:
            raise GenerateError("KubeletConfiguration: staticPodPath is not allowed to be set "
                                f'for control plane pool "{name}"')  # fmt: skip
        return
    if kc.get("staticPodPath"):
        raise GenerateError(f'KubeletConfiguration: staticPodPath must be empty for pool "{name}", '
                            f"but contains: {kc['staticPodPath']}")  # fmt: skip


def files(cfg: Mapping[str, Any]) -> list[GeneratedFile]:
    """The drop-in (:data:`DROPIN`): ``kubeletConfig`` as written (its own ``apiVersion`` and
    ``kind``, which the kubelet wants in each drop-in), ``logLevel`` as
    ``logging.verbosity``, ``tlsSecurityProfile`` as ``tlsMinVersion`` and
    ``tlsCipherSuites`` (:mod:`mcd.model.generated.tls`)."""
    body: dict[str, Any] = dict(decode(cfg) or {})
    level = (cfg.get("spec") or {}).get("logLevel")
    if level is not None:
        body["logging"] = {**(body.get("logging") or {}), "verbosity": level}
    profile = (cfg.get("spec") or {}).get("tlsSecurityProfile")
    if isinstance(profile, Mapping):  # upstream: the profile wins over the fields
        body["tlsMinVersion"], body["tlsCipherSuites"] = kubelet_tls(profile)
    body.pop("featureGates", None)  # upstream: from the cluster's FeatureGate only
    body["apiVersion"], body["kind"] = KUBELET_API, "KubeletConfiguration"
    head = {"apiVersion": body.pop("apiVersion"), "kind": body.pop("kind")}
    text = "# Generated by mcd controller from KubeletConfig " + str(name_of(cfg)) + "\n"
    text += yaml.safe_dump(head, sort_keys=False)
    if body:
        text += yaml.safe_dump(body, sort_keys=True)
    return [GeneratedFile(DROPIN, text.encode())]
