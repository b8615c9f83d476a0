"""What a real cluster does around the stored objects: resources, selectors, pods, evictions.

* A kubelet stand-in: a pod bound to a node turns Running and Ready; a deleted
  pod gets a ``deletionTimestamp`` and goes away after its grace period (capped
  by ``pod_grace_cap`` so tests stay fast) once it has no finalizers left.
* The eviction subresource checks PodDisruptionBudgets as the real
  ``pods/eviction`` REST handler does: 429 ``TooManyRequests`` with a
  ``DisruptionBudget`` cause while the budget allows no disruption, 500 when
  several budgets select the pod.
"""

from __future__ import annotations

import threading
from typing import Any

from tests.fakes.apiserver.store import ApiError, Obj, Resource, Store, now_iso

RESOURCES = [
    Resource("", "v1", "nodes", "Node", False, ("no",)),
    Resource("", "v1", "pods", "Pod", True, ("po",)),
    Resource("", "v1", "namespaces", "Namespace", False, ("ns",)),
    Resource("", "v1", "events", "Event", True, ("ev",)),
    Resource("", "v1", "serviceaccounts", "ServiceAccount", True, ("sa",)),
    Resource("", "v1", "configmaps", "ConfigMap", True, ("cm",)),
    Resource("", "v1", "secrets", "Secret", True, ()),
    Resource("", "v1", "services", "Service", True, ("svc",)),
    Resource("apps", "v1", "daemonsets", "DaemonSet", True, ("ds",)),
    Resource("apps", "v1", "replicasets", "ReplicaSet", True, ("rs",)),
    Resource("apps", "v1", "deployments", "Deployment", True, ("deploy",)),
    Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",)),
    Resource("events.k8s.io", "v1", "events", "Event", True, ()),
    Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False, ()),
    Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False, ()),
    Resource("rbac.authorization.k8s.io", "v1", "roles", "Role", True, ()),
    Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True, ()),
    Resource(
        "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
        False, ("crd",),
    ),
    Resource("machineconfiguration.openshift.io", "v1", "machineconfigs", "MachineConfig", False, ("mc",)),
    Resource("machineconfiguration.openshift.io", "v1", "machineconfigpools", "MachineConfigPool", False, ("mcp",)),
    Resource("machineconfiguration.openshift.io", "v1", "pinnedimagesets", "PinnedImageSet", False, ()),
    Resource("machineconfiguration.openshift.io", "v1", "machineconfignodes", "MachineConfigNode", False, ("mcn",)),
    Resource("machineconfiguration.openshift.io", "v1", "internalreleaseimages", "InternalReleaseImage", False, ("iri",)),
    Resource("machineconfiguration.openshift.io", "v1", "kubeletconfigs", "KubeletConfig", False, ()),
    Resource("machineconfiguration.openshift.io", "v1", "containerruntimeconfigs", "ContainerRuntimeConfig", False, ("ctrcfg",)),
    Resource("coordination.k8s.io", "v1", "leases", "Lease", True, ()),
    Resource("machineconfiguration.openshift.io", "v1", "controllerconfigs", "ControllerConfig", False, ()),
    Resource("operator.openshift.io", "v1", "machineconfigurations", "MachineConfiguration", False, ()),
    # stored only (the fake admits everything): the own-Node policy applies with kubectl
    Resource("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", False, ()),
    Resource("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", False, ()),
    # stored only (nothing enforces them): the install's NetworkPolicies apply with kubectl
    Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, ("netpol",)),
]  # fmt: skip
STATUS_SUBRESOURCE = frozenset(
    {
        "machineconfigpools",
        "machineconfignodes",
        "pinnedimagesets",
        "machineconfigurations",
        "kubeletconfigs",
        "containerruntimeconfigs",
    }
)
"""Custom resources with ``subresources.status``: the main resource ignores status
changes, ``/status`` changes only status, and a spec change bumps ``metadata.generation``."""

BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}
POLICY_V1BETA1 = Resource("policy", "v1beta1", "poddisruptionbudgets", "PodDisruptionBudget", True)
BY_PATH[("policy", "v1beta1", "poddisruptionbudgets")] = POLICY_V1BETA1


def lookup(group: str, version: str, plural: str) -> Resource:
    resource = BY_PATH.get((group, version, plural))
    if resource is None:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    return resource


def resource(plural: str, group: str = "") -> Resource:
    return next(r for r in RESOURCES if r.plural == plural and r.group == group)


NODES, PODS, PDBS = resource("nodes"), resource("pods"), resource("poddisruptionbudgets", "policy")


def _field(obj: Obj, dotted: str) -> str:
    value: Any = obj
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def selector_matches(selector: str, obj: Obj, labels: bool) -> bool:
    """A ``fieldSelector`` or ``labelSelector`` string: ``a=b``, ``a==b``, ``a!=b`` (``key``, ``!key`` for labels)."""
    have = obj.get("metadata", {}).get("labels") or {}
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "=" not in term:
            key = term.lstrip("!")
            if (key in have) == term.startswith("!"):
                return False
            continue
        negate = "!=" in term
        key, want = term.split("!=" if negate else ("==" if "==" in term else "="), 1)
        value = have.get(key.strip()) if labels else _field(obj, key.strip())
        if (value == want) == negate:
            return False
    return True


