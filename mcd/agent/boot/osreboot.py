"""The reboots the node's OS asks for, on the agent's side (:mod:`mcd.model.reboots`).

* Every sync (and the wish's own thread, :class:`mcd.agent.report.rebootwish.RebootWish`)
  puts what asks on the Node (``mcd-project.github.io/reboot-required``) and its
  MachineConfigNode (condition ``RebootRequired``); the agent never reboots for it alone.
* Once the controller gives the node a slot (``mcd-project.github.io/reboot-requested``
  newer than the agent's last answer) and the node is Done on its desired config: drain (the
  drain controller, or the agent with ``--drain-mode self``), a marker on disk
  (:data:`MARKER`: the request, the boot id), reboot (``Reboot`` Event, as an update's).
* The boot after it (:func:`after_boot`, in the boot checks before the uncordon): the health
  gate of the current config; passed, the request is answered
  (``mcd-project.github.io/reboot-done``) and the boot checks uncordon the node and say
  Done; failed, the node stays cordoned and Degraded with the gate's reason (the pool's
  rollout policy halts on it) and the boot checks run again with the agent's backoff.
* A request the OS no longer asks for (the sentinel went away) is answered at once.
"""

from __future__ import annotations

import json
import logging
import time

from mcd.agent.update import gating, progress
from mcd.agent.update.context import Config, Context, SyncError
from mcd.agent.update.trigger import before_reboot
from mcd.cluster.api import Obj
from mcd.cluster.drain import DrainError
from mcd.cluster.events import Reason
from mcd.cluster.node import annotations_of
from mcd.host.errors import HostError
from mcd.host.fs import fsops
from mcd.host.fs.sealing import STATE_FILE_MODE
from mcd.host.systemd.manager import SystemdError
from mcd.model.node import mcn as m
from mcd.model.reboots.requests import (
    DONE_ANNOTATION,
    REQUIRED_ANNOTATION,
    NodeReboot,
    done_value,
    parse_required,
    required_value,
)
from mcd.model.vocabulary import Annotation, NodeState

log = logging.getLogger(__name__)

MARKER = "/etc/machine-config-daemon/os-reboot.json"
"""The OS reboot asked for (request, boot id, config), until the boot after it answers."""


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _marker(ctx: Context) -> dict[str, str] | None:
    try:
        doc = json.loads(ctx.host.root.read_bytes(MARKER))
    except FileNotFoundError:
        return None
    except (OSError, HostError, ValueError) as e:
        log.warning("Ignoring unreadable %s (%s)", MARKER, e)
        return None
    return {str(k): str(v) for k, v in doc.items()} if isinstance(doc, dict) else None


def _condition(ctx: Context, status: str, reason: str, message: str) -> None:
    condition = m.Condition(m.REBOOT_REQUIRED, reason, message, status)
    progress.reporter(ctx).report(ctx.writer.current(), condition)


def report_wish(ctx: Context, node: Obj) -> str:
    """What asks for a reboot now, on the Node and its MachineConfigNode when that changed."""
    wish = ctx.wish
    if wish is None:
        return ""
    source = wish.check()
    have = annotations_of(node).get(REQUIRED_ANNOTATION)
    before = parse_required(have)
    if source and before is not None and before.source == source:
        wish.keep(before.since)
    value = required_value(source, wish.since) if source else None
    if value == have or (value is None and have is None):
        return source
    ctx.writer.set_annotations({REQUIRED_ANNOTATION: value})
    if source:
        message = f"The OS asks for a reboot ({source}) since {wish.since}"
        _condition(ctx, m.TRUE, "RebootRequired", f"{message}; waiting for a slot")
    else:
        _condition(ctx, m.FALSE, "NotRequired", "The OS asks for no reboot")
    return source


def step(ctx: Context, node: Obj) -> bool:
    """The OS reboot's part of a sync: report the wish; reboot when the controller gave the
    node a slot. True when the sync asked for the reboot (nothing else to do)."""
    source = report_wish(ctx, node)
    annotations = annotations_of(node)
    reboot = NodeReboot.of(annotations)
    if not reboot.pending:
        return False
    current = annotations.get(Annotation.CURRENT_CONFIG, "")
    done = annotations.get(Annotation.STATE, NodeState.DONE) == NodeState.DONE
    if not current or current != annotations.get(Annotation.DESIRED_CONFIG) or not done:
        return False  # an update first (the controller asks for none then)
    if not source and ctx.wish is not None:
        log.info("OS reboot request %s: the OS no longer asks for a reboot; answered",
                 reboot.requested)  # fmt: skip
        ctx.writer.set_annotations({DONE_ANNOTATION: done_value(reboot.requested, _now())})
        return False
    _reboot(ctx, reboot.requested, current, source or "the controller")
    return True


def _reboot(ctx: Context, request: str, config: str, source: str) -> None:
    log.info("The controller gave node %s a slot for the OS reboot %s asks for (request %s)",
             ctx.node_name, source, request)  # fmt: skip
    _condition(ctx, m.TRUE, "Rebooting", f"Rebooting for the OS ({source}), request {request}")
    try:
        ctx.drainer.drain(config)
    except DrainError as e:
        raise SyncError(str(e)) from e
    doc = {"request": request, "boot_id": ctx.host.boot_id(), "config": config, "source": source}
    fsops.write_file(ctx.host.root, MARKER, json.dumps(doc).encode(), STATE_FILE_MODE)
    rationale = f"Node will reboot: the OS asks for it ({source})"
    before_reboot(ctx, rationale)
    try:
        ctx.host.effects.systemd.reboot(rationale)
    except SystemdError as e:
        fsops.remove(ctx.host.root, MARKER)
        ctx.metrics.reboots_failed.inc()
        raise SyncError(f"reboot command failed, something is seriously wrong: {e}") from e
    ctx.reboot_queued = True


def after_boot(ctx: Context, current: Config) -> None:
    """In the boot checks, before the uncordon: the boot after an OS reboot runs the health
    gate of ``current`` and answers the request; a failed gate raises (Degraded, cordoned)."""
    marker = _marker(ctx)
    if marker is None or marker.get("boot_id") == ctx.host.boot_id():
        return  # no OS reboot, or the agent restarted before it (the sync asks again)
    request = marker.get("request", "")
    gate = gating.gate_for(ctx)
    if gate.settings.enabled:
        verdict = gate.run(current.mc)
        if not verdict.ok:
            reason = f"health gate failed after the OS reboot: {verdict.reason()}"
            ctx.events.record(Reason.HEALTH_GATE_FAILED, reason)
            _condition(ctx, m.TRUE, "HealthGateFailed", reason)
            raise SyncError(reason)
    source = ctx.wish.check() if ctx.wish is not None else ""  # /run is empty again
    since = ctx.wish.since if ctx.wish is not None else ""
    ctx.writer.set_annotations({  # one write: the answer, and the wish as it is now
        DONE_ANNOTATION: done_value(request, _now()),
        REQUIRED_ANNOTATION: required_value(source, since) if source else None,
    })  # fmt: skip
    fsops.remove(ctx.host.root, MARKER)
    log.info("OS reboot %s done (asked by %s)", request, marker.get("source", ""))
    _condition(ctx, m.FALSE, "Rebooted",
               f"Rebooted for the OS ({marker.get('source', '')}) at {_now()}")  # fmt: skip
