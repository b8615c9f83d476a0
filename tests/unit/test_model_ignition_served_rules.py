"""The served document's own files, byte for byte as upstream writes them, and a served
document taken apart again (model/ignition/served: ``served_config`` and ``unpack``)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from mcd.model.errors import ConfigError
from mcd.model.ignition.dataurl import decode_data_url, encode_data_url
from mcd.model.ignition.served import (
    CONTENT,
    ENCAPSULATED,
    KUBECONFIG,
    KUBELET_CA,
    NODE_ANNOTATIONS,
    Extras,
    served_config,
    unpack,
)

Obj = dict[str, Any]


def mc(config: Obj | None = None) -> Obj:
    return {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": "rendered-worker-1"},
        "spec": {"config": config or {"ignition": {"version": "3.5.0"}}, "osImageURL": "q/os"},
    }


def serve(machine_config: Obj, version: str = "3.5.0", extras: Extras | None = None) -> Obj:
    doc: Obj = json.loads(served_config(machine_config, "rendered-worker-1", version,
                                        extras or Extras()))  # fmt: skip
    return doc


def entries(doc: Obj) -> dict[str, Obj]:
    return {f["path"]: f for f in doc["storage"]["files"]}


def text(entry: Obj) -> str:
    return decode_data_url(entry["contents"]["source"]).decode()


def test_the_node_annotations_file_is_upstreams_compact_sorted_json() -> None:
    got = entries(serve(mc()))[NODE_ANNOTATIONS]
    assert text(got) == (
        '{"machineconfiguration.openshift.io/currentConfig":"rendered-worker-1",'
        '"machineconfiguration.openshift.io/desiredConfig":"rendered-worker-1",'
        '"machineconfiguration.openshift.io/firstPivotConfig":"rendered-worker-1",'
        '"machineconfiguration.openshift.io/state":"Done"}'
    )
    assert (got["overwrite"], got["mode"]) == (True, 0o644)


def test_the_content_file_is_indented_and_the_encapsulated_config_compact() -> None:
    config = mc()
    got = entries(serve(config))
    assert text(got[CONTENT]) == json.dumps(config, indent=4)
    assert text(got[CONTENT]).startswith('{\n    "apiVersion": ')
    encapsulated = text(got[ENCAPSULATED])
    assert " " not in encapsulated and "\n" not in encapsulated
    assert json.loads(encapsulated)["spec"]["config"] == {"ignition": {"version": "3.5.0"}}
    assert (got[ENCAPSULATED]["overwrite"], got[ENCAPSULATED]["mode"]) == (True, 0o644)


def test_the_served_body_is_compact_json() -> None:
    body = served_config(mc(), "rendered-worker-1", "3.5.0", Extras())
    assert b", " not in body and b'": ' not in body


def test_serving_never_changes_the_pools_machineconfig() -> None:
    config = mc({"ignition": {"version": "3.5.0"}, "kernelArguments": {"shouldExist": ["a"]}})
    before = copy.deepcopy(config)
    serve(config, "3.2.0", Extras(kubelet_ca=b"CA", kubeconfig=b"kc"))
    assert config == before


def test_an_existing_ca_entry_keeps_its_mode_and_owner_and_loses_its_appends() -> None:
    ca = {"path": KUBELET_CA, "mode": 0o600, "user": {"name": "core"},
          "contents": {"source": encode_data_url(b"old")},
          "append": [{"source": encode_data_url(b"more")}]}  # fmt: skip
    config = mc({"ignition": {"version": "3.5.0"}, "storage": {"files": [ca]}})
    got = entries(serve(config, extras=Extras(kubelet_ca=b"new")))[KUBELET_CA]
    assert text(got) == "new"
    assert (got["mode"], got["user"], "append" in got) == (0o600, {"name": "core"}, False)


def test_a_new_ca_entry_is_public_and_none_is_added_without_a_ca() -> None:
    got = entries(serve(mc(), extras=Extras(kubelet_ca=b"CA")))[KUBELET_CA]
    assert (text(got), got["mode"], got["overwrite"]) == ("CA", 0o644, True)
    assert KUBELET_CA not in entries(serve(mc()))


def test_a_file_mcd_adds_replaces_the_configs_entry_at_that_path() -> None:
    mine = {"path": NODE_ANNOTATIONS, "mode": 0o600, "contents": {"source": "data:,x"}}
    doc = serve(mc({"ignition": {"version": "3.5.0"}, "storage": {"files": [mine]}}))
    paths = [f["path"] for f in doc["storage"]["files"]]
    assert paths.count(NODE_ANNOTATIONS) == 1
    assert entries(doc)[NODE_ANNOTATIONS]["mode"] == 0o644


def test_a_config_that_does_not_parse_is_refused_naming_spec_config() -> None:
    with pytest.raises(ConfigError) as e:
        serve(mc({"ignition": {"version": "9.9.9"}}))
    assert str(e.value).startswith(
        "spec.config.ignition.version: unsupported Ignition spec version"
    )


@pytest.mark.parametrize("version", ["2.2.0", "3.1.0", "3.5.0"])
def test_a_served_document_unpacks_to_the_machineconfig_and_the_servers_files(
    version: str,
) -> None:
    config = mc({"ignition": {"version": "3.5.0"},
                 "storage": {"files": [{"path": "/etc/a", "contents": {"source": "data:,x"}}]}})  # fmt: skip
    doc = serve(config, version, Extras(kubelet_ca=b"CA", kubeconfig=b"kc"))
    got = unpack(doc)
    assert got.machine_config == config
    assert [(p, m) for p, _, m in got.extras] == [
        (KUBELET_CA, 0o644), (NODE_ANNOTATIONS, 0o644), (KUBECONFIG, 0o600), (CONTENT, 0o600)
    ]  # fmt: skip
    assert {p: d for p, d, _ in got.extras}[KUBECONFIG] == b"kc"
    plain = unpack(serve(config, version))
    assert [p for p, _, _ in plain.extras] == [NODE_ANNOTATIONS, CONTENT]


def served_with_content(data: bytes) -> Obj:
    return {"ignition": {"version": "3.5.0"},
            "storage": {"files": [{"path": CONTENT, "contents": {"source": encode_data_url(data)}}]}}  # fmt: skip


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"ignition": {"version": "3.5.0"}},
         f"the served config has no {CONTENT}: not from a machine-config-server"),
        (served_with_content(b"{not json"), f"{CONTENT}: not JSON"),
        (served_with_content(b"[1, 2]"), f"{CONTENT}: not a MachineConfig"),
    ],
)  # fmt: skip
def test_a_document_not_from_a_server_is_refused_by_name(doc: Obj, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        unpack(doc)
    assert str(e.value) == message
