"""A pool's render step (upstream's render controller): merge the MachineConfigs its
``machineConfigSelector`` selects, create the rendered config once, point
``spec.configuration`` at it. Any refusal is ``RenderDegraded`` on that pool and it keeps
its previous target: an invalid selector or config, a rendered config too large for the
API server to store, or one no node on the pool's current config could apply
(:mod:`mcd.model.pool.checks`), unless ``MachineConfiguration.spec.
irreconcilableValidationOverrides`` allows that change (as upstream's
``generateAndValidateRenderedMachineConfig``). Names are upstream's
(:mod:`mcd.model.pool.renderhash`); a pool still on the config an older mcd rendered and
named from the same MachineConfigs stays on it, so the new names roll nothing out."""

from __future__ import annotations

import copy
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcd.cluster.api import ApiError, Obj
from mcd.cluster.controllerconfig import base_images
from mcd.cluster.pools import PoolWriter
from mcd.model.planning.reconcile import Overrides
from mcd.model.pool.checks import reconcile_problem, size_problem
from mcd.model.pool.history import (
    HISTORY_ANNOTATION,
    ROLLBACK_ANNOTATION,
    SOURCES_ANNOTATION,
    differ,
    encode_history,
    history_problem,
    parse_history,
    parse_pin,
    parse_sources,
    pinned,
    record,
    source_hashes,
)
from mcd.model.pool.pools import SelectorError, labels_of, name_of, selector_matches, selects_all
from mcd.model.pool.render import OS_IMAGE_URL_OVERRIDDEN, Rendered, RenderError, render
from mcd.model.pool.rollout import render_condition

log = logging.getLogger(__name__)

