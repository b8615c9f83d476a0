"""Render-time refusals beyond a valid merge, each naming the MachineConfigs at fault. Pure.

* **size**: a rendered config the API server cannot store (etcd refuses a request over
  ``--max-request-bytes``, 1.5 MiB by default; the API server then answers 500 on every
  try) is refused before it is sent, naming the largest MachineConfigs;
* **reconcilability** (upstream ``generateAndValidateRenderedMachineConfig``): a rendered
  config no node on the pool's current one could move to while running (the agent's own
  :mod:`mcd.model.planning.reconcile` rules) is not rendered; the MachineConfig whose
  removal makes the change reconcilable is named, in upstream's words.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mcd.model.errors import ConfigError
from mcd.model.machineconfig import machine_config_from_object
from mcd.model.planning.reconcile import Overrides, unreconcilable_detail
from mcd.model.pool.render import Rendered, RenderError, render

Obj = Mapping[str, Any]

MAX_RENDERED_BYTES = 1_400_000
"""The largest rendered ``spec`` (compact JSON) mcd creates: etcd's default request limit is
1,572,864 bytes, and the stored object also carries metadata and managedFields."""


def _size(doc: object) -> int:
    return len(json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode())


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.2f} MiB"


def size_problem(
    rendered: Rendered, configs: Sequence[Obj], limit: int = MAX_RENDERED_BYTES
) -> str:
    """Why ``rendered`` is too large to store ('' when it is not), naming the largest
    MachineConfigs (up to three, largest first) with their sizes."""
    size = _size(rendered.spec)
    if size <= limit:
        return ""
    sizes = sorted(
        (
            (_size(mc.get("spec")), str((mc.get("metadata") or {}).get("name") or ""))
            for mc in configs
        ),
        key=lambda s: (-s[0], s[1]),
    )
    largest = ", ".join(f"{name} ({_mib(n)})" for n, name in sizes[:3])
    return (
        f"rendered MachineConfig {rendered.name} would be {size:,} bytes ({_mib(size)}), over "
        f"the {limit:,} bytes ({_mib(limit)}) the API server can store; largest "
        f"MachineConfigs: {largest}"
    )


def reconcile_problem(
    current: Obj | None,
    pool_name: str,
    configs: Sequence[Obj],
    rendered: Rendered,
    overrides: Overrides | None = None,
) -> str:
    """Why no node on ``current`` (the pool's rendered config now) could move to
    ``rendered`` while running; '' when it could (``overrides``: the irreconcilable changes
    the cluster allows), or when there is no current config."""
    allowed = overrides or Overrides()
    if current is None:
        return ""
    current_name = str((current.get("metadata") or {}).get("name") or "")
    try:
        old = machine_config_from_object(current, current_name)
    except ConfigError:
        return ""  # an unreadable current config: the agents report it; nothing to compare
    detail = _detail(old, rendered, allowed)
    if not detail:
        return ""
    for mc in configs:
        rest = [c for c in configs if c is not mc]
        if not rest:
            break
        try:
            without = render(pool_name, rest)
        except RenderError:
            continue
        if not _detail(old, without, allowed):
            name = str((mc.get("metadata") or {}).get("name") or "")
            return (
                f'reconciliation failed between current config "{current_name}" and base config '
                f'"{name}": {detail}'
            )
    return f"render reconciliation error: {detail}"


def _detail(old: Any, rendered: Rendered, overrides: Overrides) -> str:
    doc = {"metadata": {"name": rendered.name}, "spec": rendered.spec}
    try:
        new = machine_config_from_object(doc, rendered.name)
    except ConfigError as e:
        return str(e)
    return unreconcilable_detail(old, new, overrides, None)
