"""Render rules an admin sees in the rendered MachineConfig: the object owned by its pool, the
name that only the merged spec decides (stable across mcd versions: a new name rolls every
node), the kernel type and images the last config sets, and a merge that breaks the gate."""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import quote

import pytest

from mcd.model.pool.render import (
    GENERATED_BY,
    Rendered,
    RenderError,
    is_rendered_for,
    legacy_name,
    render,
    rendered_name,
)
from tests.unit.test_render import mc

Obj = dict[str, Any]
V = "3.5.0"


def files(*entries: Obj, **sections: Any) -> Obj:
    return {"ignition": {"version": V}, "storage": {"files": list(entries)}, **sections}


def plain(path: str, data: str, **extra: Any) -> Obj:
    return {"path": path, "mode": 420, "contents": {"source": f"data:,{quote(data)}"}, **extra}


def test_the_rendered_object_is_owned_by_its_pool() -> None:
    rendered = Rendered("rendered-worker-0123", {"fips": False}, ("00-worker",))
    pool = {"metadata": {"name": "worker", "uid": "u-1"}}
    assert rendered.object(pool, "mcd 0.1.0") == {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {
            "name": "rendered-worker-0123",
            "ownerReferences": [{
                "apiVersion": "machineconfiguration.openshift.io/v1",
                "kind": "MachineConfigPool",
                "name": "worker",
                "uid": "u-1",
                "controller": True,
                "blockOwnerDeletion": True,
            }],
            "annotations": {GENERATED_BY: "mcd 0.1.0"},
        },
        "spec": {"fips": False},
    }  # fmt: skip
    bare = rendered.object({}, "v")["metadata"]["ownerReferences"][0]
    assert (bare["name"], bare["uid"]) == ("", "")


def canonical_sha256(spec: Obj) -> str:
    """Canonical JSON: sorted keys, no spaces, UTF-8 as is."""
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def test_the_name_is_upstreams_md5_of_the_specs_yaml() -> None:
    spec = {"kernelType": "default", "config": {"ignition": {"version": V}}, "fips": False}
    reordered = {"fips": False, "config": {"ignition": {"version": V}}, "kernelType": "default"}
    assert rendered_name("infra", reordered) == rendered_name("infra", spec)
    assert rendered_name("infra", spec) != rendered_name("infra", dict(spec, fips=True))
    # pinned: upstream's render controller names the empty spec so (Go oracle,
    # tests/oracles/renderhash); the name of a spec must never change between mcd versions
    assert rendered_name("worker", {}) == "rendered-worker-3c4b955ca6c2518e160dc03b6e7c0ed7"


def test_the_names_mcd_gave_before_are_the_canonical_specs_sha256() -> None:
    spec = {"kernelType": "default", "config": {"ignition": {"version": V}}, "note": "caf\xe9"}
    assert legacy_name("infra", spec) == f"rendered-infra-{canonical_sha256(spec)[:32]}"
    pinned = hashlib.sha256(b'{"fips":false}').hexdigest()[:32]
    assert legacy_name("worker", {"fips": False}) == f"rendered-worker-{pinned}"


@pytest.mark.parametrize(
    ("name", "pool", "ours"),
    [
        ("rendered-worker-" + "0123456789abcdef" * 2, "worker", True),
        ("rendered-worker-" + "0123456789ABCDEF" * 2, "worker", False),
        ("rendered-worker-" + "0" * 31, "worker", False),
        ("rendered-worker-" + "0" * 33, "worker", False),
        ("rendered-worker-" + "g" * 32, "worker", False),
        ("rendered-worker-infra-" + "0" * 32, "worker", False),
        ("rendered-worker-infra-" + "0" * 32, "worker-infra", True),
        ("00-worker-" + "0" * 32, "worker", False),
    ],
)
def test_only_the_pools_own_rendered_names_are_its(name: str, pool: str, ours: bool) -> None:
    assert is_rendered_for(name, pool) is ours


def test_the_last_non_default_kernel_type_wins_and_kernel_devel_needs_default() -> None:
    configs = [mc("00-a", kernelType="realtime"), mc("10-b", kernelType="64k-pages"),
               mc("20-c", kernelType="default")]  # fmt: skip
    assert render("worker", configs).spec["kernelType"] == "64k-pages"
    with pytest.raises(RenderError) as e:
        render(
            "worker", [mc("00-a", kernelType="64k-pages"), mc("10-b", extensions=["kernel-devel"])]
        )
    assert str(e.value) == (
        "installing kernel-devel extension is not supported with kernelType: 64k-pages"
    )
    ok = render("worker", [mc("00-a", kernelType="default", extensions=["kernel-devel"])])
    assert ok.spec["extensions"] == ["kernel-devel"]


def test_the_last_config_setting_an_image_wins_for_both_images() -> None:
    configs = [
        mc("00-a", osImageURL="quay.io/a", baseOSExtensionsContainerImage="quay.io/ext-a"),
        mc("10-b", baseOSExtensionsContainerImage="quay.io/ext-b"),
        mc("20-c", osImageURL=""),
    ]
    spec = render("worker", configs).spec
    assert (spec["osImageURL"], spec["baseOSExtensionsContainerImage"]) == (
        "quay.io/a",
        "quay.io/ext-b",
    )


def test_every_file_gets_overwrite_true_unless_it_says_otherwise() -> None:
    config = files(plain("/etc/a", "1"), plain("/etc/b", "2", overwrite=False))
    out = render("worker", [mc("00-a", config=config)]).spec["config"]["storage"]["files"]
    assert [(f["path"], f["overwrite"]) for f in out] == [("/etc/a", True), ("/etc/b", False)]


def test_a_config_given_as_json_text_renders_as_the_object() -> None:
    config = files(plain("/etc/a", "1"))
    as_text = mc("00-a")
    as_text["spec"]["config"] = json.dumps(config)
    assert render("worker", [as_text]) == render("worker", [mc("00-a", config=config)])


def test_configs_each_valid_but_clashing_when_merged_are_refused_naming_the_field() -> None:
    unit_file = mc("00-a", config=files(plain("/etc/systemd/system/a.service", "[Unit]")))
    unit = mc("10-b", config={"ignition": {"version": V},
                              "systemd": {"units": [{"name": "a.service", "contents": "[Unit]"}]}})  # fmt: skip
    with pytest.raises(RenderError) as e:
        render("worker", [unit_file, unit])
    assert str(e.value) == (
        "rendered config is invalid: spec.config.storage.files[0].path: "
        '"/etc/systemd/system/a.service" conflicts with a systemd unit or dropin'
    )


def test_a_single_bad_config_names_itself_and_the_field() -> None:
    bad = mc("99-bad", config=files(plain("/etc/a", "1", mode=0o100000)))
    with pytest.raises(RenderError) as e:
        render("worker", [mc("00-ok"), bad])
    assert str(e.value).startswith("MachineConfig 99-bad: spec.config.storage.files[0].mode: ")
    no_spec = {"metadata": {"name": "00-x", "labels": {}}, "spec": "x"}
    with pytest.raises(RenderError) as e:
        render("worker", [no_spec])
    assert str(e.value) == "MachineConfig 00-x: spec: expected an object"
