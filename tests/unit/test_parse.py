"""Parsing MachineConfigs and Ignition configs into the internal form."""

from __future__ import annotations

import base64
import gzip
import json

import pytest
import yaml

from mcd.model.errors import ConfigError, ConfigParseError, DecodeError, UnsupportedVersionError
from mcd.model.ignition.config import DEFAULT_FILE_MODE
from mcd.model.machineconfig import load_machine_config
from tests.builders import file_entry, mc, mc_doc

YAML_MC = """
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: rendered-worker-abc
spec:
  osImageURL: quay.io/example/os@sha256:1234
  kernelArguments: ["nosmt", "foo=bar"]
  extensions: [usbguard]
  fips: false
  kernelType: realtime
  baseOSExtensionsContainerImage: quay.io/example/ext@sha256:5678
  config:
    ignition: {version: 3.2.0}
    storage:
      files:
        - path: /etc/foo
          mode: 0600
          user: {name: core}
          group: {id: 1000}
          contents: {source: "data:,hello%20world%0A"}
    systemd:
      units:
        - name: foo.service
          enabled: true
          contents: "[Service]\\nExecStart=/bin/true\\n"
          dropins: [{name: 10-a.conf, contents: "[Service]\\n"}]
    passwd:
      users: [{name: core, sshAuthorizedKeys: ["ssh-ed25519 AAAA"]}]
"""


def test_machineconfig_yaml_all_spec_fields() -> None:
    m = load_machine_config(YAML_MC)
    assert m.name == "rendered-worker-abc"
    assert m.os_image_url == "quay.io/example/os@sha256:1234"
    assert m.kernel_arguments == ("nosmt", "foo=bar")
    assert m.extensions == ("usbguard",)
    assert m.kernel_type == "realtime"
    assert m.base_os_extensions_container_image == "quay.io/example/ext@sha256:5678"
    (f,) = m.ignition.files
    assert f.path == "/etc/foo"
    assert f.mode == 0o600
    assert f.user.name == "core"
    assert f.group.id == 1000
    assert f.data() == b"hello world\n"
    (u,) = m.ignition.units
    assert u.enabled is True
    assert u.dropins[0].name == "10-a.conf"
    assert m.ignition.passwd.users[0].ssh_authorized_keys == ("ssh-ed25519 AAAA",)


def test_json_and_yaml_give_the_same_config() -> None:
    doc = mc_doc(files=[file_entry("/etc/a", "x")])
    assert load_machine_config(json.dumps(doc)) == load_machine_config(json.dumps(doc).encode())
    assert load_machine_config(yaml.safe_dump(doc)) == load_machine_config(json.dumps(doc))


def test_bare_ignition_config_takes_the_default_name() -> None:
    m = load_machine_config('{"ignition": {"version": "3.0.0"}}', default_name="local")
    assert m.name == "local"
    assert m.ignition.files == ()


def test_base64_and_percent_encoded_and_gzip_contents() -> None:
    payload = b"line one\nline two\n"
    gz = "data:;base64," + base64.b64encode(gzip.compress(payload)).decode()
    m = mc(
        files=[
            {"path": "/etc/b64", "contents": {"source": "data:text/plain;base64,"
             + base64.b64encode(payload).decode()}},
            {"path": "/etc/pct", "contents": {"source": "data:,line%20one%0Aline%20two%0A"}},
            {"path": "/etc/gz", "contents": {"source": gz, "compression": "gzip"}},
            {"path": "/etc/empty", "contents": {}},
        ]
    )  # fmt: skip
    data = {f.path: f.data() for f in m.ignition.files}
    assert data == {"/etc/b64": payload, "/etc/pct": payload, "/etc/gz": payload, "/etc/empty": b""}
    assert m.ignition.file("/etc/empty") is not None
    assert m.ignition.files[0].effective_mode == DEFAULT_FILE_MODE


def test_unsupported_compression_has_upstream_text() -> None:
    m = mc(files=[{"path": "/etc/foo", "contents": {"source": "data:,x", "compression": "xz"}}])
    with pytest.raises(DecodeError) as e:
        m.ignition.files[0].data()
    assert str(e.value) == 'could not decode file "/etc/foo": unsupported compression type "xz"'


