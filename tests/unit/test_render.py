"""Rendering a pool's MachineConfigs (upstream TestMergeMachineConfigs and the Ignition merge)."""

from __future__ import annotations

import copy
import gzip
from typing import Any

import pytest

from mcd.model.ignition import merge as ignition_merge
from mcd.model.ignition.dataurl import encode_data_url
from mcd.model.ignition.goshape import go_shape
from mcd.model.pool.render import (
    GENERATED_BY,
    ROLE_LABEL,
    RenderError,
    is_rendered_for,
    merge_order,
    render,
)

Obj = dict[str, Any]
V = "3.5.0"


def mc(name: str, role: str = "worker", config: Obj | None = None, **spec: Any) -> Obj:
    body: Obj = {"metadata": {"name": name, "labels": {ROLE_LABEL: role}}, "spec": dict(spec)}
    if config is not None:
        body["spec"]["config"] = config
    return body


def ign(**sections: Any) -> Obj:
    return {"ignition": {"version": V}, **sections}


def users(*entries: Obj) -> Obj:
    return ign(passwd={"users": list(entries)})


def files(*entries: Obj) -> Obj:
    return ign(storage={"files": list(entries)})


def plain(path: str, data: str) -> Obj:
    return {"path": path, "mode": 420, "contents": {"source": f"data:,{data}"}}


def test_fips_alone_sets_every_default() -> None:
    out = render("worker", [mc("fips", fips=True)])
    assert out.spec == {
        "osImageURL": "",
        "baseOSExtensionsContainerImage": "",
        # as upstream stores clarketm/json of Ignition's Config struct: empty structs go
        "config": {"ignition": {"version": V}},
        "kernelArguments": [],
        "extensions": [],
        "fips": True,
        "kernelType": "default",
    }


def test_everything_merges_as_upstream() -> None:
    """Upstream's second case: image, kargs, kernel type, extensions, users, a 2.2 config."""
    configs = [
        mc("osimageurl", osImageURL="overriddenURL"),
        mc("kargs", kernelArguments=["testKarg", "kargFromIgnitionDowngrade"]),
        mc("kerneltype", kernelType="realtime"),
        mc("extension", extensions=["testExtensions"]),
        mc("ssh", config=users({"name": "core", "sshAuthorizedKeys": ["5678"]})),
        mc("fips", fips=True),
        mc("passwd", config=users({"name": "core", "passwordHash": "testpass"})),
        mc("ssh", config=users({"name": "core", "sshAuthorizedKeys": ["1234"]})),
        mc("v2", config={"ignition": {"version": "2.2.0"}}),
    ]
    out = render("worker", configs)
    assert out.spec["osImageURL"] == "overriddenURL"
    assert out.spec["kernelArguments"] == ["testKarg", "kargFromIgnitionDowngrade"]
    assert out.spec["kernelType"] == "realtime"
    assert out.spec["extensions"] == ["testExtensions"]
    assert out.spec["fips"] is True
    assert out.spec["config"] == go_shape(
        omit_empty_structs=True,
        config=users(
            {"name": "core", "sshAuthorizedKeys": ["5678", "1234"], "passwordHash": "testpass"}
        ),
    )


def test_custom_pool_overrides_worker_and_names_order_the_rest() -> None:
    """Upstream's third case: bbb overrides aaa by name; infra's ccc overrides worker's ddd
    (custom pool configs go last), and the gzip of ddd does not leak onto ccc's contents."""
    gz = encode_data_url(gzip.compress(b"old"))
    gzipped = {"path": "/etc/test2", "mode": 420, "contents": {"source": gz, "compression": "gzip"}}
    configs = [
        mc("ccc", role="infra", config=files(plain("/etc/test2", "new"))),
        mc("aaa", config=files(plain("/etc/test1", "old"))),
        mc("bbb", config=files(plain("/etc/test1", "new"))),
        mc("ddd", config=files(gzipped)),
    ]
    out = render("infra", configs)
    assert out.sources == ("aaa", "bbb", "ddd", "ccc")
    new = {"source": "data:,new"}
    assert out.spec["config"]["storage"]["files"] == [
        {
            "path": "/etc/test1",
            "mode": 420,
            "contents": new,
            "overwrite": True,
        },
        {
            "path": "/etc/test2",
            "mode": 420,
            "contents": new,
            "overwrite": True,
        },
    ]


