"""``mcd once-from`` on a test root, the way the integration tests drive it: a config that writes
``/etc/motd`` (so every apply changes a file) plus the spec under test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcd.agent.commands.once import once_from
from mcd.agent.update.handles import Node
from mcd.agent.update.transaction import Outcome
from mcd.model.vocabulary import CURRENT_CONFIG_PATH
from tests.builders import file_entry, mc_doc


def apply(root: Path, node: Node, name: str, **spec: Any) -> Outcome:
    """Apply config ``name`` (``/etc/motd`` holding its name, and ``spec``) to ``root``."""
    source = root.parent / f"{name}.json"
    doc = mc_doc(name, files=[file_entry("/etc/motd", f"{name}\n", 0o644)], **spec)
    source.write_text(json.dumps(doc))
    return once_from(str(source), node, skip_reboot=True)


def current(root: Path) -> str:
    """The name of the config the node's root says it is on."""
    return str(json.loads((root / CURRENT_CONFIG_PATH.lstrip("/")).read_text())["metadata"]["name"])
