"""``mcd diff``: what changed between two rendered configs, for people. Files and units are
compared by path with a unified diff of text; secrets (by name, by contents, or a file that is
not world-readable), SSH keys and password hashes are reported as changed and never shown."""

from __future__ import annotations

from typing import Any

import pytest

from mcd.model.machineconfig import MachineConfig
from mcd.model.planning.filediff import looks_secret, render_diff
from tests.builders import file_entry, mc

KEY = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"


def diff(old: MachineConfig, new: MachineConfig) -> str:
    text, changed = render_diff(old, new)
    assert changed is bool(text)
    return text


def files(*entries: dict[str, Any], name: str = "a", **spec: Any) -> MachineConfig:
    return mc(name, files=list(entries), **spec)


def test_identical_configs_have_no_diff() -> None:
    config = files(file_entry("/etc/motd", "hello\n"))
    assert render_diff(config, config) == ("", False)


def test_a_changed_text_file_is_a_unified_diff_naming_both_configs() -> None:
    old = files(file_entry("/etc/motd", "hello\nworld\n"), name="rendered-1")
    new = files(file_entry("/etc/motd", "hello\nthere\n"), name="rendered-2")
    assert diff(old, new).splitlines() == [
        "~ /etc/motd: changed",
        "--- a(rendered-1)/etc/motd",
        "+++ b(rendered-2)/etc/motd",
        "@@ -1,2 +1,2 @@",
        " hello",
        "-world",
        "+there",
    ]


def test_added_and_removed_files_show_their_whole_text() -> None:
    old = files(file_entry("/etc/old.conf", "gone\n"))
    new = files(file_entry("/etc/new.conf", "fresh\n"), name="b")
    out = diff(old, new).splitlines()
    assert out[0] == "+ /etc/new.conf: added"
    assert "+fresh" in out and "-gone" in out
    assert "- /etc/old.conf: removed" in out
    assert out.index("- /etc/old.conf: removed") > out.index("+fresh")  # sorted by path


@pytest.mark.parametrize(
    ("old", "new", "status"),
    [(None, "x", "added"), ("x", None, "removed"), ("x", "y", "changed")],
)
@pytest.mark.parametrize(
    "path",
    ["/etc/pki/tls/private/node.key", "/etc/kubernetes/kubeconfig", "/var/lib/app/token",
     "/root/.docker/config.json", "/etc/pull-secret.json"],
)  # fmt: skip
def test_a_secret_by_its_name_is_never_shown(
    path: str, old: str | None, new: str | None, status: str
) -> None:
    before = files(*([file_entry(path, old)] if old else []))
    after = files(*([file_entry(path, new)] if new else []), name="b")
    sign = {"added": "+", "removed": "-", "changed": "~"}[status]
    assert diff(before, after) == f"{sign} {path}: {status} (secret contents changed (not shown))\n"


@pytest.mark.parametrize(("old", "new"), [("plain\n", KEY), (KEY, "plain\n")])
def test_secret_contents_on_either_side_are_never_shown(old: str, new: str) -> None:
    out = diff(files(file_entry("/etc/app.conf", old)), files(file_entry("/etc/app.conf", new)))
    assert out == "~ /etc/app.conf: changed (secret contents changed (not shown))\n"


def test_a_file_others_cannot_read_is_private_whatever_its_name() -> None:
    old = files(file_entry("/etc/app.conf", "a=1\n", mode=0o600))
    new = files(file_entry("/etc/app.conf", "a=2\n", mode=0o640))
    assert diff(old, new) == (
        "~ /etc/app.conf: changed (secret contents changed (not shown); mode 0600 -> 0640)\n"
    )
    readable = files(file_entry("/etc/app.conf", "a=1\n", mode=0o604))
    assert "-a=1" in diff(readable, files(file_entry("/etc/app.conf", "a=2\n", mode=0o604)))


@pytest.mark.parametrize(
    ("old", "new"), [(b"\x00\x01", b"\x00\x02"), (b"text\n", b"\xff\xfe"), (b"\x00", b"text\n")]
)
def test_binary_contents_are_only_said_to_differ(old: bytes, new: bytes) -> None:
    out = diff(files(file_entry("/etc/blob", old)), files(file_entry("/etc/blob", new)))
    assert out == "~ /etc/blob: changed (binary contents differ)\n"


def test_mode_and_owner_changes_are_listed_even_with_the_same_contents() -> None:
    old = files(file_entry("/etc/app.conf", "same\n", mode=0o644))
    new = files(
        file_entry(
            "/etc/app.conf", "same\n", mode=0o4755, user={"name": "core"}, group={"id": 1000}
        )
    )
    assert diff(old, new) == (
        "~ /etc/app.conf: changed (mode 0644 -> 04755; user root -> core; group root -> 1000)\n"
    )


