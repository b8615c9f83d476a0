"""How often the health gate of one config failed: the gate's boot counter.

Every failed boot into a config is counted in
``/etc/machine-config-daemon/health-gate-boots.json`` (one count per boot id, so a restarted
agent does not count twice; a failed rebootless gate counts once too); once ``max_boots``
gates of one config failed, the update to it is refused (Degraded) instead of tried again: no
reboot loop. A new desired config starts a new count; the force file clears it, and so does
the controller's retry request when a halted rollout is resumed (once per request).
"""

from __future__ import annotations

import json
import logging

from mcd.agent.safety.health import last_verdict
from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.fs.sealing import STATE_FILE_MODE
from mcd.host.rootfs import Root
from mcd.model.errors import ConfigError
from mcd.model.node.health import BootCount, boot_count_of, boots_exhausted

log = logging.getLogger(__name__)

BOOTS_PATH = "/etc/machine-config-daemon/health-gate-boots.json"
RETRY_PATH = "/etc/machine-config-daemon/health-gate-retry"
"""The last retry request honoured (:data:`mcd.model.node.health.RETRY_ANNOTATION`)."""


def load_count(root: Root) -> BootCount:
    try:
        doc = json.loads(root.read_bytes(BOOTS_PATH))
        return boot_count_of(doc if isinstance(doc, dict) else {})
    except FileNotFoundError:
        return BootCount("")
    except (OSError, HostError, ValueError, ConfigError) as e:
        log.warning("Ignoring unreadable %s (%s); counting afresh", BOOTS_PATH, e)
        return BootCount("")


def record_failure(root: Root, config: str, attempt: str) -> BootCount:
    count = load_count(root).add(config, attempt)
    fsops.write_file(root, BOOTS_PATH, json.dumps(count.as_dict()).encode(), STATE_FILE_MODE)
    return count


def clear(root: Root) -> None:
    if root.exists(BOOTS_PATH):
        fsops.remove(root, BOOTS_PATH)


def honour_retry(root: Root, request: str) -> bool:
    """A retry the controller asked for (a resumed rollout): the first time a request is seen,
    the counter starts afresh; each request once (kept in :data:`RETRY_PATH`)."""
    try:
        seen = root.read_bytes(RETRY_PATH).decode(errors="replace")
    except FileNotFoundError:
        seen = ""
    except (OSError, HostError) as e:
        log.warning("Ignoring unreadable %s (%s)", RETRY_PATH, e)
        seen = ""
    if not request or seen == request:
        return False
    clear(root)
    fsops.write_file(root, RETRY_PATH, request.encode(), STATE_FILE_MODE)
    return True


def refused(root: Root, config: str, max_boots: int) -> str:
    """The reason an update to ``config`` is not tried again, or ''."""
    count = load_count(root)
    if count.config != config or not count.exhausted(max_boots):
        return ""
    last = verdict_reason(root) or "see the HealthGateFailed events"
    return boots_exhausted(config, count.boots, last)


def verdict_reason(root: Root) -> str:
    """The failed check of the last gate, as its reason said it."""
    doc = last_verdict(root) or {}
    checks = doc.get("checks")
    for check in checks if isinstance(checks, list) else []:
        if isinstance(check, dict) and check.get("status") == "failed":
            note = f": {check.get('note')}" if check.get("note") else ""
            return f"check {check.get('name')} failed{note}"
    return ""
