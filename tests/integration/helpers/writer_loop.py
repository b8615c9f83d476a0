"""Write a large file over and over, alternating two contents, until killed."""

import sys

from mcd.host.fs import fsops
from mcd.host.rootfs import Root

SIZE = 24 << 20


def main() -> None:
    root, path = Root(sys.argv[1]), sys.argv[2]
    blocks = (b"A" * SIZE, b"B" * SIZE)
    i = 0
    print("started", flush=True)
    while True:
        fsops.write_file(root, path, blocks[i % 2])
        i += 1


if __name__ == "__main__":
    main()
