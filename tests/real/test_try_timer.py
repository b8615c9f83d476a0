"""Try mode on a live host (issue 19): ``mcd once-from --try`` run INSIDE the real systemd
container with ``--root /``, as an admin on the node would, so its deadline is a transient
``systemd-run`` timer of the container's PID 1, and the revert at the deadline is run by
systemd alone (no mcd command after the try's own).

mcd runs with the container's Debian ``python3`` from the checkout, bound read-only at its own
path, with the venv's ``site-packages`` for its dependencies (``PYTHONPATH``). That is also
what the timer's unit must reproduce: systemd starts it with an empty environment in ``/``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcd.agent.safety.trymode import TIMER_UNIT, TRY_PREVIOUS, TRY_STATE
from tests.builders import file_entry, mc_doc
from tests.patience import patient
from tests.real.inside import REPO, InsideNode, booted_container

POLICY = "/etc/containers/policy.json"  # crio reloads it: a rebootless change
CRIO = """[Unit]
Description=CRI-O stand-in
[Service]
ExecStart=/bin/sh -c 'echo start >>/var/tmp/crio.log; exec sleep infinity'
ExecReload=/bin/sh -c 'echo reload >>/var/tmp/crio.log'
"""


class Node(InsideNode):
    def show(self, unit: str, *props: str) -> dict[str, str]:
        """``systemctl show`` inside: what the container's systemd says about ``unit``."""
        out = self.sh("systemctl", "show", unit, f"--property={','.join(props)}")
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def look(self, *units: tuple[str, str]) -> tuple[Any, ...]:
        """``systemctl show`` of each (unit, properties), then ``systemctl list-timers``, in one
        call (each a dict, then the timers' text)."""
        script = "".join(f"systemctl show {u} --property={p}; echo @@; " for u, p in units)
        out = self.sh("sh", "-c", script + "systemctl list-timers --all --no-pager")
        *shown, timers = out.split("@@\n")
        parsed = [
            dict(ln.split("=", 1) for ln in block.splitlines() if "=" in ln) for block in shown
        ]
        return (*parsed, timers)

    def timers(self) -> str:
        return self.sh("systemctl", "list-timers", "--all", "--no-pager")

    def config(self, name: str, policy: str) -> str:
        return self.write_config(name, mc_doc(name, files=[file_entry(POLICY, policy, 0o644)]))

    def crio_log(self) -> list[str]:
        return self.path("/var/tmp/crio.log").read_text().split()


@pytest.fixture(scope="module")
def node() -> Iterator[Node]:
    with booted_container() as container:
        n = Node(container)
        (container.root / "etc/containers").mkdir(exist_ok=True)
        (container.root / "etc/systemd/system/crio.service").write_text(CRIO)
        n.sh("systemctl", "daemon-reload")
        n.sh("systemctl", "start", "crio.service")
        code, out, err = n.mcd("once-from", n.config("rendered-worker-1", "one\n"), "--root", "/")
        assert code == 0, err
        assert out == "done: rendered-worker-1 applied to /\n"
        yield n


