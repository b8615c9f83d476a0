"""Run inside a private mount namespace with a tmpfs on /run: stand in for journald.

Binds ``/run/systemd/journal/socket``, lets mcd configure logging and log one
line with a structured field, and prints the fields journald would have got.
"""

import json
import logging
import os
import socket
import sys

from mcd.host.systemd.journal import JOURNAL_SOCKET, configure_logging


def parse(payload: bytes) -> dict[str, str]:
    fields: dict[str, str] = {}
    while payload:
        line, _sep, rest = payload.partition(b"\n")
        if b"=" in line:
            key, _, value = line.partition(b"=")
            fields[key.decode()] = value.decode()
            payload = rest
        else:  # binary-safe form: KEY\n<u64 LE length><value>\n
            size = int.from_bytes(rest[:8], "little")
            fields[line.decode()] = rest[8 : 8 + size].decode()
            payload = rest[8 + size + 1 :]
    return fields


def main() -> None:
    os.makedirs(os.path.dirname(JOURNAL_SOCKET), exist_ok=True)
    sink = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sink.bind(JOURNAL_SOCKET)
    where = configure_logging(fields={"MCD_NODE": "worker-0"})
    logging.getLogger("mcd.test").info(
        "Writing file %s", '"/etc/foo"', extra={"MCD_CONFIG": "rendered-worker-2"}
    )
    sink.settimeout(5)
    payload = sink.recv(1 << 16)
    json.dump({"where": where, "fields": parse(payload)}, sys.stdout)


if __name__ == "__main__":
    main()
