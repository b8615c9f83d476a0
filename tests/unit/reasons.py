"""Extract the reason strings mcd can put on a Node, from the source (for the runbook test)."""

from __future__ import annotations

import ast
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
        for node in ast.walk(ast.parse(path.read_text())):
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
