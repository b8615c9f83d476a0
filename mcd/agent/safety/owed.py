"""A reboot owed until it happens: ``/etc/machine-config-daemon/reboot-owed.json``.

Written before an update that needs a reboot is committed; it says "a reboot is owed for
config X since boot id Y". The agent clears it when it starts in another boot (the reboot
happened) or when the update is rolled back. An agent that starts in the *same* boot knows
the reboot never happened (it was killed between the commit and the request, or the request
was lost) and asks again, at most :data:`LIMIT` times in one boot; after that the node is
Degraded with upstream's reason for a reboot that did not happen (``pending config X bootID
Y matches current! Failed to reboot?``). No config is reported Done while its reboot is owed.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from mcd.host.fs import fsops
from mcd.host.rootfs import Root

log = logging.getLogger(__name__)

OWED = "/etc/machine-config-daemon/reboot-owed.json"
LIMIT = 3
"""Reboot requests in one boot before the node is Degraded instead."""


class RebootNotHappening(Exception):
    """The reboot was requested :data:`LIMIT` times in this boot and did not happen."""


@dataclass
class Owed:
    config: str
    boot_id: str
    requests: int = 0


def failed_to_reboot(config: str, boot_id: str) -> str:
    """Upstream's reason (``getPendingConfig``) for a reboot that did not happen."""
    return f"pending config {config} bootID {boot_id} matches current! Failed to reboot?"


def load(root: Root) -> Owed | None:
    try:
        raw = json.loads(root.read_bytes(OWED))
        return Owed(str(raw["config"]), str(raw["bootID"]), int(raw.get("requests", 0)))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        # unreadable: treat as owed in an unknown boot, i.e. the reboot happened; say so
        log.warning("Ignoring unreadable %s: %s", OWED, e)
        return None


def save(root: Root, owed: Owed) -> None:
    data = {"config": owed.config, "bootID": owed.boot_id, "requests": owed.requests}
    fsops.write_file(root, OWED, json.dumps(data).encode())


def owe(root: Root, config: str, boot_id: str) -> None:
    """Record that ``config`` needs a reboot out of boot ``boot_id`` (kept if already so)."""
    have = load(root)
    if have is not None and (have.config, have.boot_id) == (config, boot_id):
        return
    save(root, Owed(config, boot_id))
    log.info("Reboot owed for config %s since boot id %s", config, boot_id)


def clear(root: Root) -> None:
    fsops.remove(root, OWED)


def pending_in(root: Root, boot_id: str) -> Owed | None:
    """The reboot owed in this boot, if any; a record from another boot is cleared (that
    reboot happened)."""
    owed = load(root)
    if owed is None:
        return None
    if owed.boot_id != boot_id:
        log.info("Reboot owed for %s since boot id %s has happened", owed.config, owed.boot_id)
        clear(root)
        return None
    return owed


def count_request(root: Root, config: str, boot_id: str) -> Owed:
    """Count one more reboot request for ``config`` in this boot; raises
    :class:`RebootNotHappening` once :data:`LIMIT` requests did not reboot the node."""
    owed = load(root)
    if owed is None or (owed.config, owed.boot_id) != (config, boot_id):
        owed = Owed(config, boot_id)
    if owed.requests >= LIMIT:
        raise RebootNotHappening(failed_to_reboot(config, boot_id))
    owed.requests += 1
    save(root, owed)
    if owed.requests > 1:
        log.warning("Reboot for %s still owed in boot %s: request %d of %d",
                    config, boot_id, owed.requests, LIMIT)  # fmt: skip
    return owed