@pytest.mark.parametrize(
    ("parent", "child", "expected"),
    [
        # keyed lists merge entries field by field and append new ones
        (
            ign(systemd={"units": [{"name": "a.service", "enabled": True, "contents": "A"}]}),
            ign(systemd={"units": [{"name": "a.service", "contents": "B"}, {"name": "b.service"}]}),
            ign(
                systemd={
                    "units": [
                        {"name": "a.service", "enabled": True, "contents": "B"},
                        {"name": "b.service"},
                    ]
                }
            ),
        ),
        # dropins merge by name inside their unit
        (
            ign(systemd={"units": [{"name": "a.service", "dropins": [{"name": "x.conf", "contents": "1"}]}]}),
            ign(systemd={"units": [{"name": "a.service", "dropins": [{"name": "y.conf", "contents": "2"}]}]}),
            ign(systemd={"units": [{"name": "a.service", "dropins": [{"name": "x.conf", "contents": "1"}, {"name": "y.conf", "contents": "2"}]}]}),
        ),
        # files, directories and links share one key space: a link replaces a file
        (
            ign(storage={"files": [{"path": "/etc/a"}, {"path": "/etc/b"}]}),
            ign(storage={"links": [{"path": "/etc/a", "target": "/etc/b"}]}),
            ign(storage={"files": [{"path": "/etc/b"}], "links": [{"path": "/etc/a", "target": "/etc/b"}]}),
        ),
        # append lists are appended, not merged
        (
            ign(storage={"files": [{"path": "/etc/a", "append": [{"source": "data:,1"}]}]}),
            ign(storage={"files": [{"path": "/etc/a", "append": [{"source": "data:,1"}]}]}),
            ign(storage={"files": [{"path": "/etc/a", "append": [{"source": "data:,1"}, {"source": "data:,1"}]}]}),
        ),
        # kernel arguments: shouldExist and shouldNotExist share a key space
        (
            ign(kernelArguments={"shouldExist": ["a", "b"]}),
            ign(kernelArguments={"shouldNotExist": ["a"]}),
            ign(kernelArguments={"shouldExist": ["b"], "shouldNotExist": ["a"]}),
        ),
        # a member the child leaves out keeps the parent's value
        (
            ign(passwd={"users": [{"name": "core", "passwordHash": "x"}]}),
            ign(passwd={"users": [{"name": "core", "sshAuthorizedKeys": ["k"]}]}),
            ign(passwd={"users": [{"name": "core", "passwordHash": "x", "sshAuthorizedKeys": ["k"]}]}),
        ),
    ],
)  # fmt: skip
def test_ignition_merge_rules(parent: Obj, child: Obj, expected: Obj) -> None:
    before = copy.deepcopy((parent, child))
    assert ignition_merge.merge(parent, child) == expected
    assert (parent, child) == before


def test_spec_2_2_is_translated() -> None:
    v2 = {
        "ignition": {"version": "2.2.0"},
        "storage": {
            "files": [
                {"filesystem": "root", "path": "/etc/log", "append": True,
                 "contents": {"source": "data:,x"}},
            ]
        },
        "systemd": {"units": [{"name": "a.service", "enable": True}]},
    }  # fmt: skip
    assert ignition_merge.to_spec3(v2) == {
        "ignition": {"version": V},
        "storage": {
            "files": [{"path": "/etc/log", "append": [{"source": "data:,x"}], "overwrite": False}]
        },
        "systemd": {"units": [{"name": "a.service", "enabled": True}]},
    }


def test_name_is_stable_and_follows_the_spec() -> None:
    a = render("worker", [mc("00-a", config=files(plain("/etc/a", "1")))])
    again = render("worker", [mc("00-a", config=files(plain("/etc/a", "1")))])
    changed = render("worker", [mc("00-a", config=files(plain("/etc/a", "2")))])
    assert a.name == again.name
    assert a.name != changed.name
    assert is_rendered_for(a.name, "worker")
    assert not is_rendered_for(a.name, "infra")
    assert render("infra", [mc("00-a", config=files(plain("/etc/a", "1")))]).name.startswith(
        "rendered-infra-"
    )


def test_generated_configs_cannot_set_the_image() -> None:
    generated = mc("00-gen", osImageURL="from-a-controller")
    generated["metadata"]["annotations"] = {GENERATED_BY: "0.1.0"}
    out = render("worker", [generated, mc("10-user", osImageURL="")])
    assert out.spec["osImageURL"] == ""


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        ([], "no MachineConfigs found matching selector"),
        ([{"metadata": {"name": "nolabels"}, "spec": {}}], "cannot find label in MachineConfig nolabels"),
        (
            [mc("a", kernelType="realtime"), mc("b", extensions=["kernel-devel"])],
            "installing kernel-devel extension is not supported with kernelType: realtime",
        ),
        ([mc("a", kernelType="fast")], "kernelType=fast is invalid"),
        (
            [mc("bad", config={"ignition": {"version": "9.9.9"}})],
            'MachineConfig bad: spec.config.ignition.version: unsupported Ignition spec version "9.9.9"',
        ),
        (
            [mc("rel", config=files(plain("etc/relative", "x")))],
            "MachineConfig rel: ",
        ),
    ],
)  # fmt: skip
def test_render_errors(configs: list[Obj], message: str) -> None:
    with pytest.raises(RenderError) as e:
        render("worker", configs)
    assert str(e.value).startswith(message)


def test_merge_order_puts_worker_role_first() -> None:
    order = merge_order([mc("a", role="infra"), mc("z"), mc("b")])
    assert [o["metadata"]["name"] for o in order] == ["b", "z", "a"]
