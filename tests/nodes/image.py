"""``make image``: the project's ``Containerfile`` built offline (the stand-in base of
:mod:`tests.real.podman_image`, made once from a debootstrap and imported under the name the
``FROM`` lines ask for) and saved as a docker-archive tarball that ``realnode.sh load`` imports
into a node's containerd.

    python -m tests.nodes.image [TARBALL] [--tag NAME:TAG]

Default: ``build/mcd-image.tar`` holding ``localhost/mcd:dev``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tests.real import podman_image

REPO = Path(__file__).resolve().parents[2]
DEFAULT_TAG = "localhost/mcd:dev"
DEFAULT_TARBALL = REPO / "build" / "mcd-image.tar"


def unavailable() -> str | None:
    return podman_image.unavailable()


def build_tarball(tarball: Path, tag: str = DEFAULT_TAG) -> float:
    """Build the image as ``tag`` and save it to ``tarball``; the seconds it took."""
    start = time.monotonic()
    podman_image.build(tag)
    tarball.parent.mkdir(parents=True, exist_ok=True)
    tarball.unlink(missing_ok=True)
    podman_image.podman("save", "--format", "docker-archive", "--output", str(tarball), tag)
    return time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make image", description=__doc__.split("\n\n")[0])
    parser.add_argument("tarball", nargs="?", type=Path, default=DEFAULT_TARBALL)
    parser.add_argument("--tag", default=DEFAULT_TAG)
    args = parser.parse_args(argv)
    why = unavailable()
    if why:
        print(f"make image: cannot build here: {why}", file=sys.stderr)
        return 3
    seconds = build_tarball(args.tarball, args.tag)
    print(f"{args.tarball}: {args.tag} ({args.tarball.stat().st_size >> 20} MiB, {seconds:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
