"""The three Node annotations of an OS reboot, from the OS's wish to the agent's answer. Pure.

* ``mcd-project.github.io/reboot-required`` (the agent): what asked and since when, as JSON
  ``{"source": "/var/run/reboot-required", "since": "2026-11-27T22:00:00Z"}``; absent when
  nothing asks;
* ``mcd-project.github.io/reboot-requested`` (the controller): the time the controller gave
  the node a slot for the reboot; the request stays until the next one replaces it;
* ``mcd-project.github.io/reboot-done`` (the agent): the request it answered and when, as JSON
  ``{"request": "<the request>", "at": "..."}``, written once the node rebooted, its health
  gate ran and it is uncordoned.

A request not yet answered is a reboot in progress: the node counts against the pool's
``maxUnavailable`` from the request until the answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

REQUIRED_ANNOTATION = "mcd-project.github.io/reboot-required"
REQUESTED_ANNOTATION = "mcd-project.github.io/reboot-requested"
DONE_ANNOTATION = "mcd-project.github.io/reboot-done"
DEFAULT_SENTINEL = "/var/run/reboot-required"
"""Debian's and Ubuntu's sentinel (``unattended-upgrades``, ``update-notifier-common``)."""
NEEDS_RESTARTING = "needs-restarting -r"
"""The RHEL-like check (dnf-utils): exit status 1 when a reboot is needed."""


@dataclass(frozen=True)
class Required:
    source: str
    since: str


@dataclass(frozen=True)
class Done:
    request: str
    at: str


def _object(text: object) -> Mapping[str, object] | None:
    if not isinstance(text, str) or not text or len(text) > 4096:
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def required_value(source: str, since: str) -> str:
    return json.dumps({"source": source, "since": since}, separators=(",", ":"))


def parse_required(text: object) -> Required | None:
    doc = _object(text)
    if doc is None:
        return None
    return Required(str(doc.get("source") or "unknown"), str(doc.get("since") or ""))


def done_value(request: str, at: str) -> str:
    return json.dumps({"request": request, "at": at}, separators=(",", ":"))


def parse_done(text: object) -> Done | None:
    doc = _object(text)
    if doc is None or not doc.get("request"):
        return None
    return Done(str(doc.get("request")), str(doc.get("at") or ""))


@dataclass(frozen=True)
class NodeReboot:
    """One node's OS reboot, as its annotations say."""

    required: Required | None = None
    requested: str = ""
    done: Done | None = None

    @classmethod
    def of(cls, annotations: Mapping[str, object]) -> NodeReboot:
        return cls(
            required=parse_required(annotations.get(REQUIRED_ANNOTATION)),
            requested=str(annotations.get(REQUESTED_ANNOTATION) or ""),
            done=parse_done(annotations.get(DONE_ANNOTATION)),
        )

    @property
    def pending(self) -> bool:
        """The controller asked for a reboot the agent has not answered yet."""
        return bool(self.requested) and (self.done is None or self.done.request != self.requested)

    @property
    def wanted(self) -> bool:
        """The OS asks for a reboot and none is under way: the node waits for a slot."""
        return self.required is not None and not self.pending