MC_KIND = {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig"}
OVERRIDES_FRESH = 10.0
"""Seconds the overrides read from MachineConfiguration/cluster are used before reading again."""


@dataclass
class RenderStep:
    writer: PoolWriter
    version: str
    observe_config: Callable[[Obj], None] = field(default=lambda _o: None)
    observe_pool: Callable[[Obj], None] = field(default=lambda _o: None)
    observe_override: Callable[[str, bool], None] = field(default=lambda _p, _o: None)
    """(pool, whether its rendered config overrides the base OS image) after each render:
    upstream's ``os_image_url_override{pool}`` (:mod:`mcd.controller.service`)."""
    clock: Callable[[], float] = field(default=time.monotonic)
    _verdicts: dict[tuple[str, str, Overrides], str] = field(default_factory=dict)
    """(current target, new rendered name, overrides) -> the reconcilability refusal ('' =
    none), so a refused render costs one check, not one per pass."""
    _overrides: tuple[float, Overrides] | None = None
    _base: tuple[float, tuple[str, str]] | None = None
    _renders: dict[tuple[str, tuple[tuple[str, str], ...]], Rendered | RenderError] = field(
        default_factory=dict
    )
    """The last render per pool, by its inputs' names and resourceVersions: a pass whose
    MachineConfigs did not change renders nothing (a render parses and checks every one)."""
    _checked: set[tuple[str, str]] = field(default_factory=set)
    """Rendered configs (name, resourceVersion) found unchanged since they were created."""

    def _rendered(self, pool_name: str, selected: list[Obj]) -> Rendered:
        base = self._base_images()
        versions = tuple(sorted((name_of(mc), _version(mc)) for mc in selected))
        if not all(v for _n, v in versions):  # objects not from the API server: no key
            return render(pool_name, selected, base)
        key = (pool_name, (*versions, ("", "\n".join(base))))
        if key not in self._renders:
            self._renders = {k: v for k, v in self._renders.items() if k[0] != pool_name}
            try:  # on copies: the merge may share or adjust parts of what it is given
                self._renders[key] = render(pool_name, copy.deepcopy(selected), base)
            except RenderError as e:
                self._renders[key] = e
        found = self._renders[key]
        if isinstance(found, RenderError):
            raise found
        return found

    def __call__(self, pool: Obj, configs: dict[str, Obj], stamp: str) -> Obj:
        """The pool after its render (new ``spec.configuration`` and ``RenderDegraded``)."""
        name = name_of(pool)
        spec = pool.get("spec") or {}
        selector = spec.get("machineConfigSelector")
        if selects_all(selector):
            self.writer.event(
                pool,
                "SelectingAll",
                "This machineconfigpool is selecting all "
                "machineconfigs. A non-empty selector is required.",
                warning=True,
            )
            return pool
        error: str | None = None
        try:
            pool = self._render(pool, configs, selector, stamp)
        except (RenderError, SelectorError) as e:
            error = f"could not generate rendered MachineConfig: {e}"
            log.warning("Pool %s: %s", name, error)
        except ApiError as e:
            if e.status != 413 and "too large" not in str(e):
                raise  # only a size refusal is the render's fault; the rest is retried
            error = f"could not create the rendered MachineConfig: {e}"
            log.warning("Pool %s: %s", name, error)
        conditions = render_condition(pool, error, stamp)
        return {**pool, "status": {**(pool.get("status") or {}), "conditions": conditions}}

    def _render(self, pool: Obj, configs: dict[str, Obj], selector: Any, stamp: str) -> Obj:
        name = name_of(pool)
        spec = pool.get("spec") or {}
        selected = [mc for mc in configs.values() if selector_matches(selector, labels_of(mc))]
        if not selected:
            raise RenderError(f"no MachineConfigs found matching selector {_describe(selector)}")
        rendered = self._rendered(name, selected)
        current = str((spec.get("configuration") or {}).get("name") or "")
        annotations = (pool.get("metadata") or {}).get("annotations") or {}
        pin = parse_pin(annotations.get(ROLLBACK_ANNOTATION))
        if pin is not None and pinned(pin, rendered.name) and current == pin.config:
            return pool  # rolled back: held until the MachineConfigs change or it is cleared
        if current and current == rendered.legacy and current in configs:
            return pool  # named by an older mcd from the same inputs: nothing to roll out
        existing = configs.get(rendered.name)
        base_os = self._base_images()[0]
        overridden = str(rendered.spec.get("osImageURL") or "") != base_os
        self.observe_override(name, overridden)  # upstream: set before the create, as here
        hashes = source_hashes(selected)
        if rendered.name != current:
            allowed = self._allowed()
            key = (current, rendered.name, allowed)
            if key not in self._verdicts:
                inputs = copy.deepcopy(selected)  # the checks render again: on copies
                self._verdicts = {key: reconcile_problem(configs.get(current), name, inputs,
                                                         rendered, allowed)}  # fmt: skip
            if self._verdicts[key]:
                raise RenderError(self._verdicts[key])
        if existing is None:
            too_large = size_problem(rendered, selected)
            if too_large:
                raise RenderError(too_large)
            obj = rendered.object(pool, self.version)
            marks = obj["metadata"].setdefault("annotations", {})
            marks[SOURCES_ANNOTATION] = json.dumps(hashes, sort_keys=True, separators=(",", ":"))
            if overridden:  # upstream's generateRenderedMachineConfig
                marks[OS_IMAGE_URL_OVERRIDDEN] = "true"
            created = self.writer.create_config(obj)
            if created is not None:
                self.observe_config(created)
                configs[rendered.name] = created
                if overridden:  # upstream's syncGeneratedMachineConfig: on the rendered config
                    self.writer.event(
                        {**MC_KIND, **created},
                        "OSImageURLOverridden",
                        f"OSImageURL was overridden via machineconfig in {rendered.name} "
                        f"(was: {base_os} is: {rendered.spec.get('osImageURL') or ''})",
                    )
                self.writer.event(
                    pool,
                    "RenderedConfigGenerated",
                    f"{rendered.name} successfully generated (release version: "
                    f", controller version: {self.version})",
                )
        elif (rendered.name, _version(existing)) not in self._checked:
            if (existing.get("spec") or {}) != rendered.spec:
                raise RenderError(
                    f"rendered MachineConfig {rendered.name} was changed after it was created; "
                    "delete it to have it rendered again"
                )
            if _version(existing):
                self._checked.add((rendered.name, _version(existing)))
        source = [{**MC_KIND, "name": s} for s in rendered.sources]
        wanted = {"name": rendered.name, "source": source}
        if (spec.get("configuration") or {}) != wanted:
            history = parse_history(annotations.get(HISTORY_ANNOTATION))
            if not history and current and current != rendered.name:
                history = record(history, current, "", "before the history", "")
            changes = differ(parse_sources(configs.get(current)), hashes)
            change = "; ".join(changes)
            if not current:
                change = f"first render of {len(hashes)} MachineConfigs"
            touched = {c.rsplit(" ", 1)[0] for c in changes}
            by = "render (" + (_managers(selected, touched) or "MachineConfigs changed") + ")"
            history = record(history, rendered.name, stamp, by, change)
            notes: dict[str, str | None] = {HISTORY_ANNOTATION: encode_history(history)}
            if history_problem(annotations.get(HISTORY_ANNOTATION)):  # kept as it is: it
                del notes[HISTORY_ANNOTATION]  # protects what it may name from prune
            if pin is not None:
                notes[ROLLBACK_ANNOTATION] = None  # the MachineConfigs changed: it is over
            pool = self.writer.set_configuration(name, wanted, notes)
            self.observe_pool(pool)
            log.info("Pool %s: now targeting: %s", name, rendered.name)
            self.writer.event(
                pool, "Updating", f"Pool {name} now targeting MachineConfig {rendered.name}"
            )
        return pool

    def _base_images(self) -> tuple[str, str]:
        """The ControllerConfig's base OS and extensions images (upstream's
        ``GetBaseImageContainer``), read again after ``OVERRIDES_FRESH`` seconds; none where
        it does not exist (plain Kubernetes) or may not be read."""
        now = self.clock()
        if self._base is not None and now - self._base[0] < OVERRIDES_FRESH:
            return self._base[1]
        kube = getattr(self.writer, "kube", None)  # a writer with no API server: no base
        if kube is None:
            return ("", "")
        found = base_images(kube)
        self._base = (now, found)
        return found

    def _allowed(self) -> Overrides:
        """The cluster's irreconcilable overrides, read again after ``OVERRIDES_FRESH``
        seconds; none where MachineConfiguration/cluster does not exist or may not be read
        (refusing more, never less). Other API errors fail the pass and it is retried."""
        now = self.clock()
        if self._overrides is not None and now - self._overrides[0] < OVERRIDES_FRESH:
            return self._overrides[1]
        try:
            found = self.writer.irreconcilable_overrides()
        except ApiError as e:
            if e.status != 403:
                raise
            log.warning("Cannot read MachineConfiguration/cluster (%s): no overrides", e.status)
            found = Overrides()
        self._overrides = (now, found)
        return found


def _managers(selected: list[Obj], names: set[str]) -> str:
    """Who last wrote the MachineConfigs named (their newest ``managedFields`` entry)."""
    found = set()
    for mc in selected:
        meta = mc.get("metadata") or {}
        fields = [f for f in meta.get("managedFields") or [] if isinstance(f, dict)]
        if meta.get("name") in names and fields:
            newest = max(fields, key=lambda f: str(f.get("time") or ""))
            found.add(str(newest.get("manager") or "")[:40])
    return ", ".join(sorted(f for f in found if f)[:3])


def _version(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _describe(selector: Any) -> str:
    labels = (selector or {}).get("matchLabels") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or str(selector)[:256]
