"""``mcd plan``'s text for a node: the host line, how each boot loader gets the kernel
arguments, and several actions listed in order (model/planning/describe)."""

from __future__ import annotations

import pytest

from mcd.model.planning.applicability import HostSupport
from mcd.model.planning.describe import describe_plan
from mcd.model.planning.plan import make_plan
from tests.builders import file_entry, mc


def lines(host: HostSupport, old: list[str], new: list[str]) -> list[str]:
    plan = make_plan(mc("a", kernelArguments=old), mc("b", kernelArguments=new), host=host)
    return describe_plan(plan).splitlines()


@pytest.mark.parametrize(
    ("host", "node", "kargs"),
    [
        (HostSupport(os="Debian 13", kernel_arguments="grub", systemd_version=257),
         "Node: Debian 13 (OS image: none; kernel arguments: grub; systemd 257)",
         "Kernel arguments: GRUB drop-in /etc/default/grub.d/99-mcd-kernel-arguments.cfg then "
         "update-grub: a b=1 c"),
        (HostSupport(os="Fedora 42", kernel_arguments="grubby"),
         "Node: Fedora 42 (OS image: none; kernel arguments: grubby; systemd unknown)",
         "Kernel arguments: grubby --update-kernel=ALL: a b=1 c"),
        (HostSupport(os="RHCOS", os_image="rpm-ostree", kernel_arguments="rpm-ostree",
                     systemd_version=256),
         "Node: RHCOS (OS image: rpm-ostree; kernel arguments: rpm-ostree; systemd 256)",
         "Kernel arguments: rpm-ostree kargs --delete-if-present=a --append=a --append=b=1 "
         "--append=c"),
    ],
)  # fmt: skip
def test_the_node_line_and_how_its_boot_loader_gets_the_arguments(
    host: HostSupport, node: str, kargs: str
) -> None:
    got = lines(host, ["a"], ["a", "b=1 c"])
    assert got[1] == node
    assert kargs in got


def test_a_root_without_an_os_says_what_it_does_not_apply() -> None:
    got = lines(HostSupport(), ["a"], ["b"])
    assert got[1] == "Node: unknown OS (OS image: none; kernel arguments: none; systemd unknown)"
    skipped = "not applying spec.kernelArguments of b: no OS under this root (no os-release)"
    assert f"Not applied: {skipped}" in got
    assert not any(line.startswith("Kernel arguments:") for line in got)


def test_no_arguments_left_is_said_as_none() -> None:
    got = lines(HostSupport(os="D", kernel_arguments="grubby"), ["a"], [])
    assert "Kernel arguments: grubby --update-kernel=ALL: (none)" in got


def test_several_actions_are_listed_in_order() -> None:
    ca = "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt"
    text = describe_plan(make_plan(mc("a"), mc("b", files=[file_entry(ca, "pem")])))
    both = "Restart coreos-update-ca-trust.service, Restart crio.service"
    assert f"  file {ca}: default policy for {ca} -> {both}" in text.splitlines()
    assert f"Actions: {both}" in text.splitlines()