def test_ignition_v22_is_converted() -> None:
    doc = {
        "ignition": {"version": "2.2.0"},
        "storage": {
            "files": [
                {"filesystem": "root", "path": "/etc/dup", "contents": {"source": "data:,first"}},
                {"filesystem": "root", "path": "/etc/app", "append": True,
                 "contents": {"source": "data:,more"}},
                {"filesystem": "root", "path": "/etc/dup", "contents": {"source": "data:,second"},
                 "mode": 420},
            ],
            "directories": [{"filesystem": "root", "path": "/var/x"}],
        },
        "systemd": {"units": [{"name": "a.service", "enable": True, "contents": "[Unit]\n"}]},
    }  # fmt: skip
    m = load_machine_config(json.dumps(doc))
    paths = [f.path for f in m.ignition.files]
    assert paths == ["/etc/app", "/etc/dup"], "later duplicate wins, as upstream checkV2Files"
    assert m.ignition.file("/etc/dup").data() == b"second"  # type: ignore[union-attr]
    app = m.ignition.file("/etc/app")
    assert app is not None and app.append and app.append[0].decode() == b"more"
    assert m.ignition.units[0].enabled is True
    v3 = load_machine_config(json.dumps({"ignition": {"version": "3.4.0"},
                                         "storage": {"directories": [{"path": "/var/x"}]}}))  # fmt: skip
    assert m.ignition.fixed.directories == v3.ignition.fixed.directories


@pytest.mark.parametrize("version", ["3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0", "2.2.0"])
def test_supported_versions(version: str) -> None:
    assert mc(version=version, files=[file_entry("/etc/a", "x")]).ignition.version == version


@pytest.mark.parametrize("version", ["2.1.0", "3.6.0-experimental", "4.0.0", "banana"])
def test_unsupported_versions(version: str) -> None:
    with pytest.raises(UnsupportedVersionError) as e:
        mc(version=version)
    assert "spec.config.ignition.version" in str(e.value)
    assert version in str(e.value)


@pytest.mark.parametrize(
    ("doc", "field", "fragment"),
    [
        (mc_doc(files=[{"path": 5}]), "spec.config.storage.files[0].path", "expected a string"),
        (mc_doc(files=[{"path": "/a", "mode": "0644"}]), "spec.config.storage.files[0].mode",
         "expected an integer"),
        (mc_doc(files=[{"path": "/a", "mode": True}]), "spec.config.storage.files[0].mode",
         "expected an integer"),
        (mc_doc(files=[{"mode": 420}]), "spec.config.storage.files[0]", "missing path"),
        (mc_doc(units=[{"name": "a.service", "enabled": "yes"}]),
         "spec.config.systemd.units[0].enabled", "expected a boolean"),
        (mc_doc(users=[{"name": "core", "sshAuthorizedKeys": "ssh-rsa A"}]),
         "spec.config.passwd.users[0].sshAuthorizedKeys", "expected a list"),
        (mc_doc(kernelArguments=[1]), "spec.kernelArguments[0]", "expected a string"),
        (mc_doc(fips="true"), "spec.fips", "expected a boolean"),
        ({"kind": "Pod", "spec": {}}, "kind", "expected kind MachineConfig"),
    ],
)  # fmt: skip
def test_type_errors_name_the_field(doc: dict[str, object], field: str, fragment: str) -> None:
    with pytest.raises(ConfigParseError) as e:
        load_machine_config(json.dumps(doc))
    assert e.value.field == field
    assert fragment in str(e.value)


@pytest.mark.parametrize(
    "text",
    [
        b"\xff\xfe\x00garbage",
        "key: [unclosed",
        "- just\n- a list\n",
        "42",
        "",
        "{" * 5000 + "}" * 5000,
        "[" * 5000 + "]" * 5000,
    ],
)
def test_garbage_raises_config_error(text: str | bytes) -> None:
    with pytest.raises(ConfigError):
        load_machine_config(text)


def test_yaml_alias_bomb_is_refused_quickly() -> None:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 12):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 9)}]")
    lines.append("spec: {config: {ignition: {version: 3.2.0}}}")
    with pytest.raises(ConfigParseError) as e:
        load_machine_config("\n".join(lines))
    assert "alias" in str(e.value)


def test_v2_networkd_and_other_filesystems_are_rejected() -> None:
    with pytest.raises(ConfigParseError, match="networkd"):
        load_machine_config(json.dumps({"ignition": {"version": "2.2.0"},
                                        "networkd": {"units": [{"name": "a.network"}]}}))  # fmt: skip
    with pytest.raises(ConfigParseError, match="filesystem"):
        load_machine_config(json.dumps({"ignition": {"version": "2.2.0"}, "storage": {"files": [
            {"filesystem": "data", "path": "/x"}]}}))  # fmt: skip


def test_embedded_config_as_json_text() -> None:
    doc = mc_doc(files=[file_entry("/etc/a", "x")])
    doc["spec"]["config"] = json.dumps(doc["spec"]["config"])
    assert load_machine_config(json.dumps(doc)).ignition.files[0].data() == b"x"
