"""A stand-in ``rpm -q`` for tests: the rpm database of the booted deployment of the
rpm-ostree stand-in (:mod:`tests.fakes.rpm_ostree`, ``MCD_FAKE_RPMOSTREE_STATE``).

A package is installed when the booted deployment layers it (``packages``) or the
state's ``"base_packages"`` lists it; ``"rpmdb_missing"`` names packages the database
lacks although layered (OCPBUGS-65645: a package lost from the booted deployment).
Exit 0 and the package's NEVRA, or exit 1 and ``package X is not installed``, as rpm."""

import os
import sys
from pathlib import Path

from tests.fakes import rpm_ostree


def main(args: list[str]) -> int:
    if len(args) < 2 or args[0] != "-q" or any(a.startswith("-") for a in args[1:]):
        print(f"rpm stand-in: only 'rpm -q PACKAGE...' is served, not {args}", file=sys.stderr)
        return 2
    state = rpm_ostree.load(Path(os.environ["MCD_FAKE_RPMOSTREE_STATE"]))
    booted = next(d for d in state["deployments"] if d["booted"])
    have = (set(booted.get("packages", [])) | set(state.get("base_packages", []))) - set(
        state.get("rpmdb_missing", [])
    )
    code = 0
    for package in args[1:]:
        if package in have:
            print(f"{package}-1.0-1.el9.x86_64")
        else:
            print(f"package {package} is not installed")
            code = 1
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
