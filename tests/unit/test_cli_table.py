"""Every command's exit codes and first line, in one table (README "Exit codes").

0 done, 1 error (its source named), 2 not reconcilable / not matching, 64 usage. Results go
to stdout, problems to stderr; ``-q`` keeps results back, never the exit code.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from mcd.cli import COMMANDS, cli, common
from tests.builders import mc_doc

ROOT = Path(__file__).resolve().parents[2]
EX1 = str(ROOT / "examples/rendered-worker-1.yaml")
EX2 = str(ROOT / "examples/rendered-worker-2.yaml")
POLICY = str(ROOT / "examples/machineconfiguration.yaml")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Env:
    tmp: Path
    port: int = 0
    """A 127.0.0.1 port nothing listens on."""

    def file(self, name: str, doc: object) -> str:
        path = self.tmp / name
        path.write_text(yaml.safe_dump(doc) if not isinstance(doc, str) else doc)
        return str(path)

    @property
    def missing(self) -> str:
        return str(self.tmp / "missing.yaml")

    def applied_root(self, config: str = EX1) -> str:
        root = self.tmp / "root"
        result = CliRunner().invoke(
            cli, ["once-from", config, "--root", str(root), "--skip-reboot"]
        )
        assert result.exit_code == 0, result.output
        return str(root)

    def kubeconfig(self, port: int) -> str:
        return self.file("kubeconfig", {
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
        })  # fmt: skip


def corrupt_journal_root(env: Env) -> str:
    root = env.applied_root()
    (Path(root) / "etc/machine-config-daemon/transaction.json").write_bytes(b"")
    return root


@dataclass
class Case:
    command: str
    args: Callable[[Env], list[str]]
    code: int
    first: Callable[[Env], str]
    """The first line of stdout (code 0 and 2) or of stderr (1 and 64)."""
    id: str
    stream: str = ""
    """``stdout`` or ``stderr`` where the default above does not hold."""


def unreconcilable(env: Env) -> str:
    return env.file(
        "disks.yaml", mc_doc("rendered-disks", storage={"disks": [{"device": "/dev/sdb"}]})
    )


def drifted_root(env: Env) -> str:
    root = env.applied_root()
    Path(root, "etc/chrony.conf").write_text("edited by hand\n")
    return root


CASES = [
    # plan
    Case("plan", lambda e: [EX1, EX2], 0,
         lambda e: "Update rendered-worker-1 -> rendered-worker-2", "plan-ok"),
    Case("plan", lambda e: [EX1, unreconcilable(e)], 2,
         lambda e: "Update rendered-worker-1 -> rendered-disks", "plan-unreconcilable"),
    Case("plan", lambda e: [EX1, e.missing], 1,
         lambda e: f"error: {e.missing}: No such file or directory", "plan-missing-file"),
    Case("plan", lambda e: [EX1, e.file("bad.yaml", "a: [")], 1,
         lambda e: f"error: {e.tmp}/bad.yaml: not valid YAML or JSON", "plan-bad-yaml"),
    Case("plan", lambda e: [EX1, EX2, "--policy", EX1], 1,
         lambda e: f'error: {EX1}: kind: expected MachineConfiguration, got "MachineConfig"',
         "plan-policy-wrong-kind"),
    Case("plan", lambda e: [EX1, EX2, "--policy", e.missing], 1,
         lambda e: f"error: {e.missing}: No such file or directory", "plan-policy-missing"),
    Case("plan", lambda e: [EX1], 64, lambda e: "Usage: mcd plan [OPTIONS] [OLD] [NEW]",
         "plan-usage"),
    Case("plan", lambda e: ["--pool", "worker", "--kubeconfig", e.missing], 1,
         lambda e: f"error: {e.missing}: no such file (--kubeconfig)", "plan-pool-kubeconfig"),
    Case("plan", lambda e: ["--pool", "worker", EX1], 64,
         lambda e: "Usage: mcd plan [OPTIONS] [OLD] [NEW]", "plan-pool-and-files"),
    # controller
    Case("controller", lambda e: ["--kubeconfig", e.missing], 1,
         lambda e: f"error: cannot start: {e.missing}: no such file (--kubeconfig)",
         "controller-kubeconfig-missing"),
    Case("controller", lambda e: ["--lease-duration", "x"], 64,
         lambda e: "Usage: mcd controller [OPTIONS]", "controller-usage"),
    # validate
    Case("validate", lambda e: [EX1, "--root", e.applied_root()], 0,
         lambda e: "on-disk state matches rendered-worker-1: 4 files, 2 units checked",
         "validate-ok"),
    Case("validate", lambda e: [EX1, "--root", drifted_root(e)], 2,
         lambda e: "unexpected on-disk state validating against rendered-worker-1: "
                   'content mismatch for file "/etc/chrony.conf"', "validate-drift"),
    Case("validate", lambda e: [EX1, "--root", str(e.tmp / "nope")], 1,
         lambda e: f"error: {e.tmp}/nope: no such directory (--root)", "validate-no-root"),
    Case("validate", lambda e: [e.missing, "--root", str(e.tmp)], 1,
         lambda e: f"error: {e.missing}: No such file or directory", "validate-missing-file"),
    Case("validate", lambda e: [], 64,
         lambda e: "Usage: mcd validate [OPTIONS] CONFIG", "validate-usage"),
    # diff
    Case("diff", lambda e: [EX1, EX1, "--exit-code"], 0, lambda e: "no differences", "diff-same"),
    Case("diff", lambda e: [EX1, EX2, "--exit-code"], 2,
         lambda e: "~ user core: SSH keys changed (1 added, 1 removed; keys not shown)",
         "diff-differ"),
    Case("diff", lambda e: [e.missing, EX2], 1,
         lambda e: f"error: {e.missing}: No such file or directory", "diff-missing-file"),
    # once-from
    Case("once-from", lambda e: [EX1, "--root", str(e.tmp / "r"), "--skip-reboot"], 0,
         lambda e: f"reboot-pending: rendered-worker-1 applied to {e.tmp}/r; a reboot completes it",
         "once-from-ok"),
    Case("once-from", lambda e: [EX2, "--root", e.applied_root(), "--skip-reboot"], 0,
         lambda e: f"done: rendered-worker-2 applied to {e.tmp}/root", "once-from-update-offline"),
    Case("once-from", lambda e: [unreconcilable(e), "--root", e.applied_root()], 2,
         lambda e: "error: can't reconcile config rendered-worker-1 with rendered-disks",
         "once-from-unreconcilable", "stderr"),
    Case("once-from", lambda e: [e.missing, "--root", str(e.tmp)], 1,
         lambda e: f"error: {e.missing}: No such file or directory", "once-from-missing-file"),
    Case("once-from", lambda e: [f"http://127.0.0.1:{e.port}/x.yaml", "--root", str(e.tmp)], 1,
         lambda e: f"error: http://127.0.0.1:{e.port}/x.yaml: Connection refused",
         "once-from-unreachable-url"),
    Case("once-from", lambda e: [], 64,
         lambda e: "Usage: mcd once-from [OPTIONS] SOURCE", "once-from-usage"),
    Case("once-from", lambda e: [EX2, "--root", str(e.tmp), "--try", "later"], 64,
         lambda e: "Usage: mcd once-from [OPTIONS] SOURCE", "once-from-try-bad-duration"),
    # confirm, try-revert
    Case("confirm", lambda e: ["--root", e.applied_root()], 0,
         lambda e: "nothing to confirm: no try is pending", "confirm-nothing"),
    Case("confirm", lambda e: ["--root", str(e.tmp / "nope")], 1,
         lambda e: f"error: {e.tmp}/nope: no such directory (--root)", "confirm-no-root"),
    Case("try-revert", lambda e: ["--root", e.applied_root()], 0,
         lambda e: "nothing to revert: no try is pending", "try-revert-nothing"),
    # pivot
    Case("pivot", lambda e: ["quay.io/x/os@sha256:1", "-P", "--root", str(e.tmp)], 1,
         lambda e: "error: give an IMAGE or --from-etc-pullspec, not both", "pivot-both"),
    Case("pivot", lambda e: ["--root", str(e.tmp / "nope")], 1,
         lambda e: f"error: {e.tmp}/nope: no such directory (--root)", "pivot-no-root"),
    # firstboot-complete-machineconfig
    Case("firstboot-complete-machineconfig", lambda e: ["--root", str(e.tmp / "nope")], 1,
         lambda e: f"error: {e.tmp}/nope: no such directory (--root)", "firstboot-no-root"),
    Case("firstboot-complete-machineconfig",
         lambda e: ["--root", str(e.tmp), "--machineconfig-file", e.missing, "--skip-reboot"],
         1, lambda e: f"error: {e.tmp}{e.missing}: No such file or directory",  # in the root
         "firstboot-missing-file"),
    # restore
    Case("restore", lambda e: ["--root", str(e.tmp)], 1,
         lambda e: "error: no current config: /etc/machine-config-daemon/currentconfig does not "
                   "exist; give --config", "restore-no-config"),
    Case("restore", lambda e: ["--root", drifted_root(e)], 0,
         lambda e: "restored /etc/chrony.conf: was content mismatch for file \"/etc/chrony.conf\"",
         "restore-ok"),
    Case("restore", lambda e: ["--root", e.applied_root(), "--config", e.missing], 1,
         lambda e: f"error: {e.missing}: No such file or directory", "restore-missing-config"),
    # recover
    Case("recover", lambda e: ["--root", e.applied_root()], 0,
         lambda e: "journal: no interrupted update", "recover-inspect-ok"),
    Case("recover", lambda e: ["--root", corrupt_journal_root(e)], 1,
         lambda e: "journal: corrupt update journal /etc/machine-config-daemon/transaction.json: "
                   "the file is empty; see what it says with `mcd recover`; `mcd recover "
                   "--finish` completes it, `mcd recover --abandon` sets it aside",
         "recover-inspect-corrupt", stream="stdout"),
    Case("recover", lambda e: ["--root", e.applied_root(), "--abandon"], 0,
         lambda e: "nothing to abandon: no interrupted update", "recover-abandon-nothing"),
    Case("recover", lambda e: ["--root", e.applied_root(), "--current", EX1], 1,
         lambda e: "error: /etc/machine-config-daemon/currentconfig is readable (config "
                   "rendered-worker-1); refusing to replace it", "recover-current-readable"),
    Case("recover", lambda e: ["--root", str(e.tmp), "--current", e.missing], 1,
         lambda e: f"error: {e.missing}: No such file or directory", "recover-current-missing"),
    # server, join-token, join
    Case("server", lambda e: ["--kubeconfig", e.missing], 1,
         lambda e: "error: the secure port needs --cert and --key (or --secure-port 0)",
         "server-no-certificate"),
    Case("join-token", lambda e: ["create", "n1", "--pool", "worker"], 64,
         lambda e: "Usage: mcd join-token create [OPTIONS] [NODE]", "join-token-no-server"),
    Case("join", lambda e: ["--server", "https://127.0.0.1:1", "--token", "t",
                            "--root", str(e.tmp)], 64,
         lambda e: "Usage: mcd join [OPTIONS]", "join-no-pool"),
    # history, rollback, prune
    Case("history", lambda e: ["--pool", "worker", "--kubeconfig", e.missing], 1,
         lambda e: f"error: {e.missing}: no such file (--kubeconfig)", "history-kubeconfig-missing"),
    Case("history", lambda e: ["--pool", "worker", "--kubeconfig", e.kubeconfig(e.port)], 1,
         lambda e: "error: cannot read pool worker: ", "history-unreachable"),
    Case("rollback", lambda e: [], 64,
         lambda e: "Usage: mcd rollback [OPTIONS]", "rollback-no-pool"),
    Case("rollback", lambda e: ["--pool", "worker", "--kubeconfig", e.kubeconfig(e.port)], 1,
         lambda e: "error: pool worker: ", "rollback-unreachable"),
    Case("prune", lambda e: ["--grace", "soon", "--kubeconfig", e.missing], 64,
         lambda e: "Usage: mcd prune [OPTIONS]", "prune-bad-grace"),
    Case("prune", lambda e: ["--kubeconfig", e.missing], 1,
         lambda e: f"error: {e.missing}: no such file (--kubeconfig)", "prune-kubeconfig-missing"),
    # start
    Case("start", lambda e: ["--kubeconfig", e.missing], 64,
         lambda e: "Usage: mcd start [OPTIONS]", "start-no-node-name"),
    Case("start", lambda e: ["--node-name", "n", "--kubeconfig", e.missing], 1,
         lambda e: f"error: cannot start: {e.missing}: no such file (--kubeconfig)",
         "start-kubeconfig-missing"),
    Case("start", lambda e: ["--node-name", "n", "--log-format", "xml"], 64,
         lambda e: "Usage: mcd start [OPTIONS]", "start-bad-log-format"),
    # status
    Case("status", lambda e: ["--node", "n", "--kubeconfig", e.missing], 1,
         lambda e: f"error: {e.missing}: no such file (--kubeconfig)", "status-kubeconfig-missing"),
    Case("status", lambda e: ["--node", "n", "--kubeconfig", e.kubeconfig(e.port)], 1,
         lambda e: f"error: cannot read node n: http://127.0.0.1:{e.port}: GET /api/v1/nodes/n: "
                   "Connection refused", "status-unreachable"),
    Case("status", lambda e: ["--timeout", "-1"], 64,
         lambda e: "Usage: mcd status [OPTIONS]", "status-usage"),
]  # fmt: skip


def test_every_command_is_in_the_table() -> None:
    assert {c.command for c in CASES} == set(COMMANDS)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_exit_code_and_first_line(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NODE_NAME", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    env = Env(tmp_path, closed_port())
    args = [case.command, *case.args(env)]
    result = CliRunner().invoke(cli, args, env={"NO_COLOR": "1"}, prog_name="mcd")
    assert result.exit_code == case.code, (result.stdout, result.stderr)
    where = case.stream or ("stdout" if case.code in (0, 2) else "stderr")
    stream = result.stdout if where == "stdout" else result.stderr
    first = stream.splitlines()[0] if stream else ""
    assert first.startswith(case.first(env)), (first, result.stderr)
    if where == "stdout":
        assert "error:" not in result.stderr
    else:
        assert result.stdout == "" and "Traceback" not in result.stderr
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == (0 if case.code == 64 else 1)
    quiet = (
        CliRunner().invoke(cli, [*args, "-q"], env={"NO_COLOR": "1"}) if case.code != 64 else None
    )
    if quiet is not None and case.command not in ("once-from", "restore"):  # these change disks
        assert quiet.exit_code == case.code
        assert quiet.stdout == ""


def test_one_shot_logs_are_plain_and_verbose_on_request(tmp_path: Path) -> None:
    root = str(tmp_path / "root")
    CliRunner().invoke(cli, ["once-from", EX1, "--root", root, "--skip-reboot"])
    result = CliRunner().invoke(cli, ["once-from", EX2, "--root", root, "--skip-reboot", "-v"])
    assert result.exit_code == 0
    lines = result.stderr.splitlines()
    assert "Starting update from rendered-worker-1 to rendered-worker-2" in lines
    assert any(line.startswith("warning: Skipped post config change action Reload crio.service")
               for line in lines)  # fmt: skip
    for line in lines:  # no timestamps, no logger names
        assert not line[:4].isdigit() and " mcd." not in line, line
    assert result.stdout == f"done: rendered-worker-2 applied to {root}\n"


def test_colour_only_on_a_terminal_and_never_with_no_color(tmp_path: Path) -> None:
    missing = str(tmp_path / "x.yaml")
    plain = CliRunner().invoke(cli, ["plan", missing, missing])
    assert "\x1b[" not in plain.stderr  # not a terminal

    class Tty:
        def isatty(self) -> bool:
            return True

    assert common.colour(Tty())  # type: ignore[arg-type]
    os.environ["NO_COLOR"] = "1"
    try:
        assert not common.colour(Tty())  # type: ignore[arg-type]
    finally:
        del os.environ["NO_COLOR"]


def test_a_deleted_or_replaced_mask_is_found_and_restored(tmp_path: Path) -> None:
    env = Env(tmp_path)
    config = env.file(
        "masks.yaml", mc_doc("rendered-masks", units=[{"name": "noisy.service", "mask": True}])
    )
    root = tmp_path / "root"
    applied = CliRunner().invoke(cli, ["once-from", config, "--root", str(root), "--skip-reboot"])
    assert applied.exit_code == 0, applied.output
    link = root / "etc/systemd/system/noisy.service"
    assert os.readlink(link) == "/dev/null"

    def replace() -> None:
        link.unlink()
        link.write_text("[Service]\n")

    for tamper in (link.unlink, replace):
        tamper()
        found = CliRunner().invoke(cli, ["validate", config, "--root", str(root)])
        assert found.exit_code == 2
        assert (
            "state validation: " in found.stdout
            and "/etc/systemd/system/noisy.service" in found.stdout
        )
        fixed = CliRunner().invoke(cli, ["restore", "--root", str(root), "--config", config])
        assert fixed.exit_code == 0, fixed.output
        assert fixed.stdout.startswith(
            "restored /etc/systemd/system/noisy.service: was state validation"
        )
        assert os.readlink(link) == "/dev/null"
        assert CliRunner().invoke(cli, ["validate", config, "--root", str(root)]).exit_code == 0


def test_the_readme_table_is_the_exit_code_table() -> None:
    from mcd.cli.exits import TABLE  # noqa: PLC0415

    readme = (ROOT / "README.md").read_text()
    section = readme.split("### Output and exit codes", 1)[1].split("\n### ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    shown = {int(r.split("|")[1]): r.split("|", 2)[2].rsplit("|", 1)[0].strip() for r in rows[1:]}
    assert shown == TABLE
