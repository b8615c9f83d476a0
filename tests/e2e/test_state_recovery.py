"""``mcd start`` with a damaged journal (issue 14, item 4): Degraded with the reason naming
the file, no crash loop, and back to Done once ``mcd recover --abandon`` set it aside."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mcd.agent.update.handles import CURRENT_RECOVERY
from mcd.agent.update.journal import JOURNAL, RECOVERY
from mcd.cli import cli
from mcd.model.vocabulary import CURRENT_CONFIG_PATH
from tests.e2e.configs import worker
from tests.e2e.conftest import NodeFactory
from tests.e2e.scenarios import install
from tests.fakes.kubecluster import TestCluster


def test_a_corrupt_journal_is_degraded_with_its_reason_until_recovered(
    make_node: NodeFactory, kube_cluster: TestCluster
) -> None:
    node = make_node()
    doc = worker(kube_cluster.name("rendered-worker-1"))
    name = install(node, kube_cluster, doc)
    node.path(JOURNAL).write_text('{"old": "a", "new": "b", "phase": "dancing"}')
    node.start()
    node.wait_state("Degraded")
    assert node.reason() == (
        f"corrupt update journal {JOURNAL}: field phase is not a known phase; {RECOVERY}"
    )
    assert node.running
    assert "Traceback" not in node.log()
    result = CliRunner().invoke(cli, ["recover", "--abandon", "--root", str(node.root)])
    assert result.exit_code == 0, result.output
    node.wait_state("Done", name, timeout=90)


def test_a_corrupt_currentconfig_is_degraded_until_written_back(
    make_node: NodeFactory, kube_cluster: TestCluster, tmp_path: Path
) -> None:
    node = make_node()
    doc = worker(kube_cluster.name("rendered-worker-1"))
    name = install(node, kube_cluster, doc)
    node.path(CURRENT_CONFIG_PATH).write_bytes(b"\x00garbage")
    node.start()
    node.wait_state("Degraded")
    assert node.reason() == (
        f"corrupt state file {CURRENT_CONFIG_PATH}: not valid YAML or JSON: special characters "
        f"are not allowed (U+0000) at line 1, column 1; {CURRENT_RECOVERY}"
    )
    assert "Traceback" not in node.log()
    saved = tmp_path / "rendered.json"
    saved.write_text(json.dumps(doc))
    result = CliRunner().invoke(cli, ["recover", "--current", str(saved), "--root", str(node.root)])
    assert result.exit_code == 0, result.output
    node.wait_state("Done", name, timeout=90)
