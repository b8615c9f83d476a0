"""Ignition's own verdict on every config of the test corpora (issue 32).

Each MachineConfig of the corpora (``tests/data/base-worker-1.yaml``, the bad-input corpus
``tests/data/bad/``, ``examples/`` and ``examples/pools/``) is also given to CoreOS
Ignition's validator, ``ignition-validate`` (Debian package ``ignition`` 2.14, installed
by ``scripts/setup.sh``): its ``spec.config``, or the document's raw bytes when it has no
Ignition config to take. Ignition 2.14 reads specs 3.0.0 to 3.3.0, and 3.4 as
``3.4.0-experimental``: a 3.4.0 config is given to it under that name; 2.2.0 and 3.5.0
configs have no verdict.

mcd's verdict: the gate's, worked out here, where the config is refused by the gate (or
passes); else (reconcilability, the node's own paths) the bad-corpus file's ``# exit:``
header, which ``test_bad_corpus.py`` proves is what ``mcd once-from`` does. Then:

* every config Ignition refuses, mcd refuses;
* every config mcd refuses and Ignition accepts is listed, with its reason, in
  ``tests/data/ignition-deliberate-refusals.yaml``, and every listed case still is one
  (the table cannot go stale).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings

from mcd.model import gate
from mcd.model.errors import ConfigError
from mcd.model.machineconfig import decode_document, load_machine_config
from tests.integration.test_generated_configs import documents

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
TABLE = DATA / "ignition-deliberate-refusals.yaml"
GOOD = [
    DATA / "base-worker-1.yaml",
    *sorted((ROOT / "examples").glob("*.yaml")),
    *sorted((ROOT / "examples" / "pools").glob("*.yaml")),
]
BAD = sorted((DATA / "bad").glob("*.yaml"))
IGNITION_READS = {"3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0-experimental"}
NOT_READ = {"2.2.0", "3.5.0"}

pytestmark = pytest.mark.skipif(
    shutil.which("ignition-validate") is None,
    reason="needs ignition-validate (Debian package ignition; scripts/setup.sh installs it)",
)


@dataclass(frozen=True)
class Verdicts:
    name: str
    mcd_refuses: bool
    ignition_refuses: bool | None  # None: a spec Ignition 2.14 does not read
    ignition_says: str


def _ignition_input(raw: bytes) -> tuple[bytes | None, Any]:
    """What Ignition is given, and the MachineConfig document when it is one."""
    try:
        doc = decode_document(raw)
    except ConfigError:
        return raw, None
    spec = doc.get("spec") if isinstance(doc, dict) else None
    config = spec.get("config") if isinstance(spec, dict) else None
    if not isinstance(config, dict):
        return raw, doc
    ign = config.get("ignition")
    version = ign.get("version") if isinstance(ign, dict) else None
    if version in NOT_READ:
        return None, doc
    if version == "3.4.0" and isinstance(ign, dict):
        config = {**config, "ignition": {**ign, "version": "3.4.0-experimental"}}
    return json.dumps(config).encode(), doc


def _ignition(data: bytes, tmp: Path) -> tuple[bool, str]:
    path = tmp / "config.ign"
    path.write_bytes(data)
    done = subprocess.run(
        ["ignition-validate", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode in (0, 1), done
    return done.returncode == 1, (done.stdout + done.stderr).strip()


GATE_REASON = "could not calculate config diff: parsing new Ignition config failed with error: "


def _mcd_refuses_bad(path: Path) -> bool:
    """The ``# exit:`` header; where the header's reason is the gate's, the gate's own
    verdict, worked out here (so a rule switched off shows)."""
    raw = path.read_bytes()
    head = raw[:4096].decode("utf-8", errors="replace").splitlines()
    code = int(next(line[8:] for line in head if line.startswith("# exit: ")))
    reason = next(line[10:] for line in head if line.startswith("# reason: "))
    if reason.startswith(GATE_REASON):
        return _mcd_refuses(raw)
    return code != 0


def _mcd_refuses(raw: bytes) -> bool:
    try:
        return bool(gate.problems(load_machine_config(raw)))
    except ConfigError:
        return True


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> list[Verdicts]:
    tmp = tmp_path_factory.mktemp("ignition")
    found = []
    for path in GOOD + BAD:
        raw = path.read_bytes()
        data, doc = _ignition_input(raw)
        if path in GOOD and (not isinstance(doc, dict) or doc.get("kind") != "MachineConfig"):
            continue  # a pool or a MachineConfiguration beside the configs
        mcd = _mcd_refuses_bad(path) if path in BAD else _mcd_refuses(raw)
        refused, says = _ignition(data, tmp) if data is not None else (None, "")
        found.append(Verdicts(path.stem, mcd, refused, says))
    return found


def _table() -> dict[str, str]:
    rows = yaml.safe_load(TABLE.read_text())
    listed: dict[str, str] = {}
    for row in rows:
        assert row["reason"].strip(), row
        for case in row["cases"]:
            assert case not in listed, f"{case} is listed twice"
            listed[case] = row["reason"]
    return listed


def test_the_corpora_are_all_read(verdicts: list[Verdicts]) -> None:
    names = {v.name for v in verdicts}
    assert {p.stem for p in BAD} <= names
    assert {"base-worker-1", "rendered-worker-1", "rendered-worker-2"} <= names
    assert sum(v.ignition_refuses is not None for v in verdicts) >= len(BAD) - 2


def test_every_config_ignition_refuses_mcd_refuses(verdicts: list[Verdicts]) -> None:
    accepted_by_mcd = [
        f"{v.name}: {v.ignition_says}" for v in verdicts if v.ignition_refuses and not v.mcd_refuses
    ]
    assert not accepted_by_mcd, "Ignition refuses, mcd accepts:\n" + "\n".join(accepted_by_mcd)


def test_every_config_only_mcd_refuses_is_a_listed_deliberate_refusal(
    verdicts: list[Verdicts],
) -> None:
    listed = _table()
    only_mcd = {v.name for v in verdicts if v.mcd_refuses and v.ignition_refuses is False}
    unlisted = sorted(only_mcd - listed.keys())
    stale = sorted(listed.keys() - only_mcd)
    assert not unlisted, f"mcd refuses, Ignition accepts, not in {TABLE.name}: {unlisted}"
    assert not stale, f"listed in {TABLE.name} but no longer refused by mcd alone: {stale}"


def test_the_good_configs_pass_both(verdicts: list[Verdicts]) -> None:
    good = {p.stem for p in GOOD}
    for v in verdicts:
        if v.name in good:
            assert (v.mcd_refuses, v.ignition_refuses) == (False, False), v


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_generated_configs_ignition_refuses_mcd_refuses(text: bytes) -> None:
    """The 10,000-config generator's documents (``test_generated_configs.py``), hostile and
    tame: whatever Ignition refuses of a spec it reads, mcd's gate refuses too."""
    data, _doc = _ignition_input(text)
    if data is None:
        return
    with tempfile.TemporaryDirectory() as tmp:
        refused, says = _ignition(data, Path(tmp))
    if refused:
        assert _mcd_refuses(text), f"Ignition refuses, mcd accepts: {says}"
