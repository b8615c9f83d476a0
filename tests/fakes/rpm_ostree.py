"""A stand-in ``rpm-ostree`` for tests (rpm-ostree itself is not packaged here).

Invoked as ``rpm-ostree ...`` through ``tests/fakes/bin/rpm-ostree`` with
``MCD_FAKE_RPMOSTREE_STATE`` naming the state file. It prints ``status --json``
in the real key shapes, stages a deployment on rebase / kargs / override /
update, drops it on ``cleanup -p``, and fails on demand: the state's
``"fail": {"rebase": "error: ..."}`` makes that verb print the message and
exit 1 (``"fail_times"`` limits how many times). With ``"root"`` set to the
node's root, ``update --install`` finds packages only in the enabled repositories
of its ``/etc/yum.repos.d`` (the extensions repository), as rpm-ostree does.

Deployments live in one of two places. Given a ``sysroot`` (``new_state(...,
sysroot=DIR)``, as root with ``ostree`` installed), they are real OSTree
deployments in that sysroot (:mod:`tests.fakes.ostree_sysroot`): every stage is an
``ostree admin deploy`` with its kernel arguments, every cleanup an ``undeploy``,
and ``status`` is read back from the sysroot. Without one, they are entries in
the JSON state file. :func:`load` and :func:`save` show both the same way: a
deployment a test drops from ``state["deployments"]`` is undeployed.

The harness boots the staged deployment with :func:`boot_staged`.

Pulls take time where a test says so: ``MCD_FAKE_PULL_SECONDS`` is how long a ``rebase``
of an image not yet in the repository waits (``--download-only`` pulls and deploys
nothing; a later ``rebase`` of that image finds it pulled and only deploys), and with
``MCD_FAKE_PULL_GATE=FILE`` a pull writes ``FILE.pulling`` and waits until ``FILE``
exists. The wait happens outside the state's lock, as rpm-ostree's pull does not hold
its sysroot lock against ``status``. Images pulled are listed in ``state["downloaded"]``.
"""

import configparser
import contextlib
import fcntl
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.fakes import ostree_sysroot

State = dict[str, Any]


def new_state(
    image: str = "quay.io/openshift/os@sha256:1111",
    kargs: list[str] | None = None,
    sysroot: Path | None = None,
) -> State:
    if sysroot is not None:
        booted = ostree_sysroot.init(sysroot, image, kargs or ["root=UUID=abc", "rw"])
        return {
            "sysroot": str(sysroot),
            "booted": booted,
            "fail": {},
            "fail_times": {},
            "calls": [],
        }
    return {
        "deployments": [
            _deployment(image, kargs or ["root=UUID=abc", "rw"], booted=True, serial=0)
        ],
        "fail": {},
        "fail_times": {},
        "calls": [],
    }


def _deployment(image: str, kargs: list[str], booted: bool = False, serial: int = 0,
                packages: list[str] | None = None, removals: list[str] | None = None) -> State:  # fmt: skip
    checksum = hashlib.sha256(
        json.dumps([image, kargs, packages, removals, serial]).encode()
    ).hexdigest()
    return {
        "id": f"rhcos-{checksum}.{serial}",
        "osname": "rhcos",
        "serial": serial,
        "checksum": checksum,
        "version": "9.6.20261121-0",
        "timestamp": 1795225600,
        "booted": booted,
        "staged": not booted,
        "pinned": False,
        "unlocked": "none",
        "container-image-reference": f"ostree-unverified-registry:{image}",
        "requested-packages": list(packages or []),
        "requested-local-packages": [],
        "requested-base-removals": list(removals or []),
        "packages": list(packages or []),
        "kargs": list(kargs),  # stand-in bookkeeping, not part of the real schema
    }


def _name(deployment: State) -> str:
    return str(deployment["id"]).removeprefix("rhcos-")


def _from_sysroot(state: State) -> list[State]:
    """The sysroot's deployments in ``status --json`` shape (plus the stand-in's ``kargs``)."""
    found = ostree_sysroot.deployments(Path(state["sysroot"]))
    names = [d["name"] for d in found]
    booted_at = names.index(state["booted"]) if state["booted"] in names else len(names)
    out = []
    for i, d in enumerate(found):
        out.append({
            "id": f"rhcos-{d['name']}", "osname": ostree_sysroot.OSNAME, "serial": d["serial"],
            "checksum": d["checksum"], "version": ostree_sysroot.VERSION, "timestamp": 1795225600,
            "booted": i == booted_at, "staged": i < booted_at, "pinned": False,
            "unlocked": "none", "container-image-reference": d["container-image-reference"],
            "requested-packages": d["requested-packages"], "requested-local-packages": [],
            "requested-base-removals": d["requested-base-removals"],
            "packages": d["requested-packages"], "kargs": d["kargs"],
        })  # fmt: skip
    return out


