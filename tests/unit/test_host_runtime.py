"""The node's container runtime as its host shows it (host/runtime), under a temp root: the
endpoint crictl.yaml names, else the only standard socket; what ``detect`` publishes; and on
containerd, the registry directories its CRI plugin does not read."""

from __future__ import annotations

from pathlib import Path

from mcd.host import runtime
from mcd.host.bootloader.detect import detect
from mcd.host.rootfs import Root


def make_root(tmp_path: Path, files: dict[str, str]) -> Root:
    for path, text in files.items():
        target = tmp_path / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return Root(tmp_path)


def test_crictl_yaml_names_containerd_and_its_socket(tmp_path: Path) -> None:
    root = make_root(
        tmp_path, {"/etc/crictl.yaml": "runtime-endpoint: unix:///run/realnode/containerd.sock\n"}
    )
    choice = runtime.detect(root)
    assert (choice.name, choice.socket) == ("containerd", "/run/realnode/containerd.sock")
    assert detect(root, rpm_ostree=False).container_runtime == "containerd"


def test_the_only_socket_through_the_roots_own_var_run_link(tmp_path: Path) -> None:
    (tmp_path / "run/crio").mkdir(parents=True)
    (tmp_path / "run/crio/crio.sock").write_text("")
    (tmp_path / "var").mkdir()
    (tmp_path / "var/run").symlink_to("../run")
    choice = runtime.detect(Root(tmp_path))
    assert choice.name == "cri-o"
    assert choice.endpoint == "unix:///var/run/crio/crio.sock"


def test_the_kubelets_report_outranks_the_hosts_socket(tmp_path: Path) -> None:
    root = make_root(tmp_path, {"/run/crio/crio.sock": ""})
    choice = runtime.detect(root, "containerd://1.6.20")
    assert (choice.name, choice.endpoint) == (
        "containerd",
        "unix:///run/containerd/containerd.sock",
    )


def test_nothing_known_is_cri_o_assumed_and_published_as_unknown(tmp_path: Path) -> None:
    root = make_root(tmp_path, {})
    assert runtime.detect(root).name == ""
    assert "containerRuntime" not in detect(root, rpm_ostree=False).annotation()
    assert runtime.registry_warnings(root, runtime.detect(root)) == []


def test_containerd_without_config_path_reads_no_hosts_toml(tmp_path: Path) -> None:
    config = 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "p"\n'
    root = make_root(tmp_path, {"/run/containerd/containerd.sock": "",
                                "/etc/containerd/config.toml": config})  # fmt: skip
    warnings = runtime.registry_warnings(root, runtime.detect(root))
    assert warnings == [
        "containerd does not read /etc/containerd/certs.d (registry config_path: unset); set "
        'config_path = "/etc/containerd/certs.d:/etc/docker/certs.d" to have it read the '
        "hosts.toml files there",
        "containerd does not read /etc/docker/certs.d (registry config_path: unset); set "
        'config_path = "/etc/containerd/certs.d:/etc/docker/certs.d" to have it read the '
        "registry CAs mcd writes there",
    ]


def test_containerd_reading_both_directories_warns_of_nothing(tmp_path: Path) -> None:
    config = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".registry]\n'
              '  config_path = "/etc/containerd/certs.d:/etc/docker/certs.d/"\n')  # fmt: skip
    root = make_root(tmp_path, {"/run/containerd/containerd.sock": "",
                                "/etc/containerd/config.toml": config})  # fmt: skip
    assert runtime.registry_warnings(root, runtime.detect(root)) == []
