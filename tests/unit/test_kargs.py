"""Kernel arguments (upstream TestKernelAguments)."""

from __future__ import annotations

import pytest

from mcd.model.osupdate.kargs import (
    missing_kernel_arguments,
    parse_kernel_arguments,
    rpm_ostree_kargs,
    split_kernel_arguments,
)
from mcd.model.planning.plan import make_plan
from tests.builders import mc


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("nosmt", ["nosmt"]),
        (" baz=test bar=hello world", ["baz=test", "bar=hello", "world"]),
        ('bar="hello world"', ['bar="hello world"']),
        ("a\tb\nc  d", ["a", "b", "c", "d"]),
        ("", []),
        ('x="unterminated quote y', ['x="unterminated quote y']),
    ],
)
def test_split(entry: str, expected: list[str]) -> None:
    assert split_kernel_arguments(entry) == expected


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ([], [], []),
        ([], ["nosmt"], ["--append=nosmt"]),
        (["nosmt"], [], ["--delete-if-present=nosmt"]),
        (["foo=bar", "foo=baz"], ["foo=bar", "foo=baz", "nosmt"],
         ["--delete-if-present=foo=bar", "--delete-if-present=foo=baz",
          "--append=foo=bar", "--append=foo=baz", "--append=nosmt"]),
        ([], [" baz=test bar=\"hello world\""], ["--append=baz=test", '--append=bar="hello world"']),
        (["hugepages=1G hugepages=1G"], ["hugepages=1G"],
         ["--delete-if-present=hugepages=1G", "--delete-if-present=hugepages=1G",
          "--append=hugepages=1G"]),
    ],
)  # fmt: skip
def test_rpm_ostree_kargs(old: list[str], new: list[str], expected: list[str]) -> None:
    assert rpm_ostree_kargs(old, new) == expected


def test_plan_carries_kargs_only_when_they_change() -> None:
    plan = make_plan(mc("a", kernelArguments=["a"]), mc("b", kernelArguments=["a", "b=c d"]))
    assert plan.kernel_arguments == (
        "--delete-if-present=a", "--append=a", "--append=b=c", "--append=d",
    )  # fmt: skip
    assert (
        make_plan(mc("a", kernelArguments=["a"]), mc("b", kernelArguments=["a"])).kernel_arguments
        == ()
    )


def test_missing_kernel_arguments() -> None:
    assert parse_kernel_arguments(["a b", "c"]) == ["a", "b", "c"]
    assert missing_kernel_arguments(["a", "b=1"], "a root=/dev/sda b=2\n") == ["b=1"]
