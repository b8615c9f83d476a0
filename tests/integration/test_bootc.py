"""Image mode through bootc on a bootc host without rpm-ostree (issue 34), with the bootc
stand-in (``tests/fakes/bootc.py``) as the rpm-ostree tests use theirs: ``bootc switch``
stages the config's image, the boot into it is checked with ``bootc status --format=json``,
a failed switch rolls the update back, and what a bootc image carries itself (kernel type,
extensions) is refused by name."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from mcd.agent.bootloader.postboot import boot_problem
from mcd.agent.update.handles import Node
from mcd.agent.update.transaction import Outcome, UpdateError
from mcd.host.effects import HostEffects
from mcd.host.osupdate.bootc import Bootc, parse_status
from mcd.host.osupdate.rpmostree import RpmOstree
from mcd.host.rootfs import Root
from mcd.host.runner import CommandResult, Runner
from mcd.model.machineconfig import load_machine_config
from mcd.model.vocabulary import CURRENT_CONFIG_PATH
from tests.e2e.harness import make_root
from tests.fakes import bootc
from tests.fakes.memory_systemd import MemorySystemd
from tests.integration.applying import apply, current

BIN = Path(__file__).resolve().parents[1] / "fakes" / "bin"
IMAGE_A = "quay.io/fedora/fedora-bootc@sha256:" + "a" * 64
IMAGE_B = "quay.io/fedora/fedora-bootc@sha256:" + "b" * 64


class ChrootBootc(Runner):
    """The root's ``bootc`` is the stand-in: ``chroot ROOT bootc ...`` runs it."""

    def __init__(self, state: Path) -> None:
        super().__init__(env={**os.environ, "MCD_FAKE_BOOTC_STATE": str(state)})

    def run(
        self,
        argv: Sequence[str],
        *,
        check: bool = True,
        secret: Sequence[int] = (),
        timeout: float | None = None,
    ) -> CommandResult:
        if list(argv[:1]) == ["chroot"] and argv[2:3] == ["bootc"]:
            argv = [str(BIN / "bootc"), *argv[3:]]
        return super().run(argv, check=check, secret=secret, timeout=timeout)


@pytest.fixture
def host(tmp_path: Path) -> tuple[Path, Path, Node]:
    root = tmp_path / "root"
    make_root(root)  # ostree-booted
    (root / "usr/bin").mkdir(parents=True)
    (root / "usr/bin/bootc").write_text("")  # bootc in the root, no rpm-ostree
    (root / "etc/os-release").write_text('PRETTY_NAME="Fedora Linux 42 (bootc)"\nID=fedora\n')
    state = tmp_path / "bootc.json"
    bootc.save(state, bootc.new_state(IMAGE_A))
    runner = ChrootBootc(state)
    node = Node(
        Root(root), HostEffects(Root(root), MemorySystemd(root), runner), RpmOstree(Root(root))
    )
    return root, state, node


def test_a_bootc_host_is_detected_and_is_not_rpm_ostrees(host: tuple[Path, Path, Node]) -> None:
    _, _, node = host
    support = node.support()
    assert (support.os, support.os_image) == ("Fedora Linux 42 (bootc)", "bootc")
    assert not node.ostree


def test_switch_stages_the_configs_image_and_the_boot_into_it_is_checked(
    host: tuple[Path, Path, Node],
) -> None:
    root, state, node = host
    apply(root, node, "rendered-1", osImageURL=IMAGE_A)
    assert bootc.load(state)["staged"] is None  # already booted: nothing to switch
    assert apply(root, node, "rendered-2", osImageURL=IMAGE_B) is Outcome.REBOOT_PENDING
    s = bootc.load(state)
    assert s["staged"]["image"] == IMAGE_B
    assert ["switch", "--transport", "registry", IMAGE_B] in s["calls"]
    mc = load_machine_config((root / CURRENT_CONFIG_PATH.lstrip("/")).read_bytes())
    assert boot_problem(node, mc) == (
        f'expected target osImageURL "{IMAGE_B}", have "{IMAGE_A}"'
    )  # not booted yet
    assert bootc.boot_staged(state)
    assert boot_problem(node, mc) == ""


def test_an_image_downloaded_before_the_drain_boots_only_after_the_switch(
    host: tuple[Path, Path, Node],
) -> None:
    """Stage before you drain (issue 46): ``bootc switch --download-only`` pulls the image and
    stages it locked (a reboot now boots the old image); the update's switch after the
    drain unlocks it, and the boot after that is into the new image."""
    root, state, node = host
    apply(root, node, "rendered-1", osImageURL=IMAGE_A)
    Bootc(Root(root), node.effects.runner).download(IMAGE_B)
    s = bootc.load(state)
    assert s["calls"][-1] == ["switch", "--download-only", "--transport", "registry", IMAGE_B]
    assert s["staged"]["image"] == IMAGE_B and s["downloaded"] == [IMAGE_B]
    assert not bootc.boot_staged(state)  # locked: a crash and reboot here boots IMAGE_A
    assert bootc.load(state)["booted"]["image"] == IMAGE_A
    assert apply(root, node, "rendered-2", osImageURL=IMAGE_B) is Outcome.REBOOT_PENDING
    assert bootc.load(state)["calls"][-1] == ["switch", "--transport", "registry", IMAGE_B]
    assert bootc.boot_staged(state)
    assert bootc.load(state)["booted"]["image"] == IMAGE_B


def test_a_failed_switch_rolls_the_update_back(host: tuple[Path, Path, Node]) -> None:
    root, state, node = host
    apply(root, node, "rendered-1", osImageURL=IMAGE_A)
    s = bootc.load(state)
    s["fail"]["switch"] = "error: Switching: pulling: registry unreachable"
    bootc.save(state, s)
    with pytest.raises(UpdateError) as e:
        apply(root, node, "rendered-2", osImageURL=IMAGE_B)
    assert "registry unreachable" in str(e.value)
    assert current(root) == "rendered-1"
    assert (root / "etc/motd").read_text() == "rendered-1\n"
    assert bootc.load(state)["staged"] is None


@pytest.mark.parametrize(
    ("spec", "field"), [({"kernelType": "realtime"}, "spec.kernelType"),
                        ({"extensions": ["usbguard"]}, "spec.extensions")],
)  # fmt: skip
def test_what_a_bootc_image_carries_is_refused_by_name(
    host: tuple[Path, Path, Node], spec: dict[str, Any], field: str
) -> None:
    root, state, node = host
    apply(root, node, "rendered-1", osImageURL=IMAGE_A)
    with pytest.raises(UpdateError) as e:
        apply(root, node, "rendered-2", osImageURL=IMAGE_B, **spec)
    assert f"{field} " in str(e.value)
    assert "on a bootc node the image carries its kernel and packages" in str(e.value)
    assert bootc.load(state)["staged"] is None and current(root) == "rendered-1"


def test_status_is_read_in_bootcs_own_shape() -> None:
    state = bootc.new_state(IMAGE_A)
    state["staged"] = {"image": IMAGE_B, "digest": "sha256:" + "c" * 64}
    parsed = parse_status(json.dumps(bootc._status(state)))
    assert parsed.booted is not None and parsed.booted.image == IMAGE_A
    assert parsed.staged is not None and parsed.staged.digest == "sha256:" + "c" * 64
    assert parsed.rollback is None
