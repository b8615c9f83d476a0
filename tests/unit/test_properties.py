"""Property-based tests: the parser never crashes, diff and plan of a config with itself are empty."""

from __future__ import annotations

import dataclasses
import json
import string
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcd.model.disruption.policy import NONE
from mcd.model.errors import ConfigError
from mcd.model.ignition.dataurl import decode_data_url, encode_data_url
from mcd.model.machineconfig import MachineConfig, load_machine_config, machine_config_from_object
from mcd.model.osupdate.imagemode import argument_problem
from mcd.model.planning.diff import diff_machine_configs, file_changes, unit_changes
from mcd.model.planning.plan import Cost, make_plan

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=30,
)

KEYS = ["ignition", "version", "storage", "files", "path", "contents", "source", "compression",
        "mode", "user", "group", "id", "name", "systemd", "units", "dropins", "enabled", "mask",
        "passwd", "users", "sshAuthorizedKeys", "passwordHash", "append", "overwrite", "spec",
        "config", "metadata", "kind", "kernelArguments", "extensions", "fips", "kernelType",
        "osImageURL", "disks", "links", "directories", "filesystem", "verification", "hash"]  # fmt: skip
VERSIONS = ["2.2.0", "3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0", "1.0.0", ""]

shaped_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 5000) | st.sampled_from(VERSIONS)
    | st.sampled_from(["/etc/a", "rel", "/etc/../x", "data:,x", "data:;base64,@@", "gzip", "xz",
                       "a.service", "core"]),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(KEYS), children, max_size=6),
    max_leaves=40,
)  # fmt: skip


def _parse_or_config_error(data: bytes | str) -> MachineConfig | None:
    try:
        return load_machine_config(data)
    except ConfigError:
        return None


@SETTINGS
@given(st.binary(max_size=2000))
def test_any_bytes_parse_or_raise_config_error(data: bytes) -> None:
    _parse_or_config_error(data)


@SETTINGS
@given(json_values)
def test_any_yaml_document_parses_or_raises_config_error(doc: Any) -> None:
    _parse_or_config_error(yaml.safe_dump(doc))
    _parse_or_config_error(json.dumps(doc))


@SETTINGS
@given(shaped_values)
def test_config_shaped_documents_never_crash(doc: Any) -> None:
    for candidate in (doc, {"spec": {"config": doc}}, {"ignition": {"version": "3.4.0"}, **(
            doc if isinstance(doc, dict) else {})}):  # fmt: skip
        try:
            cfg = machine_config_from_object(candidate)
        except ConfigError:
            continue
        try:  # whatever the content: a plan, or upstream's Degraded refusal naming the field
            plan = make_plan(cfg, cfg)
        except ConfigError as e:  # Ignition's rules the loader leaves to the diff (storage)
            assert str(e).startswith("could not calculate config diff: parsing old Ignition")
            assert "spec.config." in str(e)
            continue
        assert plan.reconcilable or plan.reason


PRINTABLE = st.characters(exclude_categories=("Cc", "Cs"), include_characters="\t\n")
ONE_LINE = st.characters(exclude_categories=("Cc", "Cs"))
"""Text the gate lets through (control characters are refused: tests/unit/test_gate.py)."""
paths = st.lists(st.text(string.ascii_lowercase + "-_", min_size=1, max_size=8), min_size=1,
                 max_size=3).map(lambda parts: "/etc/" + "/".join(parts))  # fmt: skip
files = st.lists(
    st.fixed_dictionaries(
        {"path": paths, "mode": st.sampled_from([0o644, 0o600, 0o755]),
         "contents": st.fixed_dictionaries({"source": st.binary(max_size=40).map(encode_data_url)})}
    ),
    max_size=6,
    unique_by=lambda f: f["path"],
)  # fmt: skip
units = st.lists(
    st.fixed_dictionaries(
        {"name": st.text(string.ascii_lowercase, min_size=1, max_size=8).map(lambda s: s + ".service"),
         "enabled": st.booleans(), "contents": st.text(PRINTABLE, max_size=30)}
    ),
    max_size=4,
    unique_by=lambda u: u["name"],
)  # fmt: skip
machine_configs = st.builds(
    lambda fs, us, kargs, img: machine_config_from_object(
        {"metadata": {"name": "rendered"}, "spec": {
            "osImageURL": img, "kernelArguments": kargs,
            "config": {"ignition": {"version": "3.4.0"}, "storage": {"files": fs},
                       "systemd": {"units": us}}}}
    ),
    files, units, st.lists(st.text(string.ascii_lowercase + "= ", max_size=10), max_size=3),
    # an image the gate admits (one starting with '-' or naming a transport is refused: below)
    st.text(ONE_LINE, max_size=10).filter(lambda img: argument_problem(img) is None),
)  # fmt: skip


@SETTINGS
@given(machine_configs, st.text(ONE_LINE, max_size=10))
def test_an_image_the_gate_refuses_makes_any_plan_unreconcilable_naming_the_field(
    cfg: MachineConfig, tail: str
) -> None:
    bad = dataclasses.replace(cfg, os_image_url="-" + tail)
    plan = make_plan(cfg, bad)
    assert not plan.reconcilable
    assert "osImageURL: invalid image reference" in plan.reason


@SETTINGS
@given(machine_configs)
def test_diff_with_itself_is_empty_and_plan_needs_nothing(cfg: MachineConfig) -> None:
    assert diff_machine_configs(cfg, cfg).is_empty()
    assert not file_changes(cfg, cfg) and not unit_changes(cfg, cfg)
    plan = make_plan(cfg, cfg)
    assert plan.reconcilable
    assert plan.actions == (NONE,)
    assert not plan.drain and not plan.reboot
    assert plan.cost is Cost.NONE


@SETTINGS
@given(machine_configs, machine_configs)
def test_plan_between_any_two_configs_is_consistent(a: MachineConfig, b: MachineConfig) -> None:
    plan = make_plan(a, b)
    assert plan.reconcilable
    if plan.reboot:
        assert plan.drain
    old_paths = {f.path for f in a.ignition.files}
    new_paths = {f.path for f in b.ignition.files}
    differing = {p for p in old_paths & new_paths if a.ignition.file(p) != b.ignition.file(p)}
    assert set(plan.files.all()) == (old_paths ^ new_paths) | differing
    back = make_plan(b, a)
    assert set(back.files.added) == set(plan.files.removed)


@SETTINGS
@given(st.binary(max_size=200), st.booleans())
def test_data_url_round_trip(data: bytes, compress: bool) -> None:
    url = encode_data_url(data, compress=compress)
    cfg = machine_config_from_object(
        {"ignition": {"version": "3.4.0"}, "storage": {"files": [
            {"path": "/etc/x", "contents": {"source": url, "compression": "gzip" if compress else ""}}
        ]}}
    )  # fmt: skip
    assert cfg.ignition.files[0].data() == data
    if not compress:
        assert decode_data_url(url) == data
