"""Mark the surviving and untested mutants of some sub-rooms of mcd/model for a re-test.

mutmut keeps each mutant's verdict in ``mutants/<file>.py.meta`` and the next ``mutmut run``
tests only the mutants whose verdict is None (or whose function changed). New tests do not
reset an earlier "survived" (exit code 0) or "no tests" (33): this script does, so that the
next run (``make mutation MUTANTS=...`` or ``mutmut run``) judges them against the new tests.
Killed mutants keep their verdict (a test added never revives one).

    python scripts/mutation_retest.py node pool ignition   # sub-rooms of mcd/model
    python scripts/mutation_retest.py base                  # the modules at mcd/model's top
    python scripts/mutation_retest.py pool/canary           # one module
    python scripts/mutation_retest.py --all                 # every sub-room

Run it from the repository root, never while a mutmut run is going (that run would write its
own copy of the verdicts back).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from mutmut.mutation.data import SourceFileMutationData

MODEL = Path("mcd/model")
RETEST = frozenset({0, 33})
"""Exit codes re-tested: 0 (survived) and 33 (no tests)."""


def sources(room: str) -> list[Path]:
    """The mutated source files of ``room`` ('base': mcd/model's own modules; a module such
    as 'pool/canary': that file alone)."""
    if room == "base":
        return sorted(MODEL.glob("*.py"))
    folder = MODEL / room.removeprefix("model/").strip("/")
    if folder.with_suffix(".py").is_file():
        return [folder.with_suffix(".py")]
    if not folder.is_dir():
        raise SystemExit(f"mutation_retest: no sub-room {folder}")
    return sorted(folder.rglob("*.py"))


def reset(paths: Iterable[Path], codes: frozenset[int] = RETEST) -> int:
    """Set the verdicts in ``codes`` to None in each file's meta; how many were reset."""
    count = 0
    for path in paths:
        data = SourceFileMutationData(path=path)
        if not data.meta_path.exists():
            continue
        data.load()
        changed = [k for k, code in data.exit_code_by_key.items() if code in codes]
        for key in changed:
            data.exit_code_by_key[key] = None
        if changed:
            data.save()
        count += len(changed)
    return count


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rooms", nargs="*", help="sub-rooms of mcd/model (node, pool, ...) or base")
    parser.add_argument("--all", action="store_true", help="every sub-room and base")
    args = parser.parse_args(argv)
    rooms = list(args.rooms)
    if args.all:
        rooms = ["base", *sorted(p.name for p in MODEL.iterdir() if (p / "__init__.py").exists())]
    if not rooms:
        parser.error("name at least one sub-room, or --all")
    for room in rooms:
        print(f"{room}: {reset(sources(room))} mutants to re-test")
    return 0


if __name__ == "__main__":
    sys.exit(main())
