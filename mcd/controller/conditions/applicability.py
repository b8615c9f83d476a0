"""The pool condition ``NodesCannotApply``: nodes of the pool whose host cannot apply a field
the pool's target config changes (:mod:`mcd.model.planning.poolfit`), read from what each
agent published on its Node. Set when some node cannot; kept up to date (False) once set."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcd.model.machineconfig import MachineConfig, empty_machine_config
from mcd.model.planning.applicability import HOST_SUPPORT_ANNOTATION, host_support_of
from mcd.model.planning.plan import config_named
from mcd.model.planning.poolfit import CONDITION, Member, condition, unfit
from mcd.model.pool.pools import name_of, target_of
from mcd.model.pool.rollout import condition as find_condition
from mcd.model.pool.rollout import set_condition
from mcd.model.vocabulary import Annotation

Obj = dict[str, Any]


def update_condition(
    pool: Obj,
    members: Sequence[Mapping[str, Any]],
    configs: Mapping[str, Obj],
    conditions: list[Obj],
    stamp: str,
) -> None:
    """``members``: the pool's nodes this pass (the controller's membership). Each config is
    parsed once per call, and none when no node published its host."""
    said = find_condition(conditions, CONDITION) is not None
    if not said and not any(HOST_SUPPORT_ANNOTATION in _annotations(n) for n in members):
        return  # the common case, without a look at each node's support
    reported = [(n, host_support_of(n)) for n in members]
    if not said and all(s is None for _, s in reported):
        return
    parsed: dict[str, MachineConfig | None] = {}

    def config(name: str) -> MachineConfig | None:
        if name not in parsed:
            parsed[name] = config_named(configs, name)
        return parsed[name]

    target_name = target_of(pool)
    target = config(target_name)
    if target is None:
        return
    lines = unfit(
        target,
        [Member(name_of(n), config(_current(n)), s) for n, s in reported if s is not None],
        empty_machine_config(),
    )
    if not lines and not said:
        return  # nothing to say, and never said
    status, reason, message = condition(target_name, lines)
    set_condition(conditions, CONDITION, status, reason, message, stamp)


def _annotations(node: Mapping[str, Any]) -> Mapping[str, Any]:
    return (node.get("metadata") or {}).get("annotations") or {}


def _current(node: Mapping[str, Any]) -> str:
    return str(_annotations(node).get(Annotation.CURRENT_CONFIG) or "")
