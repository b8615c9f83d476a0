"""The tree shows the architecture and keeps it: no import circle among mcd's modules (imports
inside functions and under ``TYPE_CHECKING`` count: a type-only import is still one module
knowing another's insides), no room with more than 15 modules, no module past 400 lines, and
every room says in its docstring what it owns. import-linter (``make lint``) keeps which room
may use which; this keeps what it cannot see."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

MCD = Path(__file__).resolve().parents[2] / "mcd"
MAX_MODULES_PER_ROOM = 15
MAX_MODULE_LINES = 400


def _modules(top: Path) -> dict[str, Path]:
    mods = {}
    for f in top.rglob("*.py"):
        rel = f.relative_to(top.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        mods[".".join(parts)] = f
    return mods


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                prefix = package[: len(package) - (node.level - 1)]
                base = ".".join([*prefix, base] if base else prefix)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in known:
                    out.add(full)  # `from pkg import module`
                elif base in known:
                    out.add(base)
    out.discard(name)
    return out


def import_circles(top: Path) -> list[list[str]]:
    """Every strongly connected set of two or more modules (Tarjan), sorted."""
    mods = _modules(top)
    graph = {m: _imports(m, f, set(mods)) for m, f in mods.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(circles)


def _rooms(top: Path) -> Iterator[Path]:
    yield top
    yield from (d for d in sorted(top.rglob("*")) if d.is_dir() and d.name != "__pycache__")


def test_no_import_circle_in_mcd() -> None:
    assert import_circles(MCD) == []


def test_the_circle_check_finds_a_circle_through_a_lazy_and_a_type_only_import(
    tmp_path: Path,
) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "room").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "room" / "__init__.py").write_text("")
    (pkg / "room" / "a.py").write_text("def f():\n    from pkg.room import b\n")
    (pkg / "room" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import C\n"
    )
    (pkg / "room" / "c.py").write_text("from pkg.room.a import f\nclass C: ...\n")
    (pkg / "d.py").write_text("from pkg.room import a\n")  # into the circle, not part of it
    assert import_circles(pkg) == [["pkg.room.a", "pkg.room.b", "pkg.room.c"]]


@pytest.mark.parametrize("room", list(_rooms(MCD)), ids=lambda p: str(p.relative_to(MCD.parent)))
def test_each_room_is_small_and_says_what_it_owns(room: Path) -> None:
    modules = [f for f in room.glob("*.py") if f.name != "__init__.py"]
    assert len(modules) <= MAX_MODULES_PER_ROOM, f"{room}: {len(modules)} modules"
    doc = ast.get_docstring(ast.parse((room / "__init__.py").read_text()))
    assert doc and len(doc.split()) >= 8, f"{room}/__init__.py says nothing of what it owns"
    long = {f.name: n for f in modules if (n := len(f.read_text().splitlines())) > MAX_MODULE_LINES}
    assert long == {}, f"split along a real seam: {long}"
