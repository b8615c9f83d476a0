"""mcd renders a pool's MachineConfigs into the same spec, and name, as upstream.

The golden vectors were made by the Go oracle in tests/oracles/merge, which runs upstream's
own ValidateMachineConfig, MergeMachineConfigs and getMachineConfigHashedName (extracted
from the machine-config-operator mirror) over corpus and generated sets of MachineConfigs:
spec 2.2 and 3.0-3.5 mixed, overlapping files, links, directories, units, dropins, users and
SSH keys, kernel arguments, extensions, fips, kernelType, osImageURL. No Go is needed here.
"""

from __future__ import annotations

import json
import pathlib
import re
from typing import Any

from mcd.model.pool.render import RenderError, render

GOLDEN = pathlib.Path(__file__).parents[1] / "data" / "render-merge-golden.json"
VECTORS: list[dict[str, Any]] = json.loads(GOLDEN.read_text())["vectors"]
RENDERED = [v for v in VECTORS if "name" in v]
REFUSED = [v for v in VECTORS if "refused" in v]

# Inputs upstream renders and mcd refuses on purpose: each refusal's text, and why.
DELIBERATE = {
    r"rendered config is invalid: .*overwrite must be false if source is unspecified": (
        "MergeMachineConfigs sets overwrite: true on every file without one, also on a file "
        "without contents; Ignition's validation (and upstream's daemon, which parses the "
        "rendered config) then refuses it on every node: mcd refuses it once, at render"
    ),
    r"is on the kernel filesystem|path \"/etc/machine-config-daemon/|authorized_keys\.d/ignition"
    r"|a name in the path is \d+ bytes|path contains a NUL byte|path must name a file"
    r"|path contains a '\.\.' segment": (
        "paths mcd never writes (kernel filesystems, the daemon's own state, the SSH key "
        "file the daemon itself manages, names the file system refuses, '..' that spec 2's "
        "path.Join would fold away): docs/runbook.md"
    ),
    r"invalid name|control character|contains a control": (
        "unit and dropin names that leave their directory or hold control characters"
    ),
    r"could not decode file|hash mismatch|invalid password hash|out of range|negative id": (
        "contents, hashes and ids the agent could not apply: refused before any node tries"
    ),
}


def test_the_golden_file_is_broad() -> None:
    assert len(RENDERED) >= 350 and len(REFUSED) >= 100
    sources = {v["from"].split(" ")[0] for v in VECTORS}
    assert {"examples/pools/00-worker.yaml", "generated", "corpus", "the"} <= sources
    versions = {
        ((mc["spec"].get("config") or {}).get("ignition") or {}).get("version")
        for v in RENDERED
        for mc in v["configs"]
        if isinstance(mc["spec"].get("config"), dict)
    }
    assert {"2.2.0", "3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0"} <= versions
    assert any(len(v["configs"]) >= 4 for v in RENDERED)
    assert any(v["spec"]["kernelType"] == "realtime" for v in RENDERED)
    assert any(v["spec"]["fips"] for v in RENDERED)


def _render(vector: dict[str, Any]) -> Any:
    return render(vector["pool"], vector["configs"], tuple(vector["base"]))


def _deliberate(message: str) -> bool:
    return any(re.search(pattern, message) for pattern in DELIBERATE)


def test_every_set_upstream_renders_mcd_renders_to_the_same_spec_and_name() -> None:
    wrong, refused, same = [], [], 0
    for vector in RENDERED:
        try:
            out = _render(vector)
        except RenderError as e:
            if not _deliberate(str(e)):
                refused.append((vector["from"], str(e)))
            continue
        if out.spec != vector["spec"] or out.name != vector["name"]:
            wrong.append(vector["from"])
        else:
            same += 1
    assert same >= 350, "most sets upstream renders, mcd renders too"
    assert wrong == [], f"{len(wrong)} of {len(RENDERED)} differ from upstream: {wrong[:5]}"
    assert refused == [], f"refused, not listed as deliberate: {refused[:5]}"


def test_every_set_upstream_refuses_mcd_refuses() -> None:
    accepted = []
    for vector in REFUSED:
        try:
            _render(vector)
        except (RenderError, ValueError, TypeError):
            continue
        accepted.append((vector["from"], vector["refused"][:120]))
    assert accepted == [], f"{len(accepted)} accepted: {accepted[:5]}"


def test_upstreams_texts_for_its_merge_refusals() -> None:
    for vector in REFUSED:
        text = vector["refused"]
        if text.startswith(("invalid extensions found", "unexpected user with name")) or (
            text.startswith("installing kernel-devel")
        ):
            try:
                _render(vector)
            except RenderError as e:
                assert text in str(e)


def test_upstreams_renders_mcd_refuses_for_overwrite_hold_a_file_ignition_refuses() -> None:
    """The refusal is deliberate, not a merge difference: upstream's own rendered spec holds
    a file with overwrite true and no source, which upstream's ParseAndConvertConfig (the
    daemon's parse of the rendered config) refuses: fed back to the oracle, it says
    "overwrite must be false if source is unspecified"."""
    checked = 0
    for vector in RENDERED:
        try:
            _render(vector)
            continue
        except RenderError as e:
            if "overwrite must be false if source is unspecified" not in str(e):
                continue
        files = vector["spec"]["config"]["storage"]["files"]
        assert any(
            f.get("overwrite") is True and (f.get("contents") or {}).get("source") is None
            for f in files
        ), vector["from"]
        checked += 1
    assert checked >= 20
