"""Run inside a private mount namespace (``unshare -m``): a real systemd-journald on a tmpfs
``/run``, and messages sent the way systemd-logind sends them.

``write DIR SPEC...``: journal files for the messages, left in DIR (bound on
/run/log/journal). ``follow``: start mcd's login monitor on that journal, then send more;
print what it saw as JSON. A SPEC is ``logind:<session>`` (sent by a process whose comm is
``systemd-logind``, as journald records it in the trusted ``_COMM``) or ``fake:<session>``
(the same message from an ordinary process).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time

from mcd.host.systemd.logins import LoginMonitor
from systemd import journal

JOURNALD = "/lib/systemd/systemd-journald"
SOCKET = "/run/systemd/journal/socket"
CONF = (
    "[Journal]\nStorage=volatile\nReadKMSG=no\nForwardToSyslog=no\nForwardToKMsg=no\n"
    "ForwardToConsole=no\nForwardToWall=no\n"
)
SESSION_START = "8d45620c1a4348dbb17410da57c60c66"


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True)


def start_journald(directory: str) -> subprocess.Popen[bytes]:
    sh("mount", "-t", "tmpfs", "tmpfs", "/run")
    os.makedirs("/run/systemd/journal")
    os.makedirs("/run/log/journal")
    sh("mount", "--bind", directory, "/run/log/journal")
    with open("/run/journald.conf", "w") as f:
        f.write(CONF)
    sh("mount", "--bind", "/run/journald.conf", "/etc/systemd/journald.conf")
    proc = subprocess.Popen([JOURNALD], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if os.path.exists(SOCKET):
            return proc
        time.sleep(0.05)
    raise SystemExit("journald did not start")


def send(spec: str) -> None:
    """Send from a child whose comm is systemd-logind (or not): journald reads it from /proc."""
    kind, _, session = spec.partition(":")
    pid = os.fork()
    if pid == 0:
        if kind == "logind":
            with open("/proc/self/comm", "w") as f:
                f.write("systemd-logind")
        payload = (
            f"MESSAGE=New session {session} of user core.\nMESSAGE_ID={SESSION_START}\n"
            f"SESSION_ID={session}\nUSER_ID=core\n"
        ).encode()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.sendto(payload, SOCKET)
        time.sleep(1.0)  # alive while journald reads its /proc entry (_COMM) for the message
        os._exit(0)
    os.waitpid(pid, 0)


def wait_stored(session: str) -> None:
    """Until journald has written the session start (read back with a plain Reader)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with journal.Reader(path="/run/log/journal") as reader:
            reader.add_match(SESSION_ID=session)
            if any(True for _ in reader):
                return
        time.sleep(0.05)
    raise SystemExit(f"journald did not store session {session}")


def main() -> None:
    mode, directory, *specs = sys.argv[1:]
    journald = start_journald(directory)
    try:
        if mode == "write":
            for spec in specs:
                send(spec)
            for spec in specs:
                wait_stored(spec.partition(":")[2])
            return
        seen: list[str] = []
        send("logind:1")  # before the monitor: an early login
        wait_stored("1")  # journald stores it asynchronously
        stop = threading.Event()
        monitor = LoginMonitor(lambda login: seen.append(login.session), "/run/log/journal", 0.1)
        thread = threading.Thread(target=monitor.run, args=(stop,), daemon=True)
        thread.start()
        time.sleep(0.5)
        send("fake:2")
        send("logind:3")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(seen) < 2:
            time.sleep(0.05)
        time.sleep(0.5)  # a late fake would show up here
        stop.set()
        thread.join(5)
        json.dump(seen, sys.stdout)
    finally:
        journald.terminate()
        journald.wait(5)


if __name__ == "__main__":
    main()
