"""The install as kustomize overlays (``daemonset/``): what each one holds, read the way
``kubectl kustomize`` reads it (the overlays list files and bases and set mcd's image, no other
transformer but the alerts' ``$(MCD_RUNBOOK_URL)`` (``vars``), which
``tests/integration/test_manifests.py`` checks against the real kubectl's rendering)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
DAEMONSET = REPO / "daemonset"
BASE = DAEMONSET / "base"
KUBERNETES = DAEMONSET / "kubernetes"
OPENSHIFT = DAEMONSET / "openshift"
OPTIONAL = DAEMONSET / "optional"
OVERLAYS = {
    "kubernetes": KUBERNETES,
    "kubernetes/monitoring": KUBERNETES / "monitoring",
    "openshift": OPENSHIFT,
    "openshift/monitoring": OPENSHIFT / "monitoring",
}
"""What a user applies with ``kubectl apply -k`` (``oc apply -k``), by its path under daemonset/."""
KUSTOMIZATION_KEYS = {
    "apiVersion",
    "kind",
    "bases",
    "resources",
    "images",
    "vars",
    "configurations",
}
"""All an overlay may say: anything else (patches, name prefixes) would make :func:`objects`
differ from what kubectl renders."""
SHIPPED_IMAGE = "ghcr.io/mcd-project/mcd"
"""The image name the manifests carry, a placeholder each overlay's ``images`` entry sets."""

Obj = dict[str, Any]


def kustomization(directory: Path) -> Obj:
    doc: Obj = yaml.safe_load((directory / "kustomization.yaml").read_text())
    return doc


def objects(directory: Path) -> list[Obj]:
    """Every object ``kubectl kustomize directory`` renders: its bases', then its files'."""
    k = kustomization(directory)
    found: list[Obj] = []
    for entry in [*(k.get("bases") or []), *(k.get("resources") or [])]:
        path = directory / entry
        if path.is_dir():
            found.extend(objects(path))
        else:
            found.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    for image in k.get("images") or []:
        for obj in found:
            _set_image(obj, image)
    for var in k.get("vars") or []:
        source = next(o for o in found if (o["kind"], o["metadata"]["name"]) == (
            var["objref"]["kind"], var["objref"]["name"]))  # fmt: skip
        value = source
        for part in var["fieldref"]["fieldpath"].split("."):
            value = value[part]
        found = [_substitute(o, f"$({var['name']})", str(value)) for o in found]
    return found


def _substitute(obj: Any, name: str, value: str) -> Any:
    """``name`` replaced by ``value`` in every string of ``obj`` (kustomize's ``vars``: the
    overlays use one, only where ``configurations`` lets it be)."""
    if isinstance(obj, str):
        return obj.replace(name, value)
    if isinstance(obj, list):
        return [_substitute(o, name, value) for o in obj]
    if isinstance(obj, dict):
        return {k: _substitute(v, name, value) for k, v in obj.items()}
    return obj


def _set_image(obj: Obj, image: Obj) -> None:
    """kustomize's ``images`` transformer for one entry (``newName``, ``newTag``), on the
    containers of a workload's pod template."""
    pod = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    for container in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
        name, _, tag = str(container.get("image") or "").partition(":")
        if name == image["name"]:
            container["image"] = f"{image.get('newName', name)}:{image.get('newTag', tag)}"


def identity(obj: Obj) -> tuple[str, str, str]:
    """(kind, namespace or "", name)."""
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def load(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]
