"""``mcd server``'s manifests: join tokens required on plain Kubernetes; the OpenShift overlay
installs no mcd server (upstream's machine-config-server serves there)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.manifests import OPENSHIFT, objects

REPO = Path(__file__).resolve().parents[2]


def load(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def server_args(docs: list[dict[str, Any]]) -> list[str]:
    deploy = next(
        d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "mcd-server"
    )
    (container,) = deploy["spec"]["template"]["spec"]["containers"]
    assert container["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    return list(container["args"])


def test_plain_kubernetes_requires_join_tokens_and_serves_no_plain_http() -> None:
    args = server_args(load(REPO / "daemonset/kubernetes/09-server.yaml"))
    assert args[0] == "server" and "--require-join-token" in args and "--insecure-port=0" in args


def test_the_openshift_overlay_installs_no_server() -> None:
    assert not [d for d in objects(OPENSHIFT) if "mcd-server" in d["metadata"]["name"]]


def test_the_server_may_read_pools_configs_and_its_token_secrets_and_nothing_more() -> None:
    docs = load(REPO / "daemonset/kubernetes/09-server.yaml")
    rules = [
        (
            tuple(r["apiGroups"]),
            tuple(r["resources"]),
            tuple(r["verbs"]),
            tuple(r.get("resourceNames", ())),
        )
        for d in docs
        if d["kind"] in ("ClusterRole", "Role")
        for r in d["rules"]
    ]
    assert sorted(rules) == sorted(
        [
            (
                ("machineconfiguration.openshift.io",),
                ("machineconfigpools", "machineconfigs"),
                ("get", "list", "watch"),
                (),
            ),
            (
                ("machineconfiguration.openshift.io",),
                ("controllerconfigs",),
                ("get", "list", "watch"),
                ("machine-config-controller",),
            ),
            (("",), ("secrets",), ("get", "list", "watch", "update"), ()),
            (("",), ("configmaps",), ("get", "list", "watch"), ("kube-root-ca.crt",)),
        ]
    )
    secrets = next(
        d for d in docs if d["kind"] == "Role" and d["rules"][0]["resources"] == ["secrets"]
    )
    # the join tokens' own namespace, shipped here, holds nothing else
    assert secrets["metadata"]["namespace"] == "mcd-join-tokens"
    assert any(
        d["kind"] == "Namespace" and d["metadata"]["name"] == "mcd-join-tokens" for d in docs
    )
    assert "--token-namespace=mcd-join-tokens" in server_args(docs)
