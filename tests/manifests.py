"""The install as kustomize overlays (``daemonset/``): what each one holds, read the way
``kubectl kustomize`` reads it (the overlays only list files and bases, no transformers, which
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
KUSTOMIZATION_KEYS = {"apiVersion", "kind", "bases", "resources"}
"""All an overlay may say: anything else (patches, name prefixes) would make :func:`objects`
differ from what kubectl renders."""

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
    return found


def identity(obj: Obj) -> tuple[str, str, str]:
    """(kind, namespace or "", name)."""
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def load(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]
