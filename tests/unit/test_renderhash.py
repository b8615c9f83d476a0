"""Rendered-config names match upstream's render controller byte for byte.

The golden vectors were made by the Go oracle in tests/oracles/renderhash (upstream's own
ghodss/yaml + yaml.v2 v2.4.0 sources and Ignition's v3_5 structs); no Go is needed here.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from mcd.model.ignition.goshape import go_shape
from mcd.model.pool import goscalar, goyaml, renderhash
from mcd.model.pool.render import rendered_name

GOLDEN = pathlib.Path(__file__).parents[1] / "data" / "render-hash-golden.json"
VECTORS: list[dict[str, Any]] = json.loads(GOLDEN.read_text())["vectors"]
NAMED = [v for v in VECTORS if "name" in v]
REFUSED = [v for v in VECTORS if "refused" in v]
SHAPED = [v for v in VECTORS if "shapedName" in v]


def test_the_golden_file_is_broad() -> None:
    assert len(NAMED) >= 500 and len(REFUSED) >= 20 and len(SHAPED) >= 300
    sources = {v["from"].split(" ")[0] for v in VECTORS}
    assert {"examples/rendered-worker-1.yaml", "generated", "mcd", "atom"} <= sources
    texts = "".join(v["yaml"] for v in NAMED)
    for feature in ("|-\n", "|+\n", "|2-\n", "? ", "\\U0001F600", "- ", "{}", "[]", '"yes"'):
        assert feature in texts
    assert any(len(line) > 80 for v in NAMED for line in v["yaml"].splitlines())


def test_every_golden_vector_names_as_upstream() -> None:
    wrong = [
        v["from"]
        for v in NAMED
        if renderhash.spec_yaml(v["spec"]) != v["yaml"]
        or rendered_name(v["pool"], v["spec"]) != v["name"]
    ]
    assert wrong == [], f"{len(wrong)} of {len(NAMED)} differ from upstream: {wrong[:5]}"


def test_specs_yaml_v2_cannot_read_back_are_refused_as_upstream_refuses_them() -> None:
    accepted = []
    for vector in REFUSED:
        try:
            renderhash.spec_yaml(vector["spec"])
        except ValueError:
            continue
        accepted.append(vector["from"])
    assert accepted == []


def test_ignition_configs_take_the_shape_of_upstreams_structs() -> None:
    for vector in SHAPED:
        shaped = go_shape(vector["spec"]["config"])
        assert shaped == vector["shapedConfig"], vector["from"]
        spec = dict(vector["spec"], config=shaped)
        assert rendered_name(vector["pool"], spec) == vector["shapedName"], vector["from"]


@pytest.mark.parametrize(
    ("value", "text"),
    [(1e6, "1e+06"), (123456.0, "123456"), (0.0001, "0.0001"), (1e-05, "1e-05"), (-0.0, "-0"),
     (1.5, "1.5"), (1e21, "1e+21"), (123456789.0, "1.23456789e+08"), (float("inf"), ".inf")],
)  # fmt: skip
def test_floats_are_written_as_gos_formatfloat_g(value: float, text: str) -> None:
    assert goscalar.format_float(value) == text


# Strings yaml.v2 writes raw that a reader folds or refuses (NEL, LS, PS) are pinned by the
# golden vectors; PyYAML's own resolvers differ from yaml.v2's for "=" and "<<".
_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x85\u2028\u2029"))
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), _TEXT)
_DATA = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=6),
    max_leaves=20,
)


def _as_text(value: Any) -> Any:
    if isinstance(value, dict):
        return {goscalar.scalar_text(k)[0]: _as_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_text(v) for v in value]
    return goscalar.scalar_text(value)[0]


@settings(max_examples=300, deadline=None)
@given(_DATA)
def test_the_emitters_text_reads_back_to_the_same_characters(data: Any) -> None:
    # BaseLoader keeps every scalar's characters: quoting, escapes, folding of long lines,
    # block scalars and indentation must all give back exactly what was written.
    assert yaml.load(goyaml.marshal(data), Loader=yaml.BaseLoader) == _as_text(data)


_WORDS = st.text(st.sampled_from("abcxyz -:#'\"[]{}!|>%@`?,*&\\\t"), max_size=30)
_TYPED = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), _WORDS),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_WORDS, inner, max_size=6),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_TYPED)
def test_the_emitters_text_reads_back_to_the_same_data(data: Any) -> None:
    # Plain scalars must not change type on the way back: "yes", "null" and friends quoted.
    assert yaml.safe_load(goyaml.marshal(data)) == data
