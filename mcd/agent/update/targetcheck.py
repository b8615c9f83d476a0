"""Is an update's target still wanted while its drain waits? (upstream has no such check:
a drain that outlives its target would otherwise write a config nobody wants any more)."""

from __future__ import annotations

import logging
import time

from mcd.agent.report.drift import DriftMonitor
from mcd.agent.update.context import Config
from mcd.cluster.api import ApiError, Kube, Obj
from mcd.cluster.configs import MachineConfigNotFound, get_machine_config
from mcd.cluster.node import NodeWriter, annotations_of
from mcd.model.text import goquote
from mcd.model.vocabulary import Annotation

log = logging.getLogger(__name__)


def identity_of(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("uid") or ""), str(meta.get("resourceVersion") or "")


def _shown(image: str) -> str:
    return goquote(image) if image else "nothing"  # not yet gated: quoted, one line


RECHECK_INTERVAL = 2.0
"""Seconds between two looks at desiredConfig, desiredImage and the MachineConfig while a
drain waits."""


class TargetCheck:
    """Is the drain's target still wanted? ``desiredConfig`` and ``desiredImage`` (image
    mode) read afresh, and the MachineConfig's (uid, resourceVersion) compared with what was
    planned; and no drift reported by the monitor since (a drift stops the update, unless
    forced)."""

    def __init__(
        self,
        desired: Config,
        force: bool,
        *,
        writer: NodeWriter,
        kube: Kube,
        drift: DriftMonitor,
        interval: float = RECHECK_INTERVAL,
    ) -> None:
        self.desired, self.force, self.interval = desired, force, interval
        self.writer, self.kube, self.drift = writer, kube, drift
        self._last = time.monotonic()

    def __call__(self) -> str:
        if self.drift.drifted and not self.force:
            return self.drift.drifted  # a hot-fix during the drain: stop before writing
        if time.monotonic() - self._last < self.interval:
            return ""
        return self.now()

    def now(self) -> str:
        """'' while the target stands, else why it does not (always asks the API server)."""
        self._last = time.monotonic()
        name = self.desired.name
        try:
            annotations = annotations_of(self.writer.get())
            wanted = annotations.get(Annotation.DESIRED_CONFIG, "")
            if wanted != name:
                return f"desiredConfig changed from {name} to {wanted or 'nothing'}"
            image, planned = (
                annotations.get(Annotation.DESIRED_IMAGE, ""),
                self.desired.mc.ocl_image,
            )
            if image != planned:  # image mode: the rebase target is the image, not osImageURL
                return f"desiredImage changed from {_shown(planned)} to {_shown(image)}"
            identity = identity_of(get_machine_config(self.kube, name))
        except MachineConfigNotFound:
            return f"MachineConfig {name} was deleted"
        except ApiError as e:
            log.warning("Could not re-check the update's target %s: %s", name, e)
            return ""  # the drain goes on; the check after it decides
        if self.desired.identity not in (("", ""), identity):
            return f"MachineConfig {name} changed (uid, resourceVersion {identity[1]})"
        return ""
