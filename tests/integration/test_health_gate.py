"""Health gates on a rebootless update (issue 19): a failed gate rolls the update back from
the journal's backups, runs the actions again, and says which check failed and why; a
rollback interrupted half-way is finished by the next run."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcd.agent.commands.once import once_from
from mcd.agent.safety.health import GATE_STATE, HealthGate, last_verdict
from mcd.agent.update.handles import Node
from mcd.agent.update.journal import JOURNAL, Journal, Phase
from mcd.agent.update.resume import recover
from mcd.agent.update.transaction import Outcome, Transaction, UpdateError
from mcd.host.effects import HostEffects
from mcd.host.rootfs import Root
from mcd.model.disruption.policy import DisruptionPolicies, FilePolicy, restart
from mcd.model.machineconfig import load_machine_config
from mcd.model.node.health import REQUIRED_DIR, GateSettings
from mcd.model.planning.plan import make_plan
from mcd.model.vocabulary import CURRENT_CONFIG_PATH
from tests.builders import file_entry, mc_doc
from tests.e2e.harness import make_root
from tests.fakes.memory_systemd import MemorySystemd

UNIT = "[Service]\nExecStart=/usr/bin/app\n[Install]\nWantedBy=multi-user.target\n"
POLICIES = DisruptionPolicies(files=(FilePolicy("/etc/app.conf", (restart("app.service"),)),))


class AppSystemd(MemorySystemd):
    """app.service dies when it starts on a config that says ``broken``."""

    def restart(self, unit: str) -> None:
        self.calls.append(("restart", (unit,)))
        conf = (self.root / "etc/app.conf").read_text()
        self.active[unit] = "failed" if "broken" in conf else "active"


def doc(name: str, app: str) -> dict[str, Any]:
    units = [{"name": "app.service", "contents": UNIT, "enabled": True}]
    return mc_doc(name, files=[file_entry("/etc/app.conf", app)], units=units)


@pytest.fixture
def node(tmp_path: Path) -> tuple[Path, Node, AppSystemd]:
    root = tmp_path / "root"
    make_root(root)
    (root / "run/ostree-booted").unlink()
    systemd = AppSystemd(root)
    host = Node(Root(root), HostEffects(Root(root), systemd))
    first = tmp_path / "one.json"
    first.write_text(json.dumps(doc("rendered-worker-1", "mode=good\n")))
    once_from(str(first), host, skip_reboot=True)
    return root, host, systemd


def update(host: Node, app: str, settings: GateSettings) -> Transaction:
    old_doc = host.root.read_bytes(CURRENT_CONFIG_PATH)
    new_doc = json.dumps(doc("rendered-worker-2", app)).encode()
    plan = make_plan(load_machine_config(old_doc), load_machine_config(new_doc), POLICIES)
    gate = HealthGate(host.root, host.effects.systemd, settings, sleep=lambda s: None)
    return Transaction(host, plan, old_doc, new_doc, preflight=False, gate=gate)


def current(root: Path) -> str:
    return str(json.loads((root / CURRENT_CONFIG_PATH.lstrip("/")).read_text())["metadata"]["name"])


def test_a_unit_that_fails_after_the_update_rolls_it_back_and_restarts_on_the_old_files(
    node: tuple[Path, Node, AppSystemd],
) -> None:
    root, host, systemd = node
    with pytest.raises(UpdateError) as e:
        update(host, "mode=broken\n", GateSettings(settle=0)).run()
    assert e.value.step == "gate"
    assert str(e.value) == (
        "health gate failed after update to rendered-worker-2: check units failed: "
        "app.service is failed; rolled back to rendered-worker-1"
    )
    assert (root / "etc/app.conf").read_text() == "mode=good\n"
    assert current(root) == "rendered-worker-1"
    assert not (root / JOURNAL.lstrip("/")).exists()
    assert [c for c in systemd.calls if c[0] == "restart"] == [("restart", ("app.service",))] * 2
    assert systemd.active["app.service"] == "active"  # restarted on the old file: healthy again
    verdict = last_verdict(host.root)
    assert verdict is not None and verdict["ok"] is False
    assert (root / GATE_STATE.lstrip("/")).stat().st_mode & 0o077 == 0


def test_a_passing_gate_commits_and_records_its_verdict(
    node: tuple[Path, Node, AppSystemd],
) -> None:
    root, host, _ = node
    assert update(host, "mode=better\n", GateSettings(settle=0)).run() is Outcome.DONE
    assert current(root) == "rendered-worker-2"
    verdict = last_verdict(host.root)
    assert verdict is not None and verdict["ok"] is True
    statuses = {c["name"]: c["status"] for c in verdict["checks"]}  # type: ignore[attr-defined]
    assert statuses == {"units": "passed", "kubelet": "skipped"}


def test_a_gate_turned_off_lets_a_broken_unit_through(node: tuple[Path, Node, AppSystemd]) -> None:
    root, host, systemd = node
    assert update(host, "mode=broken\n", GateSettings(enabled=False)).run() is Outcome.DONE
    assert current(root) == "rendered-worker-2"
    assert systemd.active["app.service"] == "failed"
    assert last_verdict(host.root) is None


def required(root: Path, name: str, script: str, timeout: str | None = None) -> None:
    directory = root / REQUIRED_DIR.lstrip("/")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(script)
    (directory / name).chmod(0o755)
    if timeout is not None:
        (directory / f"{name}.timeout").write_text(timeout)


def test_a_failing_required_check_rolls_back_with_a_summary_of_its_output(
    node: tuple[Path, Node, AppSystemd],
) -> None:
    root, host, _ = node
    required(root, "00-ok", "#!/bin/sh\nexit 0\n")
    lines = "".join(f"echo line{i}\n" for i in range(20))
    required(root, "10-net", f"#!/bin/sh\n{lines}printf 'bad\\033[31mred\\n'\nexit 3\n")
    (root / REQUIRED_DIR.lstrip("/") / "README").write_text("not executable: not a check\n")
    with pytest.raises(UpdateError) as e:
        update(host, "mode=better\n", GateSettings(settle=0)).run()
    message = str(e.value)
    assert "check required.d/10-net failed: exit status 3: line0 | line1 | line2 | ... |" in message
    assert "line19 | bad\\x1b[31mred; rolled back to rendered-worker-1" in message
    assert "\x1b" not in message and "line10" not in message
    assert (root / "etc/app.conf").read_text() == "mode=good\n"
    assert current(root) == "rendered-worker-1"


def test_a_required_check_that_hangs_is_killed_at_its_own_timeout(
    node: tuple[Path, Node, AppSystemd],
) -> None:
    root, host, _ = node
    required(root, "20-hang", "#!/bin/sh\necho waiting\nexec sleep 600\n", timeout="0.5")
    with pytest.raises(UpdateError, match=r"required\.d/20-hang failed: timed out after 0\.5s: "
                       r"waiting; rolled back"):  # fmt: skip
        update(host, "mode=better\n", GateSettings(settle=0, check_timeout=300)).run()
    assert current(root) == "rendered-worker-1"


@pytest.fixture
def kubelet() -> Iterator[tuple[str, list[int]]]:
    """A kubelet health endpoint on 127.0.0.1 answering what the test sets."""
    answer = [500]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"ok" if answer[0] == 200 else b"[-]syncloop failed"
            self.send_response(answer[0])
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/healthz", answer
    finally:
        server.shutdown()
        server.server_close()


def test_the_kubelet_check_applies_where_a_kubelet_is_configured(
    node: tuple[Path, Node, AppSystemd], kubelet: tuple[str, list[int]]
) -> None:
    root, host, _ = node
    url, answer = kubelet
    (root / "etc/systemd/system/kubelet.service").write_text(UNIT)
    settings = GateSettings(settle=0, timeout=0.2, kubelet_url=url)
    with pytest.raises(UpdateError, match=r"check kubelet failed: .* not healthy after 0\.2s: "
                       r"HTTP 500; rolled back to rendered-worker-1"):  # fmt: skip
        update(host, "mode=better\n", settings).run()
    answer[0] = 200
    assert update(host, "mode=better\n", settings).run() is Outcome.DONE


def test_a_rollback_interrupted_after_the_files_is_finished_by_the_next_run(
    node: tuple[Path, Node, AppSystemd], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, host, systemd = node
    monkeypatch.setenv("MCD_ENOSPC_AT", "rollback:actions")  # the disk fills mid-rollback
    with pytest.raises(UpdateError, match=r"error rolling back actions: .*No space left"):
        update(host, "mode=broken\n", GateSettings(settle=0)).run()
    loaded = Journal(host.root).load()
    assert loaded is not None and loaded[0].phase is Phase.ROLLING_BACK
    assert systemd.active["app.service"] == "failed"
    monkeypatch.delenv("MCD_ENOSPC_AT")
    assert recover(host) is Outcome.ROLLED_BACK
    assert (root / "etc/app.conf").read_text() == "mode=good\n"
    assert systemd.active["app.service"] == "active"
    assert current(root) == "rendered-worker-1"
    assert not (root / JOURNAL.lstrip("/")).exists()
