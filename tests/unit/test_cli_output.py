"""What the command line prints, kubectl's way (issue 40 item 11, issue 41 item 6): one
escaping rule for every text that came from the cluster or a node (Go's ``%q`` escapes,
checked with Hypothesis), ``-o json|yaml|wide``, durations and label selectors as kubectl
prints them; and a hand-forged history annotation that never reaches the terminal raw."""

from __future__ import annotations

import codecs
import json
import unicodedata
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from mcd.cli import cli
from mcd.cli.output import (
    clean,
    columns,
    exact_duration,
    human_duration,
    selector_string,
    short_duration,
)
from mcd.cluster.pools import POOLS
from mcd.model.pool.history import HISTORY_ANNOTATION
from tests.e2e.test_controller import _crds  # noqa: F401  # the pool CRD on a real cluster
from tests.fakes.kubecluster import TestCluster

CONTROL = [chr(c) for c in range(0x20)] + ["\x7f", "\x85", "\x9b", "\u2028", "\u202e", "\ufeff"]
"""C0, DEL, C1 (NEL, CSI), separators, bidi and format characters a terminal acts on."""


def raw_controls(text: str, keep: str = "") -> list[str]:
    return [
        c for c in text if c not in keep and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")
    ]


@given(st.text(st.characters() | st.sampled_from(CONTROL)))
def test_clean_leaves_no_control_character_and_one_line(s: str) -> None:
    shown = clean(s)
    assert raw_controls(shown) == []
    assert "\n" not in shown and shown.isprintable()


@given(st.text(st.characters(codec="ascii", exclude_characters="\\") | st.sampled_from(CONTROL)))
def test_clean_escapes_as_go_quote_and_reads_back(s: str) -> None:
    shown = clean(s)
    assert codecs.decode(shown.encode("ascii", "backslashreplace"), "unicode_escape") == s


def test_the_escapes_are_go_s() -> None:
    assert clean("\x1b]0;pwned\x07\x1b[2J") == "\\x1b]0;pwned\\a\\x1b[2J"
    assert clean("a\nb\tc") == "a\\nb\\tc"
    assert clean("\u202egnp.exe") == "\\u202egnp.exe"


@given(st.lists(st.lists(st.text(st.characters() | st.sampled_from(CONTROL)), min_size=3,
                         max_size=3), min_size=1, max_size=5))  # fmt: skip
def test_a_table_of_any_cells_is_one_safe_line_per_row(rows: list[list[str]]) -> None:
    lines = columns(rows)
    assert len(lines) == len(rows)
    assert all(raw_controls(line) == [] and "\n" not in line for line in lines)


@given(st.text(st.characters() | st.sampled_from(CONTROL)))
def test_what_reaches_stdout_has_no_raw_control_but_newline_and_tab(s: str) -> None:
    import click  # noqa: PLC0415

    from mcd.cli.common import say  # noqa: PLC0415

    @click.command()
    def show() -> None:
        say(s)

    out = CliRunner().invoke(show, []).stdout
    assert raw_controls(out, keep="\n\t") == []


def test_durations_as_kubectl() -> None:
    assert [human_duration(s) for s in (5, 119, 150, 3599, 3600, 3 * 3600 + 600, 86400 * 3)] == [
        "5s", "119s", "2m30s", "59m", "60m", "3h10m", "3d"]  # fmt: skip
    assert [short_duration(s) for s in (30, 3540, 3600, 5400, 86400 * 7)] == [
        "30s", "59m", "1h", "1h", "7d"]  # fmt: skip


def test_label_selectors_as_kubectl() -> None:
    assert selector_string({"matchLabels": {"role": "canary"}}) == "role=canary"
    expressions = [{"key": "zone", "operator": "In", "values": ["b", "a"]},
                   {"key": "legacy", "operator": "DoesNotExist"},
                   {"key": "gpu", "operator": "Exists"}]  # fmt: skip
    assert selector_string(
        {"matchLabels": {"role": "canary"}, "matchExpressions": expressions}
    ) == ("gpu,!legacy,role=canary,zone in (a,b)")
    assert selector_string({}) == "<none>"


FORGED = json.dumps([
    {"revision": 1, "config": "rendered-w-1\x1b]0;owned\x07", "time": "2026-11-27T10:00:00Z",
     "by": "mallory\x1b[2J\x1b[H", "change": "first\nline\rover\x9b31m"},
    {"revision": 2, "config": "rendered-w-2", "time": "2026-11-27T11:00:00Z", "by": "ctl",
     "change": "ok"},
])  # fmt: skip


