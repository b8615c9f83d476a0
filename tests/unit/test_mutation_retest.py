"""make mutation-retest: survivors and untested mutants of the rooms named are judged again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts.mutation_retest import main


def meta(codes: dict[str, int | None]) -> dict[str, object]:
    return {
        "exit_code_by_key": codes,
        "hash_by_function_name": {},
        "type_check_error_by_key": {},
        "durations_by_key": {},
        "estimated_durations_by_key": {},
    }


def test_only_the_rooms_named_lose_their_survivors_and_untested_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    files: dict[str, dict[str, int | None]] = {
        "node/pinned.py": {"a": 0, "b": 33, "c": 1, "d": None, "e": 36},
        "pool/canary.py": {"f": 0},
        "gate.py": {"g": 33, "h": 1},
    }
    for name, verdicts in files.items():
        source = tmp_path / "mcd/model" / name
        source.parent.mkdir(parents=True, exist_ok=True)
        (source.parent / "__init__.py").write_text("")
        source.write_text("")
        target = tmp_path / "mutants/mcd/model" / f"{name}.meta"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(meta(verdicts)))
    monkeypatch.chdir(tmp_path)

    assert main(["node", "base"]) == 0

    def codes(name: str) -> object:
        return json.loads((tmp_path / "mutants/mcd/model" / f"{name}.meta").read_text())[
            "exit_code_by_key"
        ]

    assert codes("node/pinned.py") == {"a": None, "b": None, "c": 1, "d": None, "e": 36}
    assert codes("pool/canary.py") == {"f": 0}
    assert codes("gate.py") == {"g": None, "h": 1}
    assert capsys.readouterr().out == "node: 2 mutants to re-test\nbase: 1 mutants to re-test\n"
    assert main(["pool/canary"]) == 0
    assert codes("pool/canary.py") == {"f": None}
    with pytest.raises(SystemExit, match="no sub-room mcd/model/nowhere"):
        main(["nowhere"])
