"""make mutation's report: mutmut's results grouped by the model's sub-rooms, and the score."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import pytest

from scripts.mutation_report import FLAT_ROOMS, main, read_results, room_of

# The reorganisation of mcd/model: each room and the flat modules that move into it.
ROOMS = {
    "model/ignition/": "ignition ignition_parse ignition_merge dataurl validate values guards",
    "model/osupdate/": "imagemode extensions kargs",
    "model/disruption/": "policy policy_status registries",
    "model/planning/": "diff filediff reconcile actions plan describe",
    "model/pool/": "pools render rollout windows",
    "model/certificates/": "certs serviceca x509",
    "model/node/": "health mcn",
    "model/": "errors text vocabulary fields machineconfig gate",
}
MODEL = Path(__file__).resolve().parents[2] / "mcd" / "model"


@pytest.mark.parametrize(
    ("room", "module"), [(r, m) for r, ms in ROOMS.items() for m in ms.split()]
)
def test_a_flat_module_counts_for_the_room_it_moves_to(room: str, module: str) -> None:
    assert room_of(PurePosixPath(f"mcd/model/{module}.py")) == room


def test_every_model_module_has_a_room() -> None:
    """A module added at the top level counts for the top level until it is given a room."""
    planned = {f"{m}.py" for ms in ROOMS.values() for m in ms.split()} | {"__init__.py"}
    flat = {p.name for p in MODEL.glob("*.py")}
    assert flat <= planned, f"modules without a room in ROOMS: {sorted(flat - planned)}"
    assert set(FLAT_ROOMS) == planned - {"__init__.py"} - {
        f"{m}.py" for m in ROOMS["model/"].split()
    }


def test_a_module_in_a_sub_package_counts_for_its_directory() -> None:
    """After the move the directory decides, whatever the file is called."""
    assert room_of(PurePosixPath("mcd/model/planning/plan.py")) == "model/planning/"
    assert room_of(PurePosixPath("mcd/model/pool/windows.py")) == "model/pool/"
    assert room_of(PurePosixPath("mcd/model/node/gate.py")) == "model/node/"
    assert room_of(PurePosixPath("mcd/model/ignition/sub/deep.py")) == "model/ignition/"
    assert room_of(PurePosixPath("mcd/model/newthing.py")) == "model/"


def _meta(root: Path, source: str, codes: dict[str, int | None]) -> None:
    path = root / f"{source}.meta"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"exit_code_by_key": codes, "durations_by_key": {}}))


def test_score_is_detected_over_tested(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # mutmut's exit codes: 1 killed, 0 survived, 33 no tests, 36 timeout, None not run yet
    _meta(
        tmp_path, "mcd/model/osupdate/kargs.py", {"k1": 1, "k2": 1, "k3": 0, "k4": 36, "k5": None}
    )
    _meta(tmp_path, "mcd/model/planning/plan.py", {"p1": 1, "p2": 33})
    _meta(tmp_path, "mcd/model/errors.py", {})
    rooms = read_results(tmp_path)
    assert set(rooms) == {"model/osupdate/", "model/planning/"}
    osupdate, planning = rooms["model/osupdate/"], rooms["model/planning/"]
    assert (osupdate.detected, osupdate.tested, osupdate.total) == (3, 4, 5)
    assert osupdate.score == 75.0
    assert osupdate.survivors == ["k3: survived"]
    assert planning.score == 50.0  # a mutant no test runs is not killed
    assert planning.survivors == ["p2: no tests"]

    assert main(["--mutants", str(tmp_path), "--survivors", "--fail-under", "66"]) == 0
    out = capsys.readouterr().out
    total = next(line for line in out.splitlines() if line.startswith("mcd/model (total)"))
    assert total.split()[-1] == "66.7%"  # 4 of 6 tested
    assert "  k3: survived" in out and "  p2: no tests" in out
    assert main(["--mutants", str(tmp_path), "--fail-under", "70"]) == 1


def test_no_results_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--mutants", str(tmp_path)]) == 1
    assert "make mutation" in capsys.readouterr().out
