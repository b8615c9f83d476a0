"""Kernel arguments the boot loader would drop or misparse are refused at the one gate, each
naming its field (issue 41, 8).

GRUB's script lexer (``grub-core/script/yylex.l``) reads every argument mcd hands a boot
loader: the GRUB drop-in's arguments land in ``grub.cfg``'s ``linux`` line, and a BLS
entry's ``options`` line (grubby's, rpm-ostree's) becomes the same script through GRUB's
``blscfg``. In that lexer ``#`` starting a word is a comment to the end of the line, ``"``
and ``'`` quote, ``\\`` escapes, ``$`` expands a variable, ``{ }`` are blocks and
``| & ; < >`` end the command: an argument using any of them reaches the kernel other than
written, or not at all.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcd.model import gate
from mcd.model.osupdate.kargs import (
    GRUB_SPECIAL,
    boot_loader_problem,
    split_kernel_arguments,
)
from mcd.model.planning.applicability import GRUB, GRUBBY, RPM_OSTREE, HostSupport
from mcd.model.planning.poolfit import Member, unfit
from tests.builders import mc

ORDINARY = st.characters(
    min_codepoint=0x21, max_codepoint=0x7E, blacklist_characters=GRUB_SPECIAL + '"#'
)
"""Printable ASCII GRUB takes as word characters (``#`` only inside a word)."""
word = st.text(ORDINARY, min_size=1, max_size=12)
inner_hash = st.builds(lambda a, b: f"{a}#{b}", word, st.text(ORDINARY, max_size=6))
quoted = st.builds(lambda k, v: f'{k}="{v}"', word, st.text(ORDINARY | st.just(" "), max_size=12))
argument = st.one_of(word, inner_hash, quoted)
entry = st.lists(argument, min_size=1, max_size=4).map(" ".join)


@given(st.lists(entry, min_size=1, max_size=5))
def test_what_grub_reads_as_written_passes_the_gate(entries: list[str]) -> None:
    assert all(boot_loader_problem(e) is None for e in entries)
    assert gate.problems(mc("rendered-2", kernelArguments=entries)) == []


@given(st.lists(entry, max_size=3), entry, st.sampled_from(GRUB_SPECIAL), st.data())
def test_a_special_character_anywhere_is_refused_naming_its_entry(
    before: list[str], good: str, special: str, data: st.DataObject
) -> None:
    at = data.draw(st.integers(0, len(good)))
    bad = good[:at] + special + good[at:]
    problems = gate.problems(mc("rendered-2", kernelArguments=[*before, bad, good]))
    assert len(problems) == 1
    assert problems[0].startswith(f"spec.kernelArguments[{len(before)}]: invalid kernel argument ")
    assert special in problems[0].split(": special to GRUB")[0].rsplit(" has ", 1)[1]


@given(st.lists(argument, max_size=3), word, st.lists(argument, max_size=3))
def test_an_argument_starting_with_hash_is_refused_as_a_comment(
    before: list[str], rest: str, after: list[str]
) -> None:
    value = " ".join([*before, "#" + rest, *after])
    problem = boot_loader_problem(value)
    assert problem is not None
    assert f'"#{rest}" starts with #: GRUB reads it and every argument after it as a comment' in (
        problem
    )


@given(entry, st.data())
def test_an_unbalanced_double_quote_is_refused(value: str, data: st.DataObject) -> None:
    at = data.draw(st.integers(0, len(value)))
    bad = value[:at] + '"' + value[at:]
    assert value.count('"') % 2 == 0
    assert (boot_loader_problem(bad) or "").startswith("unbalanced double quote")


@given(st.text(max_size=30))
def test_whatever_the_gate_lets_through_grub_reads_as_written(value: str) -> None:
    """The invariant, stated apart from the rule: an entry the gate accepts has no character
    GRUB's lexer treats specially, balanced double quotes, no control character (a newline
    would end GRUB's line) and no argument that GRUB would take as a comment or a token."""
    if gate.problems(mc("rendered-2", kernelArguments=[value])):
        return
    assert not set(value) & set(GRUB_SPECIAL)
    assert value.count('"') % 2 == 0
    assert not re.search(r"[\x00-\x1f\x7f]", value)
    assert not any(a.startswith("#") or a in ("[[", "]]") for a in split_kernel_arguments(value))


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("#quiet", '"#quiet" starts with #'),
        ("nosmt #debug", '"#debug" starts with #'),
        ('acpi_osi="Windows', "unbalanced double quote"),
        ("it's", "\"it's\" has '"),
        ("console=$tty", '"console=$tty" has $'),
        ("a=b\\c", '"a=b\\\\c" has \\'),
        ("a=1;reboot", '"a=1;reboot" has ;'),
        ("x=a|b", '"x=a|b" has |'),
        ("x={a}", '"x={a}" has { }'),
        ("[[", '"[[" is a reserved word'),
        ("a\nb", "contains the control character U+000A"),
    ],
)
def test_each_refusal_names_the_field_and_why(value: str, why: str) -> None:
    problems = gate.problems(mc("rendered-2", kernelArguments=["nosmt", value]))
    assert len(problems) == 1 and problems[0].startswith("spec.kernelArguments[1]: ")
    assert why in problems[0]


@pytest.mark.parametrize(
    "value",
    ["nosmt", "mitigations=auto,nosmt", 'acpi_osi="Windows 2020"', "a#b", "rd.break=pre-mount",
     "isolcpus=1-3,5", "console=ttyS0,115200n8", "systemd.unit=multi-user.target", "`x`"],
)  # fmt: skip
def test_ordinary_arguments_pass(value: str) -> None:
    assert gate.problems(mc("rendered-2", kernelArguments=[value])) == []


def test_the_pool_condition_names_the_nodes_before_the_rollout_reaches_them() -> None:
    """The same rule feeds ``NodesCannotApply``: every node that drives kernel arguments is
    named (GRUB drop-in, grubby, rpm-ostree); a node with no boot loader mcd drives says that
    instead; a node whose list does not change is not judged."""
    target = mc("rendered-2", kernelArguments=["nosmt", "#quiet"])
    current = mc("rendered-1", kernelArguments=["nosmt"])
    hosts = {
        "deb": HostSupport("Debian GNU/Linux 12", "", GRUB, 252),
        "fed": HostSupport("Fedora Linux 42", "", GRUBBY, 257),
        "rhcos": HostSupport("rhcos 9.6", RPM_OSTREE, RPM_OSTREE, 252),
    }
    lines = unfit(target, [Member(n, current, h) for n, h in hosts.items()], mc("mco-empty-mc"))
    assert len(lines) == 3
    for line in lines:
        assert 'spec.kernelArguments "#quiet": "#quiet" starts with #' in line
    assert unfit(target, [Member("same", target, hosts["deb"])], mc("mco-empty-mc")) == []
