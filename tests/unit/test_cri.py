"""The CRI adapter (issue 32): crictl on the node's CRI-O socket, the node's own crictl
through chroot when the root carries one; the runtime's message without crictl's log prefix."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from mcd.host.cri import Cri, CriError
from mcd.host.rootfs import Root
from mcd.host.runner import CommandError, CommandResult, Runner


class Recording(Runner):
    def __init__(self, code: int = 0, stderr: str = "") -> None:
        super().__init__()
        self.calls: list[list[str]] = []
        self.code, self.stderr = code, stderr

    def run(self, argv: Sequence[str], *, check: bool = True, secret: Sequence[int] = (),
            timeout: float | None = None) -> CommandResult:  # fmt: skip
        self.calls.append(list(argv))
        result = CommandResult(tuple(argv), self.code, "", self.stderr)
        if check and self.code:
            raise CommandError(" ".join(argv), result, f"exit status {self.code}")
        return result


def test_the_agents_crictl_on_the_nodes_socket(tmp_path: Path) -> None:
    runner = Recording()
    Cri(Root(tmp_path), runner).pull("quay.io/a@sha256:" + "a" * 64)
    assert runner.calls == [["crictl", "--runtime-endpoint",
                             f"unix://{tmp_path}/var/run/crio/crio.sock", "--timeout", "60s",
                             "pull", "quay.io/a@sha256:" + "a" * 64]]  # fmt: skip


def test_the_nodes_own_crictl_through_chroot(tmp_path: Path) -> None:
    (tmp_path / "usr/bin").mkdir(parents=True)
    (tmp_path / "usr/bin/crictl").touch()
    runner = Recording(code=1)
    assert not Cri(Root(tmp_path), runner).image_present("img")
    assert runner.calls == [["chroot", str(tmp_path), "crictl", "--runtime-endpoint",
                             "unix:///var/run/crio/crio.sock", "--timeout", "60s",
                             "inspecti", "-q", "img"]]  # fmt: skip


def test_a_failed_pull_says_the_runtimes_words(tmp_path: Path) -> None:
    runner = Recording(code=1, stderr="E0101 noise\nFATA[0001] pulling image: manifest unknown\n")
    with pytest.raises(CriError) as e:
        Cri(Root(tmp_path), runner).pull("img")
    assert str(e.value) == "pulling image: manifest unknown"