def label_selector_matches(selector: Obj | None, labels: dict[str, str]) -> bool:
    """A ``metav1.LabelSelector`` (matchLabels and matchExpressions)."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if (
            (op == "In" and labels.get(key) not in values)
            or (op == "NotIn" and labels.get(key) in values)
            or (op == "Exists" and key not in labels)
            or (op == "DoesNotExist" and key in labels)
        ):
            return False
    return True


def _ready(pod: Obj) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") != "Running" or pod["metadata"].get("deletionTimestamp"):
        return False
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def _count(value: Any, total: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return -(-int(value[:-1]) * total // 100)  # round up, as the disruption controller
    return int(value)


class Cluster:
    """Pod lifecycle and evictions on top of the store."""

    def __init__(self, store: Store, pod_grace_cap: float = 0.2) -> None:
        self.store = store
        self.pod_grace_cap = pod_grace_cap
        self._timers: list[threading.Timer] = []

    def on_create(self, res: Resource, obj: Obj) -> Obj:
        if res is PODS and obj.get("spec", {}).get("nodeName"):
            obj.setdefault("status", {}).update(
                phase="Running",
                conditions=[{"type": "Ready", "status": "True", "lastTransitionTime": now_iso()}],
                startTime=now_iso(),
            )
        return obj

    def delete_pod(self, namespace: str, name: str, grace: float | None) -> Obj:
        pod = self.store.get(PODS, namespace, name)
        if grace is None:
            grace = float(pod.get("spec", {}).get("terminationGracePeriodSeconds", 30))
        if grace <= 0 or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return self.store.delete(PODS, namespace, name)

        def terminating(p: Obj) -> Obj:
            p["metadata"].setdefault("deletionTimestamp", now_iso())
            p["metadata"]["deletionGracePeriodSeconds"] = int(grace)
            return p

        updated = self.store.update(PODS, namespace, name, terminating)
        uid = updated["metadata"]["uid"]
        timer = threading.Timer(
            min(grace, self.pod_grace_cap), self._finish, (namespace, name, uid)
        )
        timer.daemon = True
        self._timers.append(timer)
        timer.start()
        return updated

    def _finish(self, namespace: str, name: str, uid: str) -> None:
        """The grace period is over: the pod goes, once its finalizers are gone (a pod that
        keeps a finalizer stays terminating, as on a real cluster)."""
        try:
            with self.store.lock:
                meta = self.store.get(PODS, namespace, name)["metadata"]
                if meta["uid"] != uid:
                    return
                if not meta.get("finalizers"):
                    self.store.delete(PODS, namespace, name)
                    return
        except ApiError:
            return
        timer = threading.Timer(0.2, self._finish, (namespace, name, uid))
        timer.daemon = True
        self._timers.append(timer)
        timer.start()

    def evict(self, namespace: str, name: str, body: Obj) -> Obj:
        with self.store.lock:
            pod = self.store.get(PODS, namespace, name)
            if not pod["metadata"].get("deletionTimestamp"):
                self._check_budgets(namespace, pod)
            grace = (body.get("deleteOptions") or {}).get("gracePeriodSeconds")
            self.delete_pod(namespace, name, None if grace is None else float(grace))
        return {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201,
        }  # fmt: skip

    def _check_budgets(self, namespace: str, pod: Obj) -> None:
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed", "Pending"):
            return  # the real handler lets these go without consulting budgets
        labels = pod["metadata"].get("labels") or {}
        pdbs, _ = self.store.select(PDBS, namespace)
        matching = [
            p for p in pdbs if label_selector_matches(p.get("spec", {}).get("selector"), labels)
        ]
        if not matching:
            return
        if len(matching) > 1:
            raise ApiError(
                500,
                "InternalError",
                "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                "does not support.",
            )
        pdb = matching[0]
        allowed, needed, healthy = self.disruptions_allowed(pdb)
        if allowed < 1:
            name = pdb["metadata"]["name"]
            raise ApiError(
                429,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.",
                {
                    "causes": [
                        {
                            "reason": "DisruptionBudget",
                            "message": f"The disruption budget {name} needs {needed} healthy pods "
                            f"and has {healthy} currently",
                        }
                    ]
                },
            )

    def disruptions_allowed(self, pdb: Obj) -> tuple[int, int, int]:
        """(disruptionsAllowed, desiredHealthy, currentHealthy), computed as the controller would."""
        spec = pdb.get("spec") or {}
        namespace = pdb["metadata"]["namespace"]
        pods, _ = self.store.select(PODS, namespace)
        selected = [
            p for p in pods
            if label_selector_matches(spec.get("selector"), p["metadata"].get("labels") or {})
        ]  # fmt: skip
        expected = len(selected)
        healthy = sum(_ready(p) for p in selected)
        if "maxUnavailable" in spec:
            desired = expected - _count(spec["maxUnavailable"], expected)
        else:
            desired = _count(spec.get("minAvailable", 1), expected)
        return max(healthy - desired, 0), desired, healthy

    def pdb_status(self, pdb: Obj) -> Obj:
        allowed, desired, healthy = self.disruptions_allowed(pdb)
        pdb["status"] = {
            "disruptionsAllowed": allowed,
            "desiredHealthy": desired,
            "currentHealthy": healthy,
            "expectedPods": healthy,
            "observedGeneration": pdb["metadata"].get("generation", 1),
        }
        return pdb

    def stop(self) -> None:
        for timer in self._timers:
            timer.cancel()