def load(path: Path) -> State:
    data: State = json.loads(path.read_text())
    if "sysroot" in data:
        data["deployments"] = _from_sysroot(data)
    return data


def save(path: Path, state: State) -> None:
    state = dict(state)
    if "sysroot" in state and "deployments" in state:
        # the sysroot is the record: apply what the caller changed to it
        wanted = state.pop("deployments")
        names = {_name(d) for d in wanted}
        booted = [_name(d) for d in wanted if d["booted"]]
        state["booted"] = booted[0] if booted else state["booted"]
        for d in _from_sysroot(state):
            if _name(d) not in names:
                ostree_sysroot.undeploy(Path(state["sysroot"]), _name(d))
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(state, indent=1))
    os.replace(tmp, path)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """The state's one writer at a time: every stand-in call and every test's edit, so an
    agent's call never writes back a state read before a test's change (a lost update)."""
    with open(path.with_name(f"{path.name}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@contextlib.contextmanager
def edit(path: Path) -> Iterator[State]:
    """A test's change to the state while an agent may be calling the stand-in."""
    with locked(path):
        state = load(path)
        yield state
        save(path, state)


def boot_staged(path: Path) -> bool:
    """The harness's reboot: the staged deployment becomes the booted one (False if none);
    what stays is the new booted deployment and the one booted before it (the rollback)."""
    state = load(path)
    if "sysroot" in state:
        staged = [d for d in state["deployments"] if d["staged"]]
        if not staged:
            return False
        rollback = state["booted"]
        state["booted"] = _name(staged[0])
        for d in state["deployments"]:
            d["booted"] = _name(d) == state["booted"]
        state["deployments"] = [
            d for d in state["deployments"] if _name(d) in (state["booted"], rollback)
        ]
        save(path, state)
        return True
    staged = [d for d in state["deployments"] if d["staged"]]
    if not staged:
        return False
    for d in state["deployments"]:
        d["booted"] = False
    staged[0]["booted"], staged[0]["staged"] = True, False
    rollback = [d for d in state["deployments"] if d is not staged[0]][:1]
    state["deployments"] = [staged[0], *rollback]
    save(path, state)
    return True


def _default(state: State) -> State:
    staged = [d for d in state["deployments"] if d["staged"]]
    return staged[0] if staged else next(d for d in state["deployments"] if d["booted"])


def _stage(state: State, image: str | None = None, kargs: list[str] | None = None,
           packages: list[str] | None = None, removals: list[str] | None = None) -> None:  # fmt: skip
    base = _default(state)
    if "sysroot" in state:
        ostree_sysroot.deploy(
            Path(state["sysroot"]),
            image or base["container-image-reference"].split(":", 1)[1],
            base["kargs"] if kargs is None else kargs,
            base["requested-packages"] if packages is None else packages,
            base["requested-base-removals"] if removals is None else removals,
            booted=state["booted"],
        )
        state["deployments"] = _from_sysroot(state)
        return
    serial = max(d["serial"] for d in state["deployments"]) + 1
    new = _deployment(
        image or base["container-image-reference"].split(":", 1)[1],
        base["kargs"] if kargs is None else kargs,
        serial=serial,
        packages=base["requested-packages"] if packages is None else packages,
        removals=base["requested-base-removals"] if removals is None else removals,
    )
    state["deployments"] = [new] + [d for d in state["deployments"] if not d["staged"]]


def _rollback(state: State) -> bool:
    """``rpm-ostree rollback``: the deployment after the booted one is the next boot's. In a
    sysroot, a real ``ostree admin deploy`` of its commit, origin and kernel arguments as the
    new default (the stand-in cannot reorder bootloader entries with this ostree)."""
    names = [_name(d) for d in state["deployments"]]
    booted = next(i for i, d in enumerate(state["deployments"]) if d["booted"])
    if booted + 1 >= len(names):
        return False
    previous = state["deployments"][booted + 1]
    if "sysroot" in state:
        ostree_sysroot.deploy(
            Path(state["sysroot"]), previous["container-image-reference"].split(":", 1)[1],
            previous["kargs"], previous["requested-packages"],
            previous["requested-base-removals"], booted=state["booted"],
        )  # fmt: skip
        state["deployments"] = _from_sysroot(state)
        return True
    previous["staged"] = True
    rest = [d for d in state["deployments"] if d is not previous and not d["staged"]]
    state["deployments"] = [previous, *rest]
    return True


def _options(args: list[str], name: str) -> list[str]:
    values, i = [], 0
    while i < len(args):
        if args[i] == name and i + 1 < len(args):
            values.append(args[i + 1])
            i += 2
            continue
        if args[i].startswith(name + "="):
            values.append(args[i].split("=", 1)[1])
        i += 1
    return values


def _not_in_repos(state: State, packages: list[str]) -> list[str]:
    """With ``state["root"]`` (a node root), packages must come from an enabled repository
    of its ``/etc/yum.repos.d`` (``baseurl`` a directory holding ``NAME-*.rpm``), as
    rpm-ostree resolves them; without it every package is found."""
    if "root" not in state:
        return []
    root = Path(state["root"])
    dirs = []
    for repo in sorted((root / "etc/yum.repos.d").glob("*.repo")):
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(repo.read_text())
        for section in parser.sections():
            if parser[section].get("enabled", "1") != "1":
                continue
            base = parser[section].get("baseurl", "").removeprefix("file://")
            dirs.append(root / base.lstrip("/"))
    if not dirs and packages:
        return packages
    return [p for p in packages if not any(list(d.glob(f"**/{p}-[0-9]*.rpm")) for d in dirs)]


def _image_of(args: list[str]) -> str:
    ref = next((a for a in args if not a.startswith("--")), "")
    return ref.split(":", 1)[1] if ":" in ref else ref


def pull(image: str, pulled: list[str]) -> None:
    """A registry pull of ``image`` (nothing when ``pulled`` holds it): the test's pull time
    and gate (module docstring)."""
    if image in pulled:
        return
    gate = os.environ.get("MCD_FAKE_PULL_GATE", "")
    if gate:
        Path(f"{gate}.pulling").write_text(image)
        deadline = time.monotonic() + 120
        while not Path(gate).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    time.sleep(float(os.environ.get("MCD_FAKE_PULL_SECONDS", "0") or 0))


def _failing(state: State, verb: str) -> bool:
    return bool(state["fail"].get(verb)) and state["fail_times"].get(verb, 1) > 0


def main(argv: list[str]) -> int:
    path = Path(os.environ["MCD_FAKE_RPMOSTREE_STATE"])
    if argv and argv[0] == "rebase":
        state = load(path)
        if not _failing(state, "rebase"):
            pull(_image_of(argv[1:]), state.get("downloaded", []))
    with locked(path):
        return _call(path, argv)


def _call(path: Path, argv: list[str]) -> int:
    state = load(path)
    verb = argv[0] if argv else ""
    state["calls"].append({"argv": argv, "client": os.environ.get("RPMOSTREE_CLIENT_ID", "")})
    fail = state["fail"].get(verb)
    if _failing(state, verb):
        state["fail_times"][verb] = state["fail_times"].get(verb, 1) - 1
        save(path, state)
        print(fail, file=sys.stderr)
        return 1
    args = argv[1:]
    out = ""
    if verb == "--version":
        out = (
            "rpm-ostree:\n Version: '2026.1'\n Git: stand-in\n Features:\n  - rust\n  - container\n"
        )
    elif verb == "status":
        public = [{k: v for k, v in d.items() if k != "kargs"} for d in state["deployments"]]
        out = json.dumps({"deployments": public, "transaction": None, "cached-update": None})
    elif verb == "rebase":
        image = _image_of(args)
        state["downloaded"] = sorted({*state.get("downloaded", []), image})
        if "--download-only" not in args:
            _stage(state, image=image)
    elif verb == "kargs" and not args:
        out = " ".join(_default(state)["kargs"]) + "\n"
    elif verb == "kargs":
        kargs = list(_default(state)["kargs"])
        for arg in _options(args, "--delete-if-present") + _options(args, "--delete"):
            if arg in kargs:
                kargs.remove(arg)
        kargs += _options(args, "--append")
        _stage(state, kargs=kargs)
    elif verb == "override":
        base = _default(state)
        removals, packages = list(base["requested-base-removals"]), list(base["requested-packages"])
        names = [a for a in args[1:] if not a.startswith("--") and a not in _options(args, "--install")
                 and a not in _options(args, "--uninstall")]  # fmt: skip
        if args[0] == "remove":
            removals = sorted(set(removals) | set(names))
        elif args[0] == "reset":
            removals = [r for r in removals if r not in names]
        packages = [p for p in packages if p not in _options(args, "--uninstall")] + _options(
            args, "--install"
        )
        _stage(state, packages=packages, removals=removals)
    elif verb == "update":
        missing = _not_in_repos(state, _options(args, "--install"))
        if missing:
            print(f"error: Packages not found: {', '.join(missing)}", file=sys.stderr)
            save(path, state)
            return 1
        packages = [
            p
            for p in _default(state)["requested-packages"]
            if p not in _options(args, "--uninstall")
        ]
        dropped = state.get("drop_packages", [])  # OCPBUGS-65645: a package silently lost
        installed = [p for p in _options(args, "--install") if p not in dropped]
        _stage(state, packages=packages + installed)
    elif verb == "rollback":
        if not _rollback(state):
            print("error: No rollback deployment found", file=sys.stderr)
            save(path, state)
            return 1
    elif verb == "cleanup":
        state["deployments"] = [d for d in state["deployments"] if not d["staged"]]
    else:
        print(f"error: unknown command {verb}", file=sys.stderr)
        save(path, state)
        return 1
    save(path, state)
    sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
