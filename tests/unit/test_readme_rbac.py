"""The README's RBAC table ("Drain modes and who may evict") is what the manifests grant: each
row names a ServiceAccount and the manifests under ``daemonset/`` it reads (a directory is that
overlay as kustomize renders it, a file that file; a ``+`` row whose manifests are files only
adds them to the row above), and the grants its cells list are every grant of that
ServiceAccount there, no more, no less (issue 45: the table had lost the agents'
MachineConfigPool and PinnedImageSet list/watch)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.manifests import DAEMONSET, load, objects
from tests.readme import section

Obj = dict[str, Any]
Grant = tuple[str, str, tuple[str, ...]]
"""(resource, verb, resourceNames)"""
HEADER = "| ServiceAccount (manifests) | nodes | pods | pods/eviction | other |"
_REMARK = re.compile(r"\s*\([^()]*\)")
_NAMES = re.compile(r"`([^`]+)`")
_NAME_LIST = re.compile(r"`[^`]+`(?:/`[^`]+`)*")


def table() -> list[list[str]]:
    text = section("Install on a cluster")
    lines = text.splitlines()
    start = lines.index(HEADER)
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split(" | ")])
    return rows


def _column(resource: str, cell: str) -> set[Grant]:
    cell = _REMARK.sub("", cell).strip()
    if cell == "-":
        return set()
    return {(resource, verb.strip(), ()) for verb in cell.split(",")}


def _other(cell: str, above: set[Grant]) -> set[Grant]:
    found: set[Grant] = set()
    for entry in (_REMARK.sub("", e).strip() for e in cell.split(";")):
        if entry == "as above":
            found |= above
            continue
        main, _, status = entry.partition(" + status ")
        names = tuple(sorted(_NAMES.findall(main)))
        words = _NAME_LIST.sub("", main).split()
        assert len(words) == 2, f"not '<resource> [`name`] <verb>/<verb>': {entry!r}"
        resource, verbs = words
        found |= {(resource, v, names) for v in verbs.split("/")}
        found |= {(f"{resource}/status", v, ()) for v in status.split("/") if status}
    return found


def _documents(paths: list[Path]) -> list[Obj]:
    docs: list[Obj] = []
    for path in paths:
        docs.extend(objects(path) if path.is_dir() else load(path))
    return docs


def granted(docs: list[Obj], namespace: str, name: str) -> set[Grant]:
    """Every (resource, verb, resourceNames) the bindings in ``docs`` give the ServiceAccount."""
    roles = {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d
             for d in docs if d["kind"] in ("Role", "ClusterRole")}  # fmt: skip
    found: set[Grant] = set()
    for binding in (d for d in docs if d["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        subjects = {(s.get("namespace", ""), s["name"]) for s in binding.get("subjects") or []
                    if s["kind"] == "ServiceAccount"}  # fmt: skip
        if (namespace, name) not in subjects:
            continue
        ref = binding["roleRef"]
        where = binding["metadata"].get("namespace", "") if ref["kind"] == "Role" else ""
        role = roles[(ref["kind"], where, ref["name"])]
        for rule in role.get("rules") or []:
            names = tuple(sorted(rule.get("resourceNames") or []))
            found |= {(r, v, names) for r in rule.get("resources") or []
                      for v in rule["verbs"]}  # fmt: skip
    return found


def test_the_readme_rbac_table_is_what_the_manifests_grant() -> None:
    rows = table()
    assert len(rows) >= 7
    previous: tuple[list[Path], list[set[Grant]]] = ([], [set(), set(), set(), set()])
    accounts = set()
    for label, *cells in rows:
        namespace, name = _NAMES.findall(label)[0].split(":")
        accounts.add((namespace, name))
        paths = [DAEMONSET / p for p in _NAMES.findall(label)[1:] if (DAEMONSET / p).exists()]
        assert paths, f"{label}: names no manifest under daemonset/"
        if " + " in label and not any(p.is_dir() for p in paths):
            paths = [*previous[0], *paths]
        parts = [
            previous[1][i] if cell == "as above" else _column(resource, cell)
            for i, (resource, cell) in enumerate(zip(("nodes", "pods", "pods/eviction"), cells[:3], strict=True))
        ]  # fmt: skip
        parts.append(_other(cells[3], previous[1][3]))
        documented = set().union(*parts)
        actual = granted(_documents(paths), namespace, name)
        assert documented - actual == set(), f"{label}: the README lists grants not given"
        assert actual - documented == set(), f"{label}: grants the README does not list"
        previous = (paths, parts)
    # every ServiceAccount the install ships has a row
    shipped = {(d["metadata"]["namespace"], d["metadata"]["name"])
               for d in _documents([DAEMONSET / "kubernetes", DAEMONSET / "openshift",
                                    DAEMONSET / "kubernetes" / "monitoring",
                                    DAEMONSET / "openshift" / "monitoring"])
               if d["kind"] == "ServiceAccount"}  # fmt: skip
    assert shipped == accounts


def test_the_parser_reads_what_a_row_says() -> None:
    """The cell grammar, on a row written for this test."""
    assert _other("events create; machineconfignodes get/create + status patch (why); "
                  "leases `b`/`a` get", set()) == {
        ("events", "create", ()), ("machineconfignodes", "get", ()),
        ("machineconfignodes", "create", ()), ("machineconfignodes/status", "patch", ()),
        ("leases", "get", ("a", "b")),
    }  # fmt: skip
    assert _column("pods", "get, list (cluster-wide)") == {
        ("pods", "get", ()),
        ("pods", "list", ()),
    }