@pytest.mark.parametrize("output", [[], ["-o", "wide"], ["-o", "json"], ["-o", "yaml"]])
def test_a_forged_history_annotation_never_reaches_stdout_raw(
    kube_cluster: TestCluster, output: list[str]
) -> None:
    pool = kube_cluster.name("forged")
    kube_cluster.create(POOLS, {
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": pool, "annotations": {HISTORY_ANNOTATION: FORGED}},
        "spec": {"nodeSelector": {"matchLabels": {"none": "none"}},
                 "configuration": {"name": "rendered-w-2"}},
    })  # fmt: skip
    args = ["history", "--pool", pool, "--kubeconfig", str(kube_cluster.kubeconfig), *output]
    done = CliRunner().invoke(cli, args, env={"KUBECONFIG": None})
    assert done.exit_code == 0, done.output
    out = done.stdout
    assert raw_controls(out, keep="\n") == []
    assert "\t" not in out and "\r" not in out
    if output in ([], ["-o", "wide"]):
        lines = out.splitlines()
        assert lines[0].split() == ["REVISION", "CONFIG", "TIME", "BY", "CHANGE"]
        assert len(lines) == 3  # one line per revision, the forged newline escaped
        assert "rendered-w-1\\x1b]0;owned\\a" in lines[1]
        assert "mallory\\x1b[2J\\x1b[H" in lines[1]
        assert lines[1].endswith("first\\nline\\rover\\u009b31m")
        assert "rendered-w-2 (target)" in lines[2]
    elif output == ["-o", "json"]:
        doc = json.loads(out)  # escaped by JSON, read back exactly
        assert doc[0]["by"] == "mallory\x1b[2J\x1b[H"
    else:
        doc = yaml.safe_load(out)
        assert doc[0]["config"] == "rendered-w-1\x1b]0;owned\x07"


def test_kubeconfig_as_kubectl_finds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``KUBECONFIG=a:b`` merged (the first file to name an entry or current-context wins,
    missing files skipped), then ``~/.kube/config``; ``--context`` picks another context."""
    from mcd.cluster.api import load_client  # noqa: PLC0415

    def kubeconfig(path: Path, current: str | None, **servers: str) -> str:
        doc: dict[str, object] = {
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": n, "cluster": {"server": s}} for n, s in servers.items()],
            "users": [{"name": "u", "user": {"token": path.name}}],
            "contexts": [{"name": n, "context": {"cluster": n, "user": "u"}} for n in servers],
        }  # fmt: skip
        if current:
            doc["current-context"] = current
        path.write_text(yaml.safe_dump(doc))
        return str(path)

    a = kubeconfig(tmp_path / "a", None, one="https://one.test:6443")
    b = kubeconfig(tmp_path / "b", "two", one="https://ignored.test", two="https://two.test")
    env = {"KUBECONFIG": f"{tmp_path / 'missing'}:{a}:{b}:{a}", "HOME": str(tmp_path)}
    assert load_client(environ=env).host == "https://two.test"  # b's current-context
    one = load_client(environ=env, context="one")
    assert one.host == "https://one.test:6443"  # a named it first
    assert one.authorization() == "Bearer a"
    home = tmp_path / ".kube"
    home.mkdir()
    kubeconfig(home / "config", "one", one="https://home.test")
    assert load_client(environ={"HOME": str(tmp_path)}).host == "https://home.test"
    assert load_client(a, environ={"HOME": str(tmp_path)}, context="one").host == (
        "https://one.test:6443"
    )
    from mcd.cluster.api import ConfigurationError  # noqa: PLC0415

    with pytest.raises(ConfigurationError, match="context was not found for specified context: x"):
        load_client(environ=env, context="x")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    done = CliRunner().invoke(cli, ["history", "--pool", "p", "--context", "nope"])
    assert done.exit_code == 1
    assert "context was not found for specified context: nope" in done.stderr


def test_exact_durations() -> None:
    assert [exact_duration(s) for s in (3600, 5400, 3540, 90, 7 * 86400, 0)] == [
        "1h", "1h30m", "59m", "1m30s", "7d", "0s"]  # fmt: skip


def test_join_token_create_says_its_validity_as_its_ttl_is_written(
    kube_cluster: TestCluster,
) -> None:
    ns = kube_cluster.namespace("tokens")
    pool = kube_cluster.name("join")
    kube_cluster.create(POOLS, {
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": pool}, "spec": {"nodeSelector": {"matchLabels": {"none": "none"}}},
    })  # fmt: skip
    args = ["join-token", "create", "worker-9", "--pool", pool, "--ttl", "90m", "--token-only",
            "--kubeconfig", str(kube_cluster.kubeconfig), "--namespace", ns]  # fmt: skip
    done = CliRunner().invoke(cli, args, env={"KUBECONFIG": None})
    assert done.exit_code == 0, done.output
    (line,) = done.stderr.splitlines()
    assert line.endswith(f"for node worker-9, pool {pool}, valid 1h30m")
    for secret in kube_cluster.kube.request("GET", f"/api/v1/namespaces/{ns}/secrets")["items"]:
        kube_cluster.kube.request(
            "DELETE", f"/api/v1/namespaces/{ns}/secrets/{secret['metadata']['name']}"
        )
