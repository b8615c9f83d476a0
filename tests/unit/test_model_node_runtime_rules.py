"""Which container runtime a node runs (model/node/runtime): the kubelet's
``containerRuntimeVersion`` outranks the host; the host's crictl.yaml endpoint, else its only
standard socket; neither: CRI-O assumed, as upstream. And where containerd's CRI plugin reads
registry hosts (``registry.config_path``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcd.model.node import runtime as rt

CTRD_SOCK = "/run/containerd/containerd.sock"
CRIO_SOCK = "/var/run/crio/crio.sock"


@pytest.mark.parametrize(
    ("version", "runtime"),
    [
        ("containerd://1.6.20", "containerd"),
        ("cri-o://1.29.1", "cri-o"),
        ("CRI-O://1.29.1", "cri-o"),
        ("docker://24.0.7", ""),
        ("containerd", ""),
        ("", ""),
    ],
)
def test_the_kubelets_runtime_version_names_the_runtime(version: str, runtime: str) -> None:
    assert rt.runtime_of_version(version) == runtime


def test_the_kubelets_report_outranks_the_host() -> None:
    host = rt.HostRuntime(configured=f"unix://{CRIO_SOCK}", sockets=(CRIO_SOCK, CTRD_SOCK))
    choice = rt.decide("containerd://1.6.20", host)
    assert (choice.name, choice.endpoint) == ("containerd", f"unix://{CTRD_SOCK}")
    assert choice.source == "the Node's containerRuntimeVersion containerd://1.6.20"
    assert choice.service == "containerd.service"


def test_crictl_yaml_names_the_runtime_and_its_own_socket() -> None:
    host = rt.HostRuntime(configured="unix:///run/realnode/containerd.sock", sockets=(CRIO_SOCK,))
    choice = rt.decide("", host)
    assert (choice.name, choice.socket) == ("containerd", "/run/realnode/containerd.sock")
    # the kubelet's report with the host's configured endpoint of the same runtime: that one
    assert rt.decide("containerd://1.7.0", host).socket == "/run/realnode/containerd.sock"


@pytest.mark.parametrize(
    ("sockets", "runtime", "endpoint"),
    [
        ((CTRD_SOCK,), "containerd", f"unix://{CTRD_SOCK}"),
        (("/run/crio/crio.sock",), "cri-o", "unix:///run/crio/crio.sock"),
        ((CRIO_SOCK, CTRD_SOCK), "", f"unix://{CRIO_SOCK}"),  # both: not known, CRI-O assumed
        ((), "", f"unix://{CRIO_SOCK}"),
    ],
)
def test_the_only_standard_socket_names_the_runtime(
    sockets: tuple[str, ...], runtime: str, endpoint: str
) -> None:
    choice = rt.decide("", rt.HostRuntime(sockets=sockets))
    assert (choice.name, choice.endpoint) == (runtime, endpoint)
    if not runtime:
        assert choice.source.endswith("CRI-O assumed, as upstream")
        assert choice.service == "crio.service"


def test_the_node_object_gives_its_runtime_version() -> None:
    node = {"status": {"nodeInfo": {"containerRuntimeVersion": "containerd://1.6.20"}}}
    assert rt.node_runtime_version(node) == "containerd://1.6.20"
    assert rt.node_runtime_version({"status": {"nodeInfo": None}}) == ""
    assert rt.node_runtime_version({}) == ""


@pytest.mark.parametrize(
    ("text", "endpoint"),
    [
        ("runtime-endpoint: unix:///run/containerd/containerd.sock\n", "unix:///run/containerd/containerd.sock"),
        ('image-endpoint: x\nruntime-endpoint: "unix:///var/run/crio/crio.sock"  # CRI-O\n', "unix:///var/run/crio/crio.sock"),
        ("timeout: 2\n", ""),
    ],
)  # fmt: skip
def test_crictl_yaml_endpoint(text: str, endpoint: str) -> None:
    assert rt.crictl_endpoint(text) == endpoint


@given(st.sampled_from(["containerd.sock", "crio.sock", "docker.sock"]),
       st.lists(st.text("abcz09_-", min_size=1, max_size=8), max_size=4),
       st.sampled_from(["unix://", ""]))  # fmt: skip
def test_a_socket_is_known_by_its_file_name_wherever_it_lives(
    name: str, dirs: list[str], scheme: str
) -> None:
    path = "/" + "/".join([*dirs, name])
    expected = {"containerd.sock": "containerd", "crio.sock": "cri-o"}.get(name, "")
    assert rt.runtime_of_endpoint(scheme + path) == expected
    assert rt.socket_of_endpoint(scheme + path) == path
    assert rt.runtime_of_endpoint("tcp://" + path.lstrip("/")) == ""


@pytest.mark.parametrize(
    ("config", "paths"),
    [
        (b'version = 2\n[plugins."io.containerd.grpc.v1.cri".registry]\n'
         b'  config_path = "/etc/containerd/certs.d:/etc/docker/certs.d"\n',
         ("/etc/containerd/certs.d", "/etc/docker/certs.d")),
        (b'[plugins.cri.registry]\n  config_path = "/etc/containerd/certs.d"\n',
         ("/etc/containerd/certs.d",)),
        (b'version = 3\n[plugins."io.containerd.cri.v1.images".registry]\n'
         b'  config_path = "/etc/containerd/certs.d"\n', ("/etc/containerd/certs.d",)),
        (b'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "p"\n', ()),
        (b"", ()),
    ],
)  # fmt: skip
def test_containerd_registry_config_path(config: bytes, paths: tuple[str, ...]) -> None:
    assert rt.registry_config_paths(config) == paths


def test_an_undecodable_containerd_config_says_so() -> None:
    with pytest.raises(
        rt.ContainerdConfigError, match=r"cannot decode /etc/containerd/config\.toml"
    ):
        rt.registry_config_paths(b"version = = 2")
