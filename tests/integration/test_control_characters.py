"""Names with control characters end to end (issue 28): a health check whose file name holds
a newline, a carriage return or a terminal escape fails; its name reaches ``once-from``'s
error line, the Node's ``reason`` and the Node Event escaped the one way (Go's ``%q``
escapes, :func:`mcd.model.text.printable`), never as a forged second line."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcd.agent.report.metrics import Metrics
from mcd.agent.report.status import NodeStatus
from mcd.cli import cli
from mcd.cluster.events import EventRecorder, Reason
from mcd.cluster.node import NodeWriter, annotations_of
from mcd.model.node.health import CheckResult, Status, gate_failed
from mcd.model.text import printable
from mcd.model.vocabulary import Annotation
from tests.fakes.kubecluster import TestCluster

REPO = Path(__file__).resolve().parents[2]
EX1 = str(REPO / "examples/rendered-worker-1.yaml")
EX2 = str(REPO / "examples/rendered-worker-2.yaml")
FORGED = "10-net\nerror: \x1b[32mall good\r"


def test_a_check_named_with_control_characters_is_one_escaped_line_on_stderr(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    run = CliRunner().invoke(cli, ["once-from", EX1, "--root", str(root), "--skip-reboot"])
    assert run.exit_code == 0, run.output
    checks = root / "etc/mcd/health.d/required.d"
    checks.mkdir(parents=True)
    check = checks / FORGED
    check.write_text("#!/bin/sh\nexit 3\n")
    check.chmod(0o755)
    result = CliRunner().invoke(cli, ["once-from", EX2, "--root", str(root), "--skip-reboot"],
                                env={"NO_COLOR": "1"})  # fmt: skip
    assert result.exit_code == 1, result.output
    assert result.stderr.endswith(
        "\nerror: health gate failed after update to rendered-worker-2: check "
        "required.d/10-net\\nerror: \\x1b[32mall good\\r failed: exit status 3; "
        "rolled back to rendered-worker-1\n"
    )
    assert [line for line in result.stderr.splitlines() if line.startswith("error:")] == [
        result.stderr.splitlines()[-1]
    ]  # one error line: no forged second one
    assert "\x1b" not in result.stderr and "\r" not in result.stderr
    shutil.rmtree(checks)


def test_the_node_reason_and_the_event_carry_the_same_escaped_line(
    kube_cluster: TestCluster,
) -> None:
    node = kube_cluster.node("worker")
    status = NodeStatus(NodeWriter(kube_cluster.kube, node), Metrics())
    events = EventRecorder(kube_cluster.kube, node, namespace="default")
    check = CheckResult(f"required.d/{printable(FORGED)}", Status.FAILED, "exit status 3")
    reason = gate_failed("rendered-worker-2", check)
    raw = gate_failed("rendered-worker-2", CheckResult(f"required.d/{FORGED}", Status.FAILED,
                                                       "exit status 3"))  # fmt: skip
    status.degraded(raw)  # a caller that forgot to escape: the Node writer still does
    assert events.record(Reason.HEALTH_GATE_FAILED, raw)
    written = annotations_of(kube_cluster.kube.request("GET", f"/api/v1/nodes/{node}"))
    assert written[Annotation.REASON] == reason
    assert "\n" not in written[Annotation.REASON] and "\x1b" not in written[Annotation.REASON]
    (event,) = kube_cluster.events_for(node)
    assert event["message"] == reason


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.text(min_size=1, max_size=40))
def test_any_name_is_one_printable_line_and_escaping_twice_changes_nothing(name: str) -> None:
    once = printable(f"check required.d/{name} failed")
    assert once.isprintable() and "\n" not in once
    assert printable(once) == once  # the sinks escape again: an escaped reason stays the same
