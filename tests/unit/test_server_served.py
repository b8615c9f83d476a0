"""The document the server hands a booting node, per spec version (upstream ``GetConfig``
appenders, then ``ConvertRawExtIgnitionToVersion``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcd.model.errors import ConfigError
from mcd.model.ignition.convert import ConversionError, to_version
from mcd.model.ignition.dataurl import decode_data_url, encode_data_url
from mcd.model.ignition.parse import parse_ignition
from mcd.model.ignition.served import (
    CONTENT,
    ENCAPSULATED,
    KUBECONFIG,
    KUBELET_CA,
    NODE_ANNOTATIONS,
    Extras,
    served_config,
)

SECRET = b"pull-secret-do-not-leak"


def mc(config: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": "rendered-worker-1"},
        "spec": {"config": config, "osImageURL": "quay.io/os@sha256:aa", **spec},
    }


def v3(**extra: Any) -> dict[str, Any]:
    return {
        "ignition": {"version": "3.5.0"},
        "storage": {
            "files": [
                {
                    "path": "/etc/pull",
                    "mode": 0o600,
                    "contents": {"source": encode_data_url(SECRET)},
                }
            ]
        },
        "systemd": {"units": [{"name": "a.service", "enabled": True, "contents": "[Unit]\n"}]},
        **extra,
    }


def files(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["path"]: f for f in doc["storage"]["files"]}


def content(entry: dict[str, Any]) -> bytes:
    return decode_data_url(entry["contents"]["source"])


VERSIONS = ["2.2.0", "3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0"]


@pytest.mark.parametrize("version", VERSIONS)
def test_served_document_per_spec_version(version: str) -> None:
    body = served_config(
        mc(v3()), "rendered-worker-1", version, Extras(kubelet_ca=b"CA\n", kubeconfig=b"kc")
    )
    doc = json.loads(body)
    assert doc["ignition"]["version"] == version
    parse_ignition(doc)  # mcd's own parser takes every version it serves
    got = files(doc)
    assert content(got["/etc/pull"]) == SECRET
    assert content(got[KUBELET_CA]) == b"CA\n"
    assert json.loads(content(got[NODE_ANNOTATIONS])) == {
        "machineconfiguration.openshift.io/currentConfig": "rendered-worker-1",
        "machineconfiguration.openshift.io/desiredConfig": "rendered-worker-1",
        "machineconfiguration.openshift.io/firstPivotConfig": "rendered-worker-1",
        "machineconfiguration.openshift.io/state": "Done",
    }
    assert got[KUBECONFIG]["mode"] == 0o600 and got[CONTENT]["mode"] == 0o600
    assert json.loads(content(got[CONTENT]))["metadata"]["name"] == "rendered-worker-1"
    encapsulated = json.loads(content(got[ENCAPSULATED]))
    assert encapsulated["spec"]["config"] == {"ignition": {"version": version}}
    assert encapsulated["spec"]["osImageURL"] == "quay.io/os@sha256:aa"
    assert doc["storage"]["files"][-1]["path"] == ENCAPSULATED  # always last, as upstream
    if version == "2.2.0":
        assert all(f["filesystem"] == "root" for f in doc["storage"]["files"])


def test_no_kubeconfig_when_the_server_has_none_and_an_existing_ca_is_replaced() -> None:
    config = v3()
    config["storage"]["files"].append(
        {"path": KUBELET_CA, "mode": 0o644, "contents": {"source": encode_data_url(b"old")}}
    )
    doc = json.loads(served_config(mc(config), "r", "3.5.0", Extras(kubelet_ca=b"new")))
    got = files(doc)
    assert KUBECONFIG not in got
    assert content(got[KUBELET_CA]) == b"new"
    assert [f["path"] for f in doc["storage"]["files"]].count(KUBELET_CA) == 1


def test_a_spec_2_2_config_is_served_in_3_x() -> None:
    config = {
        "ignition": {"version": "2.2.0"},
        "storage": {
            "files": [{"filesystem": "root", "path": "/etc/a", "contents": {"source": "data:,x"}}]
        },
    }
    doc = json.loads(served_config(mc(config), "r", "3.3.0", Extras()))
    assert "filesystem" not in files(doc)["/etc/a"]


KARGS = {"shouldExist": ["nosmt", "a=b"]}


@pytest.mark.parametrize("version", ["2.2.0", "3.1.0", "3.2.0"])
def test_kernel_arguments_move_into_the_machineconfig_below_3_3(version: str) -> None:
    doc = json.loads(
        served_config(mc(v3(kernelArguments=KARGS), kernelArguments=["x"]), "r", version, Extras())
    )
    assert "kernelArguments" not in doc
    encapsulated = json.loads(content(files(doc)[ENCAPSULATED]))
    assert encapsulated["spec"]["kernelArguments"] == ["x", "nosmt", "a=b"]


@pytest.mark.parametrize("version", ["3.3.0", "3.5.0"])
def test_kernel_arguments_stay_in_ignition_from_3_3(version: str) -> None:
    doc = json.loads(served_config(mc(v3(kernelArguments=KARGS)), "r", version, Extras()))
    assert doc["kernelArguments"] == KARGS
    assert "kernelArguments" not in json.loads(content(files(doc)[ENCAPSULATED]))["spec"]


def test_should_not_exist_cannot_be_served_below_3_3() -> None:
    with pytest.raises(ConfigError, match="ShouldNotExist"):
        served_config(mc(v3(kernelArguments={"shouldNotExist": ["quiet"]})), "r", "3.2.0", Extras())


REFUSALS = [
    (
        "3.4.0",
        {"storage": {"luks": [{"name": "l", "device": "/dev/x", "cex": {"enabled": True}}]}},
        "Cex",
    ),
    (
        "3.3.0",
        {"storage": {"luks": [{"name": "l", "device": "/dev/x", "discard": True}]}},
        "discard",
    ),
    ("3.3.0", {"storage": {"files": [{"path": "/x", "mode": 0o4755}]}}, "special mode"),
    (
        "3.3.0",
        {"storage": {"files": [{"path": "/x", "contents": {"source": "arn:aws:s3:::b/k"}}]}},
        "arn",
    ),
    ("3.2.0", {"kernelArguments": {"shouldExist": ["a"]}}, "kernelArguments"),
    ("3.1.0", {"storage": {"luks": [{"name": "l", "device": "/dev/x"}]}}, "luks"),
    ("3.1.0", {"passwd": {"users": [{"name": "u", "shouldExist": False}]}}, "shouldExist"),
    (
        "3.0.0",
        {
            "storage": {
                "files": [
                    {
                        "path": "/x",
                        "contents": {
                            "source": "https://h/x",
                            "httpHeaders": [{"name": "a", "value": "b"}],
                        },
                    }
                ]
            }
        },
        "httpHeaders",
    ),
    (
        "2.2.0",
        {
            "storage": {
                "files": [{"path": "/x", "append": [{"source": "data:,a"}, {"source": "data:,b"}]}]
            }
        },
        "more than one",
    ),
    ("2.2.0", {"storage": {"disks": [{"device": "/dev/sda"}]}}, "disks"),
]


@pytest.mark.parametrize(("version", "doc", "match"), REFUSALS)
def test_what_an_older_spec_cannot_say_is_refused(
    version: str, doc: dict[str, Any], match: str
) -> None:
    with pytest.raises(ConversionError, match=match):
        to_version({"ignition": {"version": "3.5.0"}, **doc}, version)


def test_conversion_never_changes_its_input_and_a_single_append_becomes_v2_append() -> None:
    doc = {
        "ignition": {"version": "3.5.0"},
        "storage": {"files": [{"path": "/x", "append": [{"source": "data:,a"}]}]},
    }
    before = json.dumps(doc)
    out = to_version(doc, "2.2.0")
    assert json.dumps(doc) == before
    assert out["storage"]["files"][0] == {
        "path": "/x",
        "append": True,
        "contents": {"source": "data:,a"},
        "filesystem": "root",
    }


def test_a_broken_config_is_a_config_error_that_quotes_no_contents() -> None:
    bad = {
        "ignition": {"version": "3.5.0"},
        "storage": {"files": [{"contents": {"source": "data:,secret"}}]},
    }
    with pytest.raises(ConfigError) as e:
        served_config(mc(bad), "r", "3.5.0", Extras())
    assert "secret" not in str(e.value)
