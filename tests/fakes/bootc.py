"""A stand-in ``bootc`` for tests (bootc is not packaged here), beside the rpm-ostree one.

Invoked as ``bootc ...`` through ``tests/fakes/bin/bootc`` with ``MCD_FAKE_BOOTC_STATE`` naming
the state file. ``status --format=json`` prints a ``BootcHost`` in bootc's shape
(``status.booted/staged/rollback.image.image.image``, ``imageDigest``); ``switch [--transport
registry] IMAGE`` stages IMAGE (its digest made from the reference); ``upgrade`` stages the
booted reference again with a new digest; ``rollback`` makes the rollback entry the next
boot's (a staged one is dropped). ``switch --download-only`` pulls IMAGE and stages it locked:
:func:`boot_staged` does not boot it until a ``switch`` without the flag unlocks it (no pull
then). Pulls wait as the rpm-ostree stand-in's do (``MCD_FAKE_PULL_SECONDS``,
``MCD_FAKE_PULL_GATE``). The state's ``"fail": {"switch": "error: ..."}`` makes that
verb print the message and exit 1. The harness boots what is staged with :func:`boot_staged`.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from tests.fakes.rpm_ostree import pull

State = dict[str, Any]


def _entry(image: str, salt: str = "") -> dict[str, str]:
    digest = hashlib.sha256((image + salt).encode()).hexdigest()
    return {"image": image, "digest": f"sha256:{digest}"}


def new_state(image: str) -> State:
    return {"booted": _entry(image), "staged": None, "rollback": None, "fail": {}, "calls": []}


def load(path: Path) -> State:
    state: State = json.loads(path.read_text())
    return state


def save(path: Path, state: State) -> None:
    path.write_text(json.dumps(state))


def boot_staged(path: Path) -> bool:
    """The next boot: the staged entry (else the booted one) boots; False when none staged."""
    state = load(path)
    if not state["staged"] or state["staged"].get("download_only"):
        return False
    state["rollback"], state["booted"], state["staged"] = state["booted"], state["staged"], None
    save(path, state)
    return True


def _shown(entry: dict[str, str] | None) -> dict[str, Any] | None:
    if not entry:
        return None
    return {
        "image": {
            "image": {"image": entry["image"], "transport": "registry"},
            "version": None,
            "timestamp": None,
            "imageDigest": entry["digest"],
        },
        "incompatible": False,
        "pinned": False,
    }


def _status(state: State) -> dict[str, Any]:
    spec = (state["staged"] or state["booted"])["image"]
    return {
        "apiVersion": "org.containers.bootc/v1",
        "kind": "BootcHost",
        "metadata": {"name": "host"},
        "spec": {"image": {"image": spec, "transport": "registry"}, "bootOrder": "default"},
        "status": {
            "staged": _shown(state["staged"]),
            "booted": _shown(state["booted"]),
            "rollback": _shown(state["rollback"]),
            "type": "bootcHost",
        },
    }


def _image(argv: list[str]) -> str:
    return [a for a in argv[1:] if not a.startswith("--") and a != "registry"][-1]


def main(argv: list[str]) -> int:
    path = Path(os.environ["MCD_FAKE_BOOTC_STATE"])
    state = load(path)
    if argv and argv[0] == "switch" and not state["fail"].get("switch"):
        pull(_image(argv), state.get("downloaded", []))
        state = load(path)
    state["calls"].append(argv)
    verb = argv[0] if argv else ""
    failure = state["fail"].get(verb)
    if failure:
        save(path, state)
        print(failure, file=sys.stderr)
        return 1
    if verb == "status" and ("--format=json" in argv or "--json" in argv):
        print(json.dumps(_status(state)))
    elif verb == "switch":
        image = _image(argv)
        state["downloaded"] = sorted({*state.get("downloaded", []), image})
        state["staged"] = _entry(image)
        if "--download-only" in argv:
            state["staged"]["download_only"] = True
    elif verb == "upgrade":
        state["staged"] = _entry(state["booted"]["image"], salt=str(len(state["calls"])))
    elif verb == "rollback":
        if state["rollback"]:
            state["staged"] = None
            state["staged"], state["rollback"] = state["rollback"], state["booted"]
    else:
        print(f"error: unknown command {argv}", file=sys.stderr)
        return 1
    save(path, state)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
