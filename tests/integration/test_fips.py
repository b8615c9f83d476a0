"""FIPS from the node in once-from (upstream checkFIPS via update()) and firstboot
(upstream setNodeFipsIntoMC + processFips)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcd.agent.commands.once import node_for
from mcd.agent.update.handles import Node
from mcd.cli import cli
from mcd.host.errors import HostError
from mcd.host.rootfs import Root
from tests.builders import file_entry, mc_doc

FIPS_FILE = "proc/sys/crypto/fips_enabled"


def _node_fips(root: Path, value: str | None) -> None:
    if value is not None:
        (root / FIPS_FILE).parent.mkdir(parents=True, exist_ok=True)
        (root / FIPS_FILE).write_text(value)


def _once(root: Path, tmp_path: Path, fips: bool) -> tuple[int, str]:
    source = tmp_path / "rendered-fips.json"
    source.write_text(
        json.dumps(mc_doc("rendered-fips", fips=fips, files=[file_entry("/etc/a", "1\n")]))
    )
    result = CliRunner().invoke(
        cli, ["once-from", str(source), "--root", str(root), "--skip-reboot"]
    )
    return result.exit_code, result.output


@pytest.mark.parametrize("node", ["1\n", None])  # FIPS node; no FIPS file: upstream skips
def test_once_from_accepts_fips_true_on_a_fips_node(
    node_root: Path, tmp_path: Path, node: str | None
) -> None:
    _node_fips(node_root, node)
    code, out = _once(node_root, tmp_path, fips=True)
    assert code == 0, out
    assert (node_root / "etc/a").read_text() == "1\n"


def test_once_from_refuses_fips_true_on_a_non_fips_node(node_root: Path, tmp_path: Path) -> None:
    _node_fips(node_root, "0\n")
    code, out = _once(node_root, tmp_path, fips=True)
    assert code != 0
    assert "detected change to FIPS flag; refusing to modify FIPS on a running cluster" in out
    assert not (node_root / "etc/a").exists()


def test_fips_file_parsed_as_strconv_parsebool(node_root: Path) -> None:
    node: Node = node_for(Root(node_root))
    _node_fips(node_root, "1\n")
    assert node.fips() is True
    _node_fips(node_root, "0")
    assert node.fips() is False
    _node_fips(node_root, "yes\n")
    with pytest.raises(HostError, match="error parsing FIPS file at /proc/sys/crypto/fips_enabled"):
        node.fips()
