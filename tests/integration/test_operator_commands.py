"""``mcd diff``, ``mcd restore`` and ``mcd status``: the operator commands (issue 7)."""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from mcd.agent.commands.inspect import RUNBOOK_SECTIONS
from mcd.cli import cli
from mcd.cluster.configs import MACHINECONFIGS
from mcd.model.vocabulary import Annotation
from tests.builders import file_entry, mc_doc
from tests.fakes.kubecluster import TestCluster

UNIT = "[Service]\nExecStart=/bin/true\n"
SECRET = '{"auths":{"registry.example.com":{"auth":"c3VwZXJzZWNyZXQ="}}}'
KEY = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"


def write(tmp: Path, doc: dict[str, object]) -> Path:
    path = tmp / f"{doc['metadata']['name']}.json"  # type: ignore[index]
    path.write_text(json.dumps(doc))
    return path


def test_diff_shows_text_changes_and_hides_secrets(tmp_path: Path) -> None:
    a = write(tmp_path, mc_doc("rendered-1", files=[
        file_entry("/etc/app.conf", "threads=4\ncache=on\n"),
        file_entry("/var/lib/kubelet/config.json", SECRET, 0o600),
        file_entry("/etc/pki/tls/private/node.key", KEY, 0o600),
        file_entry("/etc/gone", "bye\n"),
        file_entry("/etc/app/db.conf", "user=app\nMARKER-old-password\n", 0o640)],
        units=[{"name": "app.service", "contents": UNIT, "enabled": True}],
        users=[{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAAold"]}]))  # fmt: skip
    b = write(tmp_path, mc_doc("rendered-2", files=[
        file_entry("/etc/app.conf", "threads=8\ncache=on\n", 0o755),
        file_entry("/etc/app/db.conf", "user=app\nMARKER-new-password\n", 0o640),
        file_entry("/var/lib/kubelet/config.json", SECRET.replace("c3Vw", "bmV3"), 0o600),
        file_entry("/etc/pki/tls/private/node.key", KEY.replace("MIIE", "MIIF"), 0o600),
        file_entry("/etc/new", "hello\n")],
        units=[{"name": "app.service", "contents": UNIT + "Restart=always\n", "enabled": False}],
        users=[{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAAnew"]}],
        osImageURL="quay.io/os@sha256:bbbb"))  # fmt: skip
    result = CliRunner().invoke(cli, ["diff", str(a), str(b)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "~ /etc/app.conf: changed (mode 0644 -> 0755)" in out
    # not world-readable: secret, whatever its name
    assert "~ /etc/app/db.conf: changed (secret contents changed (not shown))" in out
    assert "MARKER" not in out
    assert "--- a(rendered-1)/etc/app.conf\n+++ b(rendered-2)/etc/app.conf\n" in out
    assert "-threads=4\n+threads=8\n cache=on\n" in out
    assert "~ /var/lib/kubelet/config.json: changed (secret contents changed (not shown))" in out
    assert "~ /etc/pki/tls/private/node.key: changed (secret contents changed (not shown))" in out
    assert "- /etc/gone: removed" in out and "+ /etc/new: added" in out and "+hello" in out
    assert "+Restart=always" in out and "enabled=True mask=False -> enabled=False mask=False" in out
    assert "~ osImageURL: (none) -> quay.io/os@sha256:bbbb" in out
    assert "user core: SSH keys changed (1 added, 1 removed; keys not shown)" in out
    for secret in ("c3VwZXJzZWNyZXQ", "bmV3", "MIIE", "MIIF", "AAAAold", "AAAAnew", "auths"):
        assert secret not in out
    assert CliRunner().invoke(cli, ["diff", "--exit-code", str(a), str(b)]).exit_code == 2
    same = CliRunner().invoke(cli, ["diff", "--exit-code", str(a), str(a)])
    assert (same.exit_code, same.output) == (0, "no differences\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("spec: [")
    broken = CliRunner().invoke(cli, ["diff", str(a), str(bad)])
    assert broken.exit_code == 1 and broken.output.startswith("error: ")


def test_restore_rewrites_drifted_files_exactly_and_says_what(
    node_root: Path, tmp_path: Path
) -> None:
    doc = mc_doc("rendered-1", files=[
        file_entry("/etc/app.conf", "threads=4\n", 0o640),
        file_entry("/etc/other.conf", "x=1\n"),
        file_entry("/etc/pull.json", SECRET, 0o600)])  # fmt: skip
    source = write(tmp_path, doc)
    runner = CliRunner()
    applied = runner.invoke(
        cli, ["once-from", str(source), "--root", str(node_root), "--skip-reboot"]
    )
    assert applied.exit_code == 0, applied.output
    (node_root / "etc/app.conf").write_text("threads=400\n")
    (node_root / "etc/pull.json").write_text('{"auths":{}}')
    (node_root / "etc/pull.json").chmod(0o644)
    result = runner.invoke(cli, ["restore", "--root", str(node_root)])
    assert result.exit_code == 0, result.output
    assert 'restored /etc/app.conf: was content mismatch for file "/etc/app.conf"' in result.output
    assert "restored /etc/pull.json: was mode mismatch" in result.output
    assert "/etc/other.conf" not in result.output
    assert "c3VwZXJzZWNyZXQ" not in result.output and "threads" not in result.output
    assert (node_root / "etc/app.conf").read_text() == "threads=4\n"
    assert (node_root / "etc/app.conf").stat().st_mode & 0o777 == 0o640
    assert (node_root / "etc/pull.json").read_text() == SECRET
    assert (node_root / "etc/pull.json").stat().st_mode & 0o777 == 0o600
    again = runner.invoke(cli, ["restore", "--root", str(node_root), "/etc/app.conf"])
    assert again.stdout == "unchanged /etc/app.conf: already matches rendered-1\n"
    unknown = runner.invoke(cli, ["restore", "--root", str(node_root), "/etc/passwd"])
    assert unknown.exit_code == 1 and "not managed by rendered-1: /etc/passwd" in unknown.output
    assert (node_root / "etc/passwd").read_text().startswith("root:")


def test_restore_without_a_current_config_says_so(node_root: Path) -> None:
    result = CliRunner().invoke(cli, ["restore", "--root", str(node_root)])
    assert result.exit_code == 1
    assert (
        "no current config: /etc/machine-config-daemon/currentconfig does not exist"
        in result.output
    )


def test_status_shows_state_reason_pending_plan_and_events(kube_cluster: TestCluster) -> None:
    one = kube_cluster.name("rendered-worker-1")
    two = kube_cluster.name("rendered-worker-2")
    kube_cluster.create(MACHINECONFIGS, mc_doc(one, files=[file_entry("/etc/a", "1")]))
    kube_cluster.create(
        MACHINECONFIGS, mc_doc(two, files=[file_entry("/etc/a", "2"), file_entry("/etc/b", "3")])
    )
    reason = (
        f'unexpected on-disk state validating against {one}: content mismatch for file "/etc/a"'
    )
    node = kube_cluster.node("node", {Annotation.CURRENT_CONFIG: one, Annotation.DESIRED_CONFIG: two,
                                      Annotation.STATE: "Degraded", Annotation.REASON: reason})  # fmt: skip
    kube_cluster.create("/api/v1/namespaces/default/events", {
        "metadata": {"name": f"{node}.1"}, "involvedObject": {"kind": "Node", "name": node},
        "reason": "ConfigDriftDetected", "message": reason, "type": "Warning",
        "lastTimestamp": "2026-11-21T10:00:00Z"})  # fmt: skip
    args = [
        "status",
        "--node",
        node,
        "--kubeconfig",
        str(kube_cluster.kubeconfig),
        "--namespace",
        "default",
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"State:           Degraded\nReason:          {reason}\n" in out
    assert f"Current config:  {one}\nDesired config:  {two}\n" in out
    assert (
        f"Pending update:  {one} -> {two}: cost reboot, reboot yes, drain yes; files 1 added, 1 changed, 0 removed"
        in out
    )
    assert "reboot kind: full (soft reboot not enabled (mcd-project.github.io/soft-reboot))" in out
    assert f"Warning ConfigDriftDetected: {reason}" in out
    as_json = json.loads(CliRunner().invoke(cli, [*args, "--json"]).output)
    assert as_json["state"] == "Degraded" and as_json["plan"]["files"]["added"] == ["/etc/b"]
    missing = CliRunner().invoke(
        cli, ["status", "--node", "nope", "--kubeconfig", str(kube_cluster.kubeconfig)]
    )
    assert missing.exit_code == 1 and "cannot read node nope: 404" in missing.output


def status(cluster: TestCluster, node: str, *extra: str) -> Result:
    args = ["status", "--node", node, "--kubeconfig", str(cluster.kubeconfig), "--events", "0"]
    return CliRunner().invoke(cli, [*args, *extra], prog_name="mcd")


@pytest.mark.parametrize(
    ("state", "current", "code"),
    [("Done", "two", 0), ("Degraded", "one", 2), ("Unreconcilable", "one", 1)],
)
def test_status_wait_exit_codes(
    kube_cluster: TestCluster, state: str, current: str, code: int
) -> None:
    names = {"one": kube_cluster.name("rendered-1"), "two": kube_cluster.name("rendered-2")}
    reason = (
        f"unexpected on-disk state validating against {names['one']}: "
        'content mismatch for file "/etc/a"'
        if state == "Degraded"
        else ""
    )
    node = kube_cluster.node("wait", {Annotation.CURRENT_CONFIG: names[current],
                                      Annotation.DESIRED_CONFIG: names["two"],
                                      Annotation.STATE: state, Annotation.REASON: reason})  # fmt: skip
    result = status(kube_cluster, node, "--wait", "--timeout", "20")
    assert result.exit_code == code, result.output
    assert f"State:           {state}\n" in result.stdout
    if state == "Degraded":  # the next command, with the runbook section that explains it
        assert (
            f"Next:            on node {node}: mcd restore /etc/a --root /  (see docs/runbook.md"
            "#1-config-drift-files-on-disk-differ-from-the-current-config)\n" in result.stdout
        )
        plain = status(kube_cluster, node, "--json")
        assert plain.exit_code == 0  # without --wait: a read that worked
        assert json.loads(plain.stdout)["nextStep"].startswith(f"on node {node}: mcd restore")


def test_status_wait_follows_the_node_until_done_or_times_out(kube_cluster: TestCluster) -> None:
    one, two = kube_cluster.name("rendered-1"), kube_cluster.name("rendered-2")
    node = kube_cluster.node("follow", {Annotation.CURRENT_CONFIG: one,
                                        Annotation.DESIRED_CONFIG: two,
                                        Annotation.STATE: "Working"})  # fmt: skip
    timed_out = status(kube_cluster, node, "--wait", "--timeout", "0.5", "--interval", "0.1")
    assert timed_out.exit_code == 1
    assert timed_out.stderr.splitlines()[-1] == (
        f"error: timed out after 0.5 s waiting for node {node} (state Working)"
    )

    def finish() -> None:
        time.sleep(1.0)
        kube_cluster.annotate(node, {Annotation.CURRENT_CONFIG: two, Annotation.STATE: "Done"})

    threading.Thread(target=finish, daemon=True).start()
    watched = status(kube_cluster, node, "--wait", "--watch", "--json", "--interval", "0.1")
    assert watched.exit_code == 0, watched.output
    seen = [json.loads(line) for line in watched.stdout.splitlines()]
    # --watch prints the report on every change; on a real cluster the kubelet's status writes
    # (the Node turning Ready) change it too, so a (state, current) pair may repeat in a row
    configs = [pair for pair, _ in itertools.groupby((s["state"], s["current"]) for s in seen)]
    assert configs == [("Working", one), ("Done", two)]
    assert all(a != b for a, b in itertools.pairwise(seen))  # a line per change, no repeats


def test_runbook_anchors_of_next_steps_exist() -> None:
    runbook = (Path(__file__).resolve().parents[2] / "docs/runbook.md").read_text()
    slugs = {
        re.sub(r"[^a-z0-9 -]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        for line in runbook.splitlines()
        if line.startswith("## ")
    }
    for anchor in {a for _, a in RUNBOOK_SECTIONS}:
        assert anchor.lstrip("#") in slugs, anchor
