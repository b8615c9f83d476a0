"""What a pool serves (upstream ``GetConfig``'s choice of config), the kubeconfig it builds,
and ``mcd join``'s reading of a server URL."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from mcd.server.client import FetchError, config_url
from mcd.server.source import kubeconfig_yaml, served_name


def pool(spec: str, status: str, updated: int | None) -> dict[str, Any]:
    st: dict[str, Any] = {"configuration": {"name": status}}
    if updated is not None:
        st["updatedMachineCount"] = updated
    return {"spec": {"configuration": {"name": spec}}, "status": st}


@pytest.mark.parametrize(
    ("updated", "served"),
    [(None, "rendered-old"), (0, "rendered-old"), (1, "rendered-new"), (5, "rendered-new")],
)
def test_new_config_only_once_a_node_has_updated(updated: int | None, served: str) -> None:
    assert served_name(pool("rendered-new", "rendered-old", updated)) == served


def test_a_pool_never_rendered_serves_nothing() -> None:
    assert served_name({"spec": {}}) == ""


def test_kubeconfig_as_upstream_kubeconfig_from_secret() -> None:
    doc = json.loads(kubeconfig_yaml("https://api:6443", b"CA", "tok"))
    assert doc["current-context"] == "kubelet"
    (cluster,) = doc["clusters"]
    assert cluster["name"] == "local" and cluster["cluster"]["server"] == "https://api:6443"
    assert base64.b64decode(cluster["cluster"]["certificate-authority-data"]) == b"CA"
    assert doc["users"] == [{"name": "kubelet", "user": {"token": "tok"}}]


@pytest.mark.parametrize(
    ("server", "pool_name", "url"),
    [
        ("https://h:22623", "worker", "https://h:22623/config/worker"),
        ("https://h:30623/", "infra", "https://h:30623/config/infra"),
        ("https://h/config/worker", None, "https://h/config/worker"),
        ("https://h:1/config/worker/", "ignored", "https://h:1/config/worker"),
    ],
)
def test_config_url(server: str, pool_name: str | None, url: str) -> None:
    assert config_url(server, pool_name)[0] == url


@pytest.mark.parametrize(
    ("server", "pool_name"), [("http://h", "w"), ("https://h", None), ("h:1", "w")]
)
def test_config_url_refusals(server: str, pool_name: str | None) -> None:
    with pytest.raises(FetchError):
        config_url(server, pool_name)
