"""The OS update's rules: when the node follows an image (layered) or leaves it (reverting),
and which extension packages rpm-ostree is asked to install or remove."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from mcd.model.osupdate.extensions import (
    EXTENSION_PACKAGES,
    MANAGED_PACKAGES,
    extension_packages,
    package_changes,
)
from mcd.model.osupdate.imagemode import embed, image_of, layered, reverting

IMAGE = "quay.io/example/layered@sha256:" + "a" * 64
OTHER = "quay.io/example/layered@sha256:" + "b" * 64
PLAIN = json.dumps(
    {"metadata": {"name": "rendered-worker-1"}, "spec": {"osImageURL": "quay.io/rhcos:4.16"}}
).encode()


def test_a_config_following_an_image_carries_it_and_a_plain_one_none() -> None:
    assert image_of(PLAIN) == ""
    assert image_of(embed(PLAIN, IMAGE)) == IMAGE
    assert image_of(b"not json") == ""


def test_layered_when_either_side_follows_an_image() -> None:
    on_image, other_image = embed(PLAIN, IMAGE), embed(PLAIN, OTHER)
    assert not layered(PLAIN, PLAIN)
    assert layered(PLAIN, on_image)  # entering image mode
    assert layered(on_image, PLAIN)  # leaving it: still the layered OS step
    assert layered(on_image, other_image)


def test_reverting_only_when_the_node_leaves_image_mode() -> None:
    on_image, other_image = embed(PLAIN, IMAGE), embed(PLAIN, OTHER)
    assert reverting(on_image, PLAIN)
    assert not reverting(PLAIN, on_image)
    assert not reverting(on_image, other_image)
    assert not reverting(PLAIN, PLAIN)


def test_an_extension_installs_all_its_packages_once_in_order() -> None:
    assert extension_packages(["usbguard"]) == ["usbguard"]
    assert extension_packages(["kerberos", "usbguard", "kerberos"]) == [
        "krb5-workstation",
        "libkadm5",
        "usbguard",
    ]
    assert extension_packages(["no-such-extension"]) == []
    assert extension_packages([]) == []


def test_package_changes_install_what_is_missing_and_remove_what_is_no_longer_wanted() -> None:
    install, uninstall = package_changes(
        installed=["usbguard", "sysstat", "vim-enhanced"],
        wanted_extensions=["usbguard", "kerberos"],
    )
    assert install == ["krb5-workstation", "libkadm5"]  # usbguard is there already
    assert uninstall == ["sysstat"]  # vim-enhanced is not an extension's: never removed


def test_nothing_to_do_when_the_node_has_exactly_the_extensions() -> None:
    packages = extension_packages(["kernel-devel", "ipsec"])
    assert package_changes(packages, ["ipsec", "kernel-devel"]) == ([], [])


def test_dropping_every_extension_removes_every_managed_package_sorted() -> None:
    installed = ["usbguard", "kata-containers", "bash", "crun-wasm"]
    # crun-wasm: no longer an extension's (upstream dropped wasm), so never removed
    assert package_changes(installed, []) == ([], ["kata-containers", "usbguard"])


@settings(max_examples=50)
@given(
    st.sets(st.sampled_from([*sorted(MANAGED_PACKAGES), "bash", "vim"])),
    st.sets(st.sampled_from(sorted(EXTENSION_PACKAGES))),
)
def test_after_the_changes_the_node_has_exactly_the_wanted_packages(
    installed: set[str], wanted: set[str]
) -> None:
    install, uninstall = package_changes(sorted(installed), sorted(wanted))
    assert install == sorted(install) and uninstall == sorted(uninstall)
    assert not set(install) & installed  # nothing installed twice
    assert set(uninstall) <= installed & MANAGED_PACKAGES
    after = (installed | set(install)) - set(uninstall)
    assert after & MANAGED_PACKAGES == set(extension_packages(wanted))
    assert after - MANAGED_PACKAGES == installed - MANAGED_PACKAGES
