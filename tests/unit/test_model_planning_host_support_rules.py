"""What a node's host can apply (model/planning/applicability): the annotation it publishes
read back strictly, and the refusal naming every field the host cannot apply and why."""

from __future__ import annotations

import pytest

from mcd.model.planning import applicability
from mcd.model.planning.applicability import (
    HOST_SUPPORT_ANNOTATION,
    HostSupport,
    host_support_of,
    inapplicable,
    refusal,
    support_from_annotation,
)
from tests.builders import mc


@pytest.fixture(autouse=True)
def _parse_each_annotation_afresh() -> None:
    """Short annotation values are parsed once and cached: parse them again under each test."""
    applicability._support_cached.cache_clear()


BOOTC = HostSupport(os="Fedora CoreOS 42", os_image="bootc", kernel_arguments="grub",
                    systemd_version=257)  # fmt: skip


def test_the_annotation_is_compact_sorted_json_and_reads_back() -> None:
    text = BOOTC.annotation()
    assert text == (
        '{"kernelArguments":"grub","os":"Fedora CoreOS 42","osImage":"bootc","systemdVersion":257}'
    )
    assert support_from_annotation(text) == BOOTC
    node = {"metadata": {"annotations": {HOST_SUPPORT_ANNOTATION: text}}}
    assert host_support_of(node) == BOOTC
    assert host_support_of({"metadata": {}}) is None


@pytest.mark.parametrize(
    ("value", "got"),
    [
        ('{"os": "x", "osImage": "", "kernelArguments": ""}', HostSupport("x", "", "", 0)),
        ('{"os": "x", "osImage": "", "kernelArguments": "", "systemdVersion": -5}',
         HostSupport("x", "", "", 0)),
        ('{"os": "' + "o" * 300 + '", "osImage": "", "kernelArguments": ""}',
         HostSupport("o" * 200, "", "", 0)),
        ('{"os": 5, "osImage": "", "kernelArguments": ""}', None),
        ('{"os": "x", "osImage": "yum", "kernelArguments": ""}', None),
        ('{"os": "x", "osImage": "", "kernelArguments": "lilo"}', None),
        ('{"os": "x", "osImage": "", "kernelArguments": "", "systemdVersion": "256"}', None),
        ("[1]", None),
        ("not json", None),
    ],
)  # fmt: skip
def test_an_annotation_mcd_did_not_write_is_not_trusted(
    value: str, got: HostSupport | None
) -> None:
    assert support_from_annotation(value) == got


def test_the_refusal_names_each_field_and_why_on_a_bootc_node() -> None:
    old = mc("a", osImageURL="quay.io/os@sha256:aa", kernelArguments=["a"])
    new = mc("b", osImageURL="quay.io/os@sha256:bb", extensions=["usbguard"],
             kernelType="realtime", kernelArguments=["a", "b=1"])  # fmt: skip
    found = inapplicable(old, new, BOOTC)
    assert refusal("b", BOOTC, found) == (
        "cannot apply b on this node (Fedora CoreOS 42): spec.extensions needs rpm-ostree; on a "
        'bootc node the image carries its kernel and packages; spec.kernelType "realtime" '
        "needs rpm-ostree; on a bootc node the image carries its kernel and packages"
    )  # what GRUB would misparse is the gate's, for every node (tests/unit/test_kargs_gate.py)


def test_a_node_with_no_tools_and_no_name_refuses_the_image_and_the_arguments() -> None:
    bare = HostSupport()
    old = mc("a", osImageURL="quay.io/os@sha256:aa")
    new = mc("b", osImageURL="quay.io/os@sha256:bb", kernelArguments=["x", "y"])
    assert refusal("b", bare, inapplicable(old, new, bare)) == (
        "cannot apply b on this node: spec.osImageURL needs rpm-ostree or bootc; the node has "
        "neither; spec.kernelArguments needs a boot loader mcd can drive (rpm-ostree, GRUB with "
        "/etc/default/grub, or grubby with BLS entries); the node has none"
    )


def test_grub_takes_safe_arguments_and_an_unchanged_list_is_never_judged() -> None:
    old = mc("a", kernelArguments=["it's"])
    assert inapplicable(old, mc("b", kernelArguments=["it's"]), BOOTC) == []
    assert inapplicable(mc("a"), mc("b", kernelArguments=["a=1", "b"]), BOOTC) == []
