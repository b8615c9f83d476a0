"""How many times a node came back on the old deployment for one config.

Upstream writes the new config to ``currentconfig`` before rebooting, so a node
that boots the previous deployment fails ``validateOnDiskState`` at once and is
``Degraded`` with ``unexpected on-disk state validating against NEW: expected
target osImageURL "...", have "..."``. mcd promotes ``currentconfig`` only after
the new deployment booted, and first retries the update (a failed
``ostree-finalize-staged`` is often transient). It retries ``MAX_RETRIES``
times for the same config, then gives up with upstream's reason; the count
lives here, on the node, so it survives the reboots it counts. A new desired
config, a completed update or the force file starts over.
"""

from __future__ import annotations

import json
import logging

from mcd.host.fs import fsops
from mcd.host.rootfs import Root

log = logging.getLogger(__name__)

RETRIES_PATH = "/etc/machine-config-daemon/booted-old-deployment.json"
MAX_RETRIES = 3


def _load(root: Root) -> dict[str, object]:
    try:
        doc = json.loads(root.read_bytes(RETRIES_PATH))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def record(root: Root, config: str) -> int:
    """Count one more boot of the old deployment for ``config``; return the count."""
    doc = _load(root)
    count = doc.get("count") if doc.get("config") == config else 0
    count = (count if isinstance(count, int) else 0) + 1
    fsops.write_file(
        root, RETRIES_PATH, json.dumps({"config": config, "count": count}).encode(), 0o600
    )
    return count


def give_up(root: Root, config: str, reason: str) -> None:
    doc = _load(root)
    doc.update(config=config, reason=reason)
    fsops.write_file(root, RETRIES_PATH, json.dumps(doc).encode(), 0o600)


def given_up(root: Root, config: str) -> str:
    """The reason the update to ``config`` was given up, or ''."""
    doc = _load(root)
    reason = doc.get("reason")
    return reason if doc.get("config") == config and isinstance(reason, str) else ""


def clear(root: Root) -> None:
    if fsops.remove(root, RETRIES_PATH):
        log.info("Cleared the count of boots into the old deployment")
