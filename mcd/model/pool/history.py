"""A pool's rollout history, rollback pin and the rendered configs nothing uses (beyond
upstream). Pure.

* **History**: the pool annotation ``mcd-project.github.io/rollout-history`` holds the last
  :data:`KEEP` targets as numbered revisions (JSON: revision, rendered config, time, by whom,
  which MachineConfigs changed), as ``kubectl rollout history`` shows a Deployment's. A
  config targeted again moves to a new revision number (as ``kubectl`` does).
* **What changed**: each rendered config the controller creates carries
  ``mcd-project.github.io/sources``, its MachineConfigs' names with a short hash of each
  one's spec, so two rendered configs say which MachineConfigs differ.
* **Rollback pin**: ``mcd rollback`` points ``spec.configuration`` at an earlier rendered
  config and writes ``mcd-project.github.io/rollback`` = ``{"config": OLD, "rendered": NEW}``
  (NEW: what the MachineConfigs rendered to then). The render controller leaves the pool on
  OLD while the MachineConfigs still render to NEW; once they render to anything else (a
  MachineConfig changed: the fix) or the annotation is removed, it targets the fresh render
  again. So a rollback never fights the renderer, and a fix ends it.
* **Prune**: a rendered config no Node (current or desired), no pool (target, status or
  pin) and no revision uses, older than a grace period, may go. Fail safe: a pool whose
  history or pin cannot be read (over :data:`MAX_TEXT`, or malformed after a hand edit) may
  name a rollback the user kept, so none of that pool's rendered configs may go
  (:func:`unreadable`, :func:`belongs`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from mcd.model.pool.render import RENDERED_PREFIX

HISTORY_ANNOTATION = "mcd-project.github.io/rollout-history"
ROLLBACK_ANNOTATION = "mcd-project.github.io/rollback"
SOURCES_ANNOTATION = "mcd-project.github.io/sources"
KEEP = 10
"""Revisions kept per pool."""
MAX_TEXT = 16_384
"""The longest history or sources annotation read (ten revisions need a few kilobytes)."""
_CHANGE_CHARS = 300


@dataclass(frozen=True)
class Revision:
    revision: int
    config: str
    time: str
    by: str
    change: str

    def to_json(self) -> dict[str, object]:
        return {"revision": self.revision, "config": self.config, "time": self.time,
                "by": self.by, "change": self.change}  # fmt: skip


def _load(text: object) -> Any:
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def parse_history(text: object) -> list[Revision]:
    """The revisions, oldest first; anything unreadable is left out (never an error: the
    history is a record, not an input)."""
    doc = _load(text)
    out = []
    for item in doc if isinstance(doc, list) else []:
        if not _entry(item):
            continue
        number, config = item["revision"], item["config"]
        out.append(Revision(number, config[:253], str(item.get("time", ""))[:40],
                            str(item.get("by", ""))[:100],
                            str(item.get("change", ""))[:_CHANGE_CHARS]))  # fmt: skip
    return sorted(out, key=lambda r: r.revision)


def _entry(item: object) -> bool:
    """A revision the history can use: a number and a config."""
    if not isinstance(item, dict):
        return False
    number, config = item.get("revision"), item.get("config")
    return isinstance(number, int) and not isinstance(number, bool) and isinstance(config, str)


def record(history: Sequence[Revision], config: str, time: str, by: str, change: str,
           keep: int = KEEP) -> list[Revision]:  # fmt: skip
    """The history with ``config`` as the newest revision (its older entry dropped), the
    last ``keep`` kept. Recording the newest config again changes nothing."""
    if history and history[-1].config == config:
        return list(history)
    number = max((r.revision for r in history), default=0) + 1
    if len(change) > _CHANGE_CHARS:
        change = change[: _CHANGE_CHARS - 3] + "..."
    kept = [r for r in history if r.config != config]
    return [*kept, Revision(number, config, time, by, change)][-keep:]


def encode_history(history: Sequence[Revision]) -> str:
    return json.dumps([r.to_json() for r in history], separators=(",", ":"))


def source_hashes(selected: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each MachineConfig's name -> a short hash of its spec."""
    out = {}
    for mc in selected:
        name = str((mc.get("metadata") or {}).get("name") or "")
        spec = json.dumps(mc.get("spec") or {}, sort_keys=True, separators=(",", ":"))
        out[name] = hashlib.sha256(spec.encode()).hexdigest()[:12]
    return out


def parse_sources(rendered: Mapping[str, Any] | None) -> dict[str, str] | None:
    """A rendered config's :data:`SOURCES_ANNOTATION` (None: absent or unreadable)."""
    annotations = ((rendered or {}).get("metadata") or {}).get("annotations") or {}
    doc = _load(annotations.get(SOURCES_ANNOTATION))
    if not isinstance(doc, dict):
        return None
    return {str(k): str(v) for k, v in doc.items()}


def differ(old: Mapping[str, str] | None, new: Mapping[str, str] | None) -> list[str]:
    """Which MachineConfigs differ from ``old`` to ``new`` (``NAME added``, ``removed``,
    ``changed``); ``["unknown"]`` when either side does not say."""
    if old is None or new is None:
        return ["unknown (a rendered config without mcd-project.github.io/sources)"]
    out = []
    for name in sorted(set(old) | set(new)):
        if name not in old:
            out.append(f"{name} added")
        elif name not in new:
            out.append(f"{name} removed")
        elif old[name] != new[name]:
            out.append(f"{name} changed")
    return out


