"""Which nodes of a pool cannot take its config, before the rollout reaches them
(model/planning/poolfit): the NodesCannotApply condition naming each node, its OS and the
fields, nodes that said nothing assumed able, the message bounded."""

from __future__ import annotations

from mcd.model.machineconfig import empty_machine_config
from mcd.model.planning.applicability import HostSupport
from mcd.model.planning.poolfit import Member, condition, unfit
from tests.builders import mc

BARE = HostSupport(os="Debian 13")
OSTREE = HostSupport(os="RHCOS", os_image="rpm-ostree", kernel_arguments="rpm-ostree")


def test_each_node_that_cannot_apply_is_named_with_its_os_and_fields() -> None:
    target = mc("rendered-2", osImageURL="quay.io/os@sha256:bb", kernelArguments=["x"])
    current = mc("rendered-1", osImageURL="quay.io/os@sha256:aa")
    members = [
        Member("silent", current, None),
        Member("fine", current, OSTREE),
        Member("bare", current, BARE),
        Member("nameless", None, HostSupport()),
    ]
    lines = unfit(target, members, empty_machine_config())
    assert lines == [
        "bare (Debian 13): spec.osImageURL needs rpm-ostree or bootc; the node has neither; "
        "spec.kernelArguments needs a boot loader mcd can drive (rpm-ostree, GRUB with "
        "/etc/default/grub, or grubby with BLS entries); the node has none",
        "nameless (unknown OS): spec.osImageURL needs rpm-ostree or bootc; the node has "
        "neither; spec.kernelArguments needs a boot loader mcd can drive (rpm-ostree, GRUB "
        "with /etc/default/grub, or grubby with BLS entries); the node has none",
    ]
    status, reason, message = condition("rendered-2", lines)
    assert (status, reason) == (True, "FieldsNotApplicable")
    assert message == "2 node(s) cannot apply rendered-2: " + " | ".join(lines)


def test_a_node_on_the_target_already_is_fit() -> None:
    target = mc("rendered-2", kernelArguments=["x"])
    assert unfit(target, [Member("n", target, BARE)], empty_machine_config()) == []
    assert condition("rendered-2", []) == (
        False, "AllNodesCanApply", "every node that reported its host can apply rendered-2"
    )  # fmt: skip


def test_the_message_is_cut_to_1500_characters() -> None:
    lines = [f"node-{i:03} (Debian 13): spec.osImageURL needs rpm-ostree" for i in range(60)]
    _, _, message = condition("rendered-2", lines)
    assert len(message) == 1500 and message.endswith("...")
    fits = ["n" * (1500 - len("1 node(s) cannot apply r: "))]
    assert condition("r", fits)[2] == "1 node(s) cannot apply r: " + fits[0]
