"""Why a ``registries.conf`` change drains the node: upstream's own log line for each rule of
``isSafeContainerRegistryConfChanges`` (Go's ``%t`` for flags, its trailing spaces included),
and the TOML type errors that fail the update, as BurntSushi/toml words them."""

from __future__ import annotations

import pytest

from mcd.model.disruption.registries import (
    Mirror,
    RegistriesConf,
    RegistriesConfError,
    Registry,
    parse_registries_conf,
    unsafe_change,
)

P = "/etc/containers/registries.conf"


def reg(*lines: str) -> bytes:
    return ("[[registry]]\n" + "".join(f"{line}\n" for line in lines)).encode()


def mirror(location: str, *lines: str) -> str:
    return f'[[registry.mirror]]\nlocation = "{location}"\n' + "".join(f"{x}\n" for x in lines)


Q = 'location = "quay.io"'


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        (reg(Q), reg(Q, "blocked = true"),
         f"{P}: blocked value for registry quay.io has changed from false to true"),
        (reg(Q, "insecure = true"), reg(Q),
         f"{P}: insecure value for registry quay.io has changed from true to false"),
        (reg('prefix = "p.io"', Q), reg('prefix = "p.io"', 'location = "b.io"'),
         f"{P}: location value for registry p.io has changed from quay.io to b.io"),
        (reg(Q, mirror("m1.io"), mirror("m2.io")), reg(Q, mirror("m2.io")),
         f"{P}: mirror m1.io has been removed in registry quay.io"),
        (reg(Q, mirror("m1.io", 'pull-from-mirror = "digest-only"')),
         reg(Q, mirror("m1.io", 'pull-from-mirror = "all"')),
         f"{P}: pull-from-mirror value for mirror m1.io has changed from digest-only to all "),
        (reg(Q, mirror("m1.io")), reg(Q, mirror("m1.io"), mirror("m2.io")),
         f"{P}: mirror m2.io has been added in registry quay.io that has pull-from-mirror set to  "),
        (reg(Q), reg(Q, mirror("m2.io", 'pull-from-mirror = "tag-only"')),
         f"{P}: mirror m2.io has been added in registry quay.io that has pull-from-mirror set to "
         "tag-only "),
        (b"", reg(Q, mirror("m1.io", 'pull-from-mirror = "digest-only"'), mirror("m2.io")),
         f"{P}: registry quay.io has been added with mirror does not set "
         "pull-from-mirror=digest-only"),
        (reg(Q), reg('location = "other.io"'), f"{P}: registry quay.io has been removed"),
        (b'unqualified-search-registries = ["a.io", "b.io"]\n',
         b'unqualified-search-registries = ["b.io", "a.io"]\n',
         f"{P}: unqualified-search-registries entries removed or reordered"),
        (b'unqualified-search-registries = ["a.io", "b.io"]\n',
         b'unqualified-search-registries = ["a.io"]\n',
         f"{P}: unqualified-search-registries entries removed or reordered"),
    ],
)  # fmt: skip
def test_each_unsafe_change_is_upstreams_log_line(old: bytes, new: bytes, reason: str) -> None:
    assert unsafe_change(old, new) == reason


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (None, None),
        (b'unqualified-search-registries = ["a.io"]\n',
         b'unqualified-search-registries = ["a.io", "b.io"]\n'),
        (reg(Q), reg(Q, "mirror-by-digest-only = true")),  # not compared upstream
        (reg(Q, mirror("m1.io")), reg(Q, mirror("m1.io", "insecure = true"))),  # nor this
        (reg(Q, mirror("m1.io")), reg(Q, mirror("m1.io", 'pull-from-mirror = "digest-only"'))),
        (reg(Q, mirror("m1.io", 'pull-from-mirror = "all"')),
         reg(Q, mirror("m1.io", 'pull-from-mirror = "all"'), "blocked = false")),
        (reg(Q), reg(Q, mirror("m2.io", 'pull-from-mirror = "digest-only"'))),
        (None, reg(Q, mirror("m1.io", 'pull-from-mirror = "digest-only"'))),
        (reg(Q), reg(Q) + reg('location = "new.io"', "mirror-by-digest-only = true")),
        (reg(Q, 'short-name-mode = "enforcing"'), reg(Q, 'short-name-mode = "permissive"')),
    ],
)  # fmt: skip
def test_safe_changes_need_no_drain(old: bytes | None, new: bytes | None) -> None:
    assert unsafe_change(old, new) == ""