@dataclass(frozen=True)
class Pin:
    config: str
    """The rendered config the pool was rolled back to."""
    rendered: str
    """What the MachineConfigs rendered to when it was."""


def parse_pin(text: object) -> Pin | None:
    doc = _load(text)
    if not isinstance(doc, dict):
        return None
    config, rendered = doc.get("config"), doc.get("rendered")
    if not isinstance(config, str) or not isinstance(rendered, str) or not config:
        return None
    return Pin(config, rendered)


def encode_pin(pin: Pin) -> str:
    return json.dumps({"config": pin.config, "rendered": pin.rendered}, separators=(",", ":"))


def pinned(pin: Pin | None, fresh: str) -> bool:
    """Does the rollback still hold while the MachineConfigs render to ``fresh``?"""
    return pin is not None and pin.rendered == fresh


def in_use(pools: Iterable[Mapping[str, Any]], nodes: Iterable[Mapping[str, Any]],
           node_keys: Sequence[str]) -> set[str]:  # fmt: skip
    """Every rendered config a pool (target, status, pin, revision) or a Node (the
    ``node_keys`` annotations: current and desired) uses."""
    used: set[str] = set()
    for pool in pools:
        for part in ("spec", "status"):
            name = ((pool.get(part) or {}).get("configuration") or {}).get("name")
            if name:
                used.add(str(name))
        annotations = (pool.get("metadata") or {}).get("annotations") or {}
        used |= {r.config for r in parse_history(annotations.get(HISTORY_ANNOTATION))}
        pin = parse_pin(annotations.get(ROLLBACK_ANNOTATION))
        if pin is not None:
            used |= {pin.config, pin.rendered}
    for node in nodes:
        annotations = (node.get("metadata") or {}).get("annotations") or {}
        used |= {str(annotations[k]) for k in node_keys if annotations.get(k)}
    return used


def unreadable(pool: Mapping[str, Any]) -> str:
    """Why the pool's history or rollback pin cannot be read ("" when both can, or are
    absent): an unreadable one may name configs nothing else uses, so it protects them all."""
    annotations = (pool.get("metadata") or {}).get("annotations") or {}
    history = history_problem(annotations.get(HISTORY_ANNOTATION))
    if history:
        return f"{HISTORY_ANNOTATION} {history}"
    text = annotations.get(ROLLBACK_ANNOTATION)
    pin = "" if text is None or text == "" else _text_problem(text) or _pin_problem(_load(text))
    return f"{ROLLBACK_ANNOTATION} {pin}" if pin else ""


def history_problem(text: object) -> str:
    """Why a history annotation cannot be read ("" when it can, or is absent). The render
    leaves such a history as it is (it protects: :func:`unreadable`)."""
    if text is None or text == "":
        return ""
    return _text_problem(text) or _history_problem(_load(text))


def _text_problem(text: object) -> str:
    if not isinstance(text, str):
        return "is not text"
    if len(text) > MAX_TEXT:
        return f"is over {MAX_TEXT} characters ({len(text)})"
    if _load(text) is None:
        return "is not valid JSON"
    return ""


def _history_problem(doc: Any) -> str:
    if not isinstance(doc, list):
        return "is not a list of revisions"
    if not all(_entry(item) for item in doc):
        return "has an entry without a revision number and config"
    return ""


def _pin_problem(doc: Any) -> str:
    fine = isinstance(doc, dict) and doc.get("config") and isinstance(doc.get("config"), str)
    return "" if fine and isinstance(doc.get("rendered"), str) else "names no config"


def belongs(mc: Mapping[str, Any], pool: str) -> bool:
    """Could the rendered config be the pool's? (Its owner is the pool, or its name is
    ``rendered-POOL-...``: a name such as ``rendered-worker-gpu-...`` counts for ``worker``
    too, which only keeps more.)"""
    meta = mc.get("metadata") or {}
    for owner in meta.get("ownerReferences") or []:
        if owner.get("kind") == "MachineConfigPool" and owner.get("name") == pool:
            return True
    return str(meta.get("name") or "").startswith(f"{RENDERED_PREFIX}{pool}-")


def prunable(configs: Iterable[Mapping[str, Any]], used: set[str], now: datetime,
             grace: timedelta, generated_by: str,
             protected: Iterable[str] = ()) -> list[str]:  # fmt: skip
    """The rendered configs (named ``rendered-...`` and carrying ``generated_by``) nothing
    uses, created more than ``grace`` before ``now`` (a config whose creation time cannot be
    read is kept), none of them one of the ``protected`` pools' (:func:`belongs`)."""
    out = []
    guarded = tuple(protected)
    for mc in configs:
        meta = mc.get("metadata") or {}
        name = str(meta.get("name") or "")
        if not name.startswith(RENDERED_PREFIX) or name in used:
            continue
        if any(belongs(mc, pool) for pool in guarded):
            continue
        if not (meta.get("annotations") or {}).get(generated_by):
            continue
        try:
            created = datetime.fromisoformat(
                str(meta.get("creationTimestamp")).replace("Z", "+00:00")
            )
        except ValueError:
            continue
        if created.tzinfo is not None and now - created >= grace:
            out.append(name)
    return sorted(out)
