"""Extract the reason strings mcd can put on a Node, from the source (for the runbook test)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

MCD = Path(__file__).resolve().parents[2] / "mcd"
RETURNED = {
    "validation.py",
    "reconcile.py",
    "validate.py",
    "guards.py",
    "values.py",
    "gate.py",
    "health.py",
}  # functions that return reasons
MIN_LEN = 10
# make mutation runs this from mutmut's copy, which holds each function's mutants beside it
MUTANT = re.compile(r"__mutmut_\d+$")


def _without_mutants(tree: ast.Module) -> ast.Module:
    """The tree without mutmut's mutated copies of functions (their text is not mcd's)."""
    scopes = [n for n in ast.walk(tree) if isinstance(n, ast.Module | ast.ClassDef)]
    for scope in scopes:
        scope.body = [
            n for n in scope.body if not (isinstance(n, ast.FunctionDef) and MUTANT.search(n.name))
        ]
    return tree


def _lead(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = ""
        for v in node.values:
            if not isinstance(v, ast.Constant):
                break
            out += str(v.value)
        return out
    return None


def reason_strings() -> dict[str, str]:
    """Each reason's constant text before its first placeholder -> where it is."""
    found: dict[str, str] = {}
    for path in sorted(MCD.rglob("*.py")):
        if "cli" in path.parts:
            continue
        for node in ast.walk(_without_mutants(ast.parse(path.read_text()))):
            texts: list[ast.AST] = []
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
                texts.append(node.exc.args[0])
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in ("__init__", "on_blocked") and node.args:
                    texts.append(node.args[0])
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id == "unexpected_state" and len(node.args) == 2:
                    texts.append(node.args[1])
            elif isinstance(node, ast.Assign):
                if any(isinstance(t, ast.Name) and t.id == "message" for t in node.targets):
                    texts.append(node.value)
            elif isinstance(node, ast.Return) and node.value and path.name in RETURNED:
                texts.append(node.value)
            for text in texts:
                lead = _lead(text)
                if lead is not None and len(lead.strip()) >= MIN_LEN:
                    line = getattr(node, "lineno", 0)
                    found.setdefault(lead.strip(), f"{path.relative_to(MCD.parent)}:{line}")
    return found


if __name__ == "__main__":
    for text, where in sorted(reason_strings().items(), key=lambda kv: kv[1]):
        print(f"{where}\t{text}")
