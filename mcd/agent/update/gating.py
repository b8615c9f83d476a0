"""The health gate as the agent runs it: settings from the node and its pool, the verdict on
the Node, a failed gate's rollback made visible (an Event, a metric, a log line)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from mcd.agent.safety.health import (
    POOLS,
    HealthGate,
    forget_verdict,
    load_settings,
    node_ready_check,
)
from mcd.agent.update.context import Context
from mcd.cluster.api import ApiError
from mcd.cluster.events import Reason
from mcd.cluster.node import annotations_of
from mcd.model.node.health import (
    RETRY_ANNOTATION,
    STATE_ANNOTATION,
    Verdict,
    requested_config,
    stale_state,
    state_annotation,
)
from mcd.model.node.mcn import pool_of

log = logging.getLogger(__name__)


def gate_for(ctx: Context, pool: Mapping[str, str] | None = None) -> HealthGate:
    """The gate for the agent's next update, with the settings the cluster and the node give
    now (``pool``: the pool's annotations when the caller has read them); a
    :class:`GateSettingsError` (the update is refused before anything is written)."""
    node = ctx.writer.current()
    meta = node.get("metadata") or {}
    node_annotations = meta.get("annotations") or {}
    pool = pool_annotations(ctx, meta) if pool is None else pool
    settings = load_settings(ctx.host.root, pool, node_annotations)
    gate = HealthGate(
        ctx.host.root, ctx.host.effects.systemd, settings,
        node_ready=node_ready_check(ctx.writer.get), metrics=ctx.metrics,
    )  # fmt: skip
    gate.on_rollback = lambda reason, kind: record_rollback(ctx, reason, kind)
    request = str(node_annotations.get(RETRY_ANNOTATION) or "")  # seen before the gate runs
    gate.on_verdict = lambda verdict: _annotate(ctx, verdict, request)
    return gate


def retry_requested(ctx: Context, config: str) -> str:
    """The controller's request to run ``config``'s gate again (a resumed rollout), or ''."""
    request = str(annotations_of(ctx.writer.current()).get(RETRY_ANNOTATION) or "")
    return request if request and requested_config(request) == config else ""


def clear_stale(ctx: Context, config: str) -> bool:
    """The node is about to say Done on ``config``: a failed verdict of another config (it
    was rolled back, or moved on) goes with that write, and ``mcd_health_gate_failed`` is 0.
    A passing verdict deferred for ``config`` replaces it anyway."""
    have = annotations_of(ctx.writer.current()).get(STATE_ANNOTATION)
    if not stale_state(have, config) or ctx.writer.owes(STATE_ANNOTATION):
        return False
    log.info("Clearing the failed health gate of another config from node %s", ctx.node_name)
    ctx.writer.defer_annotations({STATE_ANNOTATION: None})
    ctx.metrics.health_gate_failed.set(0)
    forget_verdict(ctx.host.root, config)
    return True


def _annotate(ctx: Context, verdict: Verdict, request: str = "") -> None:
    """The verdict on the Node: a failed one at once; a passing one with the write that
    follows it a moment later (Done, or the reason the update failed after all). A verdict
    of the config a retry was requested for answers that request."""
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    answered = request if requested_config(request) == verdict.config else ""
    values = {STATE_ANNOTATION: state_annotation(verdict, when, answered)}
    if verdict.ok:
        ctx.writer.defer_annotations(values)
        return
    try:
        ctx.writer.set_annotations(values)
    except ApiError as e:  # the verdict still counts; only `mcd status` misses it
        log.warning("Could not put the health gate's verdict on node %s: %s", ctx.node_name, e)


def node_pool_annotations(ctx: Context) -> Mapping[str, str]:
    """The annotations of the pool of the Node as the agent last saw it (one read an update:
    the health gate's and the soft reboot's settings both come from it)."""
    return pool_annotations(ctx, ctx.writer.current().get("metadata") or {})


def pool_annotations(ctx: Context, meta: Mapping[str, object]) -> Mapping[str, str]:
    """The annotations of the Node's pool (settings: health gate, soft reboot); {} when none."""
    labels = meta.get("labels")
    pool = pool_of(dict(labels) if isinstance(labels, dict) else {})
    try:
        obj = ctx.kube.request("GET", f"{POOLS}/{pool}")
    except ApiError as e:  # no pool (a cluster without the operator), or not readable
        log.debug("No MachineConfigPool %s for the health gate's settings: %s", pool, e)
        return {}
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return annotations if isinstance(annotations, dict) else {}


def record_rollback(ctx: Context, reason: str, kind: str) -> None:
    """A failed gate's rollback is visible: a Node Event, a metric, a log line."""
    log.error("Health gate rolled the update back: %s", reason)
    ctx.metrics.health_gate_rollbacks.labels(kind).inc()
    ctx.events.record(Reason.HEALTH_GATE_FAILED, reason)