def test_a_registry_is_keyed_by_prefix_else_location_and_read_with_defaults() -> None:
    conf = parse_registries_conf(
        reg('prefix = "p.io/team"', Q, mirror("m1.io", "insecure = true",
                                               'pull-from-mirror = "digest-only"'))
        + reg('location = "r.io"', 'pull-from-mirror = "all"', "insecure = true",
              "blocked = true", "mirror-by-digest-only = true")
    )  # fmt: skip
    assert conf == RegistriesConf(
        search=(),
        registries=(
            Registry(prefix="p.io/team", location="quay.io",
                     mirrors=(Mirror("m1.io", True, "digest-only"),)),
            Registry(location="r.io", insecure=True, pull_from_mirror="all", blocked=True,
                     mirror_by_digest_only=True),
        ),
    )  # fmt: skip
    assert [r.scope for r in conf.registries] == ["p.io/team", "r.io"]
    assert parse_registries_conf(reg(mirror("m.io"))).registries == (
        Registry(mirrors=(Mirror("m.io"),)),
    )


def decode_error(data: bytes) -> str:
    with pytest.raises(RegistriesConfError) as e:
        parse_registries_conf(data)
    return str(e.value)


@pytest.mark.parametrize(
    ("data", "detail"),
    [
        (b"unqualified-search-registries = \"a.io\"\n",
         "(last key 'unqualified-search-registries'): incompatible types: TOML value has type "
         "string; destination has type slice"),
        (b"unqualified-search-registries = [1]\n",
         "(last key 'unqualified-search-registries[0]'): incompatible types: TOML value has type "
         "int; destination has type string"),
        (b"short-name-mode = true\n",
         "(last key 'short-name-mode'): incompatible types: TOML value has type boolean; "
         "destination has type string"),
        (b"aliases = []\n",
         "(last key 'aliases'): incompatible types: TOML value has type slice; destination has "
         "type struct"),
        (b'registry = "quay.io"\n',
         "(last key 'registry'): incompatible types: TOML value has type string; destination "
         "has type slice"),
        (b"registry = [1]\n",
         "(last key 'registry[0]'): incompatible types: TOML value has type int; destination has "
         "type struct"),
        (reg('insecure = "yes"'),
         "(last key 'insecure'): incompatible types: TOML value has type string; destination "
         "has type boolean"),
        (reg("prefix = 1"),
         "(last key 'prefix'): incompatible types: TOML value has type int; destination has "
         "type string"),
        (reg("mirror = [1, 2]"),
         "(last key 'registry[0].mirror[0]'): incompatible types: TOML value has type int; "
         "destination has type struct"),
        (reg(mirror("m.io", "insecure = 1")),
         "(last key 'insecure'): incompatible types: TOML value has type int; destination has "
         "type boolean"),
        (reg(mirror("m.io", "pull-from-mirror = false")),
         "(last key 'pull-from-mirror'): incompatible types: TOML value has type boolean; "
         "destination has type string"),
        (b"\xff", "invalid UTF-8 at byte 0"),
    ],
)  # fmt: skip
def test_a_wrong_type_fails_the_update_naming_the_key(data: bytes, detail: str) -> None:
    assert decode_error(data) == f"failed decoding TOML content from file {P}: {detail}"


def test_toml_syntax_errors_fail_the_update_too() -> None:
    assert decode_error(b"[[registry]\n").startswith(
        f"failed decoding TOML content from file {P}: "
    )
    with pytest.raises(RegistriesConfError):
        unsafe_change(reg(Q), b"[[registry]\nlocation = ")