def wait_for(what: str, check: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + patient(timeout)
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def journal(node: Node, unit: str) -> list[tuple[float, str]]:
    """What ``unit`` logged, with when (seconds since the epoch), from the container's journal."""
    out = node.sh("journalctl", "--no-pager", "-o", "json", f"--unit={unit}")
    entries = [json.loads(line) for line in out.splitlines() if line.strip()]
    return [(int(e["__REALTIME_TIMESTAMP"]) / 1e6, str(e.get("MESSAGE", ""))) for e in entries]


def test_an_unconfirmed_try_is_reverted_by_systemds_timer_at_its_deadline(node: Node) -> None:
    before, reloads = node.current(), node.crio_log().count("reload")
    kept = node.path(POLICY).read_text()
    code, out, err = node.mcd("once-from", "--try", "8s", node.config("rendered-worker-2", "two\n"),
                              "--root", "/")  # fmt: skip
    assert code == 0, err
    assert out == ("done: rendered-worker-2 applied to /\n"
                   "trying rendered-worker-2: reverts in 8s unless `mcd confirm`\n")  # fmt: skip
    state = json.loads(node.path(TRY_STATE).read_text())
    assert (state["config"], state["previous"], state["timer"]) == ("rendered-worker-2", before,
                                                                      True)  # fmt: skip
    assert node.path(POLICY).read_text() == "two\n" and node.current() == "rendered-worker-2"
    # what the container's systemd was given (one look, well before the deadline): a
    # transient timer, armed, precise to a second, whose service runs this interpreter on mcd,
    # found as it was found here
    service = f"{TIMER_UNIT}.service"
    timer, unit, timers = node.look(
        (f"{TIMER_UNIT}.timer", "LoadState,ActiveState,Transient,AccuracyUSec,Unit"),
        (service, "ActiveState,ExecStart,Environment"),
    )  # fmt: skip
    assert timer == {"LoadState": "loaded", "ActiveState": "active", "Transient": "yes",
                     "AccuracyUSec": "1s", "Unit": service}  # fmt: skip
    assert unit["ActiveState"] == "inactive"  # not yet
    assert "argv[]=/usr/bin/python3 -m mcd try-revert --root / ;" in unit["ExecStart"]
    assert unit["Environment"].startswith(f"PYTHONPATH={REPO}:")
    assert f"{TIMER_UNIT}.timer" in timers
    # no mcd command from here on: systemd alone runs the revert
    wait_for("the timer's revert", lambda: not node.path(TRY_STATE).exists(), 90)
    ended = ("inactive", "failed")
    wait_for("its service to end", lambda: node.show(service, "ActiveState")["ActiveState"] in ended,
             30)  # fmt: skip
    assert node.show(service, "ActiveState", "Result") == {"ActiveState": "inactive",
                                                           "Result": "success"}  # fmt: skip
    assert node.current() == before
    assert node.path(POLICY).read_text() == kept
    assert not node.path(TRY_PREVIOUS).exists()
    assert node.crio_log().count("reload") == reloads + 2  # the try's reload, the revert's
    logged = journal(node, service)  # systemd's lines about the unit, and mcd's own
    assert [m for _, m in logged if "reverted" in m] == [
        f"reverted the try of rendered-worker-2 to {before} (not confirmed in time): done"
    ]
    started = [at for at, m in logged if m.startswith("Started")]
    assert len(started) == 1 and started[0] >= state["deadline"]  # once, and not before it
    assert f"{TIMER_UNIT}.timer" not in node.timers()


def test_a_confirm_before_the_deadline_cancels_systemds_timer(node: Node) -> None:
    code, _, err = node.mcd("once-from", "--try", "10m", node.config("rendered-worker-3", "three\n"),
                            "--root", "/")  # fmt: skip
    assert code == 0, err
    # a second try gets its timer (the name of the first one is free again)
    assert node.show(f"{TIMER_UNIT}.timer", "ActiveState")["ActiveState"] == "active"
    code, out, err = node.mcd("confirm", "--root", "/")
    assert (code, out) == (0, "confirmed: rendered-worker-3 stays\n"), err
    assert node.show(f"{TIMER_UNIT}.timer", "LoadState")["LoadState"] == "not-found"
    assert f"{TIMER_UNIT}" not in node.timers()
    assert not node.path(TRY_STATE).exists() and not node.path(TRY_PREVIOUS).exists()
    assert node.current() == "rendered-worker-3"
    assert node.path(POLICY).read_text() == "three\n"


def test_a_revert_unit_left_failed_does_not_keep_the_next_try_from_its_timer(node: Node) -> None:
    # a revert that failed (here: a stand-in that exits 1) stays loaded as failed, by name
    node.c.run("systemd-run", f"--unit={TIMER_UNIT}", "--wait", "/bin/false")
    assert node.show(f"{TIMER_UNIT}.service", "ActiveState")["ActiveState"] == "failed"
    code, _, err = node.mcd("once-from", "--try", "10m", node.config("rendered-worker-4", "four\n"),
                            "--root", "/")  # fmt: skip
    assert code == 0, err
    assert "Could not set a timer" not in err
    assert node.show(f"{TIMER_UNIT}.timer", "ActiveState")["ActiveState"] == "active"
    assert json.loads(node.path(TRY_STATE).read_text())["timer"] is True
    code, out, err = node.mcd("try-revert", "--now", "--root", "/")
    assert code == 0 and out.startswith("reverted the try of rendered-worker-4"), err
    assert node.path(POLICY).read_text() != "four\n"
    # reverted early by hand: the timer has nothing left to do, and would hold its name
    assert node.show(f"{TIMER_UNIT}.timer", "LoadState")["LoadState"] == "not-found"
