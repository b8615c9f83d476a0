"""The mutation score of mcd/model per sub-room, from mutmut's results in mutants/.

mutmut keeps one ``<file>.py.meta`` per mutated file (its mutants' exit codes). A file in a
sub-package of mcd/model counts for that directory; a file still at the top level counts for
the room it is moving to (FLAT_ROOMS), or for the top level if it stays there. So the report
reads the same before and after the model's move into sub-packages.

    python scripts/mutation_report.py [--mutants mutants] [--survivors] [--fail-under 85]

Score = detected / tested, where detected is killed, timed out or caught by the type check,
and tested is every mutant but those not checked yet or skipped ("no tests" counts against).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from mutmut.stats import status_by_exit_code

MODEL = PurePosixPath("mcd/model")
BASE = "model/"
# Today's flat module -> the sub-room it moves to (docs: the model's reorganisation).
FLAT_ROOMS: dict[str, str] = {
    **dict.fromkeys(
        [
            "ignition.py",
            "ignition_parse.py",
            "ignition_merge.py",
            "dataurl.py",
            "validate.py",
            "values.py",
            "guards.py",
        ],
        "model/ignition/",
    ),
    **dict.fromkeys(["imagemode.py", "extensions.py", "kargs.py"], "model/osupdate/"),
    **dict.fromkeys(["policy.py", "policy_status.py", "registries.py"], "model/disruption/"),
    **dict.fromkeys(
        ["diff.py", "filediff.py", "reconcile.py", "actions.py", "plan.py", "describe.py"],
        "model/planning/",
    ),
    **dict.fromkeys(["pools.py", "render.py", "rollout.py", "windows.py"], "model/pool/"),
    **dict.fromkeys(["certs.py", "serviceca.py", "x509.py"], "model/certificates/"),
    **dict.fromkeys(["health.py", "mcn.py"], "model/node/"),
}
DETECTED = frozenset({"killed", "timeout", "caught by type check"})
UNCOUNTED = frozenset({"not checked", "skipped"})


def room_of(source: PurePosixPath) -> str:
    """The sub-room of a source file under mcd/model (its directory, else FLAT_ROOMS)."""
    relative = source.relative_to(MODEL)
    if len(relative.parts) > 1:
        return f"model/{relative.parts[0]}/"
    return FLAT_ROOMS.get(relative.name, BASE)


@dataclass
class Tally:
    by_status: dict[str, int] = field(default_factory=dict)
    survivors: list[str] = field(default_factory=list)

    def add(self, name: str, status: str) -> None:
        self.by_status[status] = self.by_status.get(status, 0) + 1
        if status not in DETECTED and status not in UNCOUNTED:
            self.survivors.append(f"{name}: {status}")

    def merge(self, other: Tally) -> None:
        for status, count in other.by_status.items():
            self.by_status[status] = self.by_status.get(status, 0) + count
        self.survivors.extend(other.survivors)

    @property
    def detected(self) -> int:
        return sum(n for s, n in self.by_status.items() if s in DETECTED)

    @property
    def tested(self) -> int:
        return sum(n for s, n in self.by_status.items() if s not in UNCOUNTED)

    @property
    def total(self) -> int:
        return sum(self.by_status.values())

    @property
    def score(self) -> float:
        return 100.0 * self.detected / self.tested if self.tested else 100.0


def read_results(mutants: Path) -> dict[str, Tally]:
    """Each room's tally from the .meta files under ``mutants``/mcd/model."""
    rooms: dict[str, Tally] = {}
    for meta in sorted((mutants / MODEL).rglob("*.py.meta")):
        source = PurePosixPath(meta.relative_to(mutants).as_posix()).with_suffix("")
        codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
        if not codes:
            continue
        tally = rooms.setdefault(room_of(source), Tally())
        for name, code in sorted(codes.items()):
            tally.add(name, status_by_exit_code[code])
    return rooms


def render(rooms: dict[str, Tally], *, survivors: bool) -> Iterable[str]:
    header = f"{'room':<22}{'killed':>8}{'survived':>10}{'no tests':>10}{'other':>7}"
    yield f"{header}{'total':>7}{'score':>8}"
    total = Tally()
    for room in sorted(rooms):
        tally = rooms[room]
        total.merge(tally)
        yield _row(room, tally)
    yield _row("mcd/model (total)", total)
    if survivors:
        for room in sorted(rooms):
            if rooms[room].survivors:
                yield ""
                yield f"{room}: not killed"
                yield from (f"  {line}" for line in rooms[room].survivors)


def _row(label: str, tally: Tally) -> str:
    counts = tally.by_status
    killed = tally.detected
    survived = counts.get("survived", 0)
    no_tests = counts.get("no tests", 0)
    other = tally.tested - killed - survived - no_tests
    return (
        f"{label:<22}{killed:>8}{survived:>10}{no_tests:>10}{other:>7}"
        f"{tally.total:>7}{tally.score:>7.1f}%"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mutants", type=Path, default=Path("mutants"), help="mutmut's copy")
    parser.add_argument("--survivors", action="store_true", help="list the mutants not killed")
    parser.add_argument(
        "--fail-under", type=float, default=None, help="exit 1 when the total score is lower"
    )
    args = parser.parse_args(argv)
    rooms = read_results(args.mutants)
    if not rooms:
        print(f"no mutmut results under {args.mutants}/{MODEL}: run `make mutation`")
        return 1
    for line in render(rooms, survivors=args.survivors):
        print(line)
    total = Tally()
    for tally in rooms.values():
        total.merge(tally)
    if args.fail_under is not None and total.score < args.fail_under:
        print(f"mutation score {total.score:.1f}% is under {args.fail_under:.1f}%")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