def test_units_and_dropins_are_compared_by_their_paths() -> None:
    old = mc(
        "a",
        units=[
            {"name": "app.service", "enabled": True, "contents": "[Service]\nExecStart=/a\n",
             "dropins": [{"name": "10-env.conf", "contents": "[Service]\nEnvironment=A=1\n"}]},
            {"name": "old.service", "contents": "[Unit]\n"},
        ],
    )  # fmt: skip
    new = mc(
        "b",
        units=[
            {"name": "app.service", "enabled": False, "contents": "[Service]\nExecStart=/b\n",
             "dropins": [{"name": "10-env.conf", "contents": "[Service]\nEnvironment=A=2\n"}]},
            {"name": "masked.service", "mask": True},
        ],
    )  # fmt: skip
    out = diff(old, new).splitlines()
    assert (
        "~ /etc/systemd/system/app.service: changed "
        "(enabled=True mask=False -> enabled=False mask=False)"
    ) in out
    assert "-ExecStart=/a" in out and "+ExecStart=/b" in out
    assert "~ /etc/systemd/system/app.service.d/10-env.conf: changed" in out
    assert "--- a(a)/etc/systemd/system/app.service.d/10-env.conf" in out
    assert "+Environment=A=2" in out
    assert "- /etc/systemd/system/old.service: removed" in out
    assert "+ /etc/systemd/system/masked.service: added" in out


def test_only_a_units_flags_changing_is_still_a_change() -> None:
    unit = {"name": "app.service", "contents": "[Service]\n"}
    old = mc("a", units=[{**unit, "enabled": True}])
    new = mc("b", units=[{**unit, "mask": True}])
    assert diff(old, new) == (
        "~ /etc/systemd/system/app.service: changed "
        "(enabled=True mask=False -> enabled=None mask=True)\n"
    )


def test_os_and_kernel_changes_come_first() -> None:
    old = mc(
        "a",
        osImageURL="quay.io/rhcos@sha256:" + "1" * 64,
        kernelArguments=["nosmt"],
        kernelType="default",
    )
    new = mc(
        "b",
        kernelArguments=["nosmt", "mitigations=off"],
        kernelType="realtime",
        fips=True,
        extensions=["wasm", "usbguard"],
        files=[file_entry("/etc/motd", "x\n")],
    )
    out = diff(old, new).splitlines()
    assert out[:5] == [
        f"~ osImageURL: quay.io/rhcos@sha256:{'1' * 64} -> (none)",
        "~ kernelArguments: nosmt -> nosmt mitigations=off",
        "~ kernelType: default -> realtime",
        "~ fips: False -> True",
        "~ extensions: [] -> ['usbguard', 'wasm']",
    ]
    assert out[5] == "+ /etc/motd: added"
    back = diff(new, old).splitlines()
    assert back[0] == f"~ osImageURL: (none) -> quay.io/rhcos@sha256:{'1' * 64}"
    assert back[1] == "~ kernelArguments: nosmt mitigations=off -> nosmt"
    assert diff(mc("a", kernelArguments=["a"]), mc("b")) == "~ kernelArguments: a -> (none)\n"


def test_ssh_keys_and_password_hashes_are_counted_never_shown() -> None:
    old = mc(
        "a",
        users=[
            {
                "name": "core",
                "sshAuthorizedKeys": ["ssh-ed25519 AAAAold core@a", "ssh-ed25519 AAAAkept core@b"],
            }
        ],
    )
    new = mc("b", users=[
        {"name": "core", "passwordHash": "$6$salt$hash",
         "sshAuthorizedKeys": ["ssh-ed25519 AAAAkept core@b", "ssh-ed25519 AAAAnew1 core@c",
                               "ssh-ed25519 AAAAnew2 core@d"]},
    ])  # fmt: skip
    out = diff(old, new)
    assert out == (
        "~ user core: SSH keys changed (2 added, 1 removed; keys not shown)\n"
        "~ user core: password hash changed (not shown)\n"
    )
    assert diff(new, old).startswith(
        "~ user core: SSH keys changed (1 added, 2 removed; keys not shown)\n"
    )


def test_a_user_appearing_or_leaving_is_listed() -> None:
    added = mc("b", users=[{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAA a"]}])
    assert diff(mc("a"), added) == (
        "~ user core: SSH keys changed (1 added, 0 removed; keys not shown)\n"
    )
    assert diff(added, mc("a")) == (
        "~ user core: SSH keys changed (0 added, 1 removed; keys not shown)\n"
    )


def test_a_path_with_control_characters_is_shown_escaped() -> None:
    path = "/etc/motd\x1b[2J"
    out = diff(files(), files(file_entry(path, "x\n"), name="b"))
    assert "\x1b" not in out
    assert out.startswith("+ /etc/motd\\x1b[2J: added\n")


@pytest.mark.parametrize(
    ("path", "data", "mode", "secret"),
    [
        ("/etc/motd", b"hello", 0o644, False),
        ("/etc/motd", b"hello", 0o640, True),  # others cannot read it
        ("/etc/motd", b"hello", 0o004, False),
        ("/etc/motd", b"hello", None, False),
        ("/etc/ssl/cert.pem", b"", 0o644, True),
        ("/etc/shadow", None, None, True),
        ("/etc/motd", b'{"auths": {}}', 0o644, True),
        ("/etc/motd", b"client-key-data: x", 0o644, True),
        ("/etc/motd", b"-----BEGIN CERTIFICATE-----", 0o644, True),
        ("/etc/motd", None, 0o644, False),
    ],
)
def test_what_looks_secret(path: str, data: bytes | None, mode: int | None, secret: bool) -> None:
    assert looks_secret(path, data, mode) is secret
