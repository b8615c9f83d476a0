"""A stand-in ``podman`` for the extensions image (podman pulls from no registry here).

Invoked as ``podman ...`` through ``tests/fakes/bin/podman`` with
``MCD_FAKE_PODMAN_STATE`` naming a JSON state file: ``"registry"`` maps an image
reference to a directory holding that image's root filesystem (what a registry
would serve), ``"local"`` lists the references in local storage. It answers the
verbs the agent uses the way podman 4/5 does: ``images --format=json --filter
reference=IMG`` (a JSON list), ``pull -q [--authfile F] IMG`` (the image id, or
podman's ``Error: initializing source docker://IMG: ... manifest unknown`` and
exit 125), ``create ... --name NAME IMG`` (a container id), ``cp CID:/ DEST``
(the image's tree copied to DEST, which must not exist), ``kill``, ``rm -f``.
Every call is recorded in ``"calls"``.
"""

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

State = dict[str, Any]


def new_state(registry: dict[str, str] | None = None, local: list[str] | None = None) -> State:
    return {"registry": dict(registry or {}), "local": list(local or []), "containers": {},
            "calls": []}  # fmt: skip


def _id(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _fail(message: str, code: int = 125) -> int:
    print(f"Error: {message}", file=sys.stderr)
    return code


def main(argv: list[str]) -> int:
    path = Path(os.environ["MCD_FAKE_PODMAN_STATE"])
    state: State = json.loads(path.read_text())
    state["calls"].append(argv)
    code = _main(state, argv)
    path.write_text(json.dumps(state, indent=1))
    return code


def _main(state: State, argv: list[str]) -> int:
    verb, args = (argv[0] if argv else ""), argv[1:]
    positional = [a for a in args if not a.startswith("-")]
    if verb == "images":
        ref = next((a.split("=", 1)[1] for a in args if a.startswith("reference=")), "")
        found = [{"Id": _id(ref), "Names": [ref]}] if ref in state["local"] else []
        print(json.dumps(found))
        return 0
    if verb == "pull":
        if "--authfile" in args:
            positional = [a for a in positional if a != args[args.index("--authfile") + 1]]
        ref = positional[-1]
        if ref not in state["registry"]:
            return _fail(
                f"initializing source docker://{ref}: reading manifest in {ref}: manifest unknown"
            )
        state["local"].append(ref)
        print(_id(ref))
        return 0
    if verb == "create":
        name, ref = args[args.index("--name") + 1], positional[-1]
        if ref not in state["local"]:
            return _fail(f"{ref}: image not known")
        cid = _id(name)
        state["containers"][cid] = {"name": name, "image": ref}
        print(cid)
        return 0
    if verb == "cp":
        source, dest = positional
        cid = source.split(":", 1)[0]
        container = state["containers"].get(cid) or next(
            (c for c in state["containers"].values() if c["name"] == cid), None
        )
        if container is None:
            return _fail(f"no container with name or ID {cid!r} found: no such container")
        shutil.copytree(state["registry"][container["image"]], dest, symlinks=True)
        return 0
    if verb in ("kill", "rm"):
        name = positional[-1]
        for cid, c in list(state["containers"].items()):
            if name in (cid, c["name"]) and verb == "rm":
                del state["containers"][cid]
        return 0
    return _fail(f"unrecognized command `podman {verb}`")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
