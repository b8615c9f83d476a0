"""``mcd plan`` with and without ``--pool``, and ``mcd controller``'s bad input: one line, exit 1."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from mcd.cli import cli

ROOT = Path(__file__).resolve().parents[2]
EX1 = str(ROOT / "examples/rendered-worker-1.yaml")
EX2 = str(ROOT / "examples/rendered-worker-2.yaml")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_plan_of_two_files_is_unchanged() -> None:
    code, out, _ = run("plan", EX1, EX2)
    assert code == 0
    assert out.startswith("Update rendered-worker-1 -> rendered-worker-2\n")


def test_plan_needs_files_or_a_pool() -> None:
    # usage errors: exit 64 (README "Exit codes"), the reason on the last line
    code, out, err = run("plan")
    assert (code, out) == (64, "")
    assert (
        err.splitlines()[-1] == "Error: plan needs OLD and NEW, --pool POOL or --from-cluster NODE"
    )
    code, out, err = run("plan", EX1, "--pool", "worker")
    assert (code, out) == (64, "")
    assert err.splitlines()[-1] == "Error: --pool takes no OLD, NEW, --root or --from-cluster"


def test_plan_pool_without_a_cluster_says_so(tmp_path: Path) -> None:
    missing = tmp_path / "no-kubeconfig"
    code, out, err = run("plan", "--pool", "worker", "--kubeconfig", str(missing))
    assert code == 1 and out == ""
    assert err.startswith(f"error: {missing}: no such file (--kubeconfig)")
    assert len(err.splitlines()) == 1


def test_controller_refuses_a_bad_metrics_address(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
    code, _, err = run("controller", "--kubeconfig", str(kubeconfig), "--metrics-url", "nowhere")
    assert code == 1
    assert err == "error: cannot start: invalid metrics address 'nowhere': expected host:port\n"
