"""A stand-in ``crictl`` over a CRI runtime, for tests (CRI-O is not packaged here).

Invoked as ``crictl --runtime-endpoint unix://SOCKET --timeout T VERB ...`` through
``tests/fakes/bin/crictl`` with ``MCD_FAKE_CRI_STATE`` naming the state file. It keeps the
runtime's images, records every pull (image, endpoint), and fails on demand: ``"fail":
{IMAGE: MESSAGE}`` makes that pull fail with the message (``"fail_times": {IMAGE: N}``
only N times), ``"disk_full": true`` makes every pull fail as a full disk does.
``inspecti -q IMAGE`` exits 0 when the runtime has the image, 1 else (crictl's behaviour).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

State = dict[str, Any]
STATE_ENV = "MCD_FAKE_CRI_STATE"
NO_SPACE = (
    'pulling image: writing blob: storing blob to file "/var/tmp/container_images_storage": '
    "write /var/tmp/container_images_storage: no space left on device"
)


def new_state(images: list[str] | None = None) -> State:
    return {"images": list(images or []), "pulls": [], "fail": {}, "fail_times": {},
            "disk_full": False}  # fmt: skip


def load(path: Path) -> State:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def save(path: Path, state: State) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    os.replace(tmp, path)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[State]:
    with open(f"{path}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = load(path)
        yield state
        save(path, state)


def main(argv: list[str]) -> int:
    endpoint, args = "", list(argv)
    while args and args[0].startswith("--"):
        flag = args.pop(0)
        value = args.pop(0) if args else ""
        if flag == "--runtime-endpoint":
            endpoint = value
    if not args:
        print("usage: crictl VERB ...", file=sys.stderr)
        return 2
    verb, rest = args[0], [a for a in args[1:] if not a.startswith("-")]
    path = Path(os.environ[STATE_ENV])
    with locked(path) as state:
        if verb == "inspecti":
            if rest and rest[0] in state["images"]:
                print(json.dumps({"status": {"repoTags": [rest[0]]}}))
                return 0
            print(f'FATA[0000] no such image "{rest[0] if rest else ""}" present',
                  file=sys.stderr)  # fmt: skip
            return 1
        if verb == "pull" and rest:
            image = rest[0]
            state["pulls"].append({"image": image, "endpoint": endpoint})
            if state.get("disk_full"):
                print(f'E0101 00:00:00.000000 1 remote_image.go:180] "PullImage from image '
                      f'service failed" err="rpc error: code = Unknown desc = {NO_SPACE}"',
                      file=sys.stderr)  # fmt: skip
                print(f"FATA[0001] pulling image: rpc error: code = Unknown desc = {NO_SPACE}",
                      file=sys.stderr)  # fmt: skip
                return 1
            message = state["fail"].get(image)
            left = state["fail_times"].get(image)
            if message and (left is None or left > 0):
                if left is not None:
                    state["fail_times"][image] = left - 1
                print(f"FATA[0001] pulling image: rpc error: code = Unknown desc = {message}",
                      file=sys.stderr)  # fmt: skip
                return 1
            if image not in state["images"]:
                state["images"].append(image)
            print(f"Image is up to date for {image}")
            return 0
    print(f"crictl stand-in: unsupported verb {verb}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
