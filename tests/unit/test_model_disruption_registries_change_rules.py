"""Why a registries.conf change needs a drain, in upstream's log words
(model/disruption/registries), and each decoding refusal naming the key and both types as
BurntSushi/toml does."""

from __future__ import annotations

import pytest

from mcd.model.disruption.registries import RegistriesConfError, unsafe_change

CONF = "/etc/containers/registries.conf"


def reg(**fields: str | bool) -> bytes:
    lines = ["[[registry]]"]
    for key, value in fields.items():
        lines.append(f"{key} = {str(value).lower() if isinstance(value, bool) else repr(value)}")
    return ("\n".join(lines) + "\n").replace("'", '"').encode()


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        (reg(prefix="a.io", location="Mirror.A.io"), reg(prefix="a.io", location="Mirror.B.io"),
         f"{CONF}: location value for registry a.io has changed from Mirror.A.io to Mirror.B.io"),
        (reg(prefix="a.io", location="a.io", blocked=False),
         reg(prefix="a.io", location="a.io", blocked=True),
         f"{CONF}: blocked value for registry a.io has changed from false to true"),
        (reg(prefix="a.io", location="a.io", insecure=True),
         reg(prefix="a.io", location="a.io", insecure=False),
         f"{CONF}: insecure value for registry a.io has changed from true to false"),
    ],
)  # fmt: skip
def test_a_changed_registry_names_the_field_and_both_values(
    old: bytes, new: bytes, why: str
) -> None:
    assert unsafe_change(old, new) == why


@pytest.mark.parametrize(
    ("data", "detail"),
    [
        (b"x = \xff", "invalid UTF-8 at byte 4"),
        (b"unqualified-search-registries = 5", "(last key 'unqualified-search-registries'): "
         "incompatible types: TOML value has type int; destination has type slice"),
        (b"[[registry]]\nlocation = 5\n", "(last key 'location'): incompatible types: TOML "
         "value has type int; destination has type string"),
        (b"[[registry]]\nlocation = 'a'\n[[registry.mirror]]\nlocation = 5\n",
         "(last key 'location'): incompatible types: TOML value has type int; destination has "
         "type string"),
        (b"credential-helpers = 'x'", "(last key 'credential-helpers'): incompatible types: "
         "TOML value has type string; destination has type slice"),
        (b"additional-layer-store-auth-helper = 5", "(last key "
         "'additional-layer-store-auth-helper'): incompatible types: TOML value has type int; "
         "destination has type string"),
        (b"a = [", "Invalid value (at end of document)"),
    ],
)  # fmt: skip
def test_an_undecodable_file_names_the_key_and_both_types(data: bytes, detail: str) -> None:
    with pytest.raises(RegistriesConfError) as e:
        unsafe_change(data, b"")
    assert str(e.value) == f"failed decoding TOML content from file {CONF}: {detail}"
