"""Ignition's own merge of configs (``ign3.Merge``) and the translation of spec 2.2 documents
(``ParseAndConvertConfig``), as the render controller applies them to a pool's configs."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mcd.model.errors import ConfigError
from mcd.model.ignition import merge as ignition_merge
from mcd.model.ignition.parse import LATEST_VERSION

Obj = dict[str, Any]
V = LATEST_VERSION


def ign(**sections: Any) -> Obj:
    return {"ignition": {"version": V}, **sections}


def v2(**sections: Any) -> Obj:
    return {"ignition": {"version": "2.2.0"}, **sections}


def merged(parent: Obj, child: Obj) -> Obj:
    before = copy.deepcopy((parent, child))
    out = ignition_merge.merge(parent, child)
    assert (parent, child) == before  # neither input changes
    return out


# -- spec 2.2 -> 3 ---------------------------------------------------------------------------


def test_v2_files_directories_and_links_lose_their_filesystem() -> None:
    doc = v2(storage={
        "files": [{"filesystem": "root", "path": "/etc/a", "contents": {"source": "data:,a"}}],
        "directories": [{"filesystem": "root", "path": "/etc/d"}],
        "links": [{"filesystem": "root", "path": "/etc/l", "target": "/etc/a"}],
    })  # fmt: skip
    assert ignition_merge.to_spec3(doc) == ign(storage={
        # spec 2 files are overwritten by default (v23tov30)
        "files": [{"path": "/etc/a", "contents": {"source": "data:,a"}, "overwrite": True}],
        "directories": [{"path": "/etc/d"}],
        "links": [{"path": "/etc/l", "target": "/etc/a"}],
    })  # fmt: skip


def test_v2_append_true_appends_the_contents_and_false_is_a_plain_file() -> None:
    doc = v2(storage={"files": [
        {"path": "/etc/log", "append": True, "contents": {"source": "data:,x"}},
        {"path": "/etc/empty", "append": True},
        {"path": "/etc/plain", "append": False, "contents": {"source": "data:,p"}},
    ]})  # fmt: skip
    assert ignition_merge.to_spec3(doc)["storage"]["files"] == [
        # as v23tov30: an appended file is not overwritten; a missing source is ""
        {"path": "/etc/log", "append": [{"source": "data:,x"}], "overwrite": False},
        {"path": "/etc/empty", "append": [{"source": ""}], "overwrite": False},
        {"path": "/etc/plain", "contents": {"source": "data:,p"}, "overwrite": True},
    ]


def test_v2_enable_becomes_enabled_unless_enabled_is_set() -> None:
    doc = v2(systemd={"units": [
        {"name": "a.service", "enable": True},
        {"name": "b.service", "enable": True, "enabled": False},
        {"name": "c.service", "enable": False},
        {"name": "d.service"},
    ]})  # fmt: skip
    assert ignition_merge.to_spec3(doc)["systemd"]["units"] == [
        {"name": "a.service", "enabled": True},
        {"name": "b.service", "enabled": False},
        {"name": "c.service"},
        {"name": "d.service"},
    ]


def test_v2_networkd_without_units_and_config_references_are_dropped() -> None:
    doc = v2(networkd={}, ignition={"version": "2.2.0", "config": {}})
    assert ignition_merge.to_spec3(doc) == {"ignition": {"version": V}}


def test_a_spec3_document_is_copied_with_the_latest_version() -> None:
    doc: Obj = {"ignition": {"version": "3.1.0"}, "storage": {"files": [{"path": "/etc/a"}]}}
    out = ignition_merge.to_spec3(doc)
    assert out == {"ignition": {"version": V}, "storage": {"files": [{"path": "/etc/a"}]}}
    out["storage"]["files"][0]["path"] = "/etc/changed"
    assert doc["storage"]["files"][0]["path"] == "/etc/a"  # a copy, not the caller's
    assert doc["ignition"]["version"] == "3.1.0"
    assert ignition_merge.to_spec3(None) == {"ignition": {"version": V}}
    assert ignition_merge.to_spec3({}) == {"ignition": {"version": V}}


def test_a_document_that_does_not_parse_is_refused_naming_where() -> None:
    with pytest.raises(ConfigError) as e:
        ignition_merge.to_spec3({"ignition": {"version": V}, "storage": []}, "configs[2]")
    assert e.value.field == "configs[2].storage"
    with pytest.raises(ConfigError) as e:
        ignition_merge.to_spec3({"ignition": {}})
    assert e.value.field.startswith("spec.config")


# -- merge -----------------------------------------------------------------------------------


def test_the_child_replaces_scalars_and_keeps_what_it_leaves_out() -> None:
    parent = ign(passwd={"users": [{"name": "core", "passwordHash": "x", "uid": 1000}]})
    child = ign(passwd={"users": [{"name": "core", "passwordHash": "y"}]})
    assert merged(parent, child)["passwd"]["users"] == [
        {"name": "core", "passwordHash": "y", "uid": 1000}
    ]


def test_a_member_only_the_child_has_is_added_and_a_null_keeps_the_parents() -> None:
    parent = ign(kernelArguments={"shouldExist": ["a"]})
    child = ign(kernelArguments=None, systemd={"units": [{"name": "a.service"}]})
    assert merged(parent, child) == ign(
        kernelArguments={"shouldExist": ["a"]}, systemd={"units": [{"name": "a.service"}]}
    )


def test_keyed_lists_merge_by_their_key_and_append_new_entries_in_order() -> None:
    parent = ign(storage={"disks": [{"device": "/dev/sda", "wipeTable": False},
                                    {"device": "/dev/sdb"}]},
                 passwd={"groups": [{"name": "admins", "gid": 5}]})  # fmt: skip
    child = ign(storage={"disks": [{"device": "/dev/sdc"}, {"device": "/dev/sda",
                                                           "wipeTable": True}]},
                passwd={"groups": [{"name": "admins", "gid": 6}, {"name": "ops"}]})  # fmt: skip
    out = merged(parent, child)
    assert out["storage"]["disks"] == [
        {"device": "/dev/sda", "wipeTable": True},
        {"device": "/dev/sdb"},
        {"device": "/dev/sdc"},
    ]
    assert out["passwd"]["groups"] == [{"name": "admins", "gid": 6}, {"name": "ops"}]


def test_plain_string_lists_merge_by_value() -> None:
    parent = ign(passwd={"users": [{"name": "core", "sshAuthorizedKeys": ["k1", "k2"],
                                    "groups": ["wheel"]}]})  # fmt: skip
    child = ign(passwd={"users": [{"name": "core", "sshAuthorizedKeys": ["k2", "k3"],
                                   "groups": ["wheel", "sudo"]}]})  # fmt: skip
    user = merged(parent, child)["passwd"]["users"][0]
    assert user["sshAuthorizedKeys"] == ["k1", "k2", "k3"]
    assert user["groups"] == ["wheel", "sudo"]


def test_options_are_appended_not_merged() -> None:
    parent = ign(storage={"filesystems": [{"device": "/dev/sdb1", "options": ["-L", "data"],
                                           "mountOptions": ["ro"]}]})  # fmt: skip
    child = ign(storage={"filesystems": [{"device": "/dev/sdb1", "options": ["-L", "x"],
                                          "mountOptions": ["ro"]}]})  # fmt: skip
    fs = merged(parent, child)["storage"]["filesystems"][0]
    assert fs["options"] == ["-L", "data", "-L", "x"]
    assert fs["mountOptions"] == ["ro", "ro"]


def test_a_childs_directory_or_link_removes_the_parents_file_at_that_path() -> None:
    parent = ign(storage={"files": [{"path": "/etc/a"}, {"path": "/etc/b"}],
                          "directories": [{"path": "/etc/c"}]})  # fmt: skip
    child = ign(storage={"directories": [{"path": "/etc/a"}],
                         "files": [{"path": "/etc/c", "mode": 420}]})  # fmt: skip
    out = merged(parent, child)["storage"]
    assert out["files"] == [{"path": "/etc/b"}, {"path": "/etc/c", "mode": 420}]
    assert out["directories"] == [{"path": "/etc/a"}]


def test_a_child_without_the_list_still_removes_across_the_key_space() -> None:
    parent = ign(storage={"files": [{"path": "/etc/a"}, {"path": "/etc/b"}]})
    child = ign(storage={"links": [{"path": "/etc/b", "target": "/etc/a"}]})
    out = merged(parent, child)["storage"]
    assert out == {"files": [{"path": "/etc/a"}], "links": [{"path": "/etc/b", "target": "/etc/a"}]}


def test_entries_without_a_key_are_one_entry_and_a_null_key_is_empty() -> None:
    parent = ign(systemd={"units": [{"contents": "a"}]})
    child = ign(systemd={"units": [{"name": None, "enabled": True}]})
    # both have the key "": the same entry; the child's null name keeps the parent's (none)
    assert merged(parent, child)["systemd"]["units"] == [{"contents": "a", "enabled": True}]


def test_a_list_replacing_an_object_or_a_scalar_replacing_a_list_takes_the_childs() -> None:
    assert merged({"a": {"x": 1}}, {"a": [1]}) == {"a": [1]}
    assert merged({"a": [1]}, {"a": "s"}) == {"a": "s"}
    assert merged({"a": [{"name": "x"}]}, {"a": [{"name": "x", "v": 1}]}) == {
        "a": [{"name": "x", "v": 1}]  # a list mcd does not key: every entry has the key ""
    }
