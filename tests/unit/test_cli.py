"""The ``mcd`` command line: exit codes, JSON keys, messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from click.testing import CliRunner

from mcd.cli import cli
from tests.builders import file_entry, mc_doc

ROOT = Path(__file__).resolve().parents[2]
EX1 = str(ROOT / "examples/rendered-worker-1.yaml")
EX2 = str(ROOT / "examples/rendered-worker-2.yaml")
POLICY = str(ROOT / "examples/machineconfiguration.yaml")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def dump(tmp_path: Path, name: str, doc: object) -> str:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(doc))
    return str(p)


def test_plan_examples_json_keys() -> None:
    code, out, _ = run("plan", EX1, EX2, "--json")
    assert code == 0
    plan = json.loads(out)
    for key in ("reconcilable", "reason", "diff", "actions", "drain", "reboot", "files", "units"):
        assert key in plan
    assert plan["reconcilable"] is True and plan["reason"] == ""
    assert plan["diff"] == ["passwd", "files"]
    assert plan["actions"] == [{"type": "Reload", "service": "crio.service"}, {"type": "Special"}]
    assert plan["drain"] is False and plan["reboot"] is False
    assert plan["files"]["changed"] == ["/etc/containers/policy.json", REG]
    assert set(plan["units"]) == {"added", "changed", "removed"}


REG = "/etc/containers/registries.conf"


def test_plan_human_output_explains_why() -> None:
    code, out, _ = run("plan", EX1, EX2)
    assert code == 0
    assert "Cost: reload" in out
    assert f"file {REG}: default policy for {REG} -> Special" in out
    assert "Policies: the default cluster policies" in out
    assert "Drain: no (/etc/containers/registries.conf: changes made are safe to skip drain)" in out


def test_plan_with_policy_and_force(tmp_path: Path) -> None:
    old = dump(tmp_path, "a.yaml", mc_doc("a", files=[file_entry("/etc/chrony.conf", "x")]))
    new = dump(tmp_path, "b.yaml", mc_doc("b", files=[file_entry("/etc/chrony.conf", "y")]))
    assert json.loads(run("plan", old, new, "--json")[1])["actions"] == [{"type": "Reboot"}]
    plan = json.loads(run("plan", old, new, "--json", "--policy", POLICY)[1])
    assert plan["actions"] == [{"type": "Restart", "service": "chronyd.service"}]
    plan = json.loads(run("plan", old, new, "--json", "--policy", POLICY, "--force")[1])
    assert plan["actions"] == [{"type": "Reboot"}] and plan["drain"] is True


def test_plan_unreconcilable_exits_2(tmp_path: Path) -> None:
    old = dump(tmp_path, "a.yaml", mc_doc("a"))
    new = dump(tmp_path, "b.yaml", mc_doc("b", storage={"disks": [{"device": "/dev/sdb"}]}))
    code, out, _ = run("plan", old, new, "--json")
    assert code == 2
    plan = json.loads(out)
    assert plan["reconcilable"] is False
    assert plan["reason"].endswith("ignition disks section contains changes")
    code, out, _ = run("plan", old, new)
    assert code == 2 and "Reconcilable: no" in out


def test_plan_bad_input_exits_1_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("spec:\n  config:\n    ignition: {version: 9.9.9}\n")
    code, out, err = run("plan", EX1, str(bad))
    assert code == 1
    assert out == ""
    assert err.startswith("error: ") and "Traceback" not in err
    assert 'unsupported Ignition spec version "9.9.9"' in err
    assert str(bad) in err
    bad_policy = dump(tmp_path, "p.yaml", {"spec": {"nodeDisruptionPolicy": {"files": [
        {"path": "/etc/x", "actions": [{"type": "Nope"}]}]}}})  # fmt: skip
    code, _, err = run("plan", EX1, EX2, "--policy", bad_policy)
    assert code == 1 and 'unknown action type "Nope"' in err


def test_validate_exit_codes(tmp_path: Path) -> None:
    cfg = dump(
        tmp_path, "c.yaml", mc_doc("rendered-worker-9", files=[file_entry("/etc/foo", "hi\n")])
    )
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc/foo").write_text("hi\n")
    os.chmod(root / "etc/foo", 0o644)
    code, out, _ = run("validate", cfg, "--root", str(root))
    assert code == 0 and "on-disk state matches rendered-worker-9" in out
    (root / "etc/foo").write_text("changed by hand\n")
    code, out, _ = run("validate", cfg, "--root", str(root))
    assert code == 2
    assert out.strip() == (
        "unexpected on-disk state validating against rendered-worker-9: "
        'content mismatch for file "/etc/foo"'
    )
    assert "changed by hand" not in out


def test_console_script_and_module_entry_points() -> None:
    mcd = Path(sys.executable).with_name("mcd")
    for argv in ([str(mcd)], [sys.executable, "-m", "mcd"]):
        proc = subprocess.run([*argv, "plan", EX1, EX2, "--json"], capture_output=True, text=True,
                              check=False, timeout=60)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["reconcilable"] is True
